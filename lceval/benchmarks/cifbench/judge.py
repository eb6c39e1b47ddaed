"""CIF-Bench's model-based evaluator (scorer ``cifbench:judge``): any lceval backend as the judge.

The paper (Sec. 3.3, Fig. 3) prompts GPT-4 "to assess the outputs according to the given task
instruction and the input-output reference" for multi-class, multi-label and creative tasks,
reporting creativity, fluency, instruction following and the evaluator's confidence for creative
outputs; similarity tasks use BLEURT. The official prompts are not released (Fig. 3 is an image
of one example), so :data:`JUDGE_TEMPLATE` is lceval's: the task instruction, the input, the
reference output and the model output, the criteria of the task's output type, and a last line
``分数：X`` with X in 0..10. The value is X / 10 (the last such line; else the last ``X/10``);
no score is NaN with the reason. For creative tasks the sub-scores (创造性, 流畅性, 指令遵循,
置信度) are kept in ``parts`` when the judge writes them.

Tasks whose type is not in ``types`` are scored by the rule-based scorer
(:func:`lceval.benchmarks.cifbench.score.score_cifbench`, with the same similarity options).
Judge prompts go through :class:`lceval.models.judge.ModelJudge` with a ResponseStore in the run
folder (``cifbench_judge.jsonl``): judging resumes after an interruption, and identical prompts
are judged once. Greedy decoding.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lceval.benchmarks.cifbench import ModelJudgeOptions
from lceval.benchmarks.cifbench.gold import OUTPUT_TYPES, CifGold
from lceval.benchmarks.cifbench.score import clean_text, score_cifbench
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Judgement, Response, Sample
from lceval.core.store import ResponseStore
from lceval.models import judge as asking
from lceval.models.base import GenerationConfig

if TYPE_CHECKING:
    from lceval.core.io import RunDir
    from lceval.models.base import Backend

JUDGE_FILE = "cifbench_judge.jsonl"
"""The judge's answers in the run folder (a ResponseStore: judging resumes from it)."""

PAPER_TYPES = ("multi-class", "multi-label", "creative")
"""The output types the paper's GPT-4 evaluator judged (Sec. 3.3)."""

JUDGE_TEMPLATE = """你是一名严格、公正的评估员。请根据任务指令、输入和参考输出，评估模型输出的质量。

【任务指令】
{instruction}

【输入】
{input}

【参考输出】
{reference}

【模型输出】
{output}

{criteria}
最后一行只写“分数：X”，X 为 0 到 10 之间的整数。"""
"""lceval's judge prompt (Chinese, as the tasks); ``{criteria}`` is :data:`CRITERIA` of the
task's output type."""

CRITERIA: Mapping[str, str] = {
    "multi-class": (
        "这是一个单选分类任务。模型输出给出的类别与参考输出一致得 10 分；"
        "不一致或没有给出明确类别得 0 分。请先用一句话说明理由。"
    ),
    "multi-label": (
        "这是一个多标签分类任务。按模型输出的标签与参考输出标签的重合程度打分："
        "完全一致得 10 分，部分重合按比例给分，没有重合得 0 分。请先用一句话说明理由。"
    ),
    "creative": (
        "这是一个创意生成任务，没有唯一的标准答案，参考输出仅供参考。"
        "请分别给出创造性、流畅性、指令遵循程度（各 0 到 10 分）和你对评分的置信度（0 到 10），"
        "格式为：\n创造性：X\n流畅性：X\n指令遵循：X\n置信度：X\n然后给出总分。"
    ),
    "similarity": (
        "请按模型输出与参考输出在语义上的一致程度打分：意思完全相同得 10 分，完全无关得 0 分。"
        "请先用一句话说明理由。"
    ),
}
"""Criteria per output type (the paper's: correctness for classification; creativity, fluency,
instruction following and confidence for creative generation)."""

SUB_SCORES = {
    "创造性": "creativity",
    "流畅性": "fluency",
    "指令遵循": "instruction_following",
    "置信度": "confidence",
}
"""Creative sub-scores: the prompt's name -> the ``parts`` key."""

_NUM = r"(-?\d+(?:\.\d+)?)"
_SCORE = re.compile(r"(?:分数|总分|得分|score)\s*[:：]?\s*" + _NUM, re.IGNORECASE)
_OUT_OF_TEN = re.compile(_NUM + r"\s*/\s*10(?!\d)")


