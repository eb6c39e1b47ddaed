"""The coefficient of variation, the longest common subsequence, and rank agreement and
stability (Kendall's tau-b, group stability)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (exact, as
    ``rouge_score._score_lcs``), bit-parallel (Hyyrö 2004; Crochemore et al. 2001): about
    len(a) * len(b) / 64 word operations, for ROUGE-L over hostile-length outputs."""
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


def coefficient_of_variation(
    values: Sequence[float] | np.ndarray | pd.Series, ddof: int = 1
) -> float:
    """std(values, ddof) / mean(values), NaN dropped; NaN for fewer than ``ddof + 1`` values
    or a zero mean (LIFBench's IFS, Eq. 6, ``ddof=1`` as the official result files)."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size <= ddof:
        return float("nan")
    m = arr.mean()
    if m == 0:
        return float("nan")
    return float(arr.std(ddof=ddof) / m)


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
    """IFS-style stability (LIFBench Eq. 5-6) for any benchmark with equivalent variants: per
    ``by`` cell, the CV (``ddof``) of the means of ``value`` per ``group`` (0 = steady).

    Returns:
        ``by`` columns, ``CV`` (NaN for fewer than ``ddof + 1`` groups or a zero mean),
        ``n_groups``, ``mean`` (of the group means) and ``n`` (samples).
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
