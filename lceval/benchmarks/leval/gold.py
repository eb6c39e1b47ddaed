"""L-Eval's answer keys (one frozen Gold dataclass per answer shape) and the task metadata that the
builder, the scorers and the reporter share: task codes, groups, paper names, the n-gram metric
of each open-ended task.

Sources (OpenLMLab/LEval, GPL-3; facts only, no code): ``Baselines/LEval_config.py``
(``datasets_closed_ended``, ``datasets_open_ended``, ``with_option_tasks``), the README (task
names in the paper), ``LEval-data/*/*.jsonl`` (the ``evaluation`` field: ``exam``, ``rouge``,
``f1``, ``human``, ``LLM``) and ``Evaluation/auto_eval.py`` (which rule scores which task).

Field names are the keys the builder and the importer write into ``Sample.gold`` (JSON). This
module imports nothing from ``build``, ``score`` or ``report``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lceval.core.records import Gold

CLOSED_TASKS: tuple[str, ...] = (
    "tpo",
    "quality",
    "coursera",
    "sci_fi",
    "gsm100",
    "codeU",
    "topic_retrieval_longchat",
)
"""Closed-ended (exam) tasks, file names of ``LEval-data/Closed-ended-tasks``."""

OPEN_TASKS: tuple[str, ...] = (
    "financial_qa",
    "gov_report_summ",
    "legal_contract_qa",
    "meeting_summ",
    "multidoc_qa",
    "narrative_qa",
    "natural_question",
    "news_summ",
    "paper_assistant",
    "patent_summ",
    "review_summ",
    "scientific_qa",
    "tv_show_summ",
)
"""Open-ended tasks, file names of ``LEval-data/Open-ended-tasks``."""

TASKS: tuple[str, ...] = CLOSED_TASKS + OPEN_TASKS
"""The 20 task codes (the official file and hub-config names)."""

OPTION_TASKS: frozenset[str] = frozenset({"coursera", "quality", "tpo"})
"""Multiple-choice tasks (official ``with_option_tasks``)."""

PAPER_NAMES: Mapping[str, str] = {
    "tpo": "TOEFL",
    "quality": "QuALITY",
    "coursera": "Coursera",
    "sci_fi": "SFiction",
    "gsm100": "GSM",
    "codeU": "CodeU",
    "topic_retrieval_longchat": "TopicRet",
    "financial_qa": "LongFQA",
    "gov_report_summ": "GovReport",
    "legal_contract_qa": "CUAD",
    "meeting_summ": "QMSum",
    "multidoc_qa": "MultiDoc2Dial",
    "narrative_qa": "NarrativeQA",
    "natural_question": "NQ",
    "news_summ": "Multi-News",
    "paper_assistant": "Openreview",
    "patent_summ": "BigPatent",
    "review_summ": "SPACE",
    "scientific_qa": "Qasper",
    "tv_show_summ": "SummScreen",
}
"""Task code -> the name the paper's tables use (README, "The corresponding NAMEs in the paper")."""

EXAM_COLUMNS: tuple[str, ...] = ("coursera", "gsm100", "quality", "tpo", "codeU", "sci_fi")
"""The closed-ended tasks of the paper's exam table and its Avg, in the paper's column order
(TopicRet is reported separately)."""

Metric = Literal["rouge", "f1"]
"""The n-gram metric of an open-ended task (official ``DATASET_TO_METRICS`` config names)."""

NGRAM_METRIC: Mapping[str, Metric] = {
    "financial_qa": "f1",
    "gov_report_summ": "rouge",
    "legal_contract_qa": "f1",
    "meeting_summ": "rouge",
    "multidoc_qa": "f1",
    "narrative_qa": "f1",
    "natural_question": "f1",
    "news_summ": "rouge",
    "paper_assistant": "rouge",
    "patent_summ": "rouge",
    "review_summ": "rouge",
    "scientific_qa": "f1",
    "tv_show_summ": "rouge",
}
"""Open-ended task -> the ``evaluation`` of its n-gram documents in the official data (documents
marked ``human`` or ``LLM`` are scored with the task's metric when an n-gram score is asked)."""

EVALUATIONS: tuple[str, ...] = ("exam", "rouge", "f1", "human", "LLM")
"""Values of the official ``evaluation`` field."""

Judgment = Literal["loyalty", "fact", "both"]
"""Which SFiction judgment a sample asks: document-based (loyalty), world knowledge (fact), or
both in one prediction ``"<loyalty> [fact: <fact>]"`` (official prediction files)."""


@dataclass(frozen=True)
class LevalGold(Gold):
    """What every L-Eval question keeps: the official instruction and reference, verbatim."""

    query: str
    """The official instruction (``instructions[i]`` of the data, ``query`` of prediction
    files), without lceval's prompt wrapping. With ``reference`` it identifies a question across
    prediction files (official ``Evaluation/llm_eval.py``, ``construct_pairs``)."""
    reference: str
    """The reference answer (``outputs[i]`` of the data, ``gt`` of prediction files)."""
    evaluation: str
    """The document's official ``evaluation`` field: exam, rouge, f1, human or LLM."""


@dataclass(frozen=True)
class ExamGold(LevalGold):
    """Closed-ended questions scored by exact match: tpo, quality, coursera (option letters; the
    reference's first token, A-D kept), gsm100 (the number after "The answer is"), codeU (the
    printed output)."""


@dataclass(frozen=True)
class TopicGold(LevalGold):
    """TopicRet: the topic asked for (first, second or third of the conversation)."""

    topic_index: int
    """0, 1 or 2: which topic is asked (official: prediction line ``i`` belongs to ``i % 3``)."""


@dataclass(frozen=True)
class SciFiGold(LevalGold):
    """SFiction: a true/false question answered from the document (loyalty) and from world
    knowledge (fact); ``reference`` is the official ``"<True|False> [fact: <True|False>]"``."""

    judgment: Judgment
    """Which judgment the response gives (``both`` for imported official predictions)."""


@dataclass(frozen=True)
class OpenGold(LevalGold):
    """Open-ended questions: n-gram metrics against the reference, or an LLM judge."""

    metric: Metric
    """``rouge`` (summaries) or ``f1`` (abstractive QA), from :data:`NGRAM_METRIC`."""
    reference_words: int
    """Words of the reference (``len(reference.split())``), the LIE length."""


GOLD: dict[str, type[Gold]] = {
    **{t: ExamGold for t in CLOSED_TASKS},
    "topic_retrieval_longchat": TopicGold,
    "sci_fi": SciFiGold,
    **{t: OpenGold for t in OPEN_TASKS},
}
"""Gold dataclass per task code (for ``Benchmark.gold``)."""
