"""Iterative self-refinement for many instructions (ManyIFEval paper, Sec. 5, Table 2, Fig. 6).

Strategies (paper names in ``PAPER_NAMES``):

* ``zero-shot``: the initial answer only (Sec. 4.2).
* ``no-feedback``: refine the previous answer T times without feedback.
* ``feedback``: the model judges all instructions in one call; the instructions it judges as not
  followed are given back for refinement.
* ``feedback-each``: one judging call per instruction (the prompt is reset for each).
* ``feedback-each-cot``: one call per instruction with zero-shot chain of thought ("Let's think
  step by step", Kojima et al. 2022): the paper's method (Sec. 5.1).
* ``oracle``: the not-followed instructions come from the checkers
  (``lceval.benchmarks.manyifeval.score``, strict; an undecided verdict does not flag).
* ``all-false``: every instruction is reported as not followed.

Round 0 is the zero-shot answer, taken from the run's ``responses.jsonl`` (generated there first if
missing, with the same model and config, so it is the answer ``lceval score`` scores). Each round
t = 1..T: (1) feedback on the current answer, (2) when at least one instruction is flagged, the
model rewrites its answer in a second turn of the chat (``Sample.history`` = the task prompt and
the previous answer; the new user turn lists the flagged instructions); when none is flagged the
answer is kept (nothing to refine: the paper passes "a subset of instructions that are judged as
failure"). ``no-feedback`` always rewrites.

The paper does not print its prompt texts; the ones here (``FEEDBACK_*`` and ``REFINE_*``) are
ours and are recorded with the results. A self-feedback verdict is parsed as yes (followed) / no
(not followed) / unparsed; an unparsed verdict does not flag the instruction.

Feedback performance (Table 2, right; Appendix E, Fig. 9) compares the verdicts with the checkers
(strict) over all rounds. Positive class = "the instruction is followed", as Fig. 9's confusion
matrices give Table 2's numbers with it (GPT-4o, feedback+each+cot: precision 76/(76+17) = 0.82,
recall 76/(76+24) = 0.76). Precision is NaN when no verdict says "followed" (the paper prints 1.0
for all-false there); F1 = 2TP / (2TP + FP + FN).

Every call goes through :func:`lceval.models.generate.generate` (the one resumable generation
helper) with a ``ResponseStore`` per round and step. Files, under
``<run>/refine/<model>/<strategy>/``: ``feedback<t>.jsonl`` (round t's self-feedback calls) and
``round<t>.jsonl`` (round t's rewrites), Response records appended and fsynced per batch, and
``state<t>.jsonl`` (each sample's answer after round t and the round's feedback verdicts), written
once the round is complete; a rerun skips finished rounds and, inside a round, finished calls.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from lceval.benchmarks.manyifeval import BENCHMARK
from lceval.benchmarks.manyifeval.checkers import describe
from lceval.benchmarks.manyifeval.gold import PAPER_NAMES, STRATEGIES, ManyIFEvalGold, strategy_key
from lceval.benchmarks.manyifeval.score import check_response
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, iter_jsonl, write_jsonl
from lceval.core.records import Response, Sample, Score
from lceval.core.store import ResponseStore
from lceval.models.base import Backend, GenerationConfig
from lceval.models.generate import generate
from lceval.report.reporting import save_figure, save_table

SELF_FEEDBACK = ("feedback", "feedback-each", "feedback-each-cot")

FEEDBACK_ALL = (
    "Here is a task with instructions and a response to it.\n\n[Task]\n{prompt}\n\n[Response]\n"
    "{response}\n\n[Question]\nFor each instruction below, judge whether the response follows it. "
    'Answer with one line per instruction, in order, in the form "<number>. yes" or '
    '"<number>. no".\n{numbered}'
)
FEEDBACK_EACH = (
    "Here is a task with instructions and a response to it.\n\n[Task]\n{prompt}\n\n[Response]\n"
    "{response}\n\n[Question]\nDoes the response follow this instruction?\n"
    "Instruction: {instruction}\nAnswer with yes or no."
)
FEEDBACK_EACH_COT = (
    "Here is a task with instructions and a response to it.\n\n[Task]\n{prompt}\n\n[Response]\n"
    "{response}\n\n[Question]\nDoes the response follow this instruction?\n"
    "Instruction: {instruction}\nLet's think step by step, then give the final answer on the "
    'last line as "Answer: yes" or "Answer: no".'
)
REFINE_NO_FEEDBACK = (
    "Review your response above and revise it so that it follows all the instructions of the "
    "task. Reply with the revised response only."
)
REFINE_WITH_FEEDBACK = (
    "Your response does not follow these instructions:\n{failed}\nRevise your response so that "
    "it follows all the instructions of the task. Reply with the revised response only."
)

_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_ANSWER = re.compile(r"answer\s*[:：]?\s*\**\s*(yes|no)\b", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*[\(\[]?(\d{1,2})[\.\):\]]\s*(.*)$")


# Feedback parsing ---------------------------------------------------------------------------
def parse_yes_no(text: str, *, cot: bool = False) -> bool | None:
    """A single verdict: True (yes, followed), False (no) or None (no verdict found).

    Without chain of thought the first "yes"/"no" word counts; with it, the last
    "Answer: yes|no" (else the last "yes"/"no" word), since the reasoning comes first.
    """
    if not isinstance(text, str):
        return None
    if cot:
        answers = _ANSWER.findall(text)
        if answers:
            return answers[-1].lower() == "yes"
        words = _WORD.findall(text)
        return words[-1].lower() == "yes" if words else None
    m = _WORD.search(text)
    return None if m is None else m.group(1).lower() == "yes"


def parse_numbered_verdicts(text: str, n: int) -> list[bool | None]:
    """Verdicts for instructions 1..n from lines "<k>. yes|no" (first verdict per k wins)."""
    out: list[bool | None] = [None] * n
    if not isinstance(text, str):
        return out
    for line in text.splitlines():
        m = _NUMBERED.match(line)
        if not m:
            continue
        k = int(m.group(1))
        if 1 <= k <= n and out[k - 1] is None:
            out[k - 1] = parse_yes_no(m.group(2))
    return out


# Prompt assembly ----------------------------------------------------------------------------
def _gold(sample: Sample) -> ManyIFEvalGold:
    """The sample's typed gold (samples pass through ``BENCHMARK.load_samples`` first)."""
    gold = sample.gold
    if not isinstance(gold, ManyIFEvalGold):
        raise LcevalError(f"sample {sample.id}: not a ManyIFEval sample with parsed gold")
    return gold


