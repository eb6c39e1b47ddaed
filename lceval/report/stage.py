"""The report stage: a run's tables and figures, per-sample pages, results.json and index.html.
``import lceval`` loads this module, so the page and table modules (pandas) load inside it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lceval.benchmarks import registry
from lceval.benchmarks.base import scorer_of
from lceval.core.console import log
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, atomic_open, inputs_digest, read_json_object
from lceval.run.scoring import load_samples

if TYPE_CHECKING:
    import pandas as pd


class ReportTables(dict[str, "pd.DataFrame"]):
    """The tables of :func:`write_report`, ``"<benchmark>/<table>" -> DataFrame``, and which scorers
    each benchmark's tables were read from (``scorers``: key -> scorer names)."""

    scorers: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class EvalResult:
    """What :func:`lceval.evaluate` made: the run; ``headlines`` per benchmark, scorer and model
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


def write_run_pages(run: RunDir) -> list[Path]:
    """Write ``samples.html`` and (with two models or more) ``compare.html`` under the run's
    report folder, nothing without scores; :class:`LcevalError` for a score of an unknown
    sample or a folder that cannot be written."""
    from lceval.report import compare_page, samples_page  # pulls pandas

    page_path = samples_page.write_samples_page(run)
    if page_path is None:
        return []
    if run.read_scores()["model"].nunique() > 1:
        return [page_path, compare_page.write_run_compare_page(run)]
    return [page_path]


REPORT_STAMP = "inputs.json"
"""``report/inputs.json``: what the report was written from (``inputs``: an
:func:`lceval.core.io.inputs_digest` of the run folder's files and executed notebooks and the
scorer asked for), the names of its tables and the scorers each benchmark's were read from."""


def _report_inputs(run: RunDir, scorer: str | None) -> str:
    """The digest of what :func:`write_report` reads: the run folder's own files (samples,
    contexts, responses, scores, run.json, detail tables; not locks, moved-aside files or
    temporaries), its executed notebooks, and ``scorer``."""
    files = sorted(
        p
        for p in run.path.iterdir()
        if p.is_file()
        and not p.name.startswith(".")
        and not p.name.endswith(".lock")
        and ".replaced-" not in p.name
    )
    notebooks = sorted(Path(run.notebooks).glob("*.ipynb"))
    return inputs_digest([*files, *notebooks], scorer=scorer)


def written_alike(
    run_id: str, *, root: str | Path | None = None, scorer: str | None = None
) -> ReportTables | None:
    """The report's tables when report/ was written by :func:`write_report` from the run as it
    is now (:data:`REPORT_STAMP`; index.html and results.json present), else None: ``lceval
    eval`` run again with nothing new keeps the report. The tables are named, not read back
    (empty frames; their CSVs are under report/), with ``.scorers`` as written."""
    import pandas as pd  # heavy: pandas

    run = RunDir(run_id, root)
    stamp = read_json_object(run.report / REPORT_STAMP)
    pages = (run.report / "index.html", run.report / "results.json")
    if not all(p.is_file() for p in pages) or stamp.get("inputs") != _report_inputs(run, scorer):
        return None
    tables = ReportTables({str(k): pd.DataFrame() for k in stamp.get("tables", [])})
    tables.scorers = {str(k): tuple(v) for k, v in (stamp.get("scorers") or {}).items()}
    return tables


def write_report(
    run_id: str, *, root: str | Path | None = None, scorer: str | None = None
) -> ReportTables:
    """Write the run's report/: each benchmark's tables and figures (from its default scorer's
    rows, ``Benchmark.scores_for``; with ``scorer``, that one's, under ``report/<key>-<variant>/``),
    samples.html, compare.html, results.json and index.html; staged and swapped in whole
    (:meth:`lceval.core.io.RunDir.staged_report`), so a failed report leaves the last good one;
    report/inputs.json records what it was written from (:func:`written_alike`).

    Returns:
        ``"<benchmark>/<table>" -> DataFrame``, with ``.scorers`` (key -> scorer names read).

    Raises:
        LcevalError: missing scores or samples; an unknown scorer or one of a benchmark the run
            does not hold; a folder that cannot be written (no space).
    """
    from lceval.report.context import report_context  # pulls pandas
    from lceval.report.cost import report_cost  # pulls pandas
    from lceval.report.index_page import write_index  # pulls pandas
    from lceval.report.reasoning import report_reasoning  # pulls pandas
    from lceval.report.results import write_results  # pulls pandas

    run = RunDir(run_id, root)
    digest = _report_inputs(run, scorer)  # before reading: a later change makes it stale
    scores = run.read_scores()
    samples = load_samples(run)
    keys = sorted({s.benchmark for s in samples})
    if scorer is not None:
        registry.find_scorer(scorer, keys)
    tables = ReportTables()
    tables.scorers = {}
    with run.staged_report() as staged:  # swapped in whole, or not at all
        for key in keys:
            bench = registry.get(key)
            mine = scorer_of(key, scorer)
            bench_scores, tables.scorers[key] = bench.scores_for(scores, mine, report=mine is None)
            if len(bench_scores) and bench_scores["value"].isna().all():
                log(f"{key}: every answer errored or has no score ({len(bench_scores)} rows)")
            where = staged
            if mine is not None and mine != bench.default_scorer:
                where = staged.with_report(staged.report / mine.replace(":", "-"))
            out = bench.report(where, bench_scores, [s for s in samples if s.benchmark == key])
            tables.update({f"{key}/{k}": v for k, v in out.items()})
        for name, extra in (
            ("reasoning", report_reasoning(staged, scores)),
            ("context", report_context(staged, scores)),
            ("cost", report_cost(staged)),
        ):
            tables.update({f"{name}/{k}": v for k, v in extra.items()})
        write_run_pages(staged)
        write_results(staged)
        write_index(staged)
        stamp = {"inputs": digest, "tables": list(tables), "scorers": tables.scorers}
        with atomic_open(staged.report / REPORT_STAMP) as f:
            json.dump(stamp, f, default=list)
    return tables


def report_sweep(sweep: Any, *, n_resamples: int = 2000, seed: int = 0) -> Any:
    """A study's own report (``sweep.report(...)``: L-Eval's NTK base sweep writes its tables and
    figure), then its run folder's ``report/index.html``; :class:`LcevalError` as the study's."""
    from lceval.report.index_page import write_index  # pulls pandas

    out = sweep.report(n_resamples=n_resamples, seed=seed)
    write_index(sweep.run)
    return out
