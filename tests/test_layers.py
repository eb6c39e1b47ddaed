"""The declared layers (pyproject's import-linter contracts) and the absence of import circles,
counting imports made inside functions (grimp reads every import statement of a module); the
notebooks' imports of lceval (at most three modules each, a paper's own modules reached through
its ``Benchmark``)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``lceval`` package under ``root`` with ``root``'s pyproject."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_layer_contracts_hold() -> None:
    done = _lint(REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of lceval's code (no data files) and pyproject.toml, to break on purpose."""
    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(
        REPO / "lceval",
        root / "lceval",
        ignore=shutil.ignore_patterns("__pycache__", "resources", "*.csv", "*.json", "*.yaml"),
    )
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_an_upward_import_inside_a_function_breaks_the_layers(package_copy: Path) -> None:
    records = package_copy / "lceval" / "core" / "records.py"
    original = records.read_text(encoding="utf-8")
    try:
        records.write_text(original + "\n\ndef _up():\n    from lceval import cli\n")
        done = _lint(package_copy)
    finally:
        records.write_text(original, encoding="utf-8")
    assert done.returncode != 0
    assert "lceval.core is not allowed to import lceval.cli" in done.stdout
    assert "lceval.core.records -> lceval.cli" in done.stdout


def test_a_paper_importing_another_breaks_the_independence(package_copy: Path) -> None:
    score = package_copy / "lceval" / "benchmarks" / "leval" / "score.py"
    original = score.read_text(encoding="utf-8")
    try:
        score.write_text(original + "\n\ndef _other():\n    from lceval.benchmarks import ruler\n")
        done = _lint(package_copy)
    finally:
        score.write_text(original, encoding="utf-8")
    assert done.returncode != 0
    assert "BROKEN" in done.stdout and "lceval.benchmarks.ruler" in done.stdout


def test_no_import_circle() -> None:
    """No module reaches itself through imports (siblings a layer lets import each other
    included): for every import a -> b, no chain leads from b back to a."""
    graph = grimp.build_graph("lceval", cache_dir=None)
    circles = []
    for a in sorted(graph.modules):
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            back = graph.find_shortest_chain(importer=b, imported=a)
            if back is not None:
                circles.append(" -> ".join((a, *back)))
    assert not circles, "import circles:\n" + "\n".join(circles)


NOTEBOOK_MODULES = 3
"""Issue 39: a notebook imports at most this many lceval modules (``lceval.run``,
``lceval.report``, ``lceval.notebook``) and reaches a paper's modules through its Benchmark."""


def lceval_imports(source: str) -> set[str]:
    """The lceval modules that ``source`` imports: ``import a.b`` counts ``a.b``; ``from a import
    b`` counts ``a.b`` when that is a module (``from lceval import contamination``), else ``a``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "lceval"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "lceval":
            for alias in node.names:
                found.add(_module_or_parent(f"{node.module}.{alias.name}", str(node.module)))
    return found


def _module_or_parent(name: str, parent: str) -> str:
    """``name`` when it is a module, else ``parent`` (``name`` is a function or class)."""
    try:
        return name if importlib.util.find_spec(name) is not None else parent
    except ModuleNotFoundError:  # parent is a module, not a package
        return parent


def test_the_import_count_sees_submodules_and_packages() -> None:
    source = (
        "import lceval.run\nfrom lceval import core, contamination\n"
        "from lceval.benchmarks.cifbench import data as d, tables\n"
        "from lceval.notebook import RunDir\nimport pandas\n"
    )
    assert lceval_imports(source) == {
        "lceval.run",
        "lceval.core",
        "lceval.contamination",
        "lceval.benchmarks.cifbench.data",
        "lceval.benchmarks.cifbench.tables",
        "lceval.notebook",
    }


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_a_notebook_imports_at_most_three_lceval_modules(path: Path) -> None:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    modules = set().union(
        *(lceval_imports("".join(c["source"])) for c in cells if c["cell_type"] == "code")
    )
    papers = sorted(m for m in modules if m.startswith("lceval.benchmarks."))
    assert not papers, f"{path.name} imports a paper's modules (use its Benchmark): {papers}"
    assert len(modules) <= NOTEBOOK_MODULES, f"{path.name} imports {sorted(modules)}"
