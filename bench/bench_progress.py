"""How honest a run's progress was: from ``outputs/RUN/logs/progress.jsonl``, the seconds from
the bar's start (the engine ready) to the first answer written, and the time left shown once
25 / 50 / 75% of the samples were answered against the time the run actually took from there.

    python bench/bench_progress.py outputs/RUN/logs/progress.jsonl

Prints one block per (process, model) bar. Issue 36's bars: first answer within 60 s of the
engine being ready; time left after 25% within 2x of the actual remainder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def report(path: Path) -> list[str]:
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    bars: dict[tuple[int, str], list[dict]] = {}
    for r in recs:
        bars.setdefault((r["pid"], r["model"]), []).append(r)
    out = []
    for (pid, model), rs in bars.items():
        t0, total, end = rs[0]["t"], rs[-1]["total"], rs[-1]
        done_t = next((r["t"] for r in rs if r["answered"] >= total), end["t"])
        out.append(f"{model} (pid {pid}): {total} samples, {end['state']}, {end['t'] - t0:.1f} s")
        first = next((r for r in rs if r["new"] >= 1), None)
        if first is not None:
            out.append(f"  first answer written {first['t'] - t0:.1f} s after the bar started")
        for share in (0.25, 0.5, 0.75):
            r = next(
                (r for r in rs if r["answered"] >= share * total and r.get("eta_s") is not None),
                None,
            )
            if r is not None:
                actual = done_t - r["t"]
                out.append(
                    f"  at {r['answered']}/{total}: time left shown {r['eta_s']:.1f} s, "
                    f"actual {actual:.1f} s (ratio {r['eta_s'] / max(actual, 1e-9):.2f})"
                )
    return out


if __name__ == "__main__":
    print("\n".join(report(Path(sys.argv[1]))))
