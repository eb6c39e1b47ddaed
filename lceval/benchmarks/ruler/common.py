"""RULER's shared builder core: family arguments, token counting, corpora, random draws and the
builder state that every task family uses (:mod:`lceval.benchmarks.ruler.build` assembles them).

Reproduces the official ``scripts/data/synthetic`` helpers (see ``build.py``'s module docstring).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import typing
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lceval.benchmarks.ruler.gold import FAMILIES, TASKS, VARIANTS
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.io import atomic_open
from lceval.core.tokens import ENCODINGS, encoding_digest, get_encoding

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

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
"""The noise sentence of the ``noise`` haystack (niah) and of variable tracking."""

MIN_LENGTH = 256
"""Shortest target length (tokens). A task whose prompt and answer budget do not fit a length
is refused with its own message (a short niah or qa prompt fits 256 tokens: the NTK sweep's
smoke runs use it; vt and cwe need more)."""

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
                from transformers import AutoTokenizer  # heavy: transformers

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
# Shared sources, prepared once per process (the slow parts kept on disk between processes)
# --------------------------------------------------------------------------------------------


STORE_FORMAT = 1
"""Version of the arrays :func:`_stored` keeps on disk (raised when their meaning changes)."""


def store_dir() -> Path:
    """Where RULER's corpus preparation is kept between builds: ``ruler/`` under
    ``$LCEVAL_CACHE`` (default ``~/.cache/lceval``)."""
    root = os.environ.get("LCEVAL_CACHE")
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "lceval") / "ruler"


def _stored(
    kind: str, key: Sequence[str], shape: tuple[int | None, ...], compute: Callable[[], np.ndarray]
) -> np.ndarray:
    """``compute()`` (an int64 array of ``shape``; None: any size on that axis), kept on disk
    under :func:`store_dir` by the sha256 of ``kind`` and ``key`` (digests of the inputs
    themselves: content-addressed), so the next build, in any process, reads it instead of
    computing it again (sentence splitting and token counts of the essays and QA documents:
    10-20 s of each RULER build on 2 loaded cores). An entry that cannot be read or has another
    shape is computed again; a folder that cannot be written leaves the value uncached."""
    digest = hashlib.sha256()
    for part in (str(STORE_FORMAT), kind, *key):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little") + data)
    path = store_dir() / f"{kind}-{digest.hexdigest()[:40]}.npy"
    try:
        found = np.load(path, allow_pickle=False)
        if (
            found.dtype == np.int64
            and found.ndim == len(shape)
            and all(want in (None, got) for want, got in zip(shape, found.shape, strict=True))
        ):
            return found
    except (OSError, ValueError, EOFError):
        pass  # missing or corrupt: computed again below
    value = np.ascontiguousarray(compute(), dtype=np.int64)
    try:
        with atomic_open(path, "wb") as f:
            np.save(f, value, allow_pickle=False)
    except LcevalError:
        pass  # an unwritable cache: computed each time
    return value


def _text_digest(texts: Sequence[str]) -> str:
    """sha256 of texts, each length-prefixed (the key of values computed from them)."""
    digest = hashlib.sha256()
    for t in texts:
        data = t.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


@functools.cache
def _essay_sentences() -> tuple[str, np.ndarray, np.ndarray]:
    """The essays with whitespace collapsed, and the [start, end) character span of each sentence.

    RULER splits the haystack with ``nltk.sent_tokenize``; lceval splits the whole text once with
    NLTK's Punkt algorithm (default parameters, no data download needed), kept on disk by the
    text's digest and NLTK's version (:func:`_stored`).
    """
    text = re.sub(r"\s+", " ", corpora.paul_graham_essays()).strip()

    def split() -> np.ndarray:
        from nltk.tokenize.punkt import PunktSentenceTokenizer  # heavy: nltk

        return np.array(list(PunktSentenceTokenizer().span_tokenize(text)), dtype=np.int64)

    nltk = metadata.version("nltk")
    spans = _stored("sentences", [_text_digest([text]), f"nltk-{nltk}"], (None, 2), split)
    return text, spans[:, 0].copy(), spans[:, 1].copy()


@functools.cache
def _essay_word_ends() -> np.ndarray:
    """Character offset after each whitespace-separated word of the collapsed essays."""
    text, _, _ = _essay_sentences()  # whitespace collapsed to single spaces, stripped
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return np.append(np.flatnonzero(codes == ord(" ")), len(text)).astype(np.int64)


def _counts(texts: Sequence[str], tokenizer: str, kind: str) -> np.ndarray:
    """Tokens of each of ``texts``; a tiktoken encoding's counts kept on disk
    (:func:`_stored`, keyed by the texts and :func:`lceval.core.tokens.encoding_digest`), a
    tokenizer folder's computed each time."""
    counter = _counter(tokenizer)
    if tokenizer not in ENCODINGS:
        return counter.counts(texts)
    key = [_text_digest(texts), encoding_digest(tokenizer)]
    return _stored(kind, key, (len(texts),), lambda: counter.counts(texts))


