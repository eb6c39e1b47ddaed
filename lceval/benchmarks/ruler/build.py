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

import functools
import hashlib
import re
import string
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lceval import corpora, params
from lceval.benchmark import BuildResult
from lceval.benchmarks.ruler.gold import FAMILIES, GOLD_BY_FAMILY, TASKS, VARIANTS
from lceval.errors import LcevalError
from lceval.records import Context, Sample
from lceval.tokens import DEFAULT_ENCODING, ENCODINGS, get_encoding

# --------------------------------------------------------------------------------------------
# Family arguments (the official generators' flags), templates (scripts/data/synthetic/constants.py)
# --------------------------------------------------------------------------------------------

Kind = Literal["numbers", "words", "uuids"]


@dataclass(frozen=True)
class NiahArgs:
    """Arguments of the ``niah`` family (official ``niah.py`` flags and defaults)."""

    type_haystack: Literal["noise", "essay", "needle"] = "essay"
    """Filler: repeated noise sentences, Paul Graham essays, or distractor needles."""
    type_needle_k: Kind = "words"
    """Needle keys: ``adjective-noun`` words, 7-digit numbers or UUIDs."""
    type_needle_v: Kind = "numbers"
    """Needle values: 7-digit numbers, words or UUIDs."""
    num_needle_k: int = 1
    """Keys hidden in the haystack (raised to ``num_needle_q`` if smaller)."""
    num_needle_v: int = 1
    """Values per key (each its own needle)."""
    num_needle_q: int = 1
    """Keys asked about; the answer is every value of every queried key."""


@dataclass(frozen=True)
class VtArgs:
    """Arguments of the ``variable_tracking`` family (official ``variable_tracking.py``)."""

    type_haystack: Literal["noise"] = "noise"
    """Filler between assignments (lceval implements the official config's ``noise``)."""
    num_chains: Literal[1] = 1
    """Assignment chains (lceval implements the official config's 1)."""
    num_hops: int = 4
    """Assignments after the first; the answer has ``num_hops + 1`` variables."""


@dataclass(frozen=True)
class CweArgs:
    """Arguments of the ``common_words_extraction`` family (official defaults)."""

    freq_cw: int = 30
    """Repeats of each common word (from 4K tokens up; 6 below)."""
    freq_ucw: int = 3
    """Repeats of each uncommon word (from 4K tokens up; 1 below)."""
    num_cw: int = 10
    """Common words, the answer."""


@dataclass(frozen=True)
class FweArgs:
    """Arguments of the ``freq_words_extraction`` family (official defaults)."""

    alpha: float = 2.0
    """Exponent (> 1) of the Zipf (zeta) distribution of word counts."""
    coded_wordlen: int = 6
    """Letters per random coded word."""

    def __post_init__(self) -> None:
        if not self.alpha > 1:
            raise ValueError(f"alpha must be > 1, got {self.alpha}")


@dataclass(frozen=True)
class QaArgs:
    """Arguments of the ``qa`` family (official ``qa.py``)."""

    dataset: Literal["squad", "hotpotqa"]
    """Source of questions and documents."""


FAMILY_ARGS: dict[str, type] = {
    "niah": NiahArgs,
    "variable_tracking": VtArgs,
    "common_words_extraction": CweArgs,
    "freq_words_extraction": FweArgs,
    "qa": QaArgs,
}
"""Argument dataclass of each family builder."""


def family_args(task: str) -> Any:
    """The typed arguments of ``task`` from ``variants.yaml`` (missing ones take defaults).

    Raises:
        LcevalError: an argument the family does not take, or a value of the wrong type or
            outside its choices (names the task and the argument).
    """
    variant = VARIANTS[task]
    cls = FAMILY_ARGS[variant.family]
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for name, value in variant.args.items():
        if name not in hints:
            known = ", ".join(f.name for f in fields(cls))
            raise LcevalError(f"ruler: variant {task}: unknown argument {name!r}; known: {known}")
        if not _valid(value, hints[name]):
            raise LcevalError(f"ruler: variant {task}: bad {name}: {value!r}")
        kwargs[name] = float(value) if hints[name] is float else value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise LcevalError(f"ruler: variant {task}: {exc}") from None


def _valid(value: Any, tp: Any) -> bool:
    """Whether ``value`` fits the argument type ``tp`` (a Literal, int >= 1, float, str)."""
    if isinstance(value, bool):
        return False
    if typing.get_origin(tp) is Literal:
        return value in typing.get_args(tp)
    if tp is int:
        return isinstance(value, int) and value >= 1
    if tp is float:
        return isinstance(value, int | float)
    return isinstance(value, tp)


TOKENS_TO_GENERATE = {family: f.tokens_to_generate for family, f in FAMILIES.items()}
"""Answer budgets in tokens per family (official ``constants.py``; see :data:`gold.FAMILIES`)."""

