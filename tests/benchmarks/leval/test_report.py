"""L-Eval aggregation: official averaging of TopicRet and SFiction, L-Eval ROUGE score, the length
gap, the retrieval comparison, several runs side by side."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import lceval.report
import lceval.run
from lceval.benchmarks.leval.gold import ExamGold, OpenGold, SciFiGold, TopicGold
from lceval.benchmarks.leval.report import leval_tables, published
from lceval.core.io import RunDir, dumps, scores_frame
from lceval.core.records import Response, Sample, Score


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


def test_retrieval_table(tmp_path, leval_data):
    pytest.importorskip("bm25s")
    params = {
        "data_path": str(leval_data),
        "tasks": ["tpo", "natural_question"],
        "retrieval": ["full", "bm25"],
        "retrieval_chunk_tokens": 40,
        "retrieval_window": 120,
    }
    run = lceval.run.build("r", "leval", params, root=tmp_path)
    samples = lceval.run.load_samples(run)
    lines = [
        dumps(Response(s.id, "m", "A" if s.meta["retrieval"] == "full" else "B", "h"))
        for s in samples
    ]
    run.responses.write_text("\n".join(lines) + "\n")
    lceval.run.score("r", root=tmp_path, progress=False)
    tables = lceval.report.write_report("r", root=tmp_path)
    ret = tables["leval/retrieval"]
    assert list(ret.columns) == ["bm25", "full"]
    assert ret.loc[("m", "TOEFL"), "full"] == 50.0 and ret.loc[("m", "TOEFL"), "bm25"] == 0.0
    assert (RunDir("r", tmp_path).report / "leval" / "retrieval.csv").exists()
    assert isinstance(json.loads((run.path / "run.json").read_text())["params"], dict)
    assert isinstance(ret, pd.DataFrame)


def test_task_cis_resample_documents_and_lie_stability():
    from lceval.benchmarks.leval.report import document_of, headline
    from lceval.metrics import headline_estimates

    exam = ExamGold(query="q", reference="A", evaluation="exam")
    samples = [_s(f"leval/tpo/{d:04d}/{q:03d}", "tpo", exam) for d in range(3) for q in range(2)]
    assert document_of(samples[3]) == "leval/tpo/0001"
    values = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    scores = scores_frame([_score(s.id, "tpo", v) for s, v in zip(samples, values, strict=True)])
    exam_t = leval_tables(scores, samples)["exam"].iloc[0]
    assert exam_t["score"] == pytest.approx(50.0) and exam_t["low"] <= 50.0 <= exam_t["high"]
    est = headline_estimates(headline(scores, samples), n_resamples=200).iloc[0]
    assert est["estimate"] == pytest.approx(50.0) and est["n_units"] == 3  # three documents
    gold = OpenGold(query="q", reference="a", evaluation="f1", metric="f1", reference_words=1)
    samples = [
        _s(
            f"leval/narrative_qa/0000/{q:03d}{'' if lie else '/nolie'}",
            "narrative_qa",
            gold,
            lie=lie,
        )
        for q in range(2)
        for lie in (True, False)
    ]
    p = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0, "reference_words": 1.0, "words": 1.0}
    scores = scores_frame(
        [
            _score(s.id, "narrative_qa", v, **p, f1=v)
            for s, v in zip(samples, [0.8, 0.4, 0.6, 0.2], strict=True)
        ]
    )
    st = leval_tables(scores, samples)["lie_stability"].set_index("task")
    # LIE mean 0.7, no-LIE mean 0.3: std (ddof=1) / mean
    assert st.loc["narrative_qa", "CV"] == pytest.approx(np.std([0.7, 0.3], ddof=1) / 0.5)
    assert st.loc["all", "CV"] == pytest.approx(st.loc["narrative_qa", "CV"])
