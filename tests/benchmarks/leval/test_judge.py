"""The pairwise LLM judge (scorer ``leval:judge``): official prompt and verdict rules, both orders,
win rate with ties at half, resumable judging; a scripted backend and the real embedded model."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import lceval.report
import lceval.run
from lceval.benchmarks.leval import GAMES_FILE
from lceval.benchmarks.leval.importer import read_baseline
from lceval.benchmarks.leval.judge import (
    JUDGE_FILE,
    PairwiseJudge,
    judge_prompt,
    verdict,
    win_rate,
)
from lceval.benchmarks.leval.prompts import JUDGE_SYSTEM
from lceval.core.errors import LcevalError
from lceval.core.io import dumps
from lceval.core.records import Response
from lceval.core.store import ResponseStore


@pytest.mark.parametrize(
    "text, want",
    [
        ("... so [[A]]", "A"),
        ("[[B]] is better", "B"),
        ("a tie: [[C]]", "tie"),
        ("[[B]] or [[A]]", "A"),  # checked in the official order: A first
        ("A is better", "error"),
        ("", "error"),
    ],
)
def test_verdict(text, want):
    assert verdict(text) == want


def test_win_rate_counts_ties_half():
    assert win_rate(2, 2, 2) == 0.5
    assert win_rate(1, 1, 0) == 0.75
    assert math.isnan(win_rate(0, 0, 0))


def test_prompt_is_the_official_pair_v2():
    p = judge_prompt("Q?", "ref", "one", "two")
    assert p == (
        "[User Question]\nQ?\n\n[The Start of Reference Answer]\nref\n[The End of Reference "
        "Answer]\n\n[The Start of Assistant A's Answer]\none\n[The End of Assistant A's Answer]"
        "\n\n[The Start of Assistant B's Answer]\ntwo\n[The End of Assistant B's Answer]"
    )
    assert (
        "Additional details or information that are not mentioned in reference answer cannot be "
        "considered as advantages and do not let them sway your judgment." in JUDGE_SYSTEM
    )


@pytest.fixture
def judged_run(tmp_path, leval_data):
    run = lceval.run.build(
        "j",
        "leval",
        {"data_path": str(leval_data), "tasks": ["tpo", "natural_question", "news_summ"]},
        root=tmp_path,
    )
    answers = {
        "leval/tpo/0000/000": "A",
        "leval/tpo/0000/001": "C",
        "leval/natural_question/0000/000": "blue",  # right; the baseline is wrong -> 2 wins
        "leval/natural_question/0000/001": "nine",  # both wrong -> 2 ties
        "leval/news_summ/0000/000": "nonsense",  # the baseline is right -> 2 losses
    }
    lines = [dumps(Response(k, "m", v, "h")) for k, v in answers.items()]
    run.responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    base = tmp_path / "baseline" / "x.pred.jsonl"
    base.parent.mkdir()
    rows = [
        ("what color is the lake", "blue", "green"),
        ("how many lakes are there", "twelve lakes", "ten"),
        (
            "Please summarize these news articles.",
            "The river is blue and the city is quiet today.",
            "The river is blue and the city is quiet today.",
        ),
    ]
    base.write_text(
        "".join(
            json.dumps({"query": q, "gt": g, "turbo_pred": p, "evaluation": "f1"}) + "\n"
            for q, g, p in rows
        )
    )
    return run, base


def test_judge_through_the_pipeline(judged_run, monkeypatch, scripted_judge):
    from lceval.models import base as base_module

    run, baseline = judged_run
    engines = []

    def load(backend, model=None, **options):
        engines.append(scripted_judge())
        return engines[-1]

    monkeypatch.setattr(base_module, "load_backend", load)
    df = lceval.run.score(
        "j",
        root=run.path.parent,
        scorer="leval:judge",
        options={"baseline": str(baseline)},
        progress=False,
    )
    by_id = df.set_index("sample_id")
    assert math.isnan(by_id.loc["leval/tpo/0000/000", "value"])
    assert "closed-ended" in by_id.loc["leval/tpo/0000/000", "explanation"]
    assert by_id.loc["leval/natural_question/0000/000", "value"] == 1.0
    assert by_id.loc["leval/natural_question/0000/001", "value"] == 0.5
    assert by_id.loc["leval/news_summ/0000/000", "value"] == 0.0
    parts = json.loads(by_id.loc["leval/news_summ/0000/000", "parts"])
    assert parts["losses"] == 2 and parts["words"] == 1 and parts["reference_words"] == 10
    judge = engines[0]
    assert judge.closed and judge.calls >= 1 and len(judge.prompts) == 6  # 3 pairs x 2 orders
    assert judge.prompts[0] == judge_prompt("what color is the lake", "blue", "blue", "green")
    assert judge.prompts[1] == judge_prompt("what color is the lake", "blue", "green", "blue")
    games = pd.read_parquet(run.path / GAMES_FILE)
    assert len(games) == 6 and set(games["winner"]) == {"model", "baseline", "tie"}
    assert set(games["baseline"]) == {"turbo"}
    tables = lceval.report.write_report("j", root=run.path.parent)
    j = tables["leval/judge"]
    overall = j[j["task"] == "all"].iloc[0]
    assert (overall["n_wins"], overall["n_draws"], overall["n_losses"]) == (2, 2, 2)
    assert overall["win_rate"] == 50.0
    # judging again reads the stored judgments: no new prompt
    again = lceval.run.score(
        "j",
        root=run.path.parent,
        scorer="leval:judge",
        options={"baseline": str(baseline)},
        progress=False,
    )
    assert len(engines) == 1 or engines[1].prompts == []
    assert list(again["value"].fillna(-1)) == list(df["value"].fillna(-1))


def test_unparsable_judgments_are_errors(tmp_path, scripted_judge, judged_run):
    run, baseline = judged_run
    answers, name, _ = read_baseline(baseline)
    backend = scripted_judge(fixed="I cannot decide.")
    judge = PairwiseJudge(lambda: backend, ResponseStore(tmp_path / JUDGE_FILE), answers, name)
    samples = {s.id: s for s in lceval.run.load_samples(run)}
    s = samples["leval/natural_question/0000/000"]
    prepared = [judge.prepare(s, Response(s.id, "m", "blue", "h"), None)]
    [j] = judge.finish(prepared)
    assert math.isnan(j.value) and "no valid verdict" in j.explanation
    assert j.parts["errors"] == 2
    judge.close()
    assert backend.closed


def test_options_are_checked(judged_run):
    from lceval.benchmarks.leval.judge import pairwise_judge

    run, baseline = judged_run
    with pytest.raises(LcevalError, match="max_new_tokens"):
        pairwise_judge(run, baseline=str(baseline), max_new_tokens=0)
    with pytest.raises(LcevalError, match="does not exist"):
        pairwise_judge(run, baseline=str(baseline) + ".missing")
    with pytest.raises(LcevalError, match="unknown parameter"):
        lceval.run.score("j", root=run.path.parent, scorer="leval:judge", options={"nope": 1})


@pytest.mark.slow
def test_real_embedded_model_as_judge(tmp_path, judged_run):
    """The embedded SmolLM2 on CPU judges three pairs (six prompts, 8 new tokens each)."""
    from lceval.models.base import load_backend

    run, baseline = judged_run
    answers, name, _ = read_baseline(baseline)
    judge = PairwiseJudge(
        lambda: load_backend("hf", None),
        ResponseStore(tmp_path / JUDGE_FILE),
        answers,
        name,
        max_new_tokens=8,
        batch_size=6,
    )
    samples = {s.id: s for s in lceval.run.load_samples(run)}
    texts = {
        "leval/natural_question/0000/000": "blue",
        "leval/natural_question/0000/001": "nine",
        "leval/news_summ/0000/000": "nonsense",
    }
    try:
        prepared = [
            judge.prepare(samples[k], Response(k, "m", v, "h"), None) for k, v in texts.items()
        ]
        out = judge.finish(prepared)
    finally:
        judge.close()
    assert len(out) == 3 and judge.engine is None
    for j in out:
        assert math.isnan(j.value) or 0.0 <= j.value <= 1.0
        assert sum(j.parts[k] for k in ("wins", "ties", "losses", "errors")) == 2
    stored = list(ResponseStore(tmp_path / JUDGE_FILE))
    assert len(stored) == 6 and all(r.model == "SmolLM2-135M-Instruct" for r in stored)


def _score_with(run, baseline, monkeypatch, scripted_judge):
    from lceval.models import base as base_module

    monkeypatch.setattr(base_module, "load_backend", lambda *a, **k: scripted_judge())
    options = {} if baseline is None else {"baseline": baseline}
    df = lceval.run.score(
        run.run_id, root=run.path.parent, scorer="leval:judge", options=options, progress=False
    )
    return df.set_index("sample_id")["value"]


def test_baseline_from_another_run_or_model(judged_run, monkeypatch, scripted_judge, tmp_path):
    """run:RUN/MODEL and model:NAME give the same battles as the same answers in a file."""
    run, path = judged_run
    want = _score_with(run, str(path), monkeypatch, scripted_judge)
    # another run holding the baseline's answers (as `lceval import leval` makes one)
    other = lceval.run.build("other", "leval", run.read_meta().params["leval"], root=tmp_path)
    answers, _, _ = read_baseline(path)
    by_question = {
        s.id: answers[(s.gold.query, s.gold.reference)]
        for s in lceval.run.load_samples(other)
        if (getattr(s.gold, "query", None), getattr(s.gold, "reference", None)) in answers
    }
    lines = [dumps(Response(k, "turbo", v, "h")) for k, v in by_question.items()]
    other.responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (run.path / JUDGE_FILE).unlink()
    got = _score_with(run, "run:other/turbo", monkeypatch, scripted_judge)
    assert got.fillna(-1).equals(want.fillna(-1))
    assert (run.path / "baseline" / "run-other_turbo").is_dir()
    # a second model of the judged run
    with run.responses.open("a", encoding="utf-8") as f:
        f.write("\n".join(dumps(Response(k, "turbo", v, "h2")) for k, v in by_question.items()))
        f.write("\n")
    df = lceval.run.score(
        "j", root=run.path.parent, scorer="leval:judge", options={"baseline": "model:turbo"},
        progress=False,
    )  # fmt: skip
    mine = df[df["model"] == "m"].set_index("sample_id")["value"]
    assert mine.fillna(-1).equals(want.fillna(-1))
    # the baseline against itself: every judged game a tie
    assert set(df[df["model"] == "turbo"]["value"].dropna()) == {0.5}


def test_default_baseline_is_the_runs_only_model(judged_run, monkeypatch, scripted_judge):
    run, _ = judged_run
    values = _score_with(run, None, monkeypatch, scripted_judge)
    assert set(values.dropna()) == {0.5}  # m against its own answers: ties
    assert (run.path / "baseline" / "model-self").is_dir()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("run:", "name the run"),
        ("run:missing", "run 'missing' is not in"),
        ("model:nope", "no responses of model 'nope'"),
        ("run:j/nope", "no responses of model 'nope'"),
    ],
)
def test_bad_baselines_are_one_line(judged_run, spec, message):
    from lceval.benchmarks.leval.judge import pairwise_judge

    run, _ = judged_run
    with pytest.raises(LcevalError, match=message):
        pairwise_judge(run, baseline=spec)
