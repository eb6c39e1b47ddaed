"""RULER (Hsieh et al., 2024): 13 synthetic tasks at any length; per-task and average scores.

Files: ``variants.yaml`` (the 13 tasks as data), ``gold.py``, ``build.py`` (the family builders),
``score.py`` (string-match metrics), ``report.py``, ``resources/`` (the README leaderboard).
"""

from lceval.benchmarks.base import Benchmark, ContextModes, ScorerSpec, lazy
from lceval.benchmarks.ruler.gold import GOLD, TASKS

BENCHMARK = Benchmark(
    key="ruler",
    title="RULER: what's the real context size of your long-context LMs? (Hsieh et al., 2024)",
    tasks=TASKS,
    build=lazy("lceval.benchmarks.ruler.build:build_ruler"),
    selects=True,  # --limit: only the drawn samples' haystacks are generated
    params="lceval.benchmarks.ruler.build:Config",
    gold=GOLD,
    scorers={
        "ruler": ScorerSpec(
            name="ruler",
            version="1",
            description="string_match_all / string_match_part as the official RULER eval",
            metrics=("score per task", "average", "effective length"),
            score=lazy("lceval.benchmarks.ruler.score:score_ruler"),
        ),
    },
    report=lazy("lceval.benchmarks.ruler.report:report_ruler"),
    headline=lazy("lceval.benchmarks.ruler.report:headline"),
    notebooks=("07_ruler.ipynb",),
    context=ContextModes(
        how="none: the task template's instruction and question alone (closed-book); "
        "bm25/dense: the haystack's chunks nearest the question in place of the haystack",
        refused_tasks={
            "none": {
                **{
                    t: "a needle search: the needle's value is only in the haystack"
                    for t in TASKS
                    if t.startswith("niah")
                },
                "vt": "the variable chain to follow is only in the context",
                "cwe": "the words to count are only in the context",
                "fwe": "the coded words to count are only in the context",
            },
            **{
                kind: {
                    "cwe": "counting words over the whole context: a retrieved slice cannot",
                    "fwe": "counting words over the whole context: a retrieved slice cannot",
                }
                for kind in ("bm25", "dense")
            },
        },
    ),
    functions={
        "tables": lazy("lceval.benchmarks.ruler.report:ruler_tables"),
        "leaderboard": lazy("lceval.benchmarks.ruler.published:leaderboard"),
        "with_published": lazy("lceval.benchmarks.ruler.published:with_published"),
    },
)
