"""The transformers backend: batched ``generate`` on CPU or GPU, one process, no server.

Prompts are rendered only through ``lceval.models.base.render_chat_prompt`` (the tokenizer's chat
template; when a prompt does not fit the window the context alone is right-truncated). Samples of
a call are grouped by new-token budget and context, then generated in batches with left padding.
Each row stops on its own: at EOS, at its own budget, or at its first stop string (checked on the
decoded tail of the row while generating, and cut exactly afterwards).

Shared-prefix reuse, once per run: when the prompts of a batch start with the same tokens (the
chat header plus a long shared context, as in LIFBench and RULER where many instructions follow
one context), the prefix is encoded once, its key/value cache is repeated across the batch, and
only the per-sample suffixes are encoded, padded in the middle: ``[prefix][pad ... pad][suffix]``.
The backend keeps the last prefix it encoded (token ids and batch-1 cache); the next batch reuses
as much of it as its own prefix shares, so a context followed by many instructions is encoded once
per run however the samples are split into calls and batches (``lceval.models.generate`` sends
the samples of a context together). The attention mask hides the padding and position ids follow
the mask, so outputs equal those of the plain left-padded batch (float32: token for token;
tests/models/test_hf.py checks it within a batch and across batches). The kept prefix costs one
batch-1 cache (SmolLM2, float32: ~46 kB per token, ~200 MB for a 4k-token context).

Batching follows: rows of one context and budget that share a long prefix get batches of their
own (an unrelated row would shorten the shared prefix to the chat header); other rows fill
batches by budget. Samples of different contexts whose prompts share a long token prefix (RULER
haystacks) still share it within a batch.

Decoding cost on the CPU (where decoding long contexts is memory-bound): keys/values live in
buffers with room for the answer instead of being concatenated at every step
(:class:`_GrowingLayer`), and attention leaves grouped key/value heads grouped instead of copying
them per query head (:func:`sdpa_gqa_attention`); both give the same numbers as transformers' own
path (tests/models/test_hf.py compares with a stock ``generate``).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import transformers
from transformers import (
    AttentionInterface,
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    DynamicCache,
    StoppingCriteria,
    StoppingCriteriaList,
)
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from lceval.errors import LcevalError
from lceval.models.base import (
    GenerationConfig,
    RenderedPrompt,
    check_prompt_format,
    error_response,
    render_sample,
    resolve_prompt_format,
)
from lceval.models.embedded import ModelSource, resolve_model
from lceval.models.rope import RopeOverride, apply_rope, resolve_rope
from lceval.records import Context, FinishReason, Response, Sample

DTYPES = ("auto", "float32", "bfloat16", "float16")
MIN_SHARED_PREFIX = 32
"""Shortest common token prefix (tokens) worth encoding once per batch."""
GROW_ROOM = 1024
"""Most spare room (tokens) a batch's key/value buffers get beyond the prompt; they grow by as much
again when a longer answer needs it."""
CPU_ATTENTION = "lceval_sdpa_gqa"
"""Attention used on the CPU instead of transformers' ``sdpa`` (see :func:`sdpa_gqa_attention`)."""
OWN_BATCH_PREFIX = 256
"""Rows of one context and budget whose prompts share at least this many tokens (with each other
or with the kept prefix cache) are batched on their own, so that no unrelated row shortens the
batch's shared prefix; other rows fill batches by budget as before."""


@dataclass
class _Row:
    """One sample of a call, rendered and tokenized."""

    index: int
    sample: Sample
    prompt: RenderedPrompt
    ids: list[int]
    budget: int


def _pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" or device.startswith("cuda") or device == "mps":
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise LcevalError(f"device {device!r} requested but no CUDA GPU is available")
        return device
    raise LcevalError(f"device must be 'auto', 'cpu', 'cuda[:N]' or 'mps', got {device!r}")


