"""L-Eval's pairwise LLM judge (scorer ``leval:judge``): each open-ended answer battles a
baseline's answer to the same question, judged twice with the answers swapped.

Reproduces ``Evaluation/llm_eval.py`` of OpenLMLab/LEval (GPL-3; facts only) and the paper's
"LLM judges in long-context settings":

- The judge sees the question, the human reference and the two answers, never the long document
  (system prompt and template ``pair-v2``, :data:`lceval.benchmarks.leval.prompts.JUDGE_SYSTEM`,
  with the sentence "Additional details or information that are not mentioned in reference answer
  cannot be considered as advantages ...").
- Answers are paired with the baseline's by (query, reference) (official ``construct_pairs``
  keys on ``query + gt``). Game 1 puts the model's answer as A, game 2 as B.
- Verdict: ``[[A]]`` in the judgment -> A; else ``[[B]]`` -> B; else ``[[C]]`` -> tie; else
  error (official ``run_judge_pair``, checked in that order).
- Win rate = (wins + 0.5 x ties) / (wins + ties + losses); errors are dropped (official
  ``calculate_win_rate``). Per response ``Judgement.value`` is that rate over its two games
  (NaN when both games are errors); ``parts`` holds ``wins``, ``ties``, ``losses``, ``errors``;
  the reporter pools the counts over responses as the official script does.

Judge prompts go through :class:`lceval.models.judge.ModelJudge` with a ResponseStore in the run
folder (``leval_judge.jsonl``), so an interrupted judging run resumes and identical prompts are
judged once. Greedy decoding; ``max_new_tokens`` 2048 as the official call (lower it for small
CPU judges). Closed-ended samples and questions without a baseline answer get NaN with the
reason.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lceval.benchmarks.leval import PairwiseJudgeOptions
from lceval.benchmarks.leval.gold import OpenGold
from lceval.benchmarks.leval.importer import export_predictions, read_baseline
from lceval.benchmarks.leval.prompts import JUDGE_SYSTEM, JUDGE_TEMPLATE
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Context, Judgement, Response, Sample
from lceval.core.store import ResponseStore
from lceval.models.base import GenerationConfig
from lceval.models.judge import AsksModel, ModelJudge

if TYPE_CHECKING:
    from lceval.models.base import Backend

JUDGE_FILE = "leval_judge.jsonl"
"""The judge's answers in the run folder (a ResponseStore: judging resumes from it)."""

Verdict = Literal["A", "B", "tie", "error"]
Winner = Literal["model", "baseline", "tie", "error"]


BASELINE_HELP = (
    "the baseline: a path to official *.pred.jsonl files (e.g. Turbo-16k's "
    "Predictions/ngram_eval/turbo-16k-0613), model:NAME (that model's no-LIE answers in this "
    "run), run:RUN_ID or run:RUN_ID/MODEL (another run's answers, e.g. one made by `lceval import "
    "leval`); default: the no-LIE answers of this run's only model"
)


def resolve_baseline(run: RunDir, spec: str | None) -> Path:
    """The official prediction files of a baseline named by ``spec`` (:data:`BASELINE_HELP`).

    A model's or another run's answers are exported (``importer.export_predictions``) to
    ``<run>/baseline/<name>/`` first: full-context answers, the no-LIE ones where the run has
    both, as the official format pairs them.

    Args:
        run: the judged run (another run is looked up beside it, in the same outputs root).
        spec: None, ``model:NAME``, ``run:RUN_ID``, ``run:RUN_ID/MODEL`` or a path.

    Raises:
        LcevalError: an empty name, a run or model without answers, several models and none
            named, a path that does not exist.
    """
    if spec is not None and not spec.startswith(("model:", "run:")):
        return Path(spec).expanduser()
    kind, _, name = (spec or "model:").partition(":")
    if kind == "model":
        source, model = run.run_id, name or None
    else:
        source, _, rest = name.partition("/")
        model = rest or None
    if not source:
        raise LcevalError(f"baseline {spec!r}: name the run, run:RUN_ID or run:RUN_ID/MODEL")
    other = RunDir(source, run.path.parent)
    if not other.samples.exists():
        raise LcevalError(f"baseline {spec!r}: run {source!r} is not in {run.path.parent}")
    lie = False if any(s.meta.get("lie") is False for s in other.read_samples()) else None
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{kind}-{name or 'self'}")
    folder = run.path / "baseline" / slug
    try:
        export_predictions(source, folder, model, root=run.path.parent, lie=lie)
    except LcevalError as exc:
        raise LcevalError(f"baseline {spec or 'of this run'}: {exc}") from None
    return folder


