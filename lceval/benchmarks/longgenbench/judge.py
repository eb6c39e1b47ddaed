"""LongGenBench's LLM judge (scorer ``longgenbench:llm``): the official judge prompt of
``Evalution/eval.py`` (``"Context: {block}### Instruction: Does this context include the {desc}?
Please answer with 'yes' or 'no' only."``) and its few-shot variant (paper Appendix C), the
verdict parsing, and :class:`LLMJudge`, the batch judge that asks any lceval Backend through
``lceval.models.judge.ModelJudge`` (answers stored in ``longgenbench_judge.jsonl``, so judging
resumes). The checks it answers and the metrics (CR, STIC-1, STIC-2) are
``lceval.benchmarks.longgenbench.score``'s.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lceval.benchmarks.longgenbench import LLMJudgeOptions
from lceval.benchmarks.longgenbench.score import (
    JUDGE_FILE,
    OfflineJudge,
    Prepared,
    finish,
    prepare,
    to_judgement,
)
from lceval.core.records import Context, Judgement, Response, Sample
from lceval.core.store import ResponseStore
from lceval.core.tokens import DEFAULT_ENCODING, count_tokens_batch
from lceval.models.base import GenerationConfig
from lceval.models.judge import AsksModel, ModelJudge

if TYPE_CHECKING:
    from lceval.core.io import RunDir
    from lceval.models.base import Backend


def judge_prompt_parts(description: str, few_shot: bool = False) -> tuple[str, str]:
    """The judge prompt around the block: ``head + block + tail`` is the whole prompt.

    Zero-shot: the official prompt (``Evalution/eval.py``, ``create_prompts``). Few-shot: the
    Appendix C prompt (two worked examples, then analysis and ``#*# Yes`` or ``#*# No``).
    """
    if not few_shot:
        return (
            "Context: ",
            f"### Instruction: Does this context include the {description}? "
            "Please answer with 'yes' or 'no' only.",
        )
    parts = []
    for i, (ctx, desc, analysis, ans) in enumerate(FEW_SHOT_EXAMPLES, 1):
        parts.append(
            f'Example {i}:\nContext: Long-context model output: "{ctx}"\n'
            f"Instructions: Does this context include '{desc}'?\nAnswer: {analysis} #*# {ans}"
        )
    head = "\n\n".join(parts) + '\n\nContext: Long-context model output: "'
    tail = (
        f"\"\nInstructions: Does this context include '{description}'?\n"
        "Answer: Please refer to the above examples, provide your analysis, and respond with "
        "either #*# Yes or #*# No."
    )
    return head, tail


def judge_prompt(block: str, description: str) -> str:
    """The official zero-shot judge prompt (``Evalution/eval.py``, ``create_prompts``)."""
    head, tail = judge_prompt_parts(description)
    return f"{head}{block}{tail}"


FEW_SHOT_EXAMPLES = (
    (
        "Floor 11: Designated for art gallery use, Floor 11 is a bright, flexible space with "
        "movable walls, gallery lighting and a small reading corner for visitors.",
        "small art gallery",
        "The floor is described as an art gallery space for visitors.",
        "Yes",
    ),
    (
        "Floor 34: Floor 34 hosts a small cinema with forty seats, acoustic panels and a "
        "projection booth.",
        "corporate headquarters",
        "The floor is a cinema; no corporate headquarters is mentioned.",
        "No",
    ),
)
"""The two worked examples of the few-shot judge prompt (paper Appendix C: ``Answer: Analysis +
#*# Yes`` / ``#*# No``); the texts are lceval's own."""


def judge_prompt_few_shot(block: str, description: str) -> str:
    """The few-shot judge prompt of paper Appendix C (analysis, then ``#*# Yes`` or ``#*# No``)."""
    head, tail = judge_prompt_parts(description, few_shot=True)
    return f"{head}{block}{tail}"


_FEW_SHOT_MARK = re.compile(r"#\*#\s*(yes|no)\b", re.IGNORECASE)


def parse_verdict(text: str, few_shot: bool = False) -> bool:
    """Whether a judge answer says yes.

    Zero-shot: ``"yes" in text.strip().lower()`` (official ``evaluate_accuracy``). Few-shot: the
    last ``#*# Yes`` / ``#*# No`` mark decides; without a mark, the zero-shot rule.
    """
    text = text or ""
    if few_shot:
        marks = _FEW_SHOT_MARK.findall(text)
        if marks:
            return bool(marks[-1].lower() == "yes")
    return "yes" in text.strip().lower()


# -- the LLM judge (a batch judge of the pipeline) -----------------------------------------------
@dataclass
class LLMJudge(AsksModel):
    """Batch judge that asks an lceval Backend each (block, description) question (scorer
    ``longgenbench:llm``; the pipeline calls ``prepare`` per response, ``finish`` per group of
    about ``batch_items`` questions, then ``close``).

    Args:
        load: loads the judge backend; called once, when the first question is asked.
        store: where answers are appended (``longgenbench_judge.jsonl``); answered questions are
            not asked again, so an interrupted scoring run resumes.
        few_shot: use the Appendix C few-shot prompt instead of the official zero-shot one.
        batch_size: questions per ``backend.generate`` call.
        second_judge: also run the offline judge on the same pairs (rows' ``yes_2``).
        max_new_tokens: answer budget (default 8 zero-shot; 160 few-shot, which asks for an
            analysis).
        config: the generation config of the questions (``stop``, ``max_thinking_tokens``,
            ``temperature``: 0 = greedy, the official judge sampled at 0.95 with seed 42; its
            ``max_new_tokens`` replaced by the budget above).
        label: the judge's name until the backend is loaded (the model or backend name).
        progress: show a progress bar per group.
    """

    load: Callable[[], Backend]
    store: ResponseStore
    few_shot: bool = False
    batch_size: int = 64
    second_judge: bool = True
    max_new_tokens: int | None = None
    config: GenerationConfig = field(default_factory=GenerationConfig)
    label: str = "judge"
    progress: bool = False
    batch_items: int = field(init=False)
    """Questions the pipeline collects before calling ``finish``."""
    asker: ModelJudge = field(init=False, repr=False)
    """Asks the judge model (loads it at the first question, answers through ``store``)."""

    def __post_init__(self) -> None:
        self.batch_items = max(512, self.batch_size)
        self.asker = ModelJudge(
            self.load,
            self.store,
            self.config.model_copy(update={"max_new_tokens": self._budget}),
            batch_size=self.batch_size,
            label=self.label,
            progress=self.progress,
        )

    @property
    def _budget(self) -> int:
        return self.max_new_tokens or (160 if self.few_shot else 8)

    @property
    def name(self) -> str:
        """``llm:<model>`` or ``llm-fewshot:<model>``."""
        return f"llm{'-fewshot' if self.few_shot else ''}:{self.asker.name}"

    def prepare(self, sample: Sample, response: Response, context: Context | None) -> Prepared:
        """Parse one response (its judged blocks are kept until ``finish``)."""
        return prepare(sample, response.text)

    def ask(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[bool], list[bool]]:
        """(yes, failed) per ``(block, description)`` pair; a failed generation counts as no."""
        if not pairs:
            return [], []
        budget = self._budget
        contexts: dict[str, Context] = {}
        new_blocks: dict[str, str] = {}
        questions: dict[str, Sample] = {}
        ids = []
        for block, desc in pairs:
            head, tail = judge_prompt_parts(desc, self.few_shot)
            cid = f"longgenbench-judge/block/{_digest(block)}"
            qid = f"longgenbench-judge/{_digest(head + block + tail)}"
            ids.append(qid)
            if qid in questions:
                continue
            if cid not in contexts and cid not in new_blocks:
                new_blocks[cid] = block
            questions[qid] = Sample(
                id=qid,
                benchmark="longgenbench",
                task="judge",
                instruction=tail,
                context_id=cid,
                description=head,
                joiner="",
                max_new_tokens=budget,
            )
        counts = count_tokens_batch(list(new_blocks.values()))
        for (cid, block), n in zip(new_blocks.items(), counts, strict=True):
            contexts[cid] = Context(cid, block, n, DEFAULT_ENCODING, "longgenbench output block")
        by_id = self.asker.ask(list(questions.values()), "judge longgenbench", contexts)
        yes, failed = [], []
        for qid in ids:
            r = by_id.get(qid)
            bad = r is None or r.finish_reason == "error"
            failed.append(bad)
            yes.append(not bad and r is not None and parse_verdict(r.text, self.few_shot))
        return yes, failed

    def finish(self, prepared: Sequence[Prepared]) -> list[Judgement]:
        """Judge the pairs of a group of prepared responses; one Judgement each, in order."""
        pairs = [pair for p in prepared for pair in p.pairs]
        yes, failed = self.ask(pairs)
        second = OfflineJudge() if self.second_judge else None
        yes_2 = second.judge(pairs) if second is not None else None
        name = self.name
        out = []
        k = 0
        for p in prepared:
            m = len(p.pairs)
            ev = finish(p, yes[k : k + m], None if yes_2 is None else yes_2[k : k + m])
            errors = sum(failed[k : k + m])
            out.append(to_judgement(ev, name, second.name if second else None, errors))
            k += m
        return out


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


_SCORER = "longgenbench:llm"


def llm_judge(run: RunDir, **options: Any) -> LLMJudge:
    """The LLM batch judge of scorer ``longgenbench:llm`` (nothing loads until the first question).

    Args:
        run: the run folder; answers go to ``<run>/longgenbench_judge.jsonl`` (resumable).
        **options: :class:`lceval.benchmarks.longgenbench.LLMJudgeOptions` (the shared
            :class:`lceval.models.judge.JudgeModel`: ``backend``, ``model`` (None: the embedded
            SmolLM2; the paper used Llama-3.1-8B-Instruct), ``backend_options`` (e.g.
            ``{"prompt_format": "plain"}`` sends the raw prompt as the official ``eval.py``
            does; with ``backend="openai"``, ``{"base_url": ...}`` asks any OpenAI-compatible
            endpoint), ``max_new_tokens`` (None: 8 zero-shot, 160 few-shot), ``batch_size``
            (64); and ``few_shot`` (the Appendix C prompt), ``second_judge`` (also the offline
            judge, for agreement)).

    Raises:
        LcevalError: an unknown option, a value of the wrong type or out of range, an unknown
            backend or backend option, or a judge store that does not parse.
    """
    opts = LLMJudgeOptions.parse(_SCORER, options)
    load = opts.loader()
    store = ResponseStore(run.path / JUDGE_FILE)
    return LLMJudge(
        load,
        store,
        few_shot=opts.few_shot,
        batch_size=opts.batch_size,
        second_judge=opts.second_judge,
        max_new_tokens=opts.max_new_tokens,
        config=opts.generation(),
        label=opts.label,
    )


def plan_cost(opts: Any) -> tuple[str, int, int, int]:
    """The judge prompt ``lceval plan`` counts (``ScorerSpec.plan_cost``)."""
    head, tail = judge_prompt_parts("", opts.few_shot)
    return head + tail, 1, 1, opts.max_new_tokens or (160 if opts.few_shot else 8)
