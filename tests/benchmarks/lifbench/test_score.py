"""LIFEval ARS scorers: hand-computed golden cases per task, robustness, helpers."""

from __future__ import annotations

import json
import math
import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lceval.benchmarks.lifbench import BENCHMARK
from lceval.benchmarks.lifbench import rubric as R
from lceval.benchmarks.lifbench import score as L
from lceval.benchmarks.lifbench import score_multidoc as MD
from lceval.benchmarks.lifbench.gold import GOLD as GOLD_TYPES
from lceval.core.records import Context, Judgement, Response, Sample

E = [
    "aaaaaaaa11111111aaaaaaaa11111111",
    "bbbbbbbb22222222bbbbbbbb22222222",
    "cccccccc33333333cccccccc33333333",
    "Write a short poem about the sea.",
    "dddddddd44444444dddddddd44444444",
]
LIST_TEXT = "\n".join(f"{i}. {e}" for i, e in enumerate(E, 1))
LIST_CTX = Context("lifbench/List/3072", LIST_TEXT, 60, "o200k_base")
INDEX = L.ListIndex.from_elements(E)

T1, T2 = "The sky is blue today.", "Water is wet."
F1, A1, A2 = "Fake topic sentence.", "Cats are better than dogs.", "Fake sentence here."


def _ks(text: str, true: bool, order: int) -> dict:
    return {
        "text": text,
        "order": order,
        "sentence_index": order,
        "is_true": true,
        "head": "",
        "tail": "",
    }


KEY_SENTENCES = {
    "#Topic#": [_ks(T1, True, 0), _ks(T2, True, 1), _ks(F1, False, 2)],
    "@argument@": [_ks(A1, True, 3), _ks(A2, False, 4)],
    "|Summary|": [],
}
DOCS = "doc-1\nid: X1\ntext: a\ndoc-2\nid: X2\ndoc-3\nid: Y1\nid: Y2\nid: Y3\nid: Z9"
DOC_CTX = Context("lifbench/MultiDoc/3072", DOCS, 40, "o200k_base")
ONE_CTX = Context("lifbench/OneDoc/3072", f"<#Topic#-0>{T1}<#Topic#> {T2} {A1}", 30, "o200k_base")

CHARS = [32, 33]
GOLD: dict[str, dict] = {
    "LSI": {
        **{"id": 2, "ordid": "2nd", "element": E[1], "pre_element": E[0], "post_element": E[2]},
        **{"bias": 0, "n_items": 5, "elem_chars": CHARS, "target": E[1]},
    },
    "LOI": {
        **{"id": 1, "ordid": "1st", "element": E[0], "pre_element": "", "post_element": E[1]},
        **{"bias": 1, "n_items": 5, "elem_chars": CHARS, "target": E[1]},
    },
    "LOE": {
        **{"id": 3, "ordid": "3rd", "element": E[2], "pre_element": E[1], "post_element": E[3]},
        **{"bias": -1, "n_items": 5, "elem_chars": CHARS, "target": E[1]},
    },
    "LMI": {"id_arr": [1, 3], "elements": [E[0], E[2]], "n_items": 5, "elem_chars": CHARS},
    "LBI": {
        **{"id": 3, "ordid": "3rd", "element": E[2], "pre_element": E[1], "post_element": E[3]},
        **{"bias": 1, "n_items": 5, "elem_chars": CHARS},
    },
    "LBE": {
        **{"id": 3, "ordid": "3rd", "element": E[2], "pre_element": E[1], "post_element": E[3]},
        **{"bias": -1, "n_items": 5, "elem_chars": CHARS},
    },
    "MB": {
        "candidates": ["apple", "banana", "cherry", "date"],
        "rule_key": "abcd",
        "rules": "by fields",
        "doc_keys": [["id", "text"], ["id"], ["id", "title"]],
        "labels": ["apple", "cherry", "banana"],
        "n_items": 3,
    },
    "MF": {
        "info_keys": ["id"],
        "info_text": "id",
        "dup_idxs": [[1, 2], [3, 4, 5]],
        "dup_infos": [[{"id": "X1"}, {"id": "X2"}], [{"id": "Y1"}, {"id": "Y2"}, {"id": "Y3"}]],
        "n_items": 6,
    },
    "OR": {"num": 2, "sep": "###", "key_sentences": KEY_SENTENCES, "n_items": 3},
    "OQ": {
        "evidence": T1,
        "options": ["True", "False"],
        "evidence_kind": "true",
        "is_key": True,
        "is_true_key": True,
        "answer": "True",
        "key_sentences": KEY_SENTENCES,
        "n_items": 3,
    },
    "OE": {
        "type": "<#Topic#>",
        "tag": "#Topic#",
        "targets": [T1, T2],
        "fakes": [F1],
        "key_sentences": KEY_SENTENCES,
        "n_items": 3,
    },
}
"""Gold per task in its JSON form (as samples.jsonl holds it); parsed by ``GOLD_TYPES``."""
CTX = {
    **dict.fromkeys(["LSI", "LOI", "LOE", "LMI", "LBI", "LBE"], LIST_CTX),
    "MB": DOC_CTX,
    "MF": DOC_CTX,
    "OR": ONE_CTX,
    "OQ": ONE_CTX,
    "OE": ONE_CTX,
}


