"""One declared config per verb, the same object at every door (issue 31 item 2, issue 32 item 2,
issue 28 items 1 and 4): the CLI's flags are generated from the configs, ``lceval run -p`` and
params files are checked against every step's declared params before anything runs, the build
records the inference settings its params declare, ``--outputs`` goes anywhere."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

import lceval.run
import lceval.run.inference
from lceval.cli import _parser, main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.run import config

REPO = Path(__file__).resolve().parents[2]
COMMON = {"-h", "--help", "--outputs", "-v", "--verbose"}
"""Flags every verb takes that belong to no verb's config (help, the outputs root, verbosity)."""


def _arguments(verb: str) -> list[argparse.Action]:
    """The arguments of ``verb``'s parser (what its ``add_argument`` calls returned)."""
    return _parser().verbs[verb].arguments


def _flags(verb: str) -> tuple[set[str], set[str]]:
    """(option strings, positional dests) of ``verb``'s subparser."""
    opts, positional = set(), set()
    for action in _arguments(verb):
        if action.option_strings:
            opts.update(action.option_strings)
        else:
            positional.add(action.dest)
    return opts - COMMON, positional


def _declared(cfg: type) -> tuple[set[str], set[str]]:
    """(flags, positional names) generated from ``cfg``'s fields."""
    opts, positional = set(), set()
    for name, info in cfg.model_fields.items():
        extra = info.json_schema_extra or {}
        if extra.get("positional"):
            positional.add(name)
            continue
        for flag in config.flags_of(name, info):
            opts.add(flag)
            if extra.get("action") == "boolean":
                opts.add("--no-" + flag.removeprefix("--"))
    return opts, positional


def test_every_infer_flag_comes_from_the_declared_config():
    opts, positional = _flags("infer")
    assert (opts, positional) == _declared(config.InferConfig)
    for action in _arguments("infer"):
        if action.option_strings and not set(action.option_strings) & COMMON:
            assert action.dest in config.InferConfig.model_fields, action.dest
            info = config.InferConfig.model_fields[action.dest]
            assert action.help == info.description  # help text from the field


def _verbs() -> list[str]:
    """The verbs the parser knows (not the configs' list: a verb without a config must fail)."""
    return sorted(_parser().verbs)


@pytest.mark.parametrize("verb", _verbs())
def test_every_verb_flag_comes_from_its_declared_config(verb):
    assert verb in config.VERBS, f"lceval {verb} has no declared config in lceval.run.config"
    cfg = config.VERBS[verb]
    assert _flags(verb) == _declared(cfg)
    for action in _arguments(verb):
        if set(action.option_strings) & COMMON:
            continue
        assert action.dest in cfg.model_fields, action.dest
        assert action.help == cfg.model_fields[action.dest].description  # help from the field


def _all_schemas() -> dict[str, dict]:
    from lceval.cli.notebooks import notebook_schemas

    return {**config.json_schemas(), **notebook_schemas()}


def test_committed_json_schemas_are_current():
    folder = REPO / "lceval" / "schemas" / "params"
    schemas = _all_schemas()
    assert sorted(p.name for p in folder.glob("*.schema.json")) == sorted(
        f"{v}.schema.json" for v in schemas
    )
    for name, schema in schemas.items():
        on_disk = json.loads((folder / f"{name}.schema.json").read_text(encoding="utf-8"))
        assert on_disk == schema, f"{name}: rerun `lceval schema lceval/schemas/params`"
    infer = schemas["infer"]["properties"]
    assert infer["max_new_tokens"]["description"].startswith("cap every sample's answer budget")


def test_every_params_file_validates_against_its_schema_and_a_typo_does_not():
    import jsonschema

    folder = REPO / "lceval" / "schemas" / "params"
    files = sorted((REPO / "params").glob("[0-9][0-9]_*/*.yaml"))
    assert files
    for path in files:
        schema = json.loads((folder / f"{path.parent.name}.schema.json").read_text())
        data = yaml.safe_load(path.read_text()) or {}
        jsonschema.validate(data, schema)
        for key in ("max_new_tokens", "truncate"):
            if key in data:
                bad = {**data, key: "maybe"}
                with pytest.raises(jsonschema.ValidationError):
                    jsonschema.validate(bad, schema)
        with pytest.raises(jsonschema.ValidationError, match="max_new_token'"):
            jsonschema.validate({**data, "max_new_token": 8}, schema)


def test_every_pipeline_file_validates_against_the_pipeline_schema_and_a_typo_does_not():
    import jsonschema

    schema = json.loads((REPO / "lceval/schemas/params/pipeline.schema.json").read_text())
    files = sorted((REPO / "params" / "pipelines").glob("*.yaml"))
    assert files
    for path in files:
        data = yaml.safe_load(path.read_text())
        jsonschema.validate(data, schema)
        typo = {**data, "steps": [{**data["steps"][0], "param": "x.yaml"}]}
        with pytest.raises(jsonschema.ValidationError, match="'param' was unexpected"):
            jsonschema.validate(typo, schema)


