"""lceval.report.compare: paired comparisons of runs checked against a hand-computed case;
leaderboards,
pairwise tests and rank agreement on runs scored from the regression fixtures."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import lceval
import lceval.run
from lceval.benchmarks.lifbench import tables as lifbench_tables
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta, scores_frame
from lceval.core.records import Sample, Score
from lceval.report import compare
from lceval.run.scoring import load_samples

FIXTURES = Path(__file__).parents[1] / "fixtures" / "regression"

# two RULER tasks at one length (cwe: 0/1 scores here; fwe: partial credit); each RULER sample
# has its own haystack, so samples are independent
NIAH_A = [1, 1, 1, 1, 1, 0]
NIAH_B = [0, 0, 1, 1, 0, 0]
VT_A = [1.0, 0.5, 1.0, 1.0]
VT_B = [0.5, 0.5, 1.0, 0.0]


def _ruler_run(
    root: Path, run_id: str, model: str, niah: list, vt: list, *more: tuple[str, list, list]
) -> None:
    """A scored RULER run: ``model`` with the cwe and fwe scores ``niah`` and ``vt``, and each
    further ``(model, niah, vt)`` of ``more`` on the same samples."""
    run = RunDir(run_id, root).create()
    gold = {"outputs": ["w"], "metric": "string_match_all"}
    samples = [
        Sample(f"ruler/{task}/1024/{i}", "ruler", task, "q", gold=gold, length=1024)
        for task, n in (("cwe", 6), ("fwe", 4))
        for i in range(n)
    ]
    run.write_samples(samples, [])
    run.write_meta(new_meta(run_id))
    scores = [
        Score(s.id, m, "ruler", s.task, "ruler", "1", float(v))
        for m, cwe, fwe in ((model, niah, vt), *more)
        for s, v in zip(samples, [*cwe, *fwe], strict=True)
    ]
    scores_frame(scores).to_parquet(run.scores)


def test_compare_runs_worked_example(tmp_path: Path) -> None:
    _ruler_run(tmp_path, "a", "model-a", NIAH_A, VT_A)
    _ruler_run(tmp_path, "b", "model-b", NIAH_B, VT_B)
    t = compare.compare_runs("a", "b", root=tmp_path).set_index("task")
    head, niah, vt = t.loc[""], t.loc["cwe"], t.loc["fwe"]
    assert head["model_a"] == "a/model-a" and head["model_b"] == "b/model-b"
    # RULER Avg = mean over tasks: A (5/6 + 3.5/4) / 2, B (2/6 + 2/4) / 2; difference x 100
    assert head["diff"] == pytest.approx(100 * ((5 / 6 - 2 / 6) + (0.875 - 0.5)) / 2)  # 43.75
    # sign flips of the 10 samples (2^10 <= 9999 permutations: exact). Only 5 differences are
    # non-zero: three cwe samples of +1/12 and fwe samples of +0.5/8 and +1/8 (weights: mean of task
    # means); every flip lowers the sum, so P(T >= observed) = 1/32 and two-sided p = 2/32.
    assert head["test"] == "sign-flip" and head["p_value"] == pytest.approx(2 / 32)
    # cwe: 0/1 scores of independent samples -> McNemar: A wins 3 pairs, B none:
    # p = 2 * (1/2)^3
    assert niah["test"] == "mcnemar-exact" and niah["diff"] == pytest.approx(0.5)
    assert niah["p_value"] == pytest.approx(0.25)
    # fwe: differences 0.5, 0, 0, 1 -> flip sums +-0.5 +-1: P(T >= 1.5) = 1/4, p = 1/2
    assert vt["test"] == "sign-flip" and vt["diff"] == pytest.approx(0.375)
    assert vt["p_value"] == pytest.approx(0.5)
    # Holm over the three rows: 3 * 0.0625, max(2 * 0.25, .), 0.5
    assert [head["p_holm"], niah["p_holm"], vt["p_holm"]] == pytest.approx([0.1875, 0.5, 0.5])
    assert not t["significant"].any()
    assert head["low"] <= head["diff"] <= head["high"]
    with pytest.raises(LcevalError):
        compare.compare_runs("a", "a", root=tmp_path)  # one model: nothing to pair


def test_runs_of_one_paired_sample_compare_with_no_test(tmp_path: Path, capsys) -> None:
    """Two runs of one sample each (a `--limit 1` run of one task; the quickstart under its
    one-answer test hook): the difference is shown, its CI and p-value are NaN (no resample,
    one sign flip mirrors the other), and the command ends in 0, not in scipy's traceback."""
    from lceval.cli import main

    for run_id, model, score in (("a", "model-a", [1]), ("b", "model-b", [0])):
        run = RunDir(run_id, tmp_path).create()
        gold = {"outputs": ["w"], "metric": "string_match_all"}
        sample = Sample("ruler/cwe/1024/0", "ruler", "cwe", "q", gold=gold, length=1024)
        run.write_samples([sample], [])
        run.write_meta(new_meta(run_id))
        scores = [Score(sample.id, model, "ruler", "cwe", "ruler", "1", float(score[0]))]
        scores_frame(scores).to_parquet(run.scores)
    t = compare.compare_runs("a", "b", root=tmp_path).set_index("task")
    assert t.loc["", "diff"] == pytest.approx(100.0)
    assert np.isnan(t.loc["", "p_value"]) and np.isnan(t.loc["", "low"])
    assert not t["significant"].any()
    html = tmp_path / "diff.html"
    assert main(["--outputs", str(tmp_path), "compare", "a", "b", "--samples", str(html)]) == 0
    assert html.is_file() and "Traceback" not in capsys.readouterr().err


