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
``Context.n_tokens`` and ``meta["input_tokens"]``.

Haystack sizing (``fill``)
--------------------------
``fill: official`` (default) sizes haystacks as the official generators do, in haystack units
(niah: essay words, the first N words of the essays, or noise / distractor-needle lines; vt:
noise lines; cwe: distinct words; fwe: the Zipf word count; qa: documents): once per task and
length, a probe sample (lceval: sample 0, whose draws are seeded; the official probe is a draw
of its own) finds by binary search the largest size whose prompt fits L (fwe: grows its word
count in steps of ``(L - 50) // 32`` from ``(L - 50) // 6``); each sample starts from that size
and backs off in the official steps (500 essay words, 25 lines (5 below 4K), vt 10 lines (5
below 4K), 10 cwe words, 10 documents, the fwe step) until it fits; where even one step does
not fit (short lengths: the official loop never ends) the sample is filled as ``exact`` does
(:func:`official_units`, :func:`lceval.benchmarks.ruler.common.official_step`). A sample whose
question, needles or documents take more tokens than the probe's therefore loses a whole step:
the official "4K" prompts are several percent shorter than 4K on average (qa and essay tasks
most). ``fill: exact`` (lceval's earlier behaviour, kept as a variant) fills every sample with as
many units as fit its own budget: prompts within a few tokens of L, fuller than RULER's.

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
from lceval.benchmarks.base import BuildResult
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
    fill: Literal["official", "exact"] = Field(
        "official",
        description="haystack sizing: official (RULER's probe and back-off steps) or exact "
        "(every sample filled to its own token budget); see lceval.benchmarks.ruler.common.FILLS",
    )


def _flatten(text: str) -> str:
    """Official ``--remove_newline_tab``: newlines and tabs become spaces, spaces collapse."""
    return " ".join(text.replace("\n", " ").replace("\t", " ").strip().split())


def _fits(it: _Item, family: str, length: int) -> bool:
    return it.context_tokens + it.overhead_tokens + TOKENS_TO_GENERATE[family] <= length


def official_units(
    make: Callable[..., _Item], count: Callable[[str], int], task: str, args: Any, length: int
) -> int:
    """The haystack size (units) RULER's generator picks once for ``task`` at ``length``.

    As the official scripts: a probe sample (lceval: sample 0) sized by binary search over
    ``[step, upper]`` for the largest size whose prompt plus answer budget fits ``length``,
    ``upper`` = 3x (cwe: 2x) the size the probe's tokens per unit at ``step`` (cwe: 4096 words)
    suggests (vt: the one-shot example left out of that estimate, as the official script leaves
    it); nothing fits: ``step``. fwe grows its Zipf word count from ``(length - 50) // 6`` in
    steps while the prompt is shorter than ``length - 50``, then takes one step back. ``make`` is
    the family builder, ``count`` counts tokens.
    """
    family = VARIANTS[task].family
    step = official_step(family, args, length)
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


def build_ruler(raw: Mapping[str, Any]) -> BuildResult:
    """Build RULER's synthetic tasks at the given lengths.

    Args:
        raw: the keys of :class:`Config` (``tasks``, ``lengths``, ``num_samples``, ``seed``,
            ``encoding``, ``remove_newline_tab``, ``fill``); the keys of the notebook's shared
            sections (:data:`lceval.params.NOTEBOOK_SECTIONS`), ``run_id`` and ``outputs_root``
            are accepted and ignored, so ``params/07_ruler/*.yaml`` build as they are.

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
    builders: dict[str, Callable[..., _Item]] = {
        "niah": b.niah,
        "variable_tracking": b.vt,
        "common_words_extraction": b.cwe,
        "freq_words_extraction": b.fwe,
        "qa": b.qa,
    }
    samples: list[Sample] = []
    contexts: list[Context] = []
    for task in p.tasks:
        family = VARIANTS[task].family
        args = family_args(task)
        gold_type = GOLD_BY_FAMILY[family]
        make = builders[family]
        for length in p.lengths:
            step = official_step(family, args, length)
            units = (
                official_units(make, b.c.count, task, args, length)
                if p.fill == "official"
                else None
            )
            for i in range(p.num_samples):
                it = make(task, args, length, i, units)
                used = units
                while used is not None and used > step and not _fits(it, family, length):
                    used -= step  # official: back off in fixed steps until the sample fits
                    it = make(task, args, length, i, used)
                if used is not None and not _fits(it, family, length):
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