def _descriptions(sample: Sample) -> list[str]:
    gold = _gold(sample)
    out = []
    for i, kw in zip(gold.instruction_id_list, gold.kwargs, strict=True):
        try:
            out.append(describe(i, kw))
        except LcevalError:
            out.append(i)
    return out


def _derived(
    sample: Sample, suffix: str, instruction: str, history: Sequence[Mapping[str, str]]
) -> Sample:
    return replace(
        sample,
        id=f"{sample.id}|{suffix}",
        instruction=instruction,
        description="",
        context_id=None,
        history=tuple(dict(m) for m in history),
        assistant_prefix="",
    )


def feedback_samples(sample: Sample, response: str, strategy: str, round_: int) -> list[Sample]:
    """The self-feedback calls of one round for one sample (one, or one per instruction)."""
    prompt = sample.instruction
    descs = _descriptions(sample)
    tag = f"{strategy}|r{round_}"
    if strategy == "feedback":
        numbered = "\n".join(f"{j + 1}. {d}" for j, d in enumerate(descs))
        text = FEEDBACK_ALL.format(prompt=prompt, response=response, numbered=numbered)
        return [_derived(sample, f"{tag}|fb", text, ())]
    template = FEEDBACK_EACH_COT if strategy == "feedback-each-cot" else FEEDBACK_EACH
    return [
        _derived(
            sample,
            f"{tag}|fb{j}",
            template.format(prompt=prompt, response=response, instruction=d),
            (),
        )
        for j, d in enumerate(descs)
    ]


def refine_sample(
    sample: Sample, response: str, failed: Sequence[int] | None, round_: int, strategy: str
) -> Sample:
    """The second-turn rewrite request (``failed``: indices of flagged instructions, or None)."""
    if failed is None:
        text = REFINE_NO_FEEDBACK
    else:
        descs = _descriptions(sample)
        text = REFINE_WITH_FEEDBACK.format(failed="\n".join(f"- {descs[j]}" for j in failed))
    history = (
        *sample.history,
        {"role": "user", "content": sample.instruction},
        {"role": "assistant", "content": response},
    )
    return _derived(sample, f"{strategy}|r{round_}", text, history)


# Running ------------------------------------------------------------------------------------
def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:100] or "model"


