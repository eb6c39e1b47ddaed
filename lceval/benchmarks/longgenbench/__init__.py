"""LongGenBench (Wu et al., ICLR 2025): long outputs under periodic instructions; CR, STIC-1,
STIC-2, wAvg; and its correlation with RULER (Fig. 3b).

Files: ``gold.py``, ``build.py``, ``prompts.py`` (the two prompt formats of Appendix G),
``score.py`` (parsing, offline and LLM judges), ``report.py`` (Table 3, Figs. 2-3), ``tables.py``
(Table 7, published rows beside the run), ``resources/``. The RULER correlation is a
cross-paper study, :mod:`lceval.studies.ruler_correlation`.
"""

from lceval.benchmark import Benchmark, ScorerSpec, Testing, lazy, numbered
from lceval.benchmarks.longgenbench.gold import GOLD, TASKS

CHECKS_FILE = "longgenbench_checks.parquet"
"""Per-check verdicts (one row per check), written by the pipeline from Judgement.details."""

BENCHMARK = Benchmark(
    key="longgenbench",
    title="LongGenBench: long-context generation benchmark (Wu et al., ICLR 2025)",
    tasks=TASKS,
    build=lazy("lceval.benchmarks.longgenbench.build:build_longgenbench"),
    params="lceval.benchmarks.longgenbench.build:Config",
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
            options={
                "backend": "judge backend: hf, vllm or openai (default hf)",
                "model": "judge model path or hub id (default: the embedded SmolLM2)",
                "few_shot": "use the Appendix C few-shot prompt (default false)",
                "batch_size": "judge prompts per engine call (default 64)",
                "second_judge": "also run the offline judge and report agreement (default true)",
                "max_new_tokens": "verdict budget in tokens (default 8; 160 few-shot)",
                "backend_options": "mapping of backend options, e.g. {device: cuda}; "
                "{prompt_format: plain} sends the raw prompt, as the official eval.py",
            },
        ),
    },
    report=lazy("lceval.benchmarks.longgenbench.report:report_longgenbench"),
    headline=lazy("lceval.benchmarks.longgenbench.report:headline"),
    notebooks=("05_ruler_correlation.ipynb", "06_longgenbench.ipynb"),
    details_file=CHECKS_FILE,
    testing=Testing(
        small=lambda p: {"n_per_scenario": 1},
        pipeline="longgenbench_ruler",
        full_runs=("longgenbench-full",),
        paper="LongGenBench",
        items=numbered(7, 2, "Fig. 3a", "Fig. 3b"),
    ),
    functions={"summary": lazy("lceval.benchmarks.longgenbench.report:load_summary")},
)
