"""ManyIFEval, "Curse of Instructions" (Harada et al.): 1-10 IFEval instructions per prompt,
P(n) vs I(n)^n, and self-refinement.

Files: ``gold.py`` (answer key, Table 4 metadata), ``checkers.py`` (lm-eval's IFEval checkers,
work budget), ``build.py``, ``score.py``, ``report.py`` (Fig. 1/4/6), ``refine.py`` (Sec. 5
self-refinement), ``resources/``.

Scorer version 2: a check over the work budget, a checker that raises and a checker that cannot
be built are undecided (NaN with the reason) instead of "not followed" (version 1).
"""

from lceval.benchmarks.base import ContextModes, ScorerSpec, lazy
from lceval.benchmarks.manyifeval.gold import GOLD, TASKS
from lceval.benchmarks.manyifeval.helpers import ManyIFEvalBenchmark

BENCHMARK = ManyIFEvalBenchmark(
    key="manyifeval",
    title="Curse of Instructions: ManyIFEval (Harada et al., 2025)",
    tasks=TASKS,
    build=lazy("lceval.benchmarks.manyifeval.build:build_manyifeval"),
    params="lceval.benchmarks.manyifeval.build:Config",
    user_data="the official ManyIFEval data file (path)",
    sections=("lceval.benchmarks.manyifeval.build:Refinement",),
    gold=GOLD,
    scorers={
        "manyifeval": ScorerSpec(
            name="manyifeval",
            version="2",
            description="IFEval checkers (lm-eval), strict and loose, per instruction; a check "
            "over the work budget or failing is NaN with its reason",
            metrics=("prompt-level accuracy", "instruction-level accuracy"),
            score=lazy("lceval.benchmarks.manyifeval.score:score_manyifeval"),
        ),
    },
    report=lazy("lceval.benchmarks.manyifeval.report:report_manyifeval"),
    headline=lazy("lceval.benchmarks.manyifeval.report:headline"),
    metrics=lazy("lceval.benchmarks.manyifeval.report:extra_metrics"),
    notebooks=("04_curse_of_instructions.ipynb",),
    strata=("n_instructions",),  # the x-axis of Fig. 1 and 4: --limit spreads over it
    context=ContextModes(
        how="no context: each prompt is a task and its n instructions",
        refused={
            k: "its samples have no context: each prompt is a task and its instructions (Sec. 3.1)"
            for k in ("none", "bm25", "dense")
        },
    ),
    helpers={"refine": "lceval.benchmarks.manyifeval.refine"},
)
