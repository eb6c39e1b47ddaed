"""L-Eval (An et al., ACL 2024): 20 long-document tasks; exam accuracy, n-gram metrics with
length-instruction-enhanced (LIE) prompts, a pairwise LLM judge, retrieval baselines.

Files: ``gold.py`` (task codes, answer keys), ``data.py`` (official JSONL / hub loading, demo
files), ``prompts.py`` (the official prompt wording), ``build.py``, ``retrieval.py`` (BM25 and
dense chunk retrieval), ``score.py`` (official exam rules, ROUGE, F1), ``judge.py`` (pairwise
LLM judge), ``importer.py`` (official prediction files <-> run folders), ``report.py``,
``resources/`` (published numbers), ``arithmetic.py`` (the offline GSM stand-in: seeded
arithmetic problems in the gsm100 format). The NTK base sweep (notebook 09) is a cross-paper
study, :mod:`lceval.benchmarks.leval.ntk`.
"""

from pydantic import Field

from lceval.benchmarks.base import ContextModes, ScorerSpec, lazy
from lceval.benchmarks.leval.gold import GOLD, TASKS
from lceval.benchmarks.leval.helpers import LEvalBenchmark
from lceval.models.judge import JudgeModel


class PairwiseJudgeOptions(JudgeModel):
    """Options of scorer ``leval:judge``: the judge model and the baseline it compares with."""

    max_new_tokens: int = Field(
        2048, ge=1, description="judge answer budget in tokens (2048, as official)"
    )
    batch_size: int = Field(16, ge=1, description="judge prompts per engine call")
    baseline: str | None = Field(
        None,
        min_length=1,
        description="official prediction file(s) of the baseline (file or folder), model:NAME "
        "(a model of this run), run:RUN_ID[/MODEL] (another run, e.g. an lceval import leval "
        "run); null: this run's only model, no-LIE answers",
    )


GAMES_FILE = "leval_games.parquet"
"""Per-game verdicts of the pairwise judge (two rows per judged response), from
Judgement.details."""

BENCHMARK = LEvalBenchmark(
    key="leval",
    title="L-Eval: standardized evaluation for long context language models (An et al., ACL 2024)",
    tasks=TASKS,
    build=lazy("lceval.benchmarks.leval.build:build_leval"),
    params="lceval.benchmarks.leval.build:Config",
    user_data="the L-Eval data folder, LEval-data (data_path)",
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
            plan_cost=lazy("lceval.benchmarks.leval.judge:plan_cost"),
            option_type=PairwiseJudgeOptions,
        ),
    },
    report=lazy("lceval.benchmarks.leval.report:report_leval"),
    headline=lazy("lceval.benchmarks.leval.report:headline"),
    importers={"official": lazy("lceval.benchmarks.leval.importer:import_predictions")},
    report_scorers=("leval", "leval:judge"),
    notebooks=("08_leval.ipynb", "09_ntk_base_sweep.ipynb"),
    details_file=GAMES_FILE,
    context=ContextModes(
        how="none: the task's prompt and question without the document (has the model seen the "
        "answers?); bm25/dense: the document's chunks nearest the question (the build param "
        "retrieval makes the paper's own baselines as samples, with its 3,072-token window)",
    ),
    helpers={"data": "lceval.benchmarks.leval.data", "ntk": "lceval.benchmarks.leval.ntk"},
    studies={"ntk": "lceval.benchmarks.leval.ntk"},
)