def strategy_dir(run: RunDir, model: str, strategy: str) -> Path:
    """``<run>/refine/<model slug>/<strategy>/``."""
    return run.path / "refine" / _slug(model) / strategy


def select_samples(
    samples: Sequence[Sample] | RunDir,
    *,
    n_instructions: Iterable[int] | None = None,
    n_prompts: int | None = None,
    condition: str = "unique",
) -> list[Sample]:
    """A subset for refinement: samples of the given counts from the first ``n_prompts`` prompts.

    Args:
        samples: samples, or a run folder to read them from.
        n_instructions: the instruction counts n to keep (default: all).
        n_prompts: keep the samples of the first this many prompts (file order).
        condition: ``unique`` or ``repeated`` (``meta["condition"]``).

    Returns:
        The chosen samples with typed gold.

    Raises:
        LcevalError: nothing matches, or a gold does not parse.
    """
    pool = BENCHMARK.load_samples(
        samples.read_samples() if isinstance(samples, RunDir) else samples
    )
    wanted = set(n_instructions) if n_instructions is not None else None
    pool = [
        s
        for s in pool
        if s.meta.get("condition", s.task) == condition
        and (wanted is None or s.meta.get("n_instructions") in wanted)
    ]
    if n_prompts is not None:
        keys: list[str] = []
        for s in pool:
            k = str(s.meta.get("prompt_key", s.id))
            if k not in keys:
                keys.append(k)
        keep = set(keys[:n_prompts])
        pool = [s for s in pool if str(s.meta.get("prompt_key", s.id)) in keep]
    if not pool:
        raise LcevalError("no samples match the refinement selection")
    return pool


def _generate(
    backend: Backend,
    path: Path,
    samples: Sequence[Sample],
    config: GenerationConfig,
    batch_size: int,
    desc: str,
    progress: bool,
) -> dict[str, Response]:
    """Answer ``samples`` through the one resumable helper, stored in ``path``; by sample id."""
    got = generate(
        backend,
        samples,
        {},
        config,
        store=ResponseStore(path),
        batch_size=batch_size,
        progress=progress,
        desc=desc,
    )
    return {r.sample_id: r for r in got}


def _checked(sample: Sample, text: str) -> list[bool | None]:
    """The checkers' strict verdicts on ``text`` (None: undecided, see ``score``)."""
    gold = _gold(sample)
    prompt = gold.prompt or sample.instruction
    return [v.strict for v in check_response(gold.instruction_id_list, gold.kwargs, text, prompt)]


def _text(r: Response | None) -> str:
    return r.text if r is not None and r.finish_reason != "error" else ""


