"""Bootstrap confidence intervals: the one implementation (:func:`bootstrap_sums`, on
``scipy.stats.bootstrap``), plain, grouped, stratified and clustered."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

# --------------------------------------------------------------------------------------------
# bootstrap confidence intervals: the one implementation
# --------------------------------------------------------------------------------------------

SumStatistic = Callable[[Mapping[str, np.ndarray], Sequence[Hashable]], np.ndarray]
"""A statistic computed from column sums per group: ``f(sums, groups)`` gets ``sums[column]`` of
shape ``(..., G)`` (one entry per group, in the order of ``groups``) and returns shape ``(...)``.
Means (sum of values / sum of counts), pooled ratios (LongGenBench's STIC: sum of yes / sum of
checks), weighted means of group means (LIFBench's Eq. 3) and products of them (wAvg) are all of
this form, which lets one bootstrap serve every benchmark."""

METHODS = ("percentile", "basic", "BCa")
"""Interval methods of ``scipy.stats.bootstrap``; lceval uses ``percentile`` by default (robust
to degenerate resamples, cheap for large n; the coverage test checks it)."""

_CELLS = 4_000_000
"""Resamples x units held in memory at once (a batch of ``scipy.stats.bootstrap``)."""


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap confidence interval (same unit as the statistic)."""

    mean: float
    """The statistic on the data as observed (for a mean: the mean), never rounded."""
    low: float
    """Lower end of the CI; NaN when fewer than two units can be resampled."""
    high: float
    """Upper end of the CI; NaN when fewer than two units can be resampled."""
    n: int
    """Samples (rows) behind the statistic."""
    n_units: int
    """Units resampled: clusters (e.g. documents) when given, else samples."""

    def as_dict(self) -> dict[str, float]:
        """``{"mean", "low", "high", "n", "n_units"}``."""
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "n_units": self.n_units,
        }


def _codes(labels: Any, n: int, name: str) -> tuple[np.ndarray, list[Hashable]]:
    """Integer codes of ``labels`` (sorted when comparable) and the labels in code order."""
    if labels is None:
        return np.zeros(n, dtype=np.int64), [None]
    arr = np.asarray(labels) if not isinstance(labels, list | tuple) else None
    if arr is None or arr.dtype.kind not in "iufbU" or arr.ndim != 1:
        arr = np.empty(len(labels), dtype=object)
        arr[:] = list(labels)
    if len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} labels for {n} rows")
    if arr.dtype.kind in "iubU":
        uniques, codes = np.unique(arr, return_inverse=True)
        return codes.astype(np.int64), uniques.tolist()
    ser = pd.Series(arr, dtype=object)
    if ser.isna().any():
        raise ValueError(f"{name} has a missing label")
    try:
        codes, uniq = pd.factorize(ser, sort=True)
    except TypeError:
        codes, uniq = pd.factorize(ser, sort=False)
    return np.asarray(codes, dtype=np.int64), list(uniq)


def _spans(inner: np.ndarray, outer: np.ndarray) -> bool:
    """Whether some code of ``inner`` occurs with two codes of ``outer``."""
    pairs = np.unique(np.stack([inner, outer]), axis=1)
    return len(pairs[0]) > len(np.unique(inner))


def _check(confidence: float, n_resamples: int, method: str) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")


@dataclass(frozen=True)
class _Units:
    """Rows summed into resampling units: ``sums[u, g, k]`` and each unit's stratum."""

    sums: np.ndarray
    stratum: np.ndarray
    groups: list[Hashable]
    columns: list[str]
    n: int


