"""A partial run says so: a LIFBench smoke build with 4 of 44 samples answered, in
``lceval score``, results.json, ``lceval report``'s summary and index.html's first screen; its
rows sit beside the paper's unranked; the pages in headless Chromium (1,400 px window)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

import lceval.params
import lceval.report
import lceval.run
from lceval.cli import main
from lceval.core.io import RunDir, write_jsonl
from lceval.core.records import Response

ROOT = Path(__file__).resolve().parents[2]
TEXT = "28466d6bb3291ee9830e483052169279\n\nline two"


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    root = tmp_path_factory.mktemp("cov")
    params = lceval.params.load_params(ROOT / "params" / "01_build_data" / "smoke.yaml")
    run = lceval.run.build("part", "lifbench", params, root=root)
    lsi = [s for s in run.read_samples() if s.task == "LSI"]
    assert len(lsi) == 4 and len(run.read_samples()) == 44
    write_jsonl(
        run.responses,
        [
            Response(
                s.id,
                "m0",
                TEXT,
                "c0",
                completion_tokens=64 if i % 2 else 9,
                finish_reason="length" if i % 2 else "stop",
                truncated_tokens=100 * i,
            )
            for i, s in enumerate(lsi)
        ],
    )
    gen = {"max_new_tokens": 64, "temperature": 0.0, "seed": 0}
    run.update_meta(models={"m0": {"backend": "hf", "generation": gen, "config_hash": "c0"}})
    return run


def test_score_warns_and_results_json_says_what_the_run_covers(partial, capsys):
    root = str(partial.path.parent)
    assert main(["--outputs", root, "score", "part"]) == 0
    out, err = capsys.readouterr()
    scored = out
    assert "only 4 of 44 samples answered" in err and "1 of 11 tasks" in err
    assert "not comparable to the paper" in err
    assert "next: lceval" in out and "report part" in out
    assert main(["--outputs", root, "report", "part"]) == 0
    out, _ = capsys.readouterr()
    lines = out.strip().splitlines()
    assert len(lines) < 30
    assert lines[-1] == f"report: {partial.report / 'index.html'}"
    assert "ARS" in out and "published 0.187-0.764 (20 models)" in out and "not ranked" in out
    doc = json.loads((partial.report / "results.json").read_text(encoding="utf-8"))
    (cov,) = doc["coverage"]
    assert (cov["answered"], cov["built"], cov["paper_grid"]) == (4, 44, False)
    assert cov["tasks_answered"] == ["LSI"] and cov["lengths"] == ["4k", "8k"]
    assert (cov["budget"], cov["capped"], cov["truncated"], cov["tokens_cut"]) == (64, 4, 3, 600)
    assert "design=fractional (paper: full)" in cov["param_gaps"]
    # answers the budget ended: a coverage figure of their own, per task, flagged above 5%
    assert (cov["cut_at_budget"], cov["thinking_unfinished"], cov["cut_flag"]) == (2, 0, True)
    assert cov["cut_by_task"] == {"LSI": [2, 4]} and "2 of 4 answers cut at 64 tokens" in err
    assert "mean_finished" in scored and "2 of 4" in scored.split("next:")[0]
    assert "2 of 4 answers cut at 64 tokens" in out  # lceval report's summary
    (task,) = [t for t in doc["tasks"] if t["scorer"] == "lifbench"]
    assert task["n_cut"] == 2 and task["cut_flag"] and task["mean_finished"] is not None
    (head,) = [h for h in doc["headlines"] if h["scorer"] == "lifbench"]
    assert head["n_cut"] == 2 and head["n_finished"] == 2 and "estimate_finished" in head


def test_subset_rows_are_not_ranked_among_the_papers(partial):
    if not (partial.report / "lifbench_summary.csv").exists():
        lceval.run.score("part", root=partial.path.parent, progress=False)
        lceval.report.write_report("part", root=partial.path.parent)
    from lceval.report.coverage import comparability_note

    note = comparability_note("part", partial.path.parent, "lifbench")  # notebooks print it
    assert note.startswith("lifbench m0: subset:") and "not comparable to the paper" in note
    assert "never ranked" in note
    summary = pd.read_csv(partial.report / "lifbench_summary.csv", index_col="model")
    assert math.isnan(summary.loc["m0", "ARS_rank"])
    published = summary[summary["source"] != "this run"]["ARS_rank"]
    assert sorted(published)[:3] == [1, 2, 3] and published.max() <= 20
    t3 = pd.read_csv(partial.report / "lifbench_table3_ars.csv", index_col="model")
    assert t3.index[0] == "m0"  # above the paper's rows, not in Overall order among them
    assert t3["Overall"].iloc[1:].is_monotonic_decreasing
    t4 = pd.read_csv(partial.report / "lifbench_table4_with_published.csv", index_col="model")
    assert t4.loc["m0", [c for c in t4.columns if c.endswith("_rank")]].isna().all()


def test_index_first_part_is_the_headline_with_coverage(partial):
    if not (partial.report / "index.html").exists():
        lceval.run.score("part", root=partial.path.parent, progress=False)
        lceval.report.write_report("part", root=partial.path.parent)
    page = (partial.report / "index.html").read_text(encoding="utf-8")
    head = page[: page.index("<h2 id='lifbench'>")]
    assert "Not comparable to the paper" in head and "4 of 44 samples answered" in head
    assert "2 of 4 answers cut at 64 tokens" in head and "FLAGGED" in head
    assert "over the 2 finished:" in head
    assert "0.187-0.764 (20 models)" in head and "estimate [95% CI]" in head
    assert "<b>Table 3.</b>" in page and "<b>Fig. 2.</b>" in page and "lower is better" in page
    assert page.count("<table") == page.count("<figcaption>") - page.count("<img")
    assert "<th class='l'>sha256</th>" in page and "each sample's own" not in head
    assert "<tr class=run>" in page  # the run's rows highlighted beside published ones


@pytest.mark.browser
def test_index_fits_1400px_and_shows_the_headline_first(partial, tmp_path, chromium, keep_artifact):
    if not (partial.report / "index.html").exists():
        lceval.run.score("part", root=partial.path.parent, progress=False)
        lceval.report.write_report("part", root=partial.path.parent)
    chromium.set_window_size(1400, 900)
    chromium.get((partial.report / "index.html").as_uri())
    width, view = chromium.execute_script(
        "const d = document.documentElement; return [d.scrollWidth, d.clientWidth];"
    )
    head = chromium.execute_script(
        "const t = document.querySelector('table.headline').getBoundingClientRect();"
        "const b = document.querySelector('.subset').getBoundingClientRect();"
        "return [t.bottom, b.bottom, window.innerHeight];"
    )
    uncaptioned = chromium.execute_script(
        "return Array.from(document.querySelectorAll('table')).filter(t => {"
        " const f = t.closest('figure'); const c = f && f.querySelector('figcaption');"
        " return !(c && c.textContent.trim().length > 20); }).length;"
    )
    text = chromium.execute_script("return document.querySelector('.subset').innerText;")
    shot = tmp_path / "index.png"
    chromium.save_screenshot(str(shot))
    assert width <= view, (width, view)  # no sideways scrolling in a 1,400 px window
    assert head[0] <= head[2] and head[1] <= head[2], head  # headline in the first screen
    assert uncaptioned == 0
    assert "4 of 44 samples answered" in text
    keep_artifact(shot, "report_index_first_screen.png")


@pytest.mark.browser
def test_samples_page_keeps_line_breaks_and_fits_the_window(
    partial, tmp_path, chromium, keep_artifact
):
    import time

    if not (partial.report / "samples.html").exists():
        lceval.run.score("part", root=partial.path.parent, progress=False)
        lceval.report.write_report("part", root=partial.path.parent)
    chromium.set_window_size(1400, 900)
    chromium.get((partial.report / "samples.html").as_uri())
    for _ in range(300):
        if chromium.execute_script("return document.querySelectorAll('td.answer').length;"):
            break
        time.sleep(0.1)
    answers = chromium.execute_script(
        "return Array.from(document.querySelectorAll('td.answer .txt'))"
        ".map(e => [e.innerText, e.getBoundingClientRect().width]);"
    )
    widths = chromium.execute_script(
        "return Array.from(document.querySelectorAll('td.answer'))"
        ".map(e => e.getBoundingClientRect().width);"
    )
    sideways = chromium.execute_script(  # issue 49: no columns cut off at the right edge
        "const e = document.documentElement; return [e.scrollWidth, e.clientWidth];"
    )
    shot = tmp_path / "samples.png"
    chromium.save_screenshot(str(shot))
    assert answers and all("\\n" not in a and "line two" in a for a, _ in answers), answers
    assert all(a.split("\n")[-1] == "line two" for a, _ in answers)
    assert widths and min(widths) >= 300, widths  # the answer column has room
    assert sideways[0] <= sideways[1], sideways
    keep_artifact(shot, "samples_page.png")


def test_plan_uses_the_budget_cap_the_inference_recorded(partial, capsys):
    """One budget figure for one run: after an inference capped at 64 new tokens, `lceval plan`
    plans 44 x 64 (inference's own plan line), not the samples' own budgets."""
    root = str(partial.path.parent)
    assert main(["--outputs", root, "plan", "part"]) == 0
    out = capsys.readouterr().out
    assert "budget capped at 64 new tokens" in out
    own = sum(s.max_new_tokens for s in partial.read_samples())
    assert own > 44 * 64 and f"{44 * 64:,}" in out and f"{own:,}" not in out
    assert main(["--outputs", root, "plan", "part", "--max-new-tokens", "100"]) == 0
    assert "budget capped" not in capsys.readouterr().out


def test_cifbench_subset_run_is_not_placed_in_table6s_order(regression_report, request):
    """Table 6 orders models by public score: a run that is not the paper's grid (the regression
    fixture answers 4 of 150 tasks) is listed above the published rows, not among them, and
    the table's cells are those of the score-ordered table."""
    from lceval.benchmarks.cifbench import tables as cif_tables
    from lceval.report.coverage import run_coverage
    from lceval.report.reporting import THIS_RUN

    run = regression_report("cifbench")
    assert not any(c.paper_grid for c in run_coverage(run))
    t6 = pd.read_csv(run.report / "cifbench" / "table6.csv", index_col="model")
    mine = (t6["source"] == THIS_RUN).to_numpy()
    assert mine.sum() == 7 and mine[:7].all()  # every run row above every published row
    published = t6.loc[~mine, "CIF-Bench (public)"]
    assert published.is_monotonic_decreasing and len(published) == 28
    # the score order would have put the run's weakest models (0.0) among the published ones
    ordered = t6.sort_values("CIF-Bench (public)", ascending=False, kind="stable")
    assert not (ordered["source"] == THIS_RUN).to_numpy()[:7].all()
    overall = pd.read_csv(run.report / "cifbench" / "overall.csv")
    plain = cif_tables.table6(overall)[0]
    pd.testing.assert_frame_equal(t6.sort_index(), plain.sort_index(), check_dtype=False)
    if shutil.which("chromedriver") is None:
        return
    # CIF-Bench's wide tables (Table 6: 35 rows x 8 columns and more) scroll inside their frame
    # in a 1,400 px window; the page itself never scrolls sideways
    chromium = request.getfixturevalue("chromium")  # the session's browser, where installed
    chromium.set_window_size(1400, 900)
    chromium.get((run.report / "index.html").as_uri())
    page, cut = chromium.execute_script(
        "const d = document.documentElement;"
        "const cut = Array.from(document.querySelectorAll('table')).filter(t => {"
        " const w = t.closest('.wide');"
        " return t.getBoundingClientRect().width > d.clientWidth &&"
        "  !(w && getComputedStyle(w).overflowX === 'auto' && w.clientWidth <= d.clientWidth);"
        "}).length; return [d.scrollWidth - d.clientWidth, cut];"
    )
    assert page <= 0 and cut == 0, (page, cut)


