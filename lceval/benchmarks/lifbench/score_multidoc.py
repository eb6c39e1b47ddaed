"""LIFEval rubrics of the MultiDoc scenario (MB, MF): official ``EvaluateFunc.py``."""

from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lceval.benchmarks.lifbench.rubric import (
    _INVALID,
    Rubric,
    _literal,
    _loads,
    _rubric,
    brace_spans,
    double_bracket_spans,
    unescape,
)

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


def _json_groups(groups: Sequence[str], l_idx: int, r_idx: int) -> tuple[list[list[Any]], float]:
    """MF's JSON reading of the output's groups, each sliced by the output's first ``[`` / last
    ``]`` offsets (official quirk): (the list-of-lists values, ``format`` points 0..3: any parses,
    none fails, every parsed one is a list of lists)."""
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
    return parsed, float(any_parsed) + float(all_parsed) + float(all_lists)


def _literal_groups(flat: str, prompt_nq: Any) -> tuple[dict[tuple[str, ...], int], int, int]:
    """MF's Python-literal reading of the flattened output: (each item's values -> its group
    number, the items' value count, how many values the quote-free prompt holds)."""
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
    return out_map, n_items, in_prompt


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
    parsed, points = _json_groups(groups, l_idx, r_idx)
    parts["format"] += points
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
    out_map, n_items, in_prompt = _literal_groups(flat, prompt_nq)
    if n_items:
        parts["ori"] += min(3.0, in_prompt * 3.0 / n_items)
    pairs = [(gi, out_map[key]) for key, gi in gold_map.items() if key in out_map]
    if gold_map:
        parts["correct"] += _true_pairs(pairs) / len(gold_map) ** 2
    return _rubric(parts, f"{len(groups)} groups found, {g} expected")


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
