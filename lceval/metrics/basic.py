"""The coefficient of variation and the longest common subsequence."""

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
