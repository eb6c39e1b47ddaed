"""lm-eval's IFEval checkers as ManyIFEval uses them: loading, building, describing, and running
one check under a work budget.

Source: IFEval (Zhou et al., 2023) as maintained in lm-evaluation-harness 0.4.13,
``lm_eval/tasks/ifeval/instructions.py`` (looked up by id in
``instructions_registry.INSTRUCTION_DICT``; built as ``utils.py`` builds them). The builder
(instruction texts), the scorer and the refinement loop all go through this module; it imports
nothing from ``build``, ``score``, ``report`` or ``refine``.

This module does not rewrite any checker. It only (a) memoises the three expensive per-text
operations the checkers call (punkt sentence counting, NLTK word tokenization, langdetect) by text,
and (b) refuses to run a check whose regular expression would do more than :data:`CHECK_BUDGET`
steps on the text (see below).

Work budget. Some of lm-eval's regular expressions backtrack quadratically on hostile text:
``detectable_content:number_placeholders`` (``\\[.*?\\]``: 2.4 s on 16k ``[`` characters, 44 s
on 64k, hours on 1 MB), ``detectable_format:number_bullet_lists`` (``^\\s*\\*[^\\*].*$`` and
``^\\s*-.*$``, multiline: quadratic in a run of newlines), ``detectable_format:title``
(``<<[^\\n]+>>``: quadratic in ``<`` on one line) and, for IFEval-format files,
``detectable_content:postscript`` (``\\s*p\\.\\s?s\\..*$``: quadratic in a run of whitespace).
Before such a check runs, :func:`estimate_work` computes in linear time an upper bound of the
steps the regex engine takes on the text (:data:`WORK_ESTIMATES` documents each bound); above
:data:`CHECK_BUDGET` the check is not run and the verdict is undecided (NaN in the score) with
the reason, never "not followed". The budget is a count, not a clock, so verdicts are the same
on every machine. Ordinary text stays far below it (the bound is close to the text length when
the text lacks the hostile shape): a response is only refused when the regex alone would take
about a second or more.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import random
import re
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lceval.core import corpora
from lceval.core.errors import LcevalError, one_line

_lock = threading.RLock()
_ready = False
_ORIGINALS: dict[str, Any] = {}


def ensure_checkers() -> types.ModuleType:
    """Import lm-eval's IFEval registry with NLTK data and a seeded langdetect; return the registry.

    NLTK data (punkt_tab) comes from llama-index-core (``lceval.core.corpora.ensure_nltk_data``); it
    must be on the path before ``instructions_util`` is imported, which otherwise tries to
    download it. ``langdetect.DetectorFactory.seed`` is set to 0 because langdetect is random
    otherwise (the all-uppercase and all-lowercase checkers call it).

    Raises:
        LcevalError: lm-eval[ifeval] or llama-index-core is not installed.
    """
    global _ready
    if _ready:
        from lm_eval.tasks.ifeval import instructions_registry  # heavy: lm_eval

        return instructions_registry
    corpora.ensure_nltk_data()
    try:
        from lm_eval.tasks.ifeval import (  # heavy: lm_eval
            instructions,
            instructions_registry,
            instructions_util,
        )
    except ImportError as exc:
        raise LcevalError(
            f"IFEval checkers are missing ({exc}): install lm-eval[ifeval]==0.4.13"
        ) from None
    with _lock:
        if not _ready:
            instructions.langdetect.DetectorFactory.seed = 0  # the module lm-eval calls
            _ORIGINALS["count_sentences"] = instructions_util.count_sentences
            _ORIGINALS["nltk"] = instructions_util.nltk
            _ORIGINALS["langdetect"] = instructions.langdetect
            # The checkers log every langdetect failure at ERROR level; they count as followed
            # (IFEval's choice) and are not our errors.
            logging.getLogger(instructions.__name__).setLevel(logging.CRITICAL)
            _ready = True
    return instructions_registry


# Memoised per-text operations (pure functions of the text) -------------------------------------
_CACHE_SIZE = 8192


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _count_sentences(text: str) -> int:
    return int(_ORIGINALS["count_sentences"](text))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _sent_tokenize(text: str) -> tuple[str, ...]:
    return tuple(_ORIGINALS["nltk"].sent_tokenize(text, "english"))


@functools.lru_cache(maxsize=4 * _CACHE_SIZE)
def _treebank_tokenize(sentence: str) -> tuple[str, ...]:
    from nltk.tokenize import _treebank_word_tokenizer  # heavy: nltk

    return tuple(_treebank_word_tokenizer.tokenize(sentence))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _word_tokenize(text: str) -> tuple[str, ...]:
    """``nltk.word_tokenize(text)`` (language "english", preserve_line False), memoised.

    NLTK's word_tokenize is sent_tokenize followed by the Treebank tokenizer on each sentence
    (nltk/tokenize/__init__.py); the loose variants of one response share most sentences, so the
    Treebank step is memoised per sentence. ``tests/benchmarks/manyifeval/test_score.py`` checks
    equality with NLTK.
    """
    return tuple(tok for sent in _sent_tokenize(text) for tok in _treebank_tokenize(sent))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _detect(text: str) -> str | BaseException:
    try:
        return str(_ORIGINALS["langdetect"].detect(text))
    except _ORIGINALS["langdetect"].LangDetectException as exc:
        return exc


def _cached_detect(text: str) -> str:
    out = _detect(text)
    if isinstance(out, BaseException):
        raise out
    return out


class _Proxy:
    """A module stand-in: the named attributes replaced, every other one delegated."""

    def __init__(self, module: Any, **overrides: Any) -> None:
        self._module = module
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


@contextmanager
def memoised_text_ops() -> Iterator[None]:
    """Route the checkers' sentence counting, word tokenization and langdetect through caches.

    Swaps three module attributes of lm-eval's ifeval package for cached equivalents while the
    block runs (under a lock) and restores them afterwards.
    """
    ensure_checkers()
    from lm_eval.tasks.ifeval import instructions, instructions_util  # heavy: lm_eval

    with _lock:
        instructions_util.count_sentences = _count_sentences
        instructions_util.nltk = _Proxy(
            _ORIGINALS["nltk"], word_tokenize=lambda t, *a, **k: list(_word_tokenize(t))
        )
        instructions.langdetect = _Proxy(_ORIGINALS["langdetect"], detect=_cached_detect)
        try:
            yield
        finally:
            instructions_util.count_sentences = _ORIGINALS["count_sentences"]
            instructions_util.nltk = _ORIGINALS["nltk"]
            instructions.langdetect = _ORIGINALS["langdetect"]


# Building and describing -----------------------------------------------------------------------
def clean_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The kwargs lm-eval passes to ``build_description``: falsy values dropped (utils.py)."""
    return {k: v for k, v in (kwargs or {}).items() if v}


