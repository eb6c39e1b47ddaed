"""bench/workload.py's run_child, the child runner of the engine benches (bench_engines_ab,
bench_threads, bench_engine_start): the result line read, a failure and a timeout said in one
line each (three tiny Python children, about 0.2 s each)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_child():
    spec = importlib.util.spec_from_file_location("workload", ROOT / "bench" / "workload.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run_child


def test_run_child_reads_the_result_line_and_says_a_failure_or_timeout(tmp_path):
    run_child = _run_child()
    code = (
        "import json, os, sys; a = json.loads(sys.argv[1]); print('RESULT 0'); print('log');"
        "print('RESULT ' + json.dumps({'twice': 2 * a['n'], 'env': os.environ['X'],"
        " 'cwd': os.getcwd(), 'path': os.environ['PYTHONPATH']}))"
    )
    got = run_child(code, {"n": 21}, env={"X": "y"}, cwd=tmp_path)
    assert got["twice"] == 42 and got["env"] == "y" and got["wall_s"] > 0 and "load" in got
    assert got["cwd"] == str(tmp_path) and got["path"] == str(ROOT)  # the checkout's lceval
    failed = run_child("import sys; print('x'); sys.exit('no engine here')", {})
    assert failed["failed"] == "exit 1: no engine here" and "no engine here" in failed["stderr"]
    slow = run_child("import time; time.sleep(30)", {}, timeout=0.5)
    assert slow["failed"] == "stopped after 0 s" or slow["failed"].startswith("stopped after")
    assert os.environ.get("X") != "y"  # this process's environment untouched
