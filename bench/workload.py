"""What the engine benches share: the short-questions workload that ``bench_engine_start.py``,
``bench_threads.py`` and ``bench_engines_ab.py`` time in their child processes (one essay context
from ``lceval.core.corpora`` followed by short questions, all answered greedily in one
``generate`` call), and :func:`run_child`, which runs such a child and reads its result.

A child imports it as ``from bench.workload import answer_timed`` (its ``PYTHONPATH`` is the
repository root; ``bench`` is a namespace package); a bench script as ``from workload import
run_child`` (its own folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

QUESTIONS = [
    "What is the main argument of the text?",
    "Name one person mentioned in the text.",
    "What advice does the author give?",
    "What is the tone of the text?",
    "Who is the intended reader?",
    "Give a title for this text.",
    "What problem does the author describe?",
    "What does the author think about startups?",
]


def payload(context_tokens: int, questions: int, new_tokens: int) -> dict[str, Any]:
    """The child's JSON argument: about ``context_tokens`` SmolLM2 tokens of essay text (cut by
    characters, ~4 per token), the first ``questions`` of :data:`QUESTIONS` (repeated past 8),
    and the answer budget ``new_tokens`` (tokens)."""
    from lceval.core.corpora import paul_graham_essays

    return {
        "context": paul_graham_essays()[: context_tokens * 4],
        "questions": (QUESTIONS * 8)[:questions],
        "new_tokens": new_tokens,
    }


def answer_timed(backend: Any, args: dict[str, Any]) -> tuple[list[Any], float]:
    """Answer ``args`` (a :func:`payload`) with ``backend`` in one greedy ``generate`` call.

    Returns:
        The responses (one per question, in order) and the call's wall time in seconds.
    """
    from lceval.core.records import Context, Sample
    from lceval.models.base import GenerationConfig

    ctx = Context("c", args["context"], 0, "")
    samples = [
        Sample(
            id=f"q{i}",
            benchmark="bench",
            task="T",
            instruction=f"Question {i}: {q}",
            context_id="c",
            max_new_tokens=args["new_tokens"],
        )
        for i, q in enumerate(args["questions"])
    ]
    t0 = time.perf_counter()
    out = backend.generate(samples, {"c": ctx}, GenerationConfig())
    return out, time.perf_counter() - t0


def run_child(
    code: str,
    args: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Run ``code`` in a fresh Python with ``json.dumps(args)`` as its argument and read the
    result it prints on a line ``RESULT <json>`` (its last such line).

    ``env``: added to this process's environment, after ``PYTHONPATH`` = the repository root and
    the hub offline. Returns the result with ``wall_s`` (the child's wall seconds) and ``load``
    (the 1-minute load average when it started); a child that timed out or printed no result:
    ``{"failed": one line, "stderr": its last 3,000 characters, "load": ...}``.
    """
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    full |= {"TRANSFORMERS_OFFLINE": "1", **(env or {})}
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, json.dumps(args)],
            capture_output=True,
            text=True,
            env=full,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"failed": f"stopped after {timeout:.0f} s", "stderr": "", "load": load}
    wall = time.perf_counter() - t0
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        tail = [x for x in done.stderr.splitlines() if x.strip()][-1:] or ["no output"]
        failed = f"exit {done.returncode}: {tail[0][:200]}"
        return {"failed": failed, "stderr": done.stderr[-3000:], "load": load}
    return {**json.loads(lines[-1].removeprefix("RESULT ")), "wall_s": wall, "load": load}
