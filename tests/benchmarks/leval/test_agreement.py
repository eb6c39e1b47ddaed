"""The LIE Kendall-tau table (agreement.py) on hand-made scores of three models."""

from __future__ import annotations

import math

import pytest

import lceval.report
import lceval.run
from lceval.benchmarks.leval.agreement import PUBLISHED_TAU, lie_kendall
from lceval.benchmarks.leval.gold import OpenGold
from lceval.benchmarks.leval.report import leval_tables
from lceval.core.io import scores_frame
from lceval.core.records import Sample, Score

GOLD = OpenGold(query="q", reference="a b", evaluation="f1", metric="f1", reference_words=2)
# model -> (ROUGE-L, F1) without LIE, with LIE; judge win rate with LIE from (wins, losses)
RUNS = {
    "m1": ((0.1, 0.9), (0.9, 0.9), (3, 0)),
    "m2": ((0.2, 0.1), (0.5, 0.5), (2, 1)),
    "m3": ((0.3, 0.5), (0.1, 0.1), (0, 3)),
}


def _sample(lie: bool) -> Sample:
    sid = f"leval/narrative_qa/0000/000{'' if lie else '/nolie'}"
    return Sample(
        id=sid,
        benchmark="leval",
        task="narrative_qa",
        instruction="q",
        gold=GOLD,
        meta={"retrieval": "full", "lie": lie},
    )


def _tables():
    samples = [_sample(True), _sample(False)]
    rows = []
    for model, (no_lie, lie, (wins, losses)) in RUNS.items():
        for s, (rl, f1) in ((samples[0], lie), (samples[1], no_lie)):
            parts = {"rouge1": rl, "rouge2": rl, "rougeL": rl, "f1": f1}
            parts |= {"words": 2.0, "reference_words": 2.0}
            rows.append(Score(s.id, model, "leval", "narrative_qa", "leval", "1", f1, parts=parts))
        judged = {"wins": wins, "ties": 0.0, "losses": losses, "errors": 0.0}
        rows.append(
            Score(
                samples[0].id,
                model,
                "leval",
                "narrative_qa",
                "leval:judge",
                "1",
                wins / 3,
                parts=judged,
            )
        )
    return leval_tables(scores_frame(rows), samples)


def test_lie_kendall_against_the_judge_with_lie() -> None:
    tables = _tables()
    t = tables["lie_kendall"].set_index("metric")
    # ROUGE-L: without LIE m3 > m2 > m1 (reversed), with LIE m1 > m2 > m3 as the judge
    assert t.loc["ROUGE-L", "tau_without_LIE"] == pytest.approx(-1.0)
    assert t.loc["ROUGE-L", "tau_with_LIE"] == pytest.approx(1.0)
    assert t.loc["ROUGE-L", "tau_LIE_vs_no_LIE"] == pytest.approx(-1.0)
    # F-1 without LIE: m1 > m3 > m2, concordant pairs 2 of 3 -> tau = 1/3
    assert t.loc["F-1", "tau_without_LIE"] == pytest.approx(1 / 3)
    assert t.loc["judge", "tau_with_LIE"] == pytest.approx(1.0)  # the reference itself
    assert math.isnan(t.loc["judge", "tau_without_LIE"])  # no judge games without LIE
    assert t.loc["ROUGE-L", "n_models"] == 3
    assert t.loc["ROUGE-L", "published_with_LIE"] == PUBLISHED_TAU["ROUGE-L"][1] == 0.8
    assert t.loc["judge", "published_metric"] == "GPT-4 judge"
    assert "not public" in t.loc["F-1", "reference"]
    pairs = tables["metric_kendall"].set_index(["lie", "metric_a", "metric_b"])
    assert pairs.loc[("True", "ROUGE-L", "judge"), "tau"] == pytest.approx(1.0)
    assert pairs.loc[("False", "ROUGE-L", "F-1"), "tau"] == pytest.approx(-1 / 3)
    by_model = tables["metric_by_model"].set_index(["model", "lie"])
    assert by_model.loc[("m1", "True"), "judge"] == pytest.approx(100.0)


def test_one_model_gives_nan_not_a_made_up_tau() -> None:
    tables = _tables()
    metrics = tables["metric_by_model"].set_index(["model", "lie"])
    one = lie_kendall(metrics.loc[["m1"]])
    assert one["tau_with_LIE"].isna().all() and (one["n_models"] <= 1).all()


def test_metric_kendall_over_imported_published_predictions(tmp_path) -> None:
    """Published prediction files name no LIE setting: the metrics' agreement is per lie None."""
    import json

    from lceval.benchmarks.leval.importer import import_predictions

    answers = {"good": "the sky is blue today", "mid": "the sky is green", "bad": "no idea"}
    for folder, pred in answers.items():
        path = tmp_path / "Predictions" / "ngram_eval" / folder / "narrative_qa.pred.jsonl"
        path.parent.mkdir(parents=True)
        rows = [
            {"query": f"q{i}", "gt": "the sky is blue today", f"{folder}_pred": pred}
            for i in range(2)
        ]
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    import_predictions(tmp_path / "Predictions", "pub", root=tmp_path)
    lceval.run.score("pub", root=tmp_path, progress=False)
    tables = lceval.report.write_report("pub", root=tmp_path)
    pairs = tables["leval/metric_kendall"].set_index(["lie", "metric_a", "metric_b"])
    assert pairs.loc[("None", "ROUGE-L", "F-1"), "tau"] == pytest.approx(1.0)
    assert pairs.loc[("None", "ROUGE-L", "F-1"), "n_models"] == 3
    assert tables["leval/lie_kendall"]["tau_with_LIE"].isna().all()  # no LIE setting, no judge
    by_model = tables["leval/metric_by_model"]
    assert set(by_model["lie"]) == {"None"} and len(by_model) == 3  # one row per model
    assert pairs.loc[("None", "ROUGE-L", "L-Eval score"), "n_models"] == 3
