"""Bootstrap confidence intervals, plain, grouped, stratified and clustered: one routine
(:func:`bootstrap_sums`, on ``scipy.stats.bootstrap``) for every benchmark; and paired comparisons
of two systems on the same items (McNemar, sign-flip tests on ``scipy.stats.permutation_test``,
paired bootstrap differences, Holm's correction)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

SumStatistic = Callable[[Mapping[str, np.ndarray], Sequence[Hashable]], np.ndarray]
"""``f(sums, groups)``: ``sums[column]`` has shape ``(..., G)`` (one entry per group, in
``groups`` order); returns shape ``(...)``. Means, pooled ratios (LongGenBench's STIC), weighted
means of group means (LIFBench Eq. 3) and their products (wAvg) all take this form."""

METHODS = ("percentile", "basic", "BCa")
"""``scipy.stats.bootstrap`` interval methods; ``percentile`` is the default."""

_CELLS = 4_000_000
"""Resamples x units held in memory at once (one batch)."""


@dataclass(frozen=True)
class Estimate:
    """A statistic on the data as observed (``mean``, never rounded) with its bootstrap CI
    (``low``, ``high``; NaN when fewer than two units can be resampled), in the statistic's unit;
    ``n`` samples behind it, ``n_units`` units resampled (clusters when given, else samples)."""

    mean: float
    low: float
    high: float
    n: int
    n_units: int


def _labels(labels: Any, n: int, name: str) -> pd.Series:
    """``labels`` as a Series of ``n`` objects (ValueError naming ``name`` otherwise)."""
    ser = pd.Series(list(labels), dtype=object)
    if len(ser) != n:
        raise ValueError(f"{name} has {len(ser)} labels for {n} rows")
    return ser


def _codes(labels: Any, n: int, name: str) -> tuple[np.ndarray, list[Hashable]]:
    """Integer codes of ``labels`` (sorted when comparable) and the labels in code order."""
    if labels is None:
        return np.zeros(n, dtype=np.int64), [None]
    ser = _labels(labels, n, name)
    if ser.isna().any():
        raise ValueError(f"{name} has a missing label")
    try:
        codes, uniq = pd.factorize(ser, sort=True)
    except TypeError:
        codes, uniq = pd.factorize(ser, sort=False)
    return np.asarray(codes, dtype=np.int64), list(uniq)


def _spans(inner: np.ndarray, outer: np.ndarray) -> bool:
    pairs = np.unique(np.stack([inner, outer]), axis=1)
    return len(pairs[0]) > len(np.unique(inner))


def _kept(labels: Any, keep: np.ndarray, name: str) -> list[Any] | None:
    """The labels where the boolean mask ``keep`` holds; None stays None."""
    return None if labels is None else _labels(labels, len(keep), name)[keep].tolist()


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
    """Sums of the rows of ``table`` (units x cells) drawn by each row of ``index`` (B x m), shape
    (B, cells): a gather for narrow tables, counts @ table for wide ones."""
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
    """Bootstrap CI of a statistic of per-group column sums; the one resampling routine.

    Rows are summed into units (``clusters``, else each row), units drawn with replacement within
    ``strata`` (scipy's independent samples; a stratum of one unit is held fixed), and
    ``statistic`` applied to the resampled sums per group.

    Args:
        columns: one row per sample, numeric columns (NaN counts as 0).
        statistic: a :data:`SumStatistic`.
        groups: a label per row: the statistic's cells (task, length, ...); default one.
        strata: a label per row; default ``groups`` unless a cluster spans groups (then one).
        clusters: a label per row: rows resampled together (a document, a task prompt).
        n_resamples: bootstrap resamples.
        confidence: the interval's two-sided level, in (0, 1).
        method: one of :data:`METHODS`.
        seed: the resampling's random seed.

    The percentile interval covers 95% +- 2 points from a few dozen units (tests/test_metrics.py);
    it runs narrow with fewer (about 93.5% at 30 units).

    Returns:
        :class:`Estimate`; ``low``/``high`` NaN when no stratum has two units (resamples whose
        statistic is NaN are left out).

    Raises:
        ValueError: bad confidence/n_resamples/method, labels of the wrong length, or clusters
            spanning the given strata.
    """
    # here, not at the top: loads scipy
    from scipy import stats  # heavy: scipy

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
    """The statistic ``sum_g w_g * mean_g / sum_g w_g`` (mean_g = sum of ``value`` / sum of
    ``count``); ``weights`` None pools every row (LIFBench Eq. 3 with task points as weights)."""

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
    """Mean of per-sample scores (NaN left out) with its bootstrap CI.

    A task's score is the plain mean; an average over tasks is ``groups=task`` with ``weights``
    (equal: macro; task points: LIFBench Eq. 3); ``clusters=context_id`` resamples samples sharing
    a context together.

    Args:
        values: one score per sample (unit kept).
        groups, weights: cells of a weighted mean and their weights (None: every sample alike).
        strata, clusters, n_resamples, confidence, method, seed: as :func:`bootstrap_sums`.

    Returns:
        :class:`Estimate`; all NaN with ``n = 0`` when no value is left.

    Raises:
        ValueError: as :func:`bootstrap_sums`.
    """
    _check(confidence, n_resamples, method)
    v = np.asarray(values, dtype=float).ravel()
    keep = ~np.isnan(v)
    if not keep.any():
        return Estimate(float("nan"), float("nan"), float("nan"), 0, 0)

    return bootstrap_sums(
        {"value": v[keep], "count": np.ones(int(keep.sum()))},
        mean_statistic(weights),
        groups=_kept(groups, keep, "groups"),
        strata=_kept(strata, keep, "strata"),
        clusters=_kept(clusters, keep, "clusters"),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
    )


@dataclass(frozen=True)
class Paired:
    """statistic(A) - statistic(B) on the same samples (``diff``, in the statistic's unit) with
    its paired-bootstrap CI (``low``, ``high``), the two-sided ``p_value`` of no difference by
    ``test`` (``mcnemar-exact`` for binary scores of independent samples, else ``sign-flip``, a
    paired permutation of A and B per unit), ``n`` paired samples and ``n_units`` units resampled
    and flipped (clusters, else samples)."""

    diff: float
    low: float
    high: float
    p_value: float
    test: str
    n: int
    n_units: int


def mcnemar_exact(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Exact McNemar test (McNemar 1947; statsmodels' ``mcnemar(exact=True)``): the p-value of the
    two-sided binomial test (p = 1/2, ``scipy.stats.binomtest``) of A's wins among the discordant
    pairs of 0/1 scores ``a``, ``b`` of the same samples (NaN pairs left out); 1.0 without one.

    Raises:
        ValueError: lengths differ or a score is not 0 or 1.
    """
    # here, not at the top: loads scipy
    from scipy import stats  # heavy: scipy

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError("a and b differ in length")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if not (np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()):
        raise ValueError("mcnemar_exact needs scores 0 or 1")
    a_wins = int(((x == 1) & (y == 0)).sum())
    b_wins = int(((x == 0) & (y == 1)).sum())
    if a_wins + b_wins == 0:
        return 1.0
    return float(stats.binomtest(a_wins, a_wins + b_wins, 0.5).pvalue)


def _sign_flip_p(
    a: pd.DataFrame,
    b: pd.DataFrame,
    statistic: SumStatistic,
    groups: Any,
    clusters: Any,
    n_resamples: int,
    seed: int,
) -> float:
    # here, not at the top: loads scipy
    from scipy import stats  # heavy: scipy

    ua = _units(a, groups, None, clusters)
    ub = _units(b, groups, None, clusters)
    n_units = len(ua.sums)
    if n_units < 2:  # its one sign flip mirrors it: no test (scipy refuses one unit)
        return float("nan")
    table = np.concatenate([ua.sums.reshape(n_units, -1), ub.sums.reshape(n_units, -1)])

    def stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        lead = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        xs = np.broadcast_to(x, (*lead, n_units)).reshape(-1, n_units)
        ys = np.broadcast_to(y, (*lead, n_units)).reshape(-1, n_units)
        sa = _resum(xs, table)
        sb = _resum(ys, table)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = statistic(_split(sa, ua), ua.groups) - statistic(_split(sb, ub), ub.groups)
        return np.asarray(d, dtype=float).reshape(lead)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.permutation_test(
            (np.arange(n_units), np.arange(n_units) + n_units),
            stat,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            batch=max(1, min(n_resamples, _CELLS // max(1, 2 * n_units))),  # permutations
            rng=np.random.default_rng(seed),
        )
    return float(res.pvalue)


def paired_sums(
    a: pd.DataFrame,
    b: pd.DataFrame,
    statistic: SumStatistic,
    *,
    groups: Any = None,
    clusters: Any = None,
    n_resamples: int = 2000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
) -> Paired:
    """statistic(A) - statistic(B) on the same samples for any :data:`SumStatistic`, with a
    paired-bootstrap CI (units drawn once for both) and a sign-flip p-value (exact when
    2^units <= ``n_permutations``); the CI and the p-value are NaN with fewer than two units.

    Args:
        a, b: the two models' columns, row i of each the same sample (NaN counts as 0).
        statistic, groups, clusters, n_resamples, confidence, seed: as :func:`bootstrap_sums`.
        n_permutations: random sign patterns when not exact; the smallest p-value is about
            2 / (n_permutations + 1), which must stay below alpha / pairs for Holm to find any.

    Raises:
        ValueError: ``a`` and ``b`` differ in shape or columns.
    """
    if a.shape != b.shape or list(a.columns) != list(b.columns):
        raise ValueError("a and b must have the same rows and columns")
    est = _paired_ci(a, b, statistic, groups, clusters, n_resamples, confidence, seed)
    p = _sign_flip_p(a, b, statistic, groups, clusters, n_permutations, seed)
    return Paired(est.mean, est.low, est.high, p, "sign-flip", est.n, est.n_units)


def _paired_ci(
    a: pd.DataFrame,
    b: pd.DataFrame,
    statistic: SumStatistic,
    groups: Any,
    clusters: Any,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> Estimate:
    """Bootstrap CI of statistic(A) - statistic(B), units drawn once for both."""
    cols = [str(c) for c in a.columns]
    both = pd.concat(
        [
            pd.DataFrame(a.to_numpy(float), columns=[f"a\x1f{c}" for c in cols]),
            pd.DataFrame(b.to_numpy(float), columns=[f"b\x1f{c}" for c in cols]),
        ],
        axis=1,
    )

    def diff(sums: Mapping[str, np.ndarray], groups_: Sequence[Hashable]) -> np.ndarray:
        sa = {c: sums[f"a\x1f{c}"] for c in cols}
        sb = {c: sums[f"b\x1f{c}"] for c in cols}
        return statistic(sa, groups_) - statistic(sb, groups_)

    return bootstrap_sums(
        both,
        diff,
        groups=groups,
        clusters=clusters,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    groups: Any = None,
    weights: Mapping[Any, float] | None = None,
    clusters: Any = None,
    n_resamples: int = 2000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
) -> Paired:
    """Mean of A minus mean of B on the same samples (pairs with a NaN left out): the paired
    bootstrap CI and, for 0/1 scores of independent samples and a pooled mean (no ``clusters``,
    no ``weights``), McNemar's exact test, else :func:`paired_sums`.

    Args:
        a: per-sample scores of A.
        b: per-sample scores of B, position i the same sample as ``a``'s.
        groups: as :func:`bootstrap`.
        weights: as :func:`bootstrap`.
        clusters: as :func:`bootstrap`.
        n_resamples: as :func:`paired_sums`.
        n_permutations: as :func:`paired_sums`.
        confidence: as :func:`paired_sums`.
        seed: as :func:`paired_sums`.

    Returns:
        :class:`Paired`; NaN fields and ``n = 0`` when no pair is left.

    Raises:
        ValueError: ``a`` and ``b`` differ in length.
    """
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError("a and b differ in length")
    keep = ~(np.isnan(x) | np.isnan(y))
    nan = float("nan")
    if not keep.any():
        return Paired(nan, nan, nan, nan, "", 0, 0)
    x, y = x[keep], y[keep]
    g, c = _kept(groups, keep, "groups"), _kept(clusters, keep, "clusters")
    ones = np.ones(len(x))
    fa, fb = pd.DataFrame({"value": x, "count": ones}), pd.DataFrame({"value": y, "count": ones})
    binary = np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()
    if binary and clusters is None and weights is None:
        est = _paired_ci(fa, fb, mean_statistic(), g, None, n_resamples, confidence, seed)
        p = mcnemar_exact(x, y)
        return Paired(est.mean, est.low, est.high, p, "mcnemar-exact", est.n, est.n_units)
    return paired_sums(
        fa,
        fb,
        mean_statistic(weights),
        groups=g,
        clusters=c,
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        confidence=confidence,
        seed=seed,
    )


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979), in input order: p_(i) = max over j <= i of
    min(1, (m - j + 1) p_(j)), m the non-NaN count; NaN stays NaN."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(adjusted)
    return out