def test_schema_command_writes_one_file_per_verb(tmp_path, capsys):
    assert main(["schema", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {f"{v}.schema.json" for v in _all_schemas()}
    assert main(["schema", str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize(
    "override, message",
    [
        ("bogus=1", "unknown parameter 'bogus'"),
        ("max_new_token=8", "did you mean max_new_tokens"),
        ("max_new_tokens=abc", "-p: max_new_tokens must be an integer, got 'abc'"),
        ("max_new_tokens=-5", "-p: max_new_tokens must be >= 1, got -5"),
        ("backend=foo", "-p: backend: unknown backend 'foo'"),
        ("limit=0", "-p: limit must be >= 1, got 0"),
        ("truncate=maybe", "-p: truncate must be true or false, got 'maybe'"),
        ("model={model: embedded, optons: {}}", "models[0]: unknown parameter 'optons'"),
        ("lengths=[-3]", "lengths[0] must be >= 1"),  # the builder's own declared type
    ],
)
def test_run_overrides_are_checked_before_step_01(tmp_path, capsys, override, message):
    code = main(
        ["run", "params/pipelines/lifbench_smoke.yaml", "-p", override, "--outputs", str(tmp_path)]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("lceval: "), err
    assert message in err
    assert list(tmp_path.iterdir()) == []  # nothing built, no .failed.ipynb


def test_unknown_key_in_a_pipeline_steps_params_file(tmp_path, capsys):
    params = yaml.safe_load((REPO / "params/02_inference/smoke.yaml").read_text())
    params["max_new_token"] = params.pop("max_new_tokens")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(params))
    pipe = {
        "run_id": "x",
        "steps": [{"notebook": "02_inference", "params": str(tmp_path / "p.yaml")}],
    }
    (tmp_path / "pipe.yaml").write_text(yaml.safe_dump(pipe))
    out = tmp_path / "out"
    code = main(["run", str(tmp_path / "pipe.yaml"), "--outputs", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "unknown parameter 'max_new_token'; did you mean max_new_tokens" in err
    assert not out.exists()


def test_single_notebook_params_are_checked_before_the_run_folder(tmp_path, capsys):
    code = main(
        ["run", "02_inference", "--run-id", "x", "-p", "limit=0", "--outputs", str(tmp_path)]
    )
    assert code == 2 and "limit must be >= 1, got 0" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_pipeline_override_reaches_only_the_steps_that_declare_it(tmp_path, monkeypatch):
    from lceval.cli import notebooks

    ran = []
    monkeypatch.setattr(
        notebooks, "run_notebook", lambda nb, rid, p, **kw: ran.append((nb.stem, p))
    )
    notebooks.run_pipeline(
        "params/pipelines/lifbench_smoke.yaml",
        "x",
        outputs_root=tmp_path,
        overrides={"limit": 2, "lengths": ["4k"]},
    )
    steps = dict(ran)
    assert steps["02_inference"]["limit"] == 2 and "limit" not in steps["01_build_data"]
    assert steps["01_build_data"]["lengths"] == ["4k"] and "lengths" not in steps["02_inference"]


def test_outputs_goes_before_or_after_the_verb(tmp_path, capsys):
    for argv in (
        ["--outputs", str(tmp_path), "plan", "nope"],
        ["plan", "nope", "--outputs", str(tmp_path)],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert str(tmp_path / "nope") in err and "unrecognized" not in err


def test_bad_flag_values_name_the_flag(tmp_path, capsys):
    assert (
        main(["infer", "r", "--truncate", "--max-new-tokens", "abc", "--outputs", str(tmp_path)])
        == 2
    )
    assert "--max-new-tokens must be an integer, got abc" in capsys.readouterr().err


def test_python_door_uses_the_same_declared_type(tmp_path):

    with pytest.raises(LcevalError, match="limit must be >= 1, got 0"):
        lceval.run.infer("r", model="embedded", limit=0, root=tmp_path)
    with pytest.raises(LcevalError, match="truncate must be true or false"):
        lceval.run.infer("r", model="embedded", truncate="maybe", root=tmp_path)


def test_smoke_build_declares_its_inference_settings(tmp_path, capsys):
    argv = ["build", "lifbench", "--params", "params/01_build_data/smoke.yaml", "--run-id", "r"]
    assert main([*argv, "-p", "max_samples_per_task=1", "--outputs", str(tmp_path)]) == 0
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["inference"] == {"truncate": True, "max_new_tokens": 64}
    capsys.readouterr()
    # lceval plan gives the budget lceval infer will use: the declared 64 tokens per sample
    assert main(["plan", "r", "--outputs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    n = sum(1 for _ in open(tmp_path / "r" / "samples.jsonl"))
    assert f"{n * 64:,}" in out
    # a bad declared value is refused at build time, naming the key
    assert main([*argv, "-p", "truncate=maybe", "--outputs", str(tmp_path / "b")]) == 2
    assert "truncate must be true or false" in capsys.readouterr().err


def test_infer_reads_the_runs_declared_settings(tmp_path, monkeypatch):
    """The inference settings run.json declares reach the generation config (no engine: the
    model load is replaced by a stub that records what it was asked)."""

    assert (
        main(
            [
                "build",
                "lifbench",
                "--params",
                "params/01_build_data/smoke.yaml",
                "--run-id",
                "r",
                "-p",
                "max_samples_per_task=1",
                "--outputs",
                str(tmp_path),
            ]
        )
        == 0
    )
    seen = {}

    def stop(run, spec, config, contexts, batch_size, progress, pending, plans):
        seen.update(budget=config.max_new_tokens, n=sum(len(s) for _, s in plans))
        return []

    monkeypatch.setattr(lceval.run.inference, "_infer_engine", stop)
    monkeypatch.setattr(lceval.run.inference, "check_load", lambda *a, **k: None)
    monkeypatch.setattr(  # declared truncate: only what no cut can fit is checked
        lceval.run.inference,
        "check_fits",
        lambda *a, truncate=False, **k: "" if truncate else pytest.fail("truncate is declared"),
    )
    lceval.run.infer("r", model="embedded", root=tmp_path, limit=3)
    per_task = Counter(s.task for s in RunDir("r", tmp_path).read_samples())
    assert seen == {"budget": 64, "n": sum(min(3, n) for n in per_task.values())}  # 3 a task
    lceval.run.infer("r", model="embedded", root=tmp_path, max_new_tokens=8)
    assert seen["budget"] == 8  # what the caller gives goes over the declared value


def test_cli_infer_takes_the_backend_and_options_the_params_file_declares(tmp_path, monkeypatch):
    """One reading of a params file: L-Eval's smoke params say ``backend: hf`` and
    ``batch_size: 4``, which notebook 08 reads; ``lceval infer`` on the run built from them takes
    the same (it picked vLLM), and a flag still goes over them (no engine: a stub records)."""
    argv = ["build", "leval", "--params", "params/08_leval/smoke.yaml", "--run-id", "l"]
    assert main([*argv, "--outputs", str(tmp_path)]) == 0
    meta = json.loads((tmp_path / "l" / "run.json").read_text())
    assert meta["inference"]["backend"] == "hf" and meta["inference"]["batch_size"] == 4
    seen = {}

    def stop(run, spec, config, contexts, batch_size, progress, pending, plans):
        seen.update(backend=spec.backend, batch=batch_size)
        return []

    monkeypatch.setattr(lceval.run.inference, "_infer_engine", stop)
    monkeypatch.setattr(lceval.run.inference, "check_load", lambda *a, **k: None)
    assert main(["infer", "l", "--limit", "1", "--outputs", str(tmp_path)]) == 0
    assert seen == {"backend": "hf", "batch": 4}
    assert main(["infer", "l", "--backend", "vllm", "--outputs", str(tmp_path)]) == 0
    assert seen["backend"] == "vllm"  # the flag goes over the declared backend


def test_run_checks_every_model_before_step_01(tmp_path, capsys):
    """A bad model path in ``-p`` is refused before the build step runs (it is read by step
    02 only)."""
    argv = ["run", "params/pipelines/lifbench_smoke.yaml", "-p", "model=/nonexistent"]
    assert main([*argv, "--outputs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "02_inference: model path /nonexistent does not exist" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("pipeline", sorted((REPO / "params" / "pipelines").glob("*.yaml")))
def test_every_pipelines_params_files_pass_their_declared_types(pipeline, monkeypatch):
    """The committed pipelines pass the checks ``lceval run`` makes before step 01 (the
    models' availability aside: the full params name hub models this machine may not hold)."""
    from lceval.cli import notebooks

    ran = []
    monkeypatch.setattr(notebooks, "check_models", lambda *a: None)
    monkeypatch.setattr(notebooks, "run_notebook", lambda nb, rid, p, **kw: ran.append(nb.stem))
    notebooks.run_pipeline(pipeline, "x", outputs_root="/nonexistent")
    assert ran


def test_build_params_declare_the_stop_strings_and_thinking_budget():
    """Issue 48: a build's params declare the whole generation config (stop strings, thinking
    budget, top_p) as they declare the answer cap: run.json's inference records them (which
    ``lceval infer`` takes below its flags and keywords: tests/run/test_parity.py)."""
    from lceval.run.building import _inference_defaults

    said = {"stop": ["END", "###"], "max_thinking_tokens": 128, "top_p": 0.9, "seed": 3}
    got = _inference_defaults({"leval": said})  # seed: a builder's own (the sampling of data)
    assert got == {"stop": ["END", "###"], "max_thinking_tokens": 128, "top_p": 0.9}
    with pytest.raises(LcevalError, match="max_thinking_tokens must be >= 1, got 0"):
        _inference_defaults({"leval": {"max_thinking_tokens": 0}})
