"""No private API of Ray, vLLM, torch or argparse, and no reading of a library's own source files,
in lceval, its tests or its benches outside the adapter modules ``lceval/models/_compat/`` (issue
52): each such use is a break waiting for the library's next release, so it lives in one adapter
per library with the public feature it waits for named beside it. The adapters' own tests
(``tests/models/test_compat.py``) reach what the adapters reach; this file names the patterns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ADAPTERS = REPO / "lceval" / "models" / "_compat"
SCANNED = ("lceval", "tests", "bench")
"""The folders whose ``.py`` files are scanned."""
LEFT_OUT = ("lceval/models/_compat", "tests/models/test_compat.py", "tests/test_private_apis.py")
"""The adapters, their tests, and this scan (its patterns and examples)."""

PRIVATE = {
    r"\b\w+\._private\b": "a library's _private package (Ray's)",
    r"\bray\.core\.generated\b": "Ray's generated gRPC stubs of its GCS",
    r"_scaled_dot_product_\w+": "torch's private fused attention ops",
    r"\bops\.aten\._\w+": "a private aten op",
    r"\._actions\b|_SubParsersAction|_option_string_actions": "argparse's private attributes",
    r"/proc/self/fd": "a file descriptor's target read from /proc (psutil lists open files)",
    r"\binspect\.getsource\b": "a library's source read",
}
"""Pattern -> what it reaches (one line; the failure names the file and line)."""
SOURCE_READ = (
    r"\bfind_spec\(\s*[\"'](?!lceval\b)|submodule_search_locations|\bspec\.origin\b",
    r"\bast\.parse\(",
)
"""Both in one file: a library located by name or its files found, and a source parsed (vLLM's
``arg_utils.py``); the ``ast.parse`` line is named (lceval's own modules parsed, as the layer
tests do, are not a library's source)."""


def private_uses(root: Path) -> list[str]:
    """``path:line: what (text)`` for each line matching :data:`PRIVATE` in the ``.py`` files
    under ``root``'s :data:`SCANNED` folders but :data:`LEFT_OUT`."""
    found = []
    for path in sorted(p for folder in SCANNED for p in (root / folder).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(rel == out or rel.startswith(out + "/") for out in LEFT_OUT):
            continue
        text = path.read_text(encoding="utf-8")
        patterns = dict(PRIVATE)
        if re.search(SOURCE_READ[0], text):
            patterns[SOURCE_READ[1]] = "a library's source file parsed (find_spec + ast.parse)"
        for n, line in enumerate(text.splitlines(), 1):
            for pattern, what in patterns.items():
                if re.search(pattern, line):  # one finding per line
                    found.append(f"{rel}:{n}: {what} ({line.strip()[:80]})")
                    break
    return found


def test_no_private_api_outside_the_adapters() -> None:
    found = private_uses(REPO)
    assert not found, "private APIs outside lceval/models/_compat/:\n" + "\n".join(found)


def test_each_adapter_use_names_what_it_waits_for() -> None:
    """Every function of an adapter module says which public feature or upstream issue it
    waits for (``Waits for:`` in its docstring)."""
    import ast

    for path in sorted(ADAPTERS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                doc = ast.get_docstring(node) or ""
                assert "Waits for:" in doc, f"{path.name}:{node.lineno} {node.name}"


@pytest.mark.parametrize("folder", ["lceval/models", "tests/cli", "bench"])
@pytest.mark.parametrize(
    "line",
    [
        "import ray._private.services as services",
        "out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)",
        "flags = [f for a in parser._actions for f in a.option_strings]",
        'target = os.readlink("/proc/self/fd/2")',
        "spec = importlib.util.find_spec('vllm')\ntree = ast.parse(f.read())",
        "from ray.core.generated import gcs_service_pb2",
    ],
)
def test_the_scan_finds_a_private_use_and_names_file_and_line(
    tmp_path: Path, folder: str, line: str
) -> None:
    for out in ("lceval/models/_compat/y.py", "tests/models/test_compat.py"):
        (tmp_path / out).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / out).write_text(line, encoding="utf-8")  # left out
    (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / folder / "x.py").write_text(f"a = 1\n{line}\n", encoding="utf-8")
    (tmp_path / folder / "z.py").write_text("tree = ast.parse(cell)", encoding="utf-8")
    found = private_uses(tmp_path)
    last = 2 + line.count("\n")
    assert len(found) == 1 and found[0].startswith(f"{folder}/x.py:{last}: "), found