def verdict(judgment: str) -> Verdict:
    """The official verdict of a judgment text: ``[[A]]``, else ``[[B]]``, else ``[[C]]`` (tie),
    else error (``llm_eval.py`` ``run_judge_pair``)."""
    if "[[A]]" in judgment:
        return "A"
    if "[[B]]" in judgment:
        return "B"
    if "[[C]]" in judgment:
        return "tie"
    return "error"


def judge_prompt(question: str, reference: str, answer_a: str, answer_b: str) -> str:
    """The judge's user turn (official ``pair-v2`` template): no long document."""
    return JUDGE_TEMPLATE.format(
        question=question, ref_answer=reference, answer_a=answer_a, answer_b=answer_b
    )


def win_rate(wins: float, ties: float, losses: float) -> float:
    """(wins + 0.5 x ties) / (wins + ties + losses), 0..1; NaN when there is no valid game."""
    total = wins + ties + losses
    return (wins + 0.5 * ties) / total if total else math.nan


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass(frozen=True)
class Pair:
    """One response prepared for judging."""

    sample: Sample
    answer: str
    """The model's answer."""
    baseline: str | None
    """The baseline's answer to the same question, or None (not judged)."""
    reason: str = ""
    """Why the response is not judged (when ``baseline`` is None)."""

    @property
    def n_items(self) -> int:
        """Games to judge: 2, or 0 when not judged."""
        return 2 if self.baseline is not None else 0


@dataclass
class PairwiseJudge(AsksModel):
    """Batch judge of scorer ``leval:judge`` (the pipeline calls ``prepare`` per response,
    ``finish`` per group of about ``batch_items`` games, then ``close``).

    Args:
        load: loads the judge backend; called once, at the first game.
        store: where judgments are appended (``leval_judge.jsonl``; resumable).
        baselines: (query, reference) -> the baseline's answer.
        baseline_name: the baseline model's name (for the details rows).
        max_new_tokens: judgment budget in tokens.
        config: the generation config of the questions (``stop``, ``max_thinking_tokens``,
            ``temperature``, ...: :meth:`lceval.models.judge.JudgeModel.generation`), its
            ``max_new_tokens`` replaced by the budget above.
        batch_size: prompts per ``backend.generate`` call.
        label: the judge's name until the backend is loaded.
        progress: show a progress bar per group.
    """

    load: Callable[[], Backend]
    store: ResponseStore
    baselines: Mapping[tuple[str, str], str]
    baseline_name: str = "baseline"
    max_new_tokens: int = 2048
    config: GenerationConfig = field(default_factory=GenerationConfig)
    batch_size: int = 16
    label: str = "judge"
    progress: bool = False
    batch_items: int = 64
    """Games the pipeline collects before calling ``finish``."""
    asker: ModelJudge = field(init=False, repr=False)
    """Asks the judge model (loads it at the first game, answers through ``store``)."""

    def __post_init__(self) -> None:
        self.asker = ModelJudge(
            self.load,
            self.store,
            self.config.model_copy(update={"max_new_tokens": self.max_new_tokens}),
            batch_size=self.batch_size,
            label=self.label,
            progress=self.progress,
        )

    def prepare(self, sample: Sample, response: Response, context: Context | None) -> Pair:
        """Pair one response with the baseline's answer (no model call)."""
        gold = sample.gold
        text = response.text if isinstance(response.text, str) else str(response.text)
        if not isinstance(gold, OpenGold):
            return Pair(sample, text, None, "closed-ended task: scored by exact match (leval)")
        other = self.baselines.get((gold.query, gold.reference))
        if other is None:
            return Pair(sample, text, None, f"no {self.baseline_name} answer to this question")
        return Pair(sample, text, other)

    def _questions(self, pairs: Sequence[Pair]) -> tuple[dict[str, Sample], list[tuple[str, str]]]:
        questions: dict[str, Sample] = {}
        ids = []
        for p in pairs:
            if p.baseline is None:
                continue
            gold = p.sample.gold
            assert isinstance(gold, OpenGold)
            games = []
            for a, b in ((p.answer, p.baseline), (p.baseline, p.answer)):
                prompt = judge_prompt(gold.query, gold.reference, a, b)
                qid = f"leval-judge/{_digest(JUDGE_SYSTEM + prompt)}"
                games.append(qid)
                questions.setdefault(
                    qid,
                    Sample(
                        id=qid,
                        benchmark="leval",
                        task="judge",
                        instruction=prompt,
                        system=JUDGE_SYSTEM,
                        max_new_tokens=self.max_new_tokens,
                    ),
                )
            ids.append((games[0], games[1]))
        return questions, ids

    def finish(self, prepared: Sequence[Pair]) -> list[Judgement]:
        """Judge both games of every prepared pair; one Judgement each, in order."""
        questions, ids = self._questions(prepared)
        answers = self.asker.ask(list(questions.values()), "judge leval")
        out = []
        games = iter(ids)
        for p in prepared:
            if p.baseline is None:
                out.append(Judgement(value=math.nan, explanation=p.reason))
                continue
            g1, g2 = next(games)
            out.append(self._judgement(p, answers.get(g1), answers.get(g2), (g1, g2)))
        return out

    def _judgement(
        self, pair: Pair, r1: Response | None, r2: Response | None, qids: tuple[str, str]
    ) -> Judgement:
        winners: list[Winner] = []
        rows = []
        for game, (r, as_a) in enumerate(((r1, "model"), (r2, "baseline")), 1):
            v: Verdict = "error" if r is None or r.finish_reason == "error" else verdict(r.text)
            w: Winner
            if v == "A":
                w = "model" if as_a == "model" else "baseline"
            elif v == "B":
                w = "baseline" if as_a == "model" else "model"
            else:
                w = v
            winners.append(w)
            rows.append(
                {
                    "game": game,
                    "winner": w,
                    "judge": self.name,
                    "baseline": self.baseline_name,
                    "judge_sample_id": qids[game - 1],
                }
            )
        wins = float(winners.count("model"))
        ties = float(winners.count("tie"))
        losses = float(winners.count("baseline"))
        errors = float(winners.count("error"))
        gold = pair.sample.gold
        assert isinstance(gold, OpenGold)
        value = win_rate(wins, ties, losses)
        return Judgement(
            value=value,
            parts={
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "errors": errors,
                "words": float(len(pair.answer.split())),
                "reference_words": float(gold.reference_words),
            },
            points={"wins": 2.0, "ties": 2.0, "losses": 2.0, "errors": 2.0},
            explanation=(
                f"vs {self.baseline_name}: {winners[0]} (model as A), {winners[1]} (model as B)"
                + ("; no valid verdict" if math.isnan(value) else "")
            ),
            details=tuple(rows),
        )