def _units(
    columns: pd.DataFrame | Mapping[str, Any],
    groups: Any,
    strata: Any,
    clusters: Any,
) -> _Units:
    if isinstance(columns, pd.DataFrame):
        names = [str(k) for k in columns.columns]
        x = columns.to_numpy(dtype=float)
    else:
        names = [str(k) for k in columns]
        x = np.column_stack([np.asarray(v, dtype=float).ravel() for v in columns.values()])
    x = np.nan_to_num(x, nan=0.0)
    n = len(x)
    g, glabels = _codes(groups, n, "groups")
    c = None if clusters is None else _codes(clusters, n, "clusters")[0]
    if strata is None:
        # groups are the strata unless a cluster spans groups (then clusters are drawn globally)
        s = g if c is None or not _spans(c, g) else np.zeros(n, dtype=np.int64)
    else:
        s = _codes(strata, n, "strata")[0]
        if c is not None and _spans(c, s):
            raise ValueError("a cluster spans strata: clusters must lie within one stratum")
    if c is None:  # every sample is a unit; units ordered by stratum
        order = np.argsort(s, kind="stable")
        sums = np.zeros((n, len(glabels), x.shape[1]))
        sums[np.arange(n), g[order]] = x[order]
        stratum = s[order]
    else:  # units = distinct (stratum, cluster), contiguous by stratum
        keys, unit = np.unique(np.stack([s, c]), axis=1, return_inverse=True)
        sums = np.zeros((keys.shape[1], len(glabels), x.shape[1]))
        np.add.at(sums, (unit.ravel(), g), x)
        stratum = keys[0]
    return _Units(sums, stratum, glabels, names, n)


def _split(flat: np.ndarray, units: _Units) -> dict[str, np.ndarray]:
    shaped = flat.reshape(*flat.shape[:-1], len(units.groups), len(units.columns))
    return {col: shaped[..., j] for j, col in enumerate(units.columns)}


