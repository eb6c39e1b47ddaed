"""``lceval eval``: build, answer, score and report one benchmark in one command, resumable
(:func:`lceval.api.run_eval`, the steps of :func:`lceval.evaluate`)."""

from __future__ import annotations

import sys

from lceval.api import run_eval
from lceval.core.errors import one_line
from lceval.run.config import EvalConfig


def handle(cfg: EvalConfig, outputs: str | None) -> int:
    """Run the four stages; print the headline, the coverage and the report's path. Exit status
    1 when some samples failed (scored NaN now; the line gives the first reason and says whether
    the same command may answer them).

    Raises:
        LcevalError: an unknown benchmark, backend or model, bad params, anything a stage
            refuses (before an engine starts where it can be known then).
    """
    result = run_eval(cfg, outputs)
    print(result.summary)
    if result.errors:
        why = one_line(result.first_error or "no reason recorded", 160)
        again = (
            "the same command answers them again"
            if result.retried
            else "they fail the same way again until the cause is fixed"
        )
        print(
            f"lceval: {result.errors} sample(s) failed (first: {why}); {again} "
            f"(run id {result.run.run_id}; reasons in responses.jsonl)",
            file=sys.stderr,
        )
        return 1
    return 0
