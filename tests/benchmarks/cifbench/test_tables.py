"""CIF-Bench Tables 5, 6, 8 and 9 from a run, and the published leaderboards beside it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lceval.benchmarks.cifbench.report import (
    instance_frame,
    leaderboard_table,
    overall_scores,
    published_leaderboard,
    report_cifbench,
)
from lceval.benchmarks.cifbench.tables import (
    PUBLISHED_PRIVATE,
    leaderboard_with_published,
    origins,
    published_table6,
    read_other_leaderboards,
    table5,
    table6,
    table8,
    table9,
)
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.report.reporting import THIS_RUN

ORIGIN = {"1_T": "translated", "2_C": "chinese", "3_N": "new"}


# public: one instruction, inputs d0, d1; private: two instructions, input d2
VALUES = {
    ("1_T", 0, 0, "public"): 1.0,
    ("1_T", 0, 1, "public"): 0.8,  # S = 0.9
    ("2_C", 0, 0, "public"): 0.6,
    ("2_C", 0, 1, "public"): 0.4,  # S = 0.5
    ("3_N", 0, 0, "public"): 0.2,
    ("3_N", 0, 1, "public"): 0.4,  # S = 0.3
    ("1_T", 0, 2, "private"): 0.5,
    ("1_T", 1, 2, "private"): 0.3,  # first instruction 0.5; both 0.4
    ("2_C", 0, 2, "private"): 0.1,
    ("2_C", 1, 2, "private"): 0.5,  # first 0.1; both 0.3
    ("3_N", 0, 2, "private"): 0.6,
    ("3_N", 1, 2, "private"): 0.2,  # first 0.6; both 0.4
}


def _inst(make_sample: Callable[..., Sample]) -> tuple[pd.DataFrame, list[Sample]]:
    samples = [make_sample(*key, origin=ORIGIN[key[0]]) for key in VALUES]
    scores = pd.DataFrame(
        {
            "sample_id": [s.id for s in samples],
            "model": "m",
            "value": list(VALUES.values()),
            "explanation": "similarity chrF",
        }
    )
    return instance_frame(scores, samples), samples


def test_table5_translated_against_new_on_the_public_split(cif_sample):
    inst, samples = _inst(cif_sample)
    assert origins(samples) == ORIGIN
    row = table5(inst, origins(samples)).iloc[0]
    assert row["English-translated"] == pytest.approx(0.9)
    assert row["Newly annotated"] == pytest.approx(0.3)
    assert row["change"] == pytest.approx(-0.6)
    assert row["change_pct"] == pytest.approx(-100 * 0.6 / 0.9)
    assert row["public_overall"] == pytest.approx((0.9 + 0.5 + 0.3) / 3)
    assert (row["n_translated"], row["n_new"]) == (1, 1)
    assert table5(inst, {}).iloc[0]["n_new"] == 0  # no origins: nothing to compare


def test_table8_unseen_instances_and_unseen_tasks_single_instruction(cif_sample):
    inst, samples = _inst(cif_sample)
    row = table8(inst, origins(samples)).iloc[0]
    # Existing = translated + chinese: public (0.9 + 0.5) / 2 = 0.7; private first instr (0.5 +
    # 0.1) / 2 = 0.3; New on private, first instruction: 0.6
    assert row["existing_public"] == pytest.approx(0.7)
    assert row["existing_private"] == pytest.approx(0.3)
    assert row["existing_change"] == pytest.approx(-0.4)
    assert row["new_private"] == pytest.approx(0.6)
    assert row["new_change"] == pytest.approx(-0.1)
    assert row["new_change_pct"] == pytest.approx(-100 * 0.1 / 0.7)
    assert (row["n_existing"], row["n_new"]) == (2, 1)


def test_table9_variance_over_tasks_in_units_of_1e3(cif_sample):
    inst, _ = _inst(cif_sample)
    t = table9(inst)
    assert list(t["split"]) == ["private"]  # the public split has one instruction
    row = t.iloc[0]
    assert row["var_single"] == pytest.approx(1e3 * np.var([0.5, 0.1, 0.6]))
    assert row["var_diverse"] == pytest.approx(1e3 * np.var([0.4, 0.3, 0.4]))
    assert row["var_single_mean"] == pytest.approx(
        1e3 * (np.var([0.5, 0.1, 0.6]) + np.var([0.3, 0.5, 0.2])) / 2
    )
    assert row["difference"] == pytest.approx(row["var_diverse"] - row["var_single"])
    assert row["difference"] < 0 and row["n_tasks"] == 3 and row["n_instructions"] == 2


def test_table6_with_other_leaderboards(tmp_path: Path, cif_sample):
    inst, _ = _inst(cif_sample)
    overall = overall_scores(inst, n_resamples=50)
    other = tmp_path / "other.csv"
    other.write_text(
        "model,Open LLM Leaderboard,OpenCompass\n"
        "m,10,20\nQwen-72B-Chat,80,70\nYi-34B-Chat,70,65\nQwen-14B-Chat,60,61\n"
        "Baichuan2-7B-Chat,20,\n",
        encoding="utf-8",
    )
    table, agreement = table6(overall, read_other_leaderboards(other))
    assert table.loc["m", "source"] == THIS_RUN
    assert table.loc["m", "CIF-Bench (public)"] == pytest.approx((0.9 + 0.5 + 0.3) / 3)
    assert table["CIF-Bench (public)"].is_monotonic_decreasing and len(table) == 29
    assert table.loc["Qwen-72B-Chat", "Open LLM Leaderboard"] == 80
    assert set(agreement["leaderboard"]) == {"Open LLM Leaderboard", "OpenCompass"}
    assert (
        agreement.set_index(["leaderboard", "statistic"]).loc[("OpenCompass", "kendall_tau"), "n"]
        == 4
    )
    few, none = table6(overall, models=["Qwen-72B-Chat"])
    assert list(few.index) == ["Qwen-72B-Chat", "m"] and none.empty
    with pytest.raises(LcevalError, match="no model"):
        table6(overall, models=["GPT-9"])
    bad = tmp_path / "bad.csv"
    bad.write_text("model,x\nm,high\n", encoding="utf-8")
    with pytest.raises(LcevalError, match="not numeric"):
        read_other_leaderboards(bad)
    with pytest.raises(LcevalError, match="cannot read"):
        read_other_leaderboards(tmp_path / "missing.csv")


def test_published_table6_column_is_the_public_leaderboard():
    t6 = published_table6()
    pub = published_leaderboard("public")["Overall"]
    assert len(t6) == 28 and t6["CIF-Bench (public)"].is_monotonic_decreasing
    assert (t6["CIF-Bench (public)"] == pub.loc[t6.index]).all()
    assert t6.index[0] == "Qwen-72B-Chat" and t6["rank"].iloc[0] == 1
    assert t6.loc["Qwen-72B-Chat", "CIF-Bench (public)"] == 0.589  # the paper's Sec. 5 number
    assert t6.loc["Moss-Moon-003-Sft", "CIF-Bench (public)"] == 0.399
    assert t6.loc["Baichuan-13B-Chat", "CIF-Bench (public)"] == 0.426


def test_leaderboards_beside_the_run(cif_sample):
    inst, samples = _inst(cif_sample)
    lb = leaderboard_table(overall_scores(inst, n_resamples=50), pd.DataFrame())
    priv = leaderboard_with_published(lb, "private", ["Qwen-72B-Chat", "Yi-34B-Chat"])
    assert list(priv.index) == ["m", "Qwen-72B-Chat", "Yi-34B-Chat"]
    assert priv.loc["m", "source"] == THIS_RUN and priv.loc["Yi-34B-Chat", "source"] == (
        PUBLISHED_PRIVATE
    )
    assert priv.loc["Qwen-72B-Chat", "Overall"] == 0.519
    assert len(leaderboard_with_published(lb, "public")) == 29


def test_report_writes_the_comparison_tables(tmp_path: Path, cif_sample):
    inst, samples = _inst(cif_sample)
    scores = pd.DataFrame(
        {
            "sample_id": [s.id for s in samples],
            "model": "m",
            "value": list(VALUES.values()),
            "explanation": "similarity chrF",
        }
    )
    run = RunDir("r", tmp_path).create()
    tables = report_cifbench(run, scores, samples)
    for name in ("table5", "table6", "table8", "table9", "leaderboard_private_published"):
        assert (run.report / "cifbench" / f"{name}.csv").exists() and name in tables
    assert tables["table9"]["difference"].iloc[0] < 0


def test_origin_comes_from_the_metadata_file(tmp_path: Path, demo):
    from lceval.benchmarks.cifbench.build import build_cifbench
    from lceval.benchmarks.cifbench.data import read_metadata

    res = build_cifbench({**demo, "n_inputs": 1, "n_instructions": 1})
    got = origins(res.samples)
    assert got["900_Demo_Sentiment"] == "translated" and got["903_Demo_Story_Writing"] == "new"
    bad = tmp_path / "m.yaml"
    bad.write_text("1_A: {origin: english}\n", encoding="utf-8")
    with pytest.raises(LcevalError, match="origin must be one of translated, chinese, new"):
        read_metadata(bad)
    no_origin = tmp_path / "n.yaml"
    no_origin.write_text("900_Demo_Sentiment: {categories: [Sentiment]}\n", encoding="utf-8")
    res = build_cifbench({**demo, "metadata": str(no_origin), "n_inputs": 1})
    assert all("origin" not in s.meta for s in res.samples)  # as before origins existed


def test_a_run_model_named_like_a_published_one_stays_apart(cif_sample):
    inst, _ = _inst(cif_sample)
    inst = inst.assign(model="Qwen-72B-Chat")
    table, _ = table6(overall_scores(inst, n_resamples=50))
    assert table.index.is_unique and "Qwen-72B-Chat (published)" in table.index
    assert table.loc["Qwen-72B-Chat", "source"] == THIS_RUN