def test_unrank_subset_order_leaves_a_paper_grid_run_in_place():
    from lceval.report.reporting import THIS_RUN, unrank_subset_order

    df = pd.DataFrame(
        {"source": ["paper", THIS_RUN, "paper", THIS_RUN], "score": [0.9, 0.8, 0.5, 0.1]},
        index=pd.Index(["A", "m0", "B", "m1"], name="model"),
    )
    assert unrank_subset_order(df, set()) is df
    assert list(unrank_subset_order(df, {"m1"}).index) == ["m1", "A", "m0", "B"]
    assert list(unrank_subset_order(df, {"A"}).index) == ["A", "m0", "B", "m1"]  # published


def test_leval_demo_run_is_labelled_demo_and_baselines_stay_apart(tmp_path, capsys):
    """L-Eval's smoke params build demo data (essays in the paper's task names): the banner says
    demo data; `lceval score` shows the retrieval and no-LIE baselines in rows of their own
    (they were averaged with the full-context rows into the model's number)."""
    root = str(tmp_path)
    argv = ["--outputs", root, "build", "leval", "--params", "params/08_leval/smoke.yaml"]
    assert main([*argv, "--run-id", "l"]) == 0
    run = RunDir("l", tmp_path)
    write_jsonl(
        run.responses,
        [Response(s.id, "m0", "A", "c0", completion_tokens=1) for s in run.read_samples()],
    )
    run.update_meta(models={"m0": {"backend": "hf", "generation": {}, "config_hash": "c0"}})
    capsys.readouterr()
    assert main(["--outputs", root, "score", "l"]) == 0
    out, err = capsys.readouterr()
    table = out.split("next:")[0]
    assert "retrieval=dense" in table and "no LIE" in table and "variant" in table
    assert "DEMO DATA" in err and "not comparable to the paper" in err
    assert main(["--outputs", root, "report", "l"]) == 0
    page = (run.report / "index.html").read_text(encoding="utf-8")
    head = page[: page.index("<h2 id='leval'>")]
    assert "Demo data, not comparable to the paper" in head and "demo data (" in head
    doc = json.loads((run.report / "results.json").read_text(encoding="utf-8"))
    assert [c["demo"] for c in doc["coverage"]] == [True]
