"""The public face: the verbs of the ``lceval`` command as Python functions, in one module
(``lceval`` re-exports them), each typed for any type checker from its declared config::

    evaluate(benchmark, **keywords)   lceval eval      build, answer, score, report (here)
    build(run_id, benchmark, params)  lceval build     lceval.run.building
    infer(run_id, **keywords)         lceval infer     lceval.run.inference
    score(run_id, ...)                lceval score     lceval.run.scoring
    write_report(run_id, ...)         lceval report    lceval.report.stage
    compare(run_a, run_b, ...)        lceval compare   lceval.report.compare (paired)

``evaluate`` and ``infer`` take the keywords of their configs (``lceval.run.config``'s
:class:`~lceval.run.config.EvaluateCall`, :class:`~lceval.run.config.InferCall`) through
:func:`lceval.params.keywords_of`: one declaration, the fields, which pydantic's
``dataclass_transform`` hands to mypy or pyright without a plugin. Like lm-evaluation-harness's
``simple_evaluate`` and inspect_ai's ``eval()``, ``evaluate`` is resumable: the same run id keeps
the answers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lceval.benchmarks import registry
from lceval.core.console import log
from lceval.core.errors import LcevalError
from lceval.models.base import check_load
from lceval.models.specs import resolve_models
from lceval.params import keywords_of, load_params
from lceval.report.compare import compare_runs as compare
from lceval.report.stage import EvalResult, write_report, written_alike
from lceval.run.building import build
from lceval.run.config import EvalConfig, EvaluateCall, InferConfig, validate
from lceval.run.inference import infer, run_infer
from lceval.run.scoring import score

__all__ = [
    "EvalResult",
    "build",
    "compare",
    "evaluate",
    "infer",
    "run_eval",
    "score",
    "write_report",
]


def default_run_id(benchmark: str, models: list[Any]) -> str:
    """``<benchmark>-<model>`` (run-id-safe, at most 128 characters): the same command names the
    same run, so running it again resumes."""
    names = []
    for m in models:
        name = m.get("name") or m.get("model") if isinstance(m, dict) else m
        names.append(str(name).rstrip("/").rsplit("/", 1)[-1])
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join([benchmark, *names])).strip("-._")
    return slug[:128] or "eval"


@keywords_of(EvaluateCall)
def evaluate(benchmark: str, /, **options: Any) -> EvalResult:
    """Build ``benchmark``, answer it with ``model``, score and report it: ``lceval eval`` in
    Python, resumable (the same ``run_id``, default ``<benchmark>-<model>``, keeps the answers).

    Args:
        benchmark: a benchmark key (``lceval list``).
        **options: the keys of :class:`lceval.run.config.EvaluateCall` (mypy checks names
            and types from its fields), checked like a params file's; among them ``model`` (a
            path, hub id or ``embedded``, the default CPU stand-in, or a list of them, each may be
            ``{model, backend, options, name}``), ``limit`` (N samples per task, as
            lm-evaluation-harness's ``--limit``, drawn across each task's lengths and variants:
            :func:`lceval.run.selection.per_task`; only those are built),
            ``root`` (the folder of run folders, default ``$LCEVAL_OUTPUTS``, else ``./outputs``),
            ``progress`` (draw the bars).

    Returns:
        The run, its headline table, the path of report/index.html.

    Raises:
        LcevalError: one line: a bad key or value, an unknown benchmark, backend or model, bad
            build params, anything a stage refuses.
    """
    if "benchmark" in options:  # the positional, never a keyword (it would go over it)
        raise LcevalError("evaluate: benchmark is the first argument, not a keyword")
    call = validate(EvaluateCall, options, "params", "evaluate")
    said = {k: v for k, v in options.items() if k in EvalConfig.model_fields}
    cfg = validate(EvalConfig, {"benchmark": benchmark, **said}, "params", "evaluate")
    return run_eval(cfg, call.root, progress=call.progress)


def run_eval(cfg: EvalConfig, root: str | Path | None, *, progress: bool = True) -> EvalResult:
    """The steps of :func:`evaluate` (and ``lceval eval``) from a validated config: the model
    checked before anything is built, then build, infer, score, report."""
    bench = registry.get(cfg.benchmark)  # an unknown benchmark: one line before anything else
    # what the benchmark alone decides is refused before a model loads or a folder is written
    # (a bad scorer was refused after the answers, a bad task after the build)
    if cfg.scorer is not None:
        registry.find_scorer(cfg.scorer, [bench.key])
    unknown = [t for t in cfg.tasks or [] if t not in bench.tasks]
    if unknown:
        raise LcevalError(
            f"task(s) {', '.join(unknown)[:200]} not in benchmark {bench.key}; "
            f"it has {', '.join(bench.tasks)[:200]}"
        )
    if cfg.models is not None:
        models = list(cfg.models)
    elif isinstance(cfg.model, list):
        models = list(cfg.model)
    else:
        models = [cfg.model or "embedded"]
    for spec in resolve_models(None, models, cfg.backend, cfg.backend_options):
        check_load(spec.backend, spec.model, dict(spec.options))  # before a build is written
    run_id = cfg.run_id or default_run_id(cfg.benchmark, models)
    params = load_params(cfg.params) if cfg.params else {}
    params.update(cfg.param)
    # --limit N: only N samples per task are built into the run; the same command again keeps
    # its samples without building (run.json records the params, limit and lceval version)
    run = build(
        run_id, cfg.benchmark, params, root=root, force=cfg.force, limit=cfg.limit, reuse=True
    )
    # the inference keys given (and only those: the build's declared defaults fill the rest)
    given = {k: getattr(cfg, k) for k in cfg.model_fields_set if k in InferConfig.model_fields}
    given.update(run_id=run_id, model=models, models=None)
    infer_cfg = InferConfig.model_validate(given)
    responses = run_infer(infer_cfg, root=root, progress=progress)
    failed = [r for r in responses if r.finish_reason == "error"]
    errors = len(failed)
    # the same command again with nothing new answered: the scores and the report are kept
    score(run_id, root=root, scorer=cfg.scorer, progress=progress, reuse=True)
    import pandas as pd  # heavy: pandas

    from lceval.report.index_page import headline_rows, report_summary  # pulls pandas

    tables = written_alike(run_id, root=root, scorer=cfg.scorer)
    if tables is None:
        tables = write_report(run_id, root=root, scorer=cfg.scorer)
    else:
        log(f"report: {run.report / 'index.html'} is current; not written again")
    cols = ["benchmark", "scorer", "model", "metric", "unit", "estimate", "low", "high", "n"]
    return EvalResult(
        run=run,
        headlines=pd.DataFrame(headline_rows(run.report), columns=cols),
        report=run.report / "index.html",
        answered=len(responses),
        errors=errors,
        summary=report_summary(run, tables),
        first_error=failed[0].error if failed else None,
    )
