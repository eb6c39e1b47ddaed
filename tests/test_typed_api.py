"""The typed public face (issue 39 item 2, issue 48 item 4): ``lceval`` exports evaluate, build,
infer, score, write_report, compare (all from one module, :mod:`lceval.api`) and RunDir as real
imports (no PEP 562 ``__getattr__``, no module-class swap, no ``TYPE_CHECKING`` branch), any
user's mypy checks calls to them without pydantic's plugin or our config, and ``import lceval``
loads no heavy package."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lceval
import lceval.api
import lceval.report
import lceval.run

ROOT = Path(lceval.__file__).resolve().parent.parent
HEAVY = ("pandas", "numpy", "torch", "transformers", "vllm", "matplotlib", "lceval.models.hf")


def test_the_face_is_real_functions_with_their_signatures():
    for module in (lceval, lceval.api, lceval.run, lceval.report):
        assert "__getattr__" not in vars(module), module.__name__
    assert lceval.score is lceval.run.score
    # lceval.report is a plain package; its stage is write_report, a name of its own
    assert type(lceval.report) is type(lceval) and not callable(lceval.report)
    assert lceval.write_report is lceval.report.write_report
    for name in ("evaluate", "build", "infer", "score", "write_report", "compare"):
        assert name in lceval.__all__ and getattr(lceval, name) is getattr(lceval.api, name)
    for path in (ROOT / "lceval" / "__init__.py", ROOT / "lceval" / "api.py"):
        assert "TYPE_CHECKING" not in path.read_text(), path
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


def test_evaluate_and_infer_keywords_are_their_configs_fields():
    """evaluate's keywords are EvaluateCall's fields (less the positional benchmark), infer's are
    InferCall's (less the positional run id): the signatures are made from the models, not
    written again beside them."""
    from lceval.run.config import EvaluateCall, InferCall

    for function, config, first in (
        (lceval.evaluate, EvaluateCall, "benchmark"),
        (lceval.infer, InferCall, "run_id"),
    ):
        params = inspect.signature(function).parameters
        assert params[first].kind is inspect.Parameter.POSITIONAL_ONLY
        keywords = [k for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        assert keywords == [k for k in config.model_fields if k != first]
        assert params["limit"].annotation == config.model_fields["limit"].rebuild_annotation()


USER_FILE = """\
import lceval
import lceval.run

result: lceval.EvalResult = lceval.evaluate(
    "lifbench", model="embedded", limit=4, max_new_tokens=64, temperature=0.0
)
lceval.infer("run", backend="auto", model="embedded", max_new_tokens=8, truncate=True)
lceval.evaluate("lifbench", max_new_token=64)
lceval.evaluate("lifbench", temperature="hot")
lceval.infer("run", limt=4)
lceval.infer("run", max_new_tokens="64")
lceval.score("run", rooot="outputs")
lceval.score("x", root="outputs")
lceval.run.score("x", rooot=1)
tables: dict[str, object] = lceval.write_report("x", scorer="lifbench:strict")
lceval.evaluate("lifbench", max_new_tokens=8, param={"lengths": [512]})
lceval.evaluate("lifbench", root="outputs", progress=False, scorer="lifbench:strict")
lceval.compare("a", "b", alpah=0.1)
lceval.compare("a", "b", alpha=0.1, no_tasks=True, root="outputs")
from lceval.benchmarks.cifbench import data as c_d, helpers as cif, report as c_r, tables as c_t
from lceval.benchmarks.leval import data as leval_data, helpers as leval, ntk
from lceval.benchmarks.lifbench import helpers as lif, report as lif_report
from lceval.benchmarks.longgenbench import helpers as lgb, ruler_correlation, tables as lgb_t
from lceval.benchmarks.manyifeval import helpers as many, refine
from lceval.notebook import get_benchmark
helpers: tuple[lif.Report, many.Refine, lgb.RulerCorrelation, lgb.Tables] = (
    lif_report, refine, ruler_correlation, lgb_t
)
from lceval.benchmarks.cifbench import variants as c_v
more: tuple[leval.Data, leval.Ntk, cif.Data, cif.Report, cif.Tables, cif.Variants] = (
    leval_data, ntk, c_d, c_r, c_t, c_v
)
lif_helper = get_benchmark("lifbench").helper("report")
gap: dict[str, object] = lif_helper.report_ifs_gap("a", "b", root="outputs")
lif_helper.report_ifs_gap("a", 3)
get_benchmark("leval").helper("ntk").plan_sweep("r", lengths=[4096], samples=2)
get_benchmark("leval").helper("ntk").plan_sweep("r", lengths=[4096], samples="2")
get_benchmark("cifbench").helper("data").write_demo_dataset("d", public_input=3)
"""


@pytest.mark.slow  # mypy reads the whole package and pydantic: ~30 s of CPU (the one mypy run)
def test_a_users_mypy_without_plugin_or_config_checks_the_face(tmp_path):
    """Issue 48 items 4 and 5: in a user's project (no pydantic plugin, no lceval config) the
    correct calls give no error and each misspelt keyword or wrong type one; a notebook's
    ``get_benchmark(KEY).helper(NAME)`` is typed as that helper module's Protocol."""
    (tmp_path / "user.py").write_text(USER_FILE)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")  # no plugin, nothing of ours
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", "cache"]
        + ["user.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    lines = [int(line.split(":")[1]) for line in errors]
    assert lines == [8, 9, 10, 11, 12, 14, 18, 35, 37, 38], out.stdout
    assert 'Unexpected keyword argument "max_new_token"' in errors[0]
    assert 'Argument "temperature" to "evaluate" has incompatible type "str"' in errors[1]
    assert 'Unexpected keyword argument "limt" for "infer"' in errors[2]
    assert 'Argument "max_new_tokens" to "infer" has incompatible type "str"' in errors[3]
    assert 'Unexpected keyword argument "rooot" for "score"' in errors[4]
    assert 'Unexpected keyword argument "rooot" for "score"' in errors[5]
    assert 'Unexpected keyword argument "alpah" for "compare_runs"' in errors[6]
    # Benchmark.helper(): each helper module is its Protocol (the modules above conform to
    # theirs: no error), a helper's call is checked as the module's function
    assert 'Argument 2 to "report_ifs_gap" of "Report" has incompatible type "int"' in errors[7]
    assert 'Argument "samples" to "plan_sweep" of "Ntk" has incompatible type "str"' in errors[8]
    assert 'Unexpected keyword argument "public_input" for "write_demo_dataset"' in errors[9]


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