NIAH_DESC = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {type_needle_v} afterwards."
)
NIAH_INSTR = (
    "What are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
)
NIAH_PREFIX = " The special magic {type_needle_v} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
VT_DESC = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n"
VT_INSTR = "Question: Find all variables that are assigned the value {query} in the text above."
VT_PREFIX = (
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} "
    "variables are assigned the value {query}, they are: "
)
CWE_DESC = (
    "Below is a numbered list of words. In these words, some appear more often than others. "
    "Memorize the ones that appear most often."
)
CWE_INSTR = "Question: What are the 10 most common words in the above list?"
CWE_PREFIX = " Answer: The top 10 words that appear most often in the list are:"
FWE_DESC = (
    "Read the following coded text and track the frequency of each coded word. Find the three "
    "most frequently appeared coded words."
)
FWE_INSTR = (
    "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the "
    "three most frequently appeared words in the above coded text?"
)
FWE_PREFIX = (
    " Answer: According to the coded text above, the three most frequently appeared words are:"
)
QA_DESC = (
    "Answer the question based on the given documents. Only give me the answer and do not output "
    "any other words.\n\nThe following are given documents."
)
QA_INSTR = (
    "Answer the question based on the given documents. Only give me the answer and do not output "
    "any other words.\n\nQuestion: {query}"
)
QA_PREFIX = " Answer:"
DOCUMENT = "Document {i}:\n{document}"

DEPTHS = [int(x) for x in np.round(np.linspace(0, 100, num=40, endpoint=True))]
"""Needle depths in percent (official ``niah.py``)."""

MIN_LENGTH = 256
"""Shortest target length (tokens). A task whose prompt and answer budget do not fit a length
is refused with its own message (a short niah or qa prompt fits 256 tokens: the NTK sweep's
smoke runs use it; vt and cwe need more)."""

_VT_ICL_LENGTH = 500  # official: the vt one-shot example is built at max_seq_length=500


# --------------------------------------------------------------------------------------------
# Token counting
# --------------------------------------------------------------------------------------------


class _Counter:
    """Counts tokens of many short pieces with tiktoken or a local Hugging Face tokenizer."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name in ENCODINGS:
            enc = get_encoding(name)
            self._encode = lambda t: enc.encode(t, disallowed_special=())
        else:
            path = Path(name)
            if not path.is_dir():
                raise LcevalError(
                    f"ruler: encoding {name!r} is neither a tiktoken encoding "
                    f"({', '.join(ENCODINGS)}) nor a local tokenizer folder"
                )
            try:
                from transformers import AutoTokenizer

                tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            except Exception as exc:  # transformers raises many types for a bad folder
                raise LcevalError(f"ruler: cannot load tokenizer from {path}: {exc}") from None
            self._encode = lambda t: tok(t, add_special_tokens=False)["input_ids"]

    def count(self, text: str) -> int:
        return len(self._encode(text))

    def counts(self, texts: Sequence[str]) -> np.ndarray:
        return np.fromiter((len(self._encode(t)) for t in texts), dtype=np.int64, count=len(texts))


@functools.cache
def _counter(name: str) -> _Counter:
    return _Counter(name)


# --------------------------------------------------------------------------------------------
# Shared sources, prepared once per process
# --------------------------------------------------------------------------------------------


@functools.cache
def _essay_sentences() -> tuple[str, np.ndarray, np.ndarray]:
    """The essays with whitespace collapsed, and the [start, end) character span of each sentence.

    RULER splits the haystack with ``nltk.sent_tokenize``; lceval splits the whole text once with
    NLTK's Punkt algorithm (default parameters, no data download needed).
    """
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    text = re.sub(r"\s+", " ", corpora.paul_graham_essays()).strip()
    spans = np.array(list(PunktSentenceTokenizer().span_tokenize(text)), dtype=np.int64)
    return text, spans[:, 0].copy(), spans[:, 1].copy()


@functools.cache
def _essay_counts(tokenizer: str) -> np.ndarray:
    """Tokens of each essay sentence with its leading space (how it is joined)."""
    text, starts, ends = _essay_sentences()
    return _counter(tokenizer).counts([" " + text[s:e] for s, e in zip(starts, ends, strict=True)])


WONDERWORDS_LISTS = ("adjectivelist.txt", "nounlist.txt", "verblist.txt")
"""The word lists of the ``wonderwords`` package that RULER reads."""


@functools.cache
def wonderwords_list(name: str) -> tuple[str, ...]:
    """One word list of the ``wonderwords`` package as RULER reads it: a line each, trailing
    whitespace removed (official ``wonderwords.random_word._get_words_from_text_file``).

    Args:
        name: one of :data:`WONDERWORDS_LISTS`.

    Raises:
        LcevalError: wonderwords is not installed or has no such list.
    """
    try:
        text = resources.files("wonderwords").joinpath("assets", name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, OSError) as exc:
        raise LcevalError(
            f"ruler: cannot read the wonderwords word list {name} ({exc}); "
            "install it: pip install wonderwords"
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(line.rstrip() for line in lines)


@functools.cache
def _key_words() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Adjectives and nouns (distinct, sorted) of the niah keys ``adjective-noun`` (official
    ``niah.py``: every pair of wonderwords' adjectives and nouns)."""
    adjectives = tuple(sorted(set(wonderwords_list("adjectivelist.txt"))))
    nouns = tuple(sorted(set(wonderwords_list("nounlist.txt"))))
    return adjectives, nouns


