"""``lceval eval`` and :func:`lceval.evaluate` (issue 39 items 1 and 2): build, answer, score and
report one benchmark in one call; the same call again resumes the run without answering again;
bad input is one line (exit 2), refused before anything is built."""

from __future__ import annotations

import pytest

from lceval import evaluate
from lceval.api import default_run_id
from lceval.cli import main
from lceval.core.errors import LcevalError

# The CLI's and evaluate()'s end-to-end runs on the embedded model (a report, the headline line,
# results.json, the EvalResult, a resume that answers nothing) are
# tests/report/test_eval_every_benchmark.py's, on its one engine.


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["lifbenc"], "unknown benchmark 'lifbenc'"),
        (["lifbench", "--model", "/no/such/model", "--backend", "hf"], "/no/such/model"),
        (["lifbench", "-p", "lenghts=[512]"], "unknown parameter 'lenghts'; did you mean"),
        (["lifbench", "-p", "nokey"], "--param expects KEY=VALUE"),
        (["lifbench", "-p", "run_id=x"], "give --run-id RUN instead"),
        (["lifbench", "--backend", "hff"], "unknown backend 'hff' (did you mean hf?)"),
        (["lifbench", "--limit", "0"], "--limit must be >= 1, got 0"),
        # a scorer or task the benchmark lacks: refused before the build (they were refused
        # after the answers, or after the build, leaving a run folder behind)
        (["lifbench", "--scorer", "lifbench:strct"], "no scorer 'lifbench:strct'; choose one"),
        (["lifbench", "--scorer", "ruler"], "unknown scorer 'ruler'; choose one of lifbench, "),
        (["lifbench", "--tasks", "LSX"], "task(s) LSX not in benchmark lifbench; it has LSI, "),
        (["lifbench", "--run-id", "x" * 300], "run_id 'xxxxxxxxxx"),
        (["lifbench", "--run-id", "../x"], "run_id '../x' is not valid"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_built(capsys, tmp_path, argv, message):
    assert main(["--outputs", str(tmp_path), "eval", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_new_token": 8}, "unknown parameter 'max_new_token'; did you mean"),
        ({"roots": "/tmp"}, "unknown parameter 'roots'; did you mean root"),
        ({"progress": "no"}, "progress"),
        ({"limit": "4"}, "limit"),
        ({"limit": 0}, "^evaluate: limit must be >= 1, got 0 \\(int\\)$"),
        ({"benchmark": "ruler"}, "benchmark is the first argument, not a keyword"),
        (
            {"model": 3},
            "^evaluate: model must be a model id \\(a path, hub id or embedded\\), a mapping "
            ".* or a list of them, got 3 \\(int\\)$",
        ),
        ({"model": []}, "^evaluate: model must name at least one model, got an empty list$"),
        # a lone surrogate (an undecodable byte of argv): pydantic's words were "must be valid
        # (input should be a valid string, unable to parse raw data as a unicode string)"
        ({"run_id": "x\udcff"}, "^evaluate: run_id must be text \\(it holds a byte that is not"),
        (
            {"root": 3},
            "^evaluate: root must be a folder path \\(str or os.PathLike\\), got 3 \\(int\\)$",
        ),
    ],
)
def test_evaluate_refuses_a_bad_key_or_value_naming_it(options, message):
    with pytest.raises(LcevalError, match=message):
        evaluate("lifbench", **{"model": "embedded", **options})


def test_a_long_run_id_is_cut_in_its_one_line(tmp_path):
    """A 300-character run id was said whole; now its head and its length."""
    with pytest.raises(LcevalError) as info:
        evaluate("lifbench", model="embedded", run_id="x" * 300, root=tmp_path)
    said = f"run_id '{'x' * 59}... (300 characters) is not valid: use letters, digits"
    assert str(info.value).startswith(said) and len(str(info.value)) < 200
    assert list(tmp_path.iterdir()) == []


def test_evaluate_reads_a_params_file_given_as_a_path(tmp_path):
    """A pathlib.Path is a params file as its string is (it was refused as not a string)."""
    params = tmp_path / "p.yaml"
    params.write_text("- lengths\n")
    with pytest.raises(LcevalError, match=r"^params file .*p\.yaml must hold a mapping, got list$"):
        evaluate("lifbench", model="embedded", params=params, root=tmp_path)
    assert sorted(tmp_path.iterdir()) == [params]


def test_default_run_id_names_benchmark_and_models():
    assert default_run_id("lifbench", ["embedded"]) == "lifbench-embedded"
    assert default_run_id(
        "ruler", ["Qwen/Qwen2.5-7B-Instruct", {"model": "/m/x/", "name": "y"}]
    ) == ("ruler-Qwen2.5-7B-Instruct-y")


def test_the_same_eval_again_keeps_scores_and_report_and_redoes_them_on_a_new_answer(
    monkeypatch, echo_bench, tmp_path
):
    """Issue 49 item 1: ``lceval eval`` again with nothing left to answer keeps the build, the
    answers, scores.parquet and report/ (scores.inputs.json, report/inputs.json say what they
    were made from); a new answer, or another scorer, scores and reports again."""
    import lceval.api
    import lceval.report.stage
    import lceval.run.inference
    import lceval.run.scoring
    from tests.run.test_inference import OracleBackend

    class Oracle(OracleBackend):
        def info(self):
            return {"backend": "hf"}  # the engine the command names

    oracle = Oracle()
    monkeypatch.setattr(lceval.api, "check_load", lambda *a, **k: None)
    monkeypatch.setattr(lceval.run.inference, "check_load", lambda *a, **k: None)
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: oracle)
    calls = {"score": 0, "report": 0}
    for module, name, key in (
        (lceval.run.scoring.Scoring, "responses", "score"),  # once per scoring pass
        (lceval.api, "write_report", "report"),
    ):
        real = getattr(module, name)

        def counted(*a, _real=real, _key=key, **k):
            calls[_key] += 1
            return _real(*a, **k)

        monkeypatch.setattr(module, name, counted)
    kw = dict(model="embedded", backend="hf", limit=4, param={"n": 9}, progress=False)
    first = evaluate("echo", root=tmp_path, **kw)
    run = first.run
    assert calls == {"score": 1, "report": 1} and first.score == 1.0
    made = {p: p.stat().st_mtime_ns for p in (run.scores, run.report / "index.html")}
    again = evaluate("echo", root=tmp_path, **kw)
    assert calls == {"score": 1, "report": 1}  # nothing scored or written again
    assert {p: p.stat().st_mtime_ns for p in made} == made
    assert (again.score, again.summary) == (first.score, first.summary)
    # another scorer reads the same answers: scored and reported again
    evaluate("echo", root=tmp_path, scorer="echo:judge", **kw)
    assert calls == {"score": 2, "report": 2}
    evaluate("echo", root=tmp_path, **kw)
    assert calls == {"score": 3, "report": 3}
    assert run.scores.stat().st_mtime_ns > made[run.scores]
    # a new answer (a larger limit) scores and reports again
    evaluate("echo", root=tmp_path, **{**kw, "limit": 5})
    assert calls == {"score": 4, "report": 4} and len(run.read_scores()) >= 5
