"""RULER analysis: score per task and length, the mean over tasks, effective length, wAvg.

Reproduces the aggregation of RULER (Hsieh et al., 2024, Sec. 4 and the README leaderboard of
NVIDIA/RULER): a task's score is the mean over its samples (0..100); the score at a length is the
mean over the tasks; the effective length is the longest length up to which every score stays
above the threshold 85.6 (Llama-2-7B-chat at 4K); the weighted averages over lengths use linear
weights 1..n, increasing with length (wAvg inc) or decreasing (wAvg dec).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lceval.benchmarks.ruler.published import with_published
from lceval.core.console import log
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.metrics import Headline, bootstrap, mean_statistic
from lceval.report.reporting import save_figure, save_table

CAPTIONS: dict[str, tuple[str, str]] = {
    # name (report/<name>.csv or figures/<name>.png) -> (paper item, one-line caption)
    "ruler/published": (
        "README leaderboard",
        "The run's models (source 'this run') above the README leaderboard: score per length "
        "4K-128K, Avg and wAvg (inc, dec) (0..100, higher is better), effective length "
        "(longest length scoring above Llama-2-7B's 85.6); the run's rows are not ranked.",
    ),
    "ruler/models": (
        "Headline",
        "Avg over lengths (0..100, higher is better) per model with its 95% bootstrap CI "
        "(Avg_low, Avg_high) over n, effective length (tokens; empty: below 85.6 at every "
        "length) and wAvg weighting longer (inc) or shorter (dec) lengths more.",
    ),
    "ruler/summary": (
        "README leaderboard",
        "Mean score over tasks (0..100, higher is better) per model and length (tokens), with "
        "its 95% bootstrap CI (low, high; samples resampled within tasks), n_tasks and n.",
    ),
    "ruler/task_scores": (
        "Scores by task and length",
        "Score (0..100, higher is better) per model, task and length with its 95% bootstrap "
        "CI (low, high), n scored samples and n_nan unscorable ones.",
    ),
    "ruler/by_task": (
        "Scores by task and length",
        "Score (0..100, higher is better): rows task, columns model and length (tokens), with "
        "an Avg row (mean over tasks), as RULER reports.",
    ),
    "ruler_scores": (
        "Scores by task and length",
        "Score (0..100, higher is better) against length (tokens, log scale) per task (thin) "
        "and the mean over tasks (thick); dashed: the 85.6 threshold of the effective length.",
    ),
}
"""Paper item and caption of each table and figure this report writes (report/index.html)."""

THRESHOLD = 85.6
"""RULER's qualitative threshold: Llama-2-7B-chat's score at 4K (0..100)."""


def weighted_average(scores: Sequence[float], increasing: bool = True) -> float:
    """RULER's wAvg: linear weights 1..n over scores ordered by length (0..100 in, 0..100 out).

    Args:
        scores: scores at increasing lengths.
        increasing: weights 1..n (wAvg inc, favours long lengths) or n..1 (wAvg dec).

    Raises:
        LcevalError: no scores.

    Example: 95.5, 93.8, 91.6, 87.4, 84.7, 77.0 (Llama-3.1-8B, 4K..128K) give 85.4 (inc) and
    91.3 (dec), as in the RULER README.
    """
    s = np.asarray(list(scores), dtype=float)
    if s.size == 0:
        raise LcevalError("weighted_average needs at least one score")
    w = np.arange(1, s.size + 1, dtype=float)
    if not increasing:
        w = w[::-1]
    return float((w * s).sum() / w.sum())


def effective_length(scores: Mapping[int, float], threshold: float = THRESHOLD) -> int | None:
    """Longest length (tokens) such that the score at it and at every shorter length > threshold.

    Args:
        scores: length (tokens) -> score (0..100).
        threshold: 85.6 by default (RULER).

    Returns:
        The length, or None when the shortest length already falls to or below the threshold.
    """
    best = None
    for length in sorted(scores):
        if not scores[length] > threshold:
            break
        best = length
    return best


def ruler_tables(scores: pd.DataFrame, samples: Sequence[Sample]) -> dict[str, pd.DataFrame]:
    """Per-task and summary tables from a scores frame and the run's samples.

    Args:
        scores: tidy scores (``sample_id``, ``model``, ``task``, ``value`` in 0..1 or NaN).
        samples: the run's RULER samples (for ``length``).

    Returns:
        ``task_scores``: one row per model, task and length: ``score`` (0..100, mean over scored
        samples), ``low``, ``high`` (its 95% bootstrap CI), ``n`` (scored samples), ``n_nan``
        (unscorable). ``summary``: one row per model and length: ``score`` (mean over tasks,
        0..100), ``low``, ``high`` (samples resampled within tasks), ``n_tasks`` and ``n``.
        ``models``: one row per model: ``Avg`` (mean over lengths) with ``Avg_low``,
        ``Avg_high`` and ``n``, ``effective_length`` (tokens, or NaN), ``wAvg_inc``,
        ``wAvg_dec`` (0..100).

    Raises:
        LcevalError: a score row whose sample is not among ``samples``.
    """
    length = {s.id: s.length for s in samples if s.benchmark == "ruler"}
    df = scores[scores["sample_id"].isin(length)].copy() if len(scores) else scores.copy()
    missing = set(scores.get("sample_id", pd.Series(dtype=str))) - set(length)
    if missing and len(scores):
        raise LcevalError(f"ruler report: scores for unknown sample(s), e.g. {sorted(missing)[0]}")
    df["length"] = df["sample_id"].map(length)
    df["score"] = df["value"] * 100.0
    g = df.groupby(["model", "task", "length"], sort=True)
    task_scores = g.agg(
        score=("score", "mean"),
        n=("score", "count"),
        n_nan=("score", lambda x: int(x.isna().sum())),
    ).reset_index()
    ci = {k: _ci(part["value"]) for k, part in df.groupby(["model", "task", "length"], sort=True)}
    task_scores = _with_ci(task_scores, ["model", "task", "length"], ci)
    summary = (
        task_scores.groupby(["model", "length"], sort=True)
        .agg(score=("score", "mean"), n_tasks=("task", "nunique"))
        .reset_index()
    )
    ci = {
        k: _ci(part["value"], groups=part["task"], weights=dict.fromkeys(part["task"], 1.0))
        for k, part in df.groupby(["model", "length"], sort=True)
    }
    summary = _with_ci(summary, ["model", "length"], ci, n=False)
    rows = []
    for model, part in summary.groupby("model", sort=True):
        part = part.sort_values("length")
        by_len = dict(zip(part["length"].astype(int), part["score"], strict=True))
        eff = effective_length(by_len)
        vals = list(by_len.values())
        avg = _ci(*_avg_design(df[df["model"] == model]))
        rows.append(
            {
                "model": model,
                "Avg": float(np.mean(vals)) if vals else np.nan,
                "Avg_low": avg[1],
                "Avg_high": avg[2],
                "n": avg[3],
                "effective_length": eff if eff is not None else np.nan,
                "wAvg_inc": weighted_average(vals, True) if vals else np.nan,
                "wAvg_dec": weighted_average(vals, False) if vals else np.nan,
            }
        )
    models = pd.DataFrame(
        rows,
        columns=[
            "model",
            "Avg",
            "Avg_low",
            "Avg_high",
            "n",
            "effective_length",
            "wAvg_inc",
            "wAvg_dec",
        ],
    )
    return {"task_scores": task_scores, "summary": summary, "models": models}


def _avg_design(df: pd.DataFrame) -> tuple[pd.Series, list[tuple[object, int]], dict]:
    """Values, (task, length) cells and their weights that make the mean over cells equal to
    RULER's Avg (the mean over lengths of the mean over tasks at each length)."""
    ok = df[df["value"].notna()]
    cells = list(zip(ok["task"], ok["length"].astype(int), strict=True))
    per_len = ok.groupby("length")["task"].nunique()
    weights = {(t, n): 1.0 / float(per_len[n]) for t, n in set(cells)}
    return ok["value"], cells, weights


