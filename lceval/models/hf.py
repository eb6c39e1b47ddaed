"""The transformers backend: batched ``generate`` on CPU or GPU, in this process.

Prompts come from :mod:`lceval.models.prompts`. Samples are grouped by context and budget and
generated with left padding; each row stops at EOS, its own budget or its first stop string.
Rows sharing a long token prefix (a context followed by many instructions) encode it once: its
key/value cache is kept across batches and held once per batch (:mod:`lceval.models.hf_attention`;
``[prefix][pad ... pad][suffix]``, masks and positions as in the plain left-padded batch, so
float32 outputs equal transformers' own token for token, as tests/models/test_hf.py checks).
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
from lceval.models.base import GenerationConfig, error_response
from lceval.models.base import (
    cache_fields as base_cache_fields,
)
from lceval.models.embedded import ModelSource, resolve_model
from lceval.models.hf_attention import (
    ATTENTION,
    GrowingLayer,
    PrefixLayer,
    SharedPrefixLayer,
    kv_bytes_per_token,
)
from lceval.models.prompts import (
    RenderedPrompt,
    Renders,
    common_prefix_len,
    resolve_prompt_format,
)
from lceval.models.rope import RopeOverride, apply_rope, resolve_rope
from lceval.models.specs import model_window
from lceval.models.thinking import Thinking, cut_at_stop
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
    """The torch dtype for ``dtype`` (``auto``: bfloat16 or float16 on a GPU, float32 on the
    CPU, where bf16 is no faster and float32 keeps batching exact)."""
    if dtype != "auto":
        return cast(torch.dtype, getattr(torch, dtype))
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


MIN_SHARED_PREFIX = 32
"""Shortest common token prefix (tokens) worth encoding once per batch."""
GROW_ROOM = 1024
"""Most spare room (tokens) a batch's key/value buffers get beyond the prompt; they grow by as much
again when a longer answer needs it."""
PREFILL_CHUNK = 4096
"""Default prompt tokens per prefill forward pass (see ``HFBackend(prefill_chunk=...)``)."""
AUTO_BATCH_CAP = 64
"""Most rows of an automatically sized GPU batch."""
HEADROOM_BYTES = 2 << 30
"""GPU memory (bytes) kept free beside the estimate when a batch is sized automatically."""
OWN_BATCH_PREFIX = 256
"""Rows of one context and budget sharing at least this many tokens get batches of their own."""


@dataclass
class _Row:
    """One sample of a call, rendered and tokenized."""

    index: int
    sample: Sample
    prompt: RenderedPrompt
    ids: list[int]
    budget: int


class _RowStop(StoppingCriteria):
    """Per-row stop: at the row's budget or once its decoded tail holds a stop string
    (``stopped_at[i]``: generated tokens when it appeared).
    """

    def __init__(
        self, tokenizer: Any, start: int, budgets: list[int], stops: list[tuple[str, ...]]
    ):
        self.tokenizer = tokenizer
        self.start = start
        self.budgets = budgets
        self.stops = stops
        self.tail = max((len(s) for ss in stops for s in ss), default=0) + 8
        self.stopped_at: list[int | None] = [None] * len(budgets)

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        n = input_ids.shape[1] - self.start
        done = [
            n >= b or at is not None for b, at in zip(self.budgets, self.stopped_at, strict=True)
        ]
        for i, stops in enumerate(self.stops):
            if stops and not done[i] and n > 0:
                tail = input_ids[i, max(self.start, input_ids.shape[1] - self.tail) :].tolist()
                text = self.tokenizer.decode(tail, skip_special_tokens=True)
                if any(s in text for s in stops):
                    done[i], self.stopped_at[i] = True, n
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class HFBackend(Renders):
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
        window, num_threads, max_batch_rows = o.window, o.num_threads, o.max_batch_rows
        trust_remote_code, prompt_format = o.trust_remote_code, o.prompt_format
        rope_theta, rope_scaling = o.rope_theta, o.rope_scaling
        self.source: ModelSource = resolve_model(model)
        self.name = self.source.name
        self.device = pick_device(o.device)
        self.threads: ThreadChoice | None = None
        """How the CPU thread count was chosen (None: given as ``num_threads``, or a GPU)."""
        if num_threads is None and self.device == "cpu":
            self.threads = choose_threads()
            num_threads = self.threads.threads
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.dtype = pick_dtype(o.dtype, self.device)
        self.auto_batch = max_batch_rows is None
        self.batch_size = max_batch_rows or (
            AUTO_BATCH_CAP if self.device.startswith("cuda") else 8
        )
        self.call_size = self.batch_size
        self.prefill_chunk = o.prefill_chunk or PREFILL_CHUNK
        self.share_prefix = o.share_prefix
        self._prefix_ids: list[int] = []
        """Token ids of the last shared prefix encoded (empty: none kept)."""
        self._prefix_kv: Any = None
        """Its key/value cache, batch size 1 (never handed to ``generate`` itself, only copies)."""
        self.prompt_tokens_requested = 0
        """Prompt tokens of every row answered so far (padding excluded)."""
        self.prompt_tokens_computed = 0
        """Of those, the tokens the model encoded (the rest came from a prefix cache)."""
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(
                self.source.path, trust_remote_code=trust_remote_code, local_files_only=True
            )
            config = AutoConfig.from_pretrained(
                self.source.path, trust_remote_code=trust_remote_code, local_files_only=True
            )
            # -- RoPE overrides (lceval.models.rope): set on the config, never on model code --
            self.rope: RopeOverride | None = None
            try:
                self.rope = resolve_rope(config, rope_theta, rope_scaling)
            except LcevalError:
                if rope_theta is not None or rope_scaling is not None:
                    raise
            if self.rope is not None and self.rope.changed:
                apply_rope(config, self.rope)
                window = window or self.rope.extended_window()
                if self.rope.parameters.get("rope_type") == "dynamic":
                    self.share_prefix = False  # keys of a kept prefix used another base
            lm: Any = AutoModelForCausalLM.from_pretrained(
                self.source.path,
                config=config,
                dtype=self.dtype,
                trust_remote_code=trust_remote_code,
                local_files_only=True,
            )
        except (OSError, ValueError) as exc:
            msg = one_line(exc)
            raise LcevalError(
                f"cannot load model {self.name} from {self.source.path}: {msg}"
            ) from None
        self.model: Any = lm.to(torch.device(self.device)).eval()
        if self.model.config._attn_implementation == "sdpa":
            self.model.set_attn_implementation(ATTENTION)
        self._growing = _plain_layers(DynamicCache(config=self.model.config))
        """Full-attention layers only: buffers with room and a prefix kept across batches."""
        self._cascade = self._growing and self.model.config._attn_implementation == ATTENTION
        """The shared prefix is held once per batch (else repeated over the rows)."""
        self._logits_kw: dict[str, Any] = (
            {"logits_to_keep": 1}
            if "logits_to_keep" in inspect.signature(self.model.forward).parameters
            else {}
        )
        self._kv_token = kv_bytes_per_token(self.model.config, self.dtype)
        self.prompt_format = resolve_prompt_format(self.tokenizer, prompt_format)
        self.thinking = Thinking.from_tokenizer(
            self.tokenizer, o.enable_thinking, o.max_thinking_tokens, o.think_end
        )
        self.window = window or model_window(self.model.config, self.tokenizer)
        gen = self.model.generation_config
        eos = gen.eos_token_id if gen.eos_token_id is not None else self.tokenizer.eos_token_id
        self.eos_ids: set[int] = set(
            eos if isinstance(eos, list) else [eos] if eos is not None else []
        )
        pad = gen.pad_token_id if gen.pad_token_id is not None else self.tokenizer.pad_token_id
        self.pad_id: int = pad if pad is not None else (min(self.eos_ids) if self.eos_ids else 0)
        self._versions = {"transformers": transformers.__version__, "torch": torch.__version__}

    @property
    def cache_fields(self) -> dict[str, Any]:
        """Settings that change outputs and so join the response cache key
        (:func:`lceval.models.base.cache_fields`).
        """
        rope = getattr(self, "rope", None)  # None: no RoPE model, or a bare stub
        thinking = getattr(self, "thinking", None)  # None: a bare stub
        return base_cache_fields("hf", self._dtype_name, self.prompt_format, rope, thinking)

    @property
    def _dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    # -- provenance -------------------------------------------------------------------------------
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
            **self._versions,
        }

    def close(self) -> None:
        """Drop the model and the kept prefix cache, and free GPU memory."""
        self.model = None
        self._prefix_ids, self._prefix_kv = [], None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- generation -------------------------------------------------------------------------------
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
                ids = self.tokenizer(p.text, add_special_tokens=False)["input_ids"]
                rows.append(_Row(i, s, p, ids, p.max_tokens))
            except LcevalError as exc:
                out[i] = error_response(s, self.name, config, exc)
        for batch in self._plan(rows):
            for r, resp in self._run_batch(batch, config):
                out[r.index] = resp
        return [r for r in out if r is not None]

    def _plan(self, rows: list[_Row]) -> list[list[_Row]]:
        """Batches: rows of one context and budget sharing :data:`OWN_BATCH_PREFIX` tokens on their
        own (in context order), rows longer than ``prefill_chunk`` alone, the rest by budget.
        """
        first: dict[str | None, int] = {}
        for r in rows:
            first.setdefault(r.sample.context_id, r.index)
        groups: dict[tuple[int, int], list[_Row]] = {}
        for r in sorted(rows, key=lambda r: (first[r.sample.context_id], r.budget, r.index)):
            groups.setdefault((first[r.sample.context_id], r.budget), []).append(r)
        own: list[list[_Row]] = []
        rest: list[_Row] = []
        for group in groups.values():
            ids = [r.ids for r in group]
            shared = self.share_prefix and (
                (len(group) > 1 and common_prefix_len(ids) >= OWN_BATCH_PREFIX)
                or self._kept_prefix(group[0].ids) >= OWN_BATCH_PREFIX
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
        """How many leading tokens of ``ids`` the kept prefix cache holds."""
        if self._prefix_kv is None:
            return 0
        return common_prefix_len([self._prefix_ids, ids])

    def _prefill(self, cache: Any, ids: Sequence[int]) -> None:
        """Encode ``ids`` (one row) into ``cache`` in chunks of ``prefill_chunk`` tokens, keeping
        no logits beyond the last position (activations and masks stay ``chunk x prompt``)."""
        for k in range(0, len(ids), self.prefill_chunk):
            chunk = torch.tensor(
                [ids[k : k + self.prefill_chunk]], dtype=torch.long, device=self.device
            )
            self.model(chunk, past_key_values=cache, use_cache=True, **self._logits_kw)

    def _prefix_cache(self, ids: list[int], n: int) -> tuple[Any, int]:
        """A batch-1 cache holding ``ids[:n]`` and how many tokens came from the kept prefix (reused
        as far as it matches, the rest prefilled, the result kept for the next batches).
        """
        if not self._growing:
            cache = DynamicCache(config=self.model.config)
            self._prefill(cache, ids[:n])
            return cache, 0
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
        repeated over ``batch`` rows (``kept``: :class:`PrefixLayer` for the cascade).
        """
        cache = DynamicCache(config=self.model.config)
        layers: list[Any] = []
        cls = PrefixLayer if kept and self._cascade else GrowingLayer
        for i in range(len(cache.layers)):
            layer = cls(room)
            if source is not None and length:
                src = source.layers[i]
                layer.preload(src.keys[:, :, :length], src.values[:, :, :length], batch)
            layers.append(layer)
        cache.layers = layers
        return cache

    def _shared_cache(self, source: Any, length: int, batch: int, room: int) -> Any:
        """A cache of :class:`SharedPrefixLayer`: the first ``length`` tokens of ``source`` (the
        kept batch-1 prefix, not copied) shared by ``batch`` rows with ``room`` tokens each."""
        cache = DynamicCache(config=self.model.config)
        cache.layers = [
            SharedPrefixLayer(src.keys[:, :, :length], src.values[:, :, :length], batch, room)
            for src in source.layers
        ]
        return cache

    # -- memory ----------------------------------------------------------------------------------
    def free_memory(self) -> tuple[int, int] | None:
        """``(free, total)`` bytes on this backend's CUDA device, counting memory torch has
        reserved but not allocated as free; None off CUDA."""
        if not self.device.startswith("cuda"):
            return None
        free, total = torch.cuda.mem_get_info(torch.device(self.device))
        spare = torch.cuda.memory_reserved(self.device) - torch.cuda.memory_allocated(self.device)
        return int(free + spare), int(total)

    def row_bytes(self, width: int, room: int) -> int:
        """Estimated bytes of one row beyond the shared prefix: keys/values, activations, logits."""
        cfg = getattr(self.model.config, "text_config", None) or self.model.config
        size = torch.finfo(self.dtype).bits // 8
        hidden = int(getattr(cfg, "hidden_size", 0))
        inter = int(getattr(cfg, "intermediate_size", 0) or 4 * hidden)
        vocab = int(getattr(cfg, "vocab_size", 0))
        activations = width * (6 * hidden + 3 * inter) * size
        return self._kv_token * (width + room) + activations + 3 * 4 * vocab

    def rows_that_fit(self, prefix_new: int, width: int, room: int) -> int:
        """Most rows (>= 1) that fit the free GPU memory less :data:`HEADROOM_BYTES`;
        ``batch_size`` off CUDA or when the user set it.
        """
        mem = self.free_memory()
        if mem is None or not self.auto_batch:
            return self.batch_size
        free, _ = mem
        budget = free - HEADROOM_BYTES - self._kv_token * prefix_new
        budget -= self.row_bytes(min(prefix_new, self.prefill_chunk), 0)
        return max(1, min(self.batch_size, budget // max(1, self.row_bytes(width, room))))

    def _oom_reason(self, row: _Row) -> str:
        mem = self.free_memory()
        where = (
            f"{mem[0] / 2**30:.1f} GiB free of {mem[1] / 2**30:.1f} GiB on {self.device}"
            if mem
            else f"on {self.device}"
        )
        return f"out of memory answering alone: prompt {len(row.ids)} tokens, {where}"

    def _run_batch(self, rows: list[_Row], config: GenerationConfig) -> list[tuple[_Row, Response]]:
        """Generate one batch in as many rows as fit: out of memory halves it (a row alone: an
        error Response); any other failure retries its rows one by one.
        """
        fit = self._fit(rows, config)
        if fit < len(rows):
            return [
                pair
                for k in range(0, len(rows), fit)
                for pair in self._run_batch(rows[k : k + fit], config)
            ]
        oom = False
        try:
            return self._generate_rows(rows, config)
        except torch.OutOfMemoryError:
            oom = True  # retried below, once the failed attempt's frames (and caches) are gone
        except (RuntimeError, ValueError) as exc:
            if len(rows) == 1:
                return [(rows[0], error_response(rows[0].sample, self.name, config, exc))]
        if oom:
            self._prefix_ids, self._prefix_kv = [], None  # it may be half-built
        self._free()
        if oom and len(rows) == 1:
            oom_error = LcevalError(self._oom_reason(rows[0]))
            return [(rows[0], error_response(rows[0].sample, self.name, config, oom_error))]
        if oom:
            half = (len(rows) + 1) // 2
            return self._run_batch(rows[:half], config) + self._run_batch(rows[half:], config)
        return [pair for r in rows for pair in self._run_batch([r], config)]

    def _fit(self, rows: list[_Row], config: GenerationConfig) -> int:
        if len(rows) == 1:
            return 1
        prefix, width = self._layout([r.ids for r in rows])
        new = prefix - min(self._kept_prefix(rows[0].ids), prefix)  # 0 without a prefix
        room = min(max(r.budget for r in rows), GROW_ROOM)
        return self.rows_that_fit(new, width, room)

    def _layout(self, ids: list[list[int]]) -> tuple[int, int]:
        """``(shared prefix, widest own part)`` in tokens for a batch of token rows."""
        prefix = 0
        if self.share_prefix and (self._growing or len({len(x) for x in ids}) == 1):
            # sliding-window layers count padding inside the window: share only unpadded rows
            prefix = min(common_prefix_len(ids), min(len(x) for x in ids) - 1)
            if prefix < MIN_SHARED_PREFIX:
                prefix = 0
        return prefix, max(len(x) - prefix for x in ids)

    def _free(self) -> None:
        gc.collect()
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def _generate_rows(
        self, rows: list[_Row], config: GenerationConfig
    ) -> list[tuple[_Row, Response]]:
        t0 = time.perf_counter()
        ids = [r.ids for r in rows]
        prefix, width = self._layout(ids)
        input_ids = torch.full((len(rows), prefix + width), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(input_ids)
        input_ids[:, :prefix] = torch.tensor(ids[0][:prefix], dtype=torch.long)
        mask[:, :prefix] = 1
        for i, x in enumerate(ids):  # suffixes right-aligned: [prefix][pad][suffix]
            n = len(x) - prefix
            input_ids[i, input_ids.shape[1] - n :] = torch.tensor(x[prefix:], dtype=torch.long)
            mask[i, input_ids.shape[1] - n :] = 1
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        start = input_ids.shape[1]
        kwargs: dict[str, Any] = {}
        reused = 0
        room = width + min(max(r.budget for r in rows), GROW_ROOM)
        with torch.inference_mode():
            if prefix:
                source, reused = self._prefix_cache(ids[0], prefix)
                if self._cascade:
                    kwargs["past_key_values"] = self._shared_cache(source, prefix, len(rows), room)
                elif self._growing:
                    kwargs["past_key_values"] = self._new_cache(len(rows), room, source, prefix)
                else:
                    source.batch_repeat_interleave(len(rows))
                    kwargs["past_key_values"] = source
            elif self._growing:
                kwargs["past_key_values"] = self._new_cache(len(rows), room)
            sampling: dict[str, Any]
            if config.temperature > 0:
                torch.manual_seed(config.seed)
                sampling = {
                    "do_sample": True,
                    "temperature": config.temperature,
                    "top_p": config.top_p,
                }
            else:
                sampling = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
            stop = _RowStop(
                self.tokenizer, start, [r.budget for r in rows], [r.prompt.stop for r in rows]
            )
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                max_new_tokens=max(r.budget for r in rows),
                pad_token_id=self.pad_id,
                eos_token_id=sorted(self.eos_ids) or None,
                stopping_criteria=StoppingCriteriaList([stop]),
                **{**sampling, **dict(config.extra)},  # extra (top_k, ...) wins over defaults
                **kwargs,
            )
        gen: list[list[int]] = out[:, start:].tolist()
        del out, kwargs
        latency = (time.perf_counter() - t0) / len(rows)
        self.prompt_tokens_requested += sum(len(x) for x in ids)
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
        if stopped_at is not None:  # later ids are padding
            gen = gen[:stopped_at]
        ends = self.eos_ids | {self.pad_id}  # a finished row is padded with pad_id
        n = next((j for j, t in enumerate(gen) if t in ends), None)
        hit_eos = n is not None and n < row.budget and stopped_at is None
        toks = gen[: n if n is not None and n < row.budget else row.budget]
        reason: FinishReason = "stop" if hit_eos or stopped_at is not None else "length"
        thinking = getattr(self, "thinking", None)
        reasoning, n_think, unfinished = None, 0, False
        if thinking is not None and thinking.markers is not None:
            text, reasoning, n_think, unfinished, reason = thinking.answer(
                self.tokenizer, toks, row.prompt, row.sample.stop, reason
            )
        else:
            text = str(self.tokenizer.decode(toks, skip_special_tokens=True))
            text, reason = cut_at_stop(text, row.sample.stop, reason)
        return Response(
            sample_id=row.sample.id,
            model=self.name,
            text=text,
            config_hash=config.hash(),
            prompt_tokens=len(row.ids),
            completion_tokens=len(toks) + (1 if hit_eos else 0),
            finish_reason=reason,
            truncated_tokens=row.prompt.truncated_tokens,
            latency_s=latency,
            reasoning=reasoning,
            reasoning_tokens=n_think,
            thinking_unfinished=unfinished,
        )


def _chunks(rows: list[_Row], size: int) -> list[list[_Row]]:
    return [rows[k : k + size] for k in range(0, len(rows), size)]


def _plain_layers(cache: Any) -> bool:
    """Whether every layer of ``cache`` is a plain full-attention ``DynamicLayer`` (no sliding
    window or linear-attention state, which keep a bounded state that cannot be cut back)."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return False
    return all(type(layer) is DynamicLayer for layer in layers)
