"""One setting, one reading, for every verb (issue 48; ``infer``'s own cases, property-based, are
tests/run/test_parity.py): ``lceval build``, ``eval``, ``score``, ``report`` and ``compare`` given
a setting as a flag, the same setting as a keyword of the Python verb, or as a key of a params
file, record the same configuration (run.json, scores.parquet, results.json, the comparison
table), values equal to the default included.

Unit-level: in-process calls (``lceval.cli.main``, never a subprocess) on the toy benchmark of
tests/test_add_benchmark.py registered as a plugin; no engine starts (the engine step of ``eval``
records its config and answers nothing, as in test_parity.py)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

import lceval
import lceval.api
import lceval.run.inference as inference
from lceval.benchmarks import registry
from lceval.cli import main
from lceval.core.io import RunDir
from lceval.core.records import Response
from lceval.core.store import ResponseStore
from lceval.report import compare as compare_module
from tests.test_add_benchmark import FILES

# run.json's keys that say when and where, not what was asked
VOLATILE = {"created", "run_id", "versions", "git_commit", "sources"}


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy benchmark registered as a plugin (``toybench``); the folder of run folders."""
    plugins = tmp_path_factory.mktemp("plugins")
    (plugins / "toybench").mkdir()
    for name, text in FILES.items():
        text = textwrap.dedent(text).lstrip()
        # as lceval's own builders: a params file's inference keys are taken (run.json's)
        text = text.replace('"toy")', '"toy", declared.NOTEBOOK_SECTIONS)')
        (plugins / "toybench" / name).write_text(text, encoding="utf-8")
    sys.path.insert(0, str(plugins))
    registry.register("toy", "toybench")
    yield tmp_path_factory.mktemp("outputs")
    registry.unregister("toy")
    sys.path.remove(str(plugins))


def _recorded(root: Path, run_id: str) -> dict[str, Any]:
    meta = json.loads((RunDir(run_id, root).path / "run.json").read_text(encoding="utf-8"))
    return {k: v for k, v in meta.items() if k not in VOLATILE}


def _params_file(root: Path, values: dict[str, Any]) -> str:
    path = root / f"params-{len(list(root.glob('params-*')))}.yaml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------------- build
BUILD_CASES = [  # builder params, --seed, and an inference key the build declares
    ({}, None),
    ({"n": 3}, 0),  # the defaults' values, given
    ({"n": 2}, 5),
    ({"n": 2, "max_new_tokens": 64, "backend": "auto", "temperature": 0.0}, None),
]


@pytest.mark.parametrize(("params", "seed"), BUILD_CASES)
def test_build_flag_keyword_and_params_file_record_one_run(toy: Path, params, seed):
    flags = ["--seed", str(seed)] if seed is not None else []
    overrides = [x for k, v in params.items() for x in ("-p", f"{k}={json.dumps(v)}")]
    assert (
        main(["--outputs", str(toy), "build", "toy", "--run-id", "b-cli", *overrides, *flags]) == 0
    )
    path = _params_file(toy, params)
    assert (
        main(
            ["--outputs", str(toy), "build", "toy", "--run-id", "b-file", "--params", path, *flags]
        )
        == 0
    )
    lceval.build("b-py", "toy", dict(params), root=toy, seed=seed)
    cli = _recorded(toy, "b-cli")
    assert _recorded(toy, "b-py") == cli
    assert _recorded(toy, "b-file") == cli
    if seed is not None:
        assert cli["seed"] == seed