def run_refinement(
    run: RunDir,
    backend: Backend,
    strategy: str,
    *,
    rounds: int = 5,
    samples: Sequence[Sample] | None = None,
    config: GenerationConfig | None = None,
    batch_size: int = 8,
    progress: bool = True,
) -> pd.DataFrame:
    """Run one Sec. 5 strategy for ``rounds`` rounds through any lceval Backend (resumable).

    Args:
        run: a built ManyIFEval run folder.
        backend: the model (its ``name`` keys the stored responses).
        strategy: one of ``STRATEGIES``.
        rounds: T, refinement rounds after the initial answer (paper: 5).
        samples: the samples to refine (default: every "unique" sample of the run).
        config: decoding settings (greedy by default); the initial answers are the run's
            responses under this config.
        batch_size: calls per backend batch.
        progress: show progress bars.

    Returns:
        :func:`load_results` for this model and strategy (one row per sample and round).

    Raises:
        LcevalError: unknown strategy, rounds < 0, no samples, a backend that breaks the order.
    """
    if strategy not in STRATEGIES:
        raise LcevalError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if not isinstance(rounds, int) or rounds < 0:
        raise LcevalError(f"rounds must be a non-negative integer, got {rounds!r}")
    if batch_size < 1:
        raise LcevalError(f"batch_size must be >= 1, got {batch_size}")
    config = config or GenerationConfig()
    chosen = BENCHMARK.load_samples(samples) if samples is not None else select_samples(run)
    if not chosen:
        raise LcevalError("no samples to refine")
    folder = strategy_dir(run, backend.name, strategy)
    folder.mkdir(parents=True, exist_ok=True)

    initial = _generate(
        backend,
        run.responses,
        chosen,
        config,
        batch_size,
        "refine r0 (zero-shot)",
        progress,
    )
    current = {s.id: _text(initial.get(s.id)) for s in chosen}
    _write_state(folder, 0, chosen, current, {}, {})
    t_max = 0 if strategy == "zero-shot" else rounds
    for t in range(1, t_max + 1):
        state_path = folder / f"state{t}.jsonl"
        if state_path.exists():
            prev = {d["sample_id"]: d for d in iter_jsonl(state_path)}
            if all(s.id in prev for s in chosen):
                current = {s.id: prev[s.id]["text"] for s in chosen}
                continue
        verdicts: dict[str, list[bool | None]] = {}
        if strategy in SELF_FEEDBACK:
            calls = {s.id: feedback_samples(s, current[s.id], strategy, t) for s in chosen}
            flat = [c for cs in calls.values() for c in cs]
            got = _generate(
                backend,
                folder / f"feedback{t}.jsonl",
                flat,
                config,
                batch_size,
                f"{strategy} r{t} feedback",
                progress,
            )
            for s in chosen:
                cs = calls[s.id]
                if strategy == "feedback":
                    n = len(_gold(s).instruction_id_list)
                    verdicts[s.id] = parse_numbered_verdicts(_text(got.get(cs[0].id)), n)
                else:
                    cot = strategy == "feedback-each-cot"
                    verdicts[s.id] = [parse_yes_no(_text(got.get(c.id)), cot=cot) for c in cs]
        elif strategy == "oracle":
            for s in chosen:
                verdicts[s.id] = _checked(s, current[s.id])
        elif strategy == "all-false":
            verdicts = {s.id: [False] * len(_gold(s).instruction_id_list) for s in chosen}
        requests = []
        for s in chosen:
            if strategy == "no-feedback":
                requests.append(refine_sample(s, current[s.id], None, t, strategy))
                continue
            failed = [j for j, v in enumerate(verdicts[s.id]) if v is False]
            if failed:
                requests.append(refine_sample(s, current[s.id], failed, t, strategy))
        got = _generate(
            backend,
            folder / f"round{t}.jsonl",
            requests,
            config,
            batch_size,
            f"{strategy} r{t} refine",
            progress,
        )
        refined = {r.id.rsplit("|", 2)[0]: r.id for r in requests}
        judged_on = dict(current)
        for s in chosen:
            if s.id in refined:
                r = got.get(refined[s.id])
                # A failed generation keeps the previous answer (nothing better to use).
                if r is not None and r.finish_reason != "error":
                    current[s.id] = r.text
        _write_state(folder, t, chosen, current, verdicts, judged_on, refined=set(refined))
    return load_results(run, backend.name, strategy, chosen)


def run_strategies(
    run: RunDir, backend: Backend, strategies: Sequence[str] | None = None, **options: Any
) -> pd.DataFrame:
    """Table 2 in one run: :func:`run_refinement` for each strategy on the same samples, one
    model loaded once; resumable (finished rounds and calls of every strategy are skipped; the
    zero-shot answers of round 0 are the run's own, shared by all).

    Args:
        strategies: keys of ``STRATEGIES`` or Table 2's names (None: all seven).
        options: :func:`run_refinement`'s keyword arguments (``rounds``, ``samples``,
            ``config``, ``batch_size``, ``progress``), the same for every strategy.

    Returns:
        :func:`table2` of this model: one row per strategy, in the paper's order.

    Raises:
        LcevalError: no or unknown strategies, and :func:`run_refinement`'s errors.
    """
    strategies = STRATEGIES if strategies is None else list(strategies)
    keys = [strategy_key(s) for s in strategies]
    bad = [s for s, k in zip(strategies, keys, strict=True) if k is None]
    if bad or not keys:
        raise LcevalError(
            f"unknown strategies {', '.join(map(repr, bad)) or '(none given)'}; choose from "
            f"{', '.join(STRATEGIES)}"
        )
    for key in dict.fromkeys(k for k in keys if k is not None):
        run_refinement(run, backend, key, **options)
    done = load_results(run, model=backend.name, samples=options.get("samples"))
    return table2(done[done["strategy"].isin(keys)])


def _write_state(
    folder: Path,
    t: int,
    samples: Sequence[Sample],
    current: Mapping[str, str],
    verdicts: Mapping[str, list[bool | None]],
    judged_on: Mapping[str, str],
    refined: set[str] | None = None,
) -> None:
    rows = []
    for s in samples:
        rows.append(
            {
                "sample_id": s.id,
                "round": t,
                "text": current[s.id],
                "rewritten": bool(refined and s.id in refined),
                "verdicts": verdicts.get(s.id),
                "judged_text": judged_on.get(s.id),
            }
        )
    write_jsonl(folder / f"state{t}.jsonl", rows)


