"""``lceval compare``: one run's models ranked (a leaderboard), or two runs (or two models of one
run) compared paired, with CIs and Holm-adjusted p-values (:mod:`lceval.report.compare`);
results.json files give the leaderboard from headlines alone (:mod:`lceval.report.results`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lceval.benchmarks import registry
from lceval.cli.common import out_path, write_csv
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.run.config import CompareConfig


def handle(cfg: CompareConfig, outputs: str | None) -> int:
    """Print what differs between the compared runs beside the models, then the table;
    ``--samples`` writes the paired samples page, ``--csv`` the table.

    Raises:
        LcevalError: see :func:`table`; a ``--csv`` that cannot be written.
    """
    from lceval.report import compare  # pandas, pyarrow

    result = table(cfg, outputs)
    if "model_a" in result:  # a paired comparison: what else differs between the runs
        import textwrap

        for line in compare.setting_differences(result, outputs):
            print(textwrap.fill(f"note: {line}", 160, subsequent_indent="  "))
    print(compare.fit_width(result, 160))
    if cfg.samples:
        print(f"wrote {compare_page(cfg, outputs, Path(cfg.samples))}")
    if cfg.csv:
        print(f"wrote {write_csv(result, Path(cfg.csv))}")
    return 0


def table(cfg: CompareConfig, outputs: str | None) -> Any:
    """:func:`lceval.report.compare.leaderboard` for one run, three or more, or on request (the
    only table results.json files give); else :func:`lceval.report.compare.compare_runs` paired.
    The flags are checked before any run is read.

    Raises:
        LcevalError: a bad ``--csv`` or ``--samples``, a run given twice, a run without scores,
            an unknown benchmark or model, nothing in common to compare; a results file where a
            paired comparison is asked for (it needs scores.parquet), or one that does not
            validate.
    """
    from lceval.report import compare, results  # pandas, pyarrow

    if cfg.csv:
        out_path(cfg.csv)
    if cfg.samples:
        out_path(cfg.samples, "--samples", ".html")
    one_run = len(cfg.run_ids) == 1 and not (cfg.model_a or cfg.model_b)
    leader = cfg.leaderboard or len(cfg.run_ids) > 2 or one_run
    if leader and (cfg.model_a or cfg.model_b):
        raise LcevalError("--model-a/--model-b are for a paired comparison, not --leaderboard")
    if leader and cfg.samples:
        raise LcevalError("--samples is for a paired comparison of two runs, not --leaderboard")
    files = [a for a in cfg.run_ids if results.is_results_source(a)]
    if files and not leader:
        raise LcevalError(
            f"{files[0]} is a results file: it holds headline numbers only; a paired comparison "
            "needs each run's scores.parquet (give run ids), or add --leaderboard"
        )
    if files:
        return files_leaderboard(cfg, outputs)
    if leader:
        benchmarks = [cfg.benchmark] if cfg.benchmark else None
        heads = compare.load_headlines(
            cfg.run_ids, benchmarks=benchmarks, root=outputs, scorer=cfg.scorer
        )
        return compare.leaderboard(heads, seed=cfg.seed)
    run_a, run_b = cfg.run_ids[0], cfg.run_ids[-1]
    return compare.compare_runs(
        run_a,
        run_b,
        benchmark=cfg.benchmark,
        model_a=cfg.model_a,
        model_b=cfg.model_b,
        root=outputs,
        by_task=not cfg.no_tasks,
        alpha=cfg.alpha,
        seed=cfg.seed,
        scorer=cfg.scorer,
    )


def files_leaderboard(cfg: CompareConfig, outputs: str | None) -> Any:
    """The leaderboard from results.json files (and run ids, their results computed)."""
    from lceval.report import results  # pandas

    if cfg.scorer is not None:
        registry.find_scorer(cfg.scorer)
    docs = [
        results.load_results(a)
        if results.is_results_source(a)
        else results.results_document(RunDir(a, outputs), seed=cfg.seed)
        for a in cfg.run_ids
    ]
    return results.leaderboard(docs, benchmark=cfg.benchmark, scorer=cfg.scorer)


def compare_page(cfg: CompareConfig, outputs: str | None, page: Path) -> Path:
    """``--samples FILE.html`` (``page``): the two runs' models side by side
    (:func:`lceval.report.compare_page.compare_rows`), with contexts/ beside it."""
    from lceval.report import compare_page as page_module  # pandas, jinja2

    run_a = RunDir(cfg.run_ids[0], outputs)
    run_b = RunDir(cfg.run_ids[-1], outputs)
    frame = page_module.compare_rows(
        run_a,
        run_b,
        model_a=cfg.model_a,
        model_b=cfg.model_b,
        scorer=cfg.scorer,
        folder=page.parent,
    )
    title = f"{run_a.run_id} vs {run_b.run_id}"
    return page_module.write_compare_page(frame, page, title)
