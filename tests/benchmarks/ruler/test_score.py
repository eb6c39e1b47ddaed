"""RULER scoring: official metrics on hand-computed cases; equal to the official post-processing
on any output; never raises."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lceval.benchmarks.ruler.gold import NiahGold, QaGold, RulerGold
from lceval.benchmarks.ruler.score import (
    METRICS,
    postprocess_pred,
    score_ruler,
    string_match_all,
    string_match_part,
)
from lceval.core.records import Response, Sample


def _sample(outputs, metric="string_match_all", task="cwe"):
    return Sample(
        id="ruler/x/4096/0",
        benchmark="ruler",
        task=task,
        instruction="q",
        gold=RulerGold(outputs=tuple(outputs), metric=metric),
        length=4096,
    )


def _resp(text):
    return Response(sample_id="ruler/x/4096/0", model="m", text=text, config_hash="h")


@pytest.mark.parametrize(
    "pred, refs, want",
    [
        ("The numbers are 1234567 and 7654321.", ["1234567", "7654321"], 1.0),
        ("The numbers are 1234567.", ["1234567", "7654321", "1111111", "2222222"], 0.25),
        ("APPLE banana", ["apple", "Banana", "cherry"], 2 / 3),
        ("", ["x"], 0.0),
        ("anything", [], 0.0),
    ],
)
def test_string_match_all(pred, refs, want):
    assert string_match_all(pred, refs) == pytest.approx(want)


@pytest.mark.parametrize(
    "pred, refs, want",
    [
        ("Denver Broncos", ["denver broncos", "Broncos"], 1.0),
        ("It was Carolina.", ["Denver Broncos"], 0.0),
        ("france!", ["France", "the French"], 1.0),
        ("x", [], 0.0),
    ],
)
def test_string_match_part(pred, refs, want):
    assert string_match_part(pred, refs) == want


def test_postprocess_official():
    assert postprocess_pred("  a\x00b\tc \x1f ") == "a\nb\nc"
    assert postprocess_pred(None) == ""


def test_score_ruler_values_and_parts():
    s = _sample(["AAA", "BBB", "CCC", "DDD"])
    j = score_ruler(s, _resp(" aaa, ccc\x07"), None)
    assert j.value == 0.5 and j.explanation == "2/4 references found"
    assert j.parts == {"0:AAA": 1.0, "1:BBB": 0.0, "2:CCC": 1.0, "3:DDD": 0.0}
    assert j.points == dict.fromkeys(j.parts, 1.0)
    qa = Sample(
        id="q",
        benchmark="ruler",
        task="qa_1",
        instruction="q",
        gold=QaGold(("Paris", "paris, France"), "string_match_part", "squad", (3,)),
    )
    j = score_ruler(qa, _resp("PARIS"), None)
    assert j.value == 1.0 and j.parts == {"0:Paris": 1.0, "1:paris, France": 0.0}
    niah = Sample(
        id="n",
        benchmark="ruler",
        task="niah_single_1",
        instruction="q",
        gold=NiahGold(("1234567",), "string_match_all", ("a-b",), (50,)),
    )
    j = score_ruler(niah, _resp("\x00 \n"), None)
    assert j.value == 0.0 and j.explanation == "0/1 references found (empty prediction)"


def test_part_keys_cut_to_120_characters():
    long_ref = "y" * 300
    j = score_ruler(_sample([long_ref]), _resp(long_ref.upper()), None)
    assert j.parts == {("0:" + long_ref)[:120]: 1.0} and j.value == 1.0


def test_no_references_is_nan_with_reason():
    j = score_ruler(_sample([]), _resp("x"), None)
    assert math.isnan(j.value) and "references" in j.explanation


@pytest.mark.parametrize(
    "text",
    [
        "\ud800",  # lone surrogate
        "a\udfffb 1234567 \ud83d",
        "x" * 1_000_000,  # 1 MB of one character
        "\x00" * 1_000_000,
        " " * 1_000_000 + "1234567",
        "\u0130" * 1000,  # lower() grows the text
    ],
)
def test_never_raises_on_hostile_outputs(text):
    for metric in ("string_match_all", "string_match_part"):
        j = score_ruler(_sample(["1234567", "xx"], metric), _resp(text), None)
        assert 0.0 <= j.value <= 1.0
        assert j.value == METRICS[metric](postprocess_pred(text), ["1234567", "xx"])


_ALPHABET = st.sampled_from(list("aAbΣσς \t\n\x00\x07\x1f\x85\u2028.-İi") + ["\ud800"])


@given(
    st.text(_ALPHABET, max_size=40),
    st.lists(st.text(_ALPHABET, max_size=4), min_size=1, max_size=4),
    st.sampled_from(["string_match_all", "string_match_part"]),
)
def test_equal_to_official_postprocessing(text, refs, metric):
    """The scorer's shortcut (no post-processing pass when references are plain) never changes
    a value: it equals the official metric on the official post-processed prediction."""
    j = score_ruler(_sample(refs, metric), _resp(text), None)
    pred = postprocess_pred(text)
    assert j.value == METRICS[metric](pred, refs)
    assert j.explanation.endswith("(empty prediction)") == (not pred)
    assert list(j.parts.values()) == [1.0 if r.lower() in pred.lower() else 0.0 for r in refs]


@given(
    st.text(),
    st.lists(st.text(min_size=1), min_size=1, max_size=5),
    st.sampled_from(["string_match_all", "string_match_part"]),
)
def test_never_raises(text, refs, metric):
    j = score_ruler(_sample(refs, metric), _resp(text), None)
    assert 0.0 <= j.value <= 1.0
