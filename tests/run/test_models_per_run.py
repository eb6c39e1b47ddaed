"""Several models per run (``models:``, repeatable ``--model``) and the checks that stop a run
before any engine starts: no model named, ``model`` and ``models`` together, a window shorter
than the run's longest prompt."""

from __future__ import annotations

import json

import pytest

import lceval.run
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta
from lceval.core.records import Context, Sample
from lceval.models.specs import ModelSpec, resolve_models
from lceval.run.config import InferConfig, validate

from ..cli.test_fail_fast import _one_line, no_engine  # noqa: F401 - the fixture

LONG = " ".join(f"word{i}" for i in range(1000))
"""A context of about 4,600 tokens of SmolLM2's tokenizer (the tiny model's window is 1,024)."""


def _run(tmp_path, long: bool = False, rid: str = "r") -> RunDir:
    run = RunDir(rid, tmp_path).create()
    run.write_meta(new_meta(rid))
    ctx = Context(
        id="c", text=LONG if long else "a short context", n_tokens=3, encoding="o200k_base"
    )
    samples = [
        Sample(
            id=sid,
            benchmark="echo",
            task="T",
            instruction=f"say a{n}",
            context_id=ctx_id,
            gold={"target": f"a{n}"},
            max_new_tokens=4,
        )
        for n, (sid, ctx_id) in enumerate([("a", "c"), ("b", None)])
    ]
    run.write_samples(samples, [ctx])
    return run


def test_resolve_models_reads_strings_and_mappings():
    specs = resolve_models(
        None,
        ["org/a", {"model": "org/b", "backend": "vllm", "options": {"x": 2}, "name": "B"}],
        "hf",
        {"x": 1, "y": 1},
    )
    assert specs == (
        ModelSpec(model="org/a", backend="hf", options={"x": 1, "y": 1}),
        ModelSpec(model="org/b", backend="vllm", options={"x": 2, "y": 1}, name="B"),
    )
    assert resolve_models("org/a", None, "hf") == (ModelSpec(model="org/a", backend="hf"),)


@pytest.mark.parametrize(
    ("model", "models", "message"),
    [
        (None, None, "no model named: set `model:` or `models:`"),
        ("org/a", ["org/b"], "give `model` or `models`, not both"),
        (None, [], "`models` must be a non-empty list"),
        (None, [3], "models[0] must be a model id or a mapping"),
        (None, [{"model": "a/b", "opts": {}}], "models[0]: unknown parameter 'opts'"),
        (None, [{"backend": "hf"}], "models[0]: model is required"),
        (None, [{"model": "a/b", "options": 3}], "models[0]: options must be a mapping"),
        (None, ["a/b", "a/b"], "models[0] (a/b) and models[1] (a/b) would both store their"),
        (None, ["embedded", {"model": "/x/y", "name": "SmolLM2-135M-Instruct"}], "both store"),
        (
            None,
            [{"model": "a/b", "name": "a\nb"}],
            "models[0]: name: 'a\\nb' holds a newline or control",
        ),
        (None, [{"model": "a/b", "name": " "}], "models[0]: name: must be a non-empty"),
        (None, [{"model": "a/b", "name": ""}], "models[0]: name: must be a non-empty"),
    ],
)
def test_resolve_models_refuses_in_one_line(model, models, message):
    with pytest.raises(LcevalError, match="^inference: .*") as exc:
        resolve_models(model, models)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_inference_section_declares_models_and_truncate():
    got = validate(InferConfig, {"models": ["a/b"], "truncate": True}, "params", "inference")
    assert got.models == ["a/b"] and got.truncate is True
    with pytest.raises(LcevalError, match=r"models\[0\]: unknown parameter 'nmae'"):
        validate(InferConfig, {"models": [{"model": "a", "nmae": "x"}]}, "params", "inference")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"models": []}, "models must name at least one model"),
        ({"model": "embedded", "models": ["embedded"]}, "not both"),
    ],
)
def test_pipeline_infer_stops_before_any_engine(tmp_path, no_engine, kwargs, message):  # noqa: F811
    _run(tmp_path)
    with pytest.raises(LcevalError, match=message):
        lceval.run.infer("r", backend="hf", root=tmp_path, progress=False, **kwargs)


def test_bad_model_list_is_one_line_before_any_engine(capsys, tmp_path, no_engine):  # noqa: F811
    _run(tmp_path)
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "hf"]
    line = _one_line(capsys, [*argv, "--model", "embedded", "--model", "{model: [1, 2"])
    assert "is not a YAML mapping like" in line
    line = _one_line(capsys, [*argv, "--model", "embedded", "--model", "/no/such/model"])
    assert "model path /no/such/model does not exist" in line
    line = _one_line(capsys, [*argv, "--model", "{model: embedded, options: {bogus: 1}}"])
    assert "backend hf has no option 'bogus'" in line


def test_short_window_stops_before_any_engine(capsys, tmp_path, no_engine, tiny_model_dir):  # noqa: F811
    _run(tmp_path, long=True)
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "hf"]
    line = _one_line(capsys, [*argv, "--model", "embedded", "--model", str(tiny_model_dir)])
    assert f"model {str(tiny_model_dir)[-60:]}: window 1,024 tokens" in line
    assert "(config max_position_embeddings) < longest prompt" in line
    assert "sample a; model tokenizer" in line and len(line) < 300
    # the embedded model (window 8,192) held the prompt: the second model is named, not the first
    n = int(line.split("longest prompt ")[1].split(" tokens")[0].replace(",", ""))
    assert 1024 < n < 8192
    # a window option is the engine's window: big enough, the check passes (then the engine)
    with pytest.raises(pytest.fail.Exception, match="constructed"):
        main([*argv, "--model", str(tiny_model_dir), "-o", "window=16384"])
    assert "window 16,384 tokens (option window) holds the longest" in capsys.readouterr().err
    # a rope_scaling option multiplies the trained window
    line = _one_line(capsys, [*argv, "--model", str(tiny_model_dir), "-o", "rope_scaling=linear:2"])
    assert "window 2,048 tokens (rope_scaling x2 over 1,024)" in line


