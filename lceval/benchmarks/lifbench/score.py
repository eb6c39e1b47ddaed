"""LIFEval: the Automated Rubric-based Scoring (ARS) of LIFBench's eleven tasks.

Reproduces LIFBench (Wu et al., 2024), Sec. 4.1 (Eq. 2), and the item rules of the official
MIT-licensed code (SheldonWu0327/LIFBench-2024, ``evaluation/EvaluateFunc.py``; points from
``evaluation/ARS_Scores.py``). Facts are carried over; the code is lceval's own.

Layout, after IFEval's checkers and lm-evaluation-harness's ``metrics.py``:

- one pure rubric function per task family, taking explicit arguments (the output text, the
  targets, the list elements ...) and returning a :class:`Rubric` whose ``parts`` hold each item's
  score in the item's own points (``0 <= parts[item] <= RUBRIC[task][item]``);
- :func:`score_lifbench`, the thin adapter reading the sample's typed gold
  (:mod:`lceval.benchmarks.lifbench.gold`, parsed once when samples load) and its Context,
  returning a :class:`~lceval.records.Judgement` with ``value = total / task points`` in 0..1.

Official quirks reproduced by default (``strict=False``), so the paper's numbers come back:

- List tasks (LSI, LOI, LOE, LBI, LBE): when the output holds no list element the official
  function returns early with ``total_score = 0`` although ``format`` may already hold 0.2; the
  default keeps ``parts["format"] = 0.2`` (it counts in IFP, as in the official item means) and
  sets the total, hence ``Judgement.value``, to 0. Strict: total = sum of parts.
- OR ``ori``: +1 for every non-empty output (``hit_count >= 0`` is always true). Strict: +1 only
  when some key sentence is repeated.
- OE ``order``: the running position never advances, so ``order`` is 4 once any key sentence
  appears. Strict: the share of found key sentences (in tag-id order) whose output position is not
  before the previous one's.
- LMI, OE, MF decode the output with ``unicode_escape`` (turning non-ASCII characters into
  mojibake). Strict: escapes are decoded but non-ASCII characters are kept.

Places where the official code raises (a crash, not a score) are handled here without raising and
documented at each rubric function; the only such change to a score is MF ``ori``'s second half,
capped at its 3 points (the official value can exceed it when inner lists differ in length).

Speed (``bench/bench_lifbench_scoring.py`` compares with the official code on the same pairs):
no per-call work grows with the context. A List context is indexed once (:func:`list_index`);
MF's quote-free prompt is built once per prompt and its substring tests over the documents and the
prompt are memoised per text (every model's answer to a sample asks about the same ids); MB counts
its ``doc{k}`` keys with one regular-expression pass per digit (:func:`count_doc_keys`); texts that
cannot start a JSON value are rejected without building a ``JSONDecodeError``. The caches are
bounded (32 texts each).
"""

from __future__ import annotations

import ast
import bisect
import functools
import json
import math
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from lceval.benchmarks.lifbench.gold import (
    GOLD,
    ONEDOC_TAGS,
    RUBRIC,
    TASK_POINTS,
    TASKS,
    BatchLabelGold,
    ExtractGold,
    FindDupGold,
    KeySentences,
    ListBlurGold,
    ListItemGold,
    ListMultiGold,
    QaGold,
    RepeatGold,
)
from lceval.records import Context, Gold, Judgement, Response, Sample

_MAX_LITERAL_CHARS = 100_000
"""Longest bracket group MF parses as a Python literal (longer ones count as unparsable)."""


class Rubric(NamedTuple):
    """The rubric items of one response.

    ``parts`` maps item -> score in the item's points (floats); ``total`` is the task score in
    points (the sum of ``parts`` except for the documented official early-return quirk); ``note``
    says why a score is low or special ("" when nothing needs saying).
    """

    parts: dict[str, float]
    total: float
    note: str = ""


def _rubric(parts: dict[str, float], note: str = "", total: float | None = None) -> Rubric:
    return Rubric(parts, sum(parts.values()) if total is None else total, note)


# --------------------------------------------------------------------------------------------
# generic helpers
# --------------------------------------------------------------------------------------------

