"""LIFEval aggregates (Eq. 3, 4, 6) on hand-made tables, the paper check, and the report."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import lceval.run
from lceval import metrics
from lceval.benchmarks.lifbench import gold as G
from lceval.benchmarks.lifbench import published as P
from lceval.benchmarks.lifbench import report as A
from lceval.benchmarks.lifbench import tables as T
from lceval.benchmarks.lifbench.gold import CAPABILITIES, TASK_POINTS, ListItemGold
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta, scores_frame, write_jsonl
from lceval.core.records import Context, Response, Sample
from lceval.report import compare


def _table(rows: list[tuple]) -> pd.DataFrame:
    cols = [
        "model",
        "task",
        "value",
        "expression_id",
        "variable_id",
        "length",
        "item:correct",
        "item:format",
    ]
    t = pd.DataFrame(rows, columns=cols)
    t["sample_id"] = [f"s{i}" for i in range(len(t))]
    return t


def test_overall_ars_is_points_weighted_eq3() -> None:
    per_task = pd.DataFrame({"OQ": [0.5, 1.0], "MF": [1.0, np.nan]}, index=["a", "b"])
    got = T.overall_ars(per_task)
    assert got["a"] == pytest.approx((5 * 0.5 + 20 * 1.0) / 25)
    assert got["b"] == pytest.approx(1.0)  # only the tasks with a value count
    assert sum(TASK_POINTS.values()) == 99


def test_task_ars_and_ifs_on_a_hand_made_table() -> None:
    # OQ: expression groups 0 -> mean 0.2, 1 -> mean 0.6 ; lengths 3072 -> .4, 6144 -> .4
    t = _table(
        [
            ("m", "OQ", 0.0, 0, 0, 3072, 0.0, 0.0),
            ("m", "OQ", 0.4, 0, 1, 6144, 1.0, 0.0),
            ("m", "OQ", 0.8, 1, 0, 3072, 2.0, 2.0),
            ("m", "OQ", 0.4, 1, 1, 6144, 1.0, 1.0),
        ]
    )
    t3 = T.task_ars(t)
    assert t3.loc["m", "OQ"] == pytest.approx(0.4)
    assert t3.loc["m", "Overall"] == pytest.approx(0.4)
    expr = T.ifs_by_task(T.group_means(t, "expression_id"))
    # std(ddof=1) of [0.2, 0.6] = 0.2828..., mean 0.4
    assert expr.loc["m", "OQ"] == pytest.approx(np.std([0.2, 0.6], ddof=1) / 0.4)
    var = T.ifs_by_task(T.group_means(t, "variable_id"))  # groups .4 / .4
    assert var.loc["m", "OQ"] == pytest.approx(0.0)
    t4 = T.ifs_table(t)
    assert t4.loc["m", "Length"] == pytest.approx(0.0)
    assert t4.loc["m", "IFS(AVG)"] == pytest.approx(expr.loc["m", "OQ"] / 3)


def test_ifp_eq4_counts_an_item_in_each_of_its_capabilities() -> None:
    items = pd.DataFrame(
        [
            ("m", "LOI", "correct", 1.0),  # 2 points -> Recog and Spat
            ("m", "LOE", "correct", 2.0),  # 2 points -> Spat
            ("m", "LSI", "format", 0.5),  # 1 point -> Fmt
        ],
        columns=["model", "task", "item", "mean"],
    )
    cap = T.ifp(items)
    assert cap.loc["m", "Recog"] == pytest.approx(1.0 / 2)
    assert cap.loc["m", "Spat"] == pytest.approx((1.0 + 2.0) / 4)
    assert cap.loc["m", "Fmt"] == pytest.approx(0.5)
    assert np.isnan(cap.loc["m", "Num"])


def test_ranks_and_order_follow_table4_rules() -> None:
    means = {
        p: pd.DataFrame(
            {
                "model": ["a", "a", "b", "b"],
                "task": ["OQ"] * 4,
                "group": [0, 1, 0, 1],
                "n": 1,
                "value": v,
            }
        )
        for p, v in zip(
            T.PERSPECTIVES,
            ([0.5, 0.5, 0.4, 0.6], [0.4, 0.6, 0.5, 0.5], [0.5, 0.5, 0.4, 0.6]),
            strict=True,
        )
    }
    t4 = T.ifs_table(means=means, ars=pd.Series({"a": 0.3, "b": 0.7}))
    assert list(t4.index) == ["a", "b"]  # mean ranks 1.33 vs 1.67
    assert t4.loc["a", "Expression_rank"] == 1 and t4.loc["b", "Variable_rank"] == 1
    assert t4.loc["b", "ARS_rank"] == 1


def test_metrics_helpers() -> None:
    assert np.isnan(metrics.coefficient_of_variation([0.5]))
    est = metrics.bootstrap(np.r_[np.zeros(50), np.ones(50)], seed=1)
    assert 0.35 < est.low < 0.5 < est.high < 0.65
    assert metrics.bootstrap([1.0, 2.0], seed=3) == metrics.bootstrap([1.0, 2.0], seed=3)
    with pytest.raises(ValueError):
        metrics.bootstrap([1.0], confidence=1.5)


def test_paper_check() -> None:
    pc = P.paper_check()
    assert {"paper", "recomputed", "flag", "explanation"} <= set(pc.columns)
    t4 = pc[pc["table"] == "Table 4"]
    # IFS(AVG) is the mean of the three printed perspectives for every model
    assert set(t4[t4["quantity"] == "IFS(AVG)"]["flag"]) <= {"exact", "rounding"}
    assert set(t4[t4["quantity"] == "ARS = Table 3 Overall"]["flag"]) == {"exact"}
    assert t4[t4["quantity"] == "row order = mean rank"]["flag"].item() == "exact"
    ranks = t4[t4["quantity"].str.endswith("rank")]
    assert (ranks["flag"] == "exact").mean() > 0.95
    t3 = pc[pc["table"] == "Table 3"]
    assert len(t3) == 20 and t3["explanation"][t3["flag"] == "DIFFERS"].str.len().min() > 0
    gpt4 = t3[t3["model"] == "gpt-4-0125-preview"].iloc[0]
    assert gpt4["flag"] == "rounding"


def test_official_check_reproduces_the_official_files() -> None:
    oc = P.official_check()
    ifp = oc[oc["quantity"].str.startswith("IFP")]
    assert len(ifp) == 21 * 6 and set(ifp["flag"]) == {"exact"}
    gpt = oc[oc["model"] == "gpt-4o-2024-08-06"]
    assert set(gpt["flag"]) == {"exact"}
    ars = gpt[gpt["quantity"].str.startswith("ARS")]["recomputed"].item()
    assert round(ars, 3) == 0.758
    assert (oc["flag"] == "exact").mean() > 0.8


def _fake_run(
    tmp_path, run_id: str = "lifbench-test", expressions: str | None = None, miss: int = 3
) -> RunDir:
    elems = [f"{i:032x}" for i in range(1, 13)]
    ctx = Context(
        "lifbench/List/3072",
        "\n".join(f"{i}. {e}" for i, e in enumerate(elems, 1)),
        100,
        "o200k_base",
    )
    samples, responses = [], []
    for k in range(24):
        task = ("LSI", "LOI")[k % 2]
        pos = 2 + k % 8
        target = elems[pos - 1] if task == "LSI" else elems[pos]
        s = Sample(
            id=f"s{k}",
            benchmark="lifbench",
            task=task,
            instruction="I",
            context_id=ctx.id,
            gold=ListItemGold(
                id=pos,
                ordid=f"{pos}th",
                element=elems[pos - 1],
                pre_element=elems[pos - 2],
                post_element=elems[pos],
                bias=0 if task == "LSI" else 1,
                n_items=len(elems),
                elem_chars=(32, 32),
                target=target,
            ),
            expression_id=k % 3,
            variable_id=k % 4,
            length=(3072, 6144)[k // 12],
        )
        samples.append(s)
        for model, text in (("good", target), ("bad", "no idea" if k % miss else target)):
            responses.append(Response(s.id, model, text, "h"))
    run = RunDir(run_id, tmp_path).create()
    run.write_samples(samples, [ctx])
    params = {"lifbench": {"expressions": expressions}} if expressions else {}
    run.write_meta(new_meta(run_id, params=params))
    write_jsonl(run.responses, responses)
    lceval.run.score(run_id, root=tmp_path, progress=False)
    return run


def test_report_writes_tables_and_figures_for_several_models(tmp_path) -> None:
    run = _fake_run(tmp_path)
    tables = A.report_lifbench(run, run.read_scores(), run.read_samples())
    t3 = tables["table3_ars"]
    assert t3.loc["good", "LSI"] == 1.0 and t3.loc["good", "Overall"] == 1.0
    assert t3.loc["bad", "LSI"] == pytest.approx(4 / 12)
    assert tables["table4_ifs"].loc["good", "Expression"] == 0.0
    assert tables["ifp"].loc["good", "Recog"] == 1.0
    assert list(tables["ars_by_length"].columns) == ["4k", "8k"]  # the paper's labels
    ci = tables["ars_ci"]
    assert ci.loc["bad", "low"] <= ci.loc["bad", "ARS"] <= ci.loc["bad", "high"]
    for name in ("table3_ars", "table4_ifs", "table4_with_published", "ifp", "summary"):
        assert (run.report / f"lifbench_{name}.csv").is_file()
    for fig in ("lifbench_ifp_radar", "lifbench_ars_by_length", "lifbench_table3_ars"):
        assert (run.figures / f"{fig}.png").is_file() and (run.figures / f"{fig}.pdf").is_file()
    both = compare.compare_runs("lifbench-test", "lifbench-test", root=tmp_path)
    assert set(both["benchmark"]) == {"lifbench"} and set(both["scorer"]) == {"lifbench"}
    assert "lifbench-test/good" in {*both["model_a"], *both["model_b"]}


def test_score_table_parses_parts() -> None:
    df = scores_frame([])
    assert T.score_table(df, []).empty
    row = pd.DataFrame(
        [
            {
                "sample_id": "a",
                "model": "m",
                "task": "OQ",
                "value": 1.0,
                "parts": json.dumps({"correct": 3.0, "format": 2.0}),
            }
        ]
    )
    t = T.score_table(row, [Sample("a", "lifbench", "OQ", "i", length=3072)])
    assert t.loc[0, "item:correct"] == 3.0 and t.loc[0, "length"] == 3072


def _answer(s: Sample) -> str:
    """A synthetic response that earns some points on every task: the gold answer where it is
    one string, else text in the asked format built from the gold."""
    g = s.gold
    if isinstance(g, ListItemGold):
        return g.target
    if isinstance(g, G.ListBlurGold):
        return g.post_element if g.bias == 1 else g.pre_element
    if isinstance(g, G.ListMultiGold):
        return json.dumps(list(g.elements))
    if isinstance(g, G.BatchLabelGold):
        return json.dumps({f"doc{i}": label for i, label in enumerate(g.labels, 1)})
    if isinstance(g, G.FindDupGold):
        return "\n".join(str([[n] for n in group]) for group in g.dup_idxs)
    if isinstance(g, G.RepeatGold):
        pairs = [(t, k.text) for t, ks in g.key_sentences.items() for k in ks if k.is_true]
        return "\n".join(f"{t}{g.sep}{text}" for t, text in pairs[: g.num])
    if isinstance(g, G.QaGold):
        return g.answer
    assert isinstance(g, G.ExtractGold)
    return json.dumps(list(g.targets))


def test_smoke_set_report_has_every_headline_number(tmp_path, smoke_build) -> None:
    """Scored with synthetic responses, the smoke set gives Table 3 (every task and Overall),
    IFP (six capabilities), IFS per perspective and IFS(AVG) as numbers, for a steady and an
    unsteady model; the run sits beside the published rows."""
    run = RunDir("lifbench-smoke-test", tmp_path).create()
    run.write_samples(smoke_build.samples, smoke_build.contexts)
    run.write_meta(new_meta("lifbench-smoke-test"))
    responses = []
    for s in smoke_build.samples:
        responses.append(Response(s.id, "steady", _answer(s), "h"))
        wrong = s.length == 6144 and s.expression_id == 1
        responses.append(Response(s.id, "unsteady", "I do not know." if wrong else _answer(s), "h"))
    write_jsonl(run.responses, responses)
    lceval.run.score(run.run_id, root=tmp_path, progress=False)
    tables = A.report_lifbench(run, run.read_scores(), run.read_samples())

    t3 = tables["table3_ars"]
    mine = t3[t3["source"] == T.THIS_RUN]
    assert sorted(mine.index) == ["steady", "unsteady"]
    assert mine.drop(columns="source").notna().all().all()  # 11 tasks and Overall
    published = t3[t3["source"] == T.PUBLISHED_T3]
    assert len(published) == 20 and published.loc["gpt-4o-2024-08-06", "Overall"] == 0.764
    assert list(t3["Overall"]) == sorted(t3["Overall"], reverse=True)
    cap = tables["ifp"]
    assert cap.loc[["steady", "unsteady"], list(CAPABILITIES)].notna().all().all()
    assert (cap["source"] == T.PUBLISHED_IFP).sum() == 20
    t4 = tables["table4_ifs"]
    cols = ["Expression", "Variable", "Length", "IFS(AVG)"]
    assert t4.loc[["steady", "unsteady"], cols].notna().all().all()
    assert (t4.loc[["steady", "unsteady"], "n_tasks"] == 11).all()  # every task, every perspective
    assert t4.loc["unsteady", "Length"] > 0 and t4.loc["unsteady", "Expression"] > 0
    summary = tables["summary"]
    assert summary.loc["steady", "source"] == T.THIS_RUN and len(summary) == 22
    assert summary[["ARS", "IFS(AVG)"]].notna().all().all()
    assert list(tables["ars_by_length"].columns) == ["4k", "8k"]
    for fig in ("lifbench_ifp_radar", "lifbench_table3_ars", "lifbench_ars_by_length"):
        assert (run.figures / f"{fig}.png").is_file() and (run.figures / f"{fig}.pdf").is_file()


def test_published_rows_and_radar_references() -> None:
    refs = P.reference_models()
    assert refs == {
        "best": "gpt-4o-2024-08-06",
        "median": "internlm2_5-7b-chat-1m",
        "worst": "Qwen2.5-7B",
    }
    radar = P.radar_reference()
    assert list(radar.columns) == list(CAPABILITIES) and len(radar) == 3
    assert all("(published; " in label for label in radar.index)
    # a run model named like a published one keeps its name; the published row is renamed
    t3 = pd.DataFrame({"OQ": [0.5], "Overall": [0.5]}, index=pd.Index(["Qwen2.5-7B"]))
    both = P.table3_with_published(t3)
    assert both.loc["Qwen2.5-7B", "source"] == T.THIS_RUN
    assert both.loc["Qwen2.5-7B (published)", "source"] == T.PUBLISHED_T3
    assert both.index.is_unique


def test_cis_of_task_ars_overall_ars_and_ifp() -> None:
    rows = [
        ("m", task, v, e, 0, 3072, c, f)
        for task in ("LOI", "LSI")
        for e, (v, c, f) in enumerate([(0.25, 0.0, 1.0), (0.75, 2.0, 1.0), (0.5, 1.0, 0.0)])
    ]
    t = _table(rows)
    ci = T.ars_ci(t, n_resamples=500)
    assert ci.loc["m", "ARS"] == pytest.approx(0.5) and ci.loc["m", "n"] == 6
    assert ci.loc["m", "low"] < 0.5 < ci.loc["m", "high"]
    tasks = T.task_ars_ci(t, n_resamples=500).set_index("task")
    assert list(tasks.index) == ["LSI", "LOI"]  # the paper's Table 3 order
    assert (tasks["ARS"] == 0.5).all() and (tasks["n"] == 3).all()
    got = T.ifp_ci(t, n_resamples=500).set_index("capability")
    want = T.ifp(T.item_means(t)).loc["m"]
    for cap in got.index:  # the point estimate is Eq. 4 itself
        assert got.loc[cap, "IFP"] == pytest.approx(want[cap])
        assert got.loc[cap, "low"] <= got.loc[cap, "IFP"] <= got.loc[cap, "high"]
    assert set(got.index) == {"Fmt", "Recog", "Spat"}  # no Ori item in this table


def test_table4_with_published_keeps_the_papers_ranks_and_reranks_with_the_run() -> None:
    paper = P.paper_table4()
    alone = P.table4_with_published(paper.iloc[:0].drop(columns="row"))
    assert set(alone["source"]) == {T.PUBLISHED_T4} and len(alone) == len(paper)
    for c in ["Expression", "Variable", "Length", "IFS(AVG)"]:
        assert alone[c].to_dict() == paper[c].to_dict()  # every perspective, as printed
        same = alone[f"{c}_rank"] == paper[f"{c}_rank"].reindex(alone.index)
        # printed ties the paper broke on unprinted digits (paper_check flags the same two)
        assert set(same[~same].index) <= {"LWM-Text-Chat-1M", "Qwen2.5-32B"}
    # a run steadier than every published model ranks first in every perspective
    run = pd.DataFrame(
        {"Expression": [0.0], "Variable": [0.0], "Length": [0.0], "IFS(AVG)": [0.0], "ARS": [1.0]},
        index=pd.Index(["mine"]),
    )
    both = P.table4_with_published(run)
    assert both.index[0] == "mine" and both.loc["mine", "source"] == T.THIS_RUN
    assert both.loc["gpt-4o-2024-08-06", "Variable_rank"] == 2  # the paper's 1st moves down
    assert np.isnan(both.loc["mine", "paper_rank"])


def test_radar_published_picks_rows_and_names_unknown_models() -> None:
    assert len(P.radar_published("all")) == 20 and P.radar_published("none").empty
    assert len(P.radar_published("reference")) == 3
    two = P.radar_published(["Qwen2.5-7B", "gpt-4o-2024-08-06"])
    assert list(two.index) == ["Qwen2.5-7B (published)", "gpt-4o-2024-08-06 (published)"]
    with pytest.raises(LcevalError, match="no published IFP for 'gpt-5'.*Qwen2.5-7B"):
        P.radar_published(["gpt-5"])


def test_radar_keeps_its_legend_short_with_the_run_highlighted(tmp_path) -> None:
    """All 20 published models: one band of their range (a 21-entry legend was unreadable); the
    three reference models: three lines, each its own colour and dash (they were one grey
    dash)."""
    cap = P.ifp_with_published(pd.DataFrame({c: [0.5] for c in CAPABILITIES}, index=["mine"]))
    paths = A.write_ifp_radar(cap, tmp_path, "all")
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    mine = cap[cap["source"] == T.THIS_RUN]
    fig = A.plot_ifp_radar(mine, reference=P.radar_published("all"))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["20 published models (range)", "mine (this run)"]
    lines = fig.axes[0].get_lines()
    assert lines[-1].get_label() == "mine (this run)" and lines[-1].get_linewidth() > 2
    fig = A.plot_ifp_radar(mine, reference=P.radar_published("reference"))
    refs = fig.axes[0].get_lines()[:-1]
    assert len(refs) == 3 and all(line.get_linewidth() < 1 for line in refs)
    assert len({line.get_color() for line in refs}) == 3
    assert len({str(line.get_linestyle()) for line in refs}) == 3


def test_ifs_gap_on_hand_made_tables() -> None:
    ext = pd.DataFrame(
        {"Expression": [0.2, 0.1], "Variable": [0.1, 0.1], "Length": [0.3, 0.0]}, index=["a", "b"]
    )
    rnd = pd.DataFrame(
        {"Expression": [0.1, 0.05], "Variable": [0.2, 0.1], "Length": [0.1, 0.1]},
        index=["b", "a"],
    )
    gap = T.ifs_gap(ext, rnd)
    assert list(gap.index) == ["a", "b", "MEAN"]
    assert gap.loc["a"].tolist() == pytest.approx([0.15, 0.0, 0.2])
    assert gap.loc["b"].tolist() == pytest.approx([0.0, -0.1, -0.1])
    assert gap.loc["MEAN", "Expression"] == pytest.approx(0.075)
    assert gap.attrs["share_positive"] == {"Expression": 0.5, "Variable": 0.0, "Length": 0.5}
    share = P.fig3_share_with_published(gap)
    assert share.loc["published (paper Appendix B)", "Expression"] == 0.75
    assert share.loc[T.THIS_RUN, "models"] == 2
    undefined = pd.DataFrame(np.nan, index=["c"], columns=ext.columns)
    gap3 = T.ifs_gap(pd.concat([ext, undefined]), pd.concat([rnd, undefined]))
    assert P.fig3_share_with_published(gap3).loc[T.THIS_RUN, "models"] == 2  # c has no IFS
    with pytest.raises(LcevalError, match="share no model"):
        T.ifs_gap(ext, rnd.rename(index=str.upper))


def test_fig3_from_an_extension_run_and_a_random_run(tmp_path) -> None:
    _fake_run(tmp_path, "ext", "cluster", miss=3)
    _fake_run(tmp_path, "rnd", "random", miss=2)
    out = A.report_ifs_gap("ext", "rnd", root=tmp_path)
    gap = out["fig3_ifs_gap"]
    assert list(gap.index) == ["good", "bad", "MEAN"] or list(gap.index) == ["bad", "good", "MEAN"]
    assert gap.loc["good"].abs().max() == 0.0  # the same perfect answers in both runs
    assert gap.loc["bad"].abs().max() > 0.0
    run = RunDir("ext", tmp_path)
    assert (run.report / "lifbench_fig3_ifs_gap.csv").is_file()
    assert (run.figures / "lifbench_fig3_ifs_gap.png").is_file()
    with pytest.raises(LcevalError, match="expressions: random"):
        A.report_ifs_gap("rnd", "ext", root=tmp_path)
