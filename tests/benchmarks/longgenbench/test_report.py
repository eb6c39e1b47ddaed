"""LongGenBench report: pooled STIC, Len filter, wAvg, breakdowns, summary for the correlation."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import lceval.report
import lceval.run
from lceval.benchmarks.longgenbench.report import (
    SUMMARY_COLUMNS,
    agreement_table,
    by_type_table,
    judge_agreement,
    longgenbench_summary,
    metrics_of,
    position_table,
    report_longgenbench,
    sample_frame,
)
from lceval.core.io import RunDir
from lceval.core.records import Response, Sample, Score


def mk_sample(i: int, version: str = "short") -> Sample:
    return Sample(
        id=f"s{i}",
        benchmark="longgenbench",
        task="skyscraper_100",
        instruction="",
        scenario="Skyscraper",
        max_new_tokens=16384 if version == "short" else 32768,
        meta={"version": version, "length_label": "16K" if version == "short" else "32K"},
    )


def mk_score(i: int, model: str = "m", **parts: float) -> Score:
    base = {
        "CR": 0.0,
        "n_checks": 0.0,
        "n_judged": 0.0,
        "n_yes": 0.0,
        "words": 0.0,
        "len_eligible": 0.0,
    }
    base.update(parts)
    value = base["n_yes"] / base["n_checks"] if base["n_checks"] else math.nan
    return Score(
        f"s{i}", model, "longgenbench", "skyscraper_100", "longgenbench.offline", "1", value, base
    )


def frame_of(scores, samples):
    from lceval.core.io import scores_frame

    return scores_frame(scores), samples


def test_pooled_metrics_hand_computed():
    # A: CR 2/3, 3 yes of 4 judged of 5 checks; B: CR 0.1, 1 yes of 1 judged of 10 checks.
    scores = [
        mk_score(0, CR=2 / 3, n_checks=5, n_judged=4, n_yes=3, words=2500, len_eligible=1),
        mk_score(1, CR=0.1, n_checks=10, n_judged=1, n_yes=1, words=900, len_eligible=0),
    ]
    df, samples = frame_of(scores, [mk_sample(0), mk_sample(1)])
    m = metrics_of(sample_frame(df, samples))
    assert m["CR"] == pytest.approx(100 * (2 / 3 + 0.1) / 2)
    assert m["STIC_1"] == pytest.approx(100 * 4 / 5)  # pooled, not the mean of 3/4 and 1/1
    assert m["STIC_2"] == pytest.approx(100 * 4 / 15)
    assert m["wAvg"] == pytest.approx(m["CR"] * m["STIC_2"] / 100)
    assert m["Len"] == 2500  # only the sample passing the official filter
    assert m["n_samples"] == 2 and m["n_errors"] == 0


def test_errors_are_left_out_and_counted():
    scores = [
        mk_score(0, CR=1.0, n_checks=4, n_judged=4, n_yes=2),
        Score("s1", "m", "longgenbench", "t", "longgenbench.error", "1", math.nan),
    ]
    df, samples = frame_of(scores, [mk_sample(0), mk_sample(1)])
    m = metrics_of(sample_frame(df, samples))
    assert m["CR"] == 100 and m["STIC_2"] == 50 and m["n_errors"] == 1
    assert math.isnan(m["Len"])


def test_summary_columns_and_caps():
    scores = [
        mk_score(0, CR=1.0, n_checks=4, n_judged=4, n_yes=2),
        mk_score(1, CR=0.5, n_checks=4, n_judged=2, n_yes=1),
        mk_score(0, model="other", CR=0.5, n_checks=4, n_judged=2, n_yes=2),
    ]
    df, samples = frame_of(scores, [mk_sample(0), mk_sample(1, "long")])
    out = longgenbench_summary(df, samples, {"m": 256})
    assert list(out.columns) == SUMMARY_COLUMNS
    assert list(zip(out["model"], out["version"], strict=True)) == [
        ("m", "short"),
        ("m", "long"),
        ("other", "short"),
    ]
    assert out["max_new_tokens"].tolist() == [256, 256, 16384]
    assert out["length_label"].tolist() == ["16K", "32K", "16K"]
    assert out["STIC_2"].tolist() == [50.0, 25.0, 50.0]


def test_by_type_table():
    s = mk_score(
        0,
        CR=1.0,
        n_checks=3,
        n_judged=3,
        n_yes=2,
        n_checks_single=1,
        n_judged_single=1,
        n_yes_single=1,
        n_checks_range=1,
        n_judged_range=1,
        n_yes_range=1,
        n_checks_periodic=1,
        n_judged_periodic=1,
        n_yes_periodic=0,
    )
    df, samples = frame_of([s], [mk_sample(0)])
    t = by_type_table(sample_frame(df, samples)).set_index("kind")
    assert t.loc["single", "STIC_2"] == 100 and t.loc["periodic", "STIC_2"] == 0


def test_position_table_moving_average():
    checks = pd.DataFrame(
        {
            "model": "m",
            "version": "short",
            "entry": [1, 2, 3, 3],
            "yes": [1, 0, 1, 1],
            "judged": True,
        }
    )
    t = position_table(checks, window={"short": 3})
    assert t["accuracy"].tolist() == [100.0, 0.0, 100.0]
    assert t["smoothed"].tolist() == pytest.approx([50.0, 200 / 3, 50.0])
    assert position_table(checks, min_count=2)["entry"].tolist() == [3]


def test_agreement_table():
    checks = pd.DataFrame(
        {
            "model": ["a", "a", "b", "b"],
            "judged": [True] * 4,
            "yes": [True, True, False, False],
            "yes_2": [True, False, False, False],
            "judge": "offline",
            "judge_2": "llm:x",
        }
    )
    t = agreement_table(checks).set_index("model")
    assert t.loc["all", "raw_agreement"] == 0.75 and t.loc["all", "kappa"] == pytest.approx(0.5)
    assert agreement_table(checks.assign(yes_2=None)).empty


def test_judge_agreement_values():
    from lceval.core.errors import LcevalError

    a = judge_agreement([True, True, False, False], [True, False, False, False])
    assert a["raw_agreement"] == 0.75 and a["kappa"] == pytest.approx(0.5) and a["n"] == 4
    c = judge_agreement([True, True], [True, True])
    assert c["raw_agreement"] == 1.0 and math.isnan(c["kappa"])
    assert math.isnan(judge_agreement([], [])["raw_agreement"])
    with pytest.raises(LcevalError):
        judge_agreement([True], [])


def test_report_writes_tables_and_figures(tmp_path):
    from lceval.core.store import ResponseStore

    run = lceval.run.build(
        "rep", "longgenbench", {"n_per_scenario": 1, "scenarios": ["urban"]}, root=tmp_path
    )
    samples = lceval.run.load_samples(run)
    out = []
    for s in samples:
        descs = {c.entry: c.description for c in s.gold.checks}
        text = "".join(
            f"#*# Block {b}: {descs.get(b, 'homes')} " for b in range(2, s.gold.number + 1)
        )
        out.append(Response(s.id, "fake", text, "h"))
    ResponseStore(run.responses).append(out)
    lceval.run.score("rep", root=tmp_path, progress=False)  # writes longgenbench_checks.parquet
    tables = lceval.report.write_report("rep", root=tmp_path)
    t3 = tables["longgenbench/table3"]
    assert t3["CR"].tolist() == [100.0, 100.0] and t3["version"].tolist() == ["short", "long"]
    position = tables["longgenbench/position"]
    assert not position.empty and (position["accuracy"] == 100.0).all()
    assert tables["longgenbench/judge_agreement"].empty  # one judge only
    r = RunDir("rep", tmp_path)
    for name in ("table3", "summary", "by_scenario", "by_type", "position"):
        assert (r.report / f"longgenbench_{name}.csv").exists()
    for fig in ("longgenbench_by_type", "longgenbench_position"):
        assert (r.figures / f"{fig}.png").exists() and (r.figures / f"{fig}.pdf").exists()
    summary = pd.read_csv(r.report / "longgenbench_summary.csv")
    assert list(summary.columns) == SUMMARY_COLUMNS
    assert json.loads(pd.read_parquet(r.scores)["parts"].iloc[0])["CR"] == 1.0
    # without a checks file (a run scored before it existed) the position table is empty
    (r.path / "longgenbench_checks.parquet").unlink()
    assert lceval.report.write_report("rep", root=tmp_path)["longgenbench/position"].empty


def test_report_rejects_unknown_sample(tmp_path):
    from lceval.core.errors import LcevalError

    df, _ = frame_of([mk_score(0)], [])
    with pytest.raises(LcevalError, match="unknown sample"):
        report_longgenbench(RunDir("x", tmp_path), df, [])


def test_cis_keep_the_pooled_definitions():
    from lceval.benchmarks.longgenbench.report import ci_table, metrics_ci, summary_table

    scores = [
        mk_score(i, CR=c, n_checks=k, n_judged=j, n_yes=y)
        for i, (c, k, j, y) in enumerate(
            [(2 / 3, 5, 4, 3), (0.1, 10, 1, 1), (1.0, 4, 4, 4), (0.5, 6, 6, 0)]
        )
    ]
    df, samples = frame_of(scores, [mk_sample(i) for i in range(4)])
    frame = sample_frame(df, samples)
    point = metrics_of(frame)
    ci = metrics_ci(frame, n_resamples=500)
    for m in ("CR", "STIC_1", "STIC_2", "wAvg"):
        assert ci[m].mean == pytest.approx(point[m])  # pooled STIC, wAvg = CR x STIC-2
        assert ci[m].low <= point[m] <= ci[m].high
    t3 = summary_table(frame)
    assert {"CR_low", "CR_high", "wAvg_low", "wAvg_high"} <= set(t3.columns)
    long = ci_table(frame)
    assert list(long["metric"]) == ["CR", "STIC_1", "STIC_2", "wAvg"] and (long["n"] == 4).all()
