"""CIF-Bench's model-based evaluator: prompt, score parsing, rules for other types, resumption,
and the pipeline end to end with a scripted backend."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import lceval.report
import lceval.run
from lceval.benchmarks.cifbench.gold import CifGold
from lceval.benchmarks.cifbench.judge import (
    JUDGE_FILE,
    ModelJudge,
    judge_prompt,
    model_judge,
    parse_score,
    parse_sub_scores,
)
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Response, Sample
from lceval.core.store import ResponseStore
from lceval.models.base import Backend


class Scripted(Backend):
    """A backend answering every prompt with ``answer`` (or an error), counting prompts."""

    name = "scripted-judge"

    def __init__(self, answer: str = "理由：一致。\n分数：8", error: bool = False) -> None:
        self.answer, self.error, self.prompts = answer, error, []

    def generate(self, samples, contexts, config):
        self.prompts.extend(s.instruction for s in samples)
        return [
            Response(
                sample_id=s.id,
                model=self.name,
                text="" if self.error else self.answer,
                config_hash=config.hash(),
                finish_reason="error" if self.error else "stop",
                error="boom" if self.error else None,
            )
            for s in samples
        ]

    def info(self):
        return {"backend": "scripted"}

    def close(self):
        pass


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("分数：8", 0.8),
        ("分数: 7.5\n", 0.75),
        ("创造性：9\n总分：6", 0.6),
        ("我给 7/10", 0.7),
        ("分数：15", 1.0),
        ("分数：-3", 0.0),
        ("先说分数：2，再改为分数：9", 0.9),  # the last one
        ("没有分数", None),
        ("", None),
    ],
)
def test_parse_score(text, want) -> None:
    got = parse_score(text)
    assert got == (pytest.approx(want) if want is not None else None)


def test_parse_sub_scores() -> None:
    text = "创造性：7\n流畅性：8\n指令遵循程度：9\n置信度：6\n分数：7"
    assert parse_sub_scores(text) == {
        "creativity": 7.0,
        "fluency": 8.0,
        "instruction_following": 9.0,
        "confidence": 6.0,
    }


def test_prompt_has_instruction_input_reference_output() -> None:
    p = judge_prompt("判断情感。", "很好吃", "正面", "负面", "multi-class")
    for part in ("判断情感。", "很好吃", "正面", "负面", "单选分类", "分数：X"):
        assert part in p
    assert "创造性" in judge_prompt("写故事", "", "从前", "很久以前", "creative")
    assert "（无）" in judge_prompt("i", "", "r", "o", "similarity")


def _sample(i: int, gold: CifGold) -> Sample:
    return Sample(
        id=f"cifbench/public/1_T/official/i0/d{i}",
        benchmark="cifbench",
        task="1_T",
        instruction="",
        description="判断情感。",
        context_id=f"c{i}",
        gold=gold,
    )


MC = CifGold("正面", "multi-class", ("正面", "负面"), ("正面",))
SIM = CifGold("今天天气很好。", "similarity")
CRE = CifGold("从前有一只猫。", "creative")


def _judge(tmp_path: Path, backend: Scripted, types=("multi-class", "creative")) -> ModelJudge:
    return ModelJudge(lambda: backend, ResponseStore(tmp_path / JUDGE_FILE), tuple(types))


def test_judge_and_rules(tmp_path: Path) -> None:
    backend = Scripted("创造性：6\n流畅性：9\n分数：8")
    judge = _judge(tmp_path, backend)
    items = [
        judge.prepare(
            _sample(0, MC), Response("a", "m", "负面", "h"), Context("c0", "很好吃", 0, "")
        ),
        judge.prepare(_sample(1, SIM), Response("b", "m", "今天天气很好。", "h"), None),
        judge.prepare(_sample(2, CRE), Response("c", "m", "很久以前", "h"), None),
    ]
    assert [i.n_items for i in items] == [1, 0, 1]
    out = judge.finish(items)
    assert out[0].value == pytest.approx(0.8) and "scripted-judge" in out[0].explanation
    assert out[1].value == pytest.approx(1.0) and "chrF" in out[1].explanation  # rules
    assert out[2].parts["creativity"] == 6.0 and out[2].parts["judge_score"] == 8.0
    assert out[0].details[0]["judge"] == "scripted-judge"
    assert "很好吃" in backend.prompts[0] and "负面" in backend.prompts[0]
    assert len(backend.prompts) == 2
    # resumable: the same prompts are answered from the store, not asked again
    again = _judge(tmp_path, backend).finish(items)
    assert [j.value for j in again] == [j.value for j in out]
    assert len(backend.prompts) == 2
    judge.close()


def test_judge_failures_are_nan(tmp_path: Path) -> None:
    item = _judge(tmp_path, Scripted()).prepare(_sample(0, MC), Response("a", "m", "x", "h"), None)
    j = _judge(tmp_path / "e", Scripted(error=True)).finish([item])[0]
    assert math.isnan(j.value) and "failed" in j.explanation
    j = _judge(tmp_path / "n", Scripted("我觉得还行")).finish([item])[0]
    assert math.isnan(j.value) and "gave no score" in j.explanation


def test_model_judge_options(tmp_path: Path) -> None:
    from lceval.core.io import RunDir

    run = RunDir("r", tmp_path)
    j = model_judge(run, types="creative", max_new_tokens=32)
    assert j.types == ("creative",) and j.max_new_tokens == 32 and j.engine is None
    with pytest.raises(LcevalError, match="unknown essay"):
        model_judge(run, types="creative,essay")
    with pytest.raises(LcevalError, match="batch_size must be >= 1, got 0"):
        model_judge(run, batch_size=0)
    with pytest.raises(LcevalError, match="creative must be one of similarity, "):
        model_judge(run, creative="maybe")
    with pytest.raises(LcevalError, match="has no option"):
        model_judge(run, backend_options={"colour": 1})


def test_pipeline_scores_with_the_judge(demo, tmp_path: Path, monkeypatch) -> None:
    from lceval.models import base

    backend = Scripted("分数：5")
    monkeypatch.setattr(base, "load_backend", lambda *a, **k: backend)
    params = {"public_dir": str(demo["public_dir"]), "private_dir": str(demo["private_dir"])}
    run = lceval.run.build("cj", "cifbench", params, root=tmp_path)
    answers = [
        Response(s.id, "m", "正面" if "Sentiment" in s.task else "文本", "h")
        for s in run.read_samples()
    ]
    ResponseStore(run.responses).append(answers)
    scores = lceval.run.score(
        "cj",
        root=tmp_path,
        scorer="cifbench:judge",
        options={"types": "creative"},
        progress=False,
    )
    by_task = scores.groupby("task")["value"].mean()
    assert by_task["903_Demo_Story_Writing"] == pytest.approx(0.5)  # judged
    assert len(backend.prompts) == 3 + 3  # story: 3 public inputs, 1 private input x 3
    assert scores["scorer"].unique().tolist() == ["cifbench:judge"]
    assert (run.path / "cifbench_judge_details.parquet").exists()
    tables = lceval.report.write_report("cj", root=tmp_path)
    used = tables["cifbench/metrics_used"]
    assert set(used["metric"].dropna()) >= {"model-based evaluator", "accuracy", "F1", "chrF"}
