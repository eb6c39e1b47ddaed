"""The suite's own rules (conftest.py at the repository root) and the notebooks' JupyterLab
hygiene: tests write only into temporary folders, the tiers are declared markers, the notebooks'
test-time values name real parameters, and each notebook opens on the ``lceval`` kernel with
every parameter explained."""

from __future__ import annotations

import ast
import importlib.util
import io
import os
import sys
import tomllib
import types
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _root_conftest() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("lceval_root_conftest", REPO / "conftest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ROOT = _root_conftest()


def _parameters(nb_path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(nb_path, 4)
    return nb.cells[1]


def test_outputs_root_is_a_temporary_folder_outside_the_checkout():
    root = Path(os.environ["LCEVAL_OUTPUTS"]).resolve()
    assert root.is_dir()
    assert REPO.resolve() not in root.parents
    from lceval.core.io import outputs_root

    assert outputs_root() == root  # notebooks' outputs_root = None resolves here


def test_snapshot_sees_new_changed_and_removed_files(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    (tmp_path / "old.txt").write_text("x")
    before = ROOT.snapshot(tmp_path)
    assert ROOT.changes(before, ROOT.snapshot(tmp_path)) == []
    (tmp_path / "run" / "run.json").write_text('{"plan": 1}')
    (tmp_path / "old.txt").unlink()
    (tmp_path / "new").mkdir()
    assert ROOT.changes(before, ROOT.snapshot(tmp_path)) == [
        "+ new",
        "- old.txt",
        "~ run/run.json",
    ]
    assert ROOT.snapshot(tmp_path / "missing") == {}


def test_tiers_are_declared_markers_under_strict_markers():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--strict-markers" in cfg["addopts"].split()
    declared = {m.split(":")[0] for m in cfg["markers"]}
    assert {"slow", *ROOT.SLOW_KINDS} <= declared


@pytest.mark.parametrize("stem", sorted(ROOT.NOTEBOOK_TEST_PARAMS))
def test_notebook_test_values_name_parameters_of_the_notebook(stem):
    path = REPO / "notebooks" / f"{stem}.ipynb"
    cell = _parameters(path)
    values = ROOT.NOTEBOOK_TEST_PARAMS[stem]
    source = ROOT._parameters_source(cell.source, stem, values)
    namespace: dict[str, object] = {}
    exec(compile(source, str(path), "exec"), namespace)  # literals only (DEVELOPING.md)
    assert {k: namespace[k] for k in values} == values


def test_a_test_value_for_a_missing_parameter_is_refused():
    with pytest.raises(
        pytest.UsageError, match=r"\['nb'\]: limt not in the notebook's parameters cell"
    ):
        ROOT._parameters_source("limit = None\n", "nb", {"limt": 3})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_opens_on_the_lceval_kernel_with_each_parameter_explained(path):
    nb = nbformat.read(path, 4)
    assert nb.metadata["kernelspec"]["name"] == "lceval"
    cell = nb.cells[1]
    assert "parameters" in cell.metadata.get("tags", [])
    lines = cell.source.splitlines()
    for node in ast.parse(cell.source).body:
        assert isinstance(node, ast.Assign), ast.dump(node)[:80]
        name = node.targets[0].id  # type: ignore[attr-defined]
        first = lines[node.lineno - 1]
        above = lines[node.lineno - 2] if node.lineno > 1 else ""
        assert "#" in first or above.lstrip().startswith("#"), f"{path.stem}: {name} unexplained"
    for c in nb.cells:  # committed with outputs stripped
        if c.cell_type == "code":
            assert not c.outputs and c.execution_count is None, path.stem


def test_information_lines_go_to_stdout_inside_a_kernel(monkeypatch):
    from lceval.core import console

    assert console.terminal() is sys.stderr  # a terminal: stderr
    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert console.in_kernel()
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert console.terminal() is out
    from lceval.models.base import log

    log("backend hf")
    assert out.getvalue() == "lceval: backend hf\n"


def test_every_benchmark_has_test_settings():
    """Each registered paper declares its test settings in ``tests/papers.py`` (the small builds,
    the full pipeline, the numbered items), so no suite table silently skips it."""
    from lceval.benchmarks import registry
    from tests import papers

    assert set(registry.BENCHMARKS) == set(papers.PAPERS)
