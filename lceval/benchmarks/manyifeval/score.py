"""ManyIFEval scoring: the 15 verifiable instructions, checked by lm-eval's IFEval checkers.

Source: Harada et al., "Curse of Instructions: Large Language Models Cannot Follow Multiple
Instructions at Once" (ManyIFEval), Sec. 3.1 and Table 4 (the 15 instructions), Sec. 3.2 Eq. (1)
and (2) (prompt-level and instruction-level accuracy). The checkers are IFEval's (Zhou et al.,
2023) as maintained in lm-evaluation-harness 0.4.13 (``checkers.py``); strict and loose follow
``lm_eval/tasks/ifeval/utils.py`` (``test_instruction_following_strict`` / ``_loose``):

* strict: the instruction counts as followed when ``response.strip()`` is non-empty and the
  checker accepts ``response``;
* loose: followed when the checker accepts any of the eight variants of the response (as is,
  asterisks removed, first line removed, last line removed, both removed, and those three with
  asterisks removed), skipping empty variants.

Each checker is built once per sample; each response's loose variants are computed once and
duplicate variants are skipped (a checker is a pure function of the text, so a repeated variant
cannot change the verdict). ``tests/benchmarks/manyifeval/test_score.py`` checks that the
verdicts equal lm-eval's own ``test_instruction_following_strict`` / ``_loose`` on random
responses.

Same input, same score. lm-eval's checkers draw from ``random`` what the kwargs leave open
(the letter of ``keywords:letter_frequency`` when the asked one is not a-z); those draws are
seeded per check from the sample's prompt and the instruction (``checkers.build_checker``), so
scoring a run twice gives identical verdicts.

Undecided verdicts. A check that is not run because its regex would exceed the work budget
(``checkers.CHECK_BUDGET``), that raises on the text, or whose checker cannot be built from the
kwargs, is undecided: NaN in ``parts`` with the reason in the explanation, never "not followed".
Undecided verdicts combine with Kleene's three-valued "and": the prompt is not followed (0) when
some instruction is decidedly not followed, followed (1) when every instruction is followed, and
NaN otherwise. Instruction-level parts average the decided instructions only.
"""

from __future__ import annotations

import math
import multiprocessing as mp
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lceval.benchmarks.manyifeval.checkers import (
    build_checker,
    ensure_checkers,
    memoised_text_ops,
    run_check,
)
from lceval.benchmarks.manyifeval.gold import ManyIFEvalGold, part_key
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Judgement, Response, Sample


@dataclass(frozen=True)
class Verdict:
    """Whether one response follows one instruction."""

    instruction_id: str
    strict: bool | None
    """Followed under the strict check; None when undecided (``error`` says why)."""
    loose: bool | None
    """Followed under the loose check; None when undecided (``error`` says why)."""
    error: str | None = None
    """Why a check was not run or failed (on any variant), else None."""


def loose_variants(response: str) -> list[str]:
    """The eight response variants of IFEval's loose check, in lm-eval's order (utils.py).

    Order: response, asterisks removed, first line removed, last line removed, both removed, and
    the last three with asterisks removed.
    """
    r = response.split("\n")
    remove_first = "\n".join(r[1:]).strip()
    remove_last = "\n".join(r[:-1]).strip()
    remove_both = "\n".join(r[1:-1]).strip()
    return [
        response,
        response.replace("*", ""),
        remove_first,
        remove_last,
        remove_both,
        remove_first.replace("*", ""),
        remove_last.replace("*", ""),
        remove_both.replace("*", ""),
    ]


def _any3(values: Sequence[bool | None]) -> bool | None:
    """Kleene "or": True if any is True, else None if any is None, else False."""
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _all3(values: Sequence[bool | None]) -> bool | None:
    """Kleene "and": False if any is False, else None if any is None, else True."""
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def check_response(
    instruction_ids: Sequence[str],
    kwargs_list: Sequence[Mapping[str, Any] | None],
    response: str,
    prompt: str = "",
) -> list[Verdict]:
    """Strict and loose verdicts of one response on each of its instructions.

    Equal to lm-eval's ``test_instruction_following_strict`` / ``_loose`` (utils.py) wherever
    lm-eval answers in bounded time. It never raises on any response: a check over the work
    budget, a checker that raises, or one that cannot be built leaves the verdict undecided
    (None) with the reason in ``Verdict.error``.

    Args:
        instruction_ids: IFEval ids, one per instruction of the prompt.
        kwargs_list: their kwargs, same length.
        response: the model's response text (any string).
        prompt: the full prompt (for prompt-dependent checkers).

    Returns:
        One Verdict per instruction, in order.

    Raises:
        LcevalError: ``instruction_ids`` and ``kwargs_list`` differ in length.
    """
    if len(instruction_ids) != len(kwargs_list):
        raise LcevalError(
            f"{len(instruction_ids)} instruction ids but {len(kwargs_list)} kwargs entries"
        )
    if not isinstance(response, str):
        response = "" if response is None else str(response)
    variants = loose_variants(response)
    out = []
    with memoised_text_ops():
        for j, (iid, kw) in enumerate(zip(instruction_ids, kwargs_list, strict=True)):
            try:
                checker = build_checker(iid, kw, prompt, j)
            except LcevalError as exc:
                out.append(Verdict(iid, None, None, f"checker error: {exc}"))
                continue
            results: dict[str, tuple[bool | None, str | None]] = {}
            for v in variants:
                if v.strip() and v not in results:
                    results[v] = run_check(iid, checker, v)
                    if results[v][0]:
                        break
            strict = results[response][0] if response.strip() else False
            loose = _any3([ok for ok, _ in results.values()]) if results else False
            errors = [e for _, e in results.values() if e]
            out.append(Verdict(iid, strict, loose, errors[0] if errors else None))
    return out