_SCORER = "leval:judge"


def pairwise_judge(run: RunDir, **options: Any) -> PairwiseJudge:
    """The batch judge of scorer ``leval:judge`` (nothing loads until the first game).

    Args:
        run: the run folder; judgments go to ``<run>/leval_judge.jsonl`` (resumable).
        **options: :class:`lceval.benchmarks.leval.PairwiseJudgeOptions`: the shared
            :class:`lceval.models.judge.JudgeModel` (``backend``, ``model``: None for the embedded
            SmolLM2, the paper used GPT-4 and GPT-3.5; ``backend_options``; ``max_new_tokens``,
            official 2048; ``batch_size``, 16) and ``baseline`` (:func:`resolve_baseline`:
            official prediction files, e.g. Turbo-16k's ``Predictions/ngram_eval/turbo-16k-0613``,
            ``model:NAME``, ``run:RUN_ID[/MODEL]``; None: the no-LIE answers of this run's only
            model).

    Raises:
        LcevalError: an unknown option, a value of the wrong type or out of range, an unknown
            backend or backend option, a baseline that cannot be found or read, or a judge store
            that does not parse.
    """
    opts = PairwiseJudgeOptions.parse(_SCORER, options)
    load = opts.loader()
    answers, name, _ = read_baseline(resolve_baseline(run, opts.baseline))
    store = ResponseStore(run.path / JUDGE_FILE)
    return PairwiseJudge(
        load,
        store,
        answers,
        baseline_name=name,
        max_new_tokens=opts.max_new_tokens,
        config=opts.generation(),
        batch_size=opts.batch_size,
        label=opts.label,
    )


def plan_cost(opts: Any) -> tuple[str, int, int, int]:
    """The judge prompt ``lceval plan`` counts (``ScorerSpec.plan_cost``):
    two orders per answer, each quoting both answers."""
    return JUDGE_SYSTEM + JUDGE_TEMPLATE, 2, 2, opts.max_new_tokens