def sample(task: str, **gold: object) -> Sample:
    """A sample of ``task`` whose gold is parsed once, as ``registry.load_samples`` does."""
    raw = Sample(
        id=f"s-{task}",
        benchmark="lifbench",
        task=task,
        instruction="Instruction: do",
        description="D",
        context_id=CTX[task].id,
        gold={**GOLD[task], **gold},
        joiner="\n",
    )
    return BENCHMARK.parse_gold(raw)


def score(task: str, text: str, strict: bool = False, **gold: object) -> Judgement:
    return L.score_lifbench(
        sample(task, **gold), Response("s", "m", text, "h"), CTX[task], strict=strict
    )


# (task, output, expected parts in points, expected value) -- computed by hand from the rules
GOLDEN = [
    # LSI: target E1; elements are 32..33 characters long
    ("LSI", E[1], {"format": 1.0, "correct": 2.0, "ori": 1.0}, 1.0),
    ("LSI", f"The answer is {E[2]}", {"format": 0.3, "correct": 0.0, "ori": 1.0}, 1.3 / 4),
    ("LSI", f"{E[1]}\n{E[3]}", {"format": 0.0, "correct": 2.0, "ori": 1.0}, 3 / 4),
    ("LSI", E[1][:-1] + "X", {"format": 0.2, "correct": 0.0, "ori": 0.0}, 0.0),  # early return
    ("LSI", "xyz", {"format": 0.0, "correct": 0.0, "ori": 0.0}, 0.0),
    ("LOI", E[1], {"format": 1.0, "correct": 2.0, "ori": 1.0}, 1.0),
    ("LOE", f"{E[2]} precedes {E[1]}", {"format": 0.0, "correct": 2.0, "ori": 1.0}, 0.75),
    # LMI: targets [E0, E2]
    ("LMI", json.dumps([E[0], E[2]]), {"format": 2, "num": 3, "correct": 3, "order": 2}, 1.0),
    (
        "LMI",
        "Here: " + json.dumps([E[2], E[0], E[4]]),
        {"format": 1.5, "num": 1.0, "correct": 3.0, "order": 0.0},
        0.55,
    ),
    ("LMI", "I don't know", {"format": 0, "num": 0, "correct": 0, "order": 1.0}, 0.1),
    # LBI: anchor 3 (E2), after
    ("LBI", E[3], {"ori": 1.0, "position": 3.0, "format": 1.0}, 1.0),
    ("LBI", E[2], {"ori": 1.0, "position": 1.0, "format": 1.0}, 0.6),
    ("LBI", f"{E[0]}, {E[4]}", {"ori": 1.0, "position": 0.0, "format": 0.0}, 0.2),
    ("LBI", "", {"ori": 0.0, "position": 0.0, "format": 0.0}, 0.0),
    ("LBE", E[0], {"ori": 1.0, "position": 3.0, "format": 1.0}, 1.0),
    # MB: labels apple, cherry, banana
    (
        "MB",
        '{"doc1": "apple", "doc2": "cherry", "doc3": "banana"}',
        {"candi_ori": 3, "logit_correct": 3, "num_doc": 3, "format": 5},
        1.0,
    ),
    (
        "MB",
        'Labels: {"doc1": "apple", "doc2": "banana", "doc3": "banana"} done',
        {"candi_ori": 3, "logit_correct": 2, "num_doc": 3, "format": 4},
        12 / 14,
    ),
    ("MB", "no idea", {"candi_ori": 0, "logit_correct": 0, "num_doc": 0, "format": 0}, 0.0),
    # MF: groups {X1, X2} and {Y1, Y2, Y3}
    (
        "MF",
        '[["X1"], ["X2"]]\n[["Y1"], ["Y2"], ["Y3"]]',
        {"correct": 4, "num_text": 5, "ori": 6, "format": 5},
        1.0,
    ),
    ("MF", '[["X1"], ["X2"], ["Y1"]]', {"correct": 2.0, "num_text": 3, "ori": 6, "format": 5}, 0.8),
    ("MF", "None found.", {"correct": 0, "num_text": 2, "ori": 0, "format": 2}, 0.2),
    # OR: num 2, sep ###
    (
        "OR",
        f"{T1} ### #Topic#\n{A1} ### @argument@",
        {"format": 3, "ori": 2, "hit": 2, "num": 4, "correct": 3},
        1.0,
    ),
    (
        "OR",
        f"{T1} ### @argument@\n{A2} ### @argument@\nextra line",
        {"format": 1 + 4 / 3, "ori": 2, "hit": 1.5, "num": 2 + 1 / 3, "correct": 1.0},
        (1 + 4 / 3 + 2 + 1.5 + 2 + 1 / 3 + 1) / 14,
    ),
    ("OR", "hello", {"format": 0, "ori": 1, "hit": 0, "num": 1 / 3, "correct": 0}, (4 / 3) / 14),
    # OQ: options [True (yes), False (no)], the evidence is a true key sentence
    ("OQ", "True", {"correct": 3, "format": 2}, 1.0),
    ("OQ", "The answer is True.", {"correct": 3, "format": 1.5}, 0.9),
    ("OQ", "False", {"correct": 0.1, "format": 2}, 0.42),
    ("OQ", "True or False", {"correct": 0.5, "format": 1.0}, 0.3),
    ("OQ", "maybe", {"correct": 0, "format": 1}, 0.2),
    # OE: #Topic#: targets T1, T2; fake F1
    ("OE", json.dumps([T1, T2]), {"format": 4, "correct": 4, "order": 4, "ori": 2}, 1.0),
    (
        "OE",
        "Sentences: " + json.dumps([T2, A1, F1]),
        {"format": 3, "correct": 3.5 / 3, "order": 4, "ori": 2},
        (9 + 3.5 / 3) / 14,
    ),
    ("OE", "no", {"format": 0, "correct": 0.5, "order": 0, "ori": 0}, 0.5 / 14),
]


