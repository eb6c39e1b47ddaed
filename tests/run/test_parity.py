"""One setting, one reading (issue 48): a setting given as a ``lceval infer`` flag, a keyword of
``lceval.infer``, or a key of notebook 02's params file resolves to the same inference config,
whatever its value (one equal to the default included), over the settings the run's build
declared and the defaults: a setting given beats the build's, which beats the default.

No engine starts: the engine step is replaced by a stub that records the resolved config, the
models asked for and their generation config (what run.json records), then answers nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lceval
import lceval.run.inference as inference
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta
from lceval.core.records import Context, Sample
from lceval.params import flags_of
from lceval.run.config import INFERENCE_DEFAULTS, InferConfig

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "02_inference.ipynb"

DECLARED = {  # what the run's build params declared (run.json's inference)
    "backend": "hf",
    "backend_options": {"device": "cpu"},
    "batch_size": 4,
    "max_new_tokens": 64,
    "truncate": True,
    "temperature": 0.5,
    "top_p": 0.9,
    "stop": ["END"],
    "max_thinking_tokens": 128,
}
TASKS = ("LOI", "LSI")

# every field of the verb's config: how a value is drawn (values equal to the default included)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "backend": st.sampled_from(["auto", "hf", "vllm", "openai"]),
    "model": st.sampled_from(["embedded", "org/some-model", "/models/local"]),
    "truncate": st.booleans(),
    "batch_size": st.integers(1, 300),
    "limit": st.integers(1, 6),
    "tasks": st.lists(st.sampled_from(TASKS), min_size=1, max_size=2, unique=True),
    "max_new_tokens": st.sampled_from([1, 64]) | st.integers(1, 1 << 15),
    "temperature": st.sampled_from([0.0, 0.5]) | st.floats(0, 2, allow_nan=False),
    "top_p": st.sampled_from([1.0, 0.9]) | st.floats(0, 1, exclude_min=True),
    "seed": st.sampled_from([0]) | st.integers(0, 1 << 31),
    "max_thinking_tokens": st.sampled_from([1, 32768]) | st.integers(1, 1 << 16),
    "stop": st.lists(st.sampled_from(["END", "\n\n", "Q:", " "]), min_size=1, max_size=3),
    "backend_options": st.dictionaries(
        st.sampled_from(["device", "max_batch_rows", "dtype"]),
        st.sampled_from(["cpu", "float32"]) | st.integers(1, 64),
        max_size=2,
    ),
    "ray_address": st.sampled_from(["auto", "127.0.0.1:6379"]),
}
NOT_DRAWN = {
    "run_id": "the positional: the run under test",
    "list_options": "prints a backend's options and exits: it configures no inference",
    "models": "no flag (a params file's or a keyword's list): drawn by test_models_key_parity",
}


def test_every_field_of_the_verb_is_drawn():
    assert set(VALUES) | set(NOT_DRAWN) == set(InferConfig.model_fields)


@pytest.fixture
def run(tmp_path, monkeypatch):
    """A built run declaring inference settings, and the engine steps replaced by a recorder."""
    r = RunDir("r", tmp_path).create()
    ctx = Context(id="c0", text="Shared context. " * 20, n_tokens=80, encoding="o200k_base")
    samples = [
        Sample(id=f"s{i}", benchmark="lifbench", task=TASKS[i % 2], instruction=f"Q {i}")
        for i in range(6)
    ]
    r.write_samples(samples, [ctx])
    r.write_meta(new_meta("r", inference=DECLARED))
    seen: list[Any] = []
    real_layered = inference.layered

    def layered(*args: Any, **kwargs: Any) -> Any:
        cfg = real_layered(*args, **kwargs)
        # the models as the engine steps see them (a --model flag is a list of one)
        seen.append({"config": cfg.model_dump(exclude={"model", "models"})})
        return cfg

    def engine(run, spec, config, contexts, batch_size, progress, pending, plans):
        seen.append(
            {
                "model": (spec.backend, spec.model, dict(spec.options)),
                "generation": config.model_dump(),  # run.json's "generation"
                "hash": config.hash(),
                "batch_size": batch_size,
                "samples": [s.id for _, chosen in plans for s in chosen],
            }
        )
        return []

    def ray(run, specs, config, samples, contexts, batch_size, progress, address, pending):
        seen.append({"ray": address, "models": [(s.backend, s.model) for s in specs]})
        return []

    monkeypatch.setattr(inference, "layered", layered)
    monkeypatch.setattr(inference, "_infer_engine", engine)
    monkeypatch.setattr(inference, "_infer_ray", ray)
    monkeypatch.setattr(inference, "check_load", lambda *a, **k: None)
    monkeypatch.setattr(inference, "check_address", lambda *a, **k: None)
    monkeypatch.setattr(inference, "check_fits", lambda *a, **k: "fits")
    monkeypatch.setattr(inference.plan, "plan_run", _no_plan)
    return r, seen


def _no_plan(*args: Any, **kwargs: Any) -> Any:
    raise LcevalError("not planned in this test")


def _flags(values: dict[str, Any]) -> list[str]:
    """``values`` as ``lceval infer``'s flags, spelled from the declared fields."""
    out: list[str] = []
    for name, value in values.items():
        flag = flags_of(name, InferConfig.model_fields[name])[-1]
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + flag.removeprefix("--"))
        elif isinstance(value, dict):
            out += [x for k, v in value.items() for x in (flag, f"{k}={json.dumps(v)}")]
        elif isinstance(value, list) and name in ("model", "stop"):  # --model A --model B
            out += [x for v in value for x in (flag, v)]
        elif isinstance(value, list):
            out += [flag, *map(str, value)]
        else:
            out += [flag, repr(value) if isinstance(value, float) else str(value)]
    return out