@functools.cache
def _cwe_words(large: bool) -> tuple[str, ...]:
    """The cwe word list, distinct and sorted.

    ``large=False``: wonderwords' nouns, adjectives and verbs (official
    ``common_words_extraction.py``). ``large=True``, used when a list needs more words than
    that: RULER then draws from its ``json/english_words.json`` (a git-lfs file of its repository,
    not shipped here); lceval's stand-in is the wonderwords words plus the distinct lower-case
    4-10-letter words of the shipped Paul Graham essays.
    """
    words = {w for name in WONDERWORDS_LISTS for w in wonderwords_list(name)}
    if large:
        words |= set(re.findall(r"\b[a-z]{4,10}\b", corpora.paul_graham_essays()))
    return tuple(sorted(words))


@functools.cache
def _cwe_word_counts(tokenizer: str, large: bool) -> np.ndarray:
    return _counter(tokenizer).counts([" " + w for w in _cwe_words(large)])


def word_sources(large: bool) -> dict[str, Any]:
    """Provenance of the word lists, for run.json: package version and sha256 of the lists."""
    digest = hashlib.sha256()
    for name in WONDERWORDS_LISTS:
        digest.update("\n".join(wonderwords_list(name)).encode("utf-8") + b"\0")
    out: dict[str, Any] = {
        "package": "wonderwords",
        "version": metadata.version("wonderwords"),
        "lists": list(WONDERWORDS_LISTS),
        "sha256": digest.hexdigest(),
        "niah_keys": "adjectivelist x nounlist (adjective-noun)",
        "cwe_words": "nounlist + adjectivelist + verblist",
    }
    if large:
        out["cwe_long_lists"] = (
            "wonderwords words + distinct 4-10 letter words of paul_graham_essays "
            "(stand-in for RULER's english_words.json)"
        )
    return out


@functools.cache
def _number_prefix_counts(tokenizer: str, n: int) -> np.ndarray:
    """Cumulative tokens of the cwe numbering ``" 1."``, ``" 2."``, ... (index k: first k)."""
    c = _counter(tokenizer).counts([f" {i}." for i in range(1, n + 1)])
    return np.concatenate([[0], np.cumsum(c)])


@functools.cache
def qa_documents(dataset: str) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """RULER's QA documents and questions (official ``qa.py``: ``read_squad``, ``read_hotpotqa``).

    Args:
        dataset: ``"squad"`` (SQuAD v2.0, answerable questions) or ``"hotpotqa"``.

    Returns:
        ``(docs, qas)``: the sorted distinct documents, and per question ``{"query", "outputs",
        "context": [doc ids], "more_context": [doc ids]}`` in file order.

    Raises:
        LcevalError: unknown dataset, or the shipped file is missing.
    """
    if dataset == "squad":
        rows = corpora.squad()
        docs = tuple(sorted({r["context"] for r in rows}))
        index = {d: i for i, d in enumerate(docs)}
        by_title: dict[str, list[int]] = {}
        for r in rows:
            ids = by_title.setdefault(r["title"], [])
            if index[r["context"]] not in ids:
                ids.append(index[r["context"]])
        qas = []
        for r in rows:
            if r["is_impossible"]:
                continue
            gold = index[r["context"]]
            qas.append(
                {
                    "query": r["question"],
                    "outputs": list(r["answers"]),
                    "context": [gold],
                    "more_context": [i for i in by_title[r["title"]] if i != gold],
                }
            )
        return docs, tuple(qas)
    if dataset == "hotpotqa":
        items = corpora.hotpotqa()
        docs = tuple(sorted({f"{t}\n{''.join(p)}" for d in items for t, p in d["context"]}))
        index = {d: i for i, d in enumerate(docs)}
        qas = [
            {
                "query": d["question"],
                "outputs": [d["answer"]],
                "context": [index[f"{t}\n{''.join(p)}"] for t, p in d["context"]],
                "more_context": [],
            }
            for d in items
        ]
        return docs, tuple(qas)
    raise LcevalError(f"ruler: unknown qa dataset {dataset!r}; choose squad or hotpotqa")


@functools.cache
def _doc_counts(dataset: str, tokenizer: str) -> np.ndarray:
    docs, _ = qa_documents(dataset)
    return _counter(tokenizer).counts([d + "\n\n" for d in docs])


@functools.cache
def _header_prefix_counts(tokenizer: str, n: int) -> np.ndarray:
    """Cumulative tokens of the headers ``"Document i:\\n"``, i = 1..n."""
    c = _counter(tokenizer).counts([f"Document {i}:\n" for i in range(1, n + 1)])
    return np.concatenate([[0], np.cumsum(c)])


