"""Contamination signals for any run.

- N-gram overlap (:mod:`~lceval.contamination.overlap`): the share of a sample's 13-grams (GPT-3's
  decontamination n, Brown et al. 2020, App. C) found in a reference corpus; units are ASCII
  word runs and single other letters (a CJK character), so unspaced Chinese gets 13-character
  n-grams. Offline, the shipped corpora (``lceval.core.corpora``) stand in.
- Membership (:mod:`~lceval.contamination.membership`, higher = likelier seen): Min-K% Prob (Shi
  et al., ICLR 2024), Min-K%++ (Zhang et al., 2024; needs the full next-token distribution, hf
  only) and the zlib ratio (Carlini et al., 2021), with the AUROC between a seen and an unseen
  split (Mann-Whitney, ties half) and its percentile-bootstrap CI.
"""

from lceval.contamination.membership import (
    SIGNALS,
    auroc,
    auroc_ci,
    auroc_summary,
    auroc_table,
    in_prompt_control,
    membership_scores,
    min_k_plus_plus,
    min_k_prob,
    report_parts,
    run_membership,
    zlib_ratio,
)
from lceval.contamination.overlap import (
    NGRAM,
    SHIPPED,
    NgramIndex,
    Overlap,
    ngram_hashes,
    overlap,
    overlap_table,
    reference_index,
    run_overlap,
    run_texts,
    sample_text,
    shipped_texts,
    task_overlap,
    text_units,
)

__all__ = [
    "NGRAM",
    "NgramIndex",
    "Overlap",
    "SHIPPED",
    "SIGNALS",
    "auroc",
    "auroc_ci",
    "auroc_summary",
    "auroc_table",
    "in_prompt_control",
    "membership_scores",
    "min_k_plus_plus",
    "min_k_prob",
    "ngram_hashes",
    "overlap",
    "overlap_table",
    "reference_index",
    "report_parts",
    "run_membership",
    "run_overlap",
    "run_texts",
    "sample_text",
    "shipped_texts",
    "task_overlap",
    "text_units",
    "zlib_ratio",
]
