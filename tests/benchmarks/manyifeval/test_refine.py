"""Self-refinement loop (ManyIFEval Sec. 5) with a scripted fake backend."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence

import pytest

from lceval.benchmarks.manyifeval import refine
from lceval.benchmarks.manyifeval.gold import ManyIFEvalGold
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Context, Response, Sample
from lceval.models.base import Backend, GenerationConfig

IDS = ["punctuation:no_comma", "startend:quotation"]


class ScriptedBackend(Backend):
    """Answers by rule: ``script(sample) -> text``; records every sample it was sent."""

    def __init__(
        self, script: Callable[[Sample], str], name: str = "fake", fail_at: int | None = None
    ) -> None:
        self.name = name
        self.script = script
        self.sent: list[Sample] = []
        self.fail_at = fail_at
        """Raise on this call of ``generate`` (1-based), as a crash mid-round."""
        self.calls = 0

    def generate(
        self, samples: Sequence[Sample], contexts: Mapping[str, Context], config: GenerationConfig
    ) -> list[Response]:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("killed")
        self.sent.extend(samples)
        return [Response(s.id, self.name, self.script(s), config.hash()) for s in samples]

    def info(self) -> dict:
        return {"backend": "scripted"}

    def close(self) -> None:
        pass


def _sample(i: int = 0) -> Sample:
    return Sample(
        id=f"manyifeval/p{i}/n02",
        benchmark="manyifeval",
        task="unique",
        instruction="Write a greeting.\n\nYour response should follow the instructions",
        gold=ManyIFEvalGold(prompt="Write.", instruction_id_list=tuple(IDS), kwargs=({}, {})),
        meta={"n_instructions": 2, "prompt_key": f"p{i}", "condition": "unique"},
    )


def _script(feedback: str = "") -> Callable[[Sample], str]:
    def answer(s: Sample) -> str:
        if "|fb" in s.id:
            return feedback
        if "|r" in s.id:  # a refinement request: fix both instructions
            return '"Hello there friend"'
        return "Hello, there friend"  # the zero-shot answer: a comma and no quotes

    return answer


@pytest.mark.parametrize(
    ("text", "cot", "want"),
    [
        ("Yes, it does.", False, True),
        ("no", False, False),
        ("I cannot tell.", False, None),
        ("No commas? Let's see... yes there is one.\nAnswer: no", True, False),
        ("The response has quotes so no problem.\nAnswer: **yes**", True, True),
        ("hmm no wait yes", True, True),
        ("", True, None),
    ],
)
def test_parse_yes_no(text: str, cot: bool, want: bool | None) -> None:
    assert refine.parse_yes_no(text, cot=cot) is want


def test_parse_numbered_verdicts() -> None:
    text = "Sure:\n1. yes\n2) No, it is not wrapped.\n2. yes\n4. no"
    assert refine.parse_numbered_verdicts(text, 3) == [True, False, None]


def test_oracle_refines_and_scores_perfect_feedback(tmp_path) -> None:
    run = RunDir("r", tmp_path)
    be = ScriptedBackend(_script())
    res = refine.run_refinement(run, be, "oracle", rounds=2, samples=[_sample()], progress=False)
    r0 = res[res["round"] == 0].iloc[0]
    r1 = res[res["round"] == 1].iloc[0]
    assert r0["prompt_level"] == 0.0 and r1["prompt_level"] == 1.0
    # round 2: the oracle flags nothing, so nothing is rewritten
    assert not res[res["round"] == 2].iloc[0]["rewritten"]
    refine_calls = [s for s in be.sent if "|r" in s.id]
    assert len(refine_calls) == 1
    req = refine_calls[0]
    assert [m["role"] for m in req.history] == ["user", "assistant"]
    assert req.history[1]["content"] == "Hello, there friend"
    assert "refrain from the use of any commas" in req.instruction
    fb = refine.feedback_performance(res).iloc[0]
    assert (fb["precision"], fb["recall"], fb["f1"]) == (1.0, 1.0, 1.0)
    # every round is a Score row of the default scorer, with its version (as the pipeline's)
    from lceval.benchmarks.manyifeval import BENCHMARK

    spec = BENCHMARK.scorer()
    assert set(res["scorer"]) == {spec.name} and set(res["scorer_version"]) == {spec.version}
    row = refine.score_round(_sample(), "Hello, there friend", "m")
    assert (row.scorer, row.model, row.value) == (spec.name, "m", r0["prompt_level"])


def test_all_false_feedback_has_zero_recall(tmp_path) -> None:
    def script(s: Sample) -> str:  # the first answer has no comma but no quotes either
        return _script()(s) if "|" in s.id else "Hello there friend"

    run = RunDir("r", tmp_path)
    be = ScriptedBackend(script)
    res = refine.run_refinement(run, be, "all-false", rounds=1, samples=[_sample()], progress=False)
    fb = refine.feedback_performance(res).iloc[0]
    assert fb["recall"] == 0.0 and fb["f1"] == 0.0 and math.isnan(fb["precision"])
    (req,) = [s for s in be.sent if "|r" in s.id]
    assert "commas" in req.instruction and "double quotation marks" in req.instruction


def test_self_feedback_each_cot_is_parsed_and_flags_only_no(tmp_path) -> None:
    def script(s: Sample) -> str:
        if s.id.endswith("|fb0"):
            return "There is a comma after Hello.\nAnswer: no"
        if s.id.endswith("|fb1"):
            return "Let's think step by step. It has no quotes... Answer: yes"  # wrong verdict
        return _script()(s)

    run = RunDir("r", tmp_path)
    be = ScriptedBackend(script)
    res = refine.run_refinement(
        run, be, "feedback-each-cot", rounds=1, samples=[_sample()], progress=False
    )
    fbs = [s for s in be.sent if "|fb" in s.id]
    assert len(fbs) == 2 and "Let's think step by step" in fbs[0].instruction
    assert "Hello, there friend" in fbs[0].instruction  # judges the current answer
    (req,) = [s for s in be.sent if "|r1" in s.id and "|fb" not in s.id]
    assert "commas" in req.instruction and "quotation" not in req.instruction
    row = res[res["round"] == 1].iloc[0]
    assert json.loads(row["verdicts"]) == [False, True]
    assert json.loads(row["judged"]) == [False, False]
    fb = refine.table2(res).iloc[0]
    # one true negative (comma) and one false positive (quotes): precision 0/1, recall undefined
    assert fb["precision"] == 0.0 and math.isnan(fb["recall"])
    assert fb["method"] == "refinement w/ feedback+each+cot"


def test_feedback_all_at_once_and_unparsed(tmp_path) -> None:
    run = RunDir("r", tmp_path)
    be = ScriptedBackend(_script(feedback="1. no\nsecond: unsure"))
    res = refine.run_refinement(run, be, "feedback", rounds=1, samples=[_sample()], progress=False)
    assert len([s for s in be.sent if "|fb" in s.id]) == 1
    assert json.loads(res[res["round"] == 1].iloc[0]["verdicts"]) == [False, None]
    assert refine.feedback_performance(res).iloc[0]["unparsed"] == 1


def test_no_feedback_always_rewrites_and_zero_shot_does_not(tmp_path) -> None:
    run = RunDir("r", tmp_path)
    be = ScriptedBackend(_script())
    res = refine.run_refinement(
        run, be, "no-feedback", rounds=2, samples=[_sample()], progress=False
    )
    assert list(res.sort_values("round")["rewritten"]) == [False, True, True]
    res0 = refine.run_refinement(
        run, be, "zero-shot", rounds=5, samples=[_sample()], progress=False
    )
    assert list(res0["round"]) == [0]


def test_resume_makes_no_new_calls(tmp_path) -> None:
    run = RunDir("r", tmp_path)
    samples = [_sample(0), _sample(1)]
    be = ScriptedBackend(_script(feedback="no"))
    first = refine.run_refinement(
        run, be, "feedback-each", rounds=2, samples=samples, progress=False
    )
    n_calls = len(be.sent)
    again = refine.run_refinement(
        run, be, "feedback-each", rounds=2, samples=samples, progress=False
    )
    assert len(be.sent) == n_calls
    assert first.equals(again)
    assert (refine.strategy_dir(run, "fake", "feedback-each") / "round1.jsonl").exists()


def test_report_and_errors(tmp_path) -> None:
    run = RunDir("r", tmp_path).create()
    be = ScriptedBackend(_script())
    refine.run_refinement(run, be, "oracle", rounds=1, samples=[_sample()], progress=False)
    assert refine.has_results(run)
    tables = refine.report_refinement(run, [_sample()])
    t2 = tables["refinement_table2"]
    assert list(t2["strategy"]) == ["oracle"] and t2.iloc[0]["prompt_level"] == 1.0
    assert (run.figures / "manyifeval_fig6_refinement.png").exists()
    with pytest.raises(LcevalError, match="unknown strategy"):
        refine.run_refinement(run, be, "magic", samples=[_sample()])
    with pytest.raises(LcevalError, match="rounds"):
        refine.run_refinement(run, be, "oracle", rounds=-1, samples=[_sample()])


def test_a_round_killed_midway_resumes_from_its_store(tmp_path) -> None:
    run = RunDir("r", tmp_path)
    samples = [_sample(i) for i in range(4)]
    # batches of one: calls 1-4 answer zero-shot, 5-12 ask feedback (2 per sample); 7 crashes
    be = ScriptedBackend(_script(feedback="no"), fail_at=7)
    with pytest.raises(RuntimeError, match="killed"):
        refine.run_refinement(
            run, be, "feedback-each", rounds=1, samples=samples, batch_size=1, progress=False
        )
    store = refine.strategy_dir(run, "fake", "feedback-each") / "feedback1.jsonl"
    done = {json.loads(line)["sample_id"] for line in store.read_text().splitlines()}
    assert len(done) == 2  # two feedback batches were flushed before the crash
    be2 = ScriptedBackend(_script(feedback="no"))
    res = refine.run_refinement(
        run, be2, "feedback-each", rounds=1, samples=samples, batch_size=1, progress=False
    )
    fb_ids = {s.id for s in be2.sent if "|fb" in s.id}
    assert fb_ids.isdisjoint(done) and len(fb_ids) == 8 - 2  # only the missing calls
    assert not any("|" not in s.id for s in be2.sent)  # zero-shot answers came from the run
    assert list(res.sort_values("round")["prompt_level"])[-4:] == [1.0] * 4


def test_samples_with_gold_as_json_are_parsed_and_bad_gold_is_refused(tmp_path) -> None:
    run = RunDir("r", tmp_path)
    raw = dataclasses.replace(
        _sample(), gold={"instruction_id_list": IDS, "kwargs": [{}, {}], "prompt": "Write."}
    )
    res = refine.run_refinement(
        run, ScriptedBackend(_script()), "oracle", rounds=1, samples=[raw], progress=False
    )
    assert list(res["prompt_level"]) == [0.0, 1.0]
    bad = dataclasses.replace(_sample(), gold={"instruction_id_list": IDS, "kwargs": [{}]})
    with pytest.raises(LcevalError, match="bad gold"):
        refine.run_refinement(run, ScriptedBackend(_script()), "oracle", samples=[bad])


def test_oracle_does_not_flag_an_undecided_instruction(tmp_path) -> None:
    flood = "[" * 200_000  # over the placeholder checker's work budget: undecided
    s = dataclasses.replace(
        _sample(),
        gold=ManyIFEvalGold(
            instruction_id_list=("detectable_content:number_placeholders",),
            kwargs=({"num_placeholders": 1},),
        ),
        meta={"n_instructions": 1, "prompt_key": "p0", "condition": "unique"},
    )
    run = RunDir("r", tmp_path)
    be = ScriptedBackend(lambda smp: flood)
    res = refine.run_refinement(run, be, "oracle", rounds=1, samples=[s], progress=False)
    assert not [x for x in be.sent if "|r" in x.id]  # nothing flagged, nothing rewritten
    row = res[res["round"] == 1].iloc[0]
    assert json.loads(row["verdicts"]) == [None] and math.isnan(row["prompt_level"])
    fb = refine.feedback_performance(res).iloc[0]
    assert fb["tp"] + fb["fp"] + fb["fn"] + fb["tn"] == 0  # no reference verdict to compare


def test_fig9_confusion_of_the_runs_feedback_beside_the_papers(tmp_path) -> None:
    from lceval.benchmarks.manyifeval.published import feedback_confusion
    from lceval.benchmarks.manyifeval.report import plot_feedback_confusion

    def script(s: Sample) -> str:
        if s.id.endswith("|fb0"):
            return "There is a comma after Hello.\nAnswer: no"  # right: not followed
        if s.id.endswith("|fb1"):
            return "Answer: yes"  # wrong: the quotes are missing
        return _script()(s)

    run = RunDir("r", tmp_path).create()
    be = ScriptedBackend(script)
    refine.run_refinement(
        run, be, "feedback-each-cot", rounds=1, samples=[_sample()], progress=False
    )
    tables = refine.report_refinement(run, [_sample()])
    conf = feedback_confusion(tables["refinement_feedback"])
    mine = conf[conf["source"] == "this run"].set_index(["label", "prediction"])
    assert mine.loc[("not following", "not following"), "count"] == 1  # the comma, caught
    assert mine.loc[("not following", "following"), "count"] == 1  # the quotes, missed
    assert mine.loc[("not following", "following"), "percent"] == 50.0
    assert mine["count"].sum() == 2 and mine["method"].iloc[0] == "refinement w/ feedback+each+cot"
    assert (
        mine.loc[("following", "following"), "percent"]
        != mine.loc[("following", "following"), "percent"]
    )  # no followed instruction was judged: NaN, not a made-up 0
    pub = conf[conf["source"] != "this run"]
    each = pub[pub["method"] == "zero-shot-cot-each"].set_index(["label", "prediction"])
    assert each["percent"].to_dict() == {
        ("following", "following"): 76,
        ("following", "not following"): 24,
        ("not following", "following"): 17,
        ("not following", "not following"): 83,
    }
    fig = plot_feedback_confusion(conf)
    assert len(fig.axes) == 3 and "(this run)" in fig.axes[0].get_title()
    assert "(published)" in fig.axes[1].get_title()


def test_all_seven_strategies_in_one_run_give_table2_and_resume(tmp_path) -> None:
    """Table 2 in one run: one row per strategy in the paper's order; a rerun asks nothing."""
    run = RunDir("r", tmp_path).create()
    samples = [_sample(0), _sample(1)]
    be = ScriptedBackend(_script(feedback="1. no\n2. no\nAnswer: no"))
    t2 = refine.run_strategies(run, be, rounds=1, samples=samples, progress=False)
    assert list(t2["strategy"]) == list(refine.STRATEGIES)
    assert list(t2["method"]) == [refine.PAPER_NAMES[s] for s in refine.STRATEGIES]
    by = t2.set_index("strategy")
    assert by.loc["zero-shot", "prompt_level"] == 0.0 and by.loc["zero-shot", "rounds"] == 0
    assert by.loc["oracle", "prompt_level"] == 1.0 and by.loc["all-false", "prompt_level"] == 1.0
    assert by.loc[["feedback", "feedback-each", "feedback-each-cot"], "unparsed"].eq(0).all()
    assert by.loc["feedback-each-cot", "prompt_level"] == 1.0  # every instruction flagged
    assert math.isnan(by.loc["no-feedback", "f1"])  # no feedback, no precision / recall
    zero_shot_calls = [s for s in be.sent if "|" not in s.id]
    assert len(zero_shot_calls) == 2  # round 0 answered once, shared by all seven
    n = len(be.sent)
    again = refine.run_strategies(run, be, rounds=1, samples=samples, progress=False)
    assert len(be.sent) == n and again.equals(t2)
    # a subset by Table 2's names, kept in the paper's order
    named = ["refinement w/ oracle", "zero-shot"]
    sub = refine.run_strategies(run, be, named, rounds=1, samples=samples, progress=False)
    assert list(sub["strategy"]) == ["zero-shot", "oracle"]
    with pytest.raises(LcevalError, match="unknown strategies 'magic'"):
        refine.run_strategies(run, be, ["oracle", "magic"], samples=samples)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, refine.STRATEGIES),
        ("oracle", ("oracle",)),
        (["all-false", "Refinement w/ feedback+each+cot"], ("feedback-each-cot", "all-false")),
    ],
)
def test_refine_strategies_param(value, want) -> None:
    from lceval import params
    from lceval.benchmarks.manyifeval.build import Refinement

    assert params.parse(Refinement, {"refine_strategies": value}, "04").refine_strategies == want


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"refine_strategies": ["oracle", "best"]},
            r"refine_strategies\[1\] must be one of zero-shot, .*got 'best'",
        ),
        ({"refine_strategies": []}, "non-empty list"),
        ({"refine_strategy": "oracle"}, "now spelled 'refine_strategies'"),
    ],
)
def test_refine_strategies_param_errors(raw, message) -> None:
    from lceval import params
    from lceval.benchmarks.manyifeval.build import Refinement

    with pytest.raises(LcevalError, match=message):
        params.parse(Refinement, raw, "04")


def test_fig6_legend_sits_outside_the_points():
    """ManyIFEval Fig. 6: the legend is right of the axes, not over the points (it covered them)."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from lceval.benchmarks.manyifeval.refine import plot_refinement

    rows = [
        {"model": m, "strategy": st, "round": r, "n": n, "prompt_level": 0.9 - 0.08 * n}
        for m in ("m1", "m2")
        for st, rounds in (("zero-shot", (0,)), ("feedback-each", (0, 1)))
        for r in rounds
        for n in range(1, 11)
    ]
    fig = plot_refinement(pd.DataFrame(rows))
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent()
    assert box.x0 >= ax.get_window_extent().x1, (box, ax.get_window_extent())
