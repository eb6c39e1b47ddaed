"""Generic metrics over score tables: means, grouped metrics, CV, bootstrap CIs, paired tests,
rank correlations.

Benchmark-specific aggregates (LIFBench's ARS, IFP, IFS) live in
``lceval.benchmarks.<key>.report`` and are built from these; so does each benchmark's headline
(:class:`Headline`), which ``lceval.report.compare`` turns into leaderboards, paired tests and rank
correlations. One bootstrap (:func:`bootstrap_sums`, on ``scipy.stats.bootstrap``) gives every CI.
Nothing here rounds: rounding is for display only.

One module per seam: :mod:`~lceval.metrics.basic` (means, grouped, CV, LCS),
:mod:`~lceval.metrics.intervals` (bootstrap CIs), :mod:`~lceval.metrics.paired` (paired tests),
:mod:`~lceval.metrics.ranks` (rank agreement), :mod:`~lceval.metrics.headline` (a benchmark's
headline); every public name is importable from ``lceval.metrics``.
"""

from lceval.metrics.basic import (
    coefficient_of_variation,
    grouped,
    lcs_length,
    mean,
)
from lceval.metrics.headline import (
    Headline,
    generic_headline,
    headline_estimates,
    headline_of,
    headline_paired,
)
from lceval.metrics.intervals import (
    METHODS,
    Estimate,
    SumStatistic,
    bootstrap,
    bootstrap_ci,
    bootstrap_sums,
    grouped_bootstrap,
    mean_statistic,
    stratified_bootstrap_ci,
)
from lceval.metrics.paired import (
    Paired,
    holm,
    mcnemar_exact,
    paired_difference,
    paired_sums,
)
from lceval.metrics.ranks import (
    group_stability,
    kendall_tau_b,
)

__all__ = [
    "generic_headline",
    "headline_of",
    "Estimate",
    "Headline",
    "METHODS",
    "Paired",
    "SumStatistic",
    "bootstrap",
    "bootstrap_ci",
    "bootstrap_sums",
    "coefficient_of_variation",
    "group_stability",
    "grouped",
    "grouped_bootstrap",
    "headline_estimates",
    "headline_paired",
    "holm",
    "kendall_tau_b",
    "lcs_length",
    "mcnemar_exact",
    "mean",
    "mean_statistic",
    "paired_difference",
    "paired_sums",
    "stratified_bootstrap_ci",
]
