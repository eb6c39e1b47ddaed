"""Refusals that name the command that works (issue 49 items 2 and 4): a budget no truncation
can fit names ``--max-new-tokens``, never ``--truncate``; the data-less benchmarks name one demo
switch, ``-p demo=true``; a model id that cannot be had offline is refused before the build; an
unknown engine option names the closest of that engine and which engine ``auto`` chose; a failed
answer is an error row of its model, never a second model."""

from __future__ import annotations

import pytest

import lceval.run
from lceval.cli import evaluation as cli_eval
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta, write_jsonl
from lceval.core.records import Response, Sample
from lceval.models import backends
from lceval.models.base import check_load
from lceval.models.specs import ModelSpec, check_fits

from .test_fail_fast import no_engine  # noqa: F401 - the fixture


def _long_budget_run(tmp_path) -> RunDir:
    """LongGenBench's shape: no context, a prompt and a 16,384-token answer budget."""
    run = RunDir("r", tmp_path).create()
    run.write_meta(new_meta("r"))
    sample = Sample(
        id="g0", benchmark="echo", task="T", instruction="write a diary " * 20,
        gold={"target": "x"}, max_new_tokens=16384,
    )  # fmt: skip
    run.write_samples([sample], [])
    return run


@pytest.mark.parametrize("truncate", [False, True])
def test_a_budget_past_the_window_names_max_new_tokens(tiny_model_dir, truncate):
    sample = Sample(id="g0", benchmark="echo", task="T", instruction="write " * 40)
    spec = ModelSpec(model=str(tiny_model_dir), backend="hf", options={}, name="tiny")
    with pytest.raises(LcevalError) as info:
        check_fits(spec, [sample], {}, lambda s: 16384, truncate=truncate)
    said = str(info.value)
    assert "window 1,024 tokens" in said and "truncating the context cannot help" in said
    n = int(said.split("without its context ")[1].split(" tokens")[0])
    assert f"--max-new-tokens {1024 - n}" in said and "--truncate" not in said
    # a budget that fits: checked and said (truncate: only the prompts without context)
    assert "tiny" in check_fits(spec, [sample], {}, lambda s: 16, truncate=truncate)


def test_infer_with_truncate_refuses_what_truncation_cannot_fit(
    capsys,
    tmp_path,
    no_engine,  # noqa: F811
    tiny_model_dir,
):
    """It answered every sample with an error row and "the same command answers them again"."""
    _long_budget_run(tmp_path)
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "hf"]
    assert main([*argv, "--model", str(tiny_model_dir), "--truncate"]) == 2
    err = capsys.readouterr().err
    assert "--max-new-tokens" in err and "--truncate" not in err and err.count("\n") == 1
    assert not (tmp_path / "r" / "responses.jsonl").exists()


def test_an_unknown_option_names_the_closest_and_autos_choice(monkeypatch):
    monkeypatch.setattr(backends, "choose_backend", lambda: ("vllm", "vLLM on a CUDA GPU"))
    with pytest.raises(LcevalError) as info:
        check_load("auto", "embedded", {"num_thread": 2})
    said = str(info.value)
    assert said.startswith("backend auto chose vllm (vLLM on a CUDA GPU), which has no option")
    assert "which has no option 'num_thread'; hf has num_threads (--backend hf)" in said
    with pytest.raises(LcevalError, match=r"backend hf has no option 'num_thread' \(did you mean "):
        check_load("hf", "embedded", {"num_thread": 2})


def test_an_unreachable_hub_model_is_refused_before_the_build(capsys, tmp_path, monkeypatch):
    """It built for 39 s, tried vLLM, fell back to hf and failed at 71 s, leaving a run folder
    (no HF_HUB_OFFLINE: a machine without network, as a new user's)."""
    from huggingface_hub import HfApi

    def unreachable(self, repo, timeout=None):
        raise ConnectionError("no route to host")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(HfApi, "model_info", unreachable)
    argv = ["--outputs", str(tmp_path), "eval", "lifbench", "--model", "nosuch-org/nosuch-model"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "model 'nosuch-org/nosuch-model' is not a local directory nor in the local" in err
    assert "the hub cannot be reached (ConnectionError)" in err
    assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_an_unreachable_hub_without_the_offline_flag_is_said_at_once(monkeypatch):
    from huggingface_hub import HfApi

    from lceval.models.embedded import check_model

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)

    def unreachable(self, repo, timeout=None):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(HfApi, "model_info", unreachable)
    with pytest.raises(LcevalError, match="and the hub cannot be reached \\(ConnectionError\\)"):
        check_model("nosuch-org/nosuch-model")


def test_leval_offline_names_the_demo_switch_and_demo_builds(monkeypatch):
    from lceval.benchmarks.leval.build import build_leval

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(LcevalError, match=r"offline: -p demo=true \(lceval's demo documents"):
        build_leval({})
    demo = build_leval({"demo": True, "demo_doc_words": 60})
    old = build_leval({"data_path": "demo", "demo_doc_words": 60})  # the older spelling
    assert demo.samples == old.samples and len(demo.samples) > 0


def test_cifbench_without_data_names_the_same_switch():
    from lceval.benchmarks.cifbench.build import build_cifbench

    with pytest.raises(LcevalError, match=r"or -p demo=true for lceval's demo dataset"):
        build_cifbench({})


def test_a_failed_config_is_no_second_model(echo_bench, tmp_path):
    """The refused command's error rows (config a) then the working command's answers (config
    b): one model in the scores, no ``m@a`` of n = 0."""
    run = lceval.run.build("r", "echo", {"n": 3}, root=tmp_path)
    rows = [
        Response(sample_id="e0", model="m", text="", config_hash="a", finish_reason="error",
                 error="LcevalError: prompt longer than the window"),
        Response(sample_id="e1", model="m", text="", config_hash="a", finish_reason="error",
                 error="LcevalError: prompt longer than the window"),
        Response(sample_id="e0", model="m", text="a0", config_hash="b"),
    ]  # fmt: skip
    write_jsonl(run.responses, rows)
    scores = lceval.run.score("r", root=tmp_path, progress=False)
    assert set(scores["model"]) == {"m"}
    assert sorted(scores["sample_id"]) == ["e0", "e1"]  # e0: its answer; e1: its error row
    assert scores.set_index("sample_id").loc["e0", "value"] == 1.0


@pytest.mark.parametrize(
    ("first_error", "said"),
    [
        ("LcevalError: prompt longer than the window", "they fail the same way again"),
        ("RuntimeError: engine died", "the same command answers them again"),
    ],
)
def test_eval_says_whether_the_same_command_helps(capsys, monkeypatch, first_error, said):
    from types import SimpleNamespace

    from lceval.report.stage import EvalResult

    result = EvalResult(
        run=SimpleNamespace(run_id="x"), headlines=None, report=None, answered=2, errors=2,
        summary="s", first_error=first_error,
    )  # fmt: skip
    monkeypatch.setattr(cli_eval, "run_eval", lambda cfg, outputs: result)
    assert cli_eval.handle(None, None) == 1
    err = capsys.readouterr().err
    assert said in err and first_error in err and err.count("\n") == 1