def _resum(index: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Sums of the rows of ``table`` (units x cells) drawn by each row of ``index`` (B x m):
    a gather for narrow tables, counts times the table for wide ones. Shape (B, cells)."""
    b, m = index.shape
    size, width = table.shape
    if width <= 16:
        return np.stack([table[:, j][index].sum(axis=1) for j in range(width)], axis=-1)
    flat = (np.arange(b)[:, None] * size + index).ravel()
    counts = np.bincount(flat, minlength=b * size).reshape(b, size)
    return counts @ table


def _interval(res: Any, confidence: float) -> tuple[float, float]:
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if np.isfinite(low) and np.isfinite(high):
        return low, high
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    if not np.isfinite(dist).any():
        return (float("nan"), float("nan"))
    alpha = (1.0 - confidence) / 2
    q = np.nanquantile(dist, [alpha, 1.0 - alpha])
    return float(q[0]), float(q[1])


def bootstrap_sums(
    columns: pd.DataFrame | Mapping[str, Any],
    statistic: SumStatistic,
    *,
    groups: Any = None,
    strata: Any = None,
    clusters: Any = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
) -> Estimate:
    """Bootstrap CI of any statistic of per-group column sums; the one resampling routine.

    Rows (samples) are summed into units (``clusters``: e.g. all questions on one document, all
    instruction counts of one task prompt; else each sample is a unit). Units are drawn with
    replacement within ``strata`` by ``scipy.stats.bootstrap`` (each stratum is one of its
    independent samples; the data it resamples are unit indices), and ``statistic`` is applied to
    the resampled column sums per group. Strata with one unit are held fixed.

    Args:
        columns: one row per sample, numeric columns (NaN counts as 0: give a count column when
            a value may be missing).
        statistic: see :data:`SumStatistic` (vectorized over leading axes).
        groups: a label per row: the cells the statistic sees (task, length, ...); default one.
        strata: a label per row: resampling strata; default ``groups`` when every cluster lies in
            one group, else one stratum (clusters are then drawn across groups, as a task
            prompt spanning every instruction count n).
        clusters: a label per row: rows sharing a label are resampled together.
        n_resamples: bootstrap resamples.
        confidence: two-sided level in (0, 1).
        method: ``percentile`` (default), ``basic`` or ``BCa`` (``scipy.stats.bootstrap``).
        seed: seed of the numpy Generator.

    The percentile interval is close to its nominal level from a few dozen units on (checked by
    ``tests/test_metrics.py``: 95% +- 2 points for 60 independent samples and for 100 clusters);
    with fewer units it runs narrow (about 93.5% at 30, much less at 5), because the bootstrap
    variance of a mean is (units - 1) / units of the truth and its quantiles are normal, not t.

    Returns:
        :class:`Estimate`; ``low``/``high`` NaN when no stratum has two units. A resample whose
        statistic is NaN (e.g. a ratio with nothing judged) is left out of the interval.

    Raises:
        ValueError: bad ``confidence``/``n_resamples``/``method``, label lengths that differ from
            the rows, or clusters that span the given strata.
    """
    # here, not at the top: loads scipy
    from scipy import stats

    _check(confidence, n_resamples, method)
    units = _units(columns, groups, strata, clusters)
    flat = units.sums.reshape(len(units.sums), -1)
    total = flat.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = float(statistic(_split(total, units), units.groups))
    sizes = np.bincount(units.stratum) if len(units.stratum) else np.zeros(0, dtype=int)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else sizes
    drawn = [s for s in range(len(sizes)) if sizes[s] >= 2]
    n_units = len(units.sums)
    if not drawn:
        return Estimate(point, float("nan"), float("nan"), units.n, n_units)
    fixed = flat[np.isin(units.stratum, drawn, invert=True)].sum(axis=0)
    offsets = [int(starts[s]) for s in drawn]

    def stat(*idx: np.ndarray, axis: int = -1) -> np.ndarray:
        lead = np.broadcast_shapes(*(a.shape[:-1] for a in idx))
        parts = [
            np.broadcast_to(a + off, (*lead, a.shape[-1])).reshape(-1, a.shape[-1])
            for a, off in zip(idx, offsets, strict=True)
        ]
        sums = _resum(np.concatenate(parts, axis=1), flat) + fixed
        with np.errstate(invalid="ignore", divide="ignore"):
            out = statistic(_split(sums, units), units.groups)
        return np.asarray(out, dtype=float).reshape(lead)

    batch = max(1, min(n_resamples, _CELLS // max(1, n_units)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            tuple(np.arange(sizes[s]) for s in drawn),
            stat,
            n_resamples=n_resamples,
            batch=batch,
            vectorized=True,
            confidence_level=confidence,
            method=method,
            rng=np.random.default_rng(seed),
        )
    low, high = _interval(res, confidence)
    return Estimate(point, low, high, units.n, n_units)


def mean_statistic(
    weights: Mapping[Any, float] | None = None, value: str = "value", count: str = "count"
) -> SumStatistic:
    """The statistic ``sum_g w_g * mean_g / sum_g w_g`` (mean_g = value sum / count sum).

    Args:
        weights: group label -> weight (LIFBench's task points, Eq. 3; 1 each for a macro
            average); None pools every row (the plain mean over samples).
        value: the summed value column.
        count: the summed count column (1 per sample with a value).

    Raises:
        KeyError: (when called) a group without a weight.
    """

    def stat(sums: Mapping[str, np.ndarray], groups: Sequence[Hashable]) -> np.ndarray:
        v, c = sums[value], sums[count]
        if weights is None:
            return v.sum(axis=-1) / c.sum(axis=-1)
        w = np.array([float(weights[g]) for g in groups])
        return (w * (v / c)).sum(axis=-1) / w.sum()

    return stat


def bootstrap(
    values: Sequence[float] | np.ndarray | pd.Series,
    *,
    groups: Any = None,
    weights: Mapping[Any, float] | None = None,
    strata: Any = None,
    clusters: Any = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
) -> Estimate:
    """Mean of per-sample scores with its bootstrap CI (NaN scores left out).

    The headline numbers of every benchmark go through here (or :func:`bootstrap_sums` for
    ratios): a task's score is the plain mean (``groups=None``); an average over tasks is
    ``groups=task`` with ``weights`` (equal weights: a macro average; task points: LIFBench's
    Eq. 3); samples sharing a context are resampled together with ``clusters=context_id``.

    Args:
        values: one score per sample (any unit: 0..1 in, 0..1 out).
        groups: a label per sample: the cells of a weighted mean (default: one cell).
        weights: group label -> weight; None: every sample weighs the same.
        strata, clusters, n_resamples, confidence, method, seed: as :func:`bootstrap_sums`.

    Returns:
        :class:`Estimate` (``mean``, ``low``, ``high``, ``n`` samples with a value, ``n_units``);
        all NaN and ``n = 0`` when no value is left.

    Raises:
        ValueError: as :func:`bootstrap_sums`.
    """
    _check(confidence, n_resamples, method)
    v = np.asarray(values, dtype=float).ravel()
    keep = ~np.isnan(v)
    if not keep.any():
        return Estimate(float("nan"), float("nan"), float("nan"), 0, 0)

    def sub(labels: Any, name: str) -> Any:
        if labels is None:
            return None
        arr = pd.Series(list(labels), dtype=object)
        if len(arr) != len(v):
            raise ValueError(f"{name} has {len(arr)} labels for {len(v)} values")
        return arr[keep].tolist()

    return bootstrap_sums(
        {"value": v[keep], "count": np.ones(int(keep.sum()))},
        mean_statistic(weights),
        groups=sub(groups, "groups"),
        strata=sub(strata, "strata"),
        clusters=sub(clusters, "clusters"),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
    )


def grouped_bootstrap(
    df: pd.DataFrame,
    by: str | Sequence[str],
    *,
    value: str = "value",
    name: str = "mean",
    groups: str | Sequence[str] | None = None,
    weights: Mapping[Any, float] | None = None,
    clusters: str | None = None,
    scale: float = 1.0,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`bootstrap` per group of ``by`` (like :func:`grouped`, with the CI).

    Args:
        df: tidy table, one row per score.
        by: column(s) naming one estimate each (e.g. ``["model", "task"]``).
        value: the score column.
        name: the column the mean goes into.
        groups: column(s) whose cells are weighted inside each estimate (e.g. ``"task"`` for
            an average over tasks); None: the plain mean.
        weights: cell label -> weight (labels as tuples when ``groups`` names several columns).
        clusters: column of resampling clusters (e.g. ``"context_id"``).
        scale: multiplies mean, low and high (100 for tables in percent).

    Returns:
        ``by`` columns, then ``name``, ``low``, ``high``, ``n`` (scored samples).
    """
    keys = [by] if isinstance(by, str) else list(by)
    cells = None if groups is None else ([groups] if isinstance(groups, str) else list(groups))
    rows = []
    for key, part in df.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        labels = None
        if cells is not None:
            labels = (
                part[cells[0]].tolist()
                if len(cells) == 1
                else list(part[cells].itertuples(index=False, name=None))
            )
        est = bootstrap(
            part[value].to_numpy(float),
            groups=labels,
            weights=weights,
            clusters=None if clusters is None else part[clusters].tolist(),
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                name: scale * est.mean,
                "low": scale * est.low,
                "high": scale * est.high,
                "n": est.n,
            }
        )
    return pd.DataFrame(rows, columns=[*keys, name, "low", "high", "n"])


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values`` (NaNs dropped): :func:`bootstrap`.

    Returns:
        ``(low, high)``; ``(nan, nan)`` when there is no value.

    Raises:
        ValueError: ``confidence`` outside (0, 1) or ``n_resamples < 1``.
    """
    est = bootstrap(values, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return (est.low, est.high)


def stratified_bootstrap_ci(
    strata: Sequence[np.ndarray],
    weights: Sequence[float],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of a weighted mean of stratum means: :func:`bootstrap` with one
    group per stratum (resampled on its own; LIFBench's Eq. 3 with task points as weights).

    Args:
        strata: one 1-D array of scores per stratum (NaNs dropped; empty strata are left out).
        weights: one weight per stratum.
        n_resamples: bootstrap resamples.
        confidence: two-sided level in (0, 1).
        seed: numpy Generator seed.

    Returns:
        ``(low, high)``; ``(nan, nan)`` when no stratum has a value.

    Raises:
        ValueError: bad ``confidence`` / ``n_resamples`` or a weights/strata length mismatch.
    """
    if len(strata) != len(weights):
        raise ValueError("strata and weights differ in length")
    arrays = [np.asarray(s, dtype=float).ravel() for s in strata]
    values = np.concatenate(arrays) if arrays else np.zeros(0)
    labels = np.repeat(np.arange(len(arrays)), [len(a) for a in arrays])
    est = bootstrap(
        values,
        groups=labels.tolist(),
        weights=dict(enumerate(map(float, weights))),
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    return (est.low, est.high)
