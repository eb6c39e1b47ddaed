"""Is the long context needed? A run answered with ``lceval infer -o context=full,none,bm25:K``
holds answers with the whole context, without it (``<model>@context=none``) and with a retrieved
slice; this table pairs them per sample (LongBench v2's ``--no_context`` / ``--rag`` baselines)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from lceval.benchmarks import registry
from lceval.contexts.modes import split_variant
from lceval.core.io import RunDir
from lceval.metrics import paired_difference
from lceval.report.reporting import save_table

CAPTIONS: dict[str, tuple[str, str]] = {
    "context_baselines": (
        "Beyond the paper",
        "Is the long context needed: per benchmark, task and model, the mean score (0..1, "
        "higher is better) with the full context and without it (none) or with a retrieved "
        "slice (bm25:K, dense:K), the paired difference full - other with its 95% bootstrap CI "
        "and p-value on the n samples both scored; needs_context 'no' where the CI holds 0 "
        "(the model scores within the CI of its self without the whole context).",
    )
}

COLUMNS = tuple(
    "benchmark scorer task model mode full other diff low high p_value test n needs_context".split()
)


def _verdict(low: float, high: float) -> str:
    """``yes`` (CI above 0), ``no`` (CI holds 0), ``hurts`` (CI below 0), ``n/a`` (no pair)."""
    if pd.isna(low) or pd.isna(high):
        return "n/a"
    return "yes" if low > 0 else "hurts" if high < 0 else "no"


def context_baselines(
    scores: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per benchmark (default scorer's rows), task (and ``all``), model and mode: ``full`` and
    ``other`` mean scores (0..1) on the paired samples, ``diff`` = full - other with its 95% CI
    (``low``, ``high``, :func:`~lceval.metrics.paired_difference`), p-value, ``n``
    pairs (:data:`COLUMNS`); empty without another mode."""
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
        bases, modes = zip(*map(split_variant, mine["model"].astype(str)), strict=True)
        frame = mine.assign(base=bases, mode=modes, task=mine["task"].astype(str))
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
                        "full": float(both["value_full"].mean()),  # NaN when none
                        "other": float(both["value_other"].mean()),
                        **dataclasses.asdict(p),
                        "needs_context": _verdict(p.low, p.high),
                    }
                )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def report_context(run: RunDir, scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Write ``report/context_baselines.csv`` when the run has another context mode; else {}."""
    table = context_baselines(scores)
    if table.empty:
        return {}
    run.report.mkdir(parents=True, exist_ok=True)
    save_table(table, run.report, "context_baselines", index=False)
    return {"context_baselines": table}