def _cli(run: RunDir, seen: list[Any], values: dict[str, Any]) -> list[Any]:
    seen.clear()
    status = main(["infer", run.run_id, *_flags(values), "--outputs", str(run.path.parent)])
    assert status == 0, values
    return list(seen)


def _python(run: RunDir, seen: list[Any], values: dict[str, Any]) -> list[Any]:
    seen.clear()
    lceval.infer(run.run_id, root=run.path.parent, progress=False, **values)
    return list(seen)


def _notebook(run: RunDir, seen: list[Any], values: dict[str, Any]) -> list[Any]:
    """Notebook 02 as papermill runs it with a params file holding ``values``: its parameters
    cell, the injected parameters, then its inference cell, as written."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    source = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    parameters = "".join(cells[1]["source"])  # tagged parameters
    call = next(s for s in source if "lceval.run.infer(" in s)
    scope: dict[str, Any] = {}
    exec(parameters, scope)  # noqa: S102 - the repository's own notebook
    scope.update(values, run_id=run.run_id, outputs_root=str(run.path.parent))
    seen.clear()
    exec("import lceval.run\n" + call, scope)  # noqa: S102
    return list(seen)


def _notebook_params() -> dict[str, Any]:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    scope: dict[str, Any] = {}
    exec("".join(cells[1]["source"]), scope)  # noqa: S102
    return {k: v for k, v in scope.items() if k in InferConfig.model_fields and k != "run_id"}


settings_ = st.fixed_dictionaries({}, optional=VALUES)
FIXTURE = [HealthCheck.function_scoped_fixture]  # the run and stubs hold across examples


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE)
@given(values=settings_)
def test_a_flag_a_keyword_and_a_notebook_parameter_give_one_config(run, values):
    r, seen = run
    if values.get("backend") == "openai" and "model" not in values:
        with pytest.raises(LcevalError, match="the openai backend needs --model"):
            lceval.infer(r.run_id, root=r.path.parent, progress=False, **values)
        return
    cli = _cli(r, seen, values)
    assert _python(r, seen, values) == cli
    # the notebook passes every parameter of its cell (those it has): the CLI with them as flags
    params = _notebook_params()
    own = {k: v for k, v in values.items() if k in params}
    cell = {k: v for k, v in {**params, **own}.items() if v is not None}
    assert _notebook(r, seen, own) == _cli(r, seen, cell)
    # precedence: what was given, else what the build declared, else the default
    config = cli[0]["config"]
    for name in InferConfig.model_fields:
        if name in values and values[name] != {}:  # {}: the unset marker no flag can say
            want = values[name]
        elif name in DECLARED and not (
            name == "backend_options" and values.get("backend", "hf") != "hf"
        ):
            want = DECLARED[name]
        else:
            continue
        if name == "model":
            asked = [x["model"][1] for x in cli if "model" in x]
            asked += [m for x in cli if "models" in x for _, m in x["models"]]
            assert asked == [want]
            continue
        assert config[name] == want, name


@pytest.mark.parametrize("door", [_cli, _python, _notebook])
def test_backend_auto_given_beats_the_builds_backend(run, door):
    """Issue 48: on a run built with ``backend: hf``, ``backend="auto"`` (the default's value)
    answers on auto from every door (Python used to drop it as "not given": hf)."""
    r, seen = run
    got = door(r, seen, {"backend": "auto", "model": "embedded"})
    assert got[0]["config"]["backend"] == "auto"
    assert got[1]["model"][0] == "auto"
    assert got[1]["model"][2] == {}  # the build's hf options are not auto's
    if door is not _notebook:  # (the notebook always gives its cell's backend)
        nothing = door(r, seen, {"model": "embedded"})
        assert nothing[0]["config"]["backend"] == "hf"  # not given: the build's


@settings(max_examples=15, deadline=None, suppress_health_check=FIXTURE)
@given(models=st.lists(st.sampled_from(["embedded", "org/a", "org/b"]), min_size=1, unique=True))
def test_models_key_parity(run, models):
    """``models`` has no flag: the keyword and the notebook's key give the CLI's repeated
    ``--model``."""
    r, seen = run
    cli = _cli(r, seen, {"model": models})
    python = _python(r, seen, {"models": models})
    assert [x for x in python if "model" in x] == [x for x in cli if "model" in x]
    notebook = _notebook(r, seen, {"models": models, "model": None})
    params = {k: v for k, v in _notebook_params().items() if v is not None and k != "model"}
    assert notebook == _cli(r, seen, {**params, "model": models})


def test_declared_keys_are_inference_fields():
    assert set(DECLARED) <= set(INFERENCE_DEFAULTS) <= set(InferConfig.model_fields)