def _ci(
    values: pd.Series, groups: pd.Series | list | None = None, weights: dict | None = None
) -> tuple[float, float, float, int]:
    """(mean, low, high, n) in 0..100 of a bootstrap over samples (each RULER sample has its
    own haystack, so samples are independent; tasks are strata)."""
    est = bootstrap(
        values.to_numpy(float),
        groups=None if groups is None else list(groups),
        weights=weights,
    )
    return (100 * est.mean, 100 * est.low, 100 * est.high, est.n)


def _with_ci(table: pd.DataFrame, keys: list[str], ci: dict, *, n: bool = True) -> pd.DataFrame:
    """``table`` with ``low`` and ``high`` after ``score`` (and ``n`` last unless present)."""
    idx = [tuple(r) if len(keys) > 1 else r[0] for r in table[keys].itertuples(index=False)]
    nan = (np.nan, np.nan, np.nan, 0)
    table = table.copy()
    pos = list(table.columns).index("score") + 1
    table.insert(pos, "low", [ci.get(k, nan)[1] for k in idx])
    table.insert(pos + 1, "high", [ci.get(k, nan)[2] for k in idx])
    if not n:
        table["n"] = [ci.get(k, nan)[3] for k in idx]
    return table


def headline(scores: pd.DataFrame, samples: Sequence[Sample]) -> Headline:
    """RULER's headline for leaderboards and paired tests: Avg (0..100), the mean over lengths
    of the mean over tasks; samples (each with its own haystack) are the unit, resampled within
    (task, length) cells."""
    length = {s.id: s.length for s in samples if s.benchmark == "ruler"}
    df = scores[scores["sample_id"].isin(length) & scores["value"].notna()]
    cells = [f"{t}|{length[i]}" for t, i in zip(df["task"], df["sample_id"], strict=True)]
    frame = pd.DataFrame(
        {
            "model": df["model"].astype(str).to_numpy(),
            "sample_id": df["sample_id"].to_numpy(),
            "group": cells,
            "cluster": df["sample_id"].to_numpy(),
            "value": 100 * df["value"].to_numpy(float),
            "count": 1.0,
        }
    )

    def stat(sums: Mapping[str, np.ndarray], groups: Sequence[Hashable]) -> np.ndarray:
        lengths = [str(g).rsplit("|", 1)[1] for g in groups]
        per_len = {n: lengths.count(n) for n in set(lengths)}
        weights = {g: 1.0 / per_len[n] for g, n in zip(groups, lengths, strict=True)}
        return mean_statistic(weights)(sums, groups)

    return Headline("ruler", "Avg", "0..100", frame, ("value", "count"), stat)


