"""CIF-Bench scoring: answer extraction, accuracy, F1, chrF / ROUGE-L / BLEURT; never raises."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lceval.benchmarks.cifbench.gold import CifGold
from lceval.benchmarks.cifbench.score import (
    chrf,
    extract_label,
    extract_labels,
    f1,
    label_matches,
    rouge_l,
    score_cifbench,
    zh_tokens,
)
from lceval.core.records import Response, Sample
from lceval.metrics import lcs_length

YES_NO = ("否", "是", "不是")


@pytest.mark.parametrize(
    ("text", "labels", "want"),
    [
        ("是", YES_NO, "是"),
        ("是。", YES_NO, "是"),
        ("不是", YES_NO, "不是"),  # longest label at a position wins
        ("我认为不是这样的", YES_NO, "不是"),
        ("这是一个难题，答案是：否", YES_NO, "否"),  # after the answer cue
        ("Answer: 1", ("0", "1"), "1"),
        ("１", ("0", "1"), "1"),  # full width
        ("10 apples", ("0", "1"), None),  # ASCII boundaries
        ("The tag is NNP.", ("nn", "nnp"), "nnp"),
        ("The tag is NN.", ("nn", "nnp"), "nn"),
        ("SMALL-TALK", ("small-talk", "uv-part"), "small-talk"),
        ("我不知道", ("正面", "负面"), None),
        ("", ("正面", "负面"), None),
        ("负面。虽然开头说正面", ("正面", "负面"), "负面"),  # first one found
    ],
)
def test_extract_label(text, labels, want) -> None:
    assert extract_label(text, labels) == want


def test_label_matches_non_overlapping() -> None:
    m = label_matches("不是是否", ("是", "不是", "是否"))
    assert [x[2] for x in m] == ["不是", "是否"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("比喻、夸张", ("比喻", "夸张")),
        ("这句话用了夸张和比喻，还有比喻", ("夸张", "比喻")),
        ("无", ()),
    ],
)
def test_extract_labels(text, want) -> None:
    assert extract_labels(text, ("比喻", "夸张", "排比")) == want


def test_f1() -> None:
    assert f1(("a", "b"), ("a", "b")) == 1.0
    assert f1(("a",), ("a", "b")) == pytest.approx(2 / 3)
    assert f1(("c",), ("a",)) == 0.0
    assert f1((), ()) == 1.0
    assert f1((), ("a",)) == 0.0


def _lcs_dp(a, b) -> int:
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            t[i + 1][j + 1] = t[i][j] + 1 if x == y else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]


@given(
    st.lists(st.sampled_from("abcd"), max_size=40), st.lists(st.sampled_from("abcd"), max_size=40)
)
def test_lcs_equals_dynamic_programming(a, b) -> None:
    assert lcs_length(a, b) == _lcs_dp(a, b)


def test_rouge_l_and_chrf() -> None:
    assert rouge_l(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    # LCS 2, P = 2/3, R = 2/4 -> F = 4/7
    assert rouge_l(["a", "x", "c"], ["a", "b", "c", "d"]) == pytest.approx(4 / 7)
    assert rouge_l([], ["a"]) == 0.0
    assert zh_tokens("我爱北京天安门！") == ["我", "爱", "北京", "天安门"]
    assert chrf("今天天气很好。", "今天天气很好。") == pytest.approx(1.0)
    assert chrf("", "今天天气很好。") == 0.0
    assert 0.0 < chrf("今天天气不错。", "今天天气很好。") < 1.0


def _sample(gold: CifGold) -> Sample:
    return Sample(
        id="cifbench/public/1_T/official/i0/d0",
        benchmark="cifbench",
        task="1_T",
        instruction="",
        description="任务指令",
        gold=gold,
    )


def _r(text) -> Response:
    return Response(sample_id="x", model="m", text=text, config_hash="h")


MC = CifGold("正面", "multi-class", ("正面", "负面"), ("正面",))
ML = CifGold("比喻、夸张", "multi-label", ("比喻", "夸张", "排比"), ("比喻", "夸张"))
SIM = CifGold("The weather is nice today.", "similarity")
CRE = CifGold("从前有一只会说话的猫，它每天提醒面包师放糖。", "creative")


def test_score_by_output_type() -> None:
    assert score_cifbench(_sample(MC), _r("正面")).value == 1.0
    assert score_cifbench(_sample(MC), _r("答案是：负面")).value == 0.0
    j = score_cifbench(_sample(ML), _r("用了比喻"))
    assert j.value == pytest.approx(2 / 3) and j.parts["common"] == 1.0
    j = score_cifbench(_sample(SIM), _r("The weather is nice today."))
    assert j.value == pytest.approx(1.0) and set(j.parts) == {"chrF", "ROUGE-L"}
    assert "chrF, offline stand-in for BLEURT" in j.explanation
    j = score_cifbench(_sample(SIM), _r("Nice weather today."), similarity="rouge-l")
    assert j.value == pytest.approx(j.parts["ROUGE-L"]) and "ROUGE-L" in j.explanation
    j = score_cifbench(_sample(CRE), _r("从前有一只猫。"))
    assert 0 < j.value < 1 and "model-based evaluator" in j.explanation
    j = score_cifbench(_sample(CRE), _r("从前有一只猫。"), creative="nan")
    assert math.isnan(j.value) and "model-based" in j.explanation


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"similarity": "bleu"}, "bad similarity option"),
        ({"similarity": "bleurt"}, "bad similarity option"),  # no checkpoint
        ({"creative": "skip"}, "bad creative option"),
    ],
)
def test_bad_options_are_nan(options, message) -> None:
    j = score_cifbench(_sample(SIM), _r("x"), **options)
    assert math.isnan(j.value) and message in j.explanation


def test_empty_reference_is_nan() -> None:
    j = score_cifbench(_sample(CifGold("  ", "similarity")), _r("x"))
    assert math.isnan(j.value) and j.explanation == "empty reference"
    # a classification reference that names no label (e.g. "。") cannot be scored either: an
    # empty label set would otherwise give F1 1.0 to any answer
    for gold in (
        CifGold("。", "multi-label", ("a",), ()),
        CifGold("", "multi-class", ("a",), ("",)),
    ):
        j = score_cifbench(_sample(gold), _r("a"))
        assert math.isnan(j.value) and "names no label" in j.explanation


TEXT = st.one_of(
    st.text(max_size=80),
    st.text(alphabet=st.sampled_from("正面负比喻夸张是否不、，。 \n\ud800abc1０"), max_size=60),
    st.none(),
    st.integers(),
)


@settings(max_examples=150, deadline=None)
@given(TEXT, st.sampled_from([MC, ML, SIM, CRE]))
def test_never_raises_and_stays_in_range(text, gold) -> None:
    j = score_cifbench(_sample(gold), _r(text))
    assert 0.0 <= j.value <= 1.0  # every gold here has a reference: never NaN


def test_bleurt_checkpoint(tmp_path: Path) -> None:
    """A tiny random BERT regression model stands in for a BLEURT checkpoint (same interface)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *"天气很好今不错the weather is nice".split(),
        *"天气很好今不错",
    ]
    (tmp_path / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=1,
    )
    model = BertForSequenceClassification(config).eval()
    ckpt = tmp_path / "bleurt"
    model.save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    j = score_cifbench(_sample(SIM), _r("the weather is nice"), bleurt_checkpoint=str(ckpt))
    assert not math.isnan(j.value) and 0.0 <= j.value <= 1.0
    assert j.value == min(1.0, max(0.0, j.parts["BLEURT_raw"]))
    assert "BLEURT" in j.explanation and "stand-in" not in j.explanation
    assert {"chrF", "ROUGE-L", "BLEURT"} <= set(j.parts)
    bad = score_cifbench(_sample(SIM), _r("x"), bleurt_checkpoint=str(tmp_path / "missing"))
    assert math.isnan(bad.value) and bad.explanation.startswith("similarity failed")


def test_megabyte_output_skips_the_unasked_rouge_l_and_stays_fast():
    import time

    from lceval.benchmarks.cifbench.score import ROUGE_CHARS, similarity_scores

    huge = "A." * 500_000
    t = time.process_time()
    value, parts, name = similarity_scores(huge, "今天天气很好", "chrf")
    assert name == "chrF" and "ROUGE-L" not in parts and 0.0 <= value <= 1.0
    assert time.process_time() - t < 30  # generous: a hang guard, not a timing assertion
    _, parts, _ = similarity_scores("A." * (ROUGE_CHARS // 2), "A. B.", "chrf")
    assert "ROUGE-L" in parts  # within the bound both stand-ins are reported
    _, parts, name = similarity_scores("今天" * 10, "今天天气很好", "rouge-l")
    assert name == "ROUGE-L" and "ROUGE-L" in parts
