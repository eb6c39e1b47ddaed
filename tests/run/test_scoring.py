"""The one scoring loop (``lceval.run.score``), the registry and typed gold, on a small
benchmark registered by the test itself."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import lceval.run
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, write_jsonl
from lceval.core.records import Response


@pytest.fixture
def echo(echo_bench, tmp_path):
    lceval.run.build("r", "echo", {"n": 3, "run_id": "r", "backend": "hf"}, root=tmp_path)
    return RunDir("r", tmp_path)


def _responses(run: RunDir, rows) -> None:
    write_jsonl(
        run.responses,
        [
            Response(sample_id=s, model="m", text=t, config_hash="c", finish_reason=f, error=e)
            for s, t, f, e in rows
        ],
    )


def test_error_then_retry_is_scored_as_the_retry(echo):
    _responses(
        echo,
        [
            ("e0", "", "error", "boom"),
            ("e1", "a1", "stop", None),
            ("e0", "a0", "stop", None),
            ("e2", "", "error", "down"),
        ],
    )
    df = lceval.run.score("r", root=echo.path.parent, progress=False).set_index("sample_id")
    assert df.loc["e0", "value"] == 1.0 and df.loc["e1", "value"] == 1.0
    assert (
        math.isnan(df.loc["e2", "value"])
        and "generation failed: down" in df.loc["e2", "explanation"]
    )
    assert set(df["scorer"]) == {"echo"} and set(df["scorer_version"]) == {"1"}
    assert json.loads(df.loc["e1", "parts"]) == {"hit": 1.0}


def test_a_raising_scorer_gives_nan_with_reason_not_lost_scores(echo):
    _responses(echo, [("e0", "RAISE", "stop", None), ("e1", "a1", "stop", None)])
    df = lceval.run.score("r", root=echo.path.parent, progress=False).set_index("sample_id")
    assert math.isnan(df.loc["e0", "value"])
    assert df.loc["e0", "explanation"] == "scorer error: RuntimeError: scorer bug second line"
    assert df.loc["e1", "value"] == 1.0


def test_named_scorer_options_and_batch_judge(echo, echo_bench):
    _responses(
        echo, [("e0", "a0", "stop", None), ("e1", "x", "stop", None), ("e2", "a2", "stop", None)]
    )
    df = lceval.run.score(
        "r", root=echo.path.parent, scorer="echo", options={"bonus": 0.5}, progress=False
    )
    assert sorted(df["value"]) == [0.5, 1.0, 1.0]
    df = lceval.run.score("r", root=echo.path.parent, scorer="echo:judge", progress=False)
    assert list(df["scorer"].unique()) == ["echo:judge"]
    assert sorted(df["value"]) == [0.0, 1.0, 1.0]
    assert echo_bench.CALLS == [
        2,
        1,
        "closed",
    ]  # n_items 2 each, batch of 3 items: groups of 2 then 1
    details = pd.read_parquet(echo.path / "echo_details.parquet")
    assert list(details.columns) == ["sample_id", "model", "check", "yes"] and len(details) == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scorer": "echo:nope"}, "no scorer 'echo:nope'; choose one of echo, echo:judge"),
        ({"scorer": "lifbench"}, "unknown scorer 'lifbench'; choose one of echo, echo:judge"),
        ({"scorer": "echo", "options": {"bogus": 1}}, "has no option 'bogus'; options: bonus"),
        ({"options": {"bonus": 1}}, "scorer options need --scorer NAME"),
    ],
)
def test_bad_scorer_names_and_options(echo, kwargs, message):
    _responses(echo, [("e0", "a0", "stop", None)])
    with pytest.raises(LcevalError, match=message.replace("(", r"\(")):
        lceval.run.score("r", root=echo.path.parent, progress=False, **kwargs)


def test_empty_responses_is_nothing_to_score(echo):
    echo.responses.write_text("")
    with pytest.raises(LcevalError, match="holds no responses: nothing to score"):
        lceval.run.score("r", root=echo.path.parent, progress=False)
    _responses(echo, [("e0", "a0", "stop", None), ("e1", "a1", "stop", None)])
    echo.responses.write_bytes(echo.responses.read_bytes().replace(b"\n", b"\r"))  # CR ends
    with pytest.raises(LcevalError, match="holds no responses \\(its [0-9,]+ bytes end in no"):
        lceval.run.score("r", root=echo.path.parent, progress=False)


def test_rebuild_over_responses_needs_force(echo):
    _responses(echo, [("e0", "a0", "stop", None)])
    with pytest.raises(LcevalError, match="already has responses"):
        lceval.run.build("r", "echo", {"n": 2}, root=echo.path.parent)
    lceval.run.build("r", "echo", {"n": 2}, root=echo.path.parent, force=True)
    assert not echo.responses.exists()
    assert len(list(echo.path.glob("responses.jsonl.replaced-*"))) == 1
    assert len(echo.read_samples()) == 2


def test_identical_rebuild_keeps_responses_and_models(echo):
    _responses(echo, [("e0", "a0", "stop", None)])
    echo.update_meta(models={"m": {"backend": "hf", "config_hash": "c"}})
    lceval.run.build("r", "echo", {"n": 3}, root=echo.path.parent)  # same samples: a resume
    assert len(echo.read_responses()) == 1
    assert echo.read_meta().models == {"m": {"backend": "hf", "config_hash": "c"}}
    assert not list(echo.path.glob("responses.jsonl.replaced-*"))


def test_bad_gold_is_one_line_naming_sample_and_field(echo):
    lines = echo.samples.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["gold"] = {"target": 7}
    lines[1] = json.dumps(bad)
    echo.samples.write_text("\n".join(lines) + "\n")
    _responses(echo, [("e0", "a0", "stop", None)])
    with pytest.raises(LcevalError, match=r"sample e1: bad gold: EchoGold.target: expected str"):
        lceval.run.score("r", root=echo.path.parent, progress=False)


def test_gold_from_dict_types(echo_bench):
    EchoGold = echo_bench.EchoGold
    g = EchoGold.from_dict({"target": "x", "aliases": ["y", "z"], "weight": 2, "unknown": 1})
    assert g == EchoGold("x", ("y", "z"), 2.0)
    with pytest.raises(ValueError, match="missing field 'target'"):
        EchoGold.from_dict({})
    with pytest.raises(ValueError, match=r"aliases\[1\]: expected str"):
        EchoGold.from_dict({"target": "x", "aliases": ["y", 3]})
    with pytest.raises(ValueError, match="expected a number"):
        EchoGold.from_dict({"target": "x", "weight": True})


def test_cli_score_scorer_and_report(echo, capsys):
    _responses(echo, [("e0", "a0", "stop", None)])
    root = str(echo.path.parent)
    assert main(["--outputs", root, "score", "r", "--scorer", "echo", "-o", "bonus=0.25"]) == 0
    capsys.readouterr()
    assert main(["--outputs", root, "score", "r", "--scorer", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lceval: unknown scorer 'nope'; choose one of") and "\n" not in err
    assert main(["--outputs", root, "report", "r"]) == 0


def test_cli_list_shows_every_benchmark_and_scorer(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for key in ("lifbench", "longgenbench", "ruler", "manyifeval"):
        assert f"\n{key}: " in f"\n{out}"
    for name in ("scorer lifbench ", "scorer lifbench:strict", "scorer longgenbench:llm"):
        assert name in out
    assert "backends:" in out and "prompt_format" in out


def test_one_model_under_two_configs_is_scored_as_two(echo, capsys):
    """hf float32, then vLLM bfloat16 answers in one run: never averaged together."""
    write_jsonl(
        echo.responses,
        [
            Response(sample_id=s, model="m", text=t, config_hash=h)
            for s, t, h in [
                ("e0", "a0", "hf0000001"),
                ("e1", "no", "hf0000001"),
                ("e0", "no", "vllm00002"),
                ("e1", "a1", "vllm00002"),
            ]
        ],  # fmt: skip
    )
    df = lceval.run.score("r", root=echo.path.parent, progress=False)
    assert sorted(set(df["model"])) == ["m@hf000000", "m@vllm0000"]
    assert "m answered under several generation configs" in capsys.readouterr().err
    _responses(echo, [("e0", "a0", "stop", None), ("e1", "a1", "stop", None)])
    assert set(lceval.run.score("r", root=echo.path.parent, progress=False)["model"]) == {"m"}
