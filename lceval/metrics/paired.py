"""Paired comparisons of two systems on the same items: McNemar, sign-flip tests, paired
bootstrap differences, Holm's correction."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lceval.metrics.intervals import (
    _CELLS,
    Estimate,
    SumStatistic,
    _kept,
    _resum,
    _split,
    _units,
    bootstrap_sums,
    mean_statistic,
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

    def as_dict(self) -> dict[str, float | str]:
        return dataclasses.asdict(self)


def mcnemar_exact(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Exact McNemar test (McNemar 1947; statsmodels' ``mcnemar(exact=True)``): two-sided
    binomial test (p = 1/2) of A's wins among the discordant pairs (``scipy.stats.binomtest``).

    Args:
        a, b: 0/1 scores of the same samples (NaN pairs left out).

    Returns:
        The p-value; 1.0 without a discordant pair.

    Raises:
        ValueError: lengths differ or a score is not 0 or 1.
    """
    # here, not at the top: loads scipy
    from scipy import stats

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
    from scipy import stats

    ua = _units(a, groups, None, clusters)
    ub = _units(b, groups, None, clusters)
    n_units = len(ua.sums)
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
    2^units <= ``n_permutations``).

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
    cols = [str(c) for c in a.columns]
    p = _sign_flip_p(
        pd.DataFrame(a.to_numpy(float), columns=cols),
        pd.DataFrame(b.to_numpy(float), columns=cols),
        statistic,
        groups,
        clusters,
        n_permutations,
        seed,
    )
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
        a, b: per-sample scores, position i the same sample.
        groups, weights, clusters: as :func:`bootstrap`; the rest as :func:`paired_sums`.

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
