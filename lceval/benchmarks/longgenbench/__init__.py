"""LongGenBench (Wu et al., ICLR 2025): long outputs under periodic instructions; CR, STIC-1,
STIC-2, wAvg; and its correlation with RULER (Fig. 3b).

Files: ``gold.py``, ``build.py``, ``prompts.py`` (the two prompt formats of Appendix G),
``score.py`` (parsing, offline and LLM judges), ``report.py`` (Table 3, Figs. 2-3), ``tables.py``
(Table 7, published rows beside the run), ``resources/``. The RULER correlation is a
cross-paper study, :mod:`lceval.benchmarks.longgenbench.ruler_correlation`.
"""

from pydantic import Field

from lceval.benchmarks.base import ContextModes, ScorerSpec, lazy
from lceval.benchmarks.longgenbench.gold import GOLD, TASKS
from lceval.benchmarks.longgenbench.helpers import LongGenBenchmark
from lceval.models.judge import JudgeModel


class LLMJudgeOptions(JudgeModel):
    """Options of scorer ``longgenbench:llm``: the judge model, and how it is asked."""

    max_new_tokens: int | None = Field(
        None, ge=1, description="verdict budget in tokens; null: 8 zero-shot, 160 few-shot"
    )
    batch_size: int = Field(64, ge=1, description="judge prompts per engine call")
    few_shot: bool = Field(False, description="use the Appendix C few-shot prompt")
    second_judge: bool = Field(True, description="also run the offline judge and report agreement")


CHECKS_FILE = "longgenbench_checks.parquet"
"""Per-check verdicts (one row per check), written by the pipeline from Judgement.details."""

BENCHMARK = LongGenBenchmark(
    key="longgenbench",
    title="LongGenBench: long-context generation benchmark (Wu et al., ICLR 2025)",
    tasks=TASKS,
    build=lazy("lceval.benchmarks.longgenbench.build:build_longgenbench"),
    params="lceval.benchmarks.longgenbench.build:Config",
    user_data="optional: the official LongGenBench prompt files (path; else generated)",
    gold=GOLD,
    scorers={
        "longgenbench": ScorerSpec(
            name="longgenbench",
            version="1",
            description="official parsing; offline judge (content-word stem overlap >= 0.75)",
            metrics=("CR", "STIC-1", "STIC-2", "wAvg"),
            score=lazy("lceval.benchmarks.longgenbench.score:score_longgenbench"),
        ),
        "longgenbench:llm": ScorerSpec(
            name="longgenbench:llm",
            version="1",
            description="official parsing; an LLM judges each check with the eval.py prompt "
            "(answers kept in longgenbench_judge.jsonl: resumable)",
            metrics=("CR", "STIC-1", "STIC-2", "wAvg"),
            batch=lazy("lceval.benchmarks.longgenbench.judge:llm_judge"),
            plan_cost=lazy("lceval.benchmarks.longgenbench.judge:plan_cost"),
            option_type=LLMJudgeOptions,
        ),
    },
    report=lazy("lceval.benchmarks.longgenbench.report:report_longgenbench"),
    headline=lazy("lceval.benchmarks.longgenbench.report:headline"),
    notebooks=("05_ruler_correlation.ipynb", "06_longgenbench.ipynb"),
    details_file=CHECKS_FILE,
    context=ContextModes(
        how="no context: the whole prompt is the instruction (long-form generation)",
        refused={
            k: "its samples have no context: the whole prompt is the instruction (Sec. 3)"
            for k in ("none", "bm25", "dense")
        },
    ),
    functions={"summary": lazy("lceval.benchmarks.longgenbench.report:load_summary")},
    helpers={
        "ruler_correlation": "lceval.benchmarks.longgenbench.ruler_correlation",
        "tables": "lceval.benchmarks.longgenbench.tables",
    },
    studies={"correlation": "lceval.benchmarks.longgenbench.ruler_correlation"},
)