def check_seed(
    instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str, index: int
) -> int:
    """The seed of one check's random draws: a 64-bit integer from SHA-256 over the prompt, the
    instruction's position in it, its id and its kwargs (the sample and the instruction).

    Same sample, same instruction, same seed: on every machine, in every process, in any order.
    """
    blob = json.dumps(
        [prompt, index, instruction_id, clean_kwargs(kwargs)], sort_keys=True, default=str
    )
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big")


@contextmanager
def pinned_random(seed: int) -> Iterator[None]:
    """Route lm-eval's ``instructions.random`` through ``random.Random(seed)`` while the block
    runs (under the lock), leaving the global ``random`` state untouched."""
    ensure_checkers()
    from lm_eval.tasks.ifeval import instructions  # heavy: lm_eval

    with _lock:
        saved = instructions.random
        instructions.random = random.Random(seed)
        try:
            yield
        finally:
            instructions.random = saved


def build_checker(
    instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str = "", index: int = 0
) -> Any:
    """Build lm-eval's checker for one instruction exactly as ``utils.py`` does, with its random
    draws pinned.

    lm-eval's ``build_description`` draws what the kwargs leave open from the global ``random``
    module: ``keywords:letter_frequency`` draws a random letter when the asked letter is not
    a-z (IFEval's data asks for '#' and '!'), and several checkers draw a count or relation when
    theirs is missing. Those draws are pinned here: they come from ``random.Random`` seeded by
    :func:`check_seed` (the prompt, the instruction's position ``index``, its id and kwargs), so
    the same sample and instruction get the same checker, and the same score, every time.
    lm-eval leaves them unseeded (scoring the official GPT-4 responses six times gave prompt-level
    strict 0.767 to 0.771).

    Args:
        instruction_id: an IFEval id (``"keywords:existence"`` ...).
        kwargs: the instruction's kwargs (falsy values are dropped, as in lm-eval).
        prompt: the full prompt (only checkers whose args include ``prompt`` use it).
        index: the instruction's position in the prompt's list (0-based; part of the seed).

    Returns:
        An ``lm_eval.tasks.ifeval.instructions.Instruction`` with its description built.

    Raises:
        LcevalError: the id is not an IFEval instruction, or the kwargs do not fit it.
    """
    registry = ensure_checkers()
    cls = registry.INSTRUCTION_DICT.get(instruction_id)
    if cls is None:
        raise LcevalError(f"unknown IFEval instruction id {instruction_id!r}")
    checker = cls(instruction_id)
    try:
        with pinned_random(check_seed(instruction_id, kwargs, prompt, index)):
            checker.build_description(**clean_kwargs(kwargs))
            args = checker.get_instruction_args()
            if args and "prompt" in args:
                checker.build_description(prompt=prompt)
    except Exception as exc:  # noqa: BLE001 - kwargs of any type may come from a user file
        msg = one_line(exc)
        raise LcevalError(
            f"instruction {instruction_id}: bad kwargs {dict(kwargs or {})}: {msg}"
        ) from None
    return checker


