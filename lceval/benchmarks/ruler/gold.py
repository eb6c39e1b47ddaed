"""RULER's answer keys (one frozen Gold dataclass per task family) and the task metadata that the
builder, the scorer and the reporter share.

Sources (NVIDIA/RULER, Apache-2.0; facts only): ``scripts/synthetic.yaml`` (the 13 tasks, kept as
data in ``variants.yaml`` beside this module), ``scripts/data/synthetic/constants.py`` (answer
budgets per family) and ``scripts/eval/synthetic/constants.py`` (metric per family).

Field names of the Gold classes are the keys the builder writes in ``Sample.gold`` (JSON), so run
folders built before these classes existed still load. This module imports nothing from
``build``, ``score`` or ``report``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import yaml

from lceval.core.records import Gold

Metric = Literal["string_match_all", "string_match_part"]
"""RULER's two metrics (official ``scripts/eval/synthetic/constants.py``)."""


@dataclass(frozen=True)
class Family:
    """What every task of one RULER family shares."""

    metric: Metric
    """``string_match_all`` (fraction of references found) or ``string_match_part`` (any)."""
    tokens_to_generate: int
    """Answer budget in new tokens (official ``tokens_to_generate``)."""


FAMILIES: Mapping[str, Family] = {
    "niah": Family("string_match_all", 128),
    "variable_tracking": Family("string_match_all", 30),
    "common_words_extraction": Family("string_match_all", 120),
    "freq_words_extraction": Family("string_match_all", 50),
    "qa": Family("string_match_part", 32),
}
"""Task families (the official ``task`` names): metric and answer budget."""


@dataclass(frozen=True)
class Variant:
    """One named RULER task: a family and the arguments of its builder."""

    family: str
    """A key of :data:`FAMILIES`."""
    args: Mapping[str, Any]
    """The family builder's arguments as written in ``variants.yaml`` (checked by the builder)."""


def _load_variants() -> dict[str, Variant]:
    """Read ``variants.yaml`` (task name -> ``{task: family, args: {...}}``), in file order.

    Raises:
        ValueError: the file does not have that shape or names an unknown family.
    """
    text = (
        resources.files("lceval.benchmarks.ruler")
        .joinpath("variants.yaml")
        .read_text(encoding="utf-8")
    )
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or not data:
        raise ValueError("ruler variants.yaml must map task names to {task, args}")
    out: dict[str, Variant] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict) or set(entry) - {"task", "args"}:
            raise ValueError(f"ruler variants.yaml: {name}: expected keys task and args")
        family, args = entry.get("task"), entry.get("args") or {}
        if family not in FAMILIES or not isinstance(args, dict):
            raise ValueError(f"ruler variants.yaml: {name}: unknown family {family!r}")
        out[str(name)] = Variant(str(family), args)
    return out


VARIANTS: Mapping[str, Variant] = _load_variants()
"""The 13 RULER tasks from ``variants.yaml`` (same names and arguments as the official
``scripts/synthetic.yaml``), in file order."""

TASKS: tuple[str, ...] = tuple(VARIANTS)
"""Task names: niah_single_1..3, niah_multikey_1..3, niah_multivalue, niah_multiquery, vt, cwe,
fwe, qa_1, qa_2."""


@dataclass(frozen=True)
class RulerGold(Gold):
    """What every RULER task's scorer needs; cwe and fwe need nothing more."""

    outputs: tuple[str, ...]
    """The references (official ``outputs``): the needle values (niah), the variables of the
    chain in order (vt), the 10 most common words (cwe), the 3 most frequent coded words (fwe),
    the accepted answers (qa)."""
    metric: Metric
    """The family's metric (:data:`FAMILIES`), stored with the sample."""

    @functools.cached_property
    def lowered(self) -> tuple[str, ...]:
        """``outputs`` lower-cased (both metrics compare case-insensitively); computed once."""
        return tuple(r.lower() for r in self.outputs)

    @functools.cached_property
    def part_keys(self) -> tuple[str, ...]:
        """Names of the per-reference items in a Score's ``parts``: ``"<i>:<reference>"`` cut to
        120 characters (``i`` = index in ``outputs``). Computed once."""
        return tuple(f"{i}:{r}"[:120] for i, r in enumerate(self.outputs))

    @functools.cached_property
    def plain(self) -> bool:
        """True when no lower-cased reference holds a control character (U+0000..U+001F) or
        starts or ends with whitespace.

        Then RULER's post-processing of a prediction (strip; control characters to newlines;
        strip) cannot change whether a reference is contained in it, so the scorer may skip it
        (``lceval.benchmarks.ruler.score``). Computed once.
        """
        return not any(r != r.strip() or any(c < " " for c in r) for r in self.lowered)


@dataclass(frozen=True)
class NiahGold(RulerGold):
    """Needle in a haystack: the queried keys and where their needles sit."""

    keys: tuple[str, ...]
    """The queried keys (``adjective-noun`` words or UUIDs), in the order of the question."""
    depths: tuple[int, ...]
    """Depth of every needle placed (queried or not), ascending, in percent of the haystack
    (0 = start, 100 = end)."""


@dataclass(frozen=True)
class VtGold(RulerGold):
    """Variable tracking: ``outputs`` are the variables of the queried chain, in order."""

    value: str
    """The queried value (a 5-digit number, as text)."""


@dataclass(frozen=True)
class QaGold(RulerGold):
    """QA on SQuAD or HotpotQA documents."""

    dataset: Literal["squad", "hotpotqa"]
    """Source dataset of the question."""
    doc_ids: tuple[int, ...]
    """Indices (0-based, in ``lceval.benchmarks.ruler.common.qa_documents(dataset)``) of the
    question's own documents, all placed in the context."""


GOLD_BY_FAMILY: Mapping[str, type[RulerGold]] = {
    "niah": NiahGold,
    "variable_tracking": VtGold,
    "common_words_extraction": RulerGold,
    "freq_words_extraction": RulerGold,
    "qa": QaGold,
}
"""Gold dataclass per family."""

GOLD: dict[str, type[Gold]] = {task: GOLD_BY_FAMILY[v.family] for task, v in VARIANTS.items()}
"""Gold dataclass per task name (for ``Benchmark.gold``)."""