# ---------------------------------------------------------------------------------- eval
@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The engine step of ``eval`` recording the resolved inference config and the generation
    config each model gets (run.json's ``generation``); nothing loads or answers."""
    seen: list[dict[str, Any]] = []
    real = inference.layered

    def layered(*args: Any, **kwargs: Any) -> Any:
        cfg = real(*args, **kwargs)
        seen.append({"config": cfg.model_dump(exclude={"model", "models", "run_id"})})
        return cfg

    def answer(run, spec, config, contexts, batch_size, progress, pending, plans):
        seen.append(
            {
                "model": (spec.backend, spec.model, dict(spec.options)),
                "generation": config.model_dump(),
                "samples": sorted(s.id for _, chosen in plans for s in chosen),
            }
        )
        return []

    def steps(name: str) -> Any:
        return lambda run_id, **kw: seen.append({name: kw.get("scorer")})

    monkeypatch.setattr(inference, "layered", layered)
    monkeypatch.setattr(inference, "_infer_engine", answer)
    monkeypatch.setattr(inference, "check_load", lambda *a, **k: None)
    monkeypatch.setattr(inference, "check_fits", lambda *a, **k: "fits")
    monkeypatch.setattr(lceval.api, "check_load", lambda *a, **k: None)
    monkeypatch.setattr(lceval.api, "score", steps("score"))
    monkeypatch.setattr(lceval.api, "write_report", steps("report"))
    import lceval.report.index_page as index_page

    monkeypatch.setattr(index_page, "headline_rows", lambda *a, **k: [])
    monkeypatch.setattr(index_page, "report_summary", lambda *a, **k: "")
    return seen


EVAL_CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [  # (keywords, build params file)
    ({"model": "embedded"}, {}),
    # values equal to the defaults, given
    ({"model": "embedded", "backend": "auto", "temperature": 0.0, "top_p": 1.0, "seed": 0}, {}),
    (
        {
            "model": "embedded",
            "max_new_tokens": 16,
            "max_thinking_tokens": 128,
            "stop": ["END", "\n\n"],
            "temperature": 0.7,
            "top_p": 0.9,
            "seed": 3,
            "limit": 2,
            "batch_size": 4,
            "truncate": True,
            "scorer": "toy:exact",
            "backend_options": {"device": "cpu"},
            "backend": "hf",
        },
        {"n": 4},
    ),
    # issue 48: a build declaring backend hf; "auto" given (the default's value) is auto
    ({"model": "embedded", "backend": "auto"}, {"backend": "hf", "max_new_tokens": 8}),
    # the build's declared settings, none given over them
    ({"model": "embedded"}, {"backend": "hf", "max_new_tokens": 8, "temperature": 0.5}),
]


def _eval_flags(values: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if name == "backend_options":
            out += [x for k, v in value.items() for x in ("-o", f"{k}={v}")]
        elif name == "stop":
            out += [x for v in value for x in (flag, v)]
        elif value is True:
            out.append(flag)
        else:
            out += [flag, str(value)]
    return out


@pytest.mark.parametrize(("values", "params"), EVAL_CASES)
def test_eval_flag_and_keyword_record_one_config(toy: Path, engine, values, params):
    path = _params_file(toy, params) if params else None
    file = ["--params", path] if path else []
    flags = _eval_flags(values)
    assert main(["--outputs", str(toy), "eval", "toy", "--run-id", "e-cli", *file, *flags]) == 0
    cli = list(engine)
    engine.clear()
    lceval.evaluate("toy", run_id="e-py", root=toy, progress=False, params=path, **values)
    assert engine == cli
    assert _recorded(toy, "e-py") == _recorded(toy, "e-cli")
    config, generation = cli[0]["config"], cli[1]["generation"]
    for name, value in values.items():
        if name in config:
            assert config[name] == value, name
    for name in ("max_new_tokens", "temperature", "backend"):
        if name not in values and name in params:  # not given: the build's declared value
            assert config[name] == params[name], name
    assert {k: generation[k] for k in ("max_thinking_tokens", "stop")} == {
        "max_thinking_tokens": values.get("max_thinking_tokens"),
        "stop": values.get("stop", []),
    }
    assert cli[1]["model"][0] == values.get("backend", params.get("backend", "auto"))
    assert cli[-1] == {"report": values.get("scorer")}


# ------------------------------------------------------------------- score, report, compare
@pytest.fixture(scope="module")
def scored(toy: Path) -> tuple[Path, list[str]]:
    """Two toy runs with answers (a: every word, b: half of them), the same samples."""
    runs = ["s-a", "s-b"]
    for k, run_id in enumerate(runs):
        run = lceval.build(run_id, "toy", {"n": 4}, root=toy)
        answers = [
            Response(
                sample_id=s.id,
                model="m",
                text=s.instruction.split()[-1].rstrip(".") if i % (k + 1) == 0 else "no",
                config_hash="c",
            )
            for i, s in enumerate(run.read_samples())
        ]
        ResponseStore(run.responses).append(answers)
    return toy, runs


def _scores(root: Path, run_id: str) -> pd.DataFrame:
    df = RunDir(run_id, root).read_scores()
    return df.sort_values(["sample_id", "scorer"]).reset_index(drop=True)


@pytest.mark.parametrize("scorer", [None, "toy", "toy:exact"])  # "toy": the default, given
def test_score_flag_and_keyword_record_the_same_scores(scored, scorer):
    root, (run_id, _) = scored
    flags = ["--scorer", scorer] if scorer else []
    RunDir(run_id, root).scores.unlink(missing_ok=True)
    assert main(["--outputs", str(root), "score", run_id, *flags]) == 0
    cli = _scores(root, run_id)
    RunDir(run_id, root).scores.unlink()
    lceval.score(run_id, root=root, scorer=scorer, progress=False)
    pd.testing.assert_frame_equal(_scores(root, run_id), cli)
    assert set(cli["scorer"]) == {scorer or "toy"}


@pytest.mark.parametrize("scorer", [None, "toy:exact"])
def test_report_flag_and_keyword_record_the_same_results(scored, scorer):
    root, (run_id, _) = scored
    lceval.score(run_id, root=root, progress=False)
    lceval.score(run_id, root=root, scorer="toy:exact", progress=False)
    run = RunDir(run_id, root)

    def results() -> Any:
        found = sorted(run.report.rglob("results.json"))
        data = [json.loads(p.read_text(encoding="utf-8")) for p in found]
        for d in data:
            d.pop("written", None)  # the time of writing: seconds apart between the two
        return [p.relative_to(run.report) for p in found], data

    flags = ["--scorer", scorer] if scorer else []
    assert main(["--outputs", str(root), "report", run_id, *flags]) == 0
    cli = results()
    lceval.write_report(run_id, root=root, scorer=scorer)
    assert results() == cli


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"alpha": 0.05, "seed": 0, "no_tasks": False},  # the defaults' values, given
        {"alpha": 0.1, "seed": 4, "no_tasks": True, "scorer": "toy", "benchmark": "toy"},
    ],
)
def test_compare_flag_and_keyword_give_one_table(scored, monkeypatch, values):
    root, (run_a, run_b) = scored
    for run_id in (run_a, run_b):
        lceval.score(run_id, root=root, progress=False)
    seen: list[Any] = []
    real = compare_module.paired

    def paired(cfg: Any) -> Any:
        out = real(cfg)
        seen.append((cfg.model_dump(exclude={"root", "csv", "samples"}), out))
        return out

    monkeypatch.setattr(compare_module, "paired", paired)
    monkeypatch.setattr(compare_module, "setting_differences", lambda *a, **k: [])
    flags: list[str] = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        flags += ([flag] if value else []) if isinstance(value, bool) else [flag, str(value)]
    assert main(["--outputs", str(root), "compare", run_a, run_b, *flags]) == 0
    lceval.compare(run_a, run_b, root=root, **values)
    (cli_cfg, cli_table), (py_cfg, py_table) = seen
    assert py_cfg == cli_cfg
    pd.testing.assert_frame_equal(py_table, cli_table)
    for name, value in values.items():
        assert cli_cfg[name] == value, name
