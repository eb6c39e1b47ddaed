"""ManyIFEval scoring: each of the 15 Table-4 instructions through lm-eval's checkers."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lceval.benchmarks.manyifeval import BENCHMARK, checkers
from lceval.benchmarks.manyifeval.checkers import (
    CHECK_BUDGET,
    WORK_ESTIMATES,
    ensure_checkers,
    estimate_work,
)
from lceval.benchmarks.manyifeval.gold import INSTRUCTION_IDS, ManyIFEvalGold
from lceval.benchmarks.manyifeval.score import check_response, loose_variants, score_manyifeval
from lceval.core.errors import LcevalError
from lceval.core.records import Response, Sample

# (instruction id, kwargs, a response that follows it, one that violates it)
CASES = [
    (
        "keywords:existence",
        {"keywords": ["apple", "river"]},
        "I ate an apple by the river.",
        "I ate a pear by the lake.",
    ),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "at least"},
        "The cat saw another cat.",
        "The cat slept.",
    ),
    (
        "keywords:forbidden_words",
        {"forbidden_words": ["dog", "tree"]},
        "A cat sat on the mat.",
        "A dog sat under a tree.",
    ),
    (
        "keywords:letter_frequency",
        {"letter": "z", "let_frequency": 3, "let_relation": "less than"},
        "The bee went buzz.",
        "Zany zebras buzz.",
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "First paragraph.\n***\nSecond paragraph.",
        "Only one paragraph here.",
    ),
    (
        "length_constraints:number_words",
        {"num_words": 5, "relation": "at least"},
        "one two three four five six",
        "one two",
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "less than"},
        "It rains. It pours.",
        "It rains. It pours. It stops. It dries.",
    ),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "Send it to [name] at [address].",
        "Send it to [name].",
    ),
    (
        "detectable_format:number_bullet_lists",
        {"num_bullets": 2},
        "* first point\n* second point",
        "* only point",
    ),
    ("detectable_format:title", {}, "<<My Trip>>\nWe went to Japan.", "My Trip\nWe went to Japan."),
    (
        "change_case:english_capital",
        {},
        "THIS IS A SHORT STORY ABOUT THE WEATHER IN THE CITY TODAY.",
        "This is a short story about the weather in the city today.",
    ),
    (
        "change_case:english_lowercase",
        {},
        "this is a short story about the weather in the city today.",
        "This Is A Short Story About The Weather In The City Today.",
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "I LOVE THE SEA and the sky.",
        "i love the sea and the sky.",
    ),
    ("startend:quotation", {}, '"Hello there, friend."', "Hello there, friend."),
    ("punctuation:no_comma", {}, "No commas appear here.", "Yes, a comma appears."),
]

# Loose only: strict fails, the loose variants (first line removed, asterisks removed) pass.
LOOSE_CASES = [
    ("startend:quotation", {}, 'Sure, here it is:\n"Hello there friend."'),
    ("punctuation:no_comma", {}, "Sure, here it is:\nNo commas appear here."),
    ("keywords:forbidden_words", {"forbidden_words": ["sure"]}, "Sure thing!\nHere is my answer."),
    (
        "change_case:english_lowercase",
        {},
        "Here is my answer:\nthis is a short story about the weather in the city today.",
    ),
]


def test_the_fifteen_instructions_are_covered() -> None:
    assert sorted(c[0] for c in CASES) == sorted(INSTRUCTION_IDS)
    assert len(INSTRUCTION_IDS) == 15
    registry = ensure_checkers()
    assert all(i in registry.INSTRUCTION_DICT for i in INSTRUCTION_IDS)


@pytest.mark.parametrize(("iid", "kwargs", "good", "bad"), CASES, ids=[c[0] for c in CASES])
def test_follow_and_violate(iid: str, kwargs: dict, good: str, bad: str) -> None:
    (v,) = check_response([iid], [kwargs], good)
    assert (v.strict, v.loose, v.error) == (True, True, None)
    (v,) = check_response([iid], [kwargs], bad)
    assert (v.strict, v.loose) == (False, False)


@pytest.mark.parametrize(("iid", "kwargs", "text"), LOOSE_CASES, ids=[c[0] for c in LOOSE_CASES])
def test_loose_accepts_what_strict_rejects(iid: str, kwargs: dict, text: str) -> None:
    (v,) = check_response([iid], [kwargs], text)
    assert (v.strict, v.loose) == (False, True)


def test_empty_response_follows_nothing() -> None:
    out = check_response(list(INSTRUCTION_IDS), [{} if c[1] == {} else c[1] for c in CASES], "  ")
    assert not any(v.strict or v.loose for v in out)


def test_loose_variants_match_lm_eval_order() -> None:
    v = loose_variants("*a*\nb\nc*")
    assert v == ["*a*\nb\nc*", "a\nb\nc", "b\nc*", "*a*\nb", "b", "b\nc", "a\nb", "b"]


def test_bad_kwargs_and_bad_regex_are_undecided_with_a_reason() -> None:
    out = check_response(
        ["keywords:frequency", "keywords:existence", "no:such_id", "keywords:letter_frequency"],
        [
            {"keyword": "cat", "frequency": 2, "relation": "around"},
            {"keywords": ["(unclosed"]},
            {},
            {"letter": 5, "let_frequency": 2, "let_relation": "at least"},
        ],
        "some (unclosed text",
    )
    assert [v.strict for v in out] == [None] * 4  # undecided, never "not followed"
    assert [v.loose for v in out] == [None] * 4
    assert all(v.error for v in out)
    assert "relation" in (out[0].error or "") and "error" in (out[1].error or "")


_KWARGS = {c[0]: c[1] for c in CASES}
_ALPHABET = st.sampled_from(list("abcXYZ ,.!?*\"'<>[]-\n#") + ["***", "<<t>>", "\n\n", "É", "日本"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=300), st.lists(_ALPHABET, max_size=120).map("".join)))
def test_no_checker_raises_and_matches_lm_eval(text: str) -> None:
    from lm_eval.tasks.ifeval import utils

    ids = list(INSTRUCTION_IDS)
    kws = [_KWARGS[i] for i in ids]
    out = check_response(ids, kws, text, "prompt")
    inp = utils.InputExample(key=0, instruction_id_list=ids, prompt="prompt", kwargs=kws)
    try:
        strict = utils.test_instruction_following_strict(inp, text).follow_instruction_list
        loose = utils.test_instruction_following_loose(inp, text).follow_instruction_list
    except Exception:  # lm-eval itself raised: ours must still answer (and did)
        return
    assert [v.strict for v in out] == strict
    assert [v.loose for v in out] == loose


def _sample(ids: list[str], kws: list[dict]) -> Sample:
    return Sample(
        id="s1",
        benchmark="manyifeval",
        task="unique",
        instruction="Write.",
        gold=ManyIFEvalGold(prompt="Write.", instruction_id_list=tuple(ids), kwargs=tuple(kws)),
        meta={"n_instructions": len(ids)},
    )


def test_score_value_is_prompt_level_and_parts_per_instruction() -> None:
    s = _sample(["punctuation:no_comma", "startend:quotation"], [{}, {}])
    r = Response("s1", "m", '"No commas here."', "h")
    sc = score_manyifeval(s, r, None)
    assert sc.value == 1.0 and sc.parts["inst_level_strict"] == 1.0
    sc = score_manyifeval(s, Response("s1", "m", "No commas here.", "h"), None)
    assert sc.value == 0.0
    assert sc.parts["strict:0:punctuation:no_comma"] == 1.0
    assert sc.parts["strict:1:startend:quotation"] == 0.0
    assert sc.parts["inst_level_strict"] == 0.5
    assert "startend:quotation" in sc.explanation


@pytest.mark.parametrize(
    ("gold", "match"),
    [
        ({}, "instruction_id_list"),
        ({"instruction_id_list": ["punctuation:no_comma"], "kwargs": []}, "1 instruction ids"),
        ({"instruction_id_list": "punctuation:no_comma", "kwargs": [{}]}, "expected a list"),
        ({"instruction_id_list": ["x"], "kwargs": [[]]}, r"kwargs\[0\]: expected a mapping"),
    ],
)
def test_malformed_gold_fails_at_load_naming_the_sample(gold: dict, match: str) -> None:
    s = Sample(id="s2", benchmark="manyifeval", task="unique", instruction="x", gold=gold)
    with pytest.raises(LcevalError, match=f"sample s2: bad gold: .*{match}"):
        BENCHMARK.parse_gold(s)


def test_gold_parses_the_builders_json_once() -> None:
    raw = {
        "key": "k",
        "prompt": "p",
        "task_prompt": "t",
        "instruction_id_list": ["keywords:existence"],
        "kwargs": [{"keywords": ["apple"]}],
        "unknown_later_key": 1,
    }
    s = BENCHMARK.parse_gold(
        Sample(id="s", benchmark="manyifeval", task="repeated", instruction="x", gold=raw)
    )
    assert s.gold == ManyIFEvalGold(
        "k", "p", "t", ("keywords:existence",), ({"keywords": ["apple"]},)
    )
    assert BENCHMARK.parse_gold(s) is s


@settings(max_examples=100, deadline=None)
@given(text=st.one_of(st.text(max_size=200), st.lists(_ALPHABET, max_size=80).map("".join)))
def test_memoised_word_tokenize_equals_nltk(text: str) -> None:
    import nltk

    ensure_checkers()
    assert list(checkers._word_tokenize(text)) == nltk.word_tokenize(text)


# Work budget: lm-eval's quadratic regexes are not run on hostile text -------------------------
PLACEHOLDERS = "detectable_content:number_placeholders"


def test_placeholder_flood_is_undecided_fast_not_failed() -> None:
    text = "[" * 200_000  # lm-eval's own check takes hours on this (quadratic backtracking)
    t = time.perf_counter()
    (v,) = check_response([PLACEHOLDERS], [{"num_placeholders": 1}], text)
    assert time.perf_counter() - t < 1.0
    assert v.strict is None and v.loose is None
    assert "not checked" in (v.error or "") and "budget" in (v.error or "")


def test_an_undecided_instruction_makes_the_prompt_nan_unless_another_failed() -> None:
    flood = "[" * 200_000
    s = _sample(["punctuation:no_comma", PLACEHOLDERS], [{}, {"num_placeholders": 1}])
    j = score_manyifeval(s, Response("s1", "m", flood, "h"), None)
    assert math.isnan(j.value) and "not checked" in j.explanation
    assert j.parts["strict:0:punctuation:no_comma"] == 1.0
    assert math.isnan(j.parts[f"strict:1:{PLACEHOLDERS}"])
    assert j.parts["inst_level_strict"] == 1.0  # over the decided instructions
    assert math.isnan(j.parts["prompt_level_loose"])
    j = score_manyifeval(s, Response("s1", "m", flood + ",", "h"), None)
    assert j.value == 0.0 and j.parts["inst_level_strict"] == 0.0  # the comma decides it
    assert "not followed: punctuation:no_comma" in j.explanation


def test_loose_is_decided_when_another_variant_passes() -> None:
    # strict: the first line floods the budget; loose: without it the placeholders are found
    text = "[" * 200_000 + "\nSee [a] and [b]."
    (v,) = check_response([PLACEHOLDERS], [{"num_placeholders": 2}], text)
    assert v.strict is None and v.loose is True


@pytest.mark.parametrize(
    ("iid", "text"),
    [
        (PLACEHOLDERS, "[" * 16_000),
        ("detectable_format:number_bullet_lists", "x" + "\n" * 16_000 + "x"),
        ("detectable_format:title", "<<" * 8_000),
        ("detectable_content:postscript", "x" + " " * 16_000 + "x"),
    ],
)
def test_every_quadratic_pattern_is_over_budget(iid: str, text: str) -> None:
    assert iid in WORK_ESTIMATES
    assert estimate_work(iid, text) > CHECK_BUDGET


@pytest.mark.parametrize(
    "text",
    [
        "Send it to [name] at [address].\n" * 2_000,
        "<<A Title>>\n\n" + "* point one\n- point two\n\n" * 2_000,
        "[x] " * 50_000,
        ("word " * 30 + "\n\n") * 2_000,
        "P.S. " + "a sentence. " * 20_000,
    ],
)
def test_ordinary_long_text_stays_within_budget(text: str) -> None:
    for iid in WORK_ESTIMATES:
        assert estimate_work(iid, text) <= CHECK_BUDGET, iid


def test_budget_edge_checks_below_and_refuses_above() -> None:
    # One line of k unclosed "[": the bound is k * (k + 1) (tail) + k (length), just below or
    # above the budget; below it the verdict is lm-eval's (no "]": zero placeholders found).
    k = int(CHECK_BUDGET**0.5) - 10
    below = "[" * k
    assert estimate_work(PLACEHOLDERS, below) <= CHECK_BUDGET
    (v,) = check_response([PLACEHOLDERS], [{"num_placeholders": 1}], below)
    assert (v.strict, v.loose, v.error) == (False, False, None)
    above = "[" * (k + 20)
    assert estimate_work(PLACEHOLDERS, above) > CHECK_BUDGET
    (v,) = check_response([PLACEHOLDERS], [{"num_placeholders": 1}], above)
    assert v.strict is None and v.error


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(_ALPHABET, max_size=400).map("".join))
def test_work_estimate_bounds_the_placeholder_regex(text: str) -> None:
    import re

    # The regex engine's scan for \[.*?\] by hand: an attempt at a "[" scans to the next "]"
    # (a match; the scan is consumed) or to the line end (no match; retry at the next "[").
    steps, found, i = 0, 0, 0
    while (p := text.find("[", i)) >= 0:
        end = len(text) if (e := text.find("\n", p)) < 0 else e
        close = text.find("]", p, end)
        if close >= 0:
            steps, found, i = steps + close - p, found + 1, close + 1
        else:
            steps, i = steps + end - p, p + 1
    assert found == len(re.findall(r"\[.*?\]", text))  # the model above is the regex's
    assert steps <= estimate_work(PLACEHOLDERS, text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(st.sampled_from([" ", "\n", "\t", "*", "-", "x", "\n\n"]), max_size=300))
def test_work_estimate_bounds_the_bullet_regexes(text: list[str]) -> None:
    s = "".join(text)
    # Each line start (0 and after every "\n") costs the whitespace run that follows it, twice.
    starts = [0, *(i + 1 for i, c in enumerate(s) if c == "\n")]
    steps = 0
    for q in starts:
        end = q
        while end < len(s) and s[end].isspace():
            end += 1
        steps += 2 * (end - q)
    assert steps <= estimate_work("detectable_format:number_bullet_lists", s)
