"""Reasoning models end to end on stored responses: every benchmark scores the answer alone (a
property test over the regression fixtures), a response with no answer within its thinking budget
is NaN with the reason and counted per task, and the report, results.json, samples.html and
``lceval plan`` show the thinking."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lceval.benchmarks import registry
from lceval.cli import main
from lceval.core.io import RunDir, read_records, write_jsonl
from lceval.core.records import Context, Response, Sample
from lceval.models import thinking

FIXTURES = Path(__file__).parents[1] / "fixtures" / "regression"
KEYS = sorted(p.name for p in FIXTURES.iterdir() if (p / "samples.jsonl").exists())


def _fixture(key: str) -> tuple[list[Sample], dict[str, Context], list[Response]]:
    samples = registry.load_samples(read_records(FIXTURES / key / "samples.jsonl", Sample))
    contexts = {c.id: c for c in read_records(FIXTURES / key / "contexts.jsonl", Context)}
    ok = [
        r
        for r in read_records(FIXTURES / key / "responses.jsonl", Response)
        if r.finish_reason != "error"
    ]
    return samples, contexts, ok[:6]


def _comparable(j) -> tuple:
    parts = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in j.parts.items()}
    value = None if math.isnan(j.value) else j.value
    return value, parts, j.explanation


@pytest.mark.parametrize("key", KEYS)
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(thought=st.text(max_size=300).filter(lambda t: "</think>" not in t))
def test_same_answer_with_and_without_thinking_scores_the_same(key: str, thought: str) -> None:
    samples, contexts, responses = _fixture(key)
    by_id = {s.id: s for s in samples}
    bench = registry.get(key)
    spec = bench.scorer(None)
    if spec.score is None:  # a batch judge only: nothing per response to compare
        pytest.skip(f"{key}: default scorer judges in batches")
    for r in responses:
        s = by_id[r.sample_id]
        ctx = contexts.get(s.context_id) if s.context_id else None
        answer = r.text.lstrip("\n")
        raw = f"<think>{thought}</think>\n\n{answer}"
        sp = thinking.split(raw, "</think>", "<think>")
        assert sp.answer == answer and not sp.unfinished
        plain = Response(sample_id=r.sample_id, model="m", text=answer, config_hash="h")
        thought_r = Response(
            sample_id=r.sample_id,
            model="m",
            text=sp.answer,
            config_hash="h",
            reasoning=sp.reasoning,
            reasoning_tokens=len(thought),
        )
        assert _comparable(spec.judge(s, plain, ctx)) == _comparable(spec.judge(s, thought_r, ctx))


# a run with thinking: report, results.json, samples.html, plan ---------------------------------
ROWS = [
    {
        "key": k,
        "prompt": f"Write note {k} with at least 3 words.",
        "instruction_id_list": ["length_constraints:number_words"],
        "kwargs": [{"num_words": 3, "relation": "at least"}],
    }
    for k in range(4)
]


@pytest.fixture()
def thinking_run(tmp_path: Path) -> tuple[Path, str]:
    data = tmp_path / "ifeval.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "outputs"
    argv = ["--outputs", str(out), "build", "manyifeval", "--run-id", "t", "-p", f"path={data}"]
    assert main(argv) == 0
    rd = RunDir("t", out)
    ids = [json.loads(line)["id"] for line in rd.samples.read_text().splitlines()]
    rs = [
        Response(
            sample_id=i,
            model="m",
            text="one two three four" if k < 3 else "",
            config_hash="h",
            reasoning=f"let me think {k} " * (k + 1),
            reasoning_tokens=10 * (k + 1),
            thinking_unfinished=k == 3,
            finish_reason="stop" if k < 3 else "length",
        )
        for k, i in enumerate(ids)
    ]
    write_jsonl(rd.responses, rs)
    return out, "t"


def test_no_answer_is_nan_with_the_reason_and_reported(thinking_run) -> None:
    import pandas as pd

    out, rid = thinking_run
    assert main(["--outputs", str(out), "score", rid]) == 0
    assert main(["--outputs", str(out), "report", rid]) == 0
    rd = RunDir(rid, out)
    scores = pd.read_parquet(rd.scores)
    nan = scores[scores["value"].isna()]
    assert list(nan["explanation"]) == ["no answer after 40 thinking tokens"]
    assert (scores["value"].dropna() == 1.0).all()
    table = pd.read_csv(Path(rd.report) / "reasoning_by_task.csv")
    row = table.iloc[0]
    assert (row["responses"], row["no_answer"], row["reasoning_tokens_mean"]) == (4, 1, 25.0)
    assert (Path(rd.figures) / "reasoning_score_vs_thinking.png").exists()
    index = (Path(rd.report) / "index.html").read_text()
    assert "no caption declared" not in index  # reasoning.CAPTIONS and manyifeval's
    doc = json.loads((Path(rd.report) / "results.json").read_text())
    task = next(t for t in doc["tasks"] if t["benchmark"] == "manyifeval")
    assert (task["reasoning_tokens"], task["n_no_answer"], task["n_nan"]) == (25.0, 1, 1)
    page = (Path(rd.report) / "samples.html").read_text()
    assert "thinking: 40 tokens" in page and "no answer within the thinking budget" in page


def test_run_without_thinking_has_no_reasoning_outputs(tmp_path: Path) -> None:
    data = tmp_path / "ifeval.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n")
    out = tmp_path / "outputs"
    argv = ["--outputs", str(out), "build", "manyifeval", "--run-id", "p", "-p", f"path={data}"]
    assert main(argv) == 0
    rd = RunDir("p", out)
    sid = json.loads(rd.samples.read_text().splitlines()[0])["id"]
    write_jsonl(rd.responses, [Response(sample_id=sid, model="m", text="a b c d", config_hash="h")])
    assert main(["--outputs", str(out), "score", "p"]) == 0
    assert main(["--outputs", str(out), "report", "p"]) == 0
    assert not (Path(rd.report) / "reasoning_by_task.csv").exists()
    doc = json.loads((Path(rd.report) / "results.json").read_text())
    assert all("reasoning_tokens" not in t for t in doc["tasks"])


def test_plan_counts_the_thinking_budget(thinking_run, capsys) -> None:
    out, rid = thinking_run
    assert main(["--outputs", str(out), "plan", rid, "--max-thinking-tokens", "100"]) == 0
    printed = capsys.readouterr().out
    assert "thinking_budget" in printed and "400" in printed
    meta = json.loads((out / rid / "run.json").read_text())
    assert meta["plan"]["thinking_budget"] == 400
