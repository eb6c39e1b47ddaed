"""LIFBench's answer keys (one frozen Gold dataclass per task schema) and the benchmark metadata
that the builder, the scorers and the reporter share (task codes, rubric points, capabilities).

Sources (SheldonWu0327/LIFBench-2024, MIT; facts only): ``data/PromptGenerate.py`` (the variables
of each task), ``evaluation/ARS_Scores.py`` (rubric points), ``evaluation/ScoreCapaMap.py``
(capabilities); paper Table 2 and Sec. 4.

Field names are the keys the builder writes into ``Sample.gold`` (JSON) and fields are declared in
the order it writes them, so ``dataclasses.asdict`` gives the same JSON as before and run folders
built before these classes existed still load. Positions are 1-based, as the prompt shows them
(``"{i}. {elem}"``, ``doc-{n}``). This module imports nothing from ``build``, ``score`` or
``report``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lceval.core.records import Gold

TASKS: tuple[str, ...] = ("LSI", "LMI", "LOI", "LOE", "LBI", "LBE", "MB", "MF", "OR", "OQ", "OE")
"""The eleven task codes, in the paper's Table 2 order."""

OFFICIAL_KEYS: Mapping[str, str] = {
    "LSI": "list-single_query_id",
    "LMI": "list-multi_query_id",
    "LOI": "list-offset_query_id",
    "LOE": "list-offset_query_element",
    "LBI": "list-blur_offset_query_id",
    "LBE": "list-blur_offset_query_element",
    "MB": "multidoc-batch_label",
    "MF": "multidoc-find_dup_text",
    "OR": "onedoc-repeat",
    "OQ": "onedoc-qa",
    "OE": "onedoc-extract",
}
"""Task code -> the official task key (file names in the official repository)."""

SCENARIOS: Mapping[str, str] = {
    **dict.fromkeys(("LSI", "LMI", "LOI", "LOE", "LBI", "LBE"), "List"),
    "MB": "MultiDoc",
    "MF": "MultiDoc",
    "OR": "OneDoc",
    "OQ": "OneDoc",
    "OE": "OneDoc",
}
"""Task code -> scenario (List, MultiDoc, OneDoc)."""

RUBRIC: Mapping[str, Mapping[str, float]] = {
    "LSI": {"format": 1.0, "correct": 2.0, "ori": 1.0},
    "LMI": {"format": 2.0, "num": 3.0, "correct": 3.0, "order": 2.0},
    "LOI": {"format": 1.0, "correct": 2.0, "ori": 1.0},
    "LOE": {"format": 1.0, "correct": 2.0, "ori": 1.0},
    "LBI": {"ori": 1.0, "position": 3.0, "format": 1.0},
    "LBE": {"ori": 1.0, "position": 3.0, "format": 1.0},
    "MB": {"candi_ori": 3.0, "logit_correct": 3.0, "num_doc": 3.0, "format": 5.0},
    "MF": {"correct": 4.0, "num_text": 5.0, "ori": 6.0, "format": 5.0},
    "OR": {"format": 3.0, "ori": 2.0, "hit": 2.0, "num": 4.0, "correct": 3.0},
    "OQ": {"correct": 3.0, "format": 2.0},
    "OE": {"format": 4.0, "correct": 4.0, "order": 4.0, "ori": 2.0},
}
"""Task -> rubric item -> points (official ``ARS_Scores.ScoreTools.score_map``; 99 in all)."""

TASK_POINTS: Mapping[str, float] = {t: sum(items.values()) for t, items in RUBRIC.items()}
"""Task -> its total points R~_t (the Eq. 3 weights)."""

CAPABILITIES: tuple[str, ...] = ("Fmt", "Logit", "Num", "Ori", "Recog", "Spat")
"""The six capabilities of the IFP (paper Sec. 4.2), alphabetical as the official tables."""

CAPABILITY_MAP: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "LSI": {"format": ("Fmt",), "correct": ("Recog",), "ori": ("Ori",)},
    "LMI": {"format": ("Fmt",), "num": ("Num",), "correct": ("Recog",), "order": ("Spat",)},
    "LOI": {"format": ("Fmt",), "correct": ("Recog", "Spat"), "ori": ("Ori",)},
    "LOE": {"format": ("Fmt",), "correct": ("Spat",), "ori": ("Ori",)},
    "LBI": {"ori": ("Ori",), "position": ("Spat",), "format": ("Fmt",)},
    "LBE": {"ori": ("Ori",), "position": ("Spat",), "format": ("Fmt",)},
    "MB": {
        "candi_ori": ("Ori",),
        "logit_correct": ("Logit",),
        "num_doc": ("Num", "Recog"),
        "format": ("Fmt",),
    },
    "MF": {
        "correct": ("Recog",),
        "num_text": ("Num", "Logit"),
        "ori": ("Ori",),
        "format": ("Fmt",),
    },
    "OR": {
        "format": ("Fmt",),
        "ori": ("Ori",),
        "hit": ("Recog",),
        "num": ("Num",),
        "correct": ("Logit",),
    },
    "OQ": {"correct": ("Logit",), "format": ("Fmt",)},
    "OE": {"format": ("Fmt",), "correct": ("Recog",), "order": ("Spat",), "ori": ("Ori",)},
}
"""Rubric item -> capabilities (Score-Capability Mapping, paper Sec. 4.2; official
``evaluation/ScoreCapaMap.py``). One difference from that file: MF ``correct`` maps to Recog only
(the file also lists Logit); this is what reproduces the official ``full_results_IFP.xlsx``
(gpt-4o Logit .582; with Logit it would be .592)."""