def report_ruler(
    run: RunDir, scores: pd.DataFrame, samples: Sequence[Sample]
) -> dict[str, pd.DataFrame]:
    """Write RULER tables (CSV) and a score-by-length figure (PNG, PDF) under the run's report/.

    Args:
        run: the run folder.
        scores: the run's RULER scores (0..1).
        samples: the run's RULER samples.

    Returns:
        The tables of :func:`ruler_tables`, plus ``by_task``: a wide table (rows task, columns
        model and length, 0..100) with an ``Avg`` row (mean over tasks), as RULER reports, and
        ``published``: the run's models in the README leaderboard's layout above every README
        row (:func:`lceval.benchmarks.ruler.published.with_published`).

    Raises:
        LcevalError: scores for unknown samples.
    """
    tables = ruler_tables(scores, samples)
    ts = tables["task_scores"]
    wide = ts.pivot_table(index="task", columns=["model", "length"], values="score")
    if len(wide):
        wide.loc["Avg"] = wide.mean(axis=0)
    tables["by_task"] = wide
    tables["published"] = with_published(tables["summary"], tables["models"])
    folder = run.report / "ruler"
    for name, df in tables.items():
        save_table(df, folder, name, index=(name == "by_task"))
    if len(ts) and not np.isfinite(ts["score"].to_numpy(float)).any():
        log("ruler: every answer errored (no score to plot): tables written, no score figure")
    elif len(ts):
        fig, ax = plt.subplots(figsize=(7, 4))
        for (model, task), part in ts.groupby(["model", "task"]):
            ax.plot(
                part["length"],
                part["score"],
                marker="o",
                lw=1,
                alpha=0.6,
                label=f"{task}" if ts["model"].nunique() == 1 else f"{model} {task}",
            )
        for model, part in tables["summary"].groupby("model"):
            ax.plot(
                part["length"],
                part["score"],
                marker="s",
                lw=3,
                color="black",
                label=f"{model} mean" if ts["model"].nunique() > 1 else "mean over tasks",
            )
        ax.axhline(THRESHOLD, ls="--", color="grey", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("length (tokens)")
        ax.set_ylabel("score (0..100)")
        ax.set_ylim(-2, 102)
        ax.legend(fontsize=6, ncol=2, loc="best")
        ax.set_title("RULER score by task and length")
        save_figure(fig, run.figures, "ruler_scores")
    return tables
