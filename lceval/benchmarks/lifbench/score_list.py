"""LIFEval rubrics of the List scenario (LSI, LOI, LOE, LMI, LBI, LBE): official
``EvaluateFunc.py`` list rules over an indexed List context."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lceval.benchmarks.lifbench.rubric import (
    _INVALID,
    Rubric,
    _loads,
    _rubric,
    unescape,
    within_edit_distance,
)

# --------------------------------------------------------------------------------------------
# List scenario
# --------------------------------------------------------------------------------------------

_PREFIX = 8


@dataclass(frozen=True)
class ListIndex:
    """The elements of a List context, indexed to find which occur in a (short) output fast.

    Build with :func:`parse_list_context` or :meth:`from_elements`. Looking up an output costs
    O(len(output)), independent of the list length.
    """

    elements: tuple[str, ...]
    """Elements in list order (position ``i`` is element ``i + 1`` of the prompt)."""
    element_set: frozenset[str] = field(repr=False)
    min_len: int
    """Shortest element length in characters (0 for an empty list)."""
    max_len: int
    _by_prefix: Mapping[str, tuple[str, ...]] = field(repr=False)
    _short: tuple[str, ...] = field(repr=False)
    _positions: Mapping[str, tuple[int, ...]] = field(repr=False)

    @classmethod
    def from_elements(cls, elements: Iterable[str]) -> ListIndex:
        """Index ``elements`` (empty strings are kept in ``elements`` but never matched)."""
        elems = tuple(elements)
        positions: dict[str, list[int]] = {}
        for i, e in enumerate(elems):
            if e:
                positions.setdefault(e, []).append(i)
        by_prefix: dict[str, list[str]] = {}
        short = []
        for e in positions:
            if len(e) >= _PREFIX:
                by_prefix.setdefault(e[:_PREFIX], []).append(e)
            else:
                short.append(e)
        lengths = [len(e) for e in elems]
        return cls(
            elements=elems,
            element_set=frozenset(elems),
            min_len=min(lengths, default=0),
            max_len=max(lengths, default=0),
            _by_prefix={k: tuple(v) for k, v in by_prefix.items()},
            _short=tuple(short),
            _positions={k: tuple(v) for k, v in positions.items()},
        )

    def occurrences(self, text: str) -> dict[str, int]:
        """Distinct element -> ``text.count(element)`` (non-overlapping), for elements present."""
        starts: dict[str, list[int]] = {}
        get = self._by_prefix.get
        for i in range(len(text) - _PREFIX + 1):
            cands = get(text[i : i + _PREFIX])
            if cands:
                for e in cands:
                    if text.startswith(e, i):
                        starts.setdefault(e, []).append(i)
        counts = {}
        for e, ps in starts.items():
            n, end = 0, -1
            for p in ps:
                if p >= end:
                    n += 1
                    end = p + len(e)
            counts[e] = n
        for e in self._short:
            c = text.count(e)
            if c:
                counts[e] = c
        return counts

    def count_total(self, text: str) -> int:
        """``sum(text.count(e) for e in elements)`` (the official element count)."""
        return sum(c * len(self._positions[e]) for e, c in self.occurrences(text).items())

    def contained_positions(self, text: str) -> list[int]:
        """Sorted 0-based positions of the elements contained in ``text``."""
        return sorted(p for e in self.occurrences(text) for p in self._positions[e])


def parse_list_context(text: str) -> list[str]:
    """The elements of a rendered List input ``"1. e1\\n2. e2\\n..."``, in order.

    Same result as the official ``parse_oredered_input_list_text`` for elements without newlines:
    numbering must run 1, 2, 3, ...; parsing stops at the first gap.
    """
    elems: list[str] = []
    p = 1
    for line in text.strip().split("\n"):
        tag = f"{p}. "
        if not line.startswith(tag):
            if elems:
                elems[-1] += "\n" + line  # continuation of the previous element
            continue
        elems.append(line[len(tag) :])
        p += 1
    return elems


_INDEX_CACHE: dict[str, ListIndex] = {}


def list_index(text: str) -> ListIndex:
    """A cached :class:`ListIndex` of a List context text (the last 8 texts are kept)."""
    idx = _INDEX_CACHE.get(text)
    if idx is None:
        idx = ListIndex.from_elements(parse_list_context(text))
        if len(_INDEX_CACHE) >= 8:
            _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))
        _INDEX_CACHE[text] = idx
    return idx


def _early_return(parts: dict[str, float], strict: bool) -> Rubric:
    note = "no list element in the output"
    if strict:
        return _rubric(parts, note)
    return _rubric(parts, note + " (official early return: total 0)", total=0.0)


def score_retrieve(output: str, target: str, index: ListIndex, *, strict: bool = False) -> Rubric:
    """LSI / LOI / LOE: one element asked (by position, or the one after/before a given one).

    Official ``judge_label_equal_output``. Items (points): ``format`` (1): 0.2 when the output
    length (characters) lies within the element lengths; then, when exactly one element occurs,
    +0.8 if the output equals an element, else +0.3. ``ori`` (1): 1 if any element occurs (if
    none, the rest is 0 and the official total is 0, see the module notes). ``correct`` (2): 2 if
    ``target`` is contained, 1 if the edit distance to the whole output is <= len(target)/6 + 3.

    Args:
        output: the model's answer text (any string).
        target: the expected element.
        index: the context's list elements.
        strict: fix the official quirks (module docstring).
    """
    out = output.strip()
    parts = {"format": 0.0, "correct": 0.0, "ori": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    if index.min_len <= len(out) <= index.max_len:
        parts["format"] = 0.2
    count = index.count_total(out)
    if count == 0:
        return _early_return(parts, strict)
    parts["ori"] = 1.0
    if count == 1:
        parts["format"] += 0.8 if out in index.element_set else 0.3
    if target in out:
        parts["correct"] = 2.0
    elif within_edit_distance(target, out, len(target) / 6 + 3):
        parts["correct"] = 1.0
    return _rubric(parts, "" if parts["correct"] else "target not in the output")


def score_multi(
    output: str, targets: Sequence[str], index: ListIndex, *, strict: bool = False
) -> Rubric:
    """LMI: several positions asked, answered as a JSON list of elements.

    Official ``judge_labels_equal_outputs``. ``format`` (2): JSON list of strings 2, list with
    other items 1.5, other JSON 0.5; when only the outermost ``[...]`` parses: 1.5 / 1.0 / 0.5.
    ``num`` (3): with n = parsed list length (else the number of element occurrences) and N targets,
    1 if n == N, plus max(0, 1 - |n - N| / N) * 2. ``correct`` (3): share of targets contained
    (after ``unescape``) * 3. ``order`` (2): 2 if the contained targets appear in the asked order,
    0 if not; 1 when at most one is contained (official; strict: 0 when none is).

    Args:
        output: the model's answer.
        targets: the expected elements, in the asked order (non-empty).
        index: the context's list elements.
        strict: fix the official quirks.
    """
    out = output.strip()
    parts = {"format": 0.0, "num": 0.0, "correct": 0.0, "order": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    n_out = -1
    value = _loads(out)
    full = 2.0
    if value is _INVALID:
        value = _loads(out[out.find("[") : out.rfind("]") + 1])
        full = 1.5
    if value is not _INVALID:
        if isinstance(value, list):
            parts["format"] = full if all(isinstance(v, str) for v in value) else full - 0.5
            n_out = len(value)
        else:
            parts["format"] = 0.5
    if n_out == -1:
        n_out = index.count_total(out)
    n = len(targets)
    parts["num"] = (1.0 if n_out == n else 0.0) + max(0.0, 1.0 - abs(n_out - n) / n) * 2.0
    dec = unescape(out, strict=strict)
    matched = [e for e in targets if e in dec]
    parts["correct"] = len(matched) / n * 3.0
    if len(matched) <= 1:
        parts["order"] = 0.0 if (strict and not matched) else 1.0
    else:
        pos = [dec.find(e) for e in matched]
        parts["order"] = 2.0 if all(p <= q for p, q in zip(pos, pos[1:], strict=False)) else 0.0
    return _rubric(parts, f"{len(matched)}/{n} targets found")


def score_blur(
    output: str, anchor: int, bias: int, index: ListIndex, *, strict: bool = False
) -> Rubric:
    """LBI / LBE: any element after (``bias=1``) or before (``bias=-1``) the anchor.

    Official ``judge_list_input_blur_offset_query``. ``format`` (1) and ``ori`` (1) as in
    :func:`score_retrieve` (exactly one distinct position contained counts as one element).
    ``position`` (3): 3 if every contained element lies strictly on the asked side of the anchor,
    1 if they do when the anchor itself is allowed, else 0.

    Args:
        output: the model's answer.
        anchor: 1-based position of the anchor element.
        bias: +1 (after) or -1 (before).
        index: the context's list elements.
        strict: fix the official quirks.
    """
    out = output.strip()
    parts = {"ori": 0.0, "position": 0.0, "format": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    if index.min_len <= len(out) <= index.max_len:
        parts["format"] = 0.2
    found = index.contained_positions(out)
    if not found:
        return _early_return(parts, strict)
    if len(found) == 1:
        parts["format"] += 0.8 if out == index.elements[found[0]] else 0.3
    parts["ori"] = 1.0
    a = anchor - 1
    if bias == 1:
        strict_side, loose_side = all(i > a for i in found), all(i >= a for i in found)
    else:
        strict_side, loose_side = all(i < a for i in found), all(i <= a for i in found)
    parts["position"] = 3.0 if strict_side else (1.0 if loose_side else 0.0)
    return _rubric(parts, "" if strict_side else "an element on the wrong side of the anchor")
