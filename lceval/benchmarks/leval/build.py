"""L-Eval data building: official task files (or the hub) -> contexts and samples with the official
prompts, the length instruction (LIE) and optional retrieval.

Reproduces the inference setup of L-Eval (An et al., ACL 2024) after the official code
(OpenLMLab/LEval: ``Baselines/LEval_config.py``, ``Baselines/turbo16k-test.py``,
``Baselines/llama2-chat-test.py``, ``Baselines/turbo4k-retrieve-test.py``); facts only.

Prompt layout (``lceval.benchmarks.leval.prompts``)
-----------------------------------------------------
- ``Sample.system``: the task family's system prompt (official ``get_sys_prompt``).
- exam tasks (tpo, quality, coursera, sci_fi, topic_retrieval_longchat): user turn
  ``"Document is as follows. {document} Question: {inst} \\nPlease directly give answer without
  any additional output or explanation\\n Answer: "`` -> ``description = "Document is as
  follows."``, context = the document, ``instruction = "Question: ... Answer: "``, joiner ``" "``.
- gsm100, codeU: ``document + "\\n\\n" + inst`` (description empty, joiner ``"\\n\\n"``).
- open-ended: ``"Document is as follows. {document} Instruction: {inst} The suggested output
  length is around {N} words. Output: "`` with N = ``len(reference.split())`` (LIE); without LIE
  the length sentence is left out (``lie: false``; ``lie: both`` builds both, the no-LIE samples
  with ids ending ``/nolie``). ``meta["lie"]`` records it.
- sci_fi: each question is asked twice: from the document (``/loyalty``) and, as the world-
  knowledge question of the official scripts (``based on the real-world knowledge ...``), without
  the document and without system prompt as ``Baselines/llama2-chat-test.py`` does (``/fact``);
  the turbo script asked it as a second user turn after the document.
- ``max_new_tokens`` 512 (official).

Truncation
----------
By default documents are kept whole and the backend right-truncates the context alone to the
model's window (``lceval.models.prompts.render_chat_prompt``), keeping the instruction. With
``max_length`` (tokens, the official ``--max_length``), documents are first cut as the official
scripts do: while the document has more than ``max_length - max_new_tokens`` tokens
(``encoding``, cl100k_base = gpt-3.5-turbo's by default), keep its first ``limit - k`` words
(split on single spaces), ``k`` growing by 250 each round; codeU keeps its last words instead.

Retrieval (``retrieval``)
-------------------------
``full`` (default), ``bm25`` or ``dense``, or a list of them: for each retrieval mode, each
question gets its own context of retrieved chunks (``lceval.benchmarks.leval.retrieval``); ids
end with ``/<mode>``; ``meta["retrieval"]`` records the mode.

Lengths (``lengths``)
---------------------
A list of target lengths L (tokens of ``encoding``) builds every question once per length: the
document is cut to ``L - max_new_tokens`` tokens with the official word cut (as ``max_length =
L`` would), ids and context ids end with ``/<L>``, ``Sample.length = L`` and ``meta["max_length"]
= L``. Documents shorter than L stay whole (``meta["doc_tokens"]`` says how long). Used by the
NTK base sweep (``lceval.benchmarks.leval.ntk``) to ask the same questions at several lengths;
full-context retrieval only.

The offline GSM stand-in (``data_path: arithmetic``)
------------------------------------------------------
lceval's seeded multi-step arithmetic problems in the official gsm100 format
(:mod:`lceval.benchmarks.leval.arithmetic`): ``arithmetic_questions`` questions sharing one
document of ``arithmetic_shots`` worked examples (16, the paper's GSM(16-shot); None with
``lengths``: as many as fit each length), ``arithmetic_steps`` operations per problem. Task
``gsm100``, scored by the official GSM rule. With ``lengths`` the document keeps the whole
leading examples that fit ``L - max_new_tokens - (longest question)`` tokens, so, as in RULER,
the prompt without chat template plus the answer budget stays within L.

Sample fields
-------------
``id`` = ``leval/<task>/<doc:04d>/<q:03d>`` (+ ``/loyalty`` or ``/fact`` for sci_fi, ``/nolie``,
``/<mode>``, ``/<L>``), ``context_id`` = ``leval/<task>/<doc:04d>`` (+ ``/<L>``; full) or the
sample's id base plus ``/<mode>`` (retrieval), ``scenario`` = ``closed`` or ``open``, ``gold`` =
the task's Gold (:mod:`lceval.benchmarks.leval.gold`), ``meta`` = ``{doc_index, question_index,
source, evaluation, lie (None for closed tasks), retrieval, doc_tokens, doc_cut}`` (+
``max_length`` with ``lengths``).

Subsets (``subset``)
--------------------
Documents are kept by their ``evaluation``: ``ngram`` (exam, rouge, f1: what the official
n-gram and exam evaluation scores; the default), ``gpt4`` (LLM: the 96-question GPT-4 judge
subset), ``human`` (the 85-question human subset), ``turbo`` (LLM + human: the GPT-3.5 judge's
181), ``all``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from lceval import params
from lceval.benchmarks.base import BuildResult
from lceval.benchmarks.leval import arithmetic, prompts
from lceval.benchmarks.leval.data import (
    HUB_DATASET,
    Document,
    demo_documents,
    find_task_files,
    load_hub,
    load_local,
    parse_document,
)
from lceval.benchmarks.leval.gold import (
    CLOSED_TASKS,
    NGRAM_METRIC,
    OPEN_TASKS,
    TASKS,
    ExamGold,
    LevalGold,
    OpenGold,
    SciFiGold,
    TopicGold,
)
from lceval.benchmarks.leval.retrieval import MODES, DocumentIndex
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample
from lceval.core.tokens import get_encoding

SUBSETS: Mapping[str, frozenset[str]] = {
    "ngram": frozenset({"exam", "rouge", "f1"}),
    "gpt4": frozenset({"LLM"}),
    "human": frozenset({"human"}),
    "turbo": frozenset({"LLM", "human"}),
    "all": frozenset({"exam", "rouge", "f1", "LLM", "human"}),
}
"""Subset name -> the document ``evaluation`` values it keeps."""

CUT_STEP = 250
"""Words dropped per extra round of the official cut (``cnt += 250``)."""


def cut_document(
    document: str, max_tokens: int, encoding: str = "cl100k_base", from_left: bool = False
) -> str:
    """The official word cut of a long document (``turbo16k-test.py``, ``llama2-chat-test.py``).

    While the text has more than ``max_tokens`` tokens: split on single spaces and keep the first
    ``max_tokens - k`` words (``from_left``: the last ``max_tokens - k``, as for codeU), with ``k``
    = 0, 250, 500, ...

    Args:
        document: the document.
        max_tokens: the budget (the official ``max_length`` minus ``max_new_tokens``), >= 0.
        encoding: tiktoken encoding that counts tokens.
        from_left: cut the beginning instead of the end.
    """
    enc = get_encoding(encoding)

    def n_tokens(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    k = 0
    while document and n_tokens(document) > max_tokens:
        words = document.split(" ")
        keep = max_tokens - k
        document = " ".join(words[-keep:] if from_left else words[:keep])
        k += CUT_STEP
    return document


class Config(params.Declared):
    """L-Eval's builder params (see the module docstring for each key)."""

    data_path: Annotated[str | tuple[str, ...] | None, params.paths(many=True)] = Field(
        None,
        description='local data (a folder, files, "demo" or "arithmetic"); null: the hub dataset',
    )
    demo: bool = Field(
        False,
        description="build lceval's shipped demo documents when no data_path is given (-p "
        "demo=true, as CIF-Bench's; the older data_path: demo is the same)",
    )
    demo_doc_words: params.Positive = Field(400, description="words per demo document (demo: true)")
    tasks: Annotated[tuple[str, ...] | None, params.names(TASKS, null_means_all=False)] = Field(
        None, description="task codes; null: every task of the data"
    )
    subset: Literal["ngram", "gpt4", "human", "turbo", "all"] = Field(
        "ngram", description="which documents by their evaluation (SUBSETS)"
    )
    limit_docs: params.Positive | None = Field(
        None, description="first documents per task; null: all"
    )
    limit_questions: params.Positive | None = Field(
        None, description="first questions per document; null: all"
    )
    lie: bool | Literal["both"] = Field(
        True, description='the official length instruction: true, false or "both"'
    )
    max_length: params.Positive | None = Field(
        None, description="the official max_length cut in tokens; null: no cut"
    )
    encoding: params.Encoding = Field(
        "cl100k_base", description="tiktoken encoding that counts tokens"
    )
    max_new_tokens: params.Positive = Field(
        512, description="answer budget in tokens (the samples' budget; reserved by the cut)"
    )
    retrieval: Annotated[tuple[str, ...], params.names(MODES)] = Field(
        ("full",), description="context modes: full, bm25, dense"
    )
    retrieval_chunk_tokens: params.Positive = Field(
        1024, description="retrieval chunk size in tokens"
    )
    retrieval_top_k: params.Positive = Field(4, description="chunks retrieved per question")
    retrieval_window: params.Positive = Field(
        3072, description="retrieved context budget in tokens"
    )
    embedding_model: params.Text | None = Field(
        None, description="dense retriever model; null: the default"
    )
    hub_dataset: params.Text | None = Field(
        HUB_DATASET, description="hub dataset id read when data_path is null"
    )
    lengths: Annotated[tuple[int, ...] | None, params.lengths()] = Field(
        None, description="context lengths in tokens (each > max_new_tokens); null: whole documents"
    )
    arithmetic_questions: params.Positive = Field(
        100, description="questions of the arithmetic stand-in"
    )
    arithmetic_shots: params.Positive | None = Field(
        16, description="worked examples per question; null: fill each length"
    )
    arithmetic_steps: params.Positive = Field(3, description="steps per arithmetic question")
    seed: params.NonNegative = Field(0, description="seed of the arithmetic stand-in")

    @model_validator(mode="after")
    def _together(self) -> Self:
        if self.max_length is not None and self.max_length <= self.max_new_tokens:
            raise ValueError("max_length must exceed max_new_tokens")
        if self.retrieval_chunk_tokens > self.retrieval_window:
            raise ValueError("retrieval_chunk_tokens must not exceed retrieval_window")
        if self.lengths is not None:
            short = [n for n in self.lengths if n <= self.max_new_tokens]
            if short:
                raise ValueError(
                    f"lengths must be integers > max_new_tokens ({self.max_new_tokens}), "
                    f"got {short[0]!r}"
                )
            if self.max_length is not None:
                raise ValueError("give lengths or max_length, not both")
            if self.retrieval != ("full",):
                raise ValueError("lengths work with retrieval: full only")
        if self.arithmetic_shots is None and self.lengths is None:
            if self.data_path == "arithmetic":
                raise ValueError("arithmetic_shots: null (fill each length) needs lengths")
        return self