@pytest.mark.parametrize(("task", "text", "parts", "value"), GOLDEN)
def test_golden(task: str, text: str, parts: dict, value: float) -> None:
    s = score(task, text)
    assert isinstance(s, Judgement) and s.points == L.RUBRIC[task]
    assert set(s.parts) == set(parts)
    for k, v in parts.items():
        assert s.parts[k] == pytest.approx(v, abs=1e-9), k
    assert s.value == pytest.approx(value, abs=1e-9)


def test_value_is_sum_of_parts_except_list_early_return() -> None:
    for task, text, _, _ in GOLDEN:
        s = score(task, text)
        total = sum(s.parts.values()) / L.TASK_POINTS[task]
        if "early return" in s.explanation:
            assert s.value == 0.0
        else:
            assert s.value == pytest.approx(total)


def test_strict_variant_fixes_quirks() -> None:
    near = E[1][:-1] + "X"
    assert score("LSI", near, strict=True).value == pytest.approx(0.2 / 4)
    strict = BENCHMARK.scorer("lifbench:strict").score
    assert strict is not None
    assert strict(sample("LSI"), Response("s", "m", near, "h"), LIST_CTX).value == pytest.approx(
        0.2 / 4
    )
    assert score("OR", "hello", strict=True).parts["ori"] == 0.0
    assert score("LMI", "I don't know", strict=True).parts["order"] == 0.0
    # OE order: found in id order T2 (pos 1), F1 (pos 3), A1 (pos 2) -> 2 of 3 in order
    out = "Sentences: " + json.dumps([T2, A1, F1])
    assert score("OE", out, strict=True).parts["order"] == pytest.approx(8 / 3)
    # non-ASCII survives strict unescaping, not the official one
    assert L.unescape("café \\n", strict=True) == "café \n"
    assert L.unescape("café") != "café"


