"""Is the long context needed? A run answered with ``lceval infer -o context=full,none,bm25:K``
holds each model's answers with its whole context (``<model>``), without it
(``<model>@context=none``) and with a retrieved slice (``<model>@context=bm25:4``,
:mod:`lceval.models.contexts`). This table pairs them sample by sample: per benchmark, task,
model and mode, the mean score with the full context, with the other mode, and the paired
difference full - other with its 95% paired-bootstrap CI and test
(:func:`lceval.metrics.paired.paired_difference`) over the samples both scored.

A model whose difference's CI holds 0 scores within the CI of its no-context (or retrieved)
self on that task: the run cannot tell that it needed the whole context there (PersonaMem#41's
no-context baseline at 49.2%; LongBench v2's ``--no_context`` and ``--rag`` baselines, printed
there without uncertainty).

Only runs holding such answers get the table; other runs' reports are unchanged.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from lceval.core.io import RunDir

CAPTIONS: dict[str, tuple[str, str]] = {
    "context_baselines": (
        "Beyond the paper",
        "Is the long context needed: per benchmark, task and model, the mean score (0..1, "
        "higher is better) with the full context and without it (none) or with a retrieved "
        "slice (bm25:K, dense:K), the paired difference full - other with its 95% bootstrap CI "
        "and p-value on the n samples both scored; needs_context 'no' where the CI holds 0 "
        "(the model scores within the CI of its self without the whole context).",
    ),
}
"""Caption of the table :func:`report_context` writes (report/index.html)."""

COLUMNS = (
    "benchmark",
    "scorer",
    "task",
    "model",
    "mode",
    "full",
    "other",
    "diff",
    "low",
    "high",
    "p_value",
    "test",
    "n",
    "needs_context",
)


def _verdict(low: float, high: float) -> str:
    """``yes`` (the CI is above 0: the full context helps), ``no`` (the CI holds 0: within
    the CI of its self without it), ``hurts`` (the CI is below 0), ``n/a`` (no pair)."""
    if pd.isna(low) or pd.isna(high):
        return "n/a"
    if low > 0:
        return "yes"
    if high < 0:
        return "hurts"
    return "no"


def context_baselines(
    scores: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """The paired differences full - other per benchmark, task and model (see the module
    docstring), plus an ``all`` task row per benchmark, model and mode (every shared sample
    pooled).

    Args:
        scores: score rows of the run (``RunDir.read_scores``); each benchmark's default
            scorer's rows are read (``Benchmark.scores_for``).
        n_resamples: bootstrap resamples of each CI.
        seed: seed of the resampling.

    Returns:
        Columns :data:`COLUMNS`: ``full`` and ``other`` the mean scores (0..1) on the paired
        samples, ``diff`` = full - other with ``low``/``high`` its 95% CI, ``n`` the pairs;
        empty when no model has answers under another context mode.
    """
    from lceval import registry
    from lceval.metrics.paired import paired_difference
    from lceval.models.contexts import split_variant

    rows: list[dict[str, Any]] = []
    if scores.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    for key in sorted(set(scores["benchmark"].astype(str))):
        try:
            bench = registry.get(key)
        except Exception:  # noqa: BLE001 - scores of a benchmark this lceval does not know
            continue
        mine, names = bench.scores_for(scores)
        if mine.empty:
            continue
        models = mine["model"].astype(str)
        split = [split_variant(m) for m in models]
        frame = mine.assign(
            base=[b for b, _ in split], mode=[m for _, m in split], task=mine["task"].astype(str)
        )
        full = frame[frame["mode"] == "full"]
        for (base, mode), other in frame[frame["mode"] != "full"].groupby(["base", "mode"]):
            mine_full = full[full["base"] == base]
            if mine_full.empty:
                continue
            pairs = mine_full[["sample_id", "task", "value"]].merge(
                other[["sample_id", "value"]], on="sample_id", suffixes=("_full", "_other")
            )
            groups = [(t, g) for t, g in pairs.groupby("task", sort=True)]
            if len(groups) > 1:
                groups.append(("all", pairs))
            for task, g in groups:
                both = g.dropna(subset=["value_full", "value_other"])
                p = paired_difference(
                    g["value_full"], g["value_other"], n_resamples=n_resamples, seed=seed
                )
                rows.append(
                    {
                        "benchmark": key,
                        "scorer": ",".join(names),
                        "task": task,
                        "model": base,
                        "mode": mode,
                        "full": float(both["value_full"].mean()) if len(both) else float("nan"),
                        "other": float(both["value_other"].mean()) if len(both) else float("nan"),
                        "diff": p.diff,
                        "low": p.low,
                        "high": p.high,
                        "p_value": p.p_value,
                        "test": p.test,
                        "n": p.n,
                        "needs_context": _verdict(p.low, p.high),
                    }
                )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def report_context(run: RunDir, scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Write ``report/context_baselines.csv`` when the run holds answers under another context
    mode beside the full one; nothing (empty dict) otherwise."""
    from lceval.report.reporting import save_table

    table = context_baselines(scores)
    if table.empty:
        return {}
    run.report.mkdir(parents=True, exist_ok=True)
    save_table(table, run.report, "context_baselines", index=False)
    return {"context_baselines": table}
