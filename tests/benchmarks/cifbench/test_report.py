"""CIF-Bench report: S_t (Sec. 3.3) by hand, categories, spread across instructions, CI widths,
and the published leaderboards (names matched, 25/28 drop, rank correlations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lceval.benchmarks.cifbench.report import (
    category_scores,
    ci_widths,
    cifbench_tables,
    instance_frame,
    instruction_spread,
    model_names,
    overall_scores,
    published_change,
    published_leaderboard,
    published_tables,
    rank_correlation,
    report_cifbench,
    run_public_private,
    task_scores,
)
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir


def _scores(values: dict[str, float], model="m") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sample_id": list(values),
            "model": model,
            "value": list(values.values()),
            "explanation": "similarity chrF",
        }
    )


def test_task_score_is_mean_over_inputs_of_mean_over_instructions(cif_sample) -> None:
    # input 0 has two instructions (1, 0), input 1 one (1): S = ((1 + 0) / 2 + 1) / 2 = 0.75,
    # while the plain mean over the three instances would be 2/3.
    samples = [
        cif_sample("1_A", 0, 0),
        cif_sample("1_A", 1, 0),
        cif_sample("1_A", 0, 1),
        cif_sample("2_B", 0, 0),
    ]
    values = {samples[0].id: 1.0, samples[1].id: 0.0, samples[2].id: 1.0, samples[3].id: 0.5}
    inst = instance_frame(_scores(values), samples)
    ts = task_scores(inst).set_index("task")
    assert ts.loc["1_A", "score"] == pytest.approx(0.75)
    assert ts.loc["1_A", "n_inputs"] == 2 and ts.loc["1_A", "n_instructions"] == 2
    overall = overall_scores(inst, n_resamples=200)
    assert overall["overall"].iloc[0] == pytest.approx((0.75 + 0.5) / 2)
    assert overall["ci_low"].iloc[0] <= overall["overall"].iloc[0] <= overall["ci_high"].iloc[0]


def test_nan_scores_are_skipped(cif_sample) -> None:
    samples = [cif_sample("1_A", 0, 0), cif_sample("1_A", 1, 0)]
    inst = instance_frame(_scores({samples[0].id: 1.0, samples[1].id: float("nan")}), samples)
    ts = task_scores(inst)
    assert ts["score"].iloc[0] == 1.0 and ts["n_nan"].iloc[0] == 1


def test_categories_and_leaderboard_shape(cif_sample) -> None:
    samples = [
        cif_sample("1_A", 0, 0, cats=("Sentiment", "Classification")),
        cif_sample("2_B", 0, 0, cats=("Classification",)),
        cif_sample("3_C", 0, 0),
    ]
    values = {samples[0].id: 1.0, samples[1].id: 0.0, samples[2].id: 0.5}
    tables = cifbench_tables(_scores(values), samples, n_resamples=50)
    cats = tables["categories"].set_index("category")
    assert cats.loc["Classification", "score"] == pytest.approx(0.5)
    assert cats.loc["Classification", "n_tasks"] == 2
    assert cats.loc["Sentiment", "paper_tasks"] == 8
    board = tables["leaderboard"]
    assert list(board.columns) == list(published_leaderboard("private").columns)
    assert board["Overall"].iloc[0] == pytest.approx(0.5)
    assert np.isnan(board["Code"].iloc[0])
    assert category_scores(tables["task_scores"], {}).empty


def test_spread_across_instructions(cif_sample) -> None:
    samples, values = [], {}
    # task A: instruction 0 scores 1, instruction 1 scores 0 (2 inputs); task B: 0.5 and 0.5
    for j in range(2):
        for k, (a, b) in enumerate([(1.0, 0.5), (0.0, 0.5)]):
            for task, v in (("1_A", a), ("2_B", b)):
                s = cif_sample(task, k, j)
                samples.append(s)
                values[s.id] = v
    inst = instance_frame(_scores(values), samples)
    per_task, overall = instruction_spread(inst)
    a = per_task.set_index("task").loc["1_A"]
    assert (a["min"], a["max"], a["range"]) == (0.0, 1.0, 1.0)
    assert a["std"] == pytest.approx(np.std([1.0, 0.0], ddof=1))
    assert per_task.set_index("task").loc["2_B", "range"] == 0.0
    assert overall["overall"].tolist() == pytest.approx([0.75, 0.25])
    tables = cifbench_tables(_scores(values), samples, n_resamples=50)
    summ = tables["spread_summary"].iloc[0]
    assert summ["overall_range"] == pytest.approx(0.5) and summ["n_instructions"] == 2


def test_five_instructions_narrow_the_ci(cif_sample) -> None:
    rng = np.random.default_rng(0)
    samples, values = [], {}
    for t in range(6):
        for j in range(30):
            for k in range(5):
                s = cif_sample(f"{t}_T", k, j)
                samples.append(s)
                values[s.id] = float(rng.random() < 0.5)  # independent per instruction
    inst = instance_frame(_scores(values), samples)
    w = ci_widths(inst, n_resamples=300).iloc[0]
    assert w["n_instructions"] == 5
    assert w["width_all"] < w["width_one"]
    assert w["ratio"] == pytest.approx(w["width_all"] / w["width_one"])
    assert 0.2 < w["ratio"] < 0.8  # about 1/sqrt(5) = 0.45 for independent instructions


def test_sources_are_never_pooled(cif_sample) -> None:
    a, b = cif_sample("1_A", 0, 0), cif_sample("1_A", 0, 0, source="generated")
    tables = cifbench_tables(_scores({a.id: 1.0, b.id: 0.0}), [a, b], n_resamples=20)
    overall = tables["overall"].set_index("source")["overall"]
    assert overall.to_dict() == {"generated": 0.0, "official": 1.0}


def test_unknown_sample_is_an_error(cif_sample) -> None:
    with pytest.raises(LcevalError, match="unknown sample"):
        instance_frame(_scores({"nope": 1.0}), [cif_sample("1_A", 0, 0)])


# -- published numbers ---------------------------------------------------------------------------
def test_model_names_matched_explicitly() -> None:
    names = model_names()
    assert len(names) == 28 and names["private"].is_unique and names["public"].is_unique
    assert set(names["match"]) == {"identical", "case", "explicit"}
    case = names[names["match"] == "case"]
    assert all(
        a != b and a.casefold() == b.casefold()
        for a, b in zip(case["private"], case["public"], strict=True)
    )
    explicit = names[names["match"] == "explicit"].set_index("private")["public"].to_dict()
    assert explicit == {
        "Chatglm-6B-Sft": "ChatGLM-6B",
        "Gpt-3.5-Turbo-Sft": "gpt-3.5-Public-SFT",
        "Belle-13B-Sft": "Belle-SFT-Public",
    }
    priv, pub = published_leaderboard("private"), published_leaderboard("public")
    assert set(priv.index) == set(pub.index) and len(priv) == 28
    assert priv.shape[1] == pub.shape[1] == 21
    with pytest.raises(LcevalError, match="private or public"):
        published_leaderboard("test")


def test_published_numbers() -> None:
    priv, pub = published_leaderboard("private"), published_leaderboard("public")
    assert priv["Overall"].idxmax() == "Baichuan2-13B-Chat"
    assert priv.loc["Baichuan2-13B-Chat", "Overall"] == 0.529  # the paper's best, 52.9%
    assert pub.loc["Qwen-72B-Chat", "Overall"] == 0.589
    assert pub.loc["Belle-13B-Sft", "Overall"] == 0.397  # printed as Belle-SFT-Public
    assert priv.loc["Cpm-Bee-10B", "Code"] == 0.024
    change = published_change()
    assert int(change["dropped"].sum()) == 25  # as the paper's Table 7 says: 25 of 28 drop
    assert set(change.index[~change["dropped"]]) == {
        "Baichuan2-13B-Chat",
        "Baichuan-13B-Chat",
        "Baichuan2-7B-Chat",
    }
    assert change.loc["Baichuan2-7B-Chat", "change"] == pytest.approx(0.412 - 0.339)


def test_rank_correlation() -> None:
    corr = rank_correlation([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], n_resamples=50).set_index("statistic")
    assert corr.loc["kendall_tau", "estimate"] == pytest.approx(1.0)
    assert corr.loc["spearman_rho", "estimate"] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        rank_correlation([1, 2], [1, 2])
    t = published_tables(n_resamples=300)["published_correlation"].set_index("statistic")
    for stat in ("kendall_tau", "spearman_rho"):
        row = t.loc[stat]
        assert -1 <= row["ci_low"] <= row["estimate"] <= row["ci_high"] <= 1
        assert row["n"] == 28
    assert t.loc["kendall_tau", "estimate"] == pytest.approx(0.3777, abs=1e-3)
    assert t.loc["spearman_rho", "estimate"] == pytest.approx(0.5342, abs=1e-3)


def test_published_tables_are_computed_once_and_handed_out_as_copies() -> None:
    """Each report reads the published comparison (a bootstrap of 1-3 s): computed once per
    process; a caller that changes its tables changes no later caller's."""
    first = published_tables(n_resamples=300)
    first["published_correlation"].loc[0, "estimate"] = 99.0
    first["published_change"].drop(first["published_change"].index, inplace=True)
    again = published_tables(n_resamples=300)
    assert again["published_correlation"].loc[0, "estimate"] == pytest.approx(0.3777, abs=1e-3)
    assert len(again["published_change"]) == 28
    assert again["published_correlation"] is not first["published_correlation"]


