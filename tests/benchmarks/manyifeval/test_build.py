"""ManyIFEval builder: balance across counts, determinism, conflicts, Appendix C control, files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from lceval.benchmarks.manyifeval import BENCHMARK
from lceval.benchmarks.manyifeval.build import build_manyifeval, format_prompt, instruction_spec
from lceval.benchmarks.manyifeval.checkers import describe
from lceval.benchmarks.manyifeval.gold import INSTRUCTION_IDS, ManyIFEvalGold
from lceval.core.errors import LcevalError
from lceval.core.io import dumps, read_records
from lceval.core.records import Sample, from_dict, to_dict
from lceval.core.tokens import count_tokens
from lceval.params import load_params

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def built():
    return build_manyifeval({"n_prompts": 6, "seed": 3, "repeated_control": True})


def _unique(result):
    return [s for s in result.samples if s.task == "unique"]


def test_balanced_counts(built) -> None:
    unique = _unique(built)
    assert len(unique) == 60
    assert Counter(s.meta["n_instructions"] for s in unique) == {n: 6 for n in range(1, 11)}
    per_prompt = Counter(s.meta["prompt_key"] for s in unique)
    assert set(per_prompt.values()) == {10}
    for s in unique:
        assert len(s.gold.instruction_id_list) == s.meta["n_instructions"]
        assert len(s.gold.kwargs) == s.meta["n_instructions"]


def test_no_conflicts_and_distinct_keywords(built) -> None:
    groups = instruction_spec()["conflict_groups"].values()
    for s in _unique(built):
        ids = s.gold.instruction_id_list
        assert len(set(ids)) == len(ids)
        assert set(ids) <= set(INSTRUCTION_IDS)
        for g in groups:
            assert len(set(ids) & set(g)) <= 1
        words: list[str] = []
        for kw in s.gold.kwargs:
            for k in ("keywords", "forbidden_words"):
                words += kw.get(k, [])
            if "keyword" in kw:
                words.append(kw["keyword"])
        assert len(words) == len(set(words))


def test_prompt_lists_each_instruction_text(built) -> None:
    for s in _unique(built):
        assert "Your response should follow the instructions below:" in s.instruction
        assert s.instruction.startswith(s.gold.task_prompt)
        for iid, kw in zip(s.gold.instruction_id_list, s.gold.kwargs, strict=True):
            assert "- " + describe(iid, kw) in s.instruction
        assert s.gold.prompt == s.instruction


def test_nested_counts(built) -> None:
    by_prompt: dict[str, dict[int, list[str]]] = {}
    for s in _unique(built):
        by_prompt.setdefault(s.meta["prompt_key"], {})[s.meta["n_instructions"]] = list(
            s.gold.instruction_id_list
        )
    for seq in by_prompt.values():
        for n in range(2, 11):
            assert seq[n][:-1] == seq[n - 1]


def test_deterministic_and_seeded() -> None:
    a = build_manyifeval({"n_prompts": 3, "seed": 1})
    b = build_manyifeval({"n_prompts": 3, "seed": 1})
    c = build_manyifeval({"n_prompts": 3, "seed": 2})
    dump = lambda r: json.dumps([to_dict(s) for s in r.samples], sort_keys=True)  # noqa: E731
    assert dump(a) == dump(b)
    assert dump(a) != dump(c)


def test_instructions_are_spread_over_the_pool() -> None:
    r = build_manyifeval({"n_prompts": 40, "seed": 0})
    firsts = Counter(
        s.gold.instruction_id_list[0] for s in r.samples if s.meta["n_instructions"] == 1
    )
    assert len(firsts) >= 8  # the n = 1 instruction varies across prompts


def test_repeated_control_matches_length(built) -> None:
    reps = [s for s in built.samples if s.task == "repeated"]
    unique = {(s.meta["prompt_key"], s.meta["n_instructions"]): s for s in _unique(built)}
    assert len(reps) == 60
    for s in reps:
        u = unique[(s.meta["prompt_key"], s.meta["n_instructions"])]
        single = unique[(s.meta["prompt_key"], 1)]
        assert s.gold.instruction_id_list == single.gold.instruction_id_list
        assert s.meta["n_unique"] == 1
        line = "- " + describe(s.gold.instruction_id_list[0], s.gold.kwargs[0])
        assert s.instruction.count(line) == s.meta["n_repeats"]
        # closest in tokens: one repeat more or less is not nearer to the unique prompt's length
        target, k = u.meta["prompt_tokens"], s.meta["n_repeats"]
        assert count_tokens(s.instruction) == s.meta["prompt_tokens"]
        for other in (k - 1, k + 1):
            if other >= 1:
                text = format_prompt(s.gold.task_prompt, [line[2:]] * other)
                assert abs(count_tokens(text) - target) >= abs(s.meta["prompt_tokens"] - target)
    n1 = [s for s in reps if s.meta["n_instructions"] == 1]
    assert all(s.meta["n_repeats"] == 1 for s in n1)


def test_ifeval_format_file(tmp_path: Path) -> None:
    rows = [
        {
            "key": 7,
            "prompt": "Write a poem. Wrap your entire response with double quotation marks.",
            "instruction_id_list": ["startend:quotation"],
            "kwargs": [{"num_words": None}],
        },
        {
            "key": 8,
            "prompt": "Write. Answer with at least 5 words and no commas.",
            "instruction_id_list": ["length_constraints:number_words", "punctuation:no_comma"],
            "kwargs": [{"num_words": 5, "relation": "at least"}, {}],
        },
    ]
    p = tmp_path / "input.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = build_manyifeval({"path": str(p)})
    assert [s.id for s in r.samples] == ["manyifeval/7/n01", "manyifeval/8/n02"]
    assert r.samples[0].gold.kwargs == ({},)
    assert r.samples[1].instruction == rows[1]["prompt"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "x", "instruction_id_list": ["nope:x"], "kwargs": [{}]}))
    with pytest.raises(LcevalError, match="unknown IFEval instruction id"):
        build_manyifeval({"path": str(bad)})


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"bogus": 1}, "unknown parameter 'bogus'"),
        ({"max_instructions": 12}, "max_instructions must be in 1..11"),
        ({"mtbench_categories": ["poetry"]}, "not an MT-Bench category"),
        (
            {"instructions": ["keywords:nope"]},
            "instructions.0. must be one of .*got 'keywords:nope'",
        ),
        ({"n_prompts": 0}, "n_prompts"),
        ({"n_prompts": 1000}, "only 40 prompts"),
        ({"nested": "yes"}, "nested must be true or false"),
        ({"path": "/no/such/file.jsonl"}, "does not exist"),
        ({"max_new_token": 8}, "unknown parameter 'max_new_token'; did you mean max_new_tokens"),
    ],
)
def test_bad_params(params: dict, match: str) -> None:
    with pytest.raises(LcevalError, match=match):
        build_manyifeval(params)


def test_gold_is_typed_and_its_json_is_the_old_layout(built) -> None:
    s = built.samples[0]
    assert isinstance(s.gold, ManyIFEvalGold)
    raw = json.loads(dumps(s))["gold"]
    assert list(raw) == ["key", "prompt", "task_prompt", "instruction_id_list", "kwargs"]
    assert isinstance(raw["instruction_id_list"], list) and isinstance(raw["kwargs"], list)
    back = BENCHMARK.parse_gold(from_dict(Sample, json.loads(dumps(s))))
    assert back.gold == s.gold


def test_run_folders_built_before_typed_gold_still_load() -> None:
    old = REPO / "tests" / "fixtures" / "regression" / "manyifeval" / "samples.jsonl"
    samples = [BENCHMARK.parse_gold(s) for s in read_records(old, Sample)]
    assert samples and all(isinstance(s.gold, ManyIFEvalGold) for s in samples)
    assert all(len(s.gold.instruction_id_list) == s.meta["n_instructions"] for s in samples)


@pytest.mark.parametrize("name", ["smoke.yaml", "full.yaml"])
def test_notebook_params_files_build_as_they_are(name: str) -> None:
    params = load_params(REPO / "params" / "04_curse_of_instructions" / name)
    # keep the test small; the full params' official data file is the user's: draw from MT-Bench
    params = {**params, "n_prompts": 1, "max_instructions": 2, "path": None}
    result = build_manyifeval(params)
    assert {s.meta["n_instructions"] for s in result.samples} == {1, 2}


def test_drawing_keywords_alone_reads_the_shipped_nltk_data_quietly() -> None:
    """``draw_kwargs`` called first in a fresh process (a notebook cell) sets up the NLTK data
    before lm-eval's import, which otherwise tries to download punkt_tab and prints
    ``[nltk_data] ... refusing to connect`` lines on stderr."""
    code = (
        "import random\nfrom lceval.benchmarks.manyifeval.build import draw_kwargs\n"
        "print(draw_kwargs('keywords:existence', random.Random(0), set()))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "keywords" in done.stdout
    assert "nltk_data" not in done.stderr and "Downloaded" not in done.stdout + done.stderr
