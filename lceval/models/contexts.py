"""What a model reads in place of a sample's long context under ``-o context=MODE`` (the
no-context and retrieval baselines of every benchmark): the samples and contexts an engine is
handed for one :class:`~lceval.benchmark.ContextMode`.

- ``full``: the samples and contexts as built.
- ``none``: each sample without its context (``context_id`` None): the prompt is the scenario
  description and the instruction alone, as LongBench v2's ``pred.py --no_context`` does.
- ``bm25:K`` / ``dense:K``: each sample gets its own context, the K chunks of 1,024 tokens of its
  context most relevant to its instruction, in rank order, joined by a blank line
  (:class:`lceval.models.retrieval.DocumentIndex`, L-Eval's retrieval baselines; the window is
  K x 1,024 tokens). A context's chunks and index are built once for all its samples.

The answers keep the built sample's id and :func:`~lceval.core.records.sample_hash`, so they join
the
full-context answers sample by sample; the mode is part of the answer's name
(:func:`variant_name`) and of its config hash (``GenerationConfig.engine["context"]``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lceval.benchmark import ContextMode
from lceval.core.records import Context, Sample
from lceval.core.tokens import count_tokens

if TYPE_CHECKING:  # numpy, and bm25s / FlagEmbedding when a retriever runs
    from lceval.models.retrieval import DocumentIndex

CHUNK_TOKENS = 1024
"""Tokens per retrieved chunk (L-Eval's official baselines: 1,024 tiktoken tokens)."""

SEPARATOR = "@context="
"""Between a model's name and its mode in the name of a baseline's answers
(``embedded@context=none``)."""


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
    import importlib.util

    from lceval.core.errors import LcevalError
    from lceval.models.retrieval import _model_path

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
    """The samples and contexts an engine answers under ``mode`` (see the module docstring).

    Args:
        mode: the context mode.
        samples: the built samples (their contexts in ``contexts``).
        contexts: context id -> Context.

    Returns:
        (samples, contexts), samples in the same order with the same ids.

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
            from lceval.models.retrieval import DocumentIndex  # numpy

            indexes[ctx.id] = DocumentIndex(ctx.text, CHUNK_TOKENS, ctx.encoding)
        query = s.instruction or s.description
        text, _ = indexes[ctx.id].retrieve(query, mode.kind, mode.k, mode.k * CHUNK_TOKENS)
        cid = f"{ctx.id}{SEPARATOR}{mode}/{s.id}"
        n = count_tokens(text, ctx.encoding)
        out_contexts[cid] = Context(cid, text, n, ctx.encoding, f"{mode} of {ctx.id}")
        out_samples.append(dataclasses.replace(s, context_id=cid))
    return out_samples, out_contexts
