"""lceval.metrics: the one bootstrap, paired tests, Holm, Kendall's tau, stability.

Checks that can fail: a coverage simulation (the 95% CI covers a known mean 95% +- 2 points of
the time, for independent and for clustered samples, where ignoring the clusters visibly fails),
the false-positive rate of both paired tests (5% +- 2 points under the null), and hand-computed
worked examples.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lceval import metrics as M

# --------------------------------------------------------------------------------------------
# the one bootstrap
# --------------------------------------------------------------------------------------------


def test_plain_mean_is_scipy_bootstrap() -> None:
    x = np.random.default_rng(0).normal(0.5, 1.0, 80)
    est = M.bootstrap(x, n_resamples=2000, seed=3)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(3)
    )
    assert est.mean == pytest.approx(x.mean())
    assert (est.low, est.high) == pytest.approx(
        (ref.confidence_interval.low, ref.confidence_interval.high)
    )
    assert (est.n, est.n_units) == (80, 80)


def test_weighted_groups_clusters_and_degenerate_cases() -> None:
    x = np.r_[np.ones(4), np.zeros(6)]
    g = ["a"] * 4 + ["b"] * 6
    # Eq. 3 style: weights per group (a: 1.0, b: 0.0 -> (3 * 1 + 1 * 0) / 4)
    est = M.bootstrap(x, groups=g, weights={"a": 3.0, "b": 1.0})
    assert est.mean == pytest.approx(0.75)
    # each group a stratum on its own: constant within groups -> no spread at all
    assert (est.low, est.high) == (0.75, 0.75)
    pooled = M.bootstrap(x)
    assert pooled.mean == pytest.approx(0.4) and pooled.low < 0.4 < pooled.high
    clustered = M.bootstrap(x, clusters=[0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    assert clustered.n_units == 5 and clustered.n == 10
    assert math.isnan(M.bootstrap([1.0]).low)  # one unit: no CI
    assert math.isnan(M.bootstrap([math.nan]).mean) and M.bootstrap([]).n == 0
    with pytest.raises(ValueError, match="spans strata"):
        M.bootstrap_sums(
            {"value": x, "count": np.ones(10)},
            M.mean_statistic(),
            strata=g,
            clusters=[0] * 5 + [1] * 5,
        )
    with pytest.raises(ValueError):
        M.bootstrap(x, method="magic")


def test_ratio_statistic_keeps_pooled_definition() -> None:
    # STIC-style pooled ratio: sum yes / sum checks, not the mean of per-sample ratios
    yes, checks = np.array([3.0, 1.0]), np.array([4.0, 10.0])
    est = M.bootstrap_sums({"yes": yes, "checks": checks}, M.mean_statistic(None, "yes", "checks"))
    assert est.mean == pytest.approx(4 / 14)
    assert est.low >= 1 / 10 and est.high <= 3 / 4


def test_nan_resamples_are_left_out() -> None:
    # a ratio whose denominator is 0 in some resamples still gets an interval
    est = M.bootstrap_sums(
        {"yes": np.array([1.0, 0.0, 1.0]), "judged": np.array([1.0, 0.0, 1.0])},
        M.mean_statistic(None, "yes", "judged"),
    )
    assert est.mean == 1.0 and (est.low, est.high) == (1.0, 1.0)


# --------------------------------------------------------------------------------------------
# coverage and false positives (seeded simulations; each well under 10 s)
# --------------------------------------------------------------------------------------------


def test_coverage_of_the_95_ci_for_independent_samples() -> None:
    rng = np.random.default_rng(20240)
    truth = 2 / 7  # mean of Beta(2, 5): skewed scores in 0..1, like ROUGE or partial credit
    reps = 1000
    hits = 0
    for i in range(reps):
        est = M.bootstrap(rng.beta(2, 5, 60), n_resamples=1000, seed=i)
        hits += est.low <= truth <= est.high
    assert 0.93 <= hits / reps <= 0.97, hits / reps


def test_coverage_needs_clusters_when_samples_share_a_context() -> None:
    # 100 documents x 3 questions; a document effect as large as the question noise (intra-
    # document correlation 0.5). The cluster bootstrap is scipy's bootstrap of document means
    # and covers; treating the questions as independent does not (design effect 2).
    rng = np.random.default_rng(7)
    reps, clustered, naive = 1000, 0, 0
    docs = np.repeat(np.arange(100), 3)
    for i in range(reps):
        x = (rng.normal(0, 1, 100)[:, None] + rng.normal(0, 1, (100, 3))).ravel()
        est = M.bootstrap(x, clusters=docs, n_resamples=500, seed=i)
        clustered += est.low <= 0.0 <= est.high
        if i < 300:  # expected about 83%: 300 draws tell it from 95% many times over
            est = M.bootstrap(x, n_resamples=500, seed=i)
            naive += est.low <= 0.0 <= est.high
    assert 0.93 <= clustered / reps <= 0.97, clustered / reps
    assert naive / 300 < 0.90, naive / 300


def test_false_positive_rate_of_the_sign_flip_test() -> None:
    rng = np.random.default_rng(11)
    reps, rejected = 1000, 0
    for i in range(reps):
        base = rng.beta(2, 2, 40)  # per-sample difficulty shared by both models
        a = np.clip(base + rng.normal(0, 0.2, 40), 0, 1)
        b = np.clip(base + rng.normal(0, 0.2, 40), 0, 1)
        res = M.paired_difference(a, b, n_resamples=200, n_permutations=200, seed=i)
        assert res.test == "sign-flip"
        rejected += res.p_value <= 0.05
    assert 0.03 <= rejected / reps <= 0.07, rejected / reps


def test_false_positive_rate_of_mcnemar() -> None:
    rng = np.random.default_rng(5)
    reps, rejected = 2000, 0
    for _ in range(reps):
        easy = rng.random(150) < 0.5  # both models solve easy samples more often
        p = np.where(easy, 0.8, 0.3)
        a = (rng.random(150) < p).astype(float)
        b = (rng.random(150) < p).astype(float)
        rejected += M.mcnemar_exact(a, b) <= 0.05
    # the exact test is conservative by construction (discrete), never liberal
    assert 0.03 <= rejected / reps <= 0.05 + 0.005, rejected / reps


def test_paired_test_detects_a_real_difference() -> None:
    rng = np.random.default_rng(3)
    base = rng.beta(2, 2, 80)
    a = np.clip(base + 0.1 + rng.normal(0, 0.1, 80), 0, 1)
    b = np.clip(base + rng.normal(0, 0.1, 80), 0, 1)
    res = M.paired_difference(a, b, seed=1)
    assert res.p_value < 0.01 and res.low > 0


# --------------------------------------------------------------------------------------------
# worked examples, computed by hand
# --------------------------------------------------------------------------------------------


def test_mcnemar_worked_example() -> None:
    # A wins on 5 samples, B on 1, 2 ties: exact two-sided binomial p = 2 * P(X >= 5 | 6, 1/2)
    # = 2 * (6 + 1) / 64 = 14 / 64
    a = [1, 1, 1, 1, 1, 0, 1, 0]
    b = [0, 0, 0, 0, 0, 1, 1, 0]
    assert M.mcnemar_exact(a, b) == pytest.approx(14 / 64)
    res = M.paired_difference(a, b)
    assert res.test == "mcnemar-exact" and res.diff == pytest.approx(6 / 8 - 2 / 8)
    assert M.mcnemar_exact([1, 0], [1, 0]) == 1.0  # no discordant pair
    with pytest.raises(ValueError):
        M.mcnemar_exact([0.5], [1])


def test_sign_flip_worked_example() -> None:
    # differences 1, 2, 3: the 8 sign patterns give sums 6, 4, 2, 0, 0, -2, -4, -6; only +6 is
    # as large as the observed one, so the exact two-sided p = 2 * 1/8
    res = M.paired_difference([1.5, 2.0, 3.25], [0.5, 0.0, 0.25])
    assert res.test == "sign-flip" and res.diff == pytest.approx(2.0)
    assert res.p_value == pytest.approx(0.25)


def test_holm_worked_example() -> None:
    # sorted 0.01, 0.03, 0.04, 0.5 (m = 4): 4 * 0.01, 3 * 0.03, max(0.09, 2 * 0.04), 0.5
    got = M.holm([0.01, 0.04, 0.03, math.nan, 0.5])
    assert got[[0, 1, 2, 4]] == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert math.isnan(got[3])


def test_kendall_tau_b_worked_example_and_scipy() -> None:
    # 1 2 3 4 against 1 3 2 4: 5 concordant pairs, 1 discordant -> (5 - 1) / 6
    assert M.kendall_tau_b(np.array([1, 2, 3, 4]), np.array([1, 3, 2, 4])) == pytest.approx(4 / 6)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, (50, 7)), rng.integers(0, 4, (50, 7))  # many ties
    want = [stats.kendalltau(a, b).statistic for a, b in zip(x, y, strict=True)]
    assert M.kendall_tau_b(x, y) == pytest.approx(want, nan_ok=True)
    assert math.isnan(M.kendall_tau_b(np.array([1, 1]), np.array([1, 2])))


def test_group_stability_is_ifs() -> None:
    df = pd.DataFrame(
        {"model": "m", "task": "t", "expr": [0, 0, 1, 1], "value": [1.0, 0.0, 1.0, 1.0]}
    )
    st = M.group_stability(df, "expr", ["model", "task"]).iloc[0]
    # group means 0.5 and 1.0: std (ddof=1) = 0.3536, mean 0.75
    assert st["CV"] == pytest.approx(np.std([0.5, 1.0], ddof=1) / 0.75)
    assert st["n_groups"] == 2 and st["n"] == 4