ONEDOC_TAGS: tuple[str, ...] = (
    "#Topic#",
    "@argument@",
    "!Transition!",
    "|Summary|",
    "*Evidence*",
    "-Concession-",
)
"""The six OneDoc key-sentence types, in the official ``att_list`` order."""


def _check_pair(gold: Gold, name: str) -> None:
    """Raise ValueError unless ``gold.<name>`` holds exactly two items."""
    if len(getattr(gold, name)) != 2:
        raise ValueError(f"{type(gold).__name__}.{name} must hold 2 items")


# --------------------------------------------------------------------------------------- List
@dataclass(frozen=True)
class ListItemGold(Gold):
    """LSI, LOI, LOE: one element asked, by position (LSI, LOI) or by a neighbouring element (LOE).

    LSI asks the element at ``id``; LOI and LOE the one after (``bias`` 1) or before (-1) it.
    """

    id: int
    """Asked position, 1-based (items)."""
    ordid: str
    """``id`` as an ordinal, as the instruction shows it (``"5th"``)."""
    element: str
    """The element at ``id``."""
    pre_element: str
    """The element at ``id - 1``."""
    post_element: str
    """The element at ``id + 1``."""
    bias: Literal[-1, 0, 1]
    """0 (LSI), +1 (the next element) or -1 (the previous one); tied to the expression."""
    n_items: int
    """Number of elements in the List context (items)."""
    elem_chars: tuple[int, ...]
    """``(shortest, longest)`` element length in the context (characters)."""
    target: str
    """The expected answer: ``element``, ``post_element`` (bias 1) or ``pre_element`` (-1)."""

    def __post_init__(self) -> None:
        _check_pair(self, "elem_chars")


@dataclass(frozen=True)
class ListBlurGold(Gold):
    """LBI, LBE: any element strictly after (``bias`` 1) or before (-1) position ``id``.

    LBI names the anchor by ``ordid``, LBE by ``element``; there is no single target.
    """

    id: int
    """Anchor position, 1-based (items)."""
    ordid: str
    """``id`` as an ordinal (``"5th"``)."""
    element: str
    """The anchor element (at ``id``)."""
    pre_element: str
    """The element at ``id - 1``."""
    post_element: str
    """The element at ``id + 1``."""
    bias: Literal[-1, 1]
    """+1 (an element after the anchor) or -1 (before it)."""
    n_items: int
    """Number of elements in the List context (items)."""
    elem_chars: tuple[int, ...]
    """``(shortest, longest)`` element length in the context (characters)."""

    def __post_init__(self) -> None:
        _check_pair(self, "elem_chars")


@dataclass(frozen=True)
class ListMultiGold(Gold):
    """LMI: several positions asked; the answer is a JSON list of the elements, in asked order."""

    id_arr: tuple[int, ...]
    """Asked positions, 1-based, in asked order (2..10 items)."""
    elements: tuple[str, ...]
    """The elements at ``id_arr``, same order (the target list; non-empty)."""
    n_items: int
    """Number of elements in the List context (items)."""
    elem_chars: tuple[int, ...]
    """``(shortest, longest)`` element length in the context (characters)."""

    def __post_init__(self) -> None:
        _check_pair(self, "elem_chars")
        if not self.elements:
            raise ValueError("ListMultiGold.elements must not be empty")


# ----------------------------------------------------------------------------------- MultiDoc
@dataclass(frozen=True)
class BatchLabelGold(Gold):
    """MB: label every document by a rule over the fields it has."""

    candidates: tuple[str, ...]
    """The 4 candidate labels, as the official ``candidates``."""
    rule_key: str
    """4 characters; the official sort key of the candidates (by their first character)."""
    rules: str
    """The rule text shown in the instruction."""
    doc_keys: tuple[tuple[str, ...], ...]
    """Per document, in order, the fields it has (e.g. ``("id", "iD2", "title", "text")``)."""
    labels: tuple[str, ...]
    """Gold label of each document, in document order (non-empty): ``sorted(candidates, key=
    rule_key order of the first character)[2 * (no title) + 1 * (no source)]`` (official rule)."""
    n_items: int
    """Number of documents in the context (items)."""

    def __post_init__(self) -> None:
        if not self.labels:
            raise ValueError("BatchLabelGold.labels must not be empty")


