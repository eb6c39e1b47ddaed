"""Same input, same score: ``lceval score`` twice on IFEval-format rows whose letter-frequency
instructions ask for letters outside a-z (IFEval's own data asks for '#' and '!') gives
byte-identical scores.parquet; and IFEval's four pooled accuracies reach the report,
results.json and ``lceval score``'s summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lceval.benchmarks.manyifeval.checkers import build_checker, check_seed
from lceval.cli import main
from lceval.core.io import RunDir, write_jsonl
from lceval.core.records import Response

ROWS = [
    *(
        {
            "key": 100 + k,
            "prompt": f"Write note {k}. The letter # should appear at least 3 times.",
            "instruction_id_list": ["keywords:letter_frequency"],
            "kwargs": [{"letter": "#", "let_frequency": 3, "let_relation": "at least"}],
        }
        for k in range(12)
    ),
    {
        "key": 1,
        "prompt": "Write a note. In your response, the letter # should appear at least 3 times.",
        "instruction_id_list": ["keywords:letter_frequency"],
        "kwargs": [{"letter": "#", "let_frequency": 3, "let_relation": "at least"}],
    },
    {
        "key": 2,
        "prompt": "Write a poem. The letter ! should appear less than 2 times. Use no commas.",
        "instruction_id_list": ["keywords:letter_frequency", "punctuation:no_comma"],
        "kwargs": [{"letter": "!", "let_frequency": 2, "let_relation": "less than"}, {}],
    },
    {
        "key": 3,
        "prompt": "Answer with at least 5 words.",
        "instruction_id_list": ["length_constraints:number_words"],
        "kwargs": [{"num_words": 5, "relation": "at least"}],
    },
]
# Texts where the letter drawn matters: every a-z letter's count differs across these.
TEXTS = [
    *["aaaa bbb cc d eeeee ffffff g hh iii jjjj kkkkk llllll mmmmmmm n oo ppp qqqq"] * 12,
    "aaaa bbb cc d eeeee ffffff g hh iii jjjj kkkkk llllll mmmmmmm n oo ppp qqqq rrrrr",
    "ssssss ttttttt u vv www xxxx yyyyy zzzzzz quick brown fox",
    "one two three four five six",
]


@pytest.fixture()
def run(tmp_path: Path) -> tuple[Path, str]:
    data = tmp_path / "ifeval.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "outputs"
    assert (
        main(["--outputs", str(out), "build", "manyifeval", "--run-id", "r", "-p", f"path={data}"])
        == 0
    )
    rd = RunDir("r", out)
    ids = [json.loads(line)["id"] for line in rd.samples.read_text().splitlines()]
    write_jsonl(
        rd.responses,
        [
            Response(sample_id=i, model="m", text=t, config_hash="h")
            for i, t in zip(ids, TEXTS, strict=True)
        ],
    )
    return out, "r"


def test_score_twice_is_byte_identical(run, capsys) -> None:
    out, rid = run
    assert main(["--outputs", str(out), "score", rid]) == 0
    first = (out / rid / "scores.parquet").read_bytes()
    for _ in range(2):
        assert main(["--outputs", str(out), "score", rid]) == 0
        assert (out / rid / "scores.parquet").read_bytes() == first
    printed = capsys.readouterr().out
    assert "prompt-level strict accuracy" in printed


def test_letter_draw_pinned_per_check() -> None:
    kw = {"letter": "#", "let_frequency": 3, "let_relation": "at least"}
    letters = {build_checker("keywords:letter_frequency", kw, "p", 0)._letter for _ in range(20)}
    assert len(letters) == 1 and letters.pop() in "abcdefghijklmnopqrstuvwxyz"
    assert check_seed("keywords:letter_frequency", kw, "p", 0) != check_seed(
        "keywords:letter_frequency", kw, "p", 1
    )


def test_pooled_accuracies_in_report_and_results(run) -> None:
    out, rid = run
    assert main(["--outputs", str(out), "score", rid]) == 0
    assert main(["--outputs", str(out), "report", rid]) == 0
    rd = RunDir(rid, out)
    doc = json.loads((Path(rd.report) / "results.json").read_text())
    got = {m["metric"]: m["estimate"] for m in doc["metrics"] if m["benchmark"] == "manyifeval"}
    assert set(got) == {
        "prompt-level strict accuracy",
        "instruction-level strict accuracy",
        "prompt-level loose accuracy",
        "instruction-level loose accuracy",
    }
    # Row 3 follows (6 words); rows 1 and 2: their letters are drawn, row 2 has no comma.
    assert 1 / 3 <= got["prompt-level strict accuracy"] <= 1
    summary = (Path(rd.report) / "manyifeval_summary.csv").read_text()
    assert "instruction-level loose accuracy" in summary
