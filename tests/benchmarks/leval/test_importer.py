"""Official prediction files -> a run folder -> lceval score / report; and back (export)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

import lceval.report
import lceval.run
from lceval.benchmarks.leval.importer import export_predictions, import_predictions
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir


def _write(path: Path, model: str, rows: list[tuple[str, str, str]], evaluation="exam") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {"query": q, "gt": gt, f"{model}_pred": pred, "prompt": "p", "evaluation": evaluation}
        )
        for q, gt, pred in rows
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def predictions(tmp_path: Path) -> Path:
    root = tmp_path / "Predictions"
    exam = root / "exam_eval"
    for folder, model, right in (("m-32k", "m-x", True), ("base", "base-model", False)):
        _write(
            exam / folder / "tpo.pred.jsonl",
            model,
            [
                ("q1", "A", "A" if right else "B"),
                ("q2", "C", "The answer is C"),
                ("q3", "B", "B. yes" if right else ""),
                ("q4", "D", "D"),
            ],
        )
        _write(
            exam / folder / "coursera.pred.jsonl",
            model,
            [
                ("c1", "AB", "B"),  # 0.25
                ("c2", "C", "C"),  # 1
            ],
        )
        _write(exam / folder / "gsm100.pred.jsonl", model, [("g1", "18", "The answer is 18")])
        _write(
            exam / folder / "topic_retrieval_longchat.pred.jsonl",
            model,
            [
                ("first", "Art", "Art"),
                ("second", "Sea", "no idea"),
                ("third", "Sky", "Sky"),
                ("first", "Rain", "Rain" if right else "x"),
                ("second", "Sun", "Sun"),
                ("third", "Moon", "x"),
            ],
        )
        _write(
            exam / folder / "sci_fi.pred.jsonl",
            model,
            [
                ("s1", "True [fact: False]", "True [fact: False]"),
                ("s2", "False [fact: False]", "True [fact: False]"),
            ],
        )
    _write(
        root / "ngram_eval" / "m-32k" / "natural_question.pred.jsonl",
        "m-x",
        [("n1", "blue sky", "the blue sky is"), ("n1", "blue sky", "blue sky")],
        "f1",
    )
    _write(root / "llm_gpt4_eval" / "m-x.pred.jsonl", "m-x", [("n1", "blue sky", "x")], "LLM")
    return root


def test_import_score_report_reproduce_the_table(tmp_path, predictions, capsys):
    root = str(tmp_path / "out")
    assert main(["--outputs", root, "import", "leval", str(predictions), "--run-id", "imp"]) == 0
    assert "imported" in capsys.readouterr().out
    run = RunDir("imp", root)
    samples = {s.id: s for s in lceval.run.load_samples(run)}
    # shared across the two models' files; a repeated (query, gt) in one file stays two samples
    assert len(samples) == 4 + 2 + 1 + 6 + 2 + 2
    assert samples["leval/natural_question/p0001"].gold.query == "n1"
    assert samples["leval/topic_retrieval_longchat/p0004"].gold.topic_index == 1  # line 4 % 3
    assert samples["leval/sci_fi/p0000"].gold.judgment == "both"
    meta = json.loads(run.run_json.read_text())
    assert set(meta["models"]) == {"m-x", "base-model"} and meta["models"]["m-x"]["folders"] == [
        "m-32k"
    ]
    assert main(["--outputs", root, "score", "imp"]) == 0
    assert main(["--outputs", root, "report", "imp"]) == 0
    tables = lceval.report.write_report("imp", root=root)
    table = tables["leval/exam_table"]
    m = table.loc[("m-x", "full")]
    assert m["TOEFL"] == 100.0
    assert m["Coursera"] == pytest.approx(100 * 1.25 / 2)
    assert m["GSM"] == 100.0
    # TopicRet: mean over positions (first 2/2, second 1/2, third 1/2) = (100 + 50 + 50) / 3
    assert m["TopicRet"] == pytest.approx(200 / 3)
    # SFiction: (loyalty 1/2 + fact 2/2) / 2
    assert m["SFiction"] == pytest.approx(75.0)
    base = table.loc[("base-model", "full")]
    assert base["TOEFL"] == 50.0  # B for A, "" -> "None"
    ngram = tables["leval/ngram"]
    nq = ngram[(ngram["model"] == "m-x") & (ngram["task"] == "natural_question")].iloc[0]
    # F1 ("the" dropped; "blue sky is": P 2/3, R 1 -> 0.8): (0.8 + 1.0) / 2; words (4 + 2) / 2
    # against a 2-word reference: delta L = 1
    assert nq["f1"] == pytest.approx(90.0) and nq["delta_L"] == pytest.approx(1.0)
    assert (run.report / "leval" / "exam_table.csv").exists()
    assert (run.figures / "leval_scores.png").exists()


def test_import_refuses_to_overwrite_and_bad_files(tmp_path, predictions):
    import_predictions(predictions, "imp", root=tmp_path)
    with pytest.raises(LcevalError, match="already has responses"):
        import_predictions(predictions, "imp", root=tmp_path)
    import_predictions(predictions, "imp", root=tmp_path, force=True)
    bad = tmp_path / "bad" / "tpo.pred.jsonl"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"query": "q", "gt": "A"}) + "\n")
    with pytest.raises(LcevalError, match=r"missing key\(s\) <model>_pred"):
        import_predictions(bad, "bad", root=tmp_path)
    with pytest.raises(LcevalError, match="holds no <task>.pred.jsonl"):
        (tmp_path / "empty").mkdir()
        import_predictions(tmp_path / "empty", "none", root=tmp_path / "x")
    assert main(["--outputs", str(tmp_path), "import", "nope", str(bad), "--run-id", "z"]) == 2


def test_export_round_trip(tmp_path, predictions):
    import_predictions(predictions / "exam_eval" / "m-32k", "one", root=tmp_path)
    files = export_predictions("one", tmp_path / "exported", root=tmp_path)
    assert sorted(f.name for f in files) == sorted(
        p.name for p in (predictions / "exam_eval" / "m-32k").iterdir()
    )
    again = import_predictions(tmp_path / "exported", "two", root=tmp_path)
    a = lceval.run.score("one", root=tmp_path, progress=False).sort_values("sample_id")
    b = lceval.run.score("two", root=tmp_path, progress=False).sort_values("sample_id")
    assert list(a["value"]) == list(b["value"]) and again.path.exists()


OFFICIAL = os.environ.get("LEVAL_OFFICIAL")
"""A checkout of OpenLMLab/LEval (or its Predictions folder), to check the README numbers."""


@pytest.mark.skipif(not OFFICIAL, reason="set LEVAL_OFFICIAL to a checkout of OpenLMLab/LEval")
def test_official_predictions_reproduce_the_readme(tmp_path):
    base = Path(OFFICIAL or "")
    pred = base / "Predictions" if (base / "Predictions").is_dir() else base
    import_predictions(pred / "exam_eval" / "gpt4-32k", "gpt4", root=tmp_path)
    lceval.run.score("gpt4", root=tmp_path, progress=False)
    table = lceval.report.write_report("gpt4", root=tmp_path)["leval/exam_table"]
    row = table.loc[("gpt4-x", "full")]
    readme = {"TOEFL": 84.38, "QuALITY": 82.17, "Coursera": 75.58, "GSM": 96.00, "CodeU": 25.55}
    for name, want in readme.items():
        assert abs(row[name] - want) < 0.01, (name, row[name])
    assert not math.isnan(row["TopicRet"])
