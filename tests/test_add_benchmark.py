"""DEVELOPING.md's "Add a benchmark" walk-through, checked: a toy benchmark written as a package in
a temporary folder (``__init__.py`` with ``BENCHMARK``, ``gold.py``, ``build.py``, ``score.py``,
``report.py``) plus one registry entry made at run time (``lceval.registry.register``), then
``lceval build``, ``infer`` (a tiny random Llama through the hf backend), ``score`` and ``report``
through the CLI, with no file of lceval touched."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from lceval import registry
from lceval.cli import main
from lceval.io import RunDir

FILES = {
    "__init__.py": '''
        """Toy: echo a word from a short context (a test of the add-a-benchmark walk-through)."""

        from lceval.benchmark import Benchmark, ScorerSpec, lazy
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

        from lceval.records import Gold

        TASKS = ("ECHO",)


        @dataclass(frozen=True)
        class WordGold(Gold):
            word: str
            """The word the answer must contain."""


        GOLD = {"ECHO": WordGold}
    ''',
    "build.py": """
        from lceval.benchmark import BuildResult, check_keys
        from lceval.records import Context, Sample
        from toybench.gold import WordGold

        WORDS = ("apple", "river", "stone", "cloud")


        def build_toy(params):
            check_keys(params, {"n", "seed"}, "toy")
            n = int(params.get("n", 3))
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
        from lceval.records import Judgement


        def score_toy(sample, response, context):
            hit = sample.gold.word in response.text.lower()
            return Judgement(value=float(hit), parts={"hit": float(hit)})


        def score_exact(sample, response, context):
            return Judgement(value=float(response.text.strip().lower() == sample.gold.word))
    """,
    "report.py": """
        from lceval.metrics import Headline, mean_statistic
        from lceval.reporting import save_table


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
    from lceval.errors import LcevalError

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

    from lceval.benchmark import Benchmark

    text = (Path(__file__).parents[1] / "DEVELOPING.md").read_text(encoding="utf-8")
    assert "../shared" not in text and "[STYLE.md](STYLE.md)" in text
    assert (Path(__file__).parents[1] / "STYLE.md").is_file()
    start = text.index("   BENCHMARK = Benchmark(\n")
    block = text[start : text.index("```", start)]
    fields = {f.name for f in dataclasses.fields(Benchmark)}
    used = set(re.findall(r"^\s{7}(\w+)=", block, flags=re.M))
    assert used and used <= fields, used - fields
    for target in re.findall(r'lazy\("([\w.]+:\w+)"\)', block):
        module, _, name = target.partition(":")
        assert hasattr(importlib.import_module(module), name), target
    assert 'lceval.registry.register("toy", "toybench")' in text