def _load(p: Config) -> tuple[dict[str, list[Document]], dict[str, Any]]:
    if p.data_path == "arithmetic":
        return _load_arithmetic(p)
    if p.data_path == "demo" or (p.demo and p.data_path is None):
        docs = demo_documents(p.demo_doc_words)
        tasks = p.tasks or list(docs)
        missing = [t for t in tasks if t not in docs]
        if missing:
            raise LcevalError(f"leval: the demo data has no task {', '.join(missing)}")
        return {t: docs[t] for t in tasks}, {
            t: {"demo": "lceval demo (Paul Graham essays)"} for t in tasks
        }
    if p.data_path is not None:
        tasks = p.tasks or [t for t in TASKS if t in find_task_files(p.data_path)]
        return load_local(p.data_path, tasks)
    return load_hub(p.tasks or list(TASKS), p.hub_dataset or HUB_DATASET)


def _load_arithmetic(p: Config) -> tuple[dict[str, list[Document]], dict[str, Any]]:
    """The offline GSM stand-in: one gsm100 document (:mod:`lceval.benchmarks.leval.arithmetic`),
    long enough for the longest length when ``arithmetic_shots`` is None."""
    if p.tasks not in (None, ("gsm100",)):
        raise LcevalError("leval: data_path: arithmetic builds task gsm100 only")
    min_tokens = max(p.lengths) if p.lengths else 0
    recs = arithmetic.records(
        p.arithmetic_questions,
        p.arithmetic_shots,
        p.arithmetic_steps,
        p.seed,
        min_tokens=min_tokens,
        encoding=p.encoding,
    )
    docs = [parse_document("gsm100", i, r, f"arithmetic {i}") for i, r in enumerate(recs)]
    source = {
        "generator": "lceval.benchmarks.leval.arithmetic",
        "seed": p.seed,
        "questions": p.arithmetic_questions,
        "shots": p.arithmetic_shots,
        "steps": p.arithmetic_steps,
    }
    return {"gsm100": docs}, {"gsm100": source}