@pytest.mark.slow
def test_two_models_answered_scored_reported_and_ranked(
    capsys, tmp_path, echo_bench, tiny_model_dir, tiny_base_model_dir
):
    """Two models through the CLI: both answered (one engine at a time), a rerun answers
    nothing new, scores are keyed by (sample, model), the report and compare see both."""
    lceval.run.build("r", "echo", {"n": 4}, root=tmp_path)
    out = ["--outputs", str(tmp_path)]
    argv = [
        *out,
        "infer",
        "r",
        "--backend",
        "hf",
        "-o",
        "device=cpu",
        "--max-new-tokens",
        "3",
        "--model",
        str(tiny_model_dir),
        "--model",
        f"{{model: {tiny_base_model_dir}, name: base}}",
    ]
    assert main(argv) == 0
    assert "model 2/2: base (hf)" in capsys.readouterr().err
    run = RunDir("r", tmp_path)
    lines = run.responses.read_text().splitlines()
    models = [json.loads(x)["model"] for x in lines]
    assert sorted(set(models)) == sorted({str(tiny_model_dir), "base"})
    assert len(lines) == 8 and models.index("base") == 4  # one model after the other
    assert set(run.read_meta().models) == {str(tiny_model_dir), "base"}
    assert main(argv) == 0  # resumable per model: nothing left to answer
    assert len(run.responses.read_text().splitlines()) == 8
    assert main([*out, "score", "r"]) == 0
    scores = run.read_scores()
    assert len(scores) == 8 and not scores.duplicated(["sample_id", "model"]).any()
    assert main([*out, "report", "r"]) == 0
    capsys.readouterr()
    assert main([*out, "compare", "r"]) == 0
    table = capsys.readouterr().out
    assert "rank" in table and "base" in table and str(tiny_model_dir)[-20:] in table
    assert main([*out, "compare", "r", "--model-a", "base", "--model-b", str(tiny_model_dir)]) == 0
    assert "p_holm" in capsys.readouterr().out


def test_a_name_clash_is_refused_before_any_engine_naming_both(
    capsys,
    tmp_path,
    no_engine,  # noqa: F811
    tiny_model_dir,
):
    """Issue 32: the second model would find the first's answers "already answered"."""
    run = _run(tmp_path)
    before = run.run_json.read_bytes()
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "hf"]
    other = f"{{model: {tiny_model_dir}, name: SmolLM2-135M-Instruct}}"
    line = _one_line(capsys, [*argv, "--model", "embedded", "--model", other])
    assert "models[0] (embedded) and models[1] (" in line
    assert "would both store their answers as 'SmolLM2-135M-Instruct'" in line
    line = _one_line(capsys, [*argv, "--model", '{model: embedded, name: "a\\nb"}'])
    assert "models[0]: name: 'a\\nb' holds a newline or control" in line
    assert run.run_json.read_bytes() == before


def test_earlier_answers_from_another_path_keep_their_name(
    capsys,
    tmp_path,
    no_engine,  # noqa: F811
    tiny_model_dir,
    tiny_base_model_dir,
):
    """A model and earlier answers in the run folder never share a stored name: another path
    (or answer-changing options, or engine) under the same name is refused before any engine."""
    run = _run(tmp_path)
    entry = {"model": "m", "backend": "hf", "source": "local", "path": str(tiny_model_dir)}
    run.update_meta(models={"m": {**entry, "options": {"dtype": "float32"}}})
    before = run.run_json.read_bytes()
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "hf"]
    line = _one_line(capsys, [*argv, "--model", f"{{model: {tiny_base_model_dir}, name: m}}"])
    assert f"model {str(tiny_base_model_dir)[-60:]} would store its answers as 'm'" in line
    assert f"which run r already holds from {str(tiny_model_dir)[-80:]}" in line
    same = f"{{model: {tiny_model_dir}, name: m}}"
    line = _one_line(capsys, [*argv, "--model", same])
    assert "already holds with options" in line and "float32" in line
    line = _one_line(capsys, [*argv, "--model", same, "-o", "dtype=bfloat16"])
    assert "already holds with options" in line
    assert run.run_json.read_bytes() == before
    # the same path and answer-changing options: the check passes (then the engine would start)
    with pytest.raises(pytest.fail.Exception, match="constructed"):
        main([*argv, "--model", same, "-o", "dtype=float32", "-o", "num_threads=1"])


def test_an_api_model_without_a_key_stops_the_run_before_model_one(
    capsys,
    tmp_path,
    no_engine,  # noqa: F811
    monkeypatch,
):
    """Every model's key is checked before the first engine starts."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    run = _run(tmp_path)
    before = run.run_json.read_bytes()
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "hf", "--model", "embedded"]
    line = _one_line(capsys, [*argv, "--model", "{model: gpt-4o-mini, backend: openai}"])
    assert "model gpt-4o-mini: set OPENAI_API_KEY to use the OpenAI API" in line
    assert run.run_json.read_bytes() == before


def test_second_model_option_out_of_range_stops_before_model_one(
    capsys,
    tmp_path,
    no_engine,  # noqa: F811
):
    _run(tmp_path)
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "hf", "--model", "embedded"]
    second = "{model: embedded, name: other, options: {prefill_chunk: 8}}"
    line = _one_line(capsys, [*argv, "--model", second])
    assert line == ("lceval: backend hf option prefill_chunk must be >= 16, got 8 (int)")
