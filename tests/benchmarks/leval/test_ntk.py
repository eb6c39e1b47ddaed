"""The NTK base sweep: planning, one run per base through the pipeline (answers written by the
test, no model), the tidy table, the computed trend and verdict, the figure; params files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import lceval.report
import lceval.run
from lceval.benchmarks.leval import ntk
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, write_jsonl
from lceval.core.records import Response

ROOT = Path(__file__).resolve().parents[3]


def test_plan_offline_and_with_data(tmp_path, leval_data):
    sweep = ntk.plan_sweep(
        "s", bases=[20000, 160000], lengths=[512, 256], samples=2, outputs_root=tmp_path
    )
    assert [p.name for p in sweep.points] == ["theta-20000", "theta-160000"]
    assert sweep.root == tmp_path / "s" / "bases"
    assert sweep.parts["ruler"]["tasks"] == list(ntk.OFFLINE_RETRIEVAL)
    assert sweep.parts["ruler"]["lengths"] == [256, 512]
    assert sweep.parts["leval"]["data_path"] == "arithmetic"
    assert sweep.points[0].backend_options({"device": "cpu"}) == {
        "device": "cpu",
        "rope_theta": 20000.0,
    }
    factors = ntk.plan_sweep("s", ntk_factors=[2, 4.5], lengths=[256], samples=1)
    assert [p.name for p in factors.points] == ["ntk-2", "ntk-4.5"]
    assert factors.points[1].rope_options() == {"rope_scaling": {"type": "ntk", "factor": 4.5}}
    online = ntk.plan_sweep("s", bases=[1e4], lengths=[2000], samples=3, data_path=str(leval_data))
    assert set(online.parts) == {"leval"}
    assert online.parts["leval"]["tasks"] == ["topic_retrieval_longchat", "gsm100"]
    run = lceval.run.build_suite("p", online.parts, root=tmp_path)
    tasks = {s.task for s in run.read_samples()}
    assert tasks == {"topic_retrieval_longchat", "gsm100"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "either bases or ntk_factors"),
        ({"bases": [1e4], "ntk_factors": [2]}, "either bases or ntk_factors"),
        ({"bases": [0.5]}, "numbers > 1"),
        ({"bases": [1e4, 1e4]}, "duplicates"),
        ({"bases": [1e4], "samples": 0}, "samples"),
        ({"bases": [1e4], "data_path": "x", "retrieval_tasks": ["niah_single_1"]}, "TopicRet"),
    ],
)
def test_bad_plans(kwargs, message):
    kw = {"lengths": [256], "samples": 1, **kwargs}
    with pytest.raises(LcevalError, match=message):
        ntk.plan_sweep("s", **kw)
    point = ntk.SweepPoint("theta-1", rope_theta=2.0)
    with pytest.raises(LcevalError, match="must not set rope_theta"):
        point.backend_options({"rope_theta": 3})


def test_spearman_and_verdicts():
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [0.5, 0.5, 0.5], [0.1, np.nan, 0.2]])
    rho = ntk.spearman_rows(x, y)
    assert rho[0] == pytest.approx(1) and rho[1] == pytest.approx(-1)
    assert np.isnan(rho[2]) and np.isnan(rho[3])
    assert ntk.verdict(0.9, 0.2, 1.0, 1) == "matches"
    assert ntk.verdict(0.9, -0.2, 1.0, 1) == "same direction, not significant"
    assert ntk.verdict(-0.9, -1.0, -0.5, 1) == "opposite"
    assert ntk.verdict(-0.5, -1.0, 0.5, 1) == "opposite, not significant"
    assert ntk.verdict(0.0, -1.0, 1.0, -1) == "no trend"
    assert ntk.verdict(float("nan"), float("nan"), float("nan"), -1) == "flat"


def _items(pattern_retrieval, pattern_reasoning, n=40):
    rows = []
    bases = [2e4, 4e4, 8e4, 1.6e5]
    for fam, pattern in (("retrieval", pattern_retrieval), ("reasoning", pattern_reasoning)):
        for i in range(n):
            for k, b in enumerate(bases):
                rows.append(
                    {
                        "base": b,
                        "family": fam,
                        "length": 256 * (1 + i % 2),
                        "sample_id": f"{fam}/{i}",
                        "value": float(pattern(i, k)),
                    }
                )
    return pd.DataFrame(rows)


def test_trend_recovers_the_papers_pattern_and_refuses_a_flat_one():
    rising = _items(lambda i, k: i % 4 < k + 1, lambda i, k: i % 4 >= k)
    trend = ntk.trend_table(rising, n_resamples=500)
    t = trend.set_index("family")
    assert t.loc["retrieval", "rho"] == pytest.approx(1) and t.loc["retrieval", "ci_low"] > 0
    assert t.loc["reasoning", "rho"] == pytest.approx(-1) and t.loc["reasoning", "ci_high"] < 0
    assert list(t["verdict"]) == ["matches", "matches"]
    table = pd.DataFrame({"base": [2e4, 1.6e5], "length": [256, 512]})
    assert ntk.trend_sentence(trend, table).endswith(
        "matches the paper's: retrieval rises and reasoning falls."
    )
    flat = ntk.trend_table(_items(lambda i, k: 1, lambda i, k: i % 2), n_resamples=200)
    assert list(flat["verdict"]) == ["flat", "flat"]
    assert "does not match" in ntk.trend_sentence(flat, table)
    # one item carries the whole trend: not significant (flat resamples count as no trend)
    one = ntk.trend_table(_items(lambda i, k: i == 0 and k > 0, lambda i, k: 0), n_resamples=500)
    assert one.set_index("family").loc["retrieval", "verdict"] == "same direction, not significant"


def _answer(sweep, point, right):
    """Responses as an engine would write them: right or wrong by ``right(sample)``, plus the
    run.json models entry a backend records (RoPE included)."""
    run = sweep.point_run(point)
    samples = lceval.run.load_samples(run)
    responses = []
    for s in samples:
        if s.benchmark == "ruler":
            truth = " ".join(s.gold.outputs)
        else:
            truth = f"The answer is {s.gold.reference}"
        text = truth if right(s) else "no idea"
        responses.append(Response(s.id, "m", text, "c", prompt_tokens=100))
    write_jsonl(run.responses, responses)
    rope = {"rope_theta": point.rope_theta, "checkpoint": {"rope_theta": 1e5}, "changed": True}
    run.update_meta(models={"m": {"backend": "hf", "rope": rope}})


def test_sweep_end_to_end_without_a_model(tmp_path):
    sweep = ntk.plan_sweep(
        "sw",
        bases=[1e4, 1e5, 1e6],
        lengths=[256, 512],
        samples=2,
        retrieval_tasks=["niah_single_1"],
        reasoning_max_new_tokens=48,
        arithmetic_steps=1,
        outputs_root=tmp_path,
    )
    for rank, point in enumerate(sweep.points):
        run = lceval.run.build_suite(point.name, sweep.parts, root=sweep.root)
        assert {s.benchmark for s in run.read_samples()} == {"ruler", "leval"}
        # retrieval right from the middle base on, reasoning right at the smallest only
        _answer(sweep, point, lambda s, r=rank: (s.benchmark == "ruler") == (r >= 1))
        lceval.run.score(point.name, root=sweep.root, progress=False)
        meta = RunDir(point.name, sweep.root).read_meta()
        assert set(meta.params) == {"ruler", "leval"}
    ids = [RunDir(p.name, sweep.root).samples.read_text() for p in sweep.points]
    assert ids[0] == ids[1] == ids[2]  # the same samples under every base
    report = lceval.report.report_sweep(sweep, n_resamples=200)
    table = report.table
    assert list(table.columns[:5]) == ["base", "point", "model", "length", "family"]
    assert len(table) == 3 * 2 * 2 and set(table["n"]) == {2}
    acc = table.set_index(["base", "length", "family"])["accuracy"]
    assert acc[(1e4, 256, "retrieval")] == 0 and acc[(1e6, 512, "retrieval")] == 1
    assert acc[(1e4, 256, "reasoning")] == 1 and acc[(1e5, 256, "reasoning")] == 0
    assert {"ci_low", "ci_high", "input_tokens", "truncated"} <= set(table.columns)
    trend = report.trend.set_index("family")
    assert trend.loc["retrieval", "rho"] > 0 and trend.loc["reasoning", "rho"] < 0
    assert report.sentence.startswith("Bases 10,000 to 1,000,000, lengths 256, 512 tokens.")
    folder = tmp_path / "sw" / "report"
    for name in ("ntk_base_sweep.csv", "ntk_trend.csv", "ntk_verdict.txt", "index.html"):
        assert (folder / name).exists(), name
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert "no caption declared" not in page and "NTK base sweep" in page  # ntk.CAPTIONS
    assert all(p.exists() and p.stat().st_size > 0 for p in report.figures)
    assert {p.suffix for p in report.figures} == {".png", ".pdf"}
    meta = json.loads((tmp_path / "sw" / "run.json").read_text())
    assert set(meta["models"]) == {"theta-10000", "theta-100000", "theta-1000000"}
    changes = ntk.answer_changes(sweep).set_index("point")
    assert changes.loc["theta-10000", "changed"] == 0  # the first point is the reference here
    assert changes.loc["theta-1000000", "changed"] == 8 == changes.loc["theta-1000000", "n"]


def test_notebook_is_stripped_and_full_params_are_the_papers_setting():
    nb = json.loads((ROOT / "notebooks" / "09_ntk_base_sweep.ipynb").read_text())
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")
    full = yaml.safe_load((ROOT / "params" / "09_ntk_base_sweep" / "full.yaml").read_text())
    assert min(full["bases"]) == 20000 and max(full["bases"]) == 160000
    assert max(full["lengths"]) >= 16384 and full["backend"] == "vllm"
