"""DEVELOPING.md's "Add a benchmark" walk-through, checked two ways with a toy benchmark
(``__init__.py`` with ``BENCHMARK``, ``gold.py``, ``build.py``, ``score.py``, ``report.py``):

- as a folder ``lceval/benchmarks/toy/`` in a copy of the package, beside its notebook, params
  files and tests (its entry in ``tests/papers.py``), and nothing else: the registry discovers it,
  the suite's tables read its test settings, and ``lceval build``, ``infer`` (a tiny random
  Llama through the hf backend), ``score`` and ``report`` run on it in a fresh interpreter;
- as a plugin package outside lceval, registered at run time
  (``lceval.benchmarks.registry.register``), through the CLI in this process, with no file of lceval
  touched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from lceval.benchmarks import registry
from lceval.cli import main
from lceval.core.io import RunDir

FILES = {
    "__init__.py": '''
        """Toy: echo a word from a short context (a test of the add-a-benchmark walk-through)."""

        from lceval.benchmarks.base import Benchmark, ScorerSpec, lazy
        from toybench.gold import GOLD, TASKS

        BENCHMARK = Benchmark(
            key="toy",
            title="Toy echo benchmark",
            tasks=TASKS,
            build=lazy("toybench.build:build_toy"),
            gold=GOLD,
            scorers={
                "toy": ScorerSpec(
                    "toy", "1", "the word appears in the answer", ("accuracy",),
                    score=lazy("toybench.score:score_toy"),
                ),
                "toy:exact": ScorerSpec(
                    "toy:exact", "1", "the answer is the word", ("accuracy",),
                    score=lazy("toybench.score:score_exact"),
                ),
            },
            report=lazy("toybench.report:report_toy"),
            headline=lazy("toybench.report:headline"),
        )
    ''',
    "gold.py": '''
        from dataclasses import dataclass

        from lceval.core.records import Gold

        TASKS = ("ECHO",)


        @dataclass(frozen=True)
        class WordGold(Gold):
            word: str
            """The word the answer must contain."""


        GOLD = {"ECHO": WordGold}
    ''',
    "build.py": """
        from lceval import params as declared
        from lceval.benchmarks.base import BuildResult
        from lceval.core.records import Context, Sample
        from toybench.gold import WordGold

        WORDS = ("apple", "river", "stone", "cloud")


        class Config(declared.Declared):
            n: declared.Positive = 3
            seed: int = 0


        def build_toy(params):
            n = declared.parse(Config, params, "toy").n
            ctx = Context(id="toy/c0", text="Words: " + ", ".join(WORDS), n_tokens=8,
                          encoding="o200k_base")
            samples = [
                Sample(id=f"toy/ECHO/{i}", benchmark="toy", task="ECHO", context_id=ctx.id,
                       instruction=f"Repeat the word {WORDS[i % 4]}.",
                       gold=WordGold(WORDS[i % 4]), max_new_tokens=4)
                for i in range(n)
            ]
            return BuildResult(samples=samples, contexts=[ctx])
    """,
    "score.py": """
        from lceval.core.records import Judgement


        def score_toy(sample, response, context):
            hit = sample.gold.word in response.text.lower()
            return Judgement(value=float(hit), parts={"hit": float(hit)})


        def score_exact(sample, response, context):
            return Judgement(value=float(response.text.strip().lower() == sample.gold.word))
    """,
    "report.py": """
        from lceval.metrics import Headline, mean_statistic
        from lceval.report.reporting import save_table


        def report_toy(run, scores, samples):
            table = scores.groupby(["model", "task"], as_index=False)["value"].mean()
            save_table(table, run.report, "toy_accuracy", index=False)
            return {"accuracy": table}


        def headline(scores, samples):
            import pandas as pd

            frame = pd.DataFrame({
                "model": scores["model"].astype(str).to_numpy(),
                "sample_id": scores["sample_id"].to_numpy(),
                "group": scores["task"].astype(str).to_numpy(),
                "cluster": scores["sample_id"].to_numpy(),
                "value": scores["value"].to_numpy(float),
                "count": 1.0,
            })

            def stat(sums, groups):
                return mean_statistic(dict.fromkeys(groups, 1.0))(sums, groups)

            return Headline("toy", "accuracy", "0..1", frame, ("value", "count"), stat)
    """,
}


REPO = Path(__file__).resolve().parents[1]


def _in_lceval(text: str) -> str:
    """A toy file of the plugin package rewritten for the folder ``lceval/benchmarks/toy/``."""
    return textwrap.dedent(text).lstrip().replace("toybench", "lceval.benchmarks.toy")


FOLDER_INIT = """
    BENCHMARK = dataclasses.replace(BENCHMARK, notebooks=("12_toy.ipynb",))
