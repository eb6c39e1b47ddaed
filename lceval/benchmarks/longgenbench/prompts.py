"""LongGenBench prompt text in the paper's two prompt formats (Appendix G, Table 7).

The paper compares two prompt formats on the short version (Appendix G, Table 7): **Prompt-1**,
the main format, lists the Single (SI), Range (RI) and Periodic (PI) instructions in that order;
**Prompt-2** swaps their positions and rewrites the "generate" sentence (the paper had GPT-4
rewrite it). lceval's formats (``p1`` and ``p2``) do the same on its own prompts: ``p2`` lists PI,
RI, SI (the order reversed) and replaces the closing generate sentence by a rewording of it that
asks for the same entries, word counts and stop string. The paper's Prompt-2 text is not
published, so ``p2`` reproduces the kind of change, not its wording. Everything else (items,
entries, check sets, prefix, budget) is the same in both formats, so a model's change between
them measures the prompt format alone.

The builder (:mod:`lceval.benchmarks.longgenbench.build`) draws the instructions; this module
only lays them out. This module imports nothing from ``build``, ``score`` or ``report``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from lceval.benchmarks.longgenbench.gold import NUMBER, STOP

PROMPT_FORMATS: tuple[str, ...] = ("p1", "p2")
"""The paper's Prompt-1 (SI, RI, PI; the main format) and Prompt-2 (swapped order, rewritten
generate sentence), Appendix G."""
FORMAT_LABEL: Mapping[str, str] = {"p1": "Prompt - 1", "p2": "Prompt - 2"}
"""Format key -> its name in the paper's Table 7."""
YEAR = 2018
GRID = {"short": 10, "long": 19}
"""Urban planning grid width per version (10x10, 19x19)."""


class Instruction(Protocol):
    """One drawn instruction: its type (single | range | periodic) and its sentence."""

    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...


def numbered(instrs: Sequence[Instruction], fmt: str = "p1") -> str:
    """The numbered requirement lines: SI, RI, PI (``p1``) or PI, RI, SI (``p2``)."""
    singles = [i for i in instrs if i.kind == "single"]
    rng_i = next(i for i in instrs if i.kind == "range")
    per_i = next(i for i in instrs if i.kind == "periodic")
    single = ["Single requirements:"] + [f"  - {i.text}" for i in singles]
    parts = {
        "single": "\n".join(single),
        "range": f"Range requirement: {rng_i.text}",
        "periodic": f"Periodic requirement: {per_i.text}",
    }
    order = ("single", "range", "periodic") if fmt == "p1" else ("periodic", "range", "single")
    return "\n".join(f"{k}) {parts[name]}" for k, name in enumerate(order, start=1))


def _words(scenario: str, version: str) -> int:
    if version == "short" and scenario in ("diary", "menu"):
        return 200
    return 150 if version == "short" else 100


def _rewrite(scenario: str, version: str, slots: Mapping[str, str], words: int) -> str:
    """Prompt-2's generate sentence: the same request as Prompt-1's, reworded."""
    n = NUMBER[(scenario, version)]
    if scenario in ("diary", "menu"):
        unit = "week" if version == "short" else "day"
        what = f"{slots['name']}'s diary" if scenario == "diary" else "the restaurant's menu plan"
        last = "Week 52" if version == "short" else "Day 365"
        first = "Week 1" if version == "short" else "Day 1"
        size = f"{words} to {words + 20} words" if scenario == "menu" else f"{words} words or more"
        return (
            f"Your task: produce {what} for the whole of {YEAR} in one document, from {first} "
            f"(Monday, January 1st) through {last} (ending December 31st). It must hold {n} "
            f"entries, one per {unit}, none skipped or merged, and each entry needs {size}."
        )
    unit = "floor" if scenario == "skyscraper" else "block"
    return (
        f"Your task: document every {unit} in order, {unit.capitalize()} 1 through "
        f"{unit.capitalize()} {n}, {n} entries in all, none skipped or merged, each of "
        f"{words} words or more."
    )