def test_oq_fake_and_summary_cases() -> None:
    assert score("OQ", "True", is_true_key=False).parts["correct"] == 2.0
    assert score("OQ", "False", is_true_key=False).parts["correct"] == 3.0
    summ = {"tag": "|Summary|", "type": "<|Summary|>", "targets": [], "fakes": []}
    assert score("OE", "[]", **summ).value == 1.0
    assert score("OE", "[ ]", **summ).value == pytest.approx(4.5 / 14)


def test_every_task_has_its_gold_type() -> None:
    assert set(GOLD_TYPES) == set(L.TASKS) == set(GOLD)
    for task in L.TASKS:
        assert type(sample(task).gold) is GOLD_TYPES[task]


def test_unscorable_samples_give_nan_with_reason() -> None:
    s = L.score_lifbench(
        Sample("x", "lifbench", "LSI", "i", gold=GOLD["LSI"]), Response("x", "m", "a", "h"), None
    )
    assert math.isnan(s.value) and "load_samples" in s.explanation
    assert s.points == L.RUBRIC["LSI"]
    s = L.score_lifbench(sample("LSI"), Response("x", "m", E[1], "h"), None)
    assert math.isnan(s.value) and "context" in s.explanation
    s = L.score_lifbench(
        sample("MF", dup_idxs=[], dup_infos=[]), Response("x", "m", "a", "h"), DOC_CTX
    )
    assert math.isnan(s.value) and "dup_infos" in s.explanation
    s = L.score_lifbench(Sample("x", "lifbench", "XYZ", "i"), Response("x", "m", "a", "h"), None)
    assert math.isnan(s.value) and "unknown" in s.explanation


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=10)
    | st.sampled_from(E + [T1, A2]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=12,
).map(json.dumps)
PIECES = st.sampled_from(
    E
    + [
        T1,
        T2,
        F1,
        A1,
        A2,
        "###",
        "\n",
        "[[",
        "]]",
        "{",
        "}",
        "[",
        "]",
        ",",
        '"',
        "\\",
        "\\u12",
        "doc1",
        "null",
        "#Topic#",
        "@argument@",
        "True",
        "False",
        "X1",
        "Y2",
        "apple",
        "é",
        "\x00",
        "\udc80",
    ]
)
OUTPUTS = st.one_of(
    st.text(max_size=200),
    JSONISH,
    st.lists(PIECES | st.text(max_size=5), max_size=25).map("".join),
)


@pytest.mark.parametrize("task", L.TASKS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=OUTPUTS)
def test_never_raises_and_items_in_range(task: str, text: str) -> None:
    for strict in (False, True):
        s = score(task, text, strict=strict)
        assert 0.0 <= s.value <= 1.0
        assert set(s.parts) == set(L.RUBRIC[task])
        for item, v in s.parts.items():
            assert type(v) is float and 0.0 - 1e-12 <= v <= L.RUBRIC[task][item] + 1e-9, (item, v)


SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
WITH_SURROGATES = st.lists(
    SURROGATES.map(str) | PIECES | st.text(max_size=4), min_size=1, max_size=12
).map("".join)


def test_unescape_of_a_lone_surrogate_does_not_raise() -> None:
    for strict in (False, True):
        assert "x" in L.unescape("x\ud800", strict=strict)
        assert "x" in L.unescape('x\ud800 \\n ["a"]', strict=strict)


@pytest.mark.parametrize("task", ["LMI", "MF", "OE"])
@settings(max_examples=100, deadline=None)
@given(text=WITH_SURROGATES)
def test_outputs_with_lone_surrogates_score_without_raising(task: str, text: str) -> None:
    for strict in (False, True):
        s = score(task, text, strict=strict)
        assert 0.0 <= s.value <= 1.0, s.explanation


@given(st.text(max_size=40) | st.lists(PIECES, max_size=8).map("".join))
def test_unescape_reads_ordinary_text_as_the_official_code(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "invalid escape sequence"
        try:
            official = text.encode("utf-8").decode("unicode_escape")
        except UnicodeError:  # the official code raises (lone surrogate, bad escape)
            return
        assert L.unescape(text) == official


def test_huge_and_pathological_outputs() -> None:
    for task in L.TASKS:
        for text in ("[" * 50_000, "{" * 20_000 + "x", "[[" * 20_000, E[0] * 2_000, "\\" * 999):
            s = score(task, text)
            assert 0.0 <= s.value <= 1.0


def _dp(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@given(st.text("abcé", max_size=70), st.text("abcé", max_size=70))
def test_levenshtein_matches_dynamic_programming(a: str, b: str) -> None:
    assert L.levenshtein(a, b) == _dp(a, b)


@given(st.text("{}[],\nab", max_size=60))
def test_linear_span_finders_match_the_official_regexes(text: str) -> None:
    assert L.brace_spans(text) == re.findall(r"\{[^\]]+\}", text)
    assert L.double_bracket_spans(text) == re.findall(r"\[\[.*?\]\]", text)


@given(st.lists(st.sampled_from(E + ["ab", "abcdefghij", "abcdefghijk"]), max_size=8).map(" ".join))
def test_list_index_counts_like_str_count(text: str) -> None:
    elems = E + ["ab", "abcdefghij", "abcdefghijk"]
    idx = L.ListIndex.from_elements(elems)
    assert idx.count_total(text) == sum(text.count(e) for e in elems)
    assert idx.contained_positions(text) == [i for i, e in enumerate(elems) if e in text]


@given(
    st.lists(
        st.sampled_from(["doc", "doc1", "doc12", "doc0", "doc7", "doc100", "d", "1", "0", ", "]),
        max_size=30,
    ).map("".join),
    st.integers(1, 150),
)
def test_count_doc_keys_matches_the_official_loop(text: str, n: int) -> None:
    assert L.count_doc_keys(text, n) == sum(1 for k in range(1, n + 1) if f"doc{k}" in text)


@given(st.lists(st.text("abc", max_size=3), max_size=4), st.text("abc,", max_size=20))
def test_any_of_is_any_substring(words: list[str], text: str) -> None:
    assert (MD._any_of(tuple(words))(text) is not None) == any(w in text for w in words)


@given(
    JSONISH
    | st.text(max_size=20)
    | st.sampled_from(
        ["NaN", "-Infinity", "Infinity", "Inf", "I am", "nul", "null", " true", "\ufeff[]", " 1"]
    )
)
def test_loads_is_json_loads(text: str) -> None:
    try:
        want = json.loads(text)
    except ValueError:
        want = R._INVALID
    got = R._loads(text)
    assert got is want if want is R._INVALID else json.dumps(got) == json.dumps(want)


def test_parse_list_context() -> None:
    assert L.parse_list_context(LIST_TEXT) == E
    assert L.parse_list_context("1. a\n3. c") == ["a\n3. c"]
