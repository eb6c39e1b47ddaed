"""The transformers backend: batched ``generate`` on CPU or GPU, in this process, left padded;
each row stops at EOS, its budget or its first stop string. Rows sharing a long token prefix encode
it once, keep it across batches and hold it once per batch (:mod:`lceval.models.hf_attention`; rows
``[prefix][pad ... pad][suffix]``): float32 outputs equal transformers' own token for token.
"""

from __future__ import annotations

import gc
import inspect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
import transformers
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    DynamicCache,
    StoppingCriteria,
    StoppingCriteriaList,
)
from transformers.cache_utils import DynamicLayer

from lceval.core.errors import LcevalError, one_line
from lceval.core.records import Context, FinishReason, Response, Sample
from lceval.models.backends import HFOptions, parse_options
from lceval.models.base import Backend, GenerationConfig, error_response
from lceval.models.base import cache_fields as base_cache_fields
from lceval.models.embedded import ModelSource, resolve_model
from lceval.models.hf_attention import (
    ATTENTION,
    GrowingLayer,
    PrefixLayer,
    SharedPrefixLayer,
    kv_bytes_per_token,
)
from lceval.models.prompts import RenderedPrompt, Renders, common_prefix_len, resolve_prompt_format
from lceval.models.rope import RopeOverride, apply_rope, resolve_rope
from lceval.models.specs import model_window
from lceval.models.thinking import Thinking
from lceval.models.threads import ThreadChoice, choose_threads


