"""LIFBench / LIFEval (Wu et al., 2024): List, MultiDoc and OneDoc tasks at 4k-128k; ARS, IFP, IFS.

Files: ``gold.py`` (answer keys per task), ``build.py`` (+ ``inputs.py``, ``expressions.py``),
``score.py`` (the 11 rubric scorers), ``tables.py`` (ARS, IFP, IFS as tidy tables),
``published.py`` (the paper's and the official numbers, and the checks against them), ``report.py``
(Tables 3-4, Fig. 2 as files), ``resources/``.
"""

from lceval.benchmarks.base import ContextModes, ScorerSpec, lazy
from lceval.benchmarks.lifbench.gold import GOLD, TASKS
from lceval.benchmarks.lifbench.helpers import LIFBenchmark

BENCHMARK = LIFBenchmark(
    key="lifbench",
    title="LIFBench: instruction following over long contexts (Wu et al., 2024)",
    tasks=TASKS,
    build=lazy("lceval.benchmarks.lifbench.build:build_lifbench"),
    selects=True,  # --limit: only the contexts the drawn samples read are made
    params="lceval.benchmarks.lifbench.build:Config",
    gold=GOLD,
    scorers={
        "lifbench": ScorerSpec(
            name="lifbench",
            version="1",
            description="LIFEval rubric items and points as the official code scores them (ARS)",
            metrics=("ARS", "IFP", "IFS"),
            score=lazy("lceval.benchmarks.lifbench.score:score_lifbench"),
        ),
        "lifbench:strict": ScorerSpec(
            name="lifbench:strict",
            version="1",
            description="the same rubrics with the official code's quirks fixed (see score.py)",
            metrics=("ARS", "IFP", "IFS"),
            score=lazy("lceval.benchmarks.lifbench.score:score_lifbench_strict"),
        ),
    },
    report=lazy("lceval.benchmarks.lifbench.report:report_lifbench"),
    headline=lazy("lceval.benchmarks.lifbench.tables:headline"),
    notebooks=("01_build_data.ipynb", "02_inference.ipynb", "03_ars_ifs_scoring.ipynb"),
    context=ContextModes(
        how="none: the scenario description and the instruction alone; bm25/dense: the chunks of "
        "the list or documents nearest the instruction in place of the whole input",
    ),
    functions={"summary_tables": lazy("lceval.benchmarks.lifbench.build:summary_tables")},
    helpers={"report": "lceval.benchmarks.lifbench.report"},
)
