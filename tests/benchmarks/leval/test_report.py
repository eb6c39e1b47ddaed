"""L-Eval aggregation: official averaging of TopicRet and SFiction, L-Eval ROUGE score, the length
gap, the retrieval comparison, several runs side by side."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lceval import pipeline
from lceval.benchmarks.leval.gold import OpenGold, SciFiGold, TopicGold
from lceval.benchmarks.leval.report import compare_runs, leval_tables, published
from lceval.io import RunDir, dumps, scores_frame
from lceval.records import Response, Sample, Score


def _s(sid, task, gold, **meta):
    return Sample(
        id=sid,
        benchmark="leval",
        task=task,
        instruction="q",
        gold=gold,
        meta={"retrieval": "full", **meta},
    )


def _score(sid, task, value, **parts):
    return Score(sid, "m", "leval", task, "leval", "1", value, parts=parts)


def test_topic_and_sci_fi_averages_follow_auto_eval():
    topic = [
        TopicGold(query="q", reference="r", evaluation="exam", topic_index=i) for i in (0, 0, 1)
    ]
    samples = [_s(f"t{i}", "topic_retrieval_longchat", g) for i, g in enumerate(topic)]
    fact = SciFiGold(query="q", reference="True [fact: False]", evaluation="exam", judgment="fact")
    loyal = SciFiGold(
        query="q", reference="True [fact: False]", evaluation="exam", judgment="loyalty"
    )
    samples += [_s("l0", "sci_fi", loyal), _s("l1", "sci_fi", loyal), _s("f0", "sci_fi", fact)]
    scores = scores_frame(
        [
            _score("t0", "topic_retrieval_longchat", 1.0),
            _score("t1", "topic_retrieval_longchat", 0.0),
            _score("t2", "topic_retrieval_longchat", 1.0),
            _score("l0", "sci_fi", 1.0, loyalty=1.0),
            _score("l1", "sci_fi", 1.0, loyalty=1.0),
            _score("f0", "sci_fi", 0.0, fact=0.0),
        ]
    )
    t = leval_tables(scores, samples)["exam_table"].loc[("m", "full")]
    assert t["TopicRet"] == pytest.approx(100 * (0.5 + 1.0) / 2)  # mean of position means
    assert t["SFiction"] == pytest.approx(50.0)  # (loyalty 1.0 + fact 0.0) / 2


def test_ngram_geometric_mean_and_length_gap():
    gold = OpenGold(
        query="q", reference="a b", evaluation="rouge", metric="rouge", reference_words=2
    )
    samples = [_s("a", "news_summ", gold, lie=True), _s("b", "news_summ", gold, lie=False)]
    p = {"rouge1": 0.8, "rouge2": 0.1, "rougeL": 0.8, "f1": 0.5, "reference_words": 2.0}
    scores = scores_frame(
        [
            _score("a", "news_summ", 0.8, **p, words=3.0),
            _score("b", "news_summ", 0.8, **p, words=12.0),
        ]
    )
    tables = leval_tables(scores, samples)
    ng = tables["ngram"].set_index("lie")
    assert ng.loc[True, "score"] == pytest.approx((80 * 10 * 80) ** (1 / 3))
    lie = tables["lie"].set_index("lie")
    assert lie.loc[True, "delta_L"] == 1.0 and lie.loc[False, "delta_L"] == 10.0


def test_published_tables_hold_the_paper_numbers():
    exam = published("exam").set_index("model")
    assert exam.loc["GPT-4-32k", "TOEFL"] == 84.38 and exam.loc["GPT-4-32k", "Avg"] == 73.11
    assert published("judge").set_index("model").loc["Claude-100k", "gpt4_win_rate"] == 60.94


def test_retrieval_table_and_compare_runs(tmp_path, leval_data):
    pytest.importorskip("bm25s")
    params = {
        "data_path": str(leval_data),
        "tasks": ["tpo", "natural_question"],
        "retrieval": ["full", "bm25"],
        "retrieval_chunk_tokens": 40,
        "retrieval_window": 120,
    }
    run = pipeline.build("r", "leval", params, root=tmp_path)
    samples = pipeline.load_samples(run)
    lines = [
        dumps(Response(s.id, "m", "A" if s.meta["retrieval"] == "full" else "B", "h"))
        for s in samples
    ]
    run.responses.write_text("\n".join(lines) + "\n")
    pipeline.score("r", root=tmp_path, progress=False)
    tables = pipeline.report("r", root=tmp_path)
    ret = tables["leval/retrieval"]
    assert list(ret.columns) == ["bm25", "full"]
    assert ret.loc[("m", "TOEFL"), "full"] == 50.0 and ret.loc[("m", "TOEFL"), "bm25"] == 0.0
    both = compare_runs(["r", "r"], root=tmp_path)
    assert list(both.columns) == ["r bm25", "r full"]
    assert (RunDir("r", tmp_path).report / "leval" / "retrieval.csv").exists()
    assert isinstance(json.loads((run.path / "run.json").read_text())["params"], dict)
    assert isinstance(ret, pd.DataFrame)