# Results ------------------------------------------------------------------------------------
def has_results(run: RunDir) -> bool:
    """Whether the run folder holds any refinement state."""
    return any((run.path / "refine").glob("*/*/state*.jsonl"))


def score_round(sample: Sample, text: str, model: str) -> Score:
    """One refinement round's answer scored as the pipeline scores a response: the Score row of
    ManyIFEval's default scorer (name and version recorded; Eq. 1-2 parts as in
    ``lceval.benchmarks.manyifeval.score.score_manyifeval``).

    Args:
        sample: a ManyIFEval sample with typed gold.
        text: the round's answer.
        model: the model name the row is recorded under.
    """
    spec = BENCHMARK.scorer()
    response = Response(sample_id=sample.id, model=model, text=text, config_hash="refine")
    return spec.record(sample, model, spec.judge(sample, response, None))


def load_results(
    run: RunDir,
    model: str | None = None,
    strategy: str | None = None,
    samples: Sequence[Sample] | None = None,
) -> pd.DataFrame:
    """Scored answers of every stored round: one row per (model, strategy, round, sample).

    Columns: model, strategy, round, sample_id, n, prompt_level (0/1, strict), inst_level
    (0..1, strict), prompt_level_loose, inst_level_loose, rewritten, verdicts (JSON list of
    self-feedback verdicts on the previous answer, None for strategies without), judged
    (JSON list of the checkers' strict verdicts on that same previous answer), scorer and
    scorer_version (each round's answer is a Score row of the default scorer: :func:`score_round`).
    """
    pool = samples if samples is not None else run.read_samples()
    by_id = {
        s.id: s for s in BENCHMARK.load_samples(x for x in pool if x.benchmark == BENCHMARK.key)
    }
    root = run.path / "refine"
    rows: list[dict[str, Any]] = []
    for path in sorted(root.glob("*/*/state*.jsonl")):
        strat = path.parent.name
        slug = path.parent.parent.name
        if strategy is not None and strat != strategy:
            continue
        if model is not None and slug != _slug(model):
            continue
        for d in iter_jsonl(path):
            s = by_id.get(d["sample_id"])
            if s is None:
                continue
            label = model if model is not None else slug
            sc = score_round(s, d["text"], label)
            judged = None
            if d.get("judged_text") is not None:
                judged = _checked(s, d["judged_text"])
            rows.append(
                {
                    "model": label,
                    "strategy": strat,
                    "round": int(d["round"]),
                    "sample_id": s.id,
                    "n": int(s.meta.get("n_instructions") or len(_gold(s).instruction_id_list)),
                    "prompt_level": sc.value,
                    "inst_level": sc.parts.get("inst_level_strict", math.nan),
                    "prompt_level_loose": sc.parts.get("prompt_level_loose", math.nan),
                    "inst_level_loose": sc.parts.get("inst_level_loose", math.nan),
                    "scorer": sc.scorer,
                    "scorer_version": sc.scorer_version,
                    "rewritten": bool(d.get("rewritten")),
                    "verdicts": json.dumps(d.get("verdicts")),
                    "judged": json.dumps(judged),
                }
            )
    return pd.DataFrame(rows)


def feedback_performance(results: pd.DataFrame) -> pd.DataFrame:
    """Precision, recall and F1 of the feedback against the checkers (Table 2, right).

    Positive class: the instruction is followed. Pooled over every round and sample.

    Returns:
        One row per (model, strategy): tp, fp, fn, tn, unparsed, precision, recall, f1 (0..1;
        NaN where undefined or the strategy gives no feedback).
    """
    rows = []
    for (model, strat), g in results.groupby(["model", "strategy"], sort=True):
        tp = fp = fn = tn = unparsed = 0
        for v_json, j_json in zip(g["verdicts"], g["judged"], strict=True):
            v, j = json.loads(v_json), json.loads(j_json)
            if v is None or j is None:
                continue
            for pred, gold in zip(v, j, strict=False):
                if gold is None:  # the checker could not decide (work budget): no reference
                    continue
                if pred is None:
                    unparsed += 1
                    pred = True  # an unparsed verdict does not flag the instruction
                tp += pred and gold
                fp += pred and not gold
                fn += (not pred) and gold
                tn += (not pred) and (not gold)
        total = tp + fp + fn + tn
        precision = tp / (tp + fp) if tp + fp else math.nan
        recall = tp / (tp + fn) if tp + fn else math.nan
        f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else math.nan
        if total == 0:
            precision = recall = f1 = math.nan
        rows.append(
            {
                "model": model,
                "strategy": strat,
                "tp": tp,
                "fp": fp,
                "fn": fn,
                "tn": tn,
                "unparsed": unparsed,
                "precision": precision,
                "recall": recall,
                "f1": f1,
            }
        )
    return pd.DataFrame(rows)


