"""LongGenBench's answer key (one frozen Gold dataclass, shared by all eight tasks) and the metadata
that the builder, the scorers and the reporter share: task codes, scenario sizes (paper Table 2),
the separator and stop string, the instruction types and the per-check row columns.

Sources (mozhu621/LongGenBench; facts only): ``Dataset/Dataset_{short,long}.json`` (record keys
``checks_once``, ``checks_range``, ``checks_periodic``, ``type``, ``prefix``, ``number``),
``Evalution/inference.py`` (stop string, ``prefix + output`` split on ``#*#``),
``Evalution/eval.py`` (``{type} (\\d+)`` entry regex, one judge question per check) and
``Evalution/results/static.ipynb`` (the Len filter); paper Sec. 2.2-2.4, Table 2.

Field names are the keys the builder writes into ``Sample.gold`` (JSON), declared in the order it
writes them, so ``dataclasses.asdict`` gives the same JSON as before and run folders built before
this class existed still load. This module imports nothing from ``build``, ``score`` or ``report``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from lceval.core.records import Gold

SCENARIOS: tuple[str, ...] = ("diary", "menu", "skyscraper", "urban")
"""Scenario keys (paper Table 2: Diary, Menu, Skyscraper, Urban planning)."""
VERSIONS: tuple[str, ...] = ("short", "long")
"""The short (16K) and long (32K) versions."""
SCENARIO_NAME: Mapping[str, str] = {
    "diary": "Diary",
    "menu": "Menu",
    "skyscraper": "Skyscraper",
    "urban": "Urban planning",
}
"""Scenario key -> its name in the paper (``Sample.scenario``)."""
TASK: Mapping[tuple[str, str], str] = {
    ("diary", "short"): "diary_weekly",
    ("diary", "long"): "diary_daily",
    ("menu", "short"): "menu_weekly",
    ("menu", "long"): "menu_daily",
    ("skyscraper", "short"): "skyscraper_100",
    ("skyscraper", "long"): "skyscraper_300",
    ("urban", "short"): "urban_10x10",
    ("urban", "long"): "urban_19x19",
}
"""(scenario, version) -> task code."""
TASKS: tuple[str, ...] = tuple(TASK[(s, v)] for v in VERSIONS for s in SCENARIOS)
"""The eight task codes: the four scenarios of the short version, then of the long version."""
UNIT: Mapping[tuple[str, str], str] = {
    ("diary", "short"): "Week",
    ("diary", "long"): "Day",
    ("menu", "short"): "Menu Week",
    ("menu", "long"): "Menu Day",
    ("skyscraper", "short"): "Floor",
    ("skyscraper", "long"): "Floor",
    ("urban", "short"): "Block",
    ("urban", "long"): "Block",
}
"""(scenario, version) -> the unit word of entry headers (official ``type``)."""
NUMBER: Mapping[tuple[str, str], int] = {
    ("diary", "short"): 52,
    ("diary", "long"): 365,
    ("menu", "short"): 52,
    ("menu", "long"): 365,
    ("skyscraper", "short"): 100,
    ("skyscraper", "long"): 300,
    ("urban", "short"): 100,
    ("urban", "long"): 361,
}
"""(scenario, version) -> entries required (official ``number``; paper Table 2)."""
MAX_NEW_TOKENS: Mapping[str, int] = {"short": 16384, "long": 32768}
"""Generation budget per version in tokens (paper Sec. 3.1)."""
LENGTH_LABEL: Mapping[str, str] = {"short": "16K", "long": "32K"}
"""Version -> the paper's length label."""

SEPARATOR = "#*#"
"""Entry separator of the outputs (official ``process_output``: ``output.split('#*#')``)."""
STOP = "*** finished"
"""Stop string (official ``inference.py``: ``stop='*** finished'``)."""

KINDS: tuple[str, ...] = ("single", "range", "periodic")
"""Instruction types (paper Sec. 2.3: single SI, range RI, periodic PI), in check order."""
GOLD_KEYS: Mapping[str, str] = {
    "single": "checks_once",
    "range": "checks_range",
    "periodic": "checks_periodic",
}
"""Instruction type -> the gold field (and official record key) holding its checks."""