# --------------------------------------------------------------------------------------------
# Random draws
# --------------------------------------------------------------------------------------------


def _rand_number(rng: np.random.Generator) -> str:
    return str(int(rng.integers(1_000_000, 10_000_000)))  # 7 digits, as niah.py


def _rand_uuid(rng: np.random.Generator) -> str:
    import uuid

    return str(uuid.UUID(int=int.from_bytes(rng.bytes(16), "big"), version=4))


def _rand_word_pair(rng: np.random.Generator) -> str:
    """A random ``adjective-noun`` key (uniform over the pairs, as official ``niah.py``)."""
    adjectives, nouns = _key_words()
    i, j = int(rng.integers(len(adjectives))), int(rng.integers(len(nouns)))
    return f"{adjectives[i]}-{nouns[j]}"


def _rand(kind: str, rng: np.random.Generator) -> str:
    if kind == "numbers":
        return _rand_number(rng)
    if kind == "words":
        return _rand_word_pair(rng)
    if kind == "uuids":
        return _rand_uuid(rng)
    raise LcevalError(f"ruler: unknown needle type {kind!r}")


def _rng(seed: int, task: str, length: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, TASKS.index(task), length, index])


# --------------------------------------------------------------------------------------------
# Builders per task family
# --------------------------------------------------------------------------------------------


@dataclass
class _Item:
    """One built sample before it becomes a Sample and a Context."""

    description: str
    context: str
    instruction: str
    prefix: str
    joiner: str
    outputs: list[str]
    context_tokens: int
    overhead_tokens: int
    haystack: str
    gold: dict[str, Any]


def _overhead(c: _Counter, description: str, instruction: str, prefix: str, joiner: str) -> int:
    return c.count(description + joiner) + c.count(joiner + instruction) + c.count(prefix)