def _fit(p: Config, task: str, doc: Document, length: int | None) -> str:
    """The document text sent at ``length`` (None: the whole document, or the ``max_length``
    cut): the official word cut, or whole worked examples for the arithmetic stand-in."""
    limit = length or p.max_length
    if limit is None:
        return doc.input
    budget = limit - p.max_new_tokens
    if doc.source == arithmetic.SOURCE:
        enc = get_encoding(p.encoding)
        longest = max(len(enc.encode(q, disallowed_special=())) for q in doc.instructions)
        return arithmetic.fit_examples(doc.input, budget - longest, p.encoding)
    return cut_document(doc.input, budget, p.encoding, from_left=task == "codeU")


def _gold(task: str, doc: Document, q: int, judgment: str | None) -> LevalGold:
    inst, ref = doc.instructions[q], doc.outputs[q]
    common = {"query": inst, "reference": ref, "evaluation": doc.evaluation}
    if task == "sci_fi":
        return SciFiGold(**common, judgment=judgment)  # type: ignore[arg-type]
    if task == "topic_retrieval_longchat":
        return TopicGold(**common, topic_index=q % 3)
    if task in OPEN_TASKS:
        return OpenGold(**common, metric=NGRAM_METRIC[task], reference_words=len(ref.split()))
    return ExamGold(**common)


