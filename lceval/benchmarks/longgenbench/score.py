"""LongGenBench scoring: completion rate (CR), STIC-1, STIC-2 and output length, with two judges.

Reproduces LongGenBench (Wu et al., ICLR 2025; Sec. 2.4-2.5, Algorithm 1, Appendix C and E) and
its official evaluation (mozhu621/LongGenBench: ``Evalution/inference.py`` builds the output,
``Evalution/eval.py`` splits, matches and judges, ``Evalution/results/static.ipynb`` computes the
table). Facts are carried over; the code is lceval's own.

Per sample
----------
1. The output is ``gold.prefix + response.text`` (official ``inference.py``), split on ``#*#``.
2. An entry is found with ``re.search(rf"{type} (\\d+)", block)``; the first block per entry id is
   kept (official ``parse_blocks``).
3. CR = |found ids within 1..number| / number (official ``calculate_completion_rate``).
4. For each check (``checks_once`` = single, ``checks_range``, ``checks_periodic``) whose entry
   exists, a judge answers whether the block includes the description; checks of missing entries
   are not judged (they count as not fulfilled).
5. STIC-1 = yes / checks judged; STIC-2 = yes / all checks (paper Sec. 2.4, Appendix E.2).
6. Words = ``len(output.split())`` and blocks = ``len(output.split("#*#"))`` (official
   ``process_output``); Len keeps samples with more than 40 blocks and more than 2,000 words
   (official ``static.ipynb``).

``Judgement.value`` is the sample's STIC-2 (0..1; NaN when the sample has no checks).
``Judgement.parts`` holds ``CR``, ``STIC_1``, ``STIC_2`` (0..1), and the counts ``n_checks``,
``n_judged``, ``n_yes`` with ``_single`` / ``_range`` / ``_periodic`` suffixes, ``n_found``,
``number``, ``words``, ``n_blocks``, ``len_eligible`` (1 or 0) and ``judge_errors``.
``Judgement.details`` holds one row per check (``gold.CHECK_COLUMNS`` without ``sample_id`` and
``model``, which the pipeline adds); the pipeline writes them to ``longgenbench_checks.parquet``.
Aggregates (``lceval.benchmarks.longgenbench.report``) pool the counts as the official notebook
does: STIC-1 = sum yes / sum judged, STIC-2 = sum yes / sum checks over all samples, CR = mean of
per-sample CR, wAvg = CR x STIC-2.

Judges
------
- ``OfflineJudge`` (scorer ``longgenbench``: deterministic, no model): yes when at least
  ``threshold`` (0.75) of the description's content-word stems occur in the block. Stems come from
  ``stem``, a light suffix stripper (WordNet lemma data for NLTK is not available offline here,
  and importing NLTK costs seconds); stop words are a fixed list in this module. It is a stand-in
  for the paper's Llama judge, not a reproduction of it.
- ``LLMJudge`` (scorer ``longgenbench:llm``; ``judge.py``, built by its ``llm_judge``): any
  lceval Backend with the official prompt
  ``"Context: {block}### Instruction: Does this context include the {desc}?
  Please answer with 'yes' or 'no' only."`` (``eval.py``), or the few-shot variant of Appendix C
  (answers ``#*# Yes`` / ``#*# No``). The (block, description) pairs of a group of responses go
  through ``lceval.models.judge.ModelJudge`` with a ``ResponseStore`` in the run folder
  (``longgenbench_judge.jsonl``), so an interrupted judging run resumes; an answer counts as yes if
  its lower-cased text contains ``"yes"`` (official), or, few-shot, if the last ``#*# yes|no``
  mark says yes. The block is the prompt's context, so a block longer than the judge's window is
  right-truncated instead of failing.

Speed: the word count and the word offset of each judged block come from one vectorised pass
over windows of the text (:func:`word_layout`) instead of ``str.split()`` over the output and
over every block; they equal ``len(output.split())`` and the per-block sums exactly (tests
compare them on arbitrary text). ``bench/bench_longgenbench_scoring.py`` compares the
parsing with the official functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lceval.benchmarks.longgenbench.gold import (
    KINDS,
    LEN_MIN_BLOCKS,
    LEN_MIN_WORDS,
    SEPARATOR,
    Check,
    LongGenBenchGold,
)
from lceval.core.records import Context, Judgement, Response, Sample

if TYPE_CHECKING:
    pass

JUDGE_FILE = "longgenbench_judge.jsonl"
"""The LLM judge's answers in the run folder (a ResponseStore: judging resumes from it)."""