class _Builder:
    """The family builders of one build (shared token counter, seed, caches).

    Each family builder ``(task, args, length, index) -> _Item`` makes sample ``index`` of
    ``task`` at target length ``length`` (tokens) from the family's typed arguments, drawing from
    its own seeded generator.
    """

    def __init__(self, tokenizer: str, seed: int, max_length: int) -> None:
        self.tok = tokenizer
        self.c = _counter(tokenizer)
        self.seed = seed
        self.max_length = max_length
        self._pools: dict[tuple[str, str], tuple[np.ndarray, dict[str, int], np.ndarray]] = {}
        self._vt_icl: dict[int, tuple[str, list[str]]] = {}
        self._coded: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.large_word_list = False
        """Whether a cwe list needed the larger word list (recorded in run.json)."""

    # ---- haystack helpers -------------------------------------------------------------------
    def _essay(self, budget: int) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
        """Essay text (repeated if needed) with sentence spans and cumulative token counts."""
        text, starts, ends = _essay_sentences()
        counts = _essay_counts(self.tok)
        total = int(counts.sum())
        reps = max(1, -(-budget // max(total, 1)))
        if reps > 1:
            offs = np.arange(reps) * (len(text) + 1)
            starts = (starts[None, :] + offs[:, None]).ravel()
            ends = (ends[None, :] + offs[:, None]).ravel()
            counts = np.tile(counts, reps)
            text = " ".join([text] * reps)
        return text, starts, ends, np.concatenate([[0], np.cumsum(counts)])

    def _niah_pool(
        self, task: str, kind_k: str, kind_v: str, budget: int
    ) -> tuple[np.ndarray, dict[str, int], np.ndarray]:
        """Distractor needle lines for the ``needle`` haystack, with keys and token counts.

        One pool per task and build (seeded), large enough for the longest length; each sample
        draws its distractors from it, so lines are tokenized once, not per sample.
        """
        key = (task, kind_k)
        if key in self._pools:
            return self._pools[key]
        rng = np.random.default_rng([self.seed, TASKS.index(task), 0, 2**31])
        probe = NEEDLE.format(
            type_needle_v=kind_v, key=_rand(kind_k, rng), value=_rand(kind_v, rng)
        )
        per_line = max(1, self.c.count(probe + "\n"))
        n = int(budget / per_line * 1.5) + 64
        keys: list[str] = []
        seen: set[str] = set()
        while len(keys) < n:
            k = _rand(kind_k, rng)
            if k not in seen:
                seen.add(k)
                keys.append(k)
        lines = [NEEDLE.format(type_needle_v=kind_v, key=k, value=_rand(kind_v, rng)) for k in keys]
        counts = self.c.counts([ln + "\n" for ln in lines])
        self._pools[key] = (
            np.array(lines, dtype=object),
            {k: i for i, k in enumerate(keys)},
            counts,
        )
        return self._pools[key]

    # ---- niah ------------------------------------------------------------------------------
    def niah(self, task: str, args: NiahArgs, length: int, index: int) -> _Item:
        """Needle in a haystack (official ``niah.py``).

        ``num_needle_k`` keys with ``num_needle_v`` values each are stated as needles ("One of
        the special magic numbers for KEY is: VALUE.") at random depths of the haystack;
        ``num_needle_q`` keys are asked about. Answer: every value of the queried keys.
        """
        rng = _rng(self.seed, task, length, index)
        kind_k, kind_v = args.type_needle_k, args.type_needle_v
        nq = args.num_needle_q
        nk = max(args.num_needle_k, nq)
        nv = args.num_needle_v
        keys: list[str] = []
        while len(keys) < nk:
            k = _rand(kind_k, rng)
            if k not in keys:
                keys.append(k)
        values = [[_rand(kind_v, rng) for _ in range(nv)] for _ in keys]
        needles = [
            NEEDLE.format(type_needle_v=kind_v, key=k, value=v)
            for k, vs in zip(keys, values, strict=True)
            for v in vs
        ]
        needles = [needles[i] for i in rng.permutation(len(needles))]
        picked = sorted(int(i) for i in rng.choice(nk, nq, replace=False))
        picked = [int(i) for i in rng.permutation(picked)]
        queries = [keys[i] for i in picked]
        answers = [a for i in picked for a in values[i]]
        query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]

        desc, instr, prefix, tv = NIAH_DESC, NIAH_INSTR, NIAH_PREFIX, str(kind_v)
        if nq * nv == 1:  # official: singular wording for a single answer

            def singular(t: str) -> str:
                t = t.replace("Some", "A").replace("are all", "is").replace("are", "is")
                return t.replace("answers", "answer")

            desc, instr, prefix, tv = singular(desc), singular(instr), singular(prefix), kind_v[:-1]
        desc = desc.format(type_needle_v=tv)
        instr = instr.format(type_needle_v=tv, query=query)
        prefix = prefix.format(type_needle_v=tv, query=query)
        joiner = "\n"
        overhead = _overhead(self.c, desc, instr, prefix, joiner)
        budget = length - TOKENS_TO_GENERATE["niah"] - overhead
        hay = args.type_haystack
        depths: list[int] = []
        if hay == "essay":
            needle_tok = int(self.c.counts([" " + n for n in needles]).sum())
            text, starts, ends, cum = self._essay(budget)
            n = max(0, int(np.searchsorted(cum, budget - needle_tok, side="right")) - 1)
            depths = sorted(int(d) for d in rng.choice(DEPTHS, len(needles), replace=False))
            pos = [0] + [int(n * d / 100) for d in depths] + [n]
            parts = []
            for i in range(1, len(pos)):
                a, b = pos[i - 1], pos[i]
                parts.append(text[starts[a] : ends[b - 1]] if b > a else "")
                if i - 1 < len(needles):
                    parts.append(needles[i - 1])
            context = " ".join(parts)
            ctx_tokens = int(cum[n]) + needle_tok
        else:
            needle_tok = int(self.c.counts([n + "\n" for n in needles]).sum())
            if hay == "noise":
                per = self.c.count(NOISE + "\n")
                n = max(0, (budget - needle_tok) // per)
                lines_src: list[str] = [NOISE] * n
                ctx_tokens = n * per + needle_tok
            elif hay == "needle":
                lines, pkeys, pcounts = self._niah_pool(task, kind_k, kind_v, self.max_length)
                order = rng.permutation(len(lines))
                bad = [pkeys[k] for k in keys if k in pkeys]
                if bad:  # a distractor never carries a queried key
                    order = order[~np.isin(order, bad)]
                cum = np.concatenate([[0], np.cumsum(pcounts[order])])
                n = max(0, int(np.searchsorted(cum, budget - needle_tok, side="right")) - 1)
                lines_src = lines[order[:n]].tolist()
                ctx_tokens = int(cum[n]) + needle_tok
            else:
                raise LcevalError(f"ruler: unknown haystack {hay!r}")
            idx = sorted(
                int(i) for i in rng.choice(max(n, 1), len(needles), replace=n < len(needles))
            )
            # official: insert needles at the sampled line indexes (needles in reverse order)
            out: list[str] = []
            prev = 0
            for j, at in enumerate(idx):
                out.extend(lines_src[prev:at])
                out.append(needles[len(needles) - 1 - j])
                prev = at
            out.extend(lines_src[prev:])
            context = "\n".join(out)
            depths = [round(100 * i / max(n, 1)) for i in idx]
        return _Item(
            desc,
            context,
            instr,
            prefix,
            joiner,
            answers,
            ctx_tokens,
            overhead,
            hay,
            {"keys": tuple(queries), "depths": tuple(depths)},
        )

    # ---- variable tracking -----------------------------------------------------------------
    @staticmethod
    def _chain(
        rng: np.random.Generator, hops: int, k: int, icl: bool
    ) -> tuple[list[str], list[str]]:
        names: list[str] = []
        while len(names) < hops + 1:
            v = "".join(rng.choice(list(string.ascii_uppercase), k))
            if v not in names and v != "VAR":
                names.append(v)
        value = "12345" if icl else str(int(rng.integers(10000, 99999)))
        chain = [f"VAR {names[0]} = {value}"]
        chain += [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(hops)]
        return names, chain

    def _vt_noise(self, rng: np.random.Generator, chain: list[str], budget: int) -> tuple[str, int]:
        per = self.c.count(NOISE + "\n")
        chain_tok = int(self.c.counts([c + "\n" for c in chain]).sum())
        n = max(len(chain), (budget - chain_tok) // per)
        positions = sorted(int(p) for p in rng.choice(n, len(chain), replace=False))
        out: list[str] = []
        prev = 0
        for p, line in zip(positions, chain, strict=True):
            out.extend([NOISE] * (p - prev))
            out.append(line)
            prev = p
        out.extend([NOISE] * (n - prev))
        return "\n".join(out), n * per + chain_tok

    def _vt_example(self, hops: int) -> tuple[str, list[str]]:
        """The one-shot example (official: built once at 500 tokens, 3-letter names, 12345)."""
        if hops not in self._vt_icl:
            rng = _rng(self.seed, "vt", 0, 2**31)
            names, chain = self._chain(rng, hops, 3, icl=True)
            instr = VT_INSTR.format(query="12345")
            prefix = VT_PREFIX.format(num_v=hops + 1, query="12345")
            overhead = _overhead(self.c, VT_DESC, instr, prefix, "\n")
            ctx, _ = self._vt_noise(rng, chain, _VT_ICL_LENGTH - overhead)
            text = VT_DESC + "\n" + ctx + "\n" + instr + prefix + " " + " ".join(names) + "\n"
            self._vt_icl[hops] = (text, names)
        return self._vt_icl[hops]

    def vt(self, task: str, args: VtArgs, length: int, index: int) -> _Item:
        """Variable tracking (official ``variable_tracking.py``).

        A chain ``VAR A = 12345``, ``VAR B = VAR A``, ... of ``num_hops`` assignments hidden
        among noise lines, after one solved example (built once at 500 tokens, then renamed).
        Answer: every variable that holds the queried value.
        """
        rng = _rng(self.seed, task, length, index)
        hops = args.num_hops
        example, old = self._vt_example(hops)
        for name in old:  # official randomize_icl: new names of the same length, new value
            new = "".join(rng.choice(list(string.ascii_uppercase), len(name)))
            example = example.replace(name, new)
        example = example.replace("12345", str(int(rng.integers(10000, 99999))))
        names, chain = self._chain(rng, hops, 5, icl=False)
        value = chain[0].split("=")[-1].strip()
        desc = example + "\n" + VT_DESC
        instr = VT_INSTR.format(query=value)
        prefix = VT_PREFIX.format(num_v=hops + 1, query=value)
        overhead = _overhead(self.c, desc, instr, prefix, "\n")
        budget = length - TOKENS_TO_GENERATE["variable_tracking"] - overhead
        context, ctx_tokens = self._vt_noise(rng, chain, budget)
        return _Item(
            desc,
            context,
            instr,
            prefix,
            "\n",
            names,
            ctx_tokens,
            overhead,
            "noise",
            {"value": value},
        )

    # ---- common words ----------------------------------------------------------------------
    def cwe(self, task: str, args: CweArgs, length: int, index: int) -> _Item:
        """Common words extraction (official ``common_words_extraction.py``).

        A numbered list of words: ``num_cw`` common words repeated ``freq_cw`` times among as
        many uncommon words, each repeated ``freq_ucw`` times, as fit the budget (6 and 1 below
        4K tokens), shuffled; one solved example first. Answer: the common words. Words come from
        wonderwords; a list longer than wonderwords holds draws from the larger list instead
        (:func:`_cwe_words`).
        """
        rng = _rng(self.seed, task, length, index)
        ncw = args.num_cw
        if length < 4096:  # official: smaller repeats and few-shot below 4K
            shot, rc, ru = (20, 3, 1), 6, 1
        else:
            shot, rc, ru = (40, 10, 3), args.freq_cw, args.freq_ucw

        def numbered(words: Sequence[str]) -> str:  # "1. w1 2. w2 ..." (official format)
            return " ".join(map(str.__add__, _numbering(_pow2_at_least(len(words))), words))

        vocab = np.array(_cwe_words(False), dtype=object)
        ex = rng.choice(len(vocab), shot[0], replace=False)
        ex_list = np.concatenate([np.repeat(ex[:ncw], shot[1]), np.repeat(ex[ncw:], shot[2])])
        ex_list = rng.permutation(ex_list)
        example = (
            CWE_DESC
            + "\n"
            + numbered(vocab[ex_list].tolist())
            + "\n"
            + CWE_INSTR
            + CWE_PREFIX
            + " "
            + numbered(vocab[ex[:ncw]].tolist())
        )
        desc = example + "\n" + CWE_DESC
        overhead = _overhead(self.c, desc, CWE_INSTR, CWE_PREFIX, "\n")
        budget = length - TOKENS_TO_GENERATE["common_words_extraction"] - overhead
        for large in (False, True):
            vocab = np.array(_cwe_words(large), dtype=object)
            wcounts = _cwe_word_counts(self.tok, large)
            order = rng.permutation(len(vocab))
            common, rest = order[:ncw], order[ncw:]
            nums = _number_prefix_counts(self.tok, _pow2_at_least(ncw * rc + ru * len(rest)))
            ks = np.arange(len(rest) + 1)
            tokens = (
                nums[ncw * rc + ru * ks]
                + rc * int(wcounts[common].sum())
                + ru * np.concatenate([[0], np.cumsum(wcounts[rest])])
            )
            k = max(0, int(np.searchsorted(tokens, budget, side="right")) - 1)
            if k < len(rest):  # the list has more words than fit: draw from it (official)
                break
        self.large_word_list |= large
        uncommon = rest[:k]
        words = rng.permutation(np.concatenate([np.repeat(common, rc), np.repeat(uncommon, ru)]))
        context = numbered(vocab[words].tolist())
        return _Item(
            desc,
            context,
            CWE_INSTR,
            CWE_PREFIX,
            "\n",
            vocab[common].tolist(),
            int(tokens[k]),
            overhead,
            "words",
            {},
        )

    # ---- frequent words --------------------------------------------------------------------
    def _coded_pool(self, task: str, wordlen: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct random coded words (``wordlen`` lower-case letters) with token counts; one
        pool per build, large enough for the longest length, tokenized once."""
        if wordlen not in self._coded:
            rng = np.random.default_rng([self.seed, TASKS.index(task), 0, 2**31])
            need = max(2000, self.max_length // 50 * 4)
            letters = np.array(list(string.ascii_lowercase))
            draws = letters[rng.integers(0, 26, size=(need * 2, wordlen))]
            words = sorted({"".join(r) for r in draws})
            words_arr = np.array(words[: need * 2], dtype=object)
            counts = self.c.counts([" " + w for w in words_arr.tolist()])
            self._coded[wordlen] = (words_arr, counts)
        return self._coded[wordlen]

    def fwe(self, task: str, args: FweArgs, length: int, index: int) -> _Item:
        """Frequent words extraction (official ``freq_words_extraction.py``).

        Random coded words with Zipf-distributed counts (exponent ``alpha``; vocabulary
        ``length // 50`` words), shuffled; the most frequent word is ``...`` (noise). Answer: the
        three next most frequent words.
        """
        from scipy.special import zeta

        rng = _rng(self.seed, task, length, index)
        alpha = args.alpha
        budget_all = length - TOKENS_TO_GENERATE["freq_words_extraction"]
        vocab_size = max(5, budget_all // 50)  # official: vocab_size = max_seq_length // 50
        pool, pcounts = self._coded_pool(task, args.coded_wordlen)
        pick = rng.choice(len(pool), vocab_size, replace=False)
        vocab = pool[pick].copy()
        wc = pcounts[pick].copy()
        vocab[0] = "..."  # official: the top-ranked word is noise
        wc[0] = self.c.count(" ...")
        overhead = _overhead(self.c, FWE_DESC, FWE_INSTR, FWE_PREFIX, " ")
        budget = budget_all - overhead
        weights = np.arange(1, vocab_size + 1, dtype=np.float64) ** -alpha / zeta(alpha)

        def tokens(n: int) -> int:
            return int(((n * weights).astype(np.int64) * wc).sum())

        lo, hi = 0, max(1, 4 * budget)
        while lo < hi:  # largest word count whose text fits the budget
            mid = (lo + hi + 1) // 2
            if tokens(mid) <= budget:
                lo = mid
            else:
                hi = mid - 1
        cnt = (lo * weights).astype(np.int64)
        words = rng.permutation(np.repeat(np.arange(vocab_size), cnt))
        context = " ".join(vocab[words].tolist())
        return _Item(
            FWE_DESC,
            context,
            FWE_INSTR,
            FWE_PREFIX,
            " ",
            vocab[1:4].tolist(),
            tokens(lo),
            overhead,
            "coded_words",
            {},
        )

    # ---- qa --------------------------------------------------------------------------------
    def qa(self, task: str, args: QaArgs, length: int, index: int) -> _Item:
        """Question answering on SQuAD or HotpotQA (official ``qa.py``).

        Question ``index`` of the dataset with its own documents (and, for SQuAD, the other
        paragraphs of its article) among as many other documents as fit, shuffled. Answer: any
        of the question's answers.
        """
        rng = _rng(self.seed, task, length, index)
        dataset = args.dataset
        docs, qas = qa_documents(dataset)
        if index >= len(qas):
            raise LcevalError(f"ruler: {dataset} has only {len(qas)} questions; lower num_samples")
        qa = qas[index]  # official: question i of the file order
        dcounts = _doc_counts(dataset, self.tok)
        instr = QA_INSTR.format(query=qa["query"])
        joiner = "\n\n"
        overhead = _overhead(self.c, QA_DESC, instr, QA_PREFIX, joiner)
        budget = length - TOKENS_TO_GENERATE["qa"] - overhead
        curr = list(qa["context"])
        more = [int(i) for i in rng.permutation(qa["more_context"])] if qa["more_context"] else []
        perm = rng.permutation(len(docs))
        others = perm[~np.isin(perm, np.array(curr + more, np.int64))]
        head = np.array(curr + more, np.int64)
        reps = 1 if int(dcounts.sum()) > budget else -(-budget // max(int(dcounts.sum()), 1)) + 1
        cand = np.concatenate([head, *([others] * reps)])  # official: repeat docs if too few
        cum = np.concatenate([[0], np.cumsum(dcounts[cand])])
        heads = _header_prefix_counts(self.tok, _pow2_at_least(len(cand)))
        total = cum + heads[: len(cum)]
        n = max(len(curr), int(np.searchsorted(total, budget, side="right")) - 1)
        chosen = cand[:n][rng.permutation(n)]
        context = "\n\n".join(
            DOCUMENT.format(i=i + 1, document=docs[d]) for i, d in enumerate(chosen)
        )
        return _Item(
            QA_DESC,
            context,
            instr,
            QA_PREFIX,
            joiner,
            list(qa["outputs"]),
            int(total[n]),
            overhead,
            dataset,
            {"dataset": dataset, "doc_ids": tuple(curr)},
        )


@functools.cache
def _numbering(n: int) -> tuple[str, ...]:
    return tuple(f"{i}. " for i in range(1, n + 1))


def _pow2_at_least(n: int) -> int:
    """Round a table size up to a power of two (so cached tables are shared across lengths)."""
    return 1 << max(10, int(n - 1).bit_length())


# --------------------------------------------------------------------------------------------
# Params and the builder
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """RULER's builder params (defaults: 500 samples per task and length, seed 42)."""

    tasks: tuple[str, ...] = field(
        default=TASKS, metadata=params.check(params.names(TASKS, "task"))
    )
    """Task names (:data:`TASKS`); null: all 13."""
    lengths: tuple[int, ...] = field(
        default=(4096,), metadata=params.check(params.lengths(MIN_LENGTH))
    )
    """Target lengths L in tokens, each >= :data:`MIN_LENGTH` (sorted, deduplicated)."""
    num_samples: int = field(default=500, metadata=params.check(params.POSITIVE))
    """Samples per task and length."""
    seed: int = field(default=42, metadata=params.check(params.SEED))
    """Seed of every random draw."""
    encoding: str = field(default=DEFAULT_ENCODING, metadata=params.check(params.text()))
    """``"o200k_base"``, ``"cl100k_base"`` or a local Hugging Face tokenizer folder."""
    remove_newline_tab: bool = field(default=False, metadata=params.check(params.boolean))
    """The official ``--remove_newline_tab``: newlines and tabs become spaces."""

    def __post_init__(self) -> None:
        if self.lengths is None:  # null: the default
            object.__setattr__(self, "lengths", (4096,))


def _flatten(text: str) -> str:
    """Official ``--remove_newline_tab``: newlines and tabs become spaces, spaces collapse."""
    return " ".join(text.replace("\n", " ").replace("\t", " ").strip().split())


def build_ruler(raw: Mapping[str, Any]) -> BuildResult:
    """Build RULER's synthetic tasks at the given lengths.

    Args:
        raw: the keys of :class:`Config` (``tasks``, ``lengths``, ``num_samples``, ``seed``,
            ``encoding``, ``remove_newline_tab``); the keys of the notebook's shared sections
            (:data:`lceval.params.NOTEBOOK_SECTIONS`), ``run_id`` and ``outputs_root`` are
            accepted and ignored, so ``params/07_ruler/*.yaml`` build as they are.

    Returns:
        One Sample (gold: the task's Gold dataclass) and one Context per task, length and index
        (see the module docstring). Same params give identical samples.

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
            for i in range(p.num_samples):
                it = make(task, args, length, i)
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
    sources: dict[str, Any] = {"tokenizer": b.tok}
    families = {VARIANTS[t].family for t in p.tasks}
    essays = any(
        VARIANTS[t].family == "niah" and family_args(t).type_haystack == "essay" for t in p.tasks
    )
    if essays or b.large_word_list:
        sources["paul_graham_essays"] = corpora.source_info("paul_graham_essays")
    if families & {"niah", "common_words_extraction"}:
        sources["word_lists"] = word_sources(b.large_word_list)
    for t in p.tasks:
        if VARIANTS[t].family == "qa":
            dataset = family_args(t).dataset
            sources[dataset] = corpora.source_info(dataset)
    return BuildResult(samples, contexts, sources, b.tok if b.tok in ENCODINGS else None)