"""

TOY_SETTINGS = """
    PAPERS["toy"] = PaperTests(small=lambda p: {"n": 2}, paper="Toy", items=("Table 1",))
"""
"""The toy's entry in the suite's table of test settings (``tests/papers.py``)."""

REPRODUCTION = """
    - paper: Toy
      item: Table 1
      caption: Accuracy per model and task
      status: reproduced
      from: run
      where: 12_toy.ipynb; lceval.benchmarks.toy.report.report_toy
      test: tests/benchmarks/toy/test_score.py::test_score_toy
"""

NOTEBOOK_CELLS = [
    ("markdown", "# 12 · Toy: echo a word\n\nBuilds, answers, scores and reports the toy run."),
    ("code", 'run_id = "toy-smoke"\noutputs_root = None\nn = 3'),
    ("code", "import lceval.run"),
    ("code", 'lceval.run.build(run_id, "toy", {"n": n}, root=outputs_root)'),
]

TOY_TEST = """
    from lceval.benchmarks.toy.gold import WordGold
    from lceval.benchmarks.toy.score import score_toy
    from lceval.core.records import Response, Sample


    def test_score_toy():
        s = Sample(id="toy/ECHO/0", benchmark="toy", task="ECHO", instruction="x",
                   gold=WordGold("apple"))
        r = Response(sample_id=s.id, model="m", text="An apple.", config_hash="h")
        assert score_toy(s, r, None).value == 1.0
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.slow
def test_a_benchmark_is_its_folder(tmp_path: Path, tiny_model_dir: Path) -> None:
    """The toy is added by creating its folder, notebook, params and tests only (in a copy of
    the checkout's package): no list outside those files is edited."""
    import nbformat

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "lceval", repo / "lceval", ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(repo) for p in repo.rglob("*") if p.is_file()}
    folder = repo / "lceval" / "benchmarks" / "toy"
    for name, text in FILES.items():
        _write(folder / name, _in_lceval(text))
    _write(
        folder / "__init__.py",
        _in_lceval(FILES["__init__.py"]).replace(
            "from lceval.benchmarks.base", "import dataclasses\n\nfrom lceval.benchmarks.base", 1
        )
        + textwrap.dedent(FOLDER_INIT),
    )
    _write(folder / "reproduction.yaml", textwrap.dedent(REPRODUCTION).lstrip())
    nb = nbformat.v4.new_notebook()
    for kind, source in NOTEBOOK_CELLS:
        maker = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(maker(source))
    nb.cells[1].metadata["tags"] = ["parameters"]
    _write(repo / "notebooks" / "12_toy.ipynb", nbformat.writes(nb))
    params = "run_id: toy-smoke\noutputs_root: null\nn: 3\n"
    _write(repo / "params" / "12_toy" / "smoke.yaml", params)
    _write(repo / "params" / "12_toy" / "full.yaml", params.replace("n: 3", "n: 4"))
    _write(repo / "tests" / "benchmarks" / "toy" / "test_score.py", textwrap.dedent(TOY_TEST))
    settings = (REPO / "tests" / "papers.py").read_text(encoding="utf-8")
    _write(repo / "tests" / "papers.py", settings + textwrap.dedent(TOY_SETTINGS))
    after = {p.relative_to(repo) for p in (repo / "lceval").rglob("*") if p.is_file()}
    assert {p.parts[:3] for p in after - before} == {("lceval", "benchmarks", "toy")}

    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = str(tmp_path / "outputs")

    def run(*argv: str) -> str:
        done = subprocess.run(
            [sys.executable, *argv],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-3000:])
        return done.stdout

    tables = run(
        "-c",
        textwrap.dedent("""
        from lceval.cli import main
        main(["list"])
        from lceval.benchmarks import registry
        from lceval.report import reproduction
        from tests import papers
        t = papers.of("toy")
        print(registry.BENCHMARKS, t.small({}), t.paper, t.items, registry.get("toy").notebooks)
        print(sorted(set(reproduction.load_index(["toy"])["item"])))
    """),
    )
    assert "toy: Toy echo benchmark" in tables  # lceval list
    assert "'toy'" in tables and "{'n': 2}" in tables and "('12_toy.ipynb',)" in tables
    assert "['Table 1']" in tables
    smoke = str(repo / "params" / "12_toy" / "smoke.yaml")
    # the four steps in one process (each step alone: test_toy_benchmark_runs_end_to_end)
    printed = run(
        *("-m", "lceval", "--outputs", out, "eval", "toy", "--params", smoke, "--run-id", "t"),
        *("--backend", "hf", "--model", str(tiny_model_dir), "-o", "device=cpu"),
    )
    assert "accuracy (0..1)" in printed and "n=3" in printed  # the headline summary
    assert printed.strip().splitlines()[-1].startswith("report: ")
    run_dir = RunDir("t", out)
    scores = run_dir.read_scores()
    assert len(scores) == 3 and set(scores["scorer"]) == {"toy"}
    assert (run_dir.report / "toy_accuracy.csv").is_file()
    assert (run_dir.report / "index.html").is_file()
    run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/benchmarks/toy")


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    package = tmp_path / "plugins" / "toybench"
    package.mkdir(parents=True)
    for name, text in FILES.items():
        (package / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(package.parent))
    registry.register("toy", "toybench")
    yield tmp_path / "outputs"
    registry.unregister("toy")


