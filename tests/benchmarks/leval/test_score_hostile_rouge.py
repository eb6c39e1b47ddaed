"""Regression (bench/fuzz_scorers.py): a megabyte of ``A.`` against a six-word reference is
500,000 tokens but only 3M token pairs, under the old pair budget alone, so rouge_score itself ran
and took 1.8 s of CPU (goal: under 1 s). Now a token limit sends it to lceval's equal path."""

from __future__ import annotations

import time

import pytest

from lceval.benchmarks.leval import score as leval_score
from lceval.benchmarks.leval.gold import OpenGold
from lceval.benchmarks.leval.score import ROUGE_TOKENS, rouge_scores, score_leval
from lceval.core.records import Response, Sample

REFERENCE = "The council approved the new budget."


def test_many_tokens_few_pairs_skip_rouge_score(monkeypatch):
    def refuse():
        raise AssertionError("rouge_score called on a megabyte of output")

    monkeypatch.setattr(leval_score, "_rouge_scorer", refuse)
    text = ("A." * 500_000)[:1_000_000]
    assert rouge_scores(text, REFERENCE) == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    # 500,000 pairs, within the pair budget: the token limit alone decides
    one = rouge_scores(text, "budget")
    assert one == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    assert rouge_scores(text, "a")["rouge1"] == pytest.approx(2 / 500_001)


@pytest.mark.parametrize("unit", ["the ", "A. ", "budget council "])
def test_token_limit_path_equals_rouge_score(unit):
    from rouge_score import rouge_scorer

    text = unit * (ROUGE_TOKENS // len(unit.split()) + 7)  # just past the token limit
    official = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    want = official.score(REFERENCE, text)
    got = rouge_scores(text, REFERENCE)
    for k in ("rouge1", "rouge2", "rougeL"):
        assert got[k] == pytest.approx(want[k].fmeasure, abs=1e-12)


def test_one_megabyte_against_a_short_reference_is_fast():
    gold = OpenGold(
        query="q", reference=REFERENCE, evaluation="rouge", metric="rouge", reference_words=6
    )
    s = Sample(
        id="leval/news_summ/0000/000",
        benchmark="leval",
        task="news_summ",
        instruction="q",
        gold=gold,
    )
    text = ("A." * 500_000)[:1_000_000]
    t = time.process_time()
    j = score_leval(s, Response(sample_id=s.id, model="m", text=text, config_hash="h"))
    assert 0.0 <= j.value <= 1.0
    # CPU seconds (steadier than wall time on a shared machine); about 0.3 s now, 1.8 s before.
    assert time.process_time() - t < 1.5
