"""L-Eval data in the official format: reading task files from a path or the hub, and writing
small files of lceval's own in the same format (the smoke notebook and tests use those).

The official format (OpenLMLab/LEval ``LEval-data/{Closed,Open}-ended-tasks/<task>.jsonl``, and
the hub dataset ``L4NLP/LEval``, one config per task, split ``test``): one JSON object per line
= one long document::

    {"input": str, "instructions": [str, ...], "outputs": [str, ...],
     "source": str (missing in gsm100), "evaluation": "exam" | "rouge" | "f1" | "human" | "LLM"}

``instructions[i]`` is answered by ``outputs[i]``. L-Eval's data is not shipped with lceval: give
the path of a clone's ``LEval-data/`` folder (or single task files), or load from the hub where
there is network.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lceval.benchmarks.leval.gold import EVALUATIONS, TASKS
from lceval.core import corpora
from lceval.core.errors import LcevalError, one_line
from lceval.core.io import atomic_open
from lceval.models.embedded import hub_unreachable

HUB_DATASET = "L4NLP/LEval"
"""The hub dataset id (one config per task, split ``test``)."""


@dataclass(frozen=True)
class Document:
    """One line of an official task file: a long document and its questions."""

    task: str
    """Task code (the file or hub-config name)."""
    index: int
    """0-based line number of the document in its task file (blank lines skipped)."""
    input: str
    """The long document."""
    instructions: tuple[str, ...]
    """The questions or instructions, verbatim."""
    outputs: tuple[str, ...]
    """The reference answers, one per instruction."""
    evaluation: str
    """exam, rouge, f1, human or LLM."""
    source: str = ""
    """The dataset the document comes from (empty when the file has none)."""


def parse_document(task: str, index: int, obj: Any, where: str) -> Document:
    """Check one official record and turn it into a :class:`Document`.

    Args:
        task: task code.
        index: the document's line number (0-based).
        obj: the parsed JSON object.
        where: file name and line for messages.

    Raises:
        LcevalError: a field is missing or has the wrong type, ``instructions`` and ``outputs``
            differ in length, or ``evaluation`` is not an official value (names the field).
    """
    if not isinstance(obj, Mapping):
        raise LcevalError(f"{where}: expected a JSON object")
    for key in ("input", "instructions", "outputs", "evaluation"):
        if key not in obj:
            raise LcevalError(f"{where}: missing field {key!r}")
    if not isinstance(obj["input"], str):
        raise LcevalError(f"{where}: field 'input' must be a string")
    lists = {}
    for key in ("instructions", "outputs"):
        value = obj[key]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise LcevalError(f"{where}: field {key!r} must be a list of strings")
        lists[key] = tuple(value)
    if len(lists["instructions"]) != len(lists["outputs"]):
        raise LcevalError(
            f"{where}: {len(lists['instructions'])} instructions but "
            f"{len(lists['outputs'])} outputs"
        )
    evaluation = obj["evaluation"]
    if evaluation not in EVALUATIONS:
        raise LcevalError(
            f"{where}: evaluation {evaluation!r} is not one of {', '.join(EVALUATIONS)}"
        )
    source = obj.get("source") or ""
    if not isinstance(source, str):
        raise LcevalError(f"{where}: field 'source' must be a string")
    return Document(
        task=task,
        index=index,
        input=obj["input"],
        instructions=lists["instructions"],
        outputs=lists["outputs"],
        evaluation=evaluation,
        source=source,
    )


def read_task_file(path: str | Path, task: str | None = None) -> list[Document]:
    """Read one official task file (``<task>.jsonl``).

    Args:
        path: the file.
        task: its task code (default: the file name without ``.jsonl``).

    Raises:
        LcevalError: unreadable file, unknown task, or a line that is not an official record
            (names the file and line).
    """
    p = Path(path)
    task = task or task_of(p)
    docs = []
    for i, obj in enumerate(corpora.read_jsonl_file(p)):
        docs.append(parse_document(task, i, obj, f"{p} line {i + 1}"))
    return docs


def task_of(path: Path) -> str:
    """The task code of an official file name (``quality.jsonl`` -> ``quality``).

    Raises:
        LcevalError: the name is not ``<task>.jsonl`` for one of the 20 tasks.
    """
    name = path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    if stem not in TASKS:
        raise LcevalError(f"{path}: file name is not <task>.jsonl for an L-Eval task")
    return stem


def find_task_files(path: str | Path | Sequence[str | Path]) -> dict[str, Path]:
    """Official task files under ``path``: a file, a list of files, or a folder searched
    recursively for ``<task>.jsonl`` (a clone's ``LEval-data/``).

    Raises:
        LcevalError: the path does not exist, a file name is not a task's, a task appears twice,
            or a folder holds no task file.
    """
    paths = [path] if isinstance(path, str | Path) else list(path)
    found: dict[str, Path] = {}
    for item in paths:
        p = Path(item).expanduser()
        if not p.exists():
            raise LcevalError(f"data_path {str(p)!r} does not exist")
        files = sorted(f for f in p.rglob("*.jsonl") if f.stem in TASKS) if p.is_dir() else [p]
        if p.is_dir() and not files:
            raise LcevalError(f"data_path {str(p)!r} holds no <task>.jsonl file of L-Eval")
        for f in files:
            task = task_of(f)
            if task in found and found[task] != f:
                raise LcevalError(f"task {task} found twice: {found[task]} and {f}")
            found[task] = f
    return found


def load_local(
    path: str | Path | Sequence[str | Path], tasks: Sequence[str]
) -> tuple[dict[str, list[Document]], dict[str, Any]]:
    """Documents of ``tasks`` from official files under ``path``, and their provenance.

    Returns:
        (task -> documents, task -> {"path", "sha256"}).

    Raises:
        LcevalError: a requested task has no file, or a file does not parse.
    """
    files = find_task_files(path)
    missing = [t for t in tasks if t not in files]
    if missing:
        raise LcevalError(f"no data file for task(s) {', '.join(missing)} under {path}")
    docs = {t: read_task_file(files[t], t) for t in tasks}
    sources = {t: {"path": str(files[t]), "sha256": corpora.sha256(str(files[t]))} for t in tasks}
    return docs, sources


def load_hub(
    tasks: Sequence[str], dataset: str = HUB_DATASET
) -> tuple[dict[str, list[Document]], dict[str, Any]]:
    """Documents of ``tasks`` from the hub dataset (``datasets.load_dataset(dataset, task,
    split="test")``, as the official ``Baselines/LEval_config.py`` loads them).

    Raises:
        LcevalError: ``datasets`` is missing, or the hub cannot be reached (offline): one line
            saying to pass ``data_path``.
    """
    why = hub_unreachable(dataset, "dataset")
    if why:  # said at once, not after importing datasets and its retries (26 s offline)
        raise LcevalError(
            f"cannot load {dataset}: not in the local Hugging Face cache, and {why}; "
            "offline: -p demo=true (lceval's demo "
            "documents; demo: true in a params file) or -p data_path=DIR (a clone's LEval-data "
            "folder)"
        )
    try:
        import datasets  # heavy: datasets
    except ImportError:
        raise LcevalError("loading L-Eval from the hub needs `pip install datasets`") from None
    docs: dict[str, list[Document]] = {}
    sources: dict[str, Any] = {}
    hub_log = logging.getLogger("huggingface_hub")  # its retry warnings would add lines
    level = hub_log.level
    for task in tasks:
        hub_log.setLevel(logging.ERROR)
        try:
            ds = datasets.load_dataset(dataset, task, split="test")
        except Exception as exc:  # noqa: BLE001 - any hub failure becomes one line
            msg = one_line(exc)
            raise LcevalError(
                f"cannot load {dataset}/{task} from the hub ({type(exc).__name__}: {msg}); "
                "offline: -p demo=true (lceval's demo documents; demo: true in a params file) "
                "or -p data_path=DIR (a clone's LEval-data folder)"
            ) from None
        finally:
            hub_log.setLevel(level)
        docs[task] = [
            parse_document(task, i, dict(row), f"{dataset}/{task} row {i}")
            for i, row in enumerate(ds)
        ]
        sources[task] = {"hub": dataset, "config": task, "fingerprint": ds._fingerprint}
    return docs, sources


def write_task_file(path: str | Path, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write official records (checked by :func:`parse_document`) to ``path`` atomically.

    Raises:
        LcevalError: a record is not in the official format.
    """
    p = Path(path)
    task = task_of(p)
    for i, r in enumerate(records):
        parse_document(task, i, r, f"record {i}")
    with atomic_open(p) as f:
        for r in records:
            f.write(json.dumps(dict(r), ensure_ascii=False) + "\n")
    return p


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def demo_records(doc_words: int = 400, n_docs: int = 1) -> dict[str, list[dict[str, Any]]]:
    """Small task records of lceval's own, in the official format, from the shipped Paul Graham
    essays: ``tpo`` (multiple choice, 2 questions per document: which word occurs in it),
    ``news_summ`` (summarise; the reference is the document's first two sentences, at most 60
    words) and ``natural_question`` (the document's first word, F1). Not L-Eval data: a
    stand-in that exercises the same code paths (smoke notebook, CI).

    Args:
        doc_words: words per document (>= 1).
        n_docs: documents per task (>= 1).

    Returns:
        Task -> records.
    """
    words = corpora.paul_graham_essays().split()
    tpo, summ, nq = [], [], []
    absent = ["zeppelin", "quasar", "marmalade", "tundra", "glacier", "sonnet"]
    for d in range(n_docs):
        doc_words_list = words[d * doc_words : (d + 1) * doc_words]
        doc = " ".join(doc_words_list)
        vocab = sorted({w.strip(".,;:!?()'\"").lower() for w in doc_words_list} - {""})
        present = [w for w in vocab if len(w) > 6 and w not in absent][:2] or vocab[:2]
        questions, answers = [], []
        for q, word in enumerate(present):
            letter = "ABCD"[(d + q) % 4]
            options = absent[q * 3 : q * 3 + 3]
            options.insert("ABCD".index(letter), word)
            lines = [f"{c}. {o}" for c, o in zip("ABCD", options, strict=True)]
            questions.append("Which of these words appears in the document?\n" + "\n".join(lines))
            answers.append(letter)
        common = {"input": doc, "source": "lceval_demo"}
        tpo.append({"instructions": questions, "outputs": answers, **common, "evaluation": "exam"})
        lead = " ".join(" ".join(_SENTENCE.split(doc)[:2]).split()[:60])
        summ.append(
            {
                "instructions": ["Please summarize this essay."],
                "outputs": [lead],
                **common,
                "evaluation": "rouge",
            }
        )
        nq.append(
            {
                "instructions": ["What is the first word of the document?"],
                "outputs": [doc_words_list[0] if doc_words_list else ""],
                **common,
                "evaluation": "f1",
            }
        )
    return {"tpo": tpo, "news_summ": summ, "natural_question": nq}


def demo_documents(doc_words: int = 400, n_docs: int = 1) -> dict[str, list[Document]]:
    """The records of :func:`demo_records` as Documents (``data_path: demo`` of the builder)."""
    return {
        task: [parse_document(task, i, r, f"demo {task} {i}") for i, r in enumerate(records)]
        for task, records in demo_records(doc_words, n_docs).items()
    }


def write_demo_data(folder: str | Path, doc_words: int = 400, n_docs: int = 1) -> dict[str, Path]:
    """Write :func:`demo_records` as official task files ``<folder>/<task>.jsonl``.

    Returns:
        Task -> file path.
    """
    base = Path(folder)
    return {
        task: write_task_file(base / f"{task}.jsonl", records)
        for task, records in demo_records(doc_words, n_docs).items()
    }
