"""The offline GSM stand-in: seeded arithmetic problems in the gsm100 format, built per length by
the L-Eval builder and scored by L-Eval's GSM rule."""

from __future__ import annotations

import random
import re

import pytest

from lceval.benchmarks.leval import arithmetic
from lceval.benchmarks.leval.build import build_leval
from lceval.benchmarks.leval.data import parse_document
from lceval.benchmarks.leval.score import process_math, score_leval
from lceval.benchmarks.registry import load_samples
from lceval.core.errors import LcevalError
from lceval.core.records import Response
from lceval.core.tokens import get_encoding
from lceval.models.prompts import user_text

_OP = re.compile(r"(\d+) ([-+*/]) (\d+) = (\d+)")


@pytest.mark.parametrize("steps", [1, 2, 3, 4])
def test_every_worked_step_is_exact_and_the_answer_follows(steps):
    for i in range(200):
        p = arithmetic.make_problem(random.Random(f"t/{i}"), steps)
        assert len(p.steps) == steps + 1 and p.answer >= 1
        value = int(re.search(r"\d+", p.steps[0]).group())
        for line in p.steps[1:]:
            ops = _OP.findall(line)
            assert ops, line
            for a, op, b, c in ops:
                a, b, c = int(a), int(b), int(c)
                assert {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op] == c
                if op == "/":
                    assert a % b == 0
            value = int(ops[-1][3])
            assert 1 <= value <= arithmetic.MAX_VALUE
        assert value == p.answer
        assert p.example().endswith(f"The answer is {p.answer}")
        assert process_math(p.example()) == str(p.answer)


def test_records_are_official_gsm100_and_seeded():
    recs = arithmetic.records(5, 4, 3, seed=7)
    assert recs == arithmetic.records(5, 4, 3, seed=7)
    assert recs != arithmetic.records(5, 4, 3, seed=8)
    doc = parse_document("gsm100", 0, recs[0], "test")
    assert doc.task == "gsm100" and doc.evaluation == "exam" and doc.source == arithmetic.SOURCE
    assert len(doc.instructions) == 5 and doc.input.count("The answer is") == 4
    assert all(
        q.startswith("Question: ") and q.endswith("step by step\n") for q in doc.instructions
    )
    assert all(o.isdigit() for o in doc.outputs)
    assert not any(q.split("\n")[0] in doc.input for q in doc.instructions)  # no test item as shot
    # more questions never change the first ones
    longer = arithmetic.records(8, 4, 3, seed=7)[0]
    assert longer["instructions"][:5] == recs[0]["instructions"]


def test_examples_fill_a_token_target_and_fit_cuts_whole_examples():
    enc = get_encoding("cl100k_base")
    shots = arithmetic.examples(None, 2, 0, min_tokens=1500)
    doc = arithmetic.SEPARATOR.join(p.example() for p in shots)
    assert len(enc.encode(doc)) >= 1500
    cut = arithmetic.fit_examples(doc, 600)
    assert len(enc.encode(cut)) <= 600 and doc.startswith(cut)
    assert cut.endswith(f"The answer is {shots[cut.count('Question:') - 1].answer}")
    with pytest.raises(LcevalError, match="cannot hold one worked example"):
        arithmetic.fit_examples(doc, 10)
    with pytest.raises(LcevalError, match="number of shots or a token target"):
        arithmetic.examples(None, 2, 0)


def test_builder_asks_the_same_questions_at_every_length_within_budget():
    params = {
        "data_path": "arithmetic",
        "lengths": [300, 800],
        "max_new_tokens": 64,
        "arithmetic_shots": None,
        "arithmetic_questions": 4,
        "arithmetic_steps": 2,
    }
    r = build_leval(params)
    assert build_leval(params).samples == r.samples
    enc = get_encoding("cl100k_base")
    ctx = {c.id: c for c in r.contexts}
    assert set(ctx) == {"leval/gsm100/0000/300", "leval/gsm100/0000/800"}
    by_len: dict[int, list[str]] = {}
    for s in load_samples(r.samples):
        assert s.task == "gsm100" and s.length in (300, 800) and s.id.endswith(f"/{s.length}")
        text = user_text(s, ctx[s.context_id].text)
        assert len(enc.encode(text)) + s.max_new_tokens <= s.length
        by_len.setdefault(s.length, []).append(s.instruction)
    assert by_len[300] == by_len[800]
    assert ctx["leval/gsm100/0000/800"].text.count("The answer is") > ctx[
        "leval/gsm100/0000/300"
    ].text.count("The answer is")
    # the paper's 16 shots without lengths
    r16 = build_leval({"data_path": "arithmetic", "arithmetic_questions": 2})
    assert r16.contexts[0].text.count("The answer is") == 16
    assert r16.samples[0].length is None and r16.samples[0].id == "leval/gsm100/0000/000"


def test_scored_by_the_official_gsm_rule():
    r = build_leval({"data_path": "arithmetic", "arithmetic_questions": 2, "arithmetic_shots": 2})
    s = load_samples(r.samples)[0]
    answer = s.gold.reference

    def judge(text):
        return score_leval(s, Response(s.id, "m", text, "c"), r.contexts[0]).value

    assert judge(f"Step one ... The answer is {answer}.") == 1.0
    assert judge(f"The answer is {int(answer) + 1}") == 0.0
    assert judge("I do not know.") == 0.0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"data_path": "arithmetic", "tasks": ["tpo"]}, "gsm100 only"),
        ({"data_path": "arithmetic", "arithmetic_shots": None}, "needs lengths"),
        ({"data_path": "arithmetic", "lengths": [100]}, "lengths must be integers >"),
        ({"data_path": "arithmetic", "lengths": [2000], "max_length": 4000}, "not both"),
        ({"data_path": "arithmetic", "lengths": [2000], "retrieval": "bm25"}, "full only"),
        ({"data_path": "arithmetic", "arithmetic_steps": 0}, "arithmetic_steps"),
        (
            {"data_path": "arithmetic", "lengths": [560], "max_new_tokens": 512},
            "cannot hold one worked example",
        ),
    ],
)
def test_bad_params(params, message):
    with pytest.raises(LcevalError, match=message):
        build_leval(params)


def test_lengths_cut_official_documents(leval_data):
    r = build_leval(
        {
            "data_path": str(leval_data),
            "tasks": ["tpo"],
            "lengths": [80, 2000],
            "max_new_tokens": 16,
        }
    )
    ctx = {c.id: c for c in r.contexts}
    short, long = ctx["leval/tpo/0000/80"], ctx["leval/tpo/0000/2000"]
    assert short.n_tokens <= 64 and long.text.startswith(short.text)
    ids = sorted(s.id for s in r.samples)
    assert ids[:2] == ["leval/tpo/0000/000/2000", "leval/tpo/0000/000/80"]
    assert {s.meta["max_length"] for s in r.samples} == {80, 2000}
