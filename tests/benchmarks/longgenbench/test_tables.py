"""LongGenBench Table 7 (prompt formats) and the published rows beside a run."""

from __future__ import annotations

import pandas as pd
import pytest

import lceval.report
import lceval.run
from lceval.benchmarks.longgenbench.build import build_longgenbench, generate_record
from lceval.benchmarks.longgenbench.prompts import numbered
from lceval.benchmarks.longgenbench.tables import (
    PUBLISHED_T3,
    main_format,
    paper_style,
    published_table3,
    published_table7,
    rank_of,
    recompute_wavg,
    table3_with_published,
    table7,
    table7_with_published,
)
from lceval.core.errors import LcevalError
from lceval.report.reporting import THIS_RUN, highlight_run_rows


def test_prompt_formats_share_the_draw_and_differ_in_layout():
    p1 = generate_record("skyscraper", "short", 3, seed=1)
    p2 = generate_record("skyscraper", "short", 3, seed=1, prompt_format="p2")
    for key in ("checks_once", "checks_range", "checks_periodic", "prefix", "number"):
        assert p1[key] == p2[key]
    assert p1["prompt"] != p2["prompt"]
    assert p1["prompt"].index("Single requirements") < p1["prompt"].index("Periodic requirement")
    assert p2["prompt"].index("Periodic requirement") < p2["prompt"].index("Single requirements")
    assert "1) Periodic requirement" in p2["prompt"] and "Your task:" in p2["prompt"]
    assert "Write exactly 100 entries" in p1["prompt"] and "Write exactly" not in p2["prompt"]
    for p in (p1, p2):
        assert p["prompt"].endswith("*** started ***") and "'*** finished'" in p["prompt"]


def test_numbered_orders_by_format():
    from types import SimpleNamespace as Instr

    instrs = [
        Instr(kind="single", text="a"),
        Instr(kind="range", text="b"),
        Instr(kind="periodic", text="c"),
    ]
    assert numbered(instrs, "p1").splitlines()[0] == "1) Single requirements:"
    assert numbered(instrs, "p2").splitlines()[0] == "1) Periodic requirement: c"


def test_builder_prompt_formats_param():
    r = build_longgenbench(
        {"n_per_scenario": 1, "versions": ["short"], "prompt_formats": ["p1", "p2"]}
    )
    ids = [s.id for s in r.samples]
    assert ids[:4] == [
        f"longgenbench/short/{s}/0" for s in ("diary", "menu", "skyscraper", "urban")
    ]
    assert all(i.endswith("/p2") for i in ids[4:]) and len(ids) == 8
    assert "prompt_format" not in r.samples[0].meta  # Prompt-1 samples as before formats existed
    assert r.samples[4].meta["prompt_format"] == "p2"
    assert r.samples[0].gold == r.samples[4].gold
    with pytest.raises(LcevalError, match="prompt_formats\\[0\\] must be one of p1, p2"):
        build_longgenbench({"prompt_formats": ["p3"]})
    with pytest.raises(LcevalError, match="not path"):
        build_longgenbench({"prompt_formats": ["p2"], "path": "x.json"})


def _frame() -> pd.DataFrame:
    rows = []
    # model a: p1 CR 1.0, 8/10 yes; p2 CR 0.5, 2/10 yes. model b: p1 CR 0.5, 5/10; p2 CR 1.0, 1/10
    for model, fmt, cr, yes in [
        ("a", "p1", 1.0, 8),
        ("a", "p2", 0.5, 2),
        ("b", "p1", 0.5, 5),
        ("b", "p2", 1.0, 1),
    ]:
        rows.append(
            {
                "sample_id": f"{model}{fmt}",
                "model": model,
                "value": yes / 10,
                "version": "short",
                "prompt_format": fmt,
                "CR": cr,
                "n_checks": 10.0,
                "n_judged": 10.0,
                "n_yes": float(yes),
                "words": 3000.0,
                "len_eligible": 1.0,
            }
        )
    return pd.DataFrame(rows)


def test_table7_hand_computed():
    t = table7(_frame()).set_index(["prompt_format", "model"])
    assert t.loc[("Prompt - 1", "a"), "CR"] == 100.0
    assert t.loc[("Prompt - 1", "a"), "STIC_2"] == 80.0
    assert t.loc[("Prompt - 1", "a"), "wAvg"] == pytest.approx(80.0)
    assert t.loc[("Prompt - 1", "b"), "wAvg"] == pytest.approx(25.0)
    assert t.loc[("Prompt - 2", "a"), "wAvg"] == pytest.approx(10.0)
    assert t.loc[("Prompt - 2", "b"), "wAvg"] == pytest.approx(10.0)
    assert t.loc[("Prompt - 1", "a"), "Rank"] == 1 and t.loc[("Prompt - 1", "b"), "Rank"] == 2
    assert t.loc[("Prompt - 2", "a"), "Rank"] == 1 == t.loc[("Prompt - 2", "b"), "Rank"]  # tie
    assert t.loc[("Prompt - 1", "a"), "Len"] == 3000.0
    assert list(main_format(_frame())["prompt_format"]) == ["p1", "p1"]
    styled = paper_style(table7(_frame()), "table7")
    assert styled["STIC-2"].iloc[0] == "80.00%" and styled["CR"].iloc[0] == "100.0"