def _pick_dtype(dtype: str, device: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise LcevalError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32  # CPU: bf16 is no faster here and fp32 keeps batching exact
    return getattr(torch, dtype)


def model_window(config: Any, tokenizer: Any) -> int:
    """The context window in tokens: ``max_position_embeddings`` or the tokenizer's max length.

    Raises:
        LcevalError: neither the model config nor the tokenizer states a window.
    """
    for cfg in (config, getattr(config, "text_config", None)):
        n = getattr(cfg, "max_position_embeddings", None)
        if isinstance(n, int) and n > 0:
            return n
    n = getattr(tokenizer, "model_max_length", None)
    if isinstance(n, int) and 0 < n < 10_000_000:
        return n
    raise LcevalError("cannot tell the model's context window; pass window=<tokens>")


def common_prefix_len(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix shared by all ``rows`` (0 for no rows)."""
    if not rows:
        return 0
    first, n = rows[0], min(len(r) for r in rows)
    for i in range(n):
        t = first[i]
        if any(r[i] != t for r in rows):
            return i
    return n


def sdpa_gqa_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' ``sdpa`` attention, with grouped key/value heads left grouped.

    With an attention mask (any padded batch) transformers copies every key/value head
    ``num_key_value_groups`` times before calling ``scaled_dot_product_attention``: for
    SmolLM2 (9 query heads on 3 key/value heads) that is 3 copies of the whole key/value cache per
    layer and decoding step, which made batched decoding on the CPU several times slower than
    the arithmetic. ``enable_gqa=True`` gives the same numbers on the CPU (checked bit for bit
    against the repeated heads) without the copies. Anything else (position biases, paged
    caches) goes to transformers' own function.
    """
    if kwargs.get("position_bias") is not None or kwargs.get("cache") is not None:
        return sdpa_attention_forward(  # type: ignore[no-any-return]
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(query.shape[2] > 1 and attention_mask is None and causal)
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=causal,
        enable_gqa=getattr(module, "num_key_value_groups", 1) > 1,
    )
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(CPU_ATTENTION, sdpa_gqa_attention)
AttentionMaskInterface.register(CPU_ATTENTION, sdpa_mask)


class _GrowingLayer(DynamicLayer):
    """A full-attention cache layer that writes new keys/values into spare room of a buffer.

    transformers' ``DynamicLayer`` concatenates at every step, copying the whole cache once per
    layer and generated token; here the buffer holds the prompt plus ``room`` tokens and grows
    (by ``room`` again) only when full. ``keys``/``values`` are views of the buffer, so every
    ``DynamicLayer`` method (crop, batch selection) still works; a layer whose tensors were
    replaced by such a method copies them into a new buffer at its next update.
    """

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = max(1, room)
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None

    def preload(self, keys: torch.Tensor, values: torch.Tensor, batch: int) -> None:
        """Start from ``keys``/``values`` (batch 1 or ``batch``), repeated to ``batch`` rows."""
        self.lazy_initialization(keys, values)
        self._alloc(batch, keys, values, keys.shape[-2])

    def _alloc(self, batch: int, keys: torch.Tensor, values: torch.Tensor, n: int) -> None:
        size = (batch, keys.shape[1], n + self.room, keys.shape[-1])
        self._k = torch.empty(size, dtype=keys.dtype, device=keys.device)
        self._v = torch.empty(
            size[:-1] + (values.shape[-1],), dtype=values.dtype, device=values.device
        )
        self._k[:, :, :n] = keys
        self._v[:, :, :n] = values
        self.keys, self.values = self._k[:, :, :n], self._v[:, :, :n]

    def _owns(self, n: int, add: int) -> bool:
        k, buf = self.keys, self._k
        return (
            buf is not None
            and k is not None
            and k.data_ptr() == buf.data_ptr()
            and k.shape[:2] == buf.shape[:2]
            and k.stride() == buf.stride()
            and n + add <= buf.shape[-2]
        )

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, add = self.get_seq_length(), key_states.shape[-2]
        if not self._owns(n, add):
            self.room = max(self.room, add)
            if n:
                assert self.keys is not None and self.values is not None
                self._alloc(self.keys.shape[0], self.keys, self.values, n)
            else:
                self._alloc(key_states.shape[0], key_states[:, :, :0], value_states[:, :, :0], 0)
        assert self._k is not None and self._v is not None
        self._k[:, :, n : n + add] = key_states
        self._v[:, :, n : n + add] = value_states
        self.keys, self.values = self._k[:, :, : n + add], self._v[:, :, : n + add]
        return self.keys, self.values


class _RowStop(StoppingCriteria):
    """Per-row stopping: a row is done at its budget or once its tail holds a stop string.

    ``stopped_at[i]`` is the number of generated tokens when row ``i``'s stop string appeared.
    """

    def __init__(
        self, tokenizer: Any, start: int, budgets: list[int], stops: list[tuple[str, ...]]
    ):
        self.tokenizer = tokenizer
        self.start = start
        self.budgets = budgets
        self.stops = stops
        self.tail = max((len(s) for ss in stops for s in ss), default=0) + 8
        """Tokens decoded per check: each token is at least about one character."""
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


class HFBackend:
    """A transformers causal LM answering Samples (greedy by default).

    Args:
        model: ``None`` / ``"smollm2"`` for the embedded SmolLM2-135M-Instruct, a local model
            folder, or a hub id (see ``lceval.models.embedded.resolve_model``).
        device: ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda[:N]"`` or ``"mps"``.
        dtype: ``"auto"`` (bfloat16 on GPUs that support it, float16 on older GPUs, float32 on
            CPU), ``"float32"``, ``"bfloat16"`` or ``"float16"``.
        batch_size: most samples per ``generate`` call.
        window: context window in tokens (default: the model config's ``max_position_embeddings``,
            else the tokenizer's ``model_max_length``). Prompt + budget must fit in it.
        trust_remote_code: passed to ``from_pretrained`` (models with custom code).
        share_prefix: encode a batch's common token prefix once and reuse its KV cache, and keep
            the last such cache for the next batches (a shared context is encoded once per run);
            ``prompt_tokens_requested`` / ``prompt_tokens_computed`` count the effect.
        num_threads: CPU threads for torch (``torch.set_num_threads``, process-wide); None keeps
            torch's default (one per core). On a loaded machine 1 thread can be several times
            faster than oversubscribed OpenMP threads.

        prompt_format: ``auto`` (the chat template when the tokenizer has one, else plain text:
            base models), ``chat`` or ``plain``; recorded in run.json and, when plain, in the
            response cache key.
        rope_theta: RoPE base override (None: the checkpoint's); see :mod:`lceval.models.rope`.
        rope_scaling: RoPE scaling spec, ``{"type": "ntk"|"dynamic"|"linear", "factor": s,
            "original_max_position_embeddings": n}`` or ``"TYPE:s"``. Both are set on the model
            config before ``from_pretrained`` (never on model code); the effective values go to
            run.json and, when they differ from the checkpoint's, to the response cache key. With
            a scaling spec the default window is s x the trained window; ``dynamic`` turns
            ``share_prefix`` off (its base depends on the encoded length).

    Raises:
        LcevalError: the model cannot be resolved or loaded, or an argument is invalid.
    """

    def __init__(
        self,
        model: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        window: int | None = None,
        trust_remote_code: bool = False,
        share_prefix: bool = True,
        num_threads: int | None = None,
        prompt_format: str = "auto",
        rope_theta: float | None = None,
        rope_scaling: dict[str, Any] | str | None = None,
    ) -> None:
        if batch_size < 1:
            raise LcevalError(f"batch_size must be >= 1, got {batch_size}")
        if window is not None and window < 2:
            raise LcevalError(f"window must be >= 2 tokens, got {window}")
        if num_threads is not None:
            if num_threads < 1:
                raise LcevalError(f"num_threads must be >= 1, got {num_threads}")
            torch.set_num_threads(num_threads)
        check_prompt_format(prompt_format)
        self.source: ModelSource = resolve_model(model)
        self.name = self.source.name
        self.device = _pick_device(device)
        self.dtype = _pick_dtype(dtype, self.device)
        self.batch_size = batch_size
        self.call_size = batch_size
        """Samples per ``generate`` call that ``lceval.pipeline.infer`` sends by default."""
        self.share_prefix = share_prefix
        self._prefix_ids: list[int] = []
        """Token ids of the last shared prefix encoded (empty: none kept)."""
        self._prefix_kv: Any = None
        """Its key/value cache, batch size 1 (never handed to ``generate`` itself, only copies)."""
        self.prompt_tokens_requested = 0
        """Prompt tokens of every row answered so far (padding excluded)."""
        self.prompt_tokens_computed = 0
        """Of those, the prompt tokens the model actually encoded (the rest came from a kept or
        batch-shared prefix cache)."""
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
            msg = " ".join(str(exc).split())[:300]
            raise LcevalError(
                f"cannot load model {self.name} from {self.source.path}: {msg}"
            ) from None
        self.model: Any = lm.to(torch.device(self.device)).eval()
        if self.device == "cpu" and self.model.config._attn_implementation == "sdpa":
            self.model.set_attn_implementation(CPU_ATTENTION)
        self._growing = _plain_layers(DynamicCache(config=self.model.config))
        """Full-attention layers only: key/value buffers with room, and a prefix kept across
        batches (sliding-window or linear-attention models share a prefix within a batch only)."""
        self.prompt_format = resolve_prompt_format(self.tokenizer, prompt_format)
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
        """Settings that change outputs and so join the response cache key (see generate).

        The engine and the dtype always (greedy answers of hf and vLLM, or of float32 and
        bfloat16, differ), ``prompt_format`` when plain (base models).
        """
        out: dict[str, Any] = {"engine": "hf", "dtype": self._dtype_name}
        if self.prompt_format == "plain":
            out["prompt_format"] = "plain"
        rope_override = getattr(self, "rope", None)  # None: no RoPE model, or a bare stub
        rope = rope_override.cache_field() if rope_override is not None else None
        if rope is not None:
            out["rope"] = rope  # answers under two RoPE bases never share a key
        return out

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
            "batch_size": self.batch_size,
            "share_prefix": self.share_prefix,
            "num_threads": torch.get_num_threads(),
            "prompt_format": self.prompt_format,
            "rope": self.rope.record() if self.rope is not None else None,
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
    def render(
        self, sample: Sample, contexts: Mapping[str, Context], config: GenerationConfig
    ) -> RenderedPrompt:
        """The prompt this backend sends for ``sample`` (chat template, context cut to fit).

        Raises:
            LcevalError: the budget is < 1, the context is unknown, or the prompt cannot fit.
        """
        return render_sample(
            self.tokenizer, sample, contexts, self.window, config, self.prompt_format
        )

    def generate(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> list[Response]:
        """Answer ``samples`` in order; a sample that cannot be answered gets an error Response.

        Args:
            samples: the samples to answer.
            contexts: the run's contexts by id.
            config: decoding settings; ``config.extra`` is passed to ``model.generate`` (e.g.
                ``repetition_penalty``, ``top_k``).

        Returns:
            One Response per sample, in the order of ``samples``.
        """
        if self.model is None:
            raise LcevalError(f"backend for {self.name} is closed")
        out: list[Response | None] = [None] * len(samples)
        rows: list[_Row] = []
        for i, s in enumerate(samples):
            try:
                p = self.render(s, contexts, config)
                ids = self.tokenizer(p.text, add_special_tokens=False)["input_ids"]
                rows.append(_Row(i, s, p, ids, config.budget(s)))
            except LcevalError as exc:
                out[i] = error_response(s, self.name, config, exc)
        for batch in self._plan(rows):
            for r, resp in self._run_batch(batch, config):
                out[r.index] = resp
        return [r for r in out if r is not None]

    def _plan(self, rows: list[_Row]) -> list[list[_Row]]:
        """Split rows into batches.

        Rows of one context and budget that share a long prefix (:data:`OWN_BATCH_PREFIX` tokens,
        with each other or with the kept prefix cache) form batches of their own, in context
        order, so the shared prefix is encoded once and kept for the context's next rows. The
        other rows are sorted by budget (no row waits on a longer one), then context, and cut
        into batches of ``batch_size``.
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
        rest.sort(key=lambda r: (r.budget, r.sample.context_id or "", r.index))
        return own + _chunks(rest, self.batch_size)

    def _kept_prefix(self, ids: Sequence[int]) -> int:
        """How many leading tokens of ``ids`` the kept prefix cache holds."""
        if self._prefix_kv is None:
            return 0
        return common_prefix_len([self._prefix_ids, ids])

    def _prefix_cache(self, ids: list[int], n: int) -> tuple[Any, int]:
        """A batch-1 key/value cache holding at least ``ids[:n]``, and how many of those tokens
        came from the kept prefix.

        Reuses the kept prefix as far as it matches, encodes the rest, and keeps the result for
        the next batches (when it holds tokens the kept one did not).
        """
        if not self._growing:
            chunk = torch.tensor([ids[:n]], dtype=torch.long, device=self.device)
            return self.model(chunk, use_cache=True).past_key_values, 0
        reused = min(self._kept_prefix(ids), n)
        if n > reused:
            cache = self._new_cache(1, n - reused, self._prefix_kv, reused)
            chunk = torch.tensor([ids[reused:n]], dtype=torch.long, device=self.device)
            self.model(chunk, past_key_values=cache, use_cache=True)
            self._prefix_ids, self._prefix_kv = list(ids[:n]), cache
        return self._prefix_kv, reused

    def _new_cache(self, batch: int, room: int, source: Any = None, length: int = 0) -> Any:
        """A cache of :class:`_GrowingLayer` with room for ``room`` more tokens, starting from
        the first ``length`` tokens of ``source`` (a batch-1 cache) repeated over ``batch`` rows."""
        cache = DynamicCache(config=self.model.config)
        layers: list[Any] = []
        for i in range(len(cache.layers)):
            layer = _GrowingLayer(room)
            if source is not None and length:
                src = source.layers[i]
                layer.preload(src.keys[:, :, :length], src.values[:, :, :length], batch)
            layers.append(layer)
        cache.layers = layers
        return cache

    def _run_batch(self, rows: list[_Row], config: GenerationConfig) -> list[tuple[_Row, Response]]:
        """Generate one batch; if it fails as a whole, retry its rows one by one."""
        try:
            return self._generate_rows(rows, config)
        except (RuntimeError, ValueError) as exc:  # e.g. out of memory
            if len(rows) == 1:
                return [(rows[0], error_response(rows[0].sample, self.name, config, exc))]
        self._free()
        return [pair for r in rows for pair in self._run_batch([r], config)]

    def _free(self) -> None:
        gc.collect()
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def _generate_rows(
        self, rows: list[_Row], config: GenerationConfig
    ) -> list[tuple[_Row, Response]]:
        t0 = time.perf_counter()
        ids = [r.ids for r in rows]
        prefix = 0
        if self.share_prefix:
            prefix = min(common_prefix_len(ids), min(len(x) for x in ids) - 1)
            if prefix < MIN_SHARED_PREFIX:
                prefix = 0
        width = max(len(x) - prefix for x in ids)
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
                if self._growing:
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
                self.tokenizer, start, [r.budget for r in rows], [r.sample.stop for r in rows]
            )
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                max_new_tokens=max(r.budget for r in rows),
                pad_token_id=self.pad_id,
                eos_token_id=sorted(self.eos_ids) or None,
                stopping_criteria=StoppingCriteriaList([stop]),
                **sampling,
                **kwargs,
                **dict(config.extra),
            )
        gen: list[list[int]] = out[:, start:].tolist()
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
        text = str(self.tokenizer.decode(toks, skip_special_tokens=True))
        reason: FinishReason = "stop" if hit_eos or stopped_at is not None else "length"
        cuts = [j for j in (text.find(s) for s in row.sample.stop) if j >= 0]
        if cuts:
            text, reason = text[: min(cuts)], "stop"
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