STOP_WORDS = frozenset(
    """a an the and or of to in on at for with by from as is are be been was were this that these
    those it its my our your his her their we i you he she they me us him them yourself myself
    featuring featured feature use used using into over under up down out off per each every all
    some any no not only own same so than too very can will just should would could may might must
    s t do does did has have had having which who whom what when where why how there here then
    also about above after again against before below between both during further once other such
    through until while more most few nor""".split()
)
"""Words ignored by the offline judge (function words, and ``featuring`` from the official menu
descriptions ``"{event} featuring {dish}"``)."""


# -- parsing -------------------------------------------------------------------------------------
def full_output(gold: LongGenBenchGold, text: str) -> str:
    """``prefix + generation``: what the official evaluation splits (``inference.py``)."""
    return gold.prefix + text


def split_blocks(output: str) -> list[str]:
    """Split an output on ``#*#`` (official ``process_output``); always at least one block."""
    return output.split(SEPARATOR)


@lru_cache(maxsize=64)
def _entry_pattern(unit: str) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(unit)} (\d+)")


def parse_entries(blocks: Sequence[str], unit: str) -> dict[int, int]:
    """Entry id -> index of the first block whose first ``"{unit} N"`` match is N.

    Args:
        blocks: the output split on ``#*#``.
        unit: the unit word (``"Week"``, ``"Floor"`` ...), matched literally.

    Source: official ``parse_blocks`` in ``Evalution/eval.py`` (``re.search(rf"{type} (\\d+)")``,
    the first block per id kept). An id too long for ``int`` (over 4,300 digits) is skipped; it
    could never be within ``1..number``.
    """
    found: dict[int, int] = {}
    for i, m in enumerate(map(_entry_pattern(unit).search, blocks)):
        if m is None:
            continue
        try:
            n = int(m[1])
        except ValueError:
            continue
        if n not in found:
            found[n] = i
    return found


_ASCII_SPACE = bytes(int(b < 128 and chr(b).isspace()) for b in range(256))
"""Byte -> 1 for the ASCII characters ``str.split()`` splits on (\\t \\n \\v \\f \\r,
\\x1c-\\x1f, space), else 0."""
_SPACE = np.zeros(0x10000, dtype=bool)
_SPACE[[c for c in range(0x3001) if chr(c).isspace()]] = True
"""UTF-16 code unit -> whether ``str.split()`` splits on it (U+3000 is the last whitespace code
point; surrogates and astral characters are never whitespace)."""
_CHUNK = 32_768
"""Characters per window for ASCII text (16,384 for other text, 2 bytes each): every temporary
array stays under glibc's 128 KiB mmap threshold, so its memory is reused instead of being
returned to the system and faulted in again for every output (whole-output arrays made the count
about 2.5 times slower on 150 KB outputs)."""