def describe(instruction_id: str, kwargs: Mapping[str, Any] | None) -> str:
    """The instruction text IFEval's checker writes for these kwargs (``build_description``).

    Raises:
        LcevalError: unknown id or kwargs that do not fit it.
    """
    registry = ensure_checkers()
    cls = registry.INSTRUCTION_DICT.get(instruction_id)
    if cls is None:
        raise LcevalError(f"unknown IFEval instruction id {instruction_id!r}")
    try:
        with pinned_random(check_seed(instruction_id, kwargs, "", 0)):
            return str(cls(instruction_id).build_description(**clean_kwargs(kwargs)))
    except (TypeError, ValueError) as exc:
        msg = one_line(exc)
        raise LcevalError(
            f"instruction {instruction_id}: bad kwargs {dict(kwargs or {})}: {msg}"
        ) from None


# Work budget ----------------------------------------------------------------------------------
CHECK_BUDGET = 30_000_000
"""Most regex steps (upper bound from :func:`estimate_work`) one check may take; about 0.1 to
0.5 s of CPython's ``re`` on one core. A check above it is not run: its verdict is undecided."""

_WHITESPACE_FROM = re.compile(r"\s*")  # always matches; greedy, never backtracks
_LINE_START_WHITESPACE = re.compile(r"\n\s+")  # linear: literal "\n", then a greedy run
_WHITESPACE_RUNS = re.compile(r"\s{2,}")  # linear: a lone space fails at once, a run is taken whole


def _unclosed_tail_work(text: str, opener: str, closer: str) -> int:
    """Sum over lines of (openers after the line's last closer) x (length of that tail)."""
    work = 0
    for line in text.split("\n"):
        if opener not in line:
            continue
        cut = line.rfind(closer)
        tail = line if cut < 0 else line[cut + len(closer) :]
        work += tail.count(opener) * len(tail)
    return work


def _placeholder_work(text: str) -> int:
    """Bound for ``re.findall(r"\\[.*?\\]", text)`` (PlaceholderChecker).

    ``.`` does not cross a newline. A ``[`` before the last ``]`` of its line starts a match that
    ends at the next ``]`` and consumes what it scanned (linear in all); each ``[`` after the last
    ``]`` scans to the end of its line and fails. Bound: length + sum over lines of (``[`` after
    the last ``]``) x (length of that tail).
    """
    return len(text) + _unclosed_tail_work(text, "[", "]")


