"""The report stage: each benchmark's tables and figures, the per-sample pages, results.json
and report/index.html of a run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lceval import registry
from lceval.benchmark import scorer_of
from lceval.core.io import RunDir
from lceval.run.scoring import load_samples

if TYPE_CHECKING:  # pandas: the reporters import it when they run (import lceval stays free of it)
    import pandas as pd

    from lceval.benchmarks.leval.ntk import Sweep, SweepReport


class ReportTables(dict[str, "pd.DataFrame"]):
    """The tables of :func:`report`, ``"<benchmark>/<table>" -> DataFrame``, and which scorers
    each benchmark's tables were read from (``scorers``: key -> scorer names)."""

    scorers: dict[str, tuple[str, ...]]


def write_run_pages(run: RunDir) -> list[Path]:
    """The report stage's per-sample pages: ``samples.html`` (:mod:`lceval.report.samples_page`)
    and,
    for a run with two or more models, ``compare.html`` (every pair of its models, or what each
    answered when no pair shares a sample:
    :func:`lceval.report.compare_page.write_run_compare_page`)
    under the run's report folder; nothing when the run has no scores.

    Raises:
        LcevalError: a score of an unknown sample; the folder cannot be written.
    """
    from lceval.report import compare_page, samples_page  # pandas: imported when pages are made

    page_path = samples_page.write_samples_page(run)
    if page_path is None:
        return []
    out = [page_path]
    models = set(run.read_scores()["model"].astype(str))
    if len(models) > 1:
        out.append(compare_page.write_run_compare_page(run))
    return out


def report(
    run_id: str, *, root: str | Path | None = None, scorer: str | None = None
) -> ReportTables:
    """Write each benchmark's tables and figures of the run under report/, samples.html (every
    answer, :mod:`lceval.report.samples_page`; compare.html with two or more models), results.json
    (:mod:`lceval.report.results`) and report/index.html (provenance, every table and figure, the
    executed notebooks, links to the pages); returns the tables.

    scores.parquet keeps every scorer's rows; each benchmark's reporter reads its default
    scorer's (``Benchmark.scores_for``; L-Eval both of its ``report_scorers``). With ``scorer``
    (``lifbench:strict``), its benchmark is reported from that scorer's rows instead, written
    under ``report/<scorer>/`` (``:`` written ``-``) so the default's files stay.

    The report is written to a temporary folder and renamed into place when complete
    (:meth:`lceval.core.io.RunDir.staged_report`): a failed report leaves the last good one as it
    was.

    Returns:
        ``"<benchmark>/<table>" -> DataFrame``, with ``.scorers``: benchmark key -> the scorer
        names its tables were read from.

    Raises:
        LcevalError: missing scores or samples; an unknown scorer or one of a benchmark the run
            does not hold; a folder that cannot be written (no space).
    """
    run = RunDir(run_id, root)
    scores = run.read_scores()
    samples = load_samples(run)
    keys = sorted({s.benchmark for s in samples})
    if scorer is not None:
        registry.find_scorer(scorer, keys)
    tables = ReportTables()
    tables.scorers = {}
    from lceval.report.index_page import write_index  # matplotlib: imported only when reporting

    with run.staged_report() as staged:  # swapped in whole, or not at all
        for key in keys:
            bench = registry.get(key)
            mine = scorer_of(key, scorer)
            bench_scores, names = bench.scores_for(scores, mine, report=mine is None)
            bench_samples = [s for s in samples if s.benchmark == key]
            where = staged
            if mine is not None and mine != bench.default_scorer:
                where = staged.with_report(staged.report / mine.replace(":", "-"))
            out = bench.report(where, bench_scores, bench_samples)
            tables.update({f"{key}/{k}": v for k, v in out.items()})
            tables.scorers[key] = names
        from lceval.report.reasoning import (
            report_reasoning,  # thinking tokens, when the run has any
        )

        tables.update({f"reasoning/{k}": v for k, v in report_reasoning(staged, scores).items()})
        from lceval.report.context import report_context  # with and without the context

        tables.update({f"context/{k}": v for k, v in report_context(staged, scores).items()})
        from lceval.report.cost import report_cost  # the API answers' reported tokens, priced

        tables.update({f"cost/{k}": v for k, v in report_cost(staged).items()})
        write_run_pages(staged)
        from lceval.report.results import write_results  # pandas

        write_results(staged)
        write_index(staged)
    return tables


def report_sweep(sweep: Sweep, *, n_resamples: int = 2000, seed: int = 0) -> SweepReport:
    """The report stage of L-Eval's NTK base sweep: the study's table, trend, verdict and figure
    (:func:`lceval.benchmarks.leval.ntk.report_sweep`), then the sweep folder's
    ``report/index.html`` (every table and figure with its caption, run.json's provenance).

    Raises:
        LcevalError: a point's run has no scores.
    """
    from lceval.benchmarks.leval import ntk  # pandas
    from lceval.report.index_page import write_index

    out = ntk.report_sweep(sweep, n_resamples=n_resamples, seed=seed)
    write_index(sweep.run)
    return out