def table2(results: pd.DataFrame) -> pd.DataFrame:
    """Table 2 layout: per strategy, accuracies after its last round and feedback performance.

    Prompt-level accuracy is the mean over samples (Eq. 1 pooled over n); inst-level accuracy the
    mean over every instruction (Eq. 2 pooled over n). Strategies are listed in paper order.
    """
    if results.empty:
        return pd.DataFrame()
    last = results.groupby(["model", "strategy"])["round"].transform("max")
    final = results[results["round"] == last].copy()
    final["n_checked"] = final["n"]
    final["followed"] = final["inst_level"] * final["n"]
    acc = final.groupby(["model", "strategy"]).agg(
        rounds=("round", "max"),
        samples=("sample_id", "nunique"),
        prompt_level=("prompt_level", "mean"),
        followed=("followed", "sum"),
        n_checked=("n_checked", "sum"),
    )
    acc["inst_level"] = acc["followed"] / acc["n_checked"]
    acc = acc.drop(columns=["followed", "n_checked"]).reset_index()
    fb = feedback_performance(results)[
        ["model", "strategy", "precision", "recall", "f1", "unparsed"]
    ]
    out = acc.merge(fb, on=["model", "strategy"], how="left")
    out.insert(2, "method", out["strategy"].map(PAPER_NAMES))
    order = {s: i for i, s in enumerate(STRATEGIES)}
    out = out.sort_values(
        ["model", "strategy"], key=lambda c: c.map(order) if c.name == "strategy" else c
    )
    return out.reset_index(drop=True)


def plot_refinement(results: pd.DataFrame) -> Any:
    """Fig. 6 style: prompt-level accuracy (0..1) against n, round 0 (zero-shot) and each
    strategy's last round; the legend outside the axes, right of the plot."""
    import seaborn as sns  # heavy: seaborn

    last = results.groupby(["model", "strategy"])["round"].transform("max")
    final = results[results["round"] == last].assign(
        method=lambda d: d["strategy"].map(PAPER_NAMES)
    )
    zero = results[results["round"] == 0].assign(method="zero-shot")
    d = pd.concat([zero, final[final["strategy"] != "zero-shot"]], ignore_index=True)
    d = d.groupby(["model", "method", "n"], as_index=False)["prompt_level"].mean()
    fig, ax = plt.subplots(figsize=(8, 4))
    sns.lineplot(data=d, x="n", y="prompt_level", hue="method", style="model", marker="o", ax=ax)
    ax.set(xlabel="Number of instructions", ylabel="Prompt-level accuracy", ylim=(-0.02, 1.02))
    if ax.get_legend() is not None:  # beside the plot: inside it covered the points
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def report_refinement(
    run: RunDir, samples: Sequence[Sample] | None = None
) -> dict[str, pd.DataFrame]:
    """Write the refinement tables (Table 2 layout, per round) and the Fig. 6 style figure.

    Returns:
        ``refinement_table2`` and ``refinement_by_round`` (empty frames when no results), and
        ``refinement_feedback`` (:func:`feedback_performance`, when there are results).
    """
    results = load_results(run, samples=samples)
    if results.empty:
        return {"refinement_table2": pd.DataFrame(), "refinement_by_round": pd.DataFrame()}
    feedback = feedback_performance(results)  # Fig. 9's counts (report.plot_feedback_confusion)
    t2 = table2(results)
    by_round = results.groupby(["model", "strategy", "round"], as_index=False).agg(
        prompt_level=("prompt_level", "mean"),
        inst_level=("inst_level", "mean"),
        rewritten=("rewritten", "mean"),
    )
    save_table(t2, run.report, "manyifeval_refinement_table2", index=False)
    save_table(by_round, run.report, "manyifeval_refinement_by_round", index=False)
    save_figure(plot_refinement(results), run.figures, "manyifeval_fig6_refinement")
    return {
        "refinement_table2": t2,
        "refinement_by_round": by_round,
        "refinement_feedback": feedback,
    }
