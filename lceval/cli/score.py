"""``lceval score``: :func:`lceval.run.score`, then the mean per model, benchmark and task, the
benchmarks' extra metrics and coverage warnings."""

from __future__ import annotations

import sys
from typing import Any

import lceval.run
from lceval.benchmarks import registry
from lceval.cli.common import next_steps
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.run.config import ScoreConfig


def handle(cfg: ScoreConfig, outputs: str | None) -> int:
    """Score; print the table, the extra metrics, the coverage warnings (stderr) and the next
    step (report).

    Raises:
        LcevalError: an unknown scorer or option, a run without responses.
    """
    df = lceval.run.score(cfg.run_id, root=outputs, scorer=cfg.scorer, options=cfg.scorer_options)
    run = RunDir(cfg.run_id, outputs)
    samples = lceval.run.load_samples(run)
    print_scores(run, samples, df)
    print_extra_metrics(samples, df)
    warn_coverage(run)
    print(next_steps(cfg.run_id, outputs, "report", "tables, figures and report/index.html"))
    return 0


def print_scores(run: RunDir, samples: list[Sample], df: Any) -> None:
    """The mean score per model, benchmark, task (and baseline variant); where the budget ended
    answers, how many (``cut``) and the mean over those that finished (``mean_finished``)."""
    from lceval.report.coverage import run_cut_answers, variant_of, with_finished  # pulls pandas

    cut = run_cut_answers(run)
    table = with_finished(df, cut, {s.id: variant_of(s) for s in samples})
    if not cut or not len(table) or not table["cut"].any():
        print(table["mean"].rename("value").round(3).to_string())
        return
    table = table.assign(cut=[f"{c} of {n}" for c, n in zip(table["cut"], table["n"], strict=True)])
    print(table[["mean", "n", "cut", "mean_finished"]].round(3).to_string())


def print_extra_metrics(samples: list[Sample], df: Any) -> None:
    """Print the numbers benchmarks show beside their headline (``Benchmark.metrics``; ManyIFEval:
    IFEval's four pooled accuracies) after the score table."""
    for bench in [registry.get(k) for k in sorted(set(df["benchmark"].astype(str)))]:
        rows = df[(df["benchmark"] == bench.key) & (df["scorer"] == bench.default_scorer)]
        if bench.metrics is None or not len(rows):
            continue
        table = bench.metrics(rows, [s for s in samples if s.benchmark == bench.key])
        if len(table):
            columns = ["model", "metric", "estimate", "low", "high", "n"]
            print(f"{bench.key}:\n{table[columns].round(4).to_string(index=False)}")


def warn_coverage(run: RunDir) -> None:
    """One stderr line per benchmark and model whose answers the budget cut (over 5%), whose
    samples are not all answered, or whose run is not the paper's grid."""
    from lceval.report.coverage import run_coverage  # pulls pandas

    for c in run_coverage(run):
        if c.cut_flag:
            print(
                f"lceval: warning: {c.benchmark} {c.model}: {c.cut_line()} "
                "(finish_reason=length); their scores rest on unfinished answers "
                "(results.json: coverage cut_at_budget, tasks mean_finished)",
                file=sys.stderr,
            )
        if c.answered < c.built:
            print(
                f"lceval: warning: {c.benchmark} {c.model}: only {c.answered} of {c.built} "
                f"samples answered; its scores cover {len(c.tasks_answered)} of "
                f"{len(c.tasks_built)} tasks (lceval infer {run.run_id} answers the rest)",
                file=sys.stderr,
            )
        if not c.paper_grid:
            print(f"lceval: {c.line()}", file=sys.stderr)
