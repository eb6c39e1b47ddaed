"""The score store keeps every scorer (issue 19): scoring one run with ``lifbench`` and then
``lifbench:strict`` leaves both in scores.parquet, and ``lceval report`` / ``lceval compare``
show each under its name. Run through the CLI on the LIFBench regression fixture (22 samples,
8 models of fixed responses)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from lceval.cli import main
from lceval.core.io import RunDir, new_meta

FIXTURE = Path(__file__).parents[1] / "fixtures" / "regression" / "lifbench"


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    run = RunDir("two-scorers", tmp_path).create()
    for name in ("samples.jsonl", "contexts.jsonl", "responses.jsonl"):
        shutil.copy(FIXTURE / name, run.path / name)
    run.write_meta(new_meta(run.run_id))
    return run


def _cli(run: RunDir, *argv: str) -> None:
    assert main(["--outputs", str(run.path.parent), *argv]) == 0


def test_scoring_with_a_second_scorer_keeps_the_first(run, capsys):
    _cli(run, "score", run.run_id, "--scorer", "lifbench")
    first = run.read_scores()
    _cli(run, "score", run.run_id, "--scorer", "lifbench:strict")
    both = run.read_scores()
    assert set(both["scorer"]) == {"lifbench", "lifbench:strict"}
    assert (both["scorer"] == "lifbench").sum() == len(first)
    assert (both["scorer"] == "lifbench:strict").sum() == len(first)
    kept = both[both["scorer"] == "lifbench"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, first)
    # scoring with a scorer again replaces its rows only (no duplicates)
    _cli(run, "score", run.run_id)
    again = run.read_scores()
    assert len(again) == len(both) and set(again["scorer"]) == {"lifbench", "lifbench:strict"}
    strict = again[again["scorer"] == "lifbench:strict"]
    assert not strict["value"].equals(kept["value"])  # the two scorers do differ on this fixture


def test_report_shows_each_scorer_under_its_name(run, capsys):
    _cli(run, "score", run.run_id)
    _cli(run, "score", run.run_id, "--scorer", "lifbench:strict")
    capsys.readouterr()
    _cli(run, "report", run.run_id)
    default = capsys.readouterr().out
    _cli(run, "report", run.run_id, "--scorer", "lifbench:strict")
    strict = capsys.readouterr().out
    assert "lifbench: scorer lifbench\n" in default and "lifbench:strict" not in default
    assert "lifbench: scorer lifbench:strict\n" in strict and default != strict
    assert strict.strip().splitlines()[-1].startswith("report: ")
    assert (run.report / "lifbench-strict").is_dir()
    assert any((run.report / "lifbench-strict").rglob("*.csv"))


def test_compare_reads_the_named_scorer(run, capsys):
    _cli(run, "score", run.run_id)
    _cli(run, "score", run.run_id, "--scorer", "lifbench:strict")
    out = {}
    for scorer in ("lifbench", "lifbench:strict"):
        capsys.readouterr()
        csv = run.path / f"{scorer.replace(':', '-')}.csv"
        argv = ["compare", run.run_id, "--model-a", "m2", "--model-b", "m3", "--csv", str(csv)]
        _cli(run, *argv, "--scorer", scorer)
        out[scorer] = pd.read_csv(csv)
        assert set(out[scorer]["scorer"]) == {scorer}
        assert out[scorer].loc[0, "metric"] == (
            "ARS (Eq. 3)" if scorer == "lifbench" else "ARS (Eq. 3) [lifbench:strict]"
        )
        assert scorer in capsys.readouterr().out
    a, b = out["lifbench"], out["lifbench:strict"]
    assert list(a["task"].fillna("")) == list(b["task"].fillna(""))
    assert not a["diff"].equals(b["diff"])


def test_unknown_scorer_for_report_or_compare_is_one_line(run, capsys):
    _cli(run, "score", run.run_id)
    capsys.readouterr()
    for argv in (["report", run.run_id], ["compare", run.run_id]):
        code = main(["--outputs", str(run.path.parent), *argv, "--scorer", "lifbench:nope"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.startswith("lceval: ") and "lifbench:strict" in err
