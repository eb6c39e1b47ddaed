"""A benchmark's headline metric: its declaration and the estimates and paired tests over it."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from lceval.metrics.intervals import SumStatistic, bootstrap_sums, mean_statistic
from lceval.metrics.paired import Paired, paired_difference, paired_sums

if TYPE_CHECKING:
    from lceval.benchmark import Benchmark
    from lceval.core.records import Sample

# --------------------------------------------------------------------------------------------
# a benchmark's headline metric
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Headline:
    """A benchmark's headline metric as data: per-sample columns and the statistic over them.

    Each benchmark's reporter builds one (``report.headline(scores, samples)``); leaderboards
    (:func:`headline_estimates`), paired tests (:func:`headline_paired`) and rank correlations
    (``lceval.report.compare``) use it, so a benchmark's number has one definition.
    """

    benchmark: str
    """Benchmark key."""
    metric: str
    """The metric as the paper names it (e.g. ``"ARS (Eq. 3)"``)."""
    unit: str
    """``"0..1"`` or ``"0..100"``: the unit the statistic returns."""
    frame: pd.DataFrame
    """One row per (model, sample): ``model``, ``sample_id``, ``group``, ``cluster`` and
    :attr:`columns` (NaN counts as 0)."""
    columns: tuple[str, ...]
    """The summed columns the statistic reads."""
    statistic: SumStatistic
    """The metric from column sums per ``group``."""
    binary: str | None = None
    """When the metric is the pooled mean of this 0/1 column over independent samples,
    comparisons use McNemar's exact test; None: the sign-flip test."""

    @property
    def models(self) -> list[str]:
        """Models in the frame, sorted."""
        return sorted(map(str, self.frame["model"].unique()))


def headline_estimates(
    h: Headline, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """The headline metric of each model with its bootstrap CI (each model on its own samples).

    Returns:
        Columns ``benchmark, metric, unit, model, estimate, low, high, n, n_units``.
    """
    rows = []
    for model in h.models:
        part = h.frame[h.frame["model"].astype(str) == model]
        est = bootstrap_sums(
            part[list(h.columns)],
            h.statistic,
            groups=part["group"].tolist(),
            clusters=part["cluster"].tolist(),
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
        rows.append(
            {
                "benchmark": h.benchmark,
                "metric": h.metric,
                "unit": h.unit,
                "model": model,
                "estimate": est.mean,
                "low": est.low,
                "high": est.high,
                "n": est.n,
                "n_units": est.n_units,
            }
        )
    cols = ["benchmark", "metric", "unit", "model", "estimate", "low", "high", "n", "n_units"]
    return pd.DataFrame(rows, columns=cols)


def headline_paired(
    h: Headline,
    model_a: str,
    model_b: str,
    *,
    n_resamples: int = 2000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
) -> Paired:
    """Headline(A) - headline(B) on the samples both models have (joined by ``sample_id``).

    McNemar's exact test when :attr:`Headline.binary` names the column and every score is 0 or
    1 (the CI then is the bootstrap of the pooled difference); else :func:`paired_sums`.

    Raises:
        ValueError: a model is not in the headline.
    """
    for m in (model_a, model_b):
        if m not in h.models:
            raise ValueError(f"{h.benchmark}: no model {m!r} (have {', '.join(h.models)})")
    f = h.frame.assign(model=h.frame["model"].astype(str))
    a = f[f["model"] == model_a].set_index("sample_id")
    b = f[f["model"] == model_b].set_index("sample_id")
    ids = a.index.intersection(b.index).sort_values()
    a, b = a.loc[ids], b.loc[ids]
    cols = list(h.columns)
    if h.binary is not None:
        x, y = a[h.binary].to_numpy(float), b[h.binary].to_numpy(float)
        if np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all():
            return paired_difference(
                x,
                y,
                groups=a["group"].tolist(),
                n_resamples=n_resamples,
                n_permutations=n_permutations,
                confidence=confidence,
                seed=seed,
            )
    return paired_sums(
        a[cols].reset_index(drop=True),
        b[cols].reset_index(drop=True),
        h.statistic,
        groups=a["group"].tolist(),
        clusters=a["cluster"].tolist(),
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        confidence=confidence,
        seed=seed,
    )


def headline_of(
    bench: Benchmark, scores: pd.DataFrame, samples: Sequence[Sample], scorer: str | None = None
) -> Headline:
    """The headline of benchmark ``bench`` (``headline``, else :func:`generic_headline`) over the
    rows
    of one scorer (:meth:`Benchmark.scores_for`: default, the default scorer). A scorer reporting
    other
    metrics than the default (a judge's win rate) gets the generic one; a non-default
    scorer's headline names it in ``metric`` (``ARS (Eq. 3) [lifbench:strict]``).

    Args:
        scores: scores.parquet rows (any benchmarks; ``bench``'s are selected).
        samples: ``bench``'s samples with typed gold.
        scorer: a scorer of this benchmark (None: the default).

    Raises:
        LcevalError: ``scorer`` is not one of ``bench``'s scorers.
    """
    rows, names = bench.scores_for(scores, scorer)
    same_metrics = bench.scorer(names[0]).metrics == bench.scorer().metrics
    h: Headline
    if bench.headline is None or not same_metrics:  # a judge's scores: not the paper's
        h = generic_headline(bench.key, rows, samples)
    else:
        h = bench.headline(rows, samples)
    if names[0] != bench.default_scorer:  # tables name the metric with its scorer
        h = dataclasses.replace(h, metric=f"{h.metric} [{names[0]}]")
    return h


def generic_headline(key: str, scores: pd.DataFrame, samples: Sequence[Sample]) -> Headline:
    """Headline of a benchmark without its own: the mean over tasks (equal weights) of the task's
    mean ``Score.value`` (0..1); samples sharing a context are one unit when every such context
    lies within one task, else every sample is a unit."""
    by_id = {s.id: s for s in samples}
    df = scores[scores["sample_id"].isin(by_id) & scores["value"].notna()]
    ctx = [by_id[i].context_id or i for i in df["sample_id"]]
    nested = pd.DataFrame({"c": ctx, "t": df["task"].to_numpy()}).groupby("c")["t"].nunique()
    clusters = ctx if bool((nested <= 1).all()) else df["sample_id"].tolist()
    frame = pd.DataFrame(
        {
            "model": df["model"].astype(str).to_numpy(),
            "sample_id": df["sample_id"].to_numpy(),
            "group": df["task"].astype(str).to_numpy(),
            "cluster": clusters,
            "value": df["value"].to_numpy(float),
            "count": 1.0,
        }
    )

    def stat(sums: Mapping[str, Any], groups: Sequence[Hashable]) -> Any:
        return mean_statistic(dict.fromkeys(groups, 1.0))(sums, groups)

    return Headline(key, "mean task score", "0..1", frame, ("value", "count"), stat)
