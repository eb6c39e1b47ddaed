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
  returning a :class:`~lceval.core.records.Judgement` with ``value = total / task points`` in 0..1.

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

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

from lceval.benchmarks.lifbench.gold import (
    GOLD,
    RUBRIC,
    TASK_POINTS,
    TASKS,
    BatchLabelGold,
    ExtractGold,
    FindDupGold,
    ListBlurGold,
    ListItemGold,
    ListMultiGold,
    QaGold,
    RepeatGold,
)
from lceval.benchmarks.lifbench.rubric import (
    Rubric,
    brace_spans,
    double_bracket_spans,
    levenshtein,
    unescape,
    within_edit_distance,
)
from lceval.benchmarks.lifbench.score_list import (
    ListIndex,
    list_index,
    parse_list_context,
    score_blur,
    score_multi,
    score_retrieve,
)
from lceval.benchmarks.lifbench.score_multidoc import (
    count_doc_keys,
    score_batch_label,
    score_find_dup,
)
from lceval.benchmarks.lifbench.score_onedoc import score_extract, score_qa, score_repeat
from lceval.core.records import Context, Gold, Judgement, Response, Sample

__all__ = [
    "RUBRIC",
    "TASKS",
    "TASK_POINTS",
    "ListIndex",
    "Rubric",
    "brace_spans",
    "count_doc_keys",
    "double_bracket_spans",
    "levenshtein",
    "list_index",
    "parse_list_context",
    "score_batch_label",
    "score_blur",
    "score_extract",
    "score_find_dup",
    "score_lifbench",
    "score_lifbench_strict",
    "score_multi",
    "score_qa",
    "score_repeat",
    "score_retrieve",
    "unescape",
    "within_edit_distance",
]
"""The adapter and the rubric functions of every scenario (rubric.py, score_list.py,
score_multidoc.py, score_onedoc.py), importable from here."""


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
            (:data:`lceval.benchmarks.lifbench.gold.GOLD`;
            ``lceval.benchmarks.registry.load_samples`` parses it once when samples load).
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
        "(load samples through lceval.benchmarks.registry.load_samples)"
    )


def score_lifbench_strict(sample: Sample, response: Response, context: Context | None) -> Judgement:
    """:func:`score_lifbench` with ``strict=True`` (the official quirks fixed)."""
    return score_lifbench(sample, response, context, strict=True)
