"""bench/gpu_check.py in its --tiny form: every step of the GPU check runs on the CPU (issue 36)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_check_tiny_runs_every_step_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.md"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "bench/gpu_check.py", "--tiny", "--work", str(tmp_path / "work")]
    p = subprocess.run(
        [*cmd, "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert p.returncode == 0, p.stderr[-2000:]
    text = out.read_text()
    assert "FAILED" not in text, text
    assert "CPU:" in text and "commit " in text  # the machine and the code it measured
    assert "| 4k | 11 |" in text and "| 11/11 |" in text  # the hf row: every sample answered
    assert "recorded in run.json" in text  # the NTK override reached the engine
    assert "rerun equal 11 of 11" in text  # seeded sampling is reproducible (4 per task: all 11)
    assert "| vLLM greedy | vllm | - | - | not run:" in text
