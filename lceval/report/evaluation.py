"""One call for a whole evaluation (``lceval eval``, :func:`lceval.evaluate`): build, answer,
score and report one benchmark from one declared config, resumable, as lm-evaluation-harness's
``simple_evaluate`` and inspect_ai's ``eval()``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.models.base import check_load
from lceval.models.specs import resolve_models
from lceval.params import load_params
from lceval.report.stage import report
from lceval.run.building import build
from lceval.run.config import EvalConfig, EvalOptions, InferConfig, validate
from lceval.run.inference import infer
from lceval.run.scoring import score

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class EvalResult:
    """What :func:`evaluate` made: the run; ``headlines`` per benchmark, scorer and model
    (``benchmark, scorer, model, metric, unit, estimate, low, high`` (95% CI, in ``unit``),
    ``n`` scored); ``report`` (index.html); ``answered`` responses to the selected samples,
    ``errors`` of them (retried by the next call); ``summary``, what ``lceval eval`` prints."""

    run: RunDir
    headlines: pd.DataFrame
    report: Path
    answered: int
    errors: int
    summary: str

    @property
    def score(self) -> float:
        """The first headline's estimate; :class:`LcevalError` when nothing was scored."""
        if not len(self.headlines):
            raise LcevalError(f"run {self.run.run_id} has no headline in results.json")
        return float(self.headlines["estimate"].iloc[0])


def default_run_id(benchmark: str, models: list[Any]) -> str:
    """``<benchmark>-<model>`` (run-id-safe, at most 128 characters): the same command names the
    same run, so running it again resumes."""
    names = []
    for m in models:
        name = m.get("name") or m.get("model") if isinstance(m, dict) else m
        names.append(str(name).rstrip("/").rsplit("/", 1)[-1])
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join([benchmark, *names])).strip("-._")
    return slug[:128] or "eval"


def evaluate(
    benchmark: str,
    *,
    model: str | list[Any] | None = None,
    limit: int | None = None,
    root: str | Path | None = None,
    progress: bool = True,
    **config: Unpack[EvalOptions],
) -> EvalResult:
    """Build ``benchmark``, answer it with ``model``, score and report it: ``lceval eval`` in
    Python, resumable (the same ``run_id``, default ``<benchmark>-<model>``, keeps the answers).

    Args:
        benchmark: a benchmark key (``lceval list``).
        model: a path, hub id or ``embedded`` (the default CPU stand-in), or a list of them
            (each may be ``{model, backend, options, name}``).
        limit: answer only the first N samples.
        root: folder holding run folders (default ``$LCEVAL_OUTPUTS``, else ``./outputs``).
        progress: draw the progress bars.
        **config: any other key of :class:`lceval.run.config.EvalConfig`
            (:class:`~lceval.run.config.EvalOptions`), checked like a params file's.

    Returns:
        The run, its headline table, the path of report/index.html.

    Raises:
        LcevalError: one line: a bad key or value, an unknown benchmark, backend or model, bad
            build params, anything a stage refuses.
    """
    values: dict[str, Any] = {"benchmark": benchmark, **config}
    if model is not None:
        values["model"] = model
    if limit is not None:
        values["limit"] = limit
    return run_eval(validate(EvalConfig, values, "params", "evaluate"), root, progress=progress)


def run_eval(cfg: EvalConfig, root: str | Path | None, *, progress: bool = True) -> EvalResult:
    """The steps of :func:`evaluate` (and ``lceval eval``) from a validated config: the model
    checked before anything is built, then build, infer, score, report."""
    registry.get(cfg.benchmark)  # an unknown benchmark: one line before anything else
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
    run = build(run_id, cfg.benchmark, params, root=root, force=cfg.force)
    # the inference keys given (and only those: the build's declared defaults fill the rest)
    given = {k: getattr(cfg, k) for k in cfg.model_fields_set if k in InferConfig.model_fields}
    given.update(run_id=run_id, model=models, models=None)
    infer_cfg = InferConfig.model_validate(given)
    responses = infer(run_id, root=root, config=infer_cfg, progress=progress)
    errors = sum(r.finish_reason == "error" for r in responses)
    score(run_id, root=root, scorer=cfg.scorer, progress=progress)
    import pandas as pd  # pandas: import lceval loads this module

    from lceval.report.index_page import headline_rows, report_summary

    tables = report(run_id, root=root, scorer=cfg.scorer)
    cols = ["benchmark", "scorer", "model", "metric", "unit", "estimate", "low", "high", "n"]
    return EvalResult(
        run=run,
        headlines=pd.DataFrame(headline_rows(run.report), columns=cols),
        report=run.report / "index.html",
        answered=len(responses),
        errors=errors,
        summary=report_summary(run, tables),
    )
