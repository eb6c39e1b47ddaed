"""A benchmark's headline metric: its declaration and the estimates and paired tests over it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from lceval.core.records import Sample
from lceval.metrics.intervals import (
    Paired,
    SumStatistic,
    bootstrap_sums,
    mean_statistic,
    paired_difference,
    paired_sums,
)


class Bench(Protocol):
    """What :func:`headline_of` reads of a ``lceval.benchmarks.base.Benchmark``."""

    @property
    def key(self) -> str: ...
    @property
    def headline(self) -> Callable[..., Headline] | None: ...
    @property
    def default_scorer(self) -> str: ...
    def scores_for(
        self, scores: pd.DataFrame, scorer: str | None = None
    ) -> tuple[pd.DataFrame, tuple[str, ...]]: ...
    def scorer(self, name: str | None = None) -> Any: ...


@dataclass(frozen=True)
class Headline:
    """A benchmark's headline metric as data: per-sample columns and the statistic over them;
    leaderboards, paired tests and rank correlations all read it (one definition per number)."""

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
    """The 0/1 column whose pooled mean the metric is (comparisons then use McNemar's exact
    test); None: the sign-flip test."""

    @property
    def models(self) -> list[str]:
        return sorted(map(str, self.frame["model"].unique()))


def headline_estimates(
    h: Headline, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Each model's headline with its bootstrap CI, on its own samples.

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
        row = {"benchmark": h.benchmark, "metric": h.metric, "unit": h.unit, "model": model}
        rows.append(row | dataclasses.asdict(est))
    cols = ["benchmark", "metric", "unit", "model", "mean", "low", "high", "n", "n_units"]
    return pd.DataFrame(rows, columns=cols).rename(columns={"mean": "estimate"})


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
    """Headline(A) - headline(B) on the samples both have (joined by ``sample_id``): McNemar's
    exact test when :attr:`Headline.binary` is set and every score is 0 or 1, else
    :func:`paired_sums`.

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
    kw: dict[str, Any] = {
        "groups": a["group"].tolist(),
        "n_resamples": n_resamples,
        "n_permutations": n_permutations,
        "confidence": confidence,
        "seed": seed,
    }
    if h.binary is not None:
        x, y = a[h.binary].to_numpy(float), b[h.binary].to_numpy(float)
        if np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all():
            return paired_difference(x, y, **kw)
    cols = list(h.columns)
    return paired_sums(a[cols], b[cols], h.statistic, clusters=a["cluster"].tolist(), **kw)


def headline_of(
    bench: Bench, scores: pd.DataFrame, samples: Sequence[Sample], scorer: str | None = None
) -> Headline:
    """The headline of ``bench`` over one scorer's rows (default: the default scorer): its own
    ``headline``, or :func:`generic_headline` when it has none or the scorer reports other metrics
    (a judge); a non-default scorer is named in ``metric`` (``ARS (Eq. 3) [lifbench:strict]``).

    Args:
        scores: scores.parquet rows (``bench``'s are selected); samples: ``bench``'s, typed gold.

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
    """The mean over tasks (equal weights) of each task's mean ``Score.value`` (0..1); samples
    sharing a context are one unit when every context lies within one task."""
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