def test_report_writes_tables_and_figures(tmp_path: Path, cif_sample) -> None:
    run = RunDir("r", tmp_path).create()
    samples = [cif_sample("1_A", k, 0, cats=("QA",)) for k in range(2)]
    scores = _scores({s.id: 0.5 for s in samples})
    tables = report_cifbench(run, scores, samples)
    folder = run.report / "cifbench"
    for name in ("task_scores", "overall", "leaderboard", "ci_width", "published_change"):
        assert (folder / f"{name}.csv").exists() and name in tables
    assert (run.figures / "cifbench_categories.png").exists()
    assert (run.figures / "cifbench_published_public_private.pdf").exists()
    assert (run.figures / "cifbench_instruction_spread.png").exists()  # two instructions


def test_run_public_to_private_change_on_common_tasks(cif_sample) -> None:
    """Public: one instruction; private: two instructions; task 3_C only private (left out)."""
    samples = [cif_sample("1_A", 0, j, split="public") for j in range(2)]
    samples += [cif_sample("2_B", 0, 0, split="public")]
    samples += [cif_sample(t, k, 0) for t in ("1_A", "2_B", "3_C") for k in range(2)]
    values = {
        "cifbench/public/1_A/official/i0/d0": 1.0,
        "cifbench/public/1_A/official/i0/d1": 0.5,  # 1_A public: 0.75
        "cifbench/public/2_B/official/i0/d0": 0.5,  # 2_B public: 0.5
        "cifbench/private/1_A/official/i0/d0": 0.5,
        "cifbench/private/1_A/official/i1/d0": 0.0,  # 1_A private: 0.25, first instr 0.5
        "cifbench/private/2_B/official/i0/d0": 0.75,
        "cifbench/private/2_B/official/i1/d0": 0.25,  # 2_B private: 0.5, first 0.75
        "cifbench/private/3_C/official/i0/d0": 1.0,
        "cifbench/private/3_C/official/i1/d0": 1.0,
    }
    out = run_public_private(instance_frame(_scores(values), samples))
    [row] = out.to_dict("records")
    assert row["n_tasks"] == 2 and row["source"] == "official"
    assert row["public"] == pytest.approx(0.625)
    assert row["private"] == pytest.approx(0.375)
    assert row["private_one"] == pytest.approx(0.625) and row["change_one"] == 0
    assert row["change"] == pytest.approx(-0.25) and row["dropped"]
    # one split only: nothing to compare
    only = [s for s in samples if s.scenario == "private"]
    priv = {k: v for k, v in values.items() if "/private/" in k}
    assert run_public_private(instance_frame(_scores(priv), only)).empty