def _prompt(task: str, inst: str, gold: LevalGold, lie: bool | None) -> dict[str, Any]:
    """system, description, instruction and joiner of one question (module docstring)."""
    if isinstance(gold, SciFiGold) and gold.judgment == "fact":
        return {
            "system": None,
            "description": "",
            "joiner": " ",
            "instruction": prompts.fact_question(inst),
        }
    system = prompts.system_prompt(task)
    if task in ("gsm100", "codeU"):
        return {"system": system, "description": "", "joiner": "\n\n", "instruction": inst}
    if isinstance(gold, OpenGold):
        length = prompts.LIE.format(words=gold.reference_words) if lie else ""
        instruction = prompts.OPEN_INSTRUCTION.format(inst=inst, lie=length)
    else:
        instruction = prompts.EXAM_QUESTION.format(inst=inst)
    return {
        "system": system,
        "description": prompts.DOCUMENT_INTRO,
        "joiner": " ",
        "instruction": instruction,
    }


def _context(
    p: Config,
    doc: Document,
    q: int,
    mode: str,
    text: str,
    doc_tokens: int,
    contexts: dict[str, Context],
    index: dict[str, DocumentIndex],
    length: int | None = None,
) -> str:
    """Id of the context of question ``q`` under ``mode`` (added to ``contexts`` once);
    ``index`` caches the document's chunk index; ``length`` suffixes the id (``lengths``)."""
    doc_id = f"leval/{doc.task}/{doc.index:04d}"
    if length is not None:
        doc_id += f"/{length}"
    if mode == "full":
        if doc_id not in contexts:
            contexts[doc_id] = Context(doc_id, text, doc_tokens, p.encoding, doc.source)
        return doc_id
    ctx_id = f"{doc_id}/{q:03d}/{mode}"
    if ctx_id not in contexts:
        if doc_id not in index:
            index.clear()  # one document at a time
            index[doc_id] = DocumentIndex(
                doc.input, p.retrieval_chunk_tokens, p.encoding, p.embedding_model
            )
        found, used = index[doc_id].retrieve(
            doc.instructions[q], mode, p.retrieval_top_k, p.retrieval_window
        )
        n = len(get_encoding(p.encoding).encode(found, disallowed_special=()))
        source = f"{doc.source or doc.task}: {mode} chunks {used}"
        contexts[ctx_id] = Context(ctx_id, found, n, p.encoding, source)
    return ctx_id


