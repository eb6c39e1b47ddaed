"""LIFEval's rubric record and the generic text helpers its task rules share (JSON and literal
parsing, unescaping, edit distance, bracket spans)."""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any, NamedTuple

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
