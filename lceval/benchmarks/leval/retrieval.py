"""Retrieval baselines of L-Eval (paper Sec. "Retrieval-based vs. full-context models"): the
long document is cut into chunks of 1,024 tokens, the 4 most relevant to the question (BM25 or
dense vectors) fill a 3,072-token window that replaces the document in the prompt.

The chunking, ranking and stuffing are shared with every benchmark's ``-o context=bm25:K``
(:mod:`lceval.contexts.retrieval`, where the official code's choices are described); this module
names the modes L-Eval's builder takes.
"""

from __future__ import annotations

from typing import Literal

from lceval.contexts.retrieval import DocumentIndex, chunk_document

__all__ = ["MODES", "DocumentIndex", "Mode", "chunk_document"]

Mode = Literal["full", "bm25", "dense"]
MODES: tuple[str, ...] = ("full", "bm25", "dense")
"""``full``: the whole document (the backend right-truncates it); ``bm25``, ``dense``: retrieval."""