def _question_samples(
    p: Config,
    task: str,
    doc: Document,
    q: int,
    mode: str,
    text: str,
    doc_tokens: int,
    contexts: dict[str, Context],
    index: dict[str, DocumentIndex],
    length: int | None = None,
) -> list[Sample]:
    """The samples of question ``q`` of ``doc`` under retrieval ``mode`` (one per SFiction
    judgment and per LIE setting) at ``length`` (None: no length grid)."""
    judgments: Sequence[str | None] = ("loyalty", "fact") if task == "sci_fi" else (None,)
    lies: Sequence[bool | None] = (
        ([True, False] if p.lie == "both" else [bool(p.lie)]) if task in OPEN_TASKS else [None]
    )
    out = []
    for judgment in judgments:
        for lie in lies:
            gold = _gold(task, doc, q, judgment)
            sid = f"leval/{task}/{doc.index:04d}/{q:03d}"
            sid += f"/{judgment}" if judgment else ""
            sid += "/nolie" if lie is False else ""
            sid += f"/{mode}" if mode != "full" else ""
            sid += f"/{length}" if length is not None else ""
            ctx_id = (
                None
                if judgment == "fact"
                else _context(p, doc, q, mode, text, doc_tokens, contexts, index, length)
            )
            out.append(
                Sample(
                    id=sid,
                    benchmark="leval",
                    task=task,
                    context_id=ctx_id,
                    max_new_tokens=p.max_new_tokens,
                    gold=gold,
                    scenario="closed" if task in CLOSED_TASKS else "open",
                    length=length,
                    meta={
                        "doc_index": doc.index,
                        "question_index": q,
                        "source": doc.source,
                        "evaluation": doc.evaluation,
                        "lie": lie,
                        "retrieval": mode,
                        "doc_tokens": doc_tokens,
                        "doc_cut": text != doc.input,
                        **({"max_length": length} if length is not None else {}),
                    },
                    **_prompt(task, doc.instructions[q], gold, lie),
                )
            )
    return out


def build_leval(raw: Mapping[str, Any]) -> BuildResult:
    """Build L-Eval samples and contexts from the official data (module docstring).

    Args:
        raw: the keys of :class:`Config` (defaults and meaning there); the keys of the
            notebook's shared sections (:data:`lceval.params.NOTEBOOK_SECTIONS`), ``run_id``
            and ``outputs_root`` are accepted and ignored.

    Returns:
        The samples, their contexts (each document once; one per question for retrieval) and
        the sources (path and sha256 per task file, or the hub config).

    Raises:
        LcevalError: a bad parameter, missing or malformed data, the hub unreachable, or no
            question selected.
    """
    p = params.parse(Config, raw, "leval", accept=params.NOTEBOOK_SECTIONS)
    docs, sources = _load(p)
    allowed = SUBSETS[p.subset]
    encoding = p.encoding
    enc = get_encoding(encoding)
    samples: list[Sample] = []
    contexts: dict[str, Context] = {}
    index: dict[str, DocumentIndex] = {}
    for task in (t for t in TASKS if t in docs):
        kept = [d for d in docs[task] if d.evaluation in allowed]
        if p.limit_docs is not None:
            kept = kept[: p.limit_docs]
        for doc in kept:
            for length in p.lengths or [None]:
                text = _fit(p, task, doc, length)
                doc_tokens = len(enc.encode(text, disallowed_special=()))
                n_q = len(doc.instructions)
                if p.limit_questions is not None:
                    n_q = min(n_q, p.limit_questions)
                for q in range(n_q):
                    for mode in p.retrieval:
                        samples.extend(
                            _question_samples(
                                p, task, doc, q, mode, text, doc_tokens, contexts, index, length
                            )
                        )
    if not samples:
        raise LcevalError(
            f"leval: no question selected (tasks {p.tasks or 'all'}, subset {p.subset})"
        )
    return BuildResult(
        samples=samples,
        contexts=list(contexts.values()),
        sources={"data": sources, "subset": p.subset},
        encoding=encoding,
    )