@pytest.fixture(scope="module")
def fixture_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("runs")
    ids = [
        lceval.run.score_files(f"fx-{key}", FIXTURES / key, root=root)
        for key in ("lifbench", "ruler")
    ]
    return root, ids


def test_leaderboard_matches_the_reporter(fixture_runs: tuple[Path, list[str]]) -> None:
    root, ids = fixture_runs
    board = compare.leaderboard(compare.load_headlines(ids, root=root), n_resamples=500)
    run = RunDir("fx-lifbench", root)
    table = lifbench_tables.score_table(run.read_scores(), load_samples(run))
    ars = lifbench_tables.ars_ci(table, n_resamples=500)
    mine = board[board["benchmark"] == "lifbench"].set_index("model")
    assert mine["estimate"].to_dict() == pytest.approx(ars["ARS"].to_dict())
    assert mine.loc["m2", "rank"] == 1  # the gold-text strategy leads
    assert set(board["benchmark"]) == {"lifbench", "ruler"} and len(board) == 16


def test_rank_agreement_and_pairwise(fixture_runs: tuple[Path, list[str]]) -> None:
    root, ids = fixture_runs
    heads = compare.load_headlines(ids, root=root)
    board = compare.leaderboard(heads, n_resamples=200)
    agree = compare.rank_agreement(heads, n_resamples=200)
    row = agree.iloc[0]
    wide = board.pivot_table(index="model", columns="benchmark", values="estimate")
    want = stats.kendalltau(wide["lifbench"], wide["ruler"]).statistic
    assert row["n_models"] == 8 and row["tau"] == pytest.approx(want)
    assert row["low"] <= row["tau"] <= row["high"]
    pairs = compare.pairwise({"lifbench": heads["lifbench"]}, n_resamples=200, n_permutations=500)
    assert len(pairs) == 28 and (pairs["diff"] >= 0).all()  # model_a is the better-ranked
    assert (pairs["p_holm"] >= pairs["p_value"]).all()


def test_same_model_name_in_two_runs_is_told_apart(tmp_path: Path) -> None:
    for rid in ("r1", "r2"):
        lceval.run.score_files(rid, FIXTURES / "ruler", root=tmp_path, rename={"m0": "x"})
    models = compare.load_headlines(["r1", "r2"], root=tmp_path)["ruler"].models
    assert "r1/x" in models and "r2/x" in models and "x" not in models
    t = compare.compare_runs("r1", "r2", model_a="m2", model_b="m2", root=tmp_path)
    assert np.allclose(t["diff"], 0.0) and (t["p_value"] == 1.0).all()


def test_two_models_of_one_run_are_paired_once(tmp_path: Path) -> None:
    _ruler_run(tmp_path, "two", "m1", NIAH_A, VT_A, ("m2", NIAH_B, VT_B))
    t = compare.compare_runs("two", "two", root=tmp_path)
    # one pair (not m1-m2 and its mirror m2-m1): the worked example's three rows and Holm family
    assert len(t) == 3 and set(t["model_a"]) == {"two/m1"} and set(t["model_b"]) == {"two/m2"}
    assert list(t["p_holm"]) == pytest.approx([0.1875, 0.5, 0.5])
    three = compare.compare_runs("two", "two", root=tmp_path, no_tasks=True)
    assert len(three) == 1
    # an explicit order is kept
    t = compare.compare_runs("two", "two", model_a="m2", model_b="m1", root=tmp_path)
    assert len(t) == 3 and (t["model_a"] == "two/m2").all() and t["diff"].iloc[0] < 0