def _parts(scenario: str, version: str, req: str, slots: Mapping[str, str]) -> tuple[str, str, str]:
    """A scenario's head (task and numbered requirements), its separator line and its
    Prompt-1 generate sentence."""
    n = NUMBER[(scenario, version)]
    words = _words(scenario, version)
    if scenario == "diary":
        period = "weekly" if version == "short" else "daily"
        unit = "week" if version == "short" else "day"
        head = (
            f"{slots['name']} is {slots['occupation']} who keeps a {period} diary of "
            f"{slots['pronoun']} life in {YEAR}. The diary should capture:\n{req}\n"
            f"4) {period.capitalize()} updates on the weather, work, family life and other "
            "interesting topics.\n"
        )
        span = (
            "Week 1 starts on Monday, January 1st, and week 52 ends on December 31st."
            if version == "short"
            else "Day 1 is Monday, January 1st, and day 365 is December 31st."
        )
        show = "5) Use '#*#' to separate the entries; each starts with its header, e.g.\n"
        write = (
            f"Write the complete {period} diary of {slots['name']} for {YEAR}. {span} "
            f"Write exactly {n} entries, one for each {unit}, each at least {words} words."
        )
    elif scenario == "menu":
        period = "weekly" if version == "short" else "daily"
        unit = "week" if version == "short" else "day"
        offer = (
            "at least two appetizers, main courses, side dishes, desserts and drinks"
            if version == "short"
            else "a main course, a side dish and a dessert"
        )
        head = (
            f"As Chef {slots['chef']} of a renowned restaurant, design the {period} menus for "
            f"{YEAR}. Follow these guidelines:\n{req}\n"
        )
        span = (
            "Week 1 starts on Monday, January 1st, and week 52 ends on December 31st."
            if version == "short"
            else "Day 1 is Monday, January 1st, and day 365 is December 31st."
        )
        show = "4) Use '#*#' to separate the menus; each starts with its header, e.g.\n"
        write = (
            f"Write the complete {period} menu plan for {YEAR}. {span} "
            f"Write exactly {n} menus, one for each {unit}; each offers {offer}, "
            f"described in {words} to {words + 20} words."
        )
    elif scenario == "skyscraper":
        head = (
            f"Design a skyscraper with {n} floors. Follow the floor assignments below:\n{req}\n"
            "4) Document each floor on its own, with its facilities, architectural features and "
            "unique design elements.\n"
        )
        show = "5) Use '#*#' to separate the floors; each starts with its header, e.g.\n"
        write = (
            f"Write exactly {n} entries, one for each floor from Floor 1 to Floor {n}, each at "
            f"least {words} words."
        )
    else:
        w = GRID[version]
        head = (
            f"Design a city on a {w}x{w} grid of blocks numbered from 1 to {n}, left to right and "
            f"top to bottom. The block at (x, y) is in column x and row y, counted from 0, so the "
            f"block at (0, 0) is Block 1 and the block at (x, y) is Block y*{w} + x + 1. Give the "
            f"city a wide range of facilities. Follow the block assignments below:\n{req}\n"
            "4) Document each block on its own, with its facilities, architectural features and "
            "unique design elements.\n"
        )
        show = "5) Use '#*#' to separate the blocks; each starts with its header, e.g.\n"
        write = (
            f"Write exactly {n} entries, one for each block from Block 1 to Block {n}, each at "
            f"least {words} words."
        )
    return head, show, write


def prompt_text(
    scenario: str,
    version: str,
    instrs: Sequence[Instruction],
    slots: Mapping[str, str],
    *,
    pools: Mapping[str, Any],
    prefix: str,
    fmt: str = "p1",
) -> str:
    """The whole user prompt of one record, ending with ``*** started ***``.

    Args:
        scenario: diary, menu, skyscraper or urban.
        version: short or long.
        instrs: the drawn instructions (5 single, 1 range, 1 periodic).
        slots: scenario slots (name, occupation, pronoun, chef).
        pools: the scenario's entry of ``resources/templates.json`` (its example entries).
        prefix: the answer prefix shown as the example header.
        fmt: ``p1`` (the main format) or ``p2`` (Appendix G's Prompt-2).

    Raises:
        ValueError: an unknown format.
    """
    if fmt not in PROMPT_FORMATS:
        raise ValueError(f"unknown prompt format {fmt!r}; choose {', '.join(PROMPT_FORMATS)}")
    n = NUMBER[(scenario, version)]
    words = _words(scenario, version)
    example = pools["example_short" if version == "short" else "example_long"]
    fin = f"When all {n} entries are written, end the document with '{STOP}'."
    head, show, write = _parts(scenario, version, numbered(instrs, fmt), slots)
    if fmt == "p2":
        write = _rewrite(scenario, version, slots, words)
    body = f"{show}{prefix}\n{example}\n\n{write}"
    tail = " Keep the document clear and continuous, without interruptions or omissions. "
    return f"{head}{body}{tail}{fin}\n*** started ***"
