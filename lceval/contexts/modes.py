"""What a model reads in place of a sample's long context under ``-o context=MODE``: ``full``
(as built), ``none`` (no context: description and instruction alone, as LongBench v2's
``pred.py --no_context``), ``bm25:K`` / ``dense:K`` (the K chunks of 1,024 tokens most relevant
to the instruction, :class:`lceval.contexts.retrieval.DocumentIndex`). Answers keep the sample's
id and hash, so they join the full-context ones; the mode is in their name (:func:`variant_name`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from lceval import params
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample
from lceval.core.tokens import count_tokens

if TYPE_CHECKING:  # numpy, and bm25s / FlagEmbedding when a retriever runs
    from lceval.contexts.retrieval import DocumentIndex

CHUNK_TOKENS = 1024
"""Tokens per retrieved chunk (L-Eval's official baselines: 1,024 tiktoken tokens)."""

SEPARATOR = "@context="
"""Between a model's name and its mode in the name of a baseline's answers
(``embedded@context=none``)."""


CONTEXT_KINDS: tuple[str, ...] = ("full", "none", "bm25", "dense")


@dataclass(frozen=True)
class ContextMode:
    """One ``-o context`` value: ``full``, ``none``, ``bm25:K`` or ``dense:K``."""

    kind: str
    k: int = 0
    """Chunks kept by a retriever (``bm25:4``: 4); 0 for ``full`` and ``none``."""

    def __str__(self) -> str:
        return f"{self.kind}:{self.k}" if self.k else self.kind

    @classmethod
    def parse(cls, text: Any) -> ContextMode:
        """``full``, ``none``, ``bm25:K`` or ``dense:K`` (K >= 1 chunks; ``bm25`` alone: K = 4,
        L-Eval's official top 4).

        Raises:
            LcevalError: any other value, in one line naming the choices.
        """
        raw = str(text).strip().lower() if isinstance(text, str) else ""
        kind, sep, k = raw.partition(":")
        choices = "choose full, none, bm25:K or dense:K (K chunks of 1,024 tokens)"
        if kind in ("full", "none") and not sep:
            return cls(kind)
        if kind in ("bm25", "dense"):
            if not sep:
                return cls(kind, 4)
            if k.isdigit() and int(k) >= 1:
                return cls(kind, int(k))
            raise LcevalError(f"option context {text!r:.40}: K must be an integer >= 1; {choices}")
        raise LcevalError(f"option context {text!r:.40} is not a context mode; {choices}")

    @classmethod
    def parse_list(cls, value: Any) -> tuple[ContextMode, ...]:
        """``-o context=full,none`` (a comma-separated string or a YAML list) as modes, in the
        order given, duplicates dropped (:class:`ContextOption`).

        Raises:
            LcevalError: an empty list, not a string or list, or a value :meth:`parse` refuses.
        """
        return params.validate(ContextOption, {"context": value}, "cli").context


class ContextOption(params.Declared):
    """The ``-o context`` option, declared once: one mode or a list of them."""

    context: Annotated[
        tuple[Annotated[ContextMode, BeforeValidator(ContextMode.parse)], ...],
        Field(min_length=1),
        AfterValidator(lambda modes: tuple(dict.fromkeys(modes))),
        BeforeValidator(lambda v: v.split(",") if isinstance(v, str) else v, str | list[str]),
    ] = Field(json_schema_extra={"flag": "-o context"})


def variant_name(model: str, mode: ContextMode) -> str:
    """The name the answers of ``model`` under ``mode`` are stored and scored under: the model's
    own for ``full``, ``<model>@context=<mode>`` otherwise."""
    return model if mode.kind == "full" else f"{model}{SEPARATOR}{mode}"


def split_variant(name: str) -> tuple[str, str]:
    """``(model, mode)`` of a stored name (:func:`variant_name`); mode ``full`` for a plain one."""
    base, sep, mode = name.rpartition(SEPARATOR)
    return (base, mode) if sep and base else (name, "full")


def check_retrievers(modes: Sequence[ContextMode]) -> None:
    """Whether the retrievers ``modes`` need are installed, checked without importing them (so
    a missing one stops ``lceval infer`` before any engine starts).

    Raises:
        LcevalError: bm25s, sentence-transformers or the shipped MiniLM is missing.
    """
    from lceval.contexts.retrieval import _model_path  # pulls numpy

    kinds = {m.kind for m in modes}
    if "bm25" in kinds and importlib.util.find_spec("bm25s") is None:
        raise LcevalError("context=bm25 needs `pip install bm25s`")
    if "dense" in kinds:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise LcevalError("context=dense needs `pip install sentence-transformers`")
        _model_path(None)


def view(
    mode: ContextMode, samples: Sequence[Sample], contexts: Mapping[str, Context]
) -> tuple[list[Sample], dict[str, Context]]:
    """The samples (same order, same ids) and contexts (id -> Context) an engine answers under
    ``mode``; a context's chunks are indexed once for all its samples.

    Raises:
        LcevalError: a retriever that is not installed (bm25s, sentence-transformers, the
            shipped MiniLM).
    """
    if mode.kind == "full":
        return list(samples), dict(contexts)
    if mode.kind == "none":
        return [dataclasses.replace(s, context_id=None) for s in samples], {}
    indexes: dict[str, DocumentIndex] = {}
    out_samples: list[Sample] = []
    out_contexts: dict[str, Context] = {}
    for s in samples:
        if s.context_id is None:
            out_samples.append(s)
            continue
        ctx = contexts[s.context_id]
        if ctx.id not in indexes:
            from lceval.contexts.retrieval import DocumentIndex  # pulls numpy

            indexes[ctx.id] = DocumentIndex(ctx.text, CHUNK_TOKENS, ctx.encoding)
        query = s.instruction or s.description
        text, _ = indexes[ctx.id].retrieve(query, mode.kind, mode.k, mode.k * CHUNK_TOKENS)
        cid = f"{ctx.id}{SEPARATOR}{mode}/{s.id}"
        n = count_tokens(text, ctx.encoding)
        out_contexts[cid] = Context(cid, text, n, ctx.encoding, f"{mode} of {ctx.id}")
        out_samples.append(dataclasses.replace(s, context_id=cid))
    return out_samples, out_contexts
