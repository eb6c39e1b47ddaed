"""RULER's question-answering family (official ``scripts/data/synthetic/qa.py``)."""

from __future__ import annotations

import numpy as np

from lceval.benchmarks.ruler.common import (
    TOKENS_TO_GENERATE,
    Core,
    QaArgs,
    _doc_counts,
    _header_prefix_counts,
    _Item,
    _overhead,
    _pow2_at_least,
    _rng,
    qa_documents,
)
from lceval.core.errors import LcevalError

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


class QaBuilder(Core):
    """The qa family builder."""

    def qa(
        self,
        task: str,
        args: QaArgs,
        length: int,
        index: int,
        units: int | None = None,
        draw: tuple[int, ...] = (),
    ) -> _Item:
        """Question answering on SQuAD or HotpotQA (official ``qa.py``).

        Question ``index`` of the dataset with its own documents (and, for SQuAD, the other
        paragraphs of its article) among as many other documents as fit, shuffled. Answer: any
        of the question's answers. ``units``: documents (None: as many as fit ``length``).
        ``draw``: a fresh draw of the same sample (the probe's and the back-off's;
        :func:`lceval.benchmarks.ruler.common._rng`).
        """
        rng = _rng(self.seed, task, length, index, draw)
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
        if units is not None:
            reps = max(reps, -(-units // max(len(others), 1)) + 1)
        cand = np.concatenate([head, *([others] * reps)])  # official: repeat docs if too few
        cum = np.concatenate([[0], np.cumsum(dcounts[cand])])
        heads = _header_prefix_counts(self.tok, _pow2_at_least(len(cand)))
        total = cum + heads[: len(cum)]
        if units is None:
            n = max(len(curr), int(np.searchsorted(total, budget, side="right")) - 1)
        else:
            n = min(max(len(curr), units), len(cand))
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
