"""Generic metrics over score tables: CV, bootstrap CIs (one bootstrap,
:func:`bootstrap_sums`), paired tests, rank agreement, a benchmark's :class:`Headline`. Nothing
here rounds. Every public name of the submodules is importable from ``lceval.metrics``."""

from lceval.metrics.basic import (
    coefficient_of_variation,
    group_stability,
    kendall_tau_b,
    lcs_length,
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
    Paired,
    SumStatistic,
    bootstrap,
    bootstrap_sums,
    holm,
    mcnemar_exact,
    mean_statistic,
    paired_difference,
    paired_sums,
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
    "bootstrap_sums",
    "coefficient_of_variation",
    "group_stability",
    "headline_estimates",
    "headline_paired",
    "holm",
    "kendall_tau_b",
    "lcs_length",
    "mcnemar_exact",
    "mean_statistic",
    "paired_difference",
    "paired_sums",
]
