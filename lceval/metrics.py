"""Generic metrics over score tables: means, grouped metrics, CV, bootstrap CIs, paired tests,
rank correlations.

Benchmark-specific aggregates (LIFBench's ARS, IFP, IFS) live in
``lceval.benchmarks.<key>.report`` and are built from these; so does each benchmark's headline
(:class:`Headline`), which ``lceval.compare`` turns into leaderboards, paired tests and rank
correlations. One bootstrap (:func:`bootstrap_sums`, on ``scipy.stats.bootstrap``) gives every CI.
Nothing here rounds: rounding is for display only.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (exact, as the LCS table
    of ``rouge_score._score_lcs``).

    Bit-parallel (Hyyrö 2004, "A bit-vector algorithm for computing Levenshtein and Damerau edit
    distances"; LCS form of Crochemore et al. 2001): one pass over ``b`` with Python-int bit masks
    over ``a``, O(len(a) * len(b) / 64) word operations, so a megabyte of model output against a
    reference takes about a second instead of rouge_score's quadratic Python loop. Used where the
    library's table would be too slow (L-Eval's ROUGE-L over hostile-length outputs, CIF-Bench's
    ROUGE-L over jieba tokens).
    """
    if len(a) > len(b):
        a, b = b, a
    if not a:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        m = masks.get(tok)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def mean(values: Sequence[float] | np.ndarray | pd.Series) -> float:
    """Mean of the non-NaN values; NaN when there are none."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def grouped(
    df: pd.DataFrame,
    metric: Callable[[pd.Series], float] = mean,
    by: str | Sequence[str] = "task",
    value: str = "value",
) -> pd.Series:
    """One metric of ``df[value]`` per group of ``by`` (like inspect_ai's ``grouped``).

    Args:
        df: tidy table, one row per score.
        metric: reduces a Series to a float (default: NaN-skipping mean).
        by: column name(s) to group by.
        value: the column to reduce.

    Returns:
        Series indexed by the group keys.

    Raises:
        KeyError: a named column is missing.
    """
    keys = [by] if isinstance(by, str) else list(by)
    return df.groupby(keys, sort=True)[value].agg(metric)


def coefficient_of_variation(
    values: Sequence[float] | np.ndarray | pd.Series, ddof: int = 1
) -> float:
    """std(values, ddof) / mean(values); NaN for fewer than ``ddof + 1`` values or a zero mean.

    Used by LIFBench's IFS (paper Eq. 6, with ``ddof=1`` as in the official result files).
    """
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size <= ddof:
        return float("nan")
    m = arr.mean()
    if m == 0:
        return float("nan")
    return float(arr.std(ddof=ddof) / m)


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


# --------------------------------------------------------------------------------------------
# rank agreement and stability
# --------------------------------------------------------------------------------------------


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of ``x`` and ``y`` along the last axis (vectorized over leading axes).

    tau-b = sum_{i<j} sign(x_i - x_j) sign(y_i - y_j) / sqrt(T_x T_y), T = pairs not tied in
    that variable (Kendall 1945; equal to ``scipy.stats.kendalltau``'s default). NaN where a
    variable is constant or fewer than two items.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    num = (sx * sy).sum(axis=(-2, -1)) / 2
    tx = np.abs(sx).sum(axis=(-2, -1)) / 2
    ty = np.abs(sy).sum(axis=(-2, -1)) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((tx > 0) & (ty > 0), num / np.sqrt(tx * ty), np.nan)


def group_stability(
    df: pd.DataFrame,
    group: str,
    by: str | Sequence[str],
    *,
    value: str = "value",
    ddof: int = 1,
) -> pd.DataFrame:
    """IFS-style stability: coefficient of variation (``ddof``) of the group means of ``value``.

    LIFBench's IFS (paper Eq. 5-6) applied to any benchmark with semantically equal variants:
    the samples of one ``by`` cell (model, task) are grouped by ``group`` (expression, LIE
    setting, instruction set), each group's mean is taken (Eq. 5), and the CV of those means is
    the stability (Eq. 6; 0 = steady, larger = less stable).

    Returns:
        ``by`` columns, ``CV`` (NaN for fewer than ``ddof + 1`` groups or a zero mean),
        ``n_groups``, ``mean`` (mean of the group means) and ``n`` (samples).
    """
    keys = [by] if isinstance(by, str) else list(by)
    t = df[df[value].notna() & df[group].notna()]
    means = t.groupby([*keys, group], sort=True)[value].agg(["mean", "size"]).reset_index()
    g = means.groupby(keys, sort=True)
    out = pd.DataFrame(
        {
            "CV": g["mean"].agg(lambda s: coefficient_of_variation(s, ddof=ddof)),
            "n_groups": g.size(),
            "mean": g["mean"].mean(),
            "n": g["size"].sum(),
        }
    ).reset_index()
    return out[[*keys, "CV", "n_groups", "mean", "n"]]


# --------------------------------------------------------------------------------------------
# a benchmark's headline metric
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Headline:
    """A benchmark's headline metric as data: per-sample columns and the statistic over them.

    Each benchmark's reporter builds one (``report.headline(scores, samples)``); leaderboards
    (:func:`headline_estimates`), paired tests (:func:`headline_paired`) and rank correlations
    (``lceval.compare``) use it, so a benchmark's number has one definition.
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
