"""``lceval compare``: one run's models ranked (a leaderboard), or two runs (or two models of one
run) compared paired, with CIs and Holm-adjusted p-values (:mod:`lceval.report.compare`);
results.json files give the leaderboard from headlines alone (:mod:`lceval.report.results`)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from lceval.benchmarks import registry
from lceval.cli.common import out_path, write_csv
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.report import compare
from lceval.run.config import CompareCall, CompareConfig


def handle(cfg: CompareConfig, outputs: str | None) -> int:
    """Print what differs between the compared runs beside the models, then the table;
    ``--samples`` writes the paired samples page
    (:func:`lceval.report.compare_page.compare_rows`, contexts/ beside it), ``--csv`` the table.

    Raises:
        LcevalError: see :func:`table`; a ``--csv`` that cannot be written.
    """
    from lceval.report import compare_page  # pulls pandas, pyarrow, jinja2

    result = table(cfg, outputs)
    if "model_a" in result:  # a paired comparison: what else differs between the runs
        for line in compare.setting_differences(result, outputs):
            print(textwrap.fill(f"note: {line}", 160, subsequent_indent="  "))
    print(compare.fit_width(result, 160))
    if cfg.samples:
        page = Path(cfg.samples)
        run_a, run_b = RunDir(cfg.run_ids[0], outputs), RunDir(cfg.run_ids[-1], outputs)
        frame = compare_page.compare_rows(
            run_a,
            run_b,
            model_a=cfg.model_a,
            model_b=cfg.model_b,
            scorer=cfg.scorer,
            folder=page.parent,
        )
        title = f"{run_a.run_id} vs {run_b.run_id}"
        print(f"wrote {compare_page.write_compare_page(frame, page, title)}")
    if cfg.csv:
        print(f"wrote {write_csv(result, Path(cfg.csv))}")
    return 0


def table(cfg: CompareConfig, outputs: str | None) -> Any:
    """:func:`lceval.report.compare.leaderboard` for one run, three or more, or on request;
    :func:`lceval.report.results.leaderboard` where results.json files are given (the only table
    they give); else :func:`lceval.report.compare.paired`
    (:attr:`~lceval.run.config.CompareConfig.ranked`; CompareConfig refuses the flags of a paired
    comparison with a leaderboard).

    Raises:
        LcevalError: a bad ``--csv`` or ``--samples`` file name, a run given twice or without
            scores, an unknown benchmark or model, nothing in common; a results file that does
            not validate, or where a paired comparison (it needs scores.parquet) is asked for.
    """
    from lceval.report import results  # pulls pandas, pyarrow

    if cfg.csv:
        out_path(cfg.csv)
    if cfg.samples:
        out_path(cfg.samples, "--samples", ".html")
    files = [a for a in cfg.run_ids if results.is_results_source(a)]
    if files and not cfg.ranked:
        raise LcevalError(
            f"{files[0]} is a results file: it holds headline numbers only; a paired comparison "
            "needs each run's scores.parquet (give run ids), or add --leaderboard"
        )
    if files:  # run ids beside them: their results computed
        if cfg.scorer is not None:
            registry.find_scorer(cfg.scorer)
        docs = [
            results.load_results(a)
            if results.is_results_source(a)
            else results.results_document(RunDir(a, outputs), seed=cfg.seed)
            for a in cfg.run_ids
        ]
        return results.leaderboard(docs, benchmark=cfg.benchmark, scorer=cfg.scorer)
    if cfg.ranked:
        benchmarks = [cfg.benchmark] if cfg.benchmark else None
        heads = compare.load_headlines(
            cfg.run_ids, benchmarks=benchmarks, root=outputs, scorer=cfg.scorer
        )
        return compare.leaderboard(heads, seed=cfg.seed)
    # the flags' config, validated, with --outputs (the resampling at its declared defaults)
    return compare.paired(CompareCall.model_construct(**dict(cfg), root=outputs))
