"""report/results.json (lceval.report.results): valid against the shipped JSON Schema, the same
headlines as ``lceval compare --leaderboard``, and ``lceval compare`` from the files alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

import lceval.run
from lceval.cli import main
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta, read_records, write_jsonl
from lceval.core.records import Response
from lceval.report import compare, results

FIXTURE = Path(__file__).parents[1] / "fixtures" / "regression" / "lifbench"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two scored LIFBench runs (models m1, m2 and m3, m4 of the regression fixture), each with
    its results.json."""
    root = tmp_path_factory.mktemp("results")
    for run_id, models in (("ra", ("m1", "m2")), ("rb", ("m3", "m4"))):
        run = RunDir(run_id, root).create()
        for name in ("samples.jsonl", "contexts.jsonl"):
            shutil.copy(FIXTURE / name, run.path / name)
        responses = read_records(FIXTURE / "responses.jsonl", Response)
        write_jsonl(run.responses, [r for r in responses if r.model in models])
        info = {"backend": "hf", "dtype": "float32", "generation": {"temperature": 0.0}}
        run.write_meta(new_meta(run_id, models=dict.fromkeys(models, info), encoding="o200k_base"))
        lceval.run.score(run_id, root=root, progress=False)
        assert results.write_results(run) == run.report / "results.json"
    return root


def test_results_json_validates_against_the_shipped_schema(root):
    doc = json.loads((root / "ra" / "report" / "results.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(results.schema())
    jsonschema.validate(doc, results.schema())
    assert doc["schema_version"] == results.SCHEMA_VERSION and doc["run_id"] == "ra"
    assert {h["model"] for h in doc["headlines"]} == {"m1", "m2"}
    assert {t["task"] for t in doc["tasks"]} >= {"LSI", "OR"}
    prov = doc["provenance"]
    assert prov["models"]["m1"]["dtype"] == "float32" and prov["encoding"] == "o200k_base"
    assert "lceval" in prov["versions"]
    broken = {k: v for k, v in doc.items() if k != "headlines"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, results.schema())


def test_headlines_are_the_leaderboard_numbers(root):
    """results.json holds what `lceval compare --leaderboard` computes from the scores."""
    heads = compare.load_headlines(["ra", "rb"], root=root)
    direct = compare.leaderboard(heads, seed=0)
    docs = [results.load_results(root / r) for r in ("ra", "rb")]
    from_files = results.leaderboard(docs)
    cols = ["benchmark", "metric", "model", "rank", "estimate", "low", "high", "n", "n_units"]
    pd.testing.assert_frame_equal(
        from_files[cols].reset_index(drop=True),
        direct[cols].reset_index(drop=True),
        check_dtype=False,
    )
    task = next(t for t in docs[0]["tasks"] if t["model"] == "m1" and t["task"] == "LSI")
    scores = RunDir("ra", root).read_scores()
    mine = scores[(scores["model"] == "m1") & (scores["task"] == "LSI")]["value"]
    assert task["mean"] == pytest.approx(mine.mean()) and task["n"] == mine.notna().sum()


def test_compare_reads_results_files_alone(root, tmp_path, capsys):
    ra = tmp_path / "ra.json"
    shutil.copy(root / "ra" / "report" / "results.json", ra)
    rb_folder = tmp_path / "copy-of-rb"
    shutil.copytree(root / "rb" / "report", rb_folder / "report")
    assert main(["compare", str(ra), f"{rb_folder}/", "--leaderboard"]) == 0
    out = capsys.readouterr().out
    assert "ARS (Eq. 3)" in out and all(m in out for m in ("m1", "m2", "m3", "m4"))
    assert main(["compare", str(ra), f"{rb_folder}/"]) == 2  # paired: needs scores.parquet
    err = capsys.readouterr().err
    assert "holds headline numbers only" in err and "scores.parquet" in err
    assert err.count("\n") == 1


def test_bad_results_files_are_one_line_errors(root, tmp_path):
    doc = json.loads((root / "ra" / "report" / "results.json").read_text(encoding="utf-8"))
    cases = {
        "notjson.json": "{oops",
        "old.json": json.dumps({**doc, "schema_version": "0"}),
        "bad.json": json.dumps({**doc, "headlines": [{"benchmark": "lifbench"}]}),
    }
    messages = {
        "notjson.json": "is not valid JSON",
        "old.json": "schema_version '0'",
        "bad.json": "not an lceval results file: at headlines/0",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(LcevalError, match=messages[name]) as info:
            results.load_results(tmp_path / name)
        assert "\n" not in str(info.value)
    with pytest.raises(LcevalError, match="holds no report/results.json"):
        results.load_results(tmp_path)
    with pytest.raises(LcevalError, match="does not exist"):
        results.load_results(tmp_path / "missing.json")
    with pytest.raises(LcevalError, match="given more than once"):
        results.leaderboard([doc, doc])


def test_schema_ships_as_package_data():
    import tomllib

    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert "schemas/*.json" in data["tool"]["setuptools"]["package-data"]["lceval"]
    assert results.schema()["properties"]["schema_version"]["const"] == results.SCHEMA_VERSION


def test_rows_of_an_unknown_scorer_are_left_out(root, tmp_path, capsys):
    shutil.copytree(root / "ra", tmp_path / "ra")
    run = RunDir("ra", tmp_path)
    scores = run.read_scores()
    gone = scores.assign(scorer="lifbench:gone")
    pd.concat([scores, gone]).to_parquet(run.scores, index=False)
    doc = results.results_document(run)
    assert {h["scorer"] for h in doc["headlines"]} == {"lifbench"}
    assert "unknown scorer 'lifbench:gone' left out" in capsys.readouterr().err
