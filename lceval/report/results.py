"""report/results.json (``lceval/schemas/results.schema.json``): every headline with its CI and
n per benchmark, scorer and model, the per-task means, the coverage, extra metrics and run.json's
provenance; and leaderboards read from such files."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from lceval import metrics
from lceval.benchmarks import registry
from lceval.benchmarks.base import scorer_of
from lceval.core.console import log
from lceval.core.errors import LcevalError, one_line
from lceval.core.io import RunDir, check_depth, read_bounded
from lceval.core.records import to_dict
from lceval.report.compare import check_once, named_models, ranked
from lceval.report.coverage import CUT_FLAG, run_coverage, run_cut_answers, with_finished
from lceval.report.reasoning import reasoning_frame, task_reasoning
from lceval.report.reproduction import schema_error
from lceval.report.samples_page import default_scorer, write_page

SCHEMA_VERSION = "1"  # a reader refuses a file of another version
N_RESAMPLES, CONFIDENCE = 2000, 0.95  # the bootstrap behind each CI


def schema() -> dict[str, Any]:
    """The JSON Schema of results.json shipped in the package."""
    text = resources.files("lceval").joinpath("schemas/results.schema.json").read_text("utf-8")
    return dict(json.loads(text))


def _number(x: Any) -> float | None:  # JSON has no NaN
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


_COLS = ["metric", "unit", "model", "estimate", "low", "high", "n"]


def _records(frame: pd.DataFrame, cols: list[str], **fixed: Any) -> list[dict[str, Any]]:
    """``frame[cols]`` as JSON rows (NaN and infinities null), each with ``fixed`` first."""
    types = {"model": str, "metric": str, "unit": str, "n": int}
    part = frame[cols].astype({c: t for c, t in types.items() if c in cols}).astype(object)
    part = part.where(part.map(lambda v: _number(v) is not None or not isinstance(v, float)), None)
    return [{**fixed, **r} for r in part.to_dict("records")]


def results_document(run: RunDir, *, seed: int = 0) -> dict[str, Any]:
    """The results.json content of a scored run (every scorer of every benchmark), valid
    against :func:`schema`; ``seed`` seeds the bootstrap.

    Raises:
        LcevalError: missing samples, scores or run.json.
    """
    scores = run.read_scores()
    samples = registry.load_samples(run.read_samples())
    meta = to_dict(run.read_meta())
    reasoning = reasoning_frame(run)
    cut = run_cut_answers(run)
    headlines: list[dict[str, Any]] = []
    tasks: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    for key in sorted({s.benchmark for s in samples}):
        bench = registry.get(key)
        mine = [s for s in samples if s.benchmark == key]
        rows = scores[scores["benchmark"] == key]
        for name in sorted(set(rows["scorer"].astype(str))):
            if name not in bench.scorers:  # rows of a scorer this lceval no longer has
                log(f"results.json: {key} scores of unknown scorer {name!r} left out")
                continue
            spec = bench.scorer(name)
            h = metrics.headline_of(bench, rows, mine, name)
            est = metrics.headline_estimates(
                h, n_resamples=N_RESAMPLES, confidence=CONFIDENCE, seed=seed
            )
            finished = _finished_estimates(h, cut, seed) if cut else {}
            fixed = {"benchmark": key, "scorer": name}
            for row in _records(est, [*_COLS, "n_units"], **fixed, scorer_version=spec.version):
                headlines.append({**row, **finished.get(row["model"], {})})
            tasks += _task_means(key, name, rows[rows["scorer"] == name], reasoning, cut)
            if bench.metrics is not None and name == bench.default_scorer:
                extra += _records(bench.metrics(rows[rows["scorer"] == name], mine), _COLS, **fixed)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run.run_id,
        "written": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "bootstrap": {"n_resamples": N_RESAMPLES, "confidence": CONFIDENCE, "seed": seed},
        "headlines": headlines,
        "tasks": tasks,
        "provenance": json.loads(json.dumps(meta, default=str, allow_nan=False)),
        "coverage": [c.as_dict() for c in run_coverage(run)],
    }
    if extra:
        doc["metrics"] = extra
    return doc


def _finished_estimates(h: Any, cut: set[tuple[str, str]], seed: int) -> dict[str, Any]:
    """Per model with answers cut at the budget: ``n_cut`` and the ``*_finished`` headline."""
    keys = list(zip(h.frame["sample_id"].astype(str), h.frame["model"].astype(str), strict=True))
    is_cut = pd.Series([k in cut for k in keys], index=h.frame.index)
    out: dict[str, Any] = {}
    for model in h.models:
        mine = h.frame["model"].astype(str) == model
        n_cut = int((is_cut & mine).sum())
        if not n_cut:
            continue
        out[model] = {"n_cut": n_cut, "estimate_finished": None, "n_finished": 0}
        kept = h.frame[mine & ~is_cut]
        if not len(kept):
            continue
        try:
            est = metrics.headline_estimates(
                dataclasses.replace(h, frame=kept),
                n_resamples=N_RESAMPLES,
                confidence=CONFIDENCE,
                seed=seed,
            )
        except (ValueError, ZeroDivisionError, LcevalError):
            continue
        for row in _records(est, ["estimate", "low", "high", "n"]):
            out[model].update({f"{k}_finished": v for k, v in row.items()})
    return out


def _task_means(
    key: str, scorer: str, rows: pd.DataFrame, reasoning: pd.DataFrame, cut: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Per (model, task) the mean, counts and cut answers; with thinking the reasoning tokens."""
    thought = task_reasoning(rows, reasoning)
    out = []
    for r in with_finished(rows, cut).reset_index().itertuples(index=False):
        model, task = str(r.model), str(r.task)
        out.append(
            {
                "benchmark": key,
                "scorer": scorer,
                "model": model,
                "task": task,
                "mean": _number(r.mean),
                "n": int(r.n - r.n_nan),
                "n_nan": int(r.n_nan),
                "n_cut": int(r.cut),
                "cut_flag": bool(r.cut > CUT_FLAG * r.n),
                "mean_finished": _number(r.mean_finished),
            }
        )
        if thought:
            tokens, no_answer = thought.get((model, task), (0.0, 0))
            out[-1].update(reasoning_tokens=_number(tokens), n_no_answer=no_answer)
    return out


