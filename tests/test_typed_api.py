"""The typed public face (issue 39 item 2): ``lceval`` exports evaluate, build, infer, score,
report, compare and RunDir as real imports (no PEP 562 ``__getattr__`` anywhere on the way),
mypy checks calls to them, and ``import lceval`` loads no heavy package."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lceval
import lceval.report
import lceval.run

ROOT = Path(lceval.__file__).resolve().parent.parent
HEAVY = ("pandas", "numpy", "torch", "transformers", "vllm", "matplotlib", "lceval.models.hf")


def test_the_face_is_real_functions_with_their_signatures():
    for module in (lceval, lceval.run, lceval.report):
        assert "__getattr__" not in vars(module), module.__name__
    assert lceval.score is lceval.run.score
    # lceval.report is the package, callable as its stage (notebooks read lceval.report.report)
    assert callable(lceval.report) and lceval.report.report.__module__ == "lceval.report.stage"
    for name in ("evaluate", "build", "infer", "score", "report", "compare", "RunDir"):
        assert name in lceval.__all__ and callable(getattr(lceval, name))
    assert "root" in inspect.signature(lceval.score).parameters
    assert {"benchmark", "model", "limit", "root"} <= set(
        inspect.signature(lceval.evaluate).parameters
    )


def test_import_lceval_loads_no_heavy_package(tmp_path):
    code = (
        f"import json, sys, lceval; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


@pytest.mark.slow  # mypy reads the whole package: ~10 s of CPU
def test_mypy_refuses_a_misspelt_keyword_of_a_stage(tmp_path):
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "import lceval\nimport lceval.run\n\n"
        'lceval.run.score("x", rooot=1)\n'
        'lceval.score("x", root="outputs")\n'
        'result: lceval.EvalResult = lceval.evaluate("lifbench", model="embedded", limit=4)\n'
        'tables: dict[str, object] = lceval.report("x", scorer="lifbench:strict")\n'
        'lceval.evaluate("lifbench", limitt=4)\n'
        'lceval.evaluate("lifbench", max_new_tokens=8, param={"lengths": [512]})\n'
        'lceval.evaluate("lifbench", limit="4")\n'
        'lceval.evaluate("lifbench", root="outputs", progress=False, scorer="lifbench:strict")\n'
        'lceval.compare("a", "b", alpah=0.1)\n'
        'lceval.compare("a", "b", alpha=0.1, no_tasks=True, root="outputs")\n'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), str(snippet)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 4, out.stdout
    assert 'snippet.py:4: error: Unexpected keyword argument "rooot" for "score"' in errors[0]
    assert 'snippet.py:8: error: Unexpected keyword argument "limitt" for "evaluate"' in errors[1]
    assert 'snippet.py:10: error: Argument "limit" to "evaluate" has incompatible type' in errors[2]
    assert (
        'snippet.py:12: error: Unexpected keyword argument "alpah" for "compare_runs"' in errors[3]
    )
    assert out.returncode == 1


def test_evaluate_keywords_are_declared_once_by_eval_config():
    """evaluate's keywords are EvalConfig's fields (less the positional benchmark) and root and
    progress: its signature is made from the model, not written again beside it."""
    from lceval.run.config import EvalConfig

    params = inspect.signature(lceval.evaluate).parameters
    assert params["benchmark"].kind is inspect.Parameter.POSITIONAL_ONLY
    keywords = [k for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert keywords == [k for k in EvalConfig.model_fields if k != "benchmark"] + [
        "root",
        "progress",
    ]
    assert params["limit"].annotation == EvalConfig.model_fields["limit"].rebuild_annotation()


def test_compare_keywords_are_declared_by_compare_call():
    """lceval.compare's keywords are fields of CompareCall (which validates them), with the
    same defaults: the signature is for mypy, the declaration is the model's."""
    from lceval.run.config import CompareCall

    params = inspect.signature(lceval.compare).parameters
    assert list(params)[:2] == ["run_a", "run_b"]
    fields = CompareCall.model_fields
    for name, p in list(params.items())[2:]:
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and name in fields, name
        assert p.default == fields[name].get_default(), name
