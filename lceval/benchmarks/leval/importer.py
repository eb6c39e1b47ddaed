"""Official L-Eval prediction files <-> lceval run folders.

``lceval import leval PATH --run-id ID`` (:func:`import_predictions`) turns the official
prediction files into a run folder (samples + responses, no contexts: the files do not hold the
documents), so ``lceval score`` and ``lceval report`` recompute the official tables from them.
:func:`export_predictions` writes a run's responses in the same format (e.g. as the baseline of
the pairwise judge, or to run the official scripts on them).

Format (OpenLMLab/LEval ``Predictions/<exam_eval|ngram_eval>/<model folder>/<task>.pred.jsonl``):
one JSON object per question with ``query`` (the instruction), ``gt`` (the reference),
``<model>_pred`` (the answer; the model name is taken from this key, as ``auto_eval.py`` finds
it), and usually ``prompt`` and ``evaluation``. Flat files of the judge and human subsets
(``Predictions/llm_gpt4_eval/<model>.pred.jsonl``) have no task in their name and are skipped
(they serve as judge baselines).

Samples: ``leval/<task>/p<k:04d>``, the k-th distinct question of the task in the order first
seen (a question = (query, gt, its occurrence number within the file)), shared by every model's
file; TopicRet's ``topic_index`` is the line number modulo 3 (``auto_eval.py``); SFiction
answers ``"<loyalty> [fact: <fact>]"`` are scored as ``judgment="both"``. Responses have
``config_hash="imported"``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lceval.benchmarks.leval import BENCHMARK
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
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, atomic_open, dumps, new_meta, write_jsonl
from lceval.core.records import Response, Sample
from lceval.core.store import ResponseStore

IMPORTED_HASH = "imported"
"""``Response.config_hash`` of imported predictions (no lceval generation config)."""

SUFFIX = ".pred.jsonl"


def prediction_key(row: Mapping[str, Any]) -> str | None:
    """The first key holding ``_pred`` of an official prediction row (``<model>_pred``), as
    ``auto_eval.py`` and ``llm_eval.py`` search for it; None when there is none."""
    return next((k for k in row if isinstance(k, str) and "_pred" in k), None)


def model_of(key: str) -> str:
    """The model name of a ``<model>_pred`` key (``gpt4-x_pred`` -> ``gpt4-x``)."""
    return key[: -len("_pred")] if key.endswith("_pred") else key.replace("_pred", "")


def read_baseline(path: str | Path) -> tuple[dict[tuple[str, str], str], str, list[Path]]:
    """A baseline's answers from official prediction files.

    Args:
        path: a ``*.pred.jsonl`` file, or a folder searched recursively for them (e.g.
            ``Predictions/ngram_eval/turbo-16k-0613``).

    Returns:
        ((query, reference) -> answer, the baseline's model name, the files read).

    Raises:
        LcevalError: no such path, no prediction file, a row without ``query``, ``gt`` or a
            ``<model>_pred`` key.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise LcevalError(f"baseline {str(p)!r} does not exist")
    files = sorted(p.rglob("*.pred.jsonl")) if p.is_dir() else [p]
    if not files:
        raise LcevalError(f"baseline folder {str(p)!r} holds no *.pred.jsonl file")
    answers: dict[tuple[str, str], str] = {}
    names: list[str] = []
    for f in files:
        for i, row in enumerate(corpora.read_jsonl_file(f), 1):
            key = prediction_key(row)
            if key is None or not isinstance(row.get("query"), str) or "gt" not in row:
                raise LcevalError(f"{f} line {i}: expected keys query, gt and <model>_pred")
            answers.setdefault((row["query"], str(row["gt"])), str(row[key]))
            if model_of(key) not in names:
                names.append(model_of(key))
    return answers, "+".join(names), files


def prediction_files(path: str | Path) -> list[tuple[str, Path]]:
    """(task, file) of the official per-task prediction files at ``path`` (a file, or a folder
    searched recursively), sorted by path.

    Raises:
        LcevalError: the path does not exist, or holds no ``<task>.pred.jsonl`` file.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise LcevalError(f"{str(p)!r} does not exist")
    files = sorted(p.rglob(f"*{SUFFIX}")) if p.is_dir() else [p]
    out = []
    for f in files:
        task = f.name[: -len(SUFFIX)] if f.name.endswith(SUFFIX) else ""
        if task in TASKS:
            out.append((task, f))
        elif not p.is_dir():
            raise LcevalError(f"{f}: file name is not <task>{SUFFIX} for an L-Eval task")
    if not out:
        raise LcevalError(f"{str(p)!r} holds no <task>{SUFFIX} file of L-Eval")
    return out


def _gold(task: str, row: dict[str, Any], line: int) -> LevalGold:
    common = {
        "query": row["query"],
        "reference": str(row["gt"]),
        "evaluation": str(row.get("evaluation") or ("exam" if task in CLOSED_TASKS else "")),
    }
    if task == "sci_fi":
        return SciFiGold(**common, judgment="both")
    if task == "topic_retrieval_longchat":
        return TopicGold(**common, topic_index=line % 3)
    if task in OPEN_TASKS:
        ref = common["reference"]
        return OpenGold(**common, metric=NGRAM_METRIC[task], reference_words=len(ref.split()))
    return ExamGold(**common)


def _check_row(row: dict[str, Any], f: Path, line: int) -> str:
    """The ``<model>_pred`` key of a prediction row, after checking the row's values.

    Raises:
        LcevalError: naming the file, the line and what is wrong: a missing key, a ``query``
            that is not text, a ``gt`` that is missing or null, a ``_pred`` key without a
            model name.
    """
    key = prediction_key(row)
    missing = [k for k in ("query", "gt") if k not in row]
    if missing or key is None:
        missing += ["<model>_pred"] if key is None else []
        raise LcevalError(
            f"{f} line {line}: missing key(s) {', '.join(missing)} (a row holds query, gt, "
            "<model>_pred)"
        )
    if not isinstance(row["query"], str):
        raise LcevalError(
            f"{f} line {line}: query must be text, got {type(row['query']).__name__} "
            f"{json.dumps(row['query'])[:40]}"
        )
    if row["gt"] is None:
        raise LcevalError(f"{f} line {line}: gt (the reference answer) is null")
    if not model_of(str(key)).strip():
        raise LcevalError(
            f"{f} line {line}: key {key!r} names no model; the answer's key is <model>_pred "
            "(e.g. gpt4_pred)"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise LcevalError(f"{f} line {line}: key {key!r} holds a control character (a line break?)")
    return str(key)


def import_predictions(
    path: str | Path,
    run_id: str,
    *,
    root: str | Path | None = None,
    force: bool = False,
) -> RunDir:
    """Write a run folder from official prediction files (module docstring).

    Args:
        path: a ``Predictions`` folder (or any folder below it, or one ``<task>.pred.jsonl``).
        run_id: the run folder to create.
        root: folder holding run folders.
        force: replace a run folder that already has responses.

    Returns:
        The run folder (samples.jsonl, an empty contexts.jsonl, responses.jsonl, run.json).

    Raises:
        LcevalError: no prediction file, a row without ``query``, ``gt`` or ``<model>_pred``, a
            run that already has responses (without ``force``), an unwritable folder.
    """
    files = prediction_files(path)
    run = RunDir(run_id, root)
    if run.responses.exists() and run.responses.stat().st_size > 0 and not force:
        raise LcevalError(f"run {run_id} already has responses (use --force or another --run-id)")
    samples: dict[tuple[str, str, str, int], Sample] = {}
    responses: list[Response] = []
    models: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    base = Path(path).expanduser()
    per_task: Counter[str] = Counter()
    for task, f in files:
        seen: Counter[tuple[str, str]] = Counter()
        rel = str(f.relative_to(base)) if base.is_dir() else f.name
        sources[rel] = corpora.sha256(str(f))
        for line, row in enumerate(corpora.read_jsonl_file(f)):
            key = _check_row(row, f, line + 1)
            question = (row["query"], str(row["gt"]))
            seen[question] += 1
            skey = (task, *question, seen[question])
            if skey not in samples:
                k = per_task[task]
                per_task[task] += 1
                gold = _gold(task, row, line)
                samples[skey] = Sample(
                    id=f"leval/{task}/p{k:04d}",
                    benchmark="leval",
                    task=task,
                    instruction=row["query"],
                    gold=gold,
                    scenario="closed" if task in CLOSED_TASKS else "open",
                    meta={"imported_from": rel, "line": line, "lie": None, "retrieval": "full"},
                )
            model = model_of(key)
            info = models.setdefault(model, {"backend": "import", "folders": [], "files": []})
            if f.parent.name not in info["folders"]:
                info["folders"].append(f.parent.name)
            if rel not in info["files"]:
                info["files"].append(rel)
            pred = row[key]
            responses.append(
                Response(
                    sample_id=samples[skey].id,
                    model=model,
                    text=pred if isinstance(pred, str) else ("" if pred is None else str(pred)),
                    config_hash=IMPORTED_HASH,
                )
            )
    if not responses:
        names = ", ".join(str(f) for _, f in files[:3]) + (" ..." if len(files) > 3 else "")
        raise LcevalError(f"no prediction row to import: {names} hold(s) no JSON line")
    run.create()
    run.write_samples(samples.values(), [])
    write_jsonl(run.responses, responses)
    run.write_meta(
        new_meta(
            run_id,
            params={"leval": {"import": os.fspath(base)}},
            sources={"leval": {"predictions": sources}},
            models=models,
        )
    )
    return run


def export_predictions(
    run_id: str,
    folder: str | Path,
    model: str | None = None,
    *,
    root: str | Path | None = None,
    lie: bool | None = None,
    retrieval: str = "full",
    tasks: Sequence[str] | None = None,
) -> list[Path]:
    """Write a run's responses as official prediction files ``<folder>/<task>.pred.jsonl``
    (keys ``query``, ``gt``, ``<model>_pred``, ``evaluation``), in sample order.

    Args:
        run_id: the run.
        folder: where the files go.
        model: the responses' model (None: the run's only model).
        root: folder holding run folders.
        lie: only open-ended samples with this LIE setting (None: any); closed-ended samples
            are always written.
        retrieval: only samples of this retrieval mode.
        tasks: only these tasks.

    Returns:
        The files written.

    Raises:
        LcevalError: no responses, several models and none chosen, nothing selected.
    """
    run = RunDir(run_id, root)
    samples = BENCHMARK.load_samples(s for s in run.read_samples() if s.benchmark == BENCHMARK.key)
    store = ResponseStore(run.responses) if run.responses.exists() else None
    if store is None or len(store) == 0:
        raise LcevalError(f"run {run_id} has no responses to export")
    by_model: dict[str, dict[str, Response]] = {}
    for r in store:
        if r.finish_reason != "error":
            by_model.setdefault(r.model, {}).setdefault(r.sample_id, r)
    if model is None:
        if len(by_model) != 1:
            raise LcevalError(f"run {run_id} has models {', '.join(by_model)}: choose one")
        model = next(iter(by_model))
    answers = by_model.get(model)
    if not answers:
        raise LcevalError(f"run {run_id} has no responses of model {model!r}")
    rows: dict[str, list[str]] = {}
    for s in samples:
        gold = s.gold
        if s.id not in answers or not isinstance(gold, LevalGold):
            continue
        if tasks is not None and s.task not in tasks:
            continue
        if s.meta.get("retrieval", "full") != retrieval:
            continue
        if lie is not None and isinstance(gold, OpenGold) and s.meta.get("lie") != lie:
            continue
        if isinstance(gold, SciFiGold) and gold.judgment == "fact":
            continue  # joined to its loyalty answer below
        text = answers[s.id].text
        if isinstance(gold, SciFiGold) and gold.judgment == "loyalty":
            fact = answers.get(s.id.replace("/loyalty", "/fact"))
            text = f"{text} [fact: {fact.text if fact else ''}]"
        row = {
            "query": gold.query,
            "gt": gold.reference,
            f"{model}_pred": text,
            "evaluation": gold.evaluation,
        }
        rows.setdefault(s.task, []).append(dumps(row))
    if not rows:
        raise LcevalError(f"run {run_id}: no response selected to export")
    out = []
    for task, lines in rows.items():
        p = Path(folder) / f"{task}{SUFFIX}"
        with atomic_open(p) as fh:
            fh.write("\n".join(lines) + "\n")
        out.append(p)
    return out
