"""Paired comparisons of two systems on the same items: McNemar, sign-flip tests, paired
bootstrap differences, Holm's correction."""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lceval.metrics.intervals import (
    _CELLS,
    SumStatistic,
    _resum,
    _split,
    _units,
    bootstrap,
    bootstrap_sums,
    mean_statistic,
)

# --------------------------------------------------------------------------------------------
# paired comparisons
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paired:
    """A paired difference (model A minus model B on the same samples) with its test."""

    diff: float
    """statistic(A) - statistic(B), in the statistic's unit."""
    low: float
    """Lower end of the paired-bootstrap CI of ``diff``."""
    high: float
    """Upper end of the paired-bootstrap CI of ``diff``."""
    p_value: float
    """Two-sided p-value of "no difference" (see ``test``)."""
    test: str
    """``mcnemar-exact`` (binary scores, independent samples: exact binomial test on the
    discordant pairs) or ``sign-flip`` (paired permutation: A and B swapped per unit)."""
    n: int
    """Paired samples (both scored)."""
    n_units: int
    """Units resampled and flipped (clusters, else samples)."""

    def as_dict(self) -> dict[str, float | str]:
        """The fields as a dict (for table rows)."""
        return {
            "diff": self.diff,
            "low": self.low,
            "high": self.high,
            "p_value": self.p_value,
            "test": self.test,
            "n": self.n,
            "n_units": self.n_units,
        }


def mcnemar_exact(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Exact McNemar test of paired binary scores: two-sided binomial test (p = 1/2) of the
    pairs where A wins among the discordant pairs (``scipy.stats.binomtest``; McNemar 1947, exact
    form as in statsmodels' ``mcnemar(exact=True)``).

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
    """Paired difference statistic(A) - statistic(B) on the same samples, any
    :data:`SumStatistic`: paired-bootstrap CI (units drawn once for both models) and a sign-flip
    permutation p-value (A and B swapped per unit; exact when 2^units <= ``n_permutations``).

    Args:
        a, b: the two models' columns, row i of each the same sample (NaN counts as 0).
        statistic: as for :func:`bootstrap_sums`.
        groups, clusters: labels per row, as for :func:`bootstrap_sums` (strata = groups).
        n_resamples, confidence, seed: as for :func:`bootstrap_sums` (seed also of the
            permutations).
        n_permutations: random sign patterns when not exact; the smallest p-value is about
            2 / (n_permutations + 1), which must stay below alpha / (pairs compared) for a
            Holm-corrected difference to be found at all.

    Raises:
        ValueError: ``a`` and ``b`` differ in shape or columns.
    """
    if a.shape != b.shape or list(a.columns) != list(b.columns):
        raise ValueError("a and b must have the same rows and columns")
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

    est = bootstrap_sums(
        both,
        diff,
        groups=groups,
        clusters=clusters,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
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
    """Mean of A minus mean of B on the same samples (pairs with a NaN left out).

    The CI is the bootstrap of the per-sample differences (:func:`bootstrap`, same groups,
    weights and clusters). The p-value is McNemar's exact test when every score is 0 or 1, the
    samples are independent (no ``clusters``) and the mean is pooled (no ``weights``); else the
    sign-flip permutation test of :func:`paired_sums`.

    Args:
        a, b: per-sample scores of the two models, position i the same sample.
        groups, weights, clusters: as for :func:`bootstrap`.
        n_resamples, n_permutations, confidence, seed: as for :func:`paired_sums`.

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
    g = None if groups is None else pd.Series(list(groups), dtype=object)[keep].tolist()
    c = None if clusters is None else pd.Series(list(clusters), dtype=object)[keep].tolist()
    est = bootstrap(
        x - y,
        groups=g,
        weights=weights,
        clusters=c,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    binary = np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()
    if binary and clusters is None and weights is None:
        return Paired(
            est.mean, est.low, est.high, mcnemar_exact(x, y), "mcnemar-exact", est.n, est.n_units
        )
    ones = np.ones(len(x))
    p = _sign_flip_p(
        pd.DataFrame({"value": x, "count": ones}),
        pd.DataFrame({"value": y, "count": ones}),
        mean_statistic(weights),
        g,
        c,
        n_permutations,
        seed,
    )
    return Paired(est.mean, est.low, est.high, p, "sign-flip", est.n, est.n_units)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment of p-values (Holm 1979; controls the family-wise error rate).

    Adjusted p_(i) = max over j <= i of min(1, (m - j + 1) p_(j)) for the sorted p-values, m the
    number of non-NaN p-values; NaN stays NaN. Reject where adjusted p <= alpha.

    Returns:
        Adjusted p-values in the input order.
    """
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