def test_unknown_benchmark_or_model_is_named(tmp_path: Path) -> None:
    _ruler_run(tmp_path, "a", "model-a", NIAH_A, VT_A)
    _ruler_run(tmp_path, "b", "model-b", NIAH_B, VT_B)
    with pytest.raises(LcevalError, match=r"benchmark 'nope' .*benchmarks in both: ruler"):
        compare.compare_runs("a", "b", benchmark="nope", root=tmp_path)
    with pytest.raises(LcevalError, match=r"run a has no model 'nope'.*: model-a$"):
        compare.compare_runs("a", "b", model_a="nope", root=tmp_path)
    with pytest.raises(LcevalError, match=r"run b has no model 'nope'.*: model-b$"):
        compare.compare_runs("a", "b", model_b="nope", root=tmp_path)
    with pytest.raises(LcevalError, match=r"benchmark 'nope' .*scored there: ruler"):
        compare.load_headlines(["a", "b"], benchmarks=["nope"], root=tmp_path)


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"seed": -1}, "seed must be >= 0, got -1 (int)"),
        ({"seed": 1.5}, "seed must be an integer, got 1.5 (float)"),
        ({"n_resamples": 0}, "n_resamples must be >= 1, got 0 (int)"),
        ({"confidence": 1.0}, "confidence must be < 1.0, got 1.0 (float)"),
        ({"confidence": float("nan")}, "confidence must be a finite number, got nan (float)"),
    ],
)
def test_a_bad_value_says_the_same_line_from_every_comparison_entry(
    tmp_path: Path, keywords, says
) -> None:
    """leaderboard, pairwise and rank_agreement validate through CompareCall's own fields
    (compare.Resampling), as compare_runs does: one line, named by the entry."""
    _ruler_run(tmp_path, "a", "model-a", NIAH_A, VT_A)
    _ruler_run(tmp_path, "b", "model-b", NIAH_B, VT_B)
    with pytest.raises(LcevalError) as info:
        compare.compare_runs("a", "b", root=tmp_path, **keywords)
    assert str(info.value) == f"compare: {says}"
    heads = compare.load_headlines(["a", "b"], root=tmp_path)
    for fn in (compare.leaderboard, compare.pairwise, compare.rank_agreement):
        with pytest.raises(LcevalError) as info:
            fn(heads, **keywords)
        assert str(info.value) == f"{fn.__name__}: {says}"


def test_pairwise_refuses_the_alpha_compare_refuses(tmp_path: Path) -> None:
    _ruler_run(tmp_path, "a", "model-a", NIAH_A, VT_A)
    heads = compare.load_headlines(["a"], root=tmp_path)
    for alpha, says in (
        (float("nan"), "a finite number, got nan (float)"),
        (1, "< 1.0, got 1 (int)"),
    ):
        with pytest.raises(LcevalError) as info:
            compare.pairwise(heads, alpha=alpha)
        assert str(info.value) == f"pairwise: alpha must be {says}"


@pytest.mark.parametrize(
    ("keywords", "says", "flags", "cli_says"),
    [
        (
            {"alpha": 1.5},
            "alpha must be < 1.0, got 1.5 (float)",
            ["--alpha", "1.5"],
            "--alpha must be < 1.0, got 1.5",
        ),
        (
            {"alpha": 0},
            "alpha must be > 0.0, got 0 (int)",
            ["--alpha", "0"],
            "--alpha must be > 0.0, got 0",
        ),
        (
            {"seed": -1},
            "seed must be >= 0, got -1 (int)",
            ["--seed", "-1"],
            "--seed must be >= 0, got -1",
        ),
    ],
)
def test_a_bad_argument_says_the_same_from_python_and_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], keywords, says, flags, cli_says
) -> None:
    """lceval.compare validates through CompareCall, the command line through CompareConfig
    (its base): one declaration, the same line (a keyword named as the key, a flag as --flag),
    before any run is read (none exists here)."""
    from lceval.cli import main

    with pytest.raises(LcevalError) as info:
        lceval.compare("a", "b", root=tmp_path, **keywords)
    assert str(info.value) == f"compare: {says}"
    assert main(["--outputs", str(tmp_path), "compare", "a", "b", *flags]) == 2
    assert capsys.readouterr().err == f"lceval: {cli_says}\n"