def test_published_table7_recomputes_within_rounding():
    t7 = published_table7()
    assert len(t7) == 6 and set(t7["prompt_format"]) == {"Prompt - 1", "Prompt - 2"}
    # wAvg = CR x STIC-2 within rounding: wAvg's own 0.05 plus what CR (printed to 0.1) and
    # STIC-2 (to 0.01) carry into the product (Mistral, Prompt-2: 62.3 x 16.29% = 10.149, printed
    # 10.2, inside the bound)
    carried = (0.05 * t7["STIC_2"] + t7["CR"] * 0.005) / 100
    assert ((recompute_wavg(t7) - t7["wAvg"]).abs() <= 0.05 + carried + 1e-9).all()
    assert not ((recompute_wavg(t7) - t7["wAvg"]).abs() <= 0.02).all()  # the bound matters
    assert (rank_of(t7) == t7["Rank"].to_numpy()).all()
    # Prompt-1 CR and Len are Table 3's 16K columns for the same models
    t3 = published_table3().query("version == 'short'").set_index("model")
    p1 = t7[t7["prompt_format"] == "Prompt - 1"].set_index("model")
    assert (p1["CR"] == t3.loc[p1.index, "CR"]).all()
    assert (p1["Len"] == t3.loc[p1.index, "Len"]).all()


def test_published_rows_beside_the_run():
    run_t3 = pd.DataFrame(
        [
            {
                "model": "mine",
                "version": "short",
                "CR": 1.0,
                "STIC_1": 2.0,
                "STIC_2": 3.0,
                "Len": 10.0,
                "wAvg": 0.03,
            }
        ]
    )
    both = table3_with_published(run_t3)
    assert both["source"].iloc[0] == THIS_RUN and (both["source"].iloc[1:] == PUBLISHED_T3).all()
    assert len(both) == 1 + 24  # Table 3: 11 models x 2 lengths + the 2 closed ones at 16K
    some = table3_with_published(run_t3, ["GPT-4o", "Qwen2-72B-Instruct"])
    assert set(some["model"]) == {"mine", "GPT-4o", "Qwen2-72B-Instruct"} and len(some) == 4
    with pytest.raises(LcevalError, match="no model 'GPT-5'"):
        table3_with_published(run_t3, ["GPT-5"])
    t7 = table7_with_published(table7(_frame()), ["Qwen2-7B-Instruct"])
    assert list(t7["source"]).count(THIS_RUN) == 4 and len(t7) == 6
    html = highlight_run_rows(both).to_html()
    assert html.count("font-weight: bold") >= 1
    styled = paper_style(published_table3(), "table3")
    assert styled.iloc[0]["CR"] == "11.3%" and styled.iloc[0]["Length (word)"] == "902"


def test_report_writes_table7_and_keeps_table3_to_prompt_1(tmp_path):
    from lceval.core.records import Response
    from lceval.core.store import ResponseStore

    run = lceval.run.build(
        "t7",
        "longgenbench",
        {
            "n_per_scenario": 1,
            "scenarios": ["urban"],
            "versions": ["short"],
            "prompt_formats": ["p1", "p2"],
        },
        root=tmp_path,
    )
    out = []
    for s in lceval.run.load_samples(run):
        # Prompt-1 answers every block; Prompt-2 stops at block 50 (CR 50%)
        last = s.gold.number if s.id.endswith("/0") else 50
        descs = {c.entry: c.description for c in s.gold.checks}
        text = "".join(f"#*# Block {b}: {descs.get(b, 'homes')} " for b in range(2, last + 1))
        out.append(Response(s.id, "fake", text, "h"))
    ResponseStore(run.responses).append(out)
    lceval.run.score("t7", root=tmp_path, progress=False)
    tables = lceval.report.write_report("t7", root=tmp_path)
    t7 = tables["longgenbench/table7"].set_index("prompt_format")
    assert t7.loc["Prompt - 1", "CR"] == 100.0 and t7.loc["Prompt - 2", "CR"] == 50.0
    assert t7.loc["Prompt - 2", "STIC_2"] < t7.loc["Prompt - 1", "STIC_2"]
    t3 = tables["longgenbench/table3"]
    assert t3["CR"].tolist() == [100.0] and t3["n_samples"].tolist() == [1.0]  # Prompt-1 only
    pub = tables["longgenbench/table3_published"]
    assert (pub["source"] == THIS_RUN).sum() == 1 and len(pub) == 25
    assert (run.report / "longgenbench_table7.csv").exists()
    assert (run.report / "longgenbench_table7_published.csv").exists()
