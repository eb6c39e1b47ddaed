"""How honest a run's progress was: from ``outputs/RUN/logs/progress.jsonl``, the seconds from
the bar's start (the engine ready) to the first answer written, and the time left shown once
25 / 50 / 75% of the samples were answered against the time the run actually took from there
(:func:`lceval.core.progress.honesty`; a run stopped early has its end extrapolated).

    python bench/bench_progress.py outputs/RUN/logs/progress.jsonl

Prints one block per (process, model) bar. Issue 36's bars: first answer within 60 s of the
engine being ready; time left after 25% within 2x of the actual remainder.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lceval.core import progress


def report(path: Path) -> list[str]:
    out = []
    for (pid, model), records in progress.bars(path).items():
        h = progress.honesty(records)
        out.append(f"{model} (pid {pid}): {h['total']} samples, {h['state']}, {h['seconds']:.1f} s")
        if h["first_answer_s"] is not None:
            out.append(f"  first answer written {h['first_answer_s']:.1f} s after the bar started")
        for answered, eta, actual, measured in h["etas"]:
            if actual is None:
                continue
            how = "actual" if measured else "extrapolated"
            out.append(
                f"  at {answered}/{h['total']}: time left shown {eta:.1f} s, "
                f"{how} {actual:.1f} s (ratio {eta / max(actual, 1e-9):.2f})"
            )
    return out


if __name__ == "__main__":
    print("\n".join(report(Path(sys.argv[1]))))
