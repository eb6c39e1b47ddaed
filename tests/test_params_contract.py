"""The params-file contract (DEVELOPING.md, "Notebooks and params").

1. Every notebook's ``params/<notebook>/{smoke,full}.yaml`` holds exactly the keys of the
   notebook's ``parameters`` cell, and the smoke file holds its defaults.
2. A notebook that builds a benchmark's data (it calls ``lceval.run.build(run_id, "<key>", ...)``
   and is listed in that benchmark's ``notebooks``) has params files that ``lceval build <key>
   --params FILE`` takes as they are: the builder's ``Config`` reads its keys through
   :func:`lceval.params.parse`, the keys of the notebook's other declared sections
   (:data:`lceval.params.NOTEBOOK_SECTIONS` and the benchmark's own) are accepted and ignored;
   the samples it builds hash as committed in ``tests/fixtures/params_build_hashes.json`` (set
   ``LCEVAL_WRITE_HASHES=1`` to rewrite it after a change that is meant to alter samples).
3. One spelling per concept: no params file or parameters cell uses an old spelling
   (:data:`lceval.params.RENAMED`); a builder refuses an old spelling naming the new one, an
   unknown key naming close matches, and a value of the wrong type naming the key and the type
   expected, each in one line.
4. Every params file and every notebook's ``parameters`` cell follow the notebook's JSON Schema,
   generated from the declared sections that read its keys.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
import yaml

from lceval.benchmarks import registry
from lceval.cli import main
from lceval.params import RENAMED
from tests import papers

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
BUILD_CALL = re.compile(r"lceval\.run\.build\(\s*run_id,\s*\"(\w+)\"")

SIDE_BUILDS = {
    "10_contamination": "builds a CIF-Bench demo run as a side step from fixed demo params; its "
    "params files are the contamination study's, not a builder's",
}
"""Notebooks that call ``lceval.run.build`` for a benchmark they do not belong to (the contract's
second part does not cover them)."""

SMALL: dict[str, Any] = {k: papers.of(k).small or (lambda p: {}) for k in registry.BENCHMARKS}
"""Per benchmark, ``-p`` overrides that keep a build small (counts, lengths, no model-backed
retrieval; declared in ``tests/papers.py``): every key of the file is still passed, so
the key check is the file's own."""

HASHES = REPO / "tests" / "fixtures" / "params_build_hashes.json"
"""notebook/params file -> sha256 of the samples.jsonl that the small build of it writes."""

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
    """Benchmark keys the notebook builds with ``lceval.run.build(run_id, "<key>", ...)``."""
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
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v != "demo" and not (REPO / v).exists():
                pytest.skip(f"{field}: {v} is not in this checkout (user-provided data)")
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
    samples = (tmp_path / "out" / "contract" / "samples.jsonl").read_bytes()
    assert samples
    name = f"{path.parent.name}/{path.stem}"
    digest = hashlib.sha256(samples).hexdigest()
    known = json.loads(HASHES.read_text(encoding="utf-8")) if HASHES.exists() else {}
    if os.environ.get("LCEVAL_WRITE_HASHES"):
        HASHES.write_text(json.dumps({**known, name: digest}, indent=1, sort_keys=True) + "\n")
    else:
        assert known.get(name) == digest, f"{name}: built samples differ from the committed hash"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_old_spelling(notebook):
    files = sorted((REPO / "params" / notebook.stem).glob("*.yaml"))
    for keys, where in [(_parameters(notebook), notebook.name)] + [
        (_load(f), str(f.relative_to(REPO))) for f in files
    ]:
        old = sorted(set(keys) & set(RENAMED))
        assert not old, f"{where}: old spelling {old}; use {[RENAMED[k] for k in old]}"


def _builder_cases() -> list[Any]:
    return [
        pytest.param(key, path, id=f"{path.parent.name}/{path.stem}")
        for key, path in [(c.values[0], c.values[1]) for c in _cases()]
        if path.stem == "smoke"
    ]


def _refused(key: str, params: dict[str, Any], capsys: Any) -> str:
    rc = main(
        [
            "build",
            key,
            "--run-id",
            "never",
            *[a for k, v in params.items() for a in ("-p", f"{k}={json.dumps(v)}")],
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(("key", "path"), _builder_cases())
def test_builder_refuses_unknown_old_and_mistyped_keys(key, path, capsys):
    config = registry.get(key).params_schema()
    assert config is not None, f"{key} declares no params schema"
    declared = sorted(config.model_fields)
    real = declared[0]
    err = _refused(key, {real + "x": 1}, capsys)
    assert f"unknown parameter '{real}x'" in err and f"did you mean {real}" in err, err
    for old, new in RENAMED.items():
        err = _refused(key, {old: 1}, capsys)
        assert f"'{old}' is now spelled '{new}'" in err, err
    err = _refused(key, {"seed": "seven"}, capsys)
    assert "seed must be" in err and "integer" in err and "got 'seven' (str)" in err, err


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_params_files_and_parameters_cell_follow_the_generated_schema(notebook):
    """Every parameter of the notebook is declared by a section (:func:`sections`); every params
    file and the ``parameters`` cell pass those sections (as ``lceval run`` checks them) and the
    notebook's JSON Schema generated from them (``lceval schema``), whose committed copy under
    lceval/schemas/params/ is current."""
    from jsonschema import Draft202012Validator

    from lceval.cli.notebooks import check_params, notebook_schemas, sections

    declared = {k for section in sections(notebook) for k in section.model_fields}
    undeclared = sorted(set(_parameters(notebook)) - declared)
    assert not undeclared, f"{notebook.stem}: parameters no section declares: {undeclared}"
    schema = notebook_schemas()[notebook.stem]
    committed = REPO / "lceval" / "schemas" / "params" / f"{notebook.stem}.schema.json"
    assert json.loads(committed.read_text(encoding="utf-8")) == json.loads(json.dumps(schema)), (
        f"{committed.name} is stale: run lceval schema lceval/schemas/params"
    )
    validator = Draft202012Validator(schema)
    files = sorted((REPO / "params" / notebook.stem).glob("*.yaml"))
    for where, values in [(notebook.name, _parameters(notebook))] + [
        (str(f.relative_to(REPO)), _load(f)) for f in files
    ]:
        check_params(notebook, values, where)
        errors = sorted(validator.iter_errors(values), key=lambda e: list(e.path))
        assert not errors, f"{where}: {list(errors[0].path)}: {errors[0].message}"


@pytest.mark.parametrize(
    ("stem", "values", "message"),
    [
        ("10_contamination", {"part": "title"}, "part must be one of prompt, context, reference"),
        ("09_ntk_base_sweep", {"lengths": [0]}, "lengths[0] must be >= 1, got 0 (int)"),
        ("00_overview", {"alpha": 2}, "alpha must be <= 1.0, got 2 (int)"),
        ("04_curse_of_instructions", {"refine_rounds": -1}, "refine_rounds must be >= 0"),
        ("11_cif_bench", {"rebuild": "yes"}, "rebuild must be true or false, got 'yes' (str)"),
        ("06_longgenbench", {"judge_max_new_tokens": 0}, "judge_max_new_tokens must be >= 1"),
    ],
)
def test_a_notebooks_own_parameter_is_checked_by_its_section(stem, values, message):
    from lceval.cli.notebooks import check_params
    from lceval.core.errors import LcevalError

    notebook = REPO / "notebooks" / f"{stem}.ipynb"
    with pytest.raises(LcevalError, match=re.escape(f"-p: {message}")) as err:
        check_params(notebook, {**_parameters(notebook), **values}, "-p")
    assert "\n" not in str(err.value)