def judge_prompt(instruction: str, input_text: str, reference: str, output: str, kind: str) -> str:
    """The judge prompt for one output (:data:`JUDGE_TEMPLATE` with the type's criteria)."""
    return JUDGE_TEMPLATE.format(
        instruction=instruction,
        input=input_text or "（无）",
        reference=reference,
        output=output or "（空）",
        criteria=CRITERIA[kind],
    )


def parse_score(text: str) -> float | None:
    """The judge's 0..10 score as 0..1: the last ``分数：X`` (or 总分 / 得分 / score), else the
    last ``X/10``, clipped to 0..10; None when there is none."""
    t = clean_text(text)
    hits = _SCORE.findall(t) or _OUT_OF_TEN.findall(t)
    if not hits:
        return None
    try:
        x = float(hits[-1])
    except ValueError:
        return None
    if math.isnan(x):
        return None
    return min(10.0, max(0.0, x)) / 10.0


def parse_sub_scores(text: str) -> dict[str, float]:
    """Creative sub-scores the judge wrote (``创造性：7`` ...), each 0..10, by ``parts`` key."""
    out = {}
    t = clean_text(text)
    for name, key in SUB_SCORES.items():
        found = re.findall(name + r"(?:程度)?\s*[:：]\s*" + _NUM, t)
        if found:
            out[key] = min(10.0, max(0.0, float(found[-1])))
    return out


@dataclass(frozen=True)
class Item:
    """One prepared response: its judge prompt, or the rule-based judgement."""

    sample: Sample
    prompt: str | None
    """The judge prompt; None when the response is scored by rules."""
    ruled: Judgement | None = None

    @property
    def n_items(self) -> int:
        """Prompts to judge: 1 or 0."""
        return 0 if self.prompt is None else 1


@dataclass
class ModelJudge(asking.AsksModel):
    """Batch judge of scorer ``cifbench:judge`` (the pipeline calls ``prepare`` per response,
    ``finish`` per group of about ``batch_items`` prompts, then ``close``).

    Args:
        load: loads the judge backend; called once, at the first prompt.
        store: where judgments are appended (``cifbench_judge.jsonl``; resumable).
        types: output types judged by the model; the others are scored by rules.
        max_new_tokens: judgment budget in tokens.
        config: the generation config of the questions (``stop``, ``max_thinking_tokens``,
            ``temperature``, ...: :meth:`lceval.models.judge.JudgeModel.generation`), its
            ``max_new_tokens`` replaced by the budget above.
        batch_size: prompts per engine call.
        rule_options: options of the rule-based scorer for the other types.
        label: the judge's name until the backend is loaded.
        progress: show a progress bar per group.
    """

    load: Callable[[], Backend]
    store: ResponseStore
    types: tuple[str, ...] = PAPER_TYPES
    max_new_tokens: int = 256
    config: GenerationConfig = field(default_factory=GenerationConfig)
    batch_size: int = 8
    rule_options: Mapping[str, Any] = field(default_factory=dict)
    label: str = "judge"
    progress: bool = False
    batch_items: int = 64
    asker: asking.ModelJudge = field(init=False, repr=False)
    """Asks the judge model (loads it at the first prompt, answers through ``store``)."""

    def __post_init__(self) -> None:
        self.asker = asking.ModelJudge(
            self.load,
            self.store,
            self.config.model_copy(update={"max_new_tokens": self.max_new_tokens}),
            batch_size=self.batch_size,
            label=self.label,
            progress=self.progress,
        )

    def prepare(self, sample: Sample, response: Response, context: Context | None) -> Item:
        """Build the judge prompt of one response, or score it by rules (no model call)."""
        gold = sample.gold
        if not isinstance(gold, CifGold) or gold.output_type not in self.types:
            try:
                ruled = score_cifbench(sample, response, context, **self.rule_options)
            except Exception as exc:  # noqa: BLE001 - never lose a score to a rule bug
                ruled = Judgement(math.nan, explanation=f"scorer error: {type(exc).__name__}")
            return Item(sample, None, ruled)
        prompt = judge_prompt(
            clean_text(sample.description),
            clean_text(context.text if context is not None else ""),
            clean_text(gold.reference),
            clean_text(response.text),
            gold.output_type,
        )
        return Item(sample, prompt)

    def finish(self, prepared: Sequence[Item]) -> list[Judgement]:
        """Judge the prompts of a group of prepared responses; one Judgement each, in order."""
        questions: dict[str, Sample] = {}
        ids: list[str | None] = []
        for p in prepared:
            if p.prompt is None:
                ids.append(None)
                continue
            qid = f"cifbench-judge/{hashlib.sha256(p.prompt.encode()).hexdigest()[:24]}"
            ids.append(qid)
            questions.setdefault(
                qid,
                Sample(
                    id=qid,
                    benchmark="cifbench",
                    task="judge",
                    instruction=p.prompt,
                    max_new_tokens=self.max_new_tokens,
                ),
            )
        answers = self.asker.ask(list(questions.values()), "judge cifbench")
        out = []
        for p, q in zip(prepared, ids, strict=True):
            if q is None:
                assert p.ruled is not None
                out.append(p.ruled)
            else:
                out.append(self._judgement(p, answers.get(q), q))
        return out

    def _judgement(self, item: Item, r: Response | None, qid: str) -> Judgement:
        kind = item.sample.gold.output_type
        if r is None or r.finish_reason == "error":
            why = "no answer" if r is None else r.error
            return Judgement(math.nan, explanation=f"judge {self.name} failed: {why}")
        value = parse_score(r.text)
        parts = parse_sub_scores(r.text) if kind == "creative" else {}
        details = ({"judge": self.name, "judge_sample_id": qid, "output_type": kind},)
        if value is None:
            return Judgement(
                math.nan,
                parts=parts,
                explanation=f"judge {self.name} gave no score ({kind})",
                details=details,
            )
        parts["judge_score"] = value * 10.0
        return Judgement(
            value,
            parts=parts,
            points={k: 10.0 for k in parts},
            explanation=f"model-based evaluator {self.name} ({kind}): {value * 10:g}/10",
            details=details,
        )