@functools.cache
def _essay_counts(tokenizer: str) -> np.ndarray:
    """Tokens of each essay sentence with its leading space (how it is joined)."""
    text, starts, ends = _essay_sentences()
    pieces = [" " + text[s:e] for s, e in zip(starts, ends, strict=True)]
    return _counts(pieces, tokenizer, "essay-counts")


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
    """Tokens of each QA document with the separator after it."""
    docs, _ = qa_documents(dataset)
    return _counts([d + "\n\n" for d in docs], tokenizer, f"{dataset}-counts")


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


def _rng(
    seed: int, task: str, length: int, index: int, draw: tuple[int, ...] = ()
) -> np.random.Generator:
    """The generator of sample ``index``'s draws; ``draw`` names a fresh draw of the same sample
    (the official probe and back-off draw anew at each size: ``build.pinned_units``)."""
    return np.random.default_rng([seed, TASKS.index(task), length, index, *draw])


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


class Core:
    """The state shared by the family builders of one build (token counter, seed, caches).

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
        self.fill = "official"
        """The build's ``fill`` (:data:`FILLS`): the fwe vocabulary follows its generator."""
        self.large_word_list = False
        """Whether a cwe list needed the larger word list (recorded in run.json)."""

    # ---- haystack helpers -------------------------------------------------------------------
    def _essay(self, budget: int) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
        """Essay text (repeated to hold ``budget`` tokens) with sentence spans and cumulative
        token counts."""
        total = int(_essay_counts(self.tok).sum())
        return self._essay_reps(max(1, -(-budget // max(total, 1))))

    def _essay_words(self, words: int) -> tuple[str, np.ndarray, np.ndarray, int, int]:
        """The first ``words`` words of the essays (repeated if needed), as official ``niah.py``
        takes ``haystack[:num_haystack]`` of the whitespace-split essays: ``(text, starts, ends,
        n, tokens)`` where the first ``n`` sentence spans cover those words (the last one cut at
        the last word) and ``tokens`` is their token count."""
        base, _, _ = _essay_sentences()
        wends = _essay_word_ends()
        reps, j = divmod(words - 1, len(wends))
        text, starts, ends, cum = self._essay_reps(reps + 1)
        cut = int(wends[j]) + reps * (len(base) + 1)
        k = int(np.searchsorted(ends, cut, side="right"))
        tokens = int(cum[k])
        if k < len(starts) and starts[k] < cut:  # the last sentence, cut at the last word
            ends = ends.copy()
            ends[k] = cut
            tokens += self.c.count(" " + text[starts[k] : cut])
            k += 1
        return text, starts, ends, k, tokens

    def _essay_reps(self, reps: int) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
        """Essay text repeated ``reps`` times with sentence spans and cumulative token counts."""
        text, starts, ends = _essay_sentences()
        counts = _essay_counts(self.tok)
        if reps > 1:
            offs = np.arange(reps) * (len(text) + 1)
            starts = (starts[None, :] + offs[:, None]).ravel()
            ends = (ends[None, :] + offs[:, None]).ravel()
            counts = np.tile(counts, reps)
            text = " ".join([text] * reps)
        return text, starts, ends, np.concatenate([[0], np.cumsum(counts)])


FILLS = ("official", "binary", "exact")
"""How a haystack is sized. ``official`` (default): as the pinned official generator
(nvidia-long-context-eval 26.3, NVIDIA's packaged RULER; :func:`lceval.benchmarks.ruler.build.
pinned_units`), in haystack units (essay words, noise or needle lines, cwe words, fwe word count,
qa documents): once per task and length a probe grows in fixed steps (:func:`official_step`),
then each sample backs off in those steps until it fits. ``binary``: as NVIDIA/RULER's main
branch since June 2025 (a binary-search probe, fwe and vt budgets net of the answer;
:func:`lceval.benchmarks.ruler.build.official_units`). ``exact``: every sample filled with as
many units as fit its own token budget."""


def official_step(family: str, args: Any, length: int, fill: str = "official") -> int:
    """The official back-off step (``incremental``) in haystack units of a task at ``length``.

    niah: 500 essay words (``essay``) or 25 lines (``noise``, ``needle``; 5 below 4K); vt: 10
    noise lines (``binary``: 5 below 4K); cwe: 10 words; qa: 10 documents; fwe:
    ``length // 32`` of its Zipf word count (``binary``: ``(length - 50) // 32``) (official
    ``niah.py``, ``variable_tracking.py``, ``common_words_extraction.py``, ``qa.py``,
    ``freq_words_extraction.py``; ``official``: nvidia-long-context-eval 26.3, ``binary``:
    NVIDIA/RULER main).
    """
    if family == "niah":
        if args.type_haystack == "essay":
            return 500
        return 25 if length >= 4096 else 5
    if family == "variable_tracking":
        return 10 if length >= 4096 or fill == "official" else 5
    if family == "freq_words_extraction":
        gen = 0 if fill == "official" else TOKENS_TO_GENERATE[family]
        return max(1, (length - gen) // 32)
    return 10


@functools.cache
def _numbering(n: int) -> tuple[str, ...]:
    return tuple(f"{i}. " for i in range(1, n + 1))


def _pow2_at_least(n: int) -> int:
    """Round a table size up to a power of two (so cached tables are shared across lengths)."""
    return 1 << max(10, int(n - 1).bit_length())