@dataclass(frozen=True)
class FindDupGold(Gold):
    """MF: list the groups of documents with the same text, giving the asked fields of each."""

    info_keys: tuple[str, ...]
    """The fields asked, in order (e.g. ``("id", "title")``; official: a space-separated string)."""
    info_text: str
    """The fields as the instruction names them."""
    dup_idxs: tuple[tuple[int, ...], ...]
    """Duplicate groups as 1-based document numbers, each sorted, groups ordered by first member;
    only groups with >= 2 documents in the context (may be empty: then the sample has no score)."""
    dup_infos: tuple[tuple[Mapping[str, str | None], ...], ...]
    """Per group, per document: ``{info_key: value}`` (``None`` where the document lacks the
    field); the official ``dup_infos``."""
    n_items: int
    """Number of documents in the context (items)."""


# ------------------------------------------------------------------------------------- OneDoc
@dataclass(frozen=True)
class KeySentence(Gold):
    """A tagged sentence of a OneDoc context (an entry of the official ``label``)."""

    text: str
    """The sentence without tags, exactly as in the context between ``head`` and ``tail``."""
    order: int
    """The official marking order 0..22 (the id in the head tag)."""
    sentence_index: int
    """Index of the sentence in the document (0-based, sentences)."""
    is_true: bool
    """False for a fake key sentence (its tail tag differs from the head's type)."""
    head: str
    """The head tag, e.g. ``"<#Topic#-0>"``."""
    tail: str
    """The tail tag, e.g. ``"<#Topic#>"`` (a fake has a different one)."""


KeySentences = Mapping[str, tuple[KeySentence, ...]]
"""Tag type (``"#Topic#"``, no angle brackets) -> its key sentences in marking order; all six
types of :data:`ONEDOC_TAGS`, ``|Summary|`` with none."""


@dataclass(frozen=True)
class RepeatGold(Gold):
    """OR: repeat ``num`` key sentences, one per line, each followed by ``sep`` and its type."""

    num: int
    """How many key sentences are asked (1, 2, 4, 6 or 8)."""
    sep: str
    """The separator asked (one of the 5 official separators; non-empty)."""
    key_sentences: KeySentences
    """Every key sentence of the context, by type."""
    n_items: int
    """Number of sentences in the document (sentences)."""

    def __post_init__(self) -> None:
        if self.num < 1 or not self.sep:
            raise ValueError("RepeatGold needs num >= 1 and a non-empty sep")


@dataclass(frozen=True)
class QaGold(Gold):
    """OQ: is the given sentence a (true) key sentence? Answer with one of two options."""

    evidence: str
    """The sentence asked about, without tags."""
    options: tuple[str, ...]
    """The two answer options, non-empty: ``options[0]`` means yes, ``options[1]`` no."""
    evidence_kind: Literal["true", "fake", "untagged"]
    """What the evidence is: a true key sentence, a fake one, or an untagged sentence."""
    is_key: bool
    """The evidence is tagged (true or fake)."""
    is_true_key: bool
    """The evidence is a true key sentence."""
    answer: str
    """``options[0]`` if the evidence is a true key sentence, else ``options[1]``."""
    key_sentences: KeySentences
    """Every key sentence of the context, by type."""
    n_items: int
    """Number of sentences in the document (sentences)."""

    def __post_init__(self) -> None:
        _check_pair(self, "options")
        if not all(self.options):
            raise ValueError("QaGold.options must be two non-empty strings")


@dataclass(frozen=True)
class ExtractGold(Gold):
    """OE: extract every key sentence of one type as a JSON list, in id order."""

    type: str
    """The asked type with angle brackets, as the official param (``"<#Topic#>"``)."""
    tag: str
    """The asked type without them (``"#Topic#"``); a key of ``key_sentences``."""
    targets: tuple[str, ...]
    """The true sentences of that type, in order (none for ``|Summary|``)."""
    fakes: tuple[str, ...]
    """The fake sentences of that type (0 or 1)."""
    key_sentences: KeySentences
    """Every key sentence of the context, by type."""
    n_items: int
    """Number of sentences in the document (sentences)."""

    @functools.cached_property
    def key_texts(self) -> tuple[str, ...]:
        """The non-empty texts of every key sentence, type by type (the official label order)."""
        return tuple(k.text for ks in self.key_sentences.values() for k in ks if k.text)

    @functools.cached_property
    def key_texts_by_order(self) -> tuple[str, ...]:
        """The non-empty texts of every key sentence by marking order (``order``; ties kept in
        label order)."""
        items = sorted((k for ks in self.key_sentences.values() for k in ks), key=lambda k: k.order)
        return tuple(k.text for k in items if k.text)


GOLD: Mapping[str, type[Gold]] = {
    "LSI": ListItemGold,
    "LMI": ListMultiGold,
    "LOI": ListItemGold,
    "LOE": ListItemGold,
    "LBI": ListBlurGold,
    "LBE": ListBlurGold,
    "MB": BatchLabelGold,
    "MF": FindDupGold,
    "OR": RepeatGold,
    "OQ": QaGold,
    "OE": ExtractGold,
}
"""Task code -> its Gold dataclass."""