_SCORER = "cifbench:judge"


def model_judge(run: RunDir, **options: Any) -> ModelJudge:
    """The batch judge of scorer ``cifbench:judge`` (nothing loads until the first prompt).

    Args:
        run: the run folder; judgments go to ``<run>/cifbench_judge.jsonl`` (resumable).
        **options: :class:`lceval.benchmarks.cifbench.ModelJudgeOptions`: the shared
            :class:`lceval.models.judge.JudgeModel` (``backend``, ``model``: None for the embedded
            SmolLM2, the paper used gpt-4-turbo-preview; ``backend_options``;
            ``max_new_tokens``, 256; ``batch_size``, 8), ``types`` (comma-separated output
            types the model judges; default multi-class, multi-label, creative, as the paper;
            the others are scored by rules) and the rule-based scorer's ``similarity``,
            ``bleurt_checkpoint`` and ``creative`` for the other types.

    Raises:
        LcevalError: an unknown option or output type, a value of the wrong type or out of
            range, an unknown backend or backend option.
    """
    opts = ModelJudgeOptions.parse(_SCORER, options)
    chosen = tuple(t.strip() for t in opts.types.split(",") if t.strip())
    bad = [t for t in chosen if t not in OUTPUT_TYPES]
    if bad:
        raise LcevalError(
            f"scorer {_SCORER} option types: unknown {', '.join(bad)}; "
            f"choose from {', '.join(OUTPUT_TYPES)}"
        )
    load = opts.loader()
    rule_options: dict[str, Any] = {"creative": opts.creative}
    if opts.similarity is not None:
        rule_options["similarity"] = opts.similarity
    if opts.bleurt_checkpoint is not None:
        rule_options["bleurt_checkpoint"] = opts.bleurt_checkpoint
    return ModelJudge(
        load,
        ResponseStore(run.path / JUDGE_FILE),
        chosen,
        max_new_tokens=opts.max_new_tokens,
        config=opts.generation(),
        batch_size=opts.batch_size,
        rule_options=rule_options,
        label=opts.label,
        batch_items=max(opts.batch_size, 64),
    )


def plan_cost(opts: Any) -> tuple[str, int, int, int]:
    """The judge prompt ``lceval plan`` counts (``ScorerSpec.plan_cost``)."""
    return JUDGE_TEMPLATE, 1, 1, opts.max_new_tokens