LEN_MIN_BLOCKS = 40
"""Len filter: more than 40 blocks (official ``static.ipynb``)."""
LEN_MIN_WORDS = 2000
"""Len filter: more than 2,000 words (official ``static.ipynb``)."""

CHECK_COLUMNS: tuple[str, ...] = (
    "sample_id",
    "model",
    "version",
    "scenario",
    "task",
    "kind",
    "entry",
    "description",
    "judged",
    "yes",
    "block_index",
    "word_offset",
    "yes_2",
    "judge",
    "judge_2",
)
"""Columns of the per-check file ``longgenbench_checks.parquet``: ``sample_id`` and ``model`` (added
by the pipeline), then the scorer's rows (``Judgement.details``): the sample's version, scenario and
task; the check's kind, entry id and description; ``judged`` (the entry exists), ``yes`` (the
judge's verdict), ``block_index`` (index in ``output.split("#*#")``), ``word_offset`` (words of
the blocks before it), ``yes_2`` (the second judge's verdict or None), ``judge`` and ``judge_2``
(their names)."""


@dataclass(frozen=True)
class Check:
    """One (entry, description) requirement of a sample's check set."""

    kind: str
    """``single``, ``range`` or ``periodic``."""
    entry: int
    """Entry id (week, day, floor or block number, from 1)."""
    description: str
    """What the entry's block must include (the official check text, e.g. ``"small cinema"``)."""


@dataclass(frozen=True)
class LongGenBenchGold(Gold):
    """The answer key of one LongGenBench prompt (every task has this shape).

    Check sets map an entry id, written as a decimal string as in the official files, to the
    description its block must include; a tuple of descriptions puts several requirements on
    one entry (paper Appendix E.2), each a check of its own. The same entry may carry checks of
    several types, as in the official data; each type's mapping is scored separately.

    Raises (from ``from_dict`` or the constructor):
        ValueError: an entry id is not a decimal integer, ``type`` is empty or ``number`` < 1.
    """

    checks_once: Mapping[str, str | tuple[str, ...]]
    """Single instructions (SI): entry id -> description, one entry each (5 in lceval's data)."""
    checks_range: Mapping[str, str | tuple[str, ...]]
    """The range instruction (RI): every entry of the range -> the same description."""
    checks_periodic: Mapping[str, str | tuple[str, ...]]
    """The periodic instruction (PI), expanded to every entry it covers (``start, start + k,
    ...`` up to ``number``) -> the same description."""
    type: str
    """Unit word of entry headers, matched by ``{type} (\\d+)``: ``Week``, ``Day``, ``Menu Week``,
    ``Menu Day``, ``Floor`` or ``Block``."""
    number: int
    """Entries required (52, 365, 100, 300, 100 or 361): the denominator of CR."""
    prefix: str
    """The answer prefix (e.g. ``"#*# Floor 1:"``); scorers read ``prefix + generation``
    (official ``inference.py``)."""

    def __post_init__(self) -> None:
        for key in GOLD_KEYS.values():
            for entry in getattr(self, key):
                try:
                    int(entry)
                except ValueError:
                    raise ValueError(f"{key}: entry id {entry!r} is not an integer") from None
        if not self.type:
            raise ValueError("type: the unit word is empty")
        if self.number < 1:
            raise ValueError(f"number: must be at least 1, got {self.number}")

    @cached_property
    def checks(self) -> tuple[Check, ...]:
        """Every check in gold order: single, then range, then periodic (each in key order)."""
        out: list[Check] = []
        for kind in KINDS:
            for key, desc in getattr(self, GOLD_KEYS[kind]).items():
                entry = int(key)
                descs = (desc,) if isinstance(desc, str) else desc
                out.extend(Check(kind, entry, d) for d in descs)
        return tuple(out)


GOLD: Mapping[str, type[Gold]] = dict.fromkeys(TASKS, LongGenBenchGold)
"""Task code -> its Gold dataclass (one shape for all eight tasks)."""