def test_one_run_with_one_model_twice_is_refused_naming_it(tmp_path: Path, capsys) -> None:
    """``compare a a`` pairs run a's models with each other; with one model it said "runs a and
    a share no benchmark and model pair", now what the run holds."""
    from lceval.cli import main

    _ruler_run(tmp_path, "a", "model-a", NIAH_A, VT_A)
    says = "run a has 1 model(s) on ruler (model-a): nothing to pair within it; name two runs"
    with pytest.raises(LcevalError, match=f"^{re.escape(says)}"):
        lceval.compare("a", "a", root=tmp_path)
    with pytest.raises(LcevalError, match=f"^{re.escape(says)}"):
        lceval.compare("a", "a", model_a="model-a", model_b="model-a", root=tmp_path)
    assert main(["--outputs", str(tmp_path), "compare", "a", "a"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lceval: {says}") and err.count("\n") == 1


def test_compare_takes_no_other_root_than_a_folder_path(tmp_path: Path) -> None:
    with pytest.raises(LcevalError, match=r"^compare: root must be a folder path .*got 3 \(int\)$"):
        lceval.compare("a", "b", root=3)  # type: ignore[arg-type]


def test_a_run_given_twice_is_refused(tmp_path: Path) -> None:
    _ruler_run(tmp_path, "a", "model-a", NIAH_A, VT_A)
    _ruler_run(tmp_path, "b", "model-b", NIAH_B, VT_B)
    for ids in (["a", "a"], ["a", "b", "a"]):
        with pytest.raises(LcevalError, match="run a is given more than once"):
            compare.load_headlines(ids, root=tmp_path)


def test_run_prefixed_name_may_not_collide_with_another_model(tmp_path: Path) -> None:
    _ruler_run(tmp_path, "r1", "x", NIAH_A, VT_A)
    _ruler_run(tmp_path, "r2", "x", NIAH_B, VT_B)
    _ruler_run(tmp_path, "r3", "r1/x", NIAH_B, VT_A)
    with pytest.raises(LcevalError, match=r"'r1/x'.*run r1.*run r3") as info:
        compare.load_headlines(["r1", "r2", "r3"], root=tmp_path)
    assert "\n" not in str(info.value)
    # without the clash every model keeps its own row
    board = compare.leaderboard(compare.load_headlines(["r1", "r2"], root=tmp_path), n_resamples=50)
    assert sorted(board["model"]) == ["r1/x", "r2/x"] and (board["n"] == 10).all()


def test_the_terminal_table_wraps_model_names_never_cuts_them() -> None:
    """Issue 49: lceval compare printed "Smo...5M-Instruct". Too wide for the terminal, the
    names wrap onto more lines (after a hyphen), every character kept, within the width."""
    import pandas as pd

    from lceval.report.compare import fit_width

    names = ("SmolLM2-135M-Instruct@a133e75a", "Qwen2.5-0.5B-Instruct-with-a-long-name")
    t = pd.DataFrame(
        {
            "benchmark": ["lifbench"],
            "task": ["LSI"],
            "metric": ["ARS (Eq. 3)"],
            "model_a": [names[0]],
            "model_b": [names[1]],
            "diff": [0.123456],
            "ci_low": [0.1],
            "ci_high": [0.3],
            "p": [0.01],
        }
    )
    out = fit_width(t, 90)
    assert "..." not in out and max(map(len, out.splitlines())) <= 90, out
    assert "0.1235" in out
    for name in names:  # read down its column, the whole name
        start = next(line.index(name[:8]) for line in out.splitlines() if name[:8] in line)
        parts = [line[start:].split("  ")[0] for line in out.splitlines()[1:]]
        assert "".join(p.strip() for p in parts).startswith(name), (name, out)
    assert all(name in fit_width(t, 200).splitlines()[1] for name in names)  # room: one line


def test_every_keyword_of_compare_reaches_its_config(tmp_path: Path, monkeypatch) -> None:
    """compare_runs passes each of its arguments to CompareCall by name (no ``locals()``): a
    keyword it took but dropped would compare with the default."""
    from lceval.run.config import CompareCall

    seen = []
    monkeypatch.setattr(compare, "paired", seen.append)
    given = dict(benchmark="ruler", model_a="m1", model_b="m2", root=tmp_path, no_tasks=True)
    given |= dict(alpha=0.1, n_resamples=7, n_permutations=9, confidence=0.9, seed=3)
    given |= dict(scorer="ruler:default")
    compare.compare_runs("a", "b", **given)
    assert set(inspect.signature(compare.compare_runs).parameters) == {"run_a", "run_b", *given}
    cfg = seen[0].model_dump()
    assert isinstance(seen[0], CompareCall) and cfg["run_ids"] == ["a", "b"]
    assert {k: cfg[k] for k in given} == given
