"""ManyIFEval's answer key and the instruction metadata that the builder, the scorer, the reporter
and the refinement loop share.

Sources: Harada et al., "Curse of Instructions" (ManyIFEval), Sec. 3.1 and Table 4 (the 15
instructions, their groups and names); the ids are IFEval's (Zhou et al., 2023) as registered in
lm-evaluation-harness 0.4.13 ``lm_eval/tasks/ifeval/instructions_registry.py``.

Field names of :class:`ManyIFEvalGold` are the keys the builder writes in ``Sample.gold`` (JSON),
in the order it writes them, so run folders built before this class existed still load. This
module imports nothing from ``build``, ``score``, ``report`` or ``refine`` and nothing heavy
(lm-eval's checkers are imported by ``checkers.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lceval.core.records import Gold

TASKS: tuple[str, ...] = ("unique", "repeated")
"""``unique``: n distinct instructions (Sec. 3.1); ``repeated``: the Appendix C control (one
instruction repeated to the prompt length of n unique ones)."""

TABLE4: tuple[tuple[str, str, str], ...] = (
    ("keywords:existence", "Keywords", "Include Keywords"),
    ("keywords:frequency", "Keywords", "Keyword Frequency"),
    ("keywords:forbidden_words", "Keywords", "Forbidden Words"),
    ("keywords:letter_frequency", "Keywords", "Letter Frequency"),
    ("length_constraints:number_paragraphs", "Length Constraints", "Number Paragraphs"),
    ("length_constraints:number_words", "Length Constraints", "Number Words"),
    ("length_constraints:number_sentences", "Length Constraints", "Number Sentences"),
    ("detectable_content:number_placeholders", "Detectable Content", "Number Placeholder"),
    ("detectable_format:number_bullet_lists", "Detectable Format", "Number Bullets"),
    ("detectable_format:title", "Detectable Format", "Title"),
    ("change_case:english_capital", "Change Cases", "All Uppercase"),
    ("change_case:english_lowercase", "Change Cases", "All Lowercase"),
    ("change_case:capital_word_frequency", "Change Cases", "Frequency of all-capital words"),
    ("startend:quotation", "Start with / End with", "Quotation"),
    ("punctuation:no_comma", "Punctuation", "No Commas"),
)
"""Table 4 of the paper, in its order: (IFEval instruction id, Table 4 group, Table 4 name)."""

INSTRUCTION_IDS: tuple[str, ...] = tuple(t[0] for t in TABLE4)
"""The 15 ManyIFEval instruction ids (IFEval ids), in Table 4 order."""
INSTRUCTION_GROUP: Mapping[str, str] = {t[0]: t[1] for t in TABLE4}
"""Instruction id -> Table 4 group (the builder picks one variant per conflicting group)."""
INSTRUCTION_NAME: Mapping[str, str] = {t[0]: t[2] for t in TABLE4}
"""Instruction id -> Table 4 name (row labels of the per-instruction table)."""

MODES: tuple[str, ...] = ("strict", "loose")
"""IFEval's two ways of checking a response (lm-eval ``utils.py``)."""


@dataclass(frozen=True)
class ManyIFEvalGold(Gold):
    """The instructions one ManyIFEval prompt carries, as IFEval's checkers take them."""

    key: str = ""
    """The task prompt's key (``mtbench-81``, or the ``key`` of a row of an IFEval-format file);
    shared by the samples of one prompt at every n."""
    prompt: str = ""
    """The full prompt as sent (task prompt + instruction list), in characters; the checkers
    whose arguments include ``prompt`` read it. Empty: the scorer uses ``Sample.instruction``."""
    task_prompt: str = ""
    """The task prompt without its instructions ("" for prompts loaded from a file)."""
    instruction_id_list: tuple[str, ...] = ()
    """IFEval instruction ids, one per instruction, in prompt order (at least one)."""
    kwargs: tuple[Mapping[str, Any], ...] = ()
    """The checker arguments of each instruction (same length as ``instruction_id_list``; only
    the keys the checker takes, e.g. ``{"num_words": 300, "relation": "at least"}``)."""

    def __post_init__(self) -> None:
        if not self.instruction_id_list:
            raise ValueError("instruction_id_list: needs at least one instruction id")
        if len(self.instruction_id_list) != len(self.kwargs):
            raise ValueError(
                f"{len(self.instruction_id_list)} instruction ids but {len(self.kwargs)} kwargs"
            )


GOLD: Mapping[str, type[Gold]] = {task: ManyIFEvalGold for task in TASKS}
"""Task -> its Gold dataclass."""


def part_key(mode: str, index: int, instruction_id: str) -> str:
    """Key of one instruction's verdict in ``Judgement.parts``: ``"<mode>:<index>:<id>"``.

    Args:
        mode: ``strict`` or ``loose``.
        index: the instruction's 0-based position in the prompt.
        instruction_id: its IFEval id.
    """
    return f"{mode}:{index}:{instruction_id}"


def parse_part_key(key: str) -> tuple[str, int, str] | None:
    """Inverse of :func:`part_key`: (mode, index, id), or None for keys of another form."""
    mode, _, rest = key.partition(":")
    idx, _, iid = rest.partition(":")
    if mode not in MODES or not idx.isdigit() or not iid:
        return None
    return mode, int(idx), iid


STRATEGIES = (
    "zero-shot",
    "no-feedback",
    "feedback",
    "feedback-each",
    "feedback-each-cot",
    "oracle",
    "all-false",
)
"""The self-refinement strategies of Sec. 5 in Table 2's order (``refine`` runs them)."""
PAPER_NAMES: Mapping[str, str] = {
    "zero-shot": "zero-shot",
    "no-feedback": "refinement w/o feedback",
    "feedback": "refinement w/ feedback",
    "feedback-each": "refinement w/ feedback+each",
    "feedback-each-cot": "refinement w/ feedback+each+cot",
    "oracle": "refinement w/ oracle",
    "all-false": "refinement w/ all false",
}
"""Each strategy's name as Table 2 prints it."""


def strategy_key(name: str) -> str | None:
    """The strategy key of ``name``: a key of :data:`STRATEGIES` or its Table 2 name (case and
    spacing ignored); None when it is neither."""
    if name in STRATEGIES:
        return name
    norm = " ".join(str(name).lower().split())
    return next((k for k, v in PAPER_NAMES.items() if v == norm), None)
