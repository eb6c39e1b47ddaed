"""L-Eval (An et al., ACL 2024): 20 long-document tasks; exam accuracy, n-gram metrics with
length-instruction-enhanced (LIE) prompts, a pairwise LLM judge, retrieval baselines.

Files: ``gold.py`` (task codes, answer keys), ``data.py`` (official JSONL / hub loading, demo
files), ``prompts.py`` (the official prompt wording), ``build.py``, ``retrieval.py`` (BM25 and
dense chunk retrieval), ``score.py`` (official exam rules, ROUGE, F1), ``judge.py`` (pairwise
LLM judge), ``importer.py`` (official prediction files <-> run folders), ``report.py``,
``resources/`` (published numbers), ``arithmetic.py`` (the offline GSM stand-in: seeded
arithmetic problems in the gsm100 format). The NTK base sweep (notebook 09) is a cross-paper
study, :mod:`lceval.studies.ntk`.
"""

from lceval.benchmark import Benchmark, ScorerSpec, Testing, lazy
from lceval.benchmarks.leval.gold import GOLD, TASKS

GAMES_FILE = "leval_games.parquet"
"""Per-game verdicts of the pairwise judge (two rows per judged response), from
Judgement.details."""

BENCHMARK = Benchmark(
    key="leval",
    title="L-Eval: standardized evaluation for long context language models (An et al., ACL 2024)",
    tasks=TASKS,
    build=lazy("lceval.benchmarks.leval.build:build_leval"),
    params="lceval.benchmarks.leval.build:Config",
    gold=GOLD,
    scorers={
        "leval": ScorerSpec(
            name="leval",
            version="1",
            description="official exam rules (auto_eval.py, em.py) and ROUGE-1/2/L, F1",
            metrics=("exact match", "ROUGE-L", "L-Eval ROUGE (geo. mean)", "F1", "delta L"),
            score=lazy("lceval.benchmarks.leval.score:score_leval"),
        ),
        "leval:judge": ScorerSpec(
            name="leval:judge",
            version="1",
            description="pairwise LLM judge vs a baseline's predictions (llm_eval.py, both orders)",
            metrics=("win rate", "n_wins", "n_draws"),
            batch=lazy("lceval.benchmarks.leval.judge:pairwise_judge"),
            options={
                "baseline": "official prediction file(s) of the baseline (file or folder), "
                "model:NAME (a model of this run), run:RUN_ID[/MODEL] (another run, e.g. an "
                "lceval import leval run); default: this run's only model, no-LIE answers",
                "backend": "judge backend: hf, vllm or openai (default hf)",
                "model": "judge model path or hub id (default: the embedded SmolLM2)",
                "backend_options": "mapping of backend options, e.g. {device: cuda}",
                "max_new_tokens": "judge answer budget in tokens (default 2048, as official)",
                "batch_size": "judge prompts per engine call (default 16)",
            },
        ),
    },
    report=lazy("lceval.benchmarks.leval.report:report_leval"),
    headline=lazy("lceval.benchmarks.leval.report:headline"),
    importers={"official": lazy("lceval.benchmarks.leval.importer:import_predictions")},
    report_scorers=("leval", "leval:judge"),
    notebooks=("08_leval.ipynb", "09_ntk_base_sweep.ipynb"),
    details_file=GAMES_FILE,
    testing=Testing(
        small=lambda p: {
            "limit_docs": 1,
            # the dense retriever loads a model (tests/benchmarks/leval covers it, marked slow)
            "retrieval": [r for r in p["retrieval"] if r != "dense"],
        },
        pipeline="leval",
        full_runs=("leval-full",),
        paper="L-Eval",
        items=(
            "Closed-ended table",
            "Open-ended table",
            "Human evaluation table",
            "LIE Kendall-tau table",
            "LIE NQ example",
            "Retrieval vs full-context",
            "NTK base sweep",
        ),
    ),
)
