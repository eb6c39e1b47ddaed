"""The short-questions workload that ``bench_engine_start.py`` and ``bench_threads.py`` time in
their child processes: one essay context (``lceval.core.corpora``) followed by short questions, all
answered greedily in one ``generate`` call.

A child imports it as ``from bench.workload import answer_timed`` (its ``PYTHONPATH`` is the
repository root; ``bench`` is a namespace package).
"""

from __future__ import annotations

import time
from typing import Any

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
