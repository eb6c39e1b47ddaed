"""RULER scoring: string_match_all and string_match_part on post-processed predictions.

Reproduces the official Apache-2.0 code of NVIDIA/RULER: ``scripts/eval/evaluate.py``
(``postprocess_pred``: strip, replace control characters ``\\x00-\\x1f`` by newlines, strip) and
``scripts/eval/synthetic/constants.py`` (``string_match_all`` for niah, vt, cwe and fwe: the
fraction of references contained in the prediction, case-insensitive; ``string_match_part`` for
qa: 1 if any reference is contained). The official functions average over samples and report
0..100 rounded to two decimals; here one sample is scored in 0..1 without rounding, and tables
report 0..100 (``lceval.benchmarks.ruler.report``).

Speed: the per-sample scorer reads the references lower-cased once per sample
(:attr:`RulerGold.lowered`) and, when no reference holds a control character or edge whitespace
(:attr:`RulerGold.plain`, true for every sample the builder writes), matches against the raw
lower-cased output: post-processing only rewrites control characters and strips the ends, which
cannot then change whether a reference is contained, so the regex pass over the output is skipped
(``bench/bench_ruler_scoring.py`` compares with the official functions).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import Any

from lceval.benchmarks.ruler.gold import RulerGold
from lceval.core.records import Context, Judgement, Response, Sample

_CONTROL = re.compile(r"[\x00-\x1f]")


def postprocess_pred(text: Any) -> str:
    """Official ``postprocess_pred``: strip, control characters to newlines, strip again.

    Args:
        text: the model's generated text (anything; None is empty, other non-strings go through
            ``str``).
    """
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    return _CONTROL.sub("\n", s.strip()).strip()


def string_match_all(pred: str, refs: Sequence[str]) -> float:
    """Fraction (0..1) of references contained in ``pred``, case-insensitive (official metric).

    Args:
        pred: a post-processed prediction (:func:`postprocess_pred`).
        refs: the references.

    Returns 0.0 for an empty reference list (RULER would divide by zero; lceval never raises).
    """
    if not refs:
        return 0.0
    p = pred.lower()
    return sum(1.0 for r in refs if r.lower() in p) / len(refs)


def string_match_part(pred: str, refs: Sequence[str]) -> float:
    """1.0 if any reference is contained in ``pred`` (case-insensitive), else 0.0 (official).

    Args:
        pred: a post-processed prediction (:func:`postprocess_pred`).
        refs: the references.
    """
    p = pred.lower()
    return max((1.0 if r.lower() in p else 0.0 for r in refs), default=0.0)


METRICS = {"string_match_all": string_match_all, "string_match_part": string_match_part}
"""The official metrics by name (one prediction at a time)."""


def score_ruler(sample: Sample, response: Response, context: Context | None = None) -> Judgement:
    """Score one RULER response (official ``string_match_all`` / ``string_match_part``).

    Args:
        sample: a RULER sample whose ``gold`` is a :class:`RulerGold` (samples loaded through
            ``lceval.benchmarks.registry.load_samples``).
        response: the model's response (``text`` is the generation after the answer prefix).
        context: unused (accepted for the scorer contract).

    Returns:
        ``value`` in 0..1: the fraction of references found (string_match_all) or 1/0
        (string_match_part); ``parts`` holds 0/1 per reference under ``"<i>:<reference>"`` (at
        most 120 characters), each worth 1 point. NaN with a reason when the gold has no
        references or an unknown metric. Never raises on any output text.
    """
    del context
    gold: RulerGold = sample.gold
    lowered = gold.lowered
    n = len(lowered)
    if not n:
        return Judgement(math.nan, explanation="sample has no references")
    text = response.text
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if gold.plain:
        low = text.lower()  # same containment as in the post-processed text (module docstring)
        head = text.strip()
        empty = not head or (head[0] < " " and not postprocess_pred(head))
    else:
        pred = postprocess_pred(text)
        low = pred.lower()
        empty = not pred
    if n == 1:  # most tasks: one reference; literals are cheaper than building from lists
        hit = 1.0 if lowered[0] in low else 0.0
        key = gold.part_keys[0]
        found, parts, points = hit, {key: hit}, {key: 1.0}
    else:
        keys = gold.part_keys
        found, parts, points = 0.0, dict.fromkeys(keys, 0.0), dict.fromkeys(keys, 1.0)
        for key, ref in zip(keys, lowered, strict=False):
            if ref in low:
                parts[key] = 1.0
                found += 1.0
    if gold.metric == "string_match_all":
        value = found / n
    elif gold.metric == "string_match_part":
        value = 1.0 if found else 0.0
    else:
        return Judgement(math.nan, explanation=f"unknown metric {gold.metric!r:.40}")
    return Judgement(value, parts, points, _explanation(found, n, empty))


@functools.cache
def _explanation(found: float, n: int, empty: bool) -> str:
    """``"<found>/<n> references found"`` (+ ``" (empty prediction)"``), made once per triple."""
    return f"{int(found)}/{n} references found" + (" (empty prediction)" if empty else "")
