"""papermill runner: pipeline validation; a failed notebook never leaves a complete-looking copy."""

import json
import re

import nbformat
import pytest

from lceval.cli.notebooks import run_notebook, run_pipeline
from lceval.core.errors import LcevalError


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ({"run_id": "r"}, "steps is required"),
        ({"run_id": "r", "steps": []}, "steps must be a non-empty list"),
        ({"steps": [{"notebook": "02_inference"}]}, "no run_id"),
        ({"run_id": "r", "steps": ["02_inference"]}, "steps[0] must be a mapping"),
        (
            {"run_id": "r", "steps": [{"notebook": "02_inference", "param": "x"}]},
            "steps[0]: unknown parameter 'param'",
        ),
        ({"run_id": "r", "steps": [{"notebook": "nope"}]}, "unknown notebook 'nope'"),
    ],
)
def test_malformed_pipelines(tmp_path, pipeline, message):
    with pytest.raises(LcevalError, match=re.escape(message)):
        run_pipeline(pipeline, outputs_root=tmp_path)


def _notebook(path, fail, kernel="python3"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": kernel,
        "display_name": kernel,
        "language": "python",
    }
    params = nbformat.v4.new_code_cell("run_id = 'x'\nouts = None")
    params.metadata["tags"] = ["parameters"]
    body = "raise ValueError('bad cell')" if fail else "result = run_id + '!'\nprint(result)"
    cell = nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\n" + body)  # the tests' marker
    cell.metadata["tags"] = ["nbval-ignore-output"]
    nb.cells = [params, cell]
    nbformat.write(nb, path)
    return path


@pytest.mark.notebook
def test_run_notebook_injects_params_and_keeps_failures_apart(tmp_path, capsys):
    # a kernelspec that is not installed (the notebooks name `lceval`, which `make setup`
    # registers): `lceval run` runs them on its own Python all the same
    ok = run_notebook(
        _notebook(tmp_path / "ok.ipynb", False, kernel="no-such-kernel"),
        "r1",
        {"outs": 3},
        outputs_root=tmp_path / "out",
        progress=False,
    )
    assert ok == tmp_path / "out" / "r1" / "notebooks" / "ok.ipynb"
    outputs = json.dumps(nbformat.read(ok, 4).cells[-1].outputs)
    assert "r1!" in outputs
    # issue 49: lceval run names the notebook it executes; the copy a user reads has no
    # test markers (nbval's comment lines and tags), and its cells still run as written
    assert "lceval: executing notebook ok.ipynb for run r1" in capsys.readouterr().err
    executed = nbformat.read(ok, 4)
    assert "NBVAL" not in ok.read_text() and "nbval" not in ok.read_text()
    assert executed.cells[-1].source == "result = run_id + '!'\nprint(result)"
    with pytest.raises(LcevalError, match="bad.ipynb failed in cell .*ValueError: bad cell"):
        run_notebook(
            _notebook(tmp_path / "bad.ipynb", True),
            "r1",
            outputs_root=tmp_path / "out",
            progress=False,
        )
    folder = tmp_path / "out" / "r1" / "notebooks"
    assert not (folder / "bad.ipynb").exists()
    assert (folder / "bad.failed.ipynb").exists()
    kept = nbformat.read(folder / "bad.failed.ipynb", 4)  # its traceback quotes the source run
    assert not any("NBVAL" in c.source for c in kept.cells)
    assert not list(folder.glob(".*running*"))


def test_run_id_prefixes_every_run_of_a_pipeline(monkeypatch, tmp_path):
    # LongGenBench + RULER: three steps with their own run ids; --run-id X names all three, and
    # the correlation step reads the two runs under their new names
    from lceval.cli import notebooks

    calls = []
    monkeypatch.setattr(
        notebooks,
        "run_notebook",
        lambda nb, rid, params, **kw: calls.append((nb.stem, rid, params)) or tmp_path / rid,
    )
    pipeline = "params/pipelines/longgenbench_ruler_smoke.yaml"
    run_pipeline(pipeline, "X", outputs_root=tmp_path)
    assert [(nb, rid) for nb, rid, _ in calls] == [
        ("06_longgenbench", "X-longgenbench-smoke"),
        ("07_ruler", "X-ruler-smoke"),
        ("05_ruler_correlation", "X-ruler-corr-smoke"),
    ]
    corr = calls[-1][2]
    assert corr["ruler_runs"] == ["X-ruler-smoke"]
    assert corr["longgenbench_runs"] == ["X-longgenbench-smoke"]
    calls.clear()
    run_pipeline(pipeline, outputs_root=tmp_path)  # no --run-id: the file's own names
    assert [rid for _, rid, _ in calls] == ["longgenbench-smoke", "ruler-smoke", "ruler-corr-smoke"]


def test_run_prints_the_report_of_every_run_a_pipeline_wrote(monkeypatch, tmp_path, capsys):
    from lceval.cli import main, notebooks

    paths = []
    for rid in ("a-longgenbench-smoke", "a-ruler-smoke", "a-ruler-corr-smoke"):
        (tmp_path / rid / "report").mkdir(parents=True)
        (tmp_path / rid / "report" / "index.html").write_text("<p>r</p>")
        paths.append(tmp_path / rid / "notebooks" / "n.ipynb")
    monkeypatch.setattr(notebooks, "run_pipeline", lambda *a, **kw: paths)
    argv = ["run", "params/pipelines/longgenbench_ruler_smoke.yaml", "--run-id", "a"]
    assert main([*argv, "--outputs", str(tmp_path)]) == 0
    reports = [x for x in capsys.readouterr().out.splitlines() if x.startswith("report: ")]
    assert reports == [f"report: {p.parent.parent / 'report' / 'index.html'}" for p in paths]
