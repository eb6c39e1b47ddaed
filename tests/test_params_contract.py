"""The params-file contract (DEVELOPING.md, "Notebooks and params").

1. Every notebook's ``params/<notebook>/{smoke,full}.yaml`` holds exactly the keys of the
   notebook's ``parameters`` cell, and the smoke file holds its defaults.
2. A notebook that builds a benchmark's data (it calls ``pipeline.build(run_id, "<key>", ...)``
   and is listed in that benchmark's ``notebooks``) has params files that ``lceval build <key>
   --params FILE`` takes as they are: the notebook-only keys are declared and ignored
   (``check_keys(..., ignored=...)`` and ``lceval.benchmark.NOTEBOOK_PARAMS``).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
import yaml

from lceval import registry
from lceval.cli import main

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
BUILD_CALL = re.compile(r"pipeline\.build\(\s*run_id,\s*\"(\w+)\"")

SIDE_BUILDS = {
    "10_contamination": "builds a CIF-Bench demo run as a side step from fixed demo params; its "
    "params files are the contamination study's, not a builder's",
}
"""Notebooks that call ``pipeline.build`` for a benchmark they do not belong to (the contract's
second part does not cover them)."""

SMALL: dict[str, Any] = {
    "lifbench": lambda p: {"max_samples_per_task": 1, "lengths": p["lengths"][:2]},
    "manyifeval": lambda p: {"n_prompts": 1},
    "longgenbench": lambda p: {"n_per_scenario": 1},
    "ruler": lambda p: {"num_samples": 1, "lengths": p["lengths"][:1]},
    # the dense retriever loads a model (tests/benchmarks/leval covers it, marked slow)
    "leval": lambda p: {"limit_docs": 1, "retrieval": [r for r in p["retrieval"] if r != "dense"]},
    "cifbench": lambda p: {"n_inputs": 1},
}
"""Per benchmark, ``-p`` overrides that keep a build small (counts, lengths, no model-backed
retrieval): every key of the file is still passed, so the key check is the file's own."""

KNOWN_BROKEN: dict[str, str] = {}
"""notebook stem -> why its params file does not build yet (strict xfail); empty: all build."""


def _parameters(notebook: Path) -> dict[str, Any]:
    """The literal defaults of the notebook's cell tagged ``parameters``."""
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{notebook.name}: expected one cell tagged 'parameters'"
    out = {}
    for node in ast.parse(cells[0].source).body:
        assert isinstance(node, ast.Assign) and len(node.targets) == 1, ast.unparse(node)
        target = node.targets[0]
        assert isinstance(target, ast.Name), ast.unparse(node)
        out[target.id] = ast.literal_eval(node.value)
    return out


def _builds(notebook: Path) -> set[str]:
    """Benchmark keys the notebook builds with ``pipeline.build(run_id, "<key>", ...)``."""
    nb = nbformat.read(notebook, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return set(BUILD_CALL.findall(code))


def _owner(stem: str) -> str | None:
    for key in registry.BENCHMARKS:
        if f"{stem}.ipynb" in registry.get(key).notebooks:
            return key
    return None


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path} must hold a mapping"
    return data


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_params_files_have_exactly_the_notebook_parameters(notebook):
    defaults = _parameters(notebook)
    for name in ("smoke", "full"):
        path = REPO / "params" / notebook.stem / f"{name}.yaml"
        assert path.exists(), f"{path.relative_to(REPO)} is missing"
        keys = set(_load(path))
        assert keys == set(defaults), (
            f"{path.relative_to(REPO)}: missing {sorted(set(defaults) - keys)}, "
            f"extra {sorted(keys - set(defaults))}"
        )
    smoke = _load(REPO / "params" / notebook.stem / "smoke.yaml")
    differ = {k: (defaults[k], smoke[k]) for k in defaults if defaults[k] != smoke[k]}
    assert not differ, f"{notebook.stem}: notebook defaults differ from smoke.yaml: {differ}"


def test_every_build_call_is_a_benchmark_notebook_or_a_declared_side_build():
    for notebook in NOTEBOOKS:
        for key in _builds(notebook):
            if _owner(notebook.stem) != key:
                assert notebook.stem in SIDE_BUILDS, (
                    f"{notebook.stem} builds {key} but is not in its Benchmark.notebooks"
                )


def _cases() -> list[Any]:
    cases = []
    for notebook in NOTEBOOKS:
        key = _owner(notebook.stem)
        if key is None or key not in _builds(notebook):
            continue
        marks = []
        if notebook.stem in KNOWN_BROKEN:
            marks.append(pytest.mark.xfail(reason=KNOWN_BROKEN[notebook.stem], strict=True))
        for path in sorted((REPO / "params" / notebook.stem).glob("*.yaml")):
            cases.append(pytest.param(key, path, marks=marks, id=f"{notebook.stem}/{path.stem}"))
    return cases


def _offline_data(key: str, params: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Overrides that point the build at data available offline, as the notebook would; skips
    the test (saying why) where the file names data this checkout does not hold."""
    if key == "leval" and params.get("data_path") is None:
        pytest.skip("data_path: null reads the hub dataset L4NLP/LEval (not offline)")
    if key == "cifbench" and params.get("demo"):
        from lceval.benchmarks.cifbench import data as cif_data

        return dict(cif_data.write_demo_dataset(tmp_path / "cif-demo"))  # as notebook 11 does
    for field in ("data_path", "public_dir", "private_dir", "metadata", "alpaca_path", "path"):
        value = params.get(field)
        if isinstance(value, str) and value != "demo" and not (REPO / value).exists():
            pytest.skip(f"{field}: {value} is not in this checkout (user-provided data)")
    return {}


@pytest.mark.parametrize(("key", "path"), _cases())
def test_lceval_build_takes_the_notebook_params_file(key, path, tmp_path, capsys):
    params = _load(path)
    overrides = {**SMALL[key](params), **_offline_data(key, params, tmp_path)}
    argv = ["--outputs", str(tmp_path / "out"), "build", key, "--params", str(path)]
    argv += ["--run-id", "contract"]
    for k, v in overrides.items():
        text = v if isinstance(v, str) else str(v) if isinstance(v, Path) else json.dumps(v)
        argv += ["-p", f"{k}={text}"]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 0, err.strip().splitlines()[-1:] or err
    assert (tmp_path / "out" / "contract" / "samples.jsonl").stat().st_size > 0