def write_results(run: RunDir, *, seed: int = 0) -> Path:
    """Write ``<run.report>/results.json``, validated first; :class:`LcevalError` as
    :func:`results_document` (no scores among them), when invalid (a bug) or not writable."""
    doc = results_document(run, seed=seed)
    check(doc, f"results of run {run.run_id}")
    text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    return write_page(Path(run.report) / "results.json", text)


def check(doc: Any, where: str) -> None:
    """Validate ``doc`` against the schema; :class:`LcevalError` names ``where``, the failing
    field's path and the reason."""
    version = doc.get("schema_version") if isinstance(doc, Mapping) else None
    if version is not None and not isinstance(version, str):
        raise LcevalError(
            f"{where} has schema_version {json.dumps(version)} ({type(version).__name__}); "
            f'results files give it as text: "{SCHEMA_VERSION}"'
        )
    if version not in (None, SCHEMA_VERSION):
        raise LcevalError(
            f"{where} has schema_version {doc.get('schema_version')!r}; this lceval reads "
            f"version {SCHEMA_VERSION}"
        )
    error = schema_error(schema(), doc, top="(top level)")
    if error is not None:
        raise LcevalError(f"{where} is not an lceval results file: at {error[0]}: {error[1]}")


def is_results_source(arg: str) -> bool:
    """True when a ``lceval compare`` argument names a results file (``*.json`` or a folder
    path) rather than a run id."""
    return arg.endswith(".json") or ("/" in arg and Path(arg).is_dir())


def load_results(source: str | Path) -> dict[str, Any]:
    """Read and validate a results.json: a file, or a run or report folder holding it;
    :class:`LcevalError` for no such file, not UTF-8 JSON, or not valid against the schema."""
    path = Path(source)
    if path.is_dir():
        found = [p for p in (path / "report" / "results.json", path / "results.json") if p.exists()]
        if not found:
            raise LcevalError(
                f"{path} holds no report/results.json or results.json (lceval report writes it)"
            )
        path = found[0]
    if not path.exists():
        raise LcevalError(f"{path} does not exist")

    def no_constant(name: str) -> Any:  # NaN or Infinity, which Python's json reads
        raise LcevalError(
            f"{path} holds {name}, which JSON does not allow: a number that could not be "
            "computed is written null (lceval report writes it so)"
        )

    try:  # read_bounded: one line for a folder, FIFO, unreadable or oversized file
        doc = check_depth(
            json.loads(read_bounded(path).decode("utf-8"), parse_constant=no_constant)
        )
    except UnicodeDecodeError as exc:
        raise LcevalError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise LcevalError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise LcevalError(f"{path} is not a results document: nested too deeply") from None
    except ValueError as exc:  # nested past MAX_JSON_DEPTH, a number too long to read
        raise LcevalError(f"{path} is not a results document: {one_line(exc, 80)}") from None
    check(doc, str(path))
    return dict(doc)


def leaderboard(
    docs: Sequence[Mapping[str, Any]], *, benchmark: str | None = None, scorer: str | None = None
) -> pd.DataFrame:
    """:func:`lceval.report.compare.leaderboard` (same columns) from results documents, of each
    benchmark's default scorer (``scorer``'s for its benchmark); :class:`LcevalError` for a run
    id given twice, ``benchmark`` or ``scorer`` in none of them, nothing to rank, two models
    that would share a name."""
    ids = [str(d["run_id"]) for d in docs]
    check_once(ids)
    if scorer is not None:  # a scorer the documents do not hold would rank the defaults
        key = scorer.split(":", 1)[0]
        held = sorted({h["scorer"] for d in docs for h in d["headlines"] if h["benchmark"] == key})
        if scorer not in held:
            where = f"results of run{'s' if len(ids) > 1 else ''} {', '.join(ids)}"
            raise LcevalError(
                f"{where} hold no headline of scorer {scorer!r}; their {key} scorers: "
                f"{', '.join(held) or 'none'}"
            )
    rows = []
    for doc in docs:
        for h in doc["headlines"]:
            key = h["benchmark"]
            if benchmark is not None and key != benchmark:
                continue
            if h["scorer"] == (scorer_of(key, scorer) or default_scorer(key, h["scorer"])):
                rows.append({**h, "run_id": doc["run_id"]})
    if not rows:
        what = f"benchmark {benchmark!r}" if benchmark else "headline"
        raise LcevalError(f"no {what} in results of runs {', '.join(ids)}")
    parts = [
        ranked(named_models(str(key), part.groupby("run_id", sort=False)))
        for key, part in pd.DataFrame(rows).groupby("benchmark", sort=True)
    ]
    cols = ["benchmark", "metric", "unit", "rank", "model", "estimate", "low", "high", "n"]
    out = pd.concat(parts, ignore_index=True)[[*cols, "n_units"]]
    return out.astype({"estimate": float, "low": float, "high": float})