def _bullet_work(text: str) -> int:
    """Bound for ``^\\s*\\*[^\\*].*$`` and ``^\\s*-.*$`` (multiline; BulletListChecker).

    At each line start ``\\s*`` takes the whole whitespace run from there (newlines included) and
    gives it back one character at a time. A line start followed by a whitespace run of length L
    that holds k newlines (so k more line starts) costs at most (k + 1) x L with them; two
    patterns. Bound: 2 x (length + sum over such runs of (k + 1) x L).
    """
    lead = _WHITESPACE_FROM.match(text)
    n0 = 0 if lead is None else lead.end()
    work = len(text) + (text.count("\n", 0, n0) + 1) * n0
    for m in _LINE_START_WHITESPACE.finditer(text, n0):
        run = m.end() - m.start() - 1
        work += (text.count("\n", m.start() + 1, m.end()) + 1) * run
    return 2 * work


def _title_work(text: str) -> int:
    """Bound for ``re.findall(r"<<[^\\n]+>>", text)`` (TitleChecker).

    A candidate ``<<`` takes the rest of its line, then backs off to the line's last ``>>``. The
    first candidate of a line (and at most two overlapping the last ``>>``) cost at most the line;
    every later failing candidate lies after the line's last ``>>`` and costs at most that tail.
    Bound: 3 x length + sum over lines of (``<`` after the last ``>>``) x (length of that tail).
    """
    return 3 * len(text) + _unclosed_tail_work(text, "<", ">>")


def _postscript_work(text: str) -> int:
    """Bound for ``re.findall(r"\\s*<marker>.*$", text, re.MULTILINE)`` (PostscriptChecker).

    The pattern has no anchor: ``\\s*`` is tried at every position of a whitespace run and takes
    the rest of the run each time. Bound: 2 x length + sum over longer whitespace runs of (run
    length)^2 (a run of one character costs at most 2).
    """
    work = 2 * len(text)
    for m in _WHITESPACE_RUNS.finditer(text):
        n = m.end() - m.start()
        work += n * n
    return work


WORK_ESTIMATES: Mapping[str, Callable[[str], int]] = {
    "detectable_content:number_placeholders": _placeholder_work,
    "detectable_format:number_bullet_lists": _bullet_work,
    "detectable_format:title": _title_work,
    "detectable_content:postscript": _postscript_work,
}
"""Instruction id -> linear-time upper bound of its regex steps on a text. Found by timing every
IFEval checker on 15 one-pattern texts of 16k and 64k characters (``[``, ``<<``, newlines, spaces,
``*``, ``. `` ...): only these grow faster than the text. The other checkers are (near) linear and
have no estimate: their work is the text length."""


def estimate_work(instruction_id: str, text: str) -> int:
    """Upper bound of the regex steps the instruction's checker takes on ``text``.

    Args:
        instruction_id: an IFEval id.
        text: the text to check (characters).

    Returns:
        Steps (about 1 to 20 ns each on CPython's ``re``); ``len(text)`` for checkers without a
        superlinear regex.
    """
    estimate = WORK_ESTIMATES.get(instruction_id)
    return len(text) if estimate is None else estimate(text)


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {one_line(exc) or type(exc).__name__}"[:300]


def run_check(instruction_id: str, checker: Any, text: str) -> tuple[bool | None, str | None]:
    """One ``checker.check_following(text)`` call that never raises and stays within the budget.

    Args:
        instruction_id: the checker's IFEval id (selects the work estimate).
        checker: a built checker (:func:`build_checker`).
        text: the text to check.

    Returns:
        ``(True or False, None)`` when the check ran; ``(None, reason)`` when it was not run
        (the work estimate exceeds :data:`CHECK_BUDGET`) or it raised: the verdict is undecided.
    """
    work = estimate_work(instruction_id, text)
    if work > CHECK_BUDGET:
        return None, (
            f"not checked: lm-eval's regex would take about {work:.1e} steps on "
            f"{len(text):,} characters (budget {CHECK_BUDGET:.0e})"
        )
    try:
        return bool(checker.check_following(text)), None
    except Exception as exc:  # noqa: BLE001 - a checker failing on a text leaves it undecided
        return None, f"checker error: {_one_line(exc)}"
