"""One call for a whole evaluation (``lceval eval``, :func:`lceval.evaluate`): build, answer,
score and report one benchmark from one declared config, resumable, as lm-evaluation-harness's
``simple_evaluate`` and inspect_ai's ``eval()``."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.models.base import check_load
from lceval.models.specs import resolve_models
from lceval.params import load_params
from lceval.report.stage import report
from lceval.run.building import build
from lceval.run.config import (
    EvalConfig,
    EvaluateConfig,
    EvaluateOptions,
    InferConfig,
    validate,
)
from lceval.run.inference import infer
from lceval.run.scoring import score

if TYPE_CHECKING:
    import pandas as pd

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class EvalResult:
    """What :func:`evaluate` made: the run; ``headlines`` per benchmark, scorer and model
    (``benchmark, scorer, model, metric, unit, estimate, low, high`` (95% CI, in ``unit``),
    ``n`` scored); ``report`` (index.html); ``answered`` responses to the selected samples,
    ``errors`` of them (``first_error``: the first one's reason; :attr:`retried`: whether the
    next call may answer them); ``summary``, what ``lceval eval`` prints."""

    run: RunDir
    headlines: pd.DataFrame
    report: Path
    answered: int
    errors: int
    summary: str
    first_error: str | None = None

    @property
    def retried(self) -> bool:
        """Whether the same call again may answer the failed samples: an engine's failure, not
        lceval's refusal of the sample itself (``LcevalError: ...``), which comes back alike."""
        return self.errors > 0 and not (self.first_error or "").startswith("LcevalError")

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


def _keywords_of(
    options: Callable[P, Any],
) -> Callable[[Callable[..., R]], Callable[Concatenate[str, P], R]]:
    """Give a ``(benchmark, /, **options)`` function the keywords of ``options`` (a pydantic
    model): for mypy, its ``__init__`` (pydantic's plugin types it from the fields); at run time,
    ``__signature__`` (``help()``, ``inspect.signature``). One declaration: the fields."""

    def wrap(f: Callable[..., R]) -> Callable[Concatenate[str, P], R]:
        own = inspect.signature(f)
        benchmark = own.parameters["benchmark"]  # positional-only
        keywords = inspect.signature(options).parameters.values()
        signature = own.replace(parameters=[benchmark, *keywords])
        f.__signature__ = signature  # type: ignore[attr-defined]
        return f

    return wrap


@_keywords_of(EvaluateOptions)
def evaluate(benchmark: str, /, **options: Any) -> EvalResult:
    """Build ``benchmark``, answer it with ``model``, score and report it: ``lceval eval`` in
    Python, resumable (the same ``run_id``, default ``<benchmark>-<model>``, keeps the answers).

    Args:
        benchmark: a benchmark key (``lceval list``).
        **options: the keys of :class:`lceval.run.config.EvaluateOptions` (mypy checks names
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
    cfg = validate(EvaluateConfig, {"benchmark": benchmark, **options}, "params", "evaluate")
    return run_eval(cfg, cfg.root, progress=cfg.progress)


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
    responses = infer(run_id, root=root, config=infer_cfg, progress=progress)
    failed = [r for r in responses if r.finish_reason == "error"]
    errors = len(failed)
    score(run_id, root=root, scorer=cfg.scorer, progress=progress)
    import pandas as pd  # pandas: import lceval loads this module

    from lceval.report.index_page import headline_rows, report_summary  # pulls pandas

    tables = report(run_id, root=root, scorer=cfg.scorer)
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
