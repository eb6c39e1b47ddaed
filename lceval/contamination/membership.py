"""Membership signals (Min-K% Prob, Min-K%++, zlib ratio), AUROC and the contamination report
(see :mod:`lceval.contamination`)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import Field

from lceval import params
from lceval.contamination.overlap import _field_of, sample_text
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.models.logprobs import prompt_logprobs


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


class _Args(params.Declared):
    """The arguments checked here, worded by the one translator (:func:`params.validate`)."""

    k: Annotated[float, Field(gt=0, le=1)] = Field(0.2, description="the Min-K share")
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
    # here, not at the top: loads scipy
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
    """AUROC with a percentile-bootstrap CI (each group resampled on its own): ``(auroc, low,
    high)``, NaNs when a group is empty.

    Raises:
        LcevalError: ``confidence`` outside (0, 1) or ``n_resamples`` not a positive integer.
    """
    params.validate(_Args, {"n_resamples": n_resamples, "confidence": confidence}, where="auroc_ci")
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
    """AUROC (seen vs unseen) of each present ``signals`` column with its 95% bootstrap CI; one
    row per signal: ``signal``, ``auroc``, ``ci_low``, ``ci_high``, ``n_seen``, ``n_unseen``.

    Raises:
        LcevalError: no ``label`` (boolean) column, or ``n_resamples`` not a positive integer.
    """
    if label not in scores:
        raise LcevalError(f"auroc_table: the scores have no {label!r} column")
    params.validate(_Args, {"n_resamples": n_resamples}, where="auroc_table")
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
    samples = run.read_samples()
    contexts = run.read_contexts()
    which: Callable[[Sample], bool | None]
    if isinstance(seen, tuple):
        key, yes, no = seen

        def by_field(s: Sample) -> bool | None:
            v = _field_of(s, key)
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
    # here, not at the top: loads matplotlib
    import matplotlib.pyplot as plt

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
        ax.set_xlim(0, 1)
        ax.set_xlabel("share (0..1)")
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
        signals = [
            s
            for s in ("min_k", "min_k_pp", "zlib")
            if any(s in set(auc["signal"]) for _, auc in drawn.values())
        ]
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