def pick_device(device: str) -> str:
    """The torch device for ``device`` (``auto``: CUDA when available, else CPU).

    Raises:
        LcevalError: CUDA asked for where there is none.
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise LcevalError(f"device {device!r} requested but no CUDA GPU is available")
    return device


def pick_dtype(dtype: str, device: str) -> torch.dtype:
    """The torch dtype (``auto``: bfloat16 or float16 on a GPU, float32 on the CPU, where bf16 is
    no faster and float32 keeps batching exact)."""
    if dtype != "auto":
        return cast(torch.dtype, getattr(torch, dtype))
    if not device.startswith("cuda"):
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


MIN_SHARED_PREFIX = 32  # tokens: the shortest common prefix worth encoding once per batch
GROW_ROOM = 1024  # tokens of spare key/value room beyond the prompt (buffers grow past it)
PREFILL_CHUNK = 4096  # default prompt tokens per prefill forward pass
AUTO_BATCH_CAP = 64  # most rows of an automatically sized GPU batch
HEADROOM_BYTES = 2 << 30  # GPU memory kept free beside the estimate of an automatic batch
OWN_BATCH_PREFIX = 256  # rows of one context and budget sharing this many tokens batch alone


@dataclass
class _Row:
    index: int
    sample: Sample
    prompt: RenderedPrompt

    @property
    def ids(self) -> list[int]:
        return self.prompt.ids

    @property
    def budget(self) -> int:
        return self.prompt.max_tokens


class _RowStop(StoppingCriteria):
    """Per-row stop at the row's budget or once its decoded tail holds a stop string
    (``stopped_at[i]``: generated tokens by then)."""

    def __init__(self, tokenizer: Any, start: int, rows: list[_Row]):
        self.tokenizer, self.start, self.rows = tokenizer, start, rows
        self.tail = max((len(s) for r in rows for s in r.prompt.engine_stop), default=0) + 8
        self.stopped_at: list[int | None] = [None] * len(rows)

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        n = input_ids.shape[1] - self.start
        for i, r in enumerate(self.rows):
            if r.prompt.engine_stop and 0 < n < r.budget and self.stopped_at[i] is None:
                tail = input_ids[i, max(self.start, input_ids.shape[1] - self.tail) :].tolist()
                text = self.tokenizer.decode(tail, skip_special_tokens=True)
                if any(s in text for s in r.prompt.engine_stop):
                    self.stopped_at[i] = n
        done = [n >= r.budget or self.stopped_at[i] is not None for i, r in enumerate(self.rows)]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class HFBackend(Renders, Backend):
    """A transformers causal LM answering Samples (greedy by default).

    Args:
        model: ``None`` / ``"smollm2"`` (the embedded SmolLM2-135M-Instruct), a local model folder
            or a hub id (:func:`lceval.models.embedded.resolve_model`).
        options: :class:`lceval.models.backends.HFOptions` (declared there with their meaning), or
            the same as keywords (``given``). Unset ``max_batch_rows``: 8 on the CPU, on a GPU what
            fits the free memory (an out-of-memory error halves the batch); unset ``num_threads``:
            :func:`lceval.models.threads.choose_threads`. RoPE overrides go on the config before
            ``from_pretrained`` (:mod:`lceval.models.rope`).

    Raises:
        LcevalError: the model cannot be resolved or loaded, or an option is invalid.
    """

    def __init__(
        self, model: str | None = None, options: HFOptions | None = None, **given: Any
    ) -> None:
        o = options if options is not None else cast(HFOptions, parse_options("hf", given))
        self.options: HFOptions = o
        self.source: ModelSource = resolve_model(model)
        self.name = self.source.name
        self.device = pick_device(o.device)
        # how the CPU threads were chosen (None: num_threads given, or a GPU)
        chosen = o.num_threads is None and self.device == "cpu"
        self.threads: ThreadChoice | None = choose_threads() if chosen else None
        num_threads = self.threads.threads if self.threads else o.num_threads
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.dtype = pick_dtype(o.dtype, self.device)
        self.auto_batch = o.max_batch_rows is None
        gpu = self.device.startswith("cuda")
        self.batch_size = o.max_batch_rows or (AUTO_BATCH_CAP if gpu else 8)
        self.call_size = self.batch_size
        self.prefill_chunk = o.prefill_chunk or PREFILL_CHUNK
        self._prefix_ids: list[int] = []  # the kept shared prefix (empty: none) and its
        self._prefix_kv: Any = None  # batch-1 cache (only copies or views go to generate)
        self.prompt_tokens_requested: int = 0  # prompt tokens answered (padding excluded), of which
        self.prompt_tokens_computed: int = 0  # the model encoded these (the rest: a kept prefix)
        load = {"trust_remote_code": o.trust_remote_code, "local_files_only": True}
        window = o.window
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.source.path, **load)
            config = AutoConfig.from_pretrained(self.source.path, **load)
            self.rope: RopeOverride | None = None
            try:
                self.rope = resolve_rope(config, o.rope_theta, o.rope_scaling)
            except LcevalError:
                if o.rope_theta is not None or o.rope_scaling is not None:
                    raise
            if self.rope is not None and self.rope.changed:  # on the config, not the model code
                apply_rope(config, self.rope)
                window = window or self.rope.extended_window()
            lm: Any = AutoModelForCausalLM.from_pretrained(
                self.source.path, config=config, dtype=self.dtype, **load
            )
        except (OSError, ValueError) as exc:
            raise LcevalError(
                f"cannot load model {self.name} from {self.source.path}: {one_line(exc)}"
            ) from None
        self.model: Any = lm.to(torch.device(self.device)).eval()
        cfg = self.model.config
        if cfg._attn_implementation == "sdpa":
            self.model.set_attn_implementation(ATTENTION)
        # full-attention layers only (a sliding window or linear state cannot be cut back):
        # buffers with room, and a prefix kept across batches
        layers = DynamicCache(config=cfg).layers
        self._growing = bool(layers) and all(type(x) is DynamicLayer for x in layers)
        dynamic = self.rope is not None and self.rope.parameters.get("rope_type") == "dynamic"
        # a kept prefix's keys would have used another base under dynamic scaling
        self.share_prefix = o.share_prefix and self._growing and not dynamic
        # the shared prefix held once per batch (else repeated over the rows)
        self._cascade = self._growing and cfg._attn_implementation == ATTENTION
        keeps = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        self._logits_kw: dict[str, Any] = {"logits_to_keep": 1} if keeps else {}
        self._kv_token = kv_bytes_per_token(cfg, self.dtype)
        self.prompt_format = resolve_prompt_format(self.tokenizer, o.prompt_format)
        self.thinking = Thinking.from_tokenizer(self.tokenizer, o.enable_thinking, o.think_end)
        self.window = window or model_window(cfg, self.tokenizer)
        gen = self.model.generation_config
        eos = gen.eos_token_id if gen.eos_token_id is not None else self.tokenizer.eos_token_id
        self.eos_ids: set[int] = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        pad = gen.pad_token_id if gen.pad_token_id is not None else self.tokenizer.pad_token_id
        self.pad_id: int = pad if pad is not None else min(self.eos_ids, default=0)

    @property
    def cache_fields(self) -> dict[str, Any]:
        """Settings that change outputs (:func:`lceval.models.base.cache_fields`)."""
        return base_cache_fields(
            "hf", self._dtype_name, self.prompt_format, self.rope, self.thinking
        )

    @property
    def _dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    def info(self) -> dict[str, Any]:
        """Provenance for run.json: backend, model source, device, dtype, window, versions."""
        return {
            "backend": "hf",
            **self.source.info(),
            "device": self.device,
            "dtype": self._dtype_name,
            "window": self.window,
            "max_batch_rows": "auto" if self.auto_batch else self.batch_size,
            "prefill_chunk": self.prefill_chunk,
            "shared_prefix_held_once": self._cascade,
            "share_prefix": self.share_prefix,
            "num_threads": torch.get_num_threads(),
            "num_threads_chosen_from": self.threads.record() if self.threads else "given",
            "prompt_format": self.prompt_format,
            "rope": self.rope.record() if self.rope is not None else None,
            **({"thinking": t} if (t := self.thinking.record()) is not None else {}),
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        }

    def close(self) -> None:
        """Drop the model and the kept prefix cache, and free GPU memory."""
        self.model = None
        self._prefix_ids, self._prefix_kv = [], None
        self._free()

    def _free(self) -> None:
        gc.collect()
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def generate(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> list[Response]:
        """Answer ``samples``: one Response each, in order (a failed sample: an error Response).

        ``config.extra`` is passed to ``model.generate`` (``repetition_penalty``, ``top_k``, ...).
        """
        if self.model is None:
            raise LcevalError(f"backend for {self.name} is closed")
        out: list[Response | None] = [None] * len(samples)
        rows: list[_Row] = []
        for i, s in enumerate(samples):
            try:
                p = self.render(s, contexts, config)
                rows.append(_Row(i, s, p))
            except LcevalError as exc:
                out[i] = error_response(s, self.name, config, exc)
        for batch in self._plan(rows):
            for r, resp in self._run_batch(batch, config):
                out[r.index] = resp
        return [r for r in out if r is not None]

    def _plan(self, rows: list[_Row]) -> list[list[_Row]]:
        """Batches: rows of one context and budget sharing :data:`OWN_BATCH_PREFIX` tokens on their
        own (in context order), rows longer than ``prefill_chunk`` alone, the rest by budget."""
        first: dict[str | None, int] = {}
        for r in rows:
            first.setdefault(r.sample.context_id, r.index)
        groups: dict[tuple[int, int], list[_Row]] = {}
        for r in sorted(rows, key=lambda r: (first[r.sample.context_id], r.budget, r.index)):
            groups.setdefault((first[r.sample.context_id], r.budget), []).append(r)
        own: list[list[_Row]] = []
        rest: list[_Row] = []
        for group in groups.values():
            shared = self.share_prefix and OWN_BATCH_PREFIX <= max(
                common_prefix_len([r.ids for r in group]) if len(group) > 1 else 0,
                self._kept_prefix(group[0].ids),
            )
            if shared:
                own.extend(_chunks(group, self.batch_size))
            else:
                rest.extend(group)
        long = [[r] for r in rest if len(r.ids) > self.prefill_chunk]
        rest = [r for r in rest if len(r.ids) <= self.prefill_chunk]
        rest.sort(key=lambda r: (r.budget, r.sample.context_id or "", r.index))
        return own + long + _chunks(rest, self.batch_size)

    def _kept_prefix(self, ids: Sequence[int]) -> int:
        return 0 if self._prefix_kv is None else common_prefix_len([self._prefix_ids, ids])

    def _prefill(self, cache: Any, ids: Sequence[int]) -> None:
        """Encode ``ids`` (one row) into ``cache`` in chunks of ``prefill_chunk`` tokens, keeping
        logits of the last position only (activations and masks stay ``chunk x prompt``)."""
        for k in range(0, len(ids), self.prefill_chunk):
            chunk = torch.tensor([ids[k : k + self.prefill_chunk]], device=self.device)
            self.model(chunk, past_key_values=cache, use_cache=True, **self._logits_kw)

    def _prefix_cache(self, ids: list[int], n: int) -> tuple[Any, int]:
        """A batch-1 cache holding ``ids[:n]`` and how many tokens came from the kept prefix (reused
        as far as it matches, the rest prefilled, the result kept for the next batches)."""
        reused = min(self._kept_prefix(ids), n)
        if n > reused:
            source = self._prefix_kv if reused else None
            self._prefix_ids, self._prefix_kv = [], None  # freed before the new one is made
            cache = self._new_cache(1, n - reused, source, reused, kept=True)
            del source
            self._prefill(cache, ids[reused:n])
            self._prefix_ids, self._prefix_kv = list(ids[:n]), cache
        return self._prefix_kv, reused

    def _new_cache(
        self, batch: int, room: int, source: Any = None, length: int = 0, kept: bool = False
    ) -> Any:
        """A :class:`GrowingLayer` cache with ``room`` tokens, preloaded with ``source[:length]``
        repeated over ``batch`` rows (``kept``: :class:`PrefixLayer` for the cascade)."""
        cache = DynamicCache(config=self.model.config)
        cls = PrefixLayer if kept and self._cascade else GrowingLayer
        layers: list[Any] = [cls(room) for _ in cache.layers]
        if source is not None and length:
            for layer, src in zip(layers, source.layers, strict=True):
                layer.preload(src.keys[:, :, :length], src.values[:, :, :length], batch)
        cache.layers = layers
        return cache

    def _shared_cache(self, source: Any, length: int, room: int) -> Any:
        """A cache of :class:`SharedPrefixLayer`: the first ``length`` tokens of ``source`` (the
        kept batch-1 prefix, not copied) shared by rows with ``room`` tokens each."""
        cache = DynamicCache(config=self.model.config)
        cache.layers = [
            SharedPrefixLayer(src.keys[:, :, :length], src.values[:, :, :length], room)
            for src in source.layers
        ]
        return cache

    def free_memory(self) -> tuple[int, int] | None:
        """``(free, total)`` bytes on the CUDA device (torch's reserved but unallocated memory
        counted free); None off CUDA."""
        if not self.device.startswith("cuda"):
            return None
        free, total = torch.cuda.mem_get_info(torch.device(self.device))
        spare = torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
        return int(free + spare), int(total)

    def row_bytes(self, width: int, room: int) -> int:
        """Estimated bytes of one row beyond the shared prefix: keys/values, activations, logits."""
        cfg = getattr(self.model.config, "text_config", None) or self.model.config
        hidden = int(getattr(cfg, "hidden_size", 0))
        inter = int(getattr(cfg, "intermediate_size", 0) or 4 * hidden)
        activations = width * (6 * hidden + 3 * inter) * self.dtype.itemsize
        return self._kv_token * (width + room) + activations + 12 * int(cfg.vocab_size)

    def rows_that_fit(self, prefix_new: int, width: int, room: int) -> int:
        """Most rows (>= 1) fitting the free GPU memory less :data:`HEADROOM_BYTES` beside
        ``prefix_new`` prefix tokens to encode; ``batch_size`` off CUDA or when the user set it."""
        mem = self.free_memory()
        if mem is None or not self.auto_batch:
            return self.batch_size
        budget = mem[0] - HEADROOM_BYTES - self._kv_token * prefix_new
        budget -= self.row_bytes(min(prefix_new, self.prefill_chunk), 0)
        return max(1, min(self.batch_size, budget // max(1, self.row_bytes(width, room))))

    def _run_batch(self, rows: list[_Row], config: GenerationConfig) -> list[tuple[_Row, Response]]:
        """Generate one batch in as many rows as fit: out of memory halves it, any other failure
        retries its rows one by one; a row failing alone is an error Response."""
        prefix, width = self._layout([r.ids for r in rows])
        new = prefix - min(self._kept_prefix(rows[0].ids), prefix)  # 0 without a prefix
        fit = self.rows_that_fit(new, width, min(max(r.budget for r in rows), GROW_ROOM))
        if fit < len(rows):
            return [p for part in _chunks(rows, fit) for p in self._run_batch(part, config)]
        error: Exception | None = None  # None after an out-of-memory error
        try:
            return self._generate_rows(rows, config)
        except torch.OutOfMemoryError:
            self._prefix_ids, self._prefix_kv = [], None  # it may be half-built
        except (RuntimeError, ValueError) as exc:
            error = exc.with_traceback(None)  # its frames (caches) freed below
        self._free()
        if len(rows) == 1:
            if error is None:
                mem = self.free_memory()
                where = f"{mem[0] / 2**30:.1f} GiB free of {mem[1] / 2**30:.1f} GiB " if mem else ""
                error = LcevalError(
                    f"out of memory answering alone: prompt {len(rows[0].ids)} tokens, "
                    f"{where}on {self.device}"
                )
            return [(rows[0], error_response(rows[0].sample, self.name, config, error))]
        size = 1 if error is not None else (len(rows) + 1) // 2
        return [p for part in _chunks(rows, size) for p in self._run_batch(part, config)]

    def _layout(self, ids: list[list[int]]) -> tuple[int, int]:
        """``(shared prefix, widest own part)`` in tokens for a batch of token rows."""
        prefix = min(common_prefix_len(ids), min(map(len, ids)) - 1) if self.share_prefix else 0
        prefix = prefix if prefix >= MIN_SHARED_PREFIX else 0
        return prefix, max(len(x) - prefix for x in ids)

    def _generate_rows(
        self, rows: list[_Row], config: GenerationConfig
    ) -> list[tuple[_Row, Response]]:
        t0 = time.perf_counter()
        ids = [r.ids for r in rows]
        prefix, width = self._layout(ids)
        start = prefix + width  # rows: [prefix][pad ... pad][suffix]
        tokens = [x[:prefix] + [self.pad_id] * (start - len(x)) + x[prefix:] for x in ids]
        mask = [[1] * prefix + [0] * (start - len(x)) + [1] * (len(x) - prefix) for x in ids]
        cache: dict[str, Any] = {}
        reused = 0
        room = width + min(max(r.budget for r in rows), GROW_ROOM)
        with torch.inference_mode():
            if prefix:
                source, reused = self._prefix_cache(ids[0], prefix)
                if self._cascade:
                    cache["past_key_values"] = self._shared_cache(source, prefix, room)
                else:
                    cache["past_key_values"] = self._new_cache(len(rows), room, source, prefix)
            elif self._growing:
                cache["past_key_values"] = self._new_cache(len(rows), room)
            sampling: dict[str, Any]
            if config.temperature > 0:
                torch.manual_seed(config.seed)
                sampling = {"do_sample": True, "temperature": config.temperature}
                sampling["top_p"] = config.top_p
            else:
                sampling = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
            stop = _RowStop(self.tokenizer, start, rows)
            out = self.model.generate(
                input_ids=torch.tensor(tokens, device=self.device),
                attention_mask=torch.tensor(mask, device=self.device),
                max_new_tokens=max(r.budget for r in rows),
                pad_token_id=self.pad_id,
                eos_token_id=sorted(self.eos_ids) or None,
                stopping_criteria=StoppingCriteriaList([stop]),
                **{**sampling, **dict(config.extra)},  # extra (top_k, ...) wins over defaults
                **cache,
            )
        gen: list[list[int]] = out[:, start:].tolist()
        del out, cache
        latency = (time.perf_counter() - t0) / len(rows)
        self.prompt_tokens_requested += sum(map(len, ids))
        self.prompt_tokens_computed += prefix - reused + sum(len(x) - prefix for x in ids)
        return [
            (r, self._response(r, g, at, config, latency))
            for r, g, at in zip(rows, gen, stop.stopped_at, strict=True)
        ]

    def _response(
        self,
        row: _Row,
        gen: list[int],
        stopped_at: int | None,
        config: GenerationConfig,
        latency: float,
    ) -> Response:
        """Cut a row's generated ids at its end (stop string, EOS or budget) and decode."""
        gen = gen[: row.budget if stopped_at is None else stopped_at]  # later ids: padding
        ends = self.eos_ids | {self.pad_id}  # a finished row is padded with pad_id
        n = next((j for j, t in enumerate(gen) if t in ends), None)
        hit_eos = n is not None and stopped_at is None
        toks = gen[:n]
        reason: FinishReason = "stop" if hit_eos or stopped_at is not None else "length"
        n_out = len(toks) + (1 if hit_eos else 0)
        return self.response(row.sample, row.prompt, toks, reason, config, n_out, latency)


def _chunks(rows: list[_Row], size: int) -> list[list[_Row]]:
    return [rows[k : k + size] for k in range(0, len(rows), size)]