_INVALID = object()


_JSON_START = re.compile(r'[ \t\n\r]*(?:[\[{"\-0-9]|true|false|null|NaN|Infinity)')
"""What a JSON text can start with (Python's ``json`` also reads NaN and Infinity)."""
_DECODE = json.JSONDecoder().decode


def _loads(text: str) -> Any:
    """``json.loads`` or ``_INVALID`` (also for nesting too deep to parse).

    Texts that cannot start a JSON value are rejected before parsing (same result, no exception
    to build).
    """
    if not _JSON_START.match(text):
        return _INVALID
    try:
        return _DECODE(text)
    except (ValueError, RecursionError):
        return _INVALID


def _literal(text: str) -> Any:
    """A bounded ``ast.literal_eval`` (MF's official ``eval`` of ``[[...]]`` groups) or _INVALID.

    Only Python literals are read (never code); groups longer than ``_MAX_LITERAL_CHARS``
    characters count as unparsable.
    """
    if len(text) > _MAX_LITERAL_CHARS:
        return _INVALID
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _INVALID


def unescape(text: str, *, strict: bool = False) -> str:
    """Decode backslash escapes in a model output, as the official scorers do before matching.

    Official (``strict=False``): ``text.encode('utf-8').decode('unicode_escape')``, which turns
    non-ASCII characters into mojibake; on a decoding error the official OE retries without the
    last character; if that fails too (where the official code raises) the text is returned as is.
    Lone surrogates (``"x\\ud800"``, where the official ``encode`` raises) are encoded with
    ``surrogatepass``, which leaves every other text as the official code reads it.
    Strict: escapes are decoded and non-ASCII characters kept.

    Never raises.
    """
    if "\\" not in text:
        if strict or text.isascii():
            return text
        return text.encode("utf-8", "surrogatepass").decode("latin-1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "invalid escape sequence"
        if strict:
            try:
                return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
            except UnicodeDecodeError:
                return text
        for candidate in (text, text[:-1]):
            try:
                return candidate.encode("utf-8", "surrogatepass").decode("unicode_escape")
            except UnicodeDecodeError:
                continue
    return text


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute; unit costs) between ``a`` and ``b``.

    Bit-parallel (Myers 1999 / Hyyrö 2001) with Python ints: O(len(b)) big-int operations, so
    sentence-length strings cost microseconds. Same value as the official ``min_edi_dis``.
    """
    if len(a) > len(b):
        a, b = b, a
    m = len(a)
    if m == 0:
        return len(b)
    peq: dict[str, int] = {}
    for i, ch in enumerate(a):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    full = (1 << m) - 1
    last = 1 << (m - 1)
    vp, vn, dist = full, 0, m
    for ch in b:
        eq = peq.get(ch, 0)
        x = eq | vn
        d0 = ((((x & vp) + vp) & full) ^ vp) | x
        hp = (vn | ~(d0 | vp)) & full
        hn = vp & d0
        if hp & last:
            dist += 1
        elif hn & last:
            dist -= 1
        hp = ((hp << 1) | 1) & full
        hn = (hn << 1) & full
        vp = (hn | ~(d0 | hp)) & full
        vn = hp & d0
    return dist


def within_edit_distance(a: str, b: str, k: float) -> bool:
    """True when ``levenshtein(a, b) <= k`` (cheap length test first)."""
    if abs(len(a) - len(b)) > k:
        return False
    return levenshtein(a, b) <= k


def brace_spans(text: str) -> list[str]:
    r"""``re.findall(r'\{[^\]]+\}', text)`` in linear time (the official MB pattern).

    Between two ``]`` there is at most one match: from the first ``{`` to the last ``}``, when
    at least one character lies between them.
    """
    out = []
    for seg in text.split("]"):
        i = seg.find("{")
        if i == -1:
            continue
        j = seg.rfind("}")
        if j >= i + 2:
            out.append(seg[i : j + 1])
    return out


def double_bracket_spans(text: str) -> list[str]:
    r"""``re.findall(r'\[\[.*?\]\]', text)`` in linear time (the official MF pattern)."""
    out = []
    for line in text.split("\n"):
        pos = 0
        while True:
            i = line.find("[[", pos)
            if i == -1:
                break
            j = line.find("]]", i + 2)
            if j == -1:
                break
            out.append(line[i : j + 2])
            pos = j + 2
    return out


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


# --------------------------------------------------------------------------------------------
# MultiDoc scenario
# --------------------------------------------------------------------------------------------


def score_batch_label(output: str, labels: Sequence[str], candidates: Sequence[str]) -> Rubric:
    """MB: label every document; answer ``{"doc1": label, ...}``.

    Official ``judge_multidoc_batch_label``. ``format`` (5): +2 if the whole output parses as JSON,
    else +1 if the longest ``{...}`` span does; +1 if the parsed value is a non-empty dict;
    + (share of ``doc1 .. docN`` substrings present) * 2. ``num_doc`` (3): n = length of the parsed
    dict/list, else the count of ``"doc"``; max(0, 1 - |n - N| / N) * 2.5, +0.5 if n == N. On the
    first ``{...}`` span (spans in text order when the output parsed, longest first otherwise) with
    N comma-separated parts: ``candi_ori`` (3) = share of parts holding any candidate * 3;
    ``logit_correct`` (3) = share of parts holding the gold label of their document * 3.

    Args:
        output: the model's answer.
        labels: gold label per document, in document order (N = len(labels) > 0).
        candidates: the candidate labels shown in the instruction.
    """
    out = output.strip()
    n = len(labels)
    parts = {"candi_ori": 0.0, "logit_correct": 0.0, "num_doc": 0.0, "format": 0.0}
    spans = brace_spans(out)
    value = _loads(out)
    if value is not _INVALID:
        parts["format"] += 2.0
    else:
        spans = sorted(spans, key=len, reverse=True)
        value = _loads(spans[0]) if spans else _INVALID
        if value is not _INVALID:
            parts["format"] += 1.0
    if value is not _INVALID and value and isinstance(value, dict):
        parts["format"] += 1.0
    if value is not _INVALID and value and isinstance(value, dict | list):
        n_out = len(value)
    else:
        n_out = out.count("doc")
    parts["num_doc"] = max(0.0, 1.0 - abs(n_out - n) / n) * 2.5 + (0.5 if n_out == n else 0.0)
    parts["format"] += count_doc_keys(out, n) / n * 2.0
    note = "no {...} span with one part per document"
    for span in spans:
        segs = span.split(",")
        if len(segs) != n:
            continue
        cand = n - list(map(_any_of(tuple(candidates)), segs)).count(None)
        rule = sum(map(str.__contains__, segs, labels))
        parts["candi_ori"] = cand / n * 3.0
        parts["logit_correct"] = rule / n * 3.0
        note = f"{rule}/{n} labels right"
        break
    return _rubric(parts, note)


_DOC_KEY = [re.compile(f"doc([1-9][0-9]{{{j - 1}}})") for j in range(1, 8)]
"""``_DOC_KEY[j - 1]`` finds ``"doc"`` followed by (at least) ``j`` digits, the first non-zero."""


def count_doc_keys(text: str, n: int) -> int:
    """``sum(1 for k in range(1, n + 1) if f"doc{k}" in text)`` (MB's key count), fast.

    ``"doc{k}"`` occurs iff some ``"doc"`` is followed by a digit run starting with the digits of
    ``k``; so the keys present with ``j`` digits are the distinct ``j``-digit prefixes of those
    runs: one regular-expression pass per digit count of ``n`` instead of ``n`` substring scans.

    Args:
        text: the output (characters).
        n: the number of documents.
    """
    if n < 1 or "doc" not in text:
        return 0
    width = len(str(n))
    if width > len(_DOC_KEY):
        return sum(1 for k in range(1, n + 1) if f"doc{k}" in text)
    total = 0
    for j in range(1, width):
        total += len(set(_DOC_KEY[j - 1].findall(text)))  # every j-digit number is < n
    top = sorted(set(_DOC_KEY[width - 1].findall(text)))
    return total + bisect.bisect_right(top, str(n))


@functools.lru_cache(maxsize=64)
def _any_of(words: tuple[str, ...]) -> Callable[[str], Any]:
    """``search(text)``: a match (truthy) iff some word of ``words`` is a substring of text."""
    if not words:
        return lambda text: None
    return re.compile("|".join(map(re.escape, words))).search


def _true_pairs(pairs: list[tuple[int, int]]) -> int:
    """Ordered pairs (i, j) agreeing on same-vs-different group in gold and output."""
    p = len(pairs)
    same_both = sum(c * c for c in Counter(pairs).values())
    same_gold = sum(c * c for c in Counter(g for g, _ in pairs).values())
    same_out = sum(c * c for c in Counter(o for _, o in pairs).values())
    diff_both = p * p - same_gold - same_out + same_both
    return same_both + diff_both


def score_find_dup(
    output: str,
    dup_infos: Sequence[Sequence[Mapping[str, Any]]],
    info_keys: Sequence[str],
    documents: str,
    prompt: str,
    *,
    strict: bool = False,
) -> Rubric:
    """MF: list the groups of duplicated documents, one ``[[...], [...]]`` line per group.

    Official ``judge_multidoc_find_dup_text``. ``format`` (5): +0.5 brackets present, +0.5 output
    starts with ``[`` and ends with ``]``, +1 if the number of ``[[...]]`` groups equals the number
    of lines, then over the groups (each sliced by the output's first ``[`` / last ``]`` offsets, an
    official quirk): +1 if any parses as JSON, +1 if none fails to, +1 if every parsed one is a list
    of lists. ``num_text`` (5): 1 if the group count equals the gold count G, + max(0, 1 - |diff| /
    (G + 2)) * 4. ``ori`` (6): share of the parsed values found in ``documents`` (or null) * 3, plus
    the share of values of the Python-literal groups found in ``prompt`` * 3 (capped at 3; the
    official can exceed it). ``correct`` (4): share of gold field values present in the output * 3,
    plus the share of ordered gold document pairs whose same/different-group relation the output
    keeps * 1.

    Where the official code raises (a group whose items are not all lists), the group is skipped.
    Groups are read with a bounded ``ast.literal_eval`` where the official uses ``eval``.

    Args:
        output: the model's answer.
        dup_infos: gold groups, each a list of ``{info_key: value}`` per document.
        info_keys: the fields asked, in order.
        documents: the context text (the documents as shown).
        prompt: the whole user turn (description, documents and instruction).
        strict: fix the official quirks (here: the ``unescape`` of the output).
    """
    out = output.strip()
    parts = {"correct": 0.0, "num_text": 0.0, "ori": 0.0, "format": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    if "[" in out and "]" in out:
        parts["format"] += 0.5
    l_idx, r_idx = out.find("["), out.rfind("]")
    if l_idx == 0 and r_idx == len(out) - 1:
        parts["format"] += 0.5
    groups = double_bracket_spans(out)
    g = len(dup_infos)
    parts["num_text"] = (1.0 if len(groups) == g else 0.0) + max(
        0.0, 1.0 - abs(len(groups) - g) / (g + 2)
    ) * 4.0
    if len(groups) == len(out.split("\n")):
        parts["format"] += 1.0
    any_parsed, all_parsed, all_lists = False, True, True
    parsed: list[list[Any]] = []
    for grp in groups:
        value = _loads(grp[l_idx : r_idx + 1])
        if value is _INVALID:
            all_parsed = False
            continue
        any_parsed = True
        if isinstance(value, list) and all(isinstance(v, list) for v in value):
            parsed.append(value)
        else:
            all_lists = False
    parts["format"] += float(any_parsed) + float(all_parsed) + float(all_lists)
    total = found = 0
    docs = _haystack(documents)
    for grp_value in parsed:
        for item in grp_value:
            total += len(item)
            found += sum(1 for e in item if e is None or str(e) in docs)
    parts["ori"] = found / total * 3.0 if total else 0.0

    prompt_nq = _haystack(_without_quotes(prompt))
    out_none = out.replace("null", "None")
    contents = [str(v) for grp_gold in dup_infos for d in grp_gold for v in d.values()]
    dec = unescape(out_none, strict=strict)
    present = sum(1 for c in contents if c in dec)
    parts["correct"] = present * 3.0 / len(contents) if contents else 0.0

    flat = out_none.replace("\n", ",").replace('\\"', "").replace("\\", ",").strip()
    gold_map: dict[tuple[str, ...], int] = {}
    for gi, grp_gold in enumerate(dup_infos):
        for d in grp_gold:
            gold_map[tuple(str(d.get(k)).replace('"', "") for k in info_keys)] = gi
    out_map: dict[tuple[str, ...], int] = {}
    t = n_items = in_prompt = 0
    for grp in double_bracket_spans(flat):
        value = _literal(grp.replace(',"', ""))
        if value is _INVALID or not (
            isinstance(value, list) and value and all(isinstance(v, list) for v in value)
        ):
            continue
        n_items += len(value) * len(value[0])
        for item in value:
            vals = tuple(str(v) for v in item)
            in_prompt += sum(1 for v in vals if v in prompt_nq)
            out_map[vals] = t
        t += 1
    if n_items:
        parts["ori"] += min(3.0, in_prompt * 3.0 / n_items)
    pairs = [(gi, out_map[key]) for key, gi in gold_map.items() if key in out_map]
    if gold_map:
        parts["correct"] += _true_pairs(pairs) / len(gold_map) ** 2
    return _rubric(parts, f"{len(groups)} groups found, {g} expected")


# --------------------------------------------------------------------------------------------
# OneDoc scenario
# --------------------------------------------------------------------------------------------


def score_repeat(
    output: str, key_sentences: KeySentences, num: int, sep: str, *, strict: bool = False
) -> Rubric:
    """OR: repeat ``num`` key sentences, one per line, each followed by ``sep`` and its type.

    Official ``judge_onedoc_repeat``. With hits = key sentences (true or fake) contained in the
    output, fakes = the fake ones among them, lines = non-empty lines:

    - ``ori`` (2): +1 always (official quirk; strict: only if hits > 0), +1 if any type name
      appears.
    - ``hit`` (2): min(1, (hits - 0.5 * fakes) / num) * 2.
    - ``format`` (3): +0.5 if a newline is present (or num == 1), +0.5 if ``sep`` is present,
      + min(1, lines split by ``sep`` into exactly two / max(lines, num)) * 2 (0 without ``sep``).
    - ``num`` (4): +1 each for ``sep`` count == num, line count == num, hits == num; plus the share
      of agreeing pairs among those three counts.
    - ``correct`` (3): share of lines whose sentence part is within edit distance
      len(s) // 6 + 3 of a key sentence s of a type named after ``sep``, * 3.

    Args:
        output: the model's answer.
        key_sentences: all key sentences of the context (type -> sentences, true and fake).
        num: how many sentences were asked (>= 1).
        sep: the separator asked (non-empty).
        strict: fix the official quirks.
    """
    out = output.strip()
    parts = {"format": 0.0, "ori": 0.0, "hit": 0.0, "num": 0.0, "correct": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    hits = fakes = 0
    by_tag: dict[str, list[str]] = {}
    for tag, sentences in key_sentences.items():
        texts = by_tag.setdefault(tag, [])
        for s in sentences:
            text = s.text
            if text and text in out:
                hits += 1
                fakes += 0 if s.is_true else 1
                if "\n" in text:
                    pure = text.replace("\n", "")
                    out = out.replace(text, pure)
                    text = pure
            texts.append(text)
    if hits > 0 or not strict:
        parts["ori"] += 1.0
    if any(tag in out for tag in ONEDOC_TAGS):
        parts["ori"] += 1.0
    parts["hit"] = min(1.0, (hits - 0.5 * fakes) / num) * 2.0
    if num == 1 or "\n" in out:
        parts["format"] += 0.5
    has_sep = sep in out
    if has_sep:
        parts["format"] += 0.5
    lines = [line for line in out.split("\n") if line]
    n_sep = out.count(sep)
    parts["num"] = (
        float(n_sep == num)
        + float(len(lines) == num)
        + float(hits == num)
        + (int(n_sep == len(lines)) + int(n_sep == hits) + int(hits == len(lines))) / 3
    )
    if has_sep:
        two = sum(1 for line in lines if len(line.split(sep)) == 2)
        parts["format"] += min(1.0, two / max(len(lines), num)) * 2.0
    right = 0
    for line in lines:
        if sep in line:
            sentence, type_part = line.split(sep, 1)
        else:
            sentence = type_part = line.strip()
        cands = [t for tag in ONEDOC_TAGS if tag in type_part for t in by_tag.get(tag, ())]
        if any(within_edit_distance(sentence, c, len(c) // 6 + 3) for c in cands):
            right += 1
    parts["correct"] = right / len(lines) * 3.0 if lines else 0.0
    return _rubric(parts, f"{hits} key sentences repeated ({fakes} fake), {num} asked")


def score_qa(output: str, options: Sequence[str], is_key: bool, is_true_key: bool) -> Rubric:
    """OQ: is the given sentence a (true) key sentence? Answer with one of two options.

    Official ``judge_onedoc_qa``; ``options[0]`` is the "yes" answer. ``format`` (2): +1 if the
    output length equals an option's length, else +0.5 if longer than the longest option + 3;
    +1 if exactly one option occurs, +0.5 if both do. ``correct`` (3): both options 0.5, neither
    0; for a true key sentence 3 if the answer is yes else 0.1; otherwise 3 for no, 2 for yes.

    Args:
        output: the model's answer.
        options: ``[yes, no]`` option strings (non-empty).
        is_key: the sentence is tagged (true or fake).
        is_true_key: the sentence is a true key sentence.
    """
    out = output.strip()
    yes_opt, no_opt = options[0], options[1]
    n, n_yes, n_no = len(out), len(yes_opt), len(no_opt)
    fmt = correct = 0.0
    if n == n_yes or n == n_no:
        fmt = 1.0
    elif n > max(n_yes, n_no) + 3:
        fmt = 0.5
    yes, no = yes_opt in out, no_opt in out
    if yes and no:
        fmt += 0.5
        correct = 0.5
        note = "both options given"
    elif yes or no:
        fmt += 1.0
        if is_true_key:
            correct = 0.1 if yes != is_key else 3.0
        else:
            correct = 2.0 if yes else 3.0
        note = "answered yes" if yes else "answered no"
    else:
        note = "no option in the output"
    return Rubric({"correct": correct, "format": fmt}, correct + fmt, note)


def score_extract(
    output: str,
    tag: str,
    targets: Sequence[str],
    fakes: Sequence[str],
    key_texts: Sequence[str],
    *,
    strict: bool = False,
) -> Rubric:
    """OE: extract every key sentence of one type as a JSON list, in id order.

    Official ``judge_onedoc_extract``. ``format`` (4): JSON list of strings 4 (``[]`` counts for
    ``|Summary|``), other list 3, other JSON 1; when only the outermost ``[...]`` parses: 3 / 2 /
    1. A ``|Summary|`` question answered exactly ``[]`` scores full marks on every item. With
    found = key sentences of any type contained (after ``unescape``): ``order`` (4): 4 once found
    > 0 (official quirk; strict: share in id order not placed before the previous one, * 4);
    ``ori`` (2): 2 if found > 0; ``correct`` (4): true targets found / max(found, parsed list
    length, number of targets) * 3.5, +0.5 if no fake of the type is contained.

    Args:
        output: the model's answer.
        tag: the asked type, e.g. ``"#Topic#"``.
        targets: the true sentences of that type.
        fakes: the fake sentences of that type (0 or 1 officially).
        key_texts: every key sentence of the context (all types; official label order, or id order
            for the strict order item).
        strict: fix the official quirks.
    """
    out = output.strip()
    parts = {"format": 0.0, "correct": 0.0, "order": 0.0, "ori": 0.0}
    if not out:
        return _rubric(parts, "empty output")
    n_out = 0
    value = _loads(out)
    full = 4.0
    if value is _INVALID:
        value = _loads(out[out.find("[") : out.rfind("]") + 1])
        full = 3.0
    if value is not _INVALID:
        if isinstance(value, list):
            ok = all(isinstance(v, str) for v in value) or (tag == "|Summary|" and value == [])
            parts["format"] = full if ok else full - 1.0
            n_out = len(value)
        else:
            parts["format"] = 1.0
    if tag == "|Summary|" and out == "[]":
        return _rubric(dict(RUBRIC["OE"]), "no |Summary| sentences: [] is right")
    dec = unescape(out, strict=strict)
    texts = _nonempty(key_texts)
    if strict:
        positions = [p for p in map(dec.find, texts) if p != -1]
        found = len(positions)
    else:
        found = sum(map(dec.__contains__, texts))
    if found:
        if strict:
            ok_pos, last = 0, -1
            for p in positions:
                ok_pos += p >= last
                last = max(last, p)
            parts["order"] = ok_pos / found * 4.0
        else:
            parts["order"] = 4.0
        parts["ori"] = 2.0
    contains = dec.__contains__
    hits = sum(map(contains, _nonempty(targets)))
    den = max(found, n_out, len(targets))
    parts["correct"] = hits / den * 3.5 if den else 0.0
    if not any(map(contains, _nonempty(fakes))):
        parts["correct"] += 0.5
    return _rubric(parts, f"{hits}/{len(targets)} targets found")


def _nonempty(texts: Sequence[str]) -> Sequence[str]:
    """``texts`` without empty strings (an empty sentence is in every output; rubrics skip it)."""
    return [t for t in texts if t] if "" in texts else texts


# --------------------------------------------------------------------------------------------
# the adapter
# --------------------------------------------------------------------------------------------


class _CannotScore(Exception):
    """The sample lacks what a rubric needs (its context, a duplicate group); a NaN score."""


def _list_ctx(context: Context | None) -> ListIndex:
    if context is None:
        raise _CannotScore("the List scorer needs the sample's context (the list elements)")
    idx = list_index(context.text)
    if not idx.elements:
        raise _CannotScore(f"context {context.id!r} holds no numbered list")
    return idx


def _prompt(sample: Sample, context: Context) -> str:
    """The sample's user turn (cached: MF reads it for every response to the sample)."""
    return _joined(sample.joiner, sample.description, context.text, sample.instruction)


@functools.lru_cache(maxsize=32)
def _joined(joiner: str, *pieces: str) -> str:
    return joiner.join(p for p in pieces if p)


class _Haystack:
    """A long text (MF's documents, its prompt) whose substring tests are memoised: the responses
    of every model to a sample ask about the same ids and titles, each test a scan of the text."""

    __slots__ = ("_seen", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._seen: dict[str, bool] = {}

    def __contains__(self, needle: str) -> bool:
        hit = self._seen.get(needle)
        if hit is None:
            hit = needle in self.text
            if len(needle) <= 256:
                if len(self._seen) >= 65_536:
                    self._seen.clear()
                self._seen[needle] = hit
        return hit


@functools.lru_cache(maxsize=32)
def _haystack(text: str) -> _Haystack:
    return _Haystack(text)


@functools.lru_cache(maxsize=32)
def _without_quotes(text: str) -> str:
    """``text`` without ``"`` (the official MF ``llm_prompt.replace('"', '')``), cached per text."""
    return text.replace('"', "")


def _item(s: Sample, g: ListItemGold, text: str, c: Context | None, strict: bool) -> Rubric:
    return score_retrieve(text, g.target, _list_ctx(c), strict=strict)


def _multi(s: Sample, g: ListMultiGold, text: str, c: Context | None, strict: bool) -> Rubric:
    return score_multi(text, g.elements, _list_ctx(c), strict=strict)


def _blur(s: Sample, g: ListBlurGold, text: str, c: Context | None, strict: bool) -> Rubric:
    return score_blur(text, g.id, g.bias, _list_ctx(c), strict=strict)


def _batch(s: Sample, g: BatchLabelGold, text: str, c: Context | None, strict: bool) -> Rubric:
    return score_batch_label(text, g.labels, g.candidates)


def _dup(s: Sample, g: FindDupGold, text: str, c: Context | None, strict: bool) -> Rubric:
    if c is None:
        raise _CannotScore("the MF scorer needs the sample's context (the documents)")
    if not g.dup_infos:
        raise _CannotScore("gold['dup_infos'] is empty")
    return score_find_dup(text, g.dup_infos, g.info_keys, c.text, _prompt(s, c), strict=strict)


def _repeat(s: Sample, g: RepeatGold, text: str, c: Context | None, strict: bool) -> Rubric:
    return score_repeat(text, g.key_sentences, g.num, g.sep, strict=strict)


def _qa(s: Sample, g: QaGold, text: str, c: Context | None, strict: bool) -> Rubric:
    return score_qa(text, g.options, g.is_key, g.is_true_key)


def _extract(s: Sample, g: ExtractGold, text: str, c: Context | None, strict: bool) -> Rubric:
    texts = g.key_texts_by_order if strict else g.key_texts
    return score_extract(text, g.tag, g.targets, g.fakes, texts, strict=strict)


_Adapter = Callable[[Sample, Any, str, Context | None, bool], Rubric]

_ADAPTERS: dict[type[Gold], _Adapter] = {
    ListItemGold: _item,
    ListMultiGold: _multi,
    ListBlurGold: _blur,
    BatchLabelGold: _batch,
    FindDupGold: _dup,
    RepeatGold: _repeat,
    QaGold: _qa,
    ExtractGold: _extract,
}
"""Gold type -> the adapter reading its fields into the rubric function."""

_BY_TASK: dict[str, tuple[type[Gold], _Adapter, Mapping[str, float], float]] = {
    task: (GOLD[task], _ADAPTERS[GOLD[task]], RUBRIC[task], TASK_POINTS[task]) for task in TASKS
}
"""Task -> (its Gold type, its adapter, its rubric points, its total points)."""


def score_lifbench(
    sample: Sample, response: Response, context: Context | None, *, strict: bool = False
) -> Judgement:
    """ARS of one response (paper Eq. 2 for one answer): rubric items and their normalised sum.

    ``Judgement.parts`` holds each item's score in points and ``Judgement.points`` the item maxima
    (``RUBRIC[task]``); ``Judgement.value`` = total / task points in 0..1, where the total is the
    sum of the parts except for the official List early return (module docstring).

    Args:
        sample: a LIFBench sample whose ``gold`` is its task's Gold dataclass
            (:data:`lceval.benchmarks.lifbench.gold.GOLD`; ``lceval.registry.load_samples`` parses
            it once when samples load).
        response: the model's response; only ``text`` is read.
        context: the sample's Context (needed by the List tasks and MF), or None.
        strict: score with the official quirks fixed (the ``lifbench:strict`` scorer).

    Returns:
        The Judgement. Never raises on any output text; a sample that cannot be scored (no
        context, no duplicate group, gold of another type than its task's) gives a NaN value with
        the reason in ``explanation``.
    """
    task, gold = sample.task, sample.gold
    entry = _BY_TASK.get(task)
    try:
        if entry is None or type(gold) is not entry[0]:
            raise _CannotScore(_gold_mismatch(task, gold))
        gold_type, adapter, points, total_points = entry
        rub = adapter(sample, gold, response.text, context, strict)
    except _CannotScore as exc:
        return Judgement(math.nan, {}, dict(RUBRIC.get(task, {})), f"cannot score: {exc}")
    value = rub.total / total_points
    if value > 1.0:
        value = 1.0
    elif value < 0.0:
        value = 0.0
    return Judgement(value, rub.parts, dict(points), rub.note)


def _gold_mismatch(task: str, gold: Any) -> str:
    expected = GOLD.get(task)
    if expected is None:
        return f"unknown LIFBench task {task!r}; known: {', '.join(TASKS)}"
    return (
        f"gold is a {type(gold).__name__}, not {expected.__name__} "
        "(load samples through lceval.registry.load_samples)"
    )


def score_lifbench_strict(sample: Sample, response: Response, context: Context | None) -> Judgement:
    """:func:`score_lifbench` with ``strict=True`` (the official quirks fixed)."""
    return score_lifbench(sample, response, context, strict=True)
