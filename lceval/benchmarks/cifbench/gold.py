"""CIF-Bench's answer key and the metadata that the builder, the scorers and the reporter share.

Sources (facts only; the official repository yizhilll/CIF-Bench has no licence, so nothing of its
data is shipped): the paper (Li et al., 2024, arXiv:2402.13109) Sec. 3.3 (four output types and
their metrics) and Appendix A.2 (20 categories and their task counts, ``resources/categories.csv``);
the file names of ``dataset/public/`` at commit 04dc5aa (150 task codes, ``resources/tasks.csv``).

The task -> category and task -> metric tables of the paper (Tables 10-12) are images, so the
output type of a task is inferred from its data (:mod:`lceval.benchmarks.cifbench.data`) unless
a user metadata file names it; categories come only from such a file.

This module imports nothing from ``build``, ``score`` or ``report``.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from lceval.core.records import Gold

OutputType = Literal["multi-class", "multi-label", "similarity", "creative"]
"""The paper's four output requirements (Sec. 3.3)."""

OUTPUT_TYPES: tuple[OutputType, ...] = ("multi-class", "multi-label", "similarity", "creative")
"""Output types; their metrics: accuracy, F1, semantic similarity (BLEURT in the paper), a
model-based evaluator (GPT-4 in the paper)."""

METRIC: Mapping[str, str] = {
    "multi-class": "accuracy",
    "multi-label": "F1",
    "similarity": "semantic similarity",
    "creative": "model-based evaluator",
}
"""The paper's metric per output type (Sec. 3.3)."""

InstructionSource = Literal["official", "user", "generated"]
"""Where an instruction comes from: the split's own file, a user's variants file, or paraphrases
proposed by a model (``lceval.benchmarks.cifbench.variants``). Sources are never pooled."""

INSTRUCTION_SOURCES: tuple[InstructionSource, ...] = ("official", "user", "generated")

Origin = Literal["translated", "chinese", "new"]
"""Where a task comes from (paper Sec. 3.1, Tables 2, 5, 8, 10-12): ``translated`` (an English
task, mostly from Super-NaturalInstructions, translated to Chinese), ``chinese`` (an existing
Chinese dataset), ``new`` (one of the 37 tasks newly designed and annotated for CIF-Bench).
``translated`` and ``chinese`` are the paper's 113 "Existing" tasks."""

ORIGINS: tuple[Origin, ...] = ("translated", "chinese", "new")

MAX_INSTRUCTIONS = 5
"""Instructions per task in the private split (paper Sec. 3: five semantically equal variants)."""


def _read_csv(name: str) -> list[dict[str, str]]:
    text = resources.files("lceval.benchmarks.cifbench").joinpath("resources").joinpath(name)
    with text.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


CATEGORIES: Mapping[str, int] = {
    r["category"]: int(r["n_tasks"]) for r in _read_csv("categories.csv")
}
"""The 20 categories of Appendix A.2 -> number of tasks in each (a task can be in several; the
counts add up to 303 over 150 tasks)."""

LEADERBOARD_COLUMN: Mapping[str, str] = {
    r["category"]: r["leaderboard_column"] for r in _read_csv("categories.csv")
}
"""Category -> its column name in the README leaderboards ("Toxicity" is "Toxic" there)."""

CATEGORY_ALIASES: Mapping[str, str] = {
    **{c.casefold(): c for c in CATEGORIES},
    "toxic": "Toxicity",
    "creative natural language generation": "Creative NLG",
    "creative natural language generation (nlg)": "Creative NLG",
    "named entity recognition": "NER",
    "named entity recognition (ner)": "NER",
    "natural language inference": "NLI",
    "natural language inference (nli)": "NLI",
    "question answering": "QA",
    "question answering (qa)": "QA",
}
"""Accepted spellings of category names in user metadata (case-insensitive) -> the name."""

OFFICIAL_TASKS: tuple[str, ...] = tuple(r["task"] for r in _read_csv("tasks.csv"))
"""The 150 task codes ``<n>_<Task_Name>`` of the public split's file names (0..151; 84 and 95
are absent), in numeric order."""


def category(name: str) -> str:
    """The category called ``name`` (any accepted spelling).

    Raises:
        ValueError: not one of the 20 categories.
    """
    key = " ".join(str(name).split()).casefold()
    if key not in CATEGORY_ALIASES:
        raise ValueError(f"unknown category {name!r}; known: {', '.join(CATEGORIES)}")
    return CATEGORY_ALIASES[key]


_TRAILING = "。．.！!？?；;，,、：:…\"'“”‘’「」『』《》【】()（）[]"


def normalize(text: str) -> str:
    """A label or answer in comparable form: NFKC (full-width digits and letters to ASCII),
    case-folded, inner whitespace runs to one space, trailing/leading punctuation and quotes
    stripped. ``"０。"`` -> ``"0"``; ``"反刻板印象。"`` -> ``"反刻板印象"``."""
    s = unicodedata.normalize("NFKC", text).casefold()
    s = " ".join(s.split())
    return s.strip(_TRAILING + " ")


LABEL_SEPARATORS = re.compile(r"[、，,;；/|\n]+")
"""What separates the labels of a multi-label reference (Chinese enumeration comma, commas,
semicolons, slashes, bars, newlines), as the public split writes them (e.g. ``排比、比喻``)."""


def split_labels(text: str) -> tuple[str, ...]:
    """The normalized labels of a multi-label reference, in order, without duplicates.

    ``"存在傲慢，表达权威、含沙射影。"`` -> ``("存在傲慢", "表达权威", "含沙射影")``.
    """
    out: list[str] = []
    for part in LABEL_SEPARATORS.split(unicodedata.normalize("NFKC", text)):
        lab = normalize(part)
        if lab and lab not in out:
            out.append(lab)
    return tuple(out)


@dataclass(frozen=True)
class CifGold(Gold):
    """The answer key of one CIF-Bench instance (one input under one instruction)."""

    reference: str
    """The reference output (the file's ``Output``) as written."""
    output_type: OutputType
    """How the task is scored (:data:`OUTPUT_TYPES`)."""
    labels: tuple[str, ...] = ()
    """The task's closed label set, normalized (:func:`normalize`): the classes (multi-class) or
    the single labels that references combine (multi-label); empty for generation tasks."""
    gold_labels: tuple[str, ...] = ()
    """The reference's label(s), normalized: one for multi-class, one or more for multi-label;
    empty for generation tasks."""


GOLD: dict[str, type[Gold]] = {"*": CifGold}
"""One Gold type for every task (CIF-Bench tasks come from the user's files)."""