def _space_mask(chunk: str) -> np.ndarray:
    """Per character of ``chunk``: whether it is whitespace for ``str.split()``."""
    if chunk.isascii():
        return np.frombuffer(chunk.encode("ascii").translate(_ASCII_SPACE), dtype=np.bool_)
    units = np.frombuffer(chunk.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    if len(units) == len(chunk):
        return _SPACE.take(units)
    cp = np.frombuffer(chunk.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return _SPACE.take(np.minimum(cp, 0xFFFF))  # astral characters: never whitespace


def word_layout(
    output: str, blocks: Collection[int] = (), block_starts: Sequence[int] | None = None
) -> tuple[int, dict[int, int]]:
    """Word count of ``output`` and the word offset of some of its ``#*#`` blocks.

    Equals ``len(output.split())`` (official ``process_output``) and, for each block index ``i``
    in ``blocks``, ``sum(len(b.split()) for b in output.split("#*#")[:i])`` (the words of the
    blocks before it). Whitespace is what ``str.split()`` splits on (every ``str.isspace``
    character); a word starts at a non-whitespace character after whitespace or at the start.
    The words are counted by vectorised passes over windows of the text. A block offset is the
    number of word starts in the text before the block, corrected at each earlier separator:
    the separator itself starts a word in the whole text unless a word runs into it (minus
    one), and a word that runs out of it starts a new one in the next block (plus one).

    Args:
        output: the whole output (prefix + generation).
        blocks: block indices (0-based) whose offsets are wanted; indices past the last block are
            ignored.
        block_starts: the character offset of every block (``output.split("#*#")``), if the
            caller has them.

    Returns:
        (words, {block index: words before it}).
    """
    if blocks and block_starts is None:
        block_starts = _block_starts(output.split(SEPARATOR))
    starts = block_starts or [0]
    wanted = sorted(i for i in blocks if 0 <= i < len(starts))
    targets = [starts[i] for i in wanted]  # character positions, ascending
    before = []  # word starts in the text before each target
    n = len(output)
    words = 0
    prev = True  # the character before the window is whitespace (or there is none)
    window = _CHUNK if output.isascii() else max(1, _CHUNK // 2)
    k, lo = 0, 0
    while lo < n:
        chunk = output[lo : lo + window]
        hi = lo + len(chunk)
        ws = _space_mask(chunk)
        first = int(prev and not ws[0])
        starts_at = ws[:-1] > ws[1:]  # [j]: a word starts at local position j + 1
        count, done = words + first, 0
        while k < len(targets) and targets[k] < hi:
            # word starts before local position r: at 0 (first), then starts_at[: r - 1]
            r = targets[k] - lo
            if r > 0:
                count += int(np.count_nonzero(starts_at[done : r - 1]))
                done = r - 1
            before.append(count if r > 0 else words)
            k += 1
        words = count + int(np.count_nonzero(starts_at[done:]))
        prev = bool(ws[-1])
        lo = hi
    before += [words] * (len(targets) - k)  # blocks starting at the very end
    if not wanted:
        return words, {}
    # Separators before the last wanted block: the characters around each one.
    pos = np.asarray(starts[1 : wanted[-1] + 1], dtype=np.intp) - len(SEPARATOR)
    if not len(pos):
        return words, dict(zip(wanted, before, strict=True))
    left = _space_mask("".join(_chars(output, np.maximum(pos - 1, 0).tolist())))
    right = _space_mask("".join(_chars(output, np.minimum(pos + len(SEPARATOR), n - 1).tolist())))
    minus = left | (pos == 0)  # the separator starts a word of the whole text
    nxt = np.append(np.diff(pos) == len(SEPARATOR), False)  # another separator follows at once
    plus = ~right & ~nxt & (pos + len(SEPARATOR) < n)  # a word starts right after it
    c_minus = np.concatenate(([0], np.cumsum(minus))).tolist()
    c_plus = np.concatenate(([0], np.cumsum(plus))).tolist()
    return words, {
        i: b - c_minus[i] + (c_plus[i - 1] if i else 0) for i, b in zip(wanted, before, strict=True)
    }


def _block_starts(blocks: Sequence[str]) -> list[int]:
    """Character offset of each block of ``output.split("#*#")`` in ``output``."""
    step = len(SEPARATOR).__add__
    return list(accumulate(map(step, map(len, blocks[:-1])), initial=0))


def _chars(text: str, positions: list[int]) -> tuple[str, ...]:
    """The characters of ``text`` at ``positions`` (a C-level gather)."""
    if len(positions) == 1:
        return (text[positions[0]],)
    return itemgetter(*positions)(text)  # type: ignore[no-any-return]


def word_count(output: str) -> int:
    """Words of an output as the official ``process_output`` counts them (whitespace split)."""
    return word_layout(output)[0]


# -- judges --------------------------------------------------------------------------------------
class Judge(Protocol):
    """Decides whether each block includes its description."""

    name: str

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """One verdict per ``(block, description)`` pair, in order. Never raises on any text."""
        ...


_ES_ENDINGS = ("sses", "shes", "ches", "xes", "zzes")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light, deterministic English suffix stripper (lower-case input).

    Plural ``-s`` / ``-es`` / ``-ies`` and verbal ``-ing`` / ``-ed`` / ``-ied`` are removed (a
    doubled final consonant left by ``-ing`` / ``-ed`` is undoubled: shopping -> shop), so
    "gardens" / "garden", "attended" / "attend", "studies" / "study" meet. Used instead of a
    lemmatizer because NLTK's WordNet data is not available offline here and importing NLTK costs
    seconds; it only has to make inflected forms of the same word meet.
    """
    w = word
    if len(w) > 4 and w.endswith(("ies", "ied")):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(_ES_ENDINGS):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            if not any(c in "aeiouy" for c in base):
                return w
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "aeioulsz":
                base = base[:-1]
            return base
    return w


_ALNUM = bytes(b if (48 <= b <= 57 or 97 <= b <= 122) else 32 for b in range(256))
"""Byte -> itself for ``[0-9a-z]``, else a space."""


def content_stems(text: str) -> set[str]:
    """Stems of the content words of ``text``: its lower-cased ``[a-z0-9]+`` tokens (after
    ``str.lower()``; any other character separates tokens) that are not stop words."""
    tokens = set(text.lower().encode("ascii", "replace").translate(_ALNUM).decode().split())
    tokens -= STOP_WORDS
    return set(map(stem, tokens))


@lru_cache(maxsize=4096)
def _description_stems(description: str) -> frozenset[str]:
    return frozenset(content_stems(description))


@dataclass
class OfflineJudge:
    """Deterministic keyword/stem-overlap judge (the default offline; see the module docstring).

    Args:
        threshold: fraction (0..1) of the description's content stems that must occur in the block.
    """

    threshold: float = 0.75
    name: str = "offline"

    def verdict(self, block: str, description: str) -> bool:
        """Whether ``block`` contains enough of ``description``'s content stems."""
        want = content_stems(description)
        if not want:
            return bool(description.strip()) and description.strip().lower() in block.lower()
        have = content_stems(block)
        return len(want & have) >= self.threshold * len(want)

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """One verdict per ``(block, description)`` pair; each distinct block is stemmed once."""
        blocks: dict[int, set[str]] = {}
        out = []
        for block, desc in pairs:
            want = _description_stems(desc)
            if not want:
                out.append(self.verdict(block, desc))
                continue
            have = blocks.get(id(block))
            if have is None:
                have = blocks[id(block)] = content_stems(block)
            out.append(len(want & have) >= self.threshold * len(want))
        return out


# -- evaluating one output -----------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """The outcome of one check on one output."""

    kind: str
    entry: int
    description: str
    judged: bool
    """The entry exists in the output (so the judge was asked)."""
    yes: bool
    """The judge said the block includes the description (False when not judged)."""
    block_index: int | None
    """Index of the judged block in ``output.split("#*#")``."""
    word_offset: int | None
    """Words of the blocks before that block (position for Fig. 2 style curves)."""
    yes_2: bool | None = None
    """The second judge's verdict, when one runs."""


@dataclass
class Prepared:
    """An output parsed and ready for judging: everything but the verdicts (no full text kept)."""

    sample: Sample
    checks: tuple[Check, ...]
    check_blocks: list[int | None]
    """Per check: index of its entry's block, or None when the entry is missing."""
    pairs: list[tuple[str, str]]
    """(block, description) of the judged checks, in check order."""
    block_offsets: dict[int, int]
    """Block index -> words before it, for the judged blocks."""
    number: int
    n_found: int
    cr: float
    words: int
    n_blocks: int

    @property
    def n_items(self) -> int:
        """Questions to ask a judge (the batch-judge contract of ``lceval.benchmarks.base``)."""
        return len(self.pairs)


def prepare(sample: Sample, text: str) -> Prepared:
    """Parse ``prefix + text`` of ``sample``: entries, CR, length, and the pairs to judge.

    Args:
        sample: a LongGenBench sample with typed gold (``LongGenBenchGold``).
        text: the generation, without the prefix.

    Never raises on any ``text``.
    """
    gold: LongGenBenchGold = sample.gold
    output = full_output(gold, text if isinstance(text, str) else "")
    blocks = split_blocks(output)
    starts = _block_starts(blocks)
    found = parse_entries(blocks, gold.type)
    checks = gold.checks
    check_blocks = [found.get(c.entry) for c in checks]
    pairs = [
        (blocks[i], c.description)
        for c, i in zip(checks, check_blocks, strict=True)
        if i is not None
    ]
    words, offsets = word_layout(output, {i for i in check_blocks if i is not None}, starts)
    n_found = sum(map(range(1, gold.number + 1).__contains__, found))
    return Prepared(
        sample=sample,
        checks=checks,
        check_blocks=check_blocks,
        pairs=pairs,
        block_offsets=offsets,
        number=gold.number,
        n_found=n_found,
        cr=n_found / gold.number,
        words=words,
        n_blocks=len(blocks),
    )


@dataclass
class Evaluation:
    """Per-sample result: CR, STIC counts and per-check verdicts."""

    prepared: Prepared
    verdicts: list[Verdict]

    def counts(self) -> dict[str, float]:
        """``n_checks``, ``n_judged``, ``n_yes`` overall and per kind (``n_yes_single`` ...)."""
        out: dict[str, float] = {}
        for suffix, kinds in (("", KINDS), *((f"_{k}", (k,)) for k in KINDS)):
            vs = [v for v in self.verdicts if v.kind in kinds]
            out[f"n_checks{suffix}"] = float(len(vs))
            out[f"n_judged{suffix}"] = float(sum(v.judged for v in vs))
            out[f"n_yes{suffix}"] = float(sum(v.yes for v in vs))
        return out


def finish(
    prepared: Prepared, yes: Sequence[bool], yes_2: Sequence[bool] | None = None
) -> Evaluation:
    """Attach the judge's verdicts (one per pair of ``prepared``, in order) to the checks."""
    it = iter(yes)
    it2 = iter(yes_2) if yes_2 is not None else None
    verdicts = []
    for c, bi in zip(prepared.checks, prepared.check_blocks, strict=True):
        if bi is None:
            second = None if it2 is None else False
            verdicts.append(
                Verdict(c.kind, c.entry, c.description, False, False, None, None, second)
            )
            continue
        verdicts.append(
            Verdict(
                c.kind,
                c.entry,
                c.description,
                True,
                bool(next(it)),
                bi,
                prepared.block_offsets.get(bi),
                None if it2 is None else bool(next(it2)),
            )
        )
    return Evaluation(prepared, verdicts)


def evaluate(sample: Sample, text: str, judge: Judge | None = None) -> Evaluation:
    """Parse and judge one output (``text`` = the generation, without the prefix).

    Never raises on any ``text``.
    """
    prepared = prepare(sample, text)
    judge = judge or OfflineJudge()
    return finish(prepared, judge.judge(prepared.pairs) if prepared.pairs else [])


def check_rows(
    ev: Evaluation, judge: str, judge_2: str | None = None
) -> tuple[dict[str, Any], ...]:
    """One row per check (``gold.CHECK_COLUMNS`` without ``sample_id`` and ``model``)."""
    s = ev.prepared.sample
    version = (s.meta or {}).get("version", "")
    return tuple(
        {
            "version": version,
            "scenario": s.scenario,
            "task": s.task,
            "kind": v.kind,
            "entry": v.entry,
            "description": v.description,
            "judged": v.judged,
            "yes": v.yes,
            "block_index": v.block_index,
            "word_offset": v.word_offset,
            "yes_2": v.yes_2,
            "judge": judge,
            "judge_2": judge_2,
        }
        for v in ev.verdicts
    )


def to_judgement(
    ev: Evaluation, judge: str, judge_2: str | None = None, judge_errors: int = 0
) -> Judgement:
    """The Judgement of one evaluated output (value = STIC-2 of the sample, 0..1).

    Args:
        ev: the evaluated output.
        judge: the judge's name (``offline``, ``llm:<model>``), named in the explanation.
        judge_2: the second judge's name, when one ran (rows' ``yes_2``).
        judge_errors: pairs whose judge generation failed (counted as no).
    """
    p = ev.prepared
    c = ev.counts()
    n_checks, n_judged, n_yes = c["n_checks"], c["n_judged"], c["n_yes"]
    stic1 = n_yes / n_judged if n_judged else math.nan
    stic2 = n_yes / n_checks if n_checks else math.nan
    parts = {
        "CR": p.cr,
        "STIC_1": stic1,
        "STIC_2": stic2,
        **c,
        "n_found": float(p.n_found),
        "number": float(p.number),
        "words": float(p.words),
        "n_blocks": float(p.n_blocks),
        "len_eligible": float(p.n_blocks > LEN_MIN_BLOCKS and p.words > LEN_MIN_WORDS),
        "judge_errors": float(judge_errors),
    }
    if not n_checks:
        expl = "no checks in gold: STIC-2 undefined"
    else:
        expl = (
            f"CR {p.n_found}/{p.number}; STIC-1 {int(n_yes)}/{int(n_judged)}; "
            f"STIC-2 {int(n_yes)}/{int(n_checks)} ({judge} judge)"
        )
        if judge_errors:
            expl += f"; {judge_errors} judge generation(s) failed, counted as no"
    return Judgement(
        value=stic2,
        parts=parts,
        points={"CR": 1.0, "STIC_1": 1.0, "STIC_2": 1.0},
        explanation=expl,
        details=check_rows(ev, judge, judge_2),
    )


def score_longgenbench(sample: Sample, response: Response, context: Context | None) -> Judgement:
    """Score one response with the offline judge (scorer ``longgenbench``).

    Args:
        sample: a LongGenBench sample with typed gold (``LongGenBenchGold``).
        response: the model's generation (without the prefix).
        context: unused (LongGenBench has no input context).

    Returns:
        A Judgement whose value is the sample's STIC-2 (0..1), whose parts hold CR, STIC-1, STIC-2
        and the counts per instruction type, and whose details are the per-check rows. Never
        raises on any output text.
    """
    judge = OfflineJudge()
    return to_judgement(evaluate(sample, response.text, judge), judge.name)
