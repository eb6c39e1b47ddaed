"""Contamination signals for any run: n-gram overlap with a reference corpus, and membership
scores (Min-K% Prob, Min-K%++, zlib ratio) from a model's prompt log-probabilities.

N-gram overlap
--------------
A sample's text (by default its prompt's user turn: description, context and instruction,
:func:`lceval.models.prompts.user_text`) is cut into units, and its 13-grams are looked up in an
index of a reference corpus's 13-grams (the GPT-3 paper's decontamination n, Brown et al. 2020,
Appendix C). Units (:func:`text_units`): runs of ASCII letters and digits as words (lower-cased)
and every other letter or digit (CJK characters included) as one unit; punctuation and spaces
are dropped, so Chinese text, which has no spaces, gets 13-character n-grams. A sample's overlap
is the share of its n-grams found in the corpus (0..1); it is flagged when that share reaches
``threshold`` (default: any shared 13-gram). The corpus is any texts or files the user gives;
offline, lceval's shipped corpora (``lceval.core.corpora``: Paul Graham essays, SQuAD, HotpotQA,
IFBench prompts, MT-Bench questions) stand in.

Membership signals (higher = more likely seen in training)
------------------------------------------------------------
From the log-probabilities of a text's tokens (``lceval.models.logprobs``):

- Min-K% Prob (Shi et al., ICLR 2024): the mean of the lowest ``k`` share of token
  log-probabilities (k = 20% by default).
- Min-K%++ (Zhang et al., 2024): per token ``(log p(x_t) - mu_t) / sigma_t`` with ``mu_t`` and
  ``sigma_t`` the mean and std of ``log p(z)`` under the model's next-token distribution, then the
  mean of the lowest ``k`` share. Needs the full distribution (hf backend); NaN otherwise.
- zlib ratio (Carlini et al., USENIX Security 2021): the text's mean token log-probability
  divided by its zlib-compressed size in bytes (the Min-K% repository's sign convention: higher
  for likelier, less compressible text).

AUROC between a seen and an unseen split (Mann-Whitney: the probability that a seen text scores
higher than an unseen one, ties counted half) with a percentile-bootstrap CI (each group
resampled on its own).
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
    run_membership,
    save_report,
    zlib_ratio,
)
from lceval.contamination.overlap import (
    _UNIT,
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
    "_UNIT",
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
    "run_membership",
    "run_overlap",
    "run_texts",
    "sample_text",
    "save_report",
    "shipped_texts",
    "task_overlap",
    "text_units",
    "zlib_ratio",
]
