"""CIF-Bench (Li et al., 2024): Chinese instruction following over 150 tasks and 20 categories,
public and private splits, five instructions per task.

Files: ``gold.py`` (answer key, categories, output types), ``data.py`` (split files, output-type
inference, user metadata, a demo dataset), ``variants.py`` (instruction variants: user-given or
model-proposed), ``build.py``, ``score.py`` (accuracy, F1, similarity), ``judge.py`` (the
model-based evaluator), ``report.py`` (task / overall / category scores, spread across
instructions, the published leaderboards), ``resources/`` (README leaderboards, model-name
matches, categories, task codes; see its README).
"""

from typing import Literal

from pydantic import Field

from lceval.benchmarks.base import ContextModes, ScorerSpec, lazy
from lceval.benchmarks.cifbench.gold import GOLD, OFFICIAL_TASKS
from lceval.benchmarks.cifbench.helpers import CIFBenchmark
from lceval.models.judge import JudgeModel

_RULE_OPTIONS = {
    "similarity": "similarity metric: chrf (offline default), rouge-l, bleurt",
    "bleurt_checkpoint": "local BLEURT checkpoint folder (HF format); then the default metric",
    "creative": "creative tasks: similarity (stand-in, default) or nan",
}


class ModelJudgeOptions(JudgeModel):
    """Options of scorer ``cifbench:judge``: the judge model, the output types it judges, and
    the rule-based scorer's options for the other types."""

    max_new_tokens: int = Field(256, ge=1, description="judgment budget in tokens")
    batch_size: int = Field(8, ge=1, description="judge prompts per engine call")
    types: str = Field(
        "multi-class,multi-label,creative",
        min_length=1,
        description="comma-separated output types the model judges (the paper's three)",
    )
    similarity: str | None = Field(None, description=_RULE_OPTIONS["similarity"])
    bleurt_checkpoint: str | None = Field(None, description=_RULE_OPTIONS["bleurt_checkpoint"])
    creative: Literal["similarity", "nan"] = Field(
        "similarity", description=_RULE_OPTIONS["creative"]
    )


BENCHMARK = CIFBenchmark(
    key="cifbench",
    title="CIF-Bench: a Chinese instruction-following benchmark (Li et al., 2024)",
    tasks=OFFICIAL_TASKS,
    build=lazy("lceval.benchmarks.cifbench.build:build_cifbench"),
    params="lceval.benchmarks.cifbench.build:Config",
    user_data="the CIF-Bench dataset folder and metadata (public_dir, metadata)",
    sections=(
        "lceval.benchmarks.cifbench.variants:Generation",
        "lceval.benchmarks.cifbench.tables:Comparison",
    ),
    gold=GOLD,
    scorers={
        "cifbench": ScorerSpec(
            name="cifbench",
            version="1",
            description="accuracy / F1 with rule-based answer extraction; chrF or BLEURT "
            "similarity (paper Sec. 3.3 without the GPT-4 evaluator)",
            metrics=("accuracy", "F1", "similarity", "overall", "category scores"),
            score=lazy("lceval.benchmarks.cifbench.score:score_cifbench"),
            options=_RULE_OPTIONS,
        ),
        "cifbench:judge": ScorerSpec(
            name="cifbench:judge",
            version="1",
            description="model-based evaluator (any backend) for multi-class, multi-label and "
            "creative tasks as the paper's GPT-4 evaluator; similarity by rules",
            metrics=("model-based evaluator", "similarity", "overall", "category scores"),
            batch=lazy("lceval.benchmarks.cifbench.judge:model_judge"),
            plan_cost=lazy("lceval.benchmarks.cifbench.judge:plan_cost"),
            option_type=ModelJudgeOptions,
        ),
    },
    report=lazy("lceval.benchmarks.cifbench.report:report_cifbench"),
    notebooks=("11_cif_bench.ipynb",),
    details_file="cifbench_judge_details.parquet",
    context=ContextModes(
        how="the context is the instance's input (the text the instruction works on), not a "
        "long document",
        refused={
            "none": "the context is the task's input: without it there is nothing to answer",
            "bm25": "the context is a short task input, not a long document to retrieve from",
            "dense": "the context is a short task input, not a long document to retrieve from",
        },
    ),
    helpers={
        "data": "lceval.benchmarks.cifbench.data",
        "report": "lceval.benchmarks.cifbench.report",
        "tables": "lceval.benchmarks.cifbench.tables",
        "variants": "lceval.benchmarks.cifbench.variants",
    },
)