Job = tuple[Sequence[str], Sequence[Mapping[str, Any] | None], str, str]


def _check_job(job: Job) -> list[Verdict]:
    ids, kws, text, prompt = job
    return check_response(ids, kws, text, prompt)


def check_many(jobs: Sequence[Job], processes: int = 1, chunksize: int = 64) -> list[list[Verdict]]:
    """:func:`check_response` over many (ids, kwargs, response, prompt) jobs, in order.

    Args:
        jobs: one (instruction ids, kwargs list, response, prompt) tuple per response.
        processes: worker processes (1: in this process). Each worker keeps its own caches.
        chunksize: jobs per task sent to a worker.

    Raises:
        LcevalError: processes < 1, or a job whose ids and kwargs differ in length.
    """
    if processes < 1:
        raise LcevalError(f"processes must be >= 1, got {processes}")
    if processes == 1 or len(jobs) < 2 * chunksize:
        return [_check_job(j) for j in jobs]
    ensure_checkers()  # workers inherit NLTK_DATA and the imported checkers
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    with ctx.Pool(processes) as pool:
        return pool.map(_check_job, jobs, chunksize=chunksize)


def _number(v: bool | None) -> float:
    return math.nan if v is None else float(v)


def _mean(values: Sequence[bool | None]) -> float:
    decided = [v for v in values if v is not None]
    return sum(decided) / len(decided) if decided else math.nan


def judge_text(gold: ManyIFEvalGold, text: str, prompt: str = "") -> Judgement:
    """Judge a response text against a prompt's instructions (see :func:`score_manyifeval`).

    Args:
        gold: the sample's instructions.
        text: the response (any string).
        prompt: the prompt the prompt-dependent checkers read when ``gold.prompt`` is empty.
    """
    verdicts = check_response(gold.instruction_id_list, gold.kwargs, text, gold.prompt or prompt)
    parts: dict[str, float] = {}
    for j, v in enumerate(verdicts):
        parts[part_key("strict", j, v.instruction_id)] = _number(v.strict)
        parts[part_key("loose", j, v.instruction_id)] = _number(v.loose)
    n = len(verdicts)
    strict_all = _all3([v.strict for v in verdicts])
    parts["prompt_level_loose"] = _number(_all3([v.loose for v in verdicts]))
    parts["inst_level_strict"] = _mean([v.strict for v in verdicts])
    parts["inst_level_loose"] = _mean([v.loose for v in verdicts])
    failed = [v.instruction_id for v in verdicts if v.strict is False]
    followed = sum(v.strict is True for v in verdicts)
    notes = [f"{followed}/{n} instructions followed (strict)"]
    if failed:
        notes.append("not followed: " + ", ".join(failed))
    notes += [f"{v.instruction_id} {v.error}" for v in verdicts if v.error]
    return Judgement(
        value=_number(strict_all),
        parts=parts,
        points={k: 1.0 for k in parts},
        explanation="; ".join(notes),
    )


def score_manyifeval(sample: Sample, response: Response, context: Context | None) -> Judgement:
    """Score one response: value = prompt-level strict (1 if every instruction is followed).

    ``parts`` holds each instruction's verdict under ``"strict:<j>:<id>"`` and ``"loose:<j>:<id>"``
    (1.0 followed, 0.0 not, NaN undecided), plus ``prompt_level_loose``, ``inst_level_strict`` and
    ``inst_level_loose`` (0..1 or NaN) of this response. Averaging ``value`` over prompts gives
    Eq. (1); averaging the per-instruction parts gives Eq. (2)
    (``lceval.benchmarks.manyifeval.report``).

    Args:
        sample: a ManyIFEval sample with its gold parsed (:class:`ManyIFEvalGold`).
        response: the model's response.
        context: unused (ManyIFEval has no long context).

    Returns:
        The Judgement; NaN with the reason when no instruction failed but one could not be
        checked (work budget, checker error). Never raises on any response text.
    """
    del context
    return judge_text(sample.gold, response.text, sample.instruction)