def test_toy_benchmark_runs_end_to_end(toy: Path, tiny_model_dir: Path, capsys) -> None:
    out = ["--outputs", str(toy)]
    assert main(["list"]) == 0
    assert "toy: Toy echo benchmark" in capsys.readouterr().out
    assert main([*out, "build", "toy", "--run-id", "t", "-p", "n=4"]) == 0
    argv = ["infer", "t", "--backend", "hf", "--model", str(tiny_model_dir), "-o", "device=cpu"]
    assert main([*out, *argv]) == 0
    assert main([*out, "score", "t"]) == 0
    assert main([*out, "score", "t", "--scorer", "toy:exact"]) == 0
    assert main([*out, "report", "t"]) == 0
    printed = capsys.readouterr().out
    assert "toy: scorer toy\n" in printed and "accuracy" in printed
    assert printed.strip().splitlines()[-1].startswith("report: ") and len(printed) < 5000
    run = RunDir("t", toy)
    scores = run.read_scores()
    assert sorted(scores["scorer"].unique()) == ["toy", "toy:exact"]
    assert len(scores) == 8 and scores["value"].between(0, 1).all()
    responses = [json.loads(line) for line in run.responses.read_text().splitlines()]
    assert len(responses) == 4 and all(r["finish_reason"] != "error" for r in responses)
    table = pd.read_csv(run.report / "toy_accuracy.csv")
    assert list(table.columns) == ["model", "task", "value"] and len(table) == 1
    assert (run.report / "index.html").exists()
    assert main([*out, "compare", "t", "--leaderboard", "--scorer", "toy:exact"]) == 0
    assert "accuracy" in capsys.readouterr().out  # the headline the toy declares


def test_register_refuses_a_taken_key() -> None:
    from lceval.core.errors import LcevalError

    with pytest.raises(LcevalError, match="already registered to lceval.benchmarks.lifbench"):
        registry.register("lifbench", "somewhere.else")
    with pytest.raises(LcevalError, match="must be a Python identifier"):
        registry.register("no-dash", "x")


def test_walk_through_names_what_exists() -> None:
    """The Benchmark(...) of DEVELOPING.md's step 7 uses only real fields, its lazy targets
    exist, and the registry call it names is the one this test's toy benchmark uses."""
    import dataclasses
    import importlib
    import re
    import textwrap

    from lceval.benchmarks.base import Benchmark

    text = (Path(__file__).parents[1] / "DEVELOPING.md").read_text(encoding="utf-8")
    assert "../shared" not in text and "## Conventions" in text  # STYLE.md was folded in
    assert not (Path(__file__).parents[1] / "STYLE.md").exists()
    start = text.index("   BENCHMARK = LEvalBenchmark(")
    block = text[start : text.index("```", start)]
    fields = {f.name for f in dataclasses.fields(Benchmark)}
    used = set(re.findall(r"^\s{7}(\w+)=", block, flags=re.M))
    assert used and used <= fields, used - fields
    for target in re.findall(r'lazy\("([\w.]+:\w+)"\)', block):
        module, _, name = target.partition(":")
        assert hasattr(importlib.import_module(module), name), target
    # copy-paste-able: run in leval's __init__.py, it declares what the real BENCHMARK does
    leval = importlib.import_module("lceval.benchmarks.leval")
    space = dict(vars(leval))
    exec(textwrap.dedent(block), space)  # noqa: S102 - the documentation's own example

    def plain(value: object) -> object:  # lazy(...) targets by name, specs field by field
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return getattr(value, "__qualname__", value) if callable(value) else value

    for name in used:
        assert plain(getattr(space["BENCHMARK"], name)) == plain(getattr(leval.BENCHMARK, name))
    assert 'lceval.benchmarks.registry.register("toy", "toybench")' in text
