"""How honest a run's progress was: from ``outputs/RUN/logs/progress.jsonl``, the seconds from
the bar's start (the engine ready) to the first answer written, and the time left shown once
25 / 50 / 75% of the samples were answered against the time the run actually took from there
(:func:`honesty`; a run stopped early has its end extrapolated).

    python bench/bench_progress.py outputs/RUN/logs/progress.jsonl

Prints one block per (process, model) bar. Issue 36's bars: first answer within 60 s of the
engine being ready; time left after 25% within 2x of the actual remainder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from lceval.core import progress


def bars(path: str | os.PathLike[str]) -> dict[tuple[int, str], list[dict[str, Any]]]:
    """A progress file's records grouped by bar (``(pid, model)``), each in file order."""
    out: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for rec in progress.read(path):
        out.setdefault((int(rec.get("pid", 0)), str(rec["model"])), []).append(rec)
    return out


def honesty(
    records: list[dict[str, Any]], shares: tuple[float, ...] = (0.25, 0.5, 0.75)
) -> dict[str, Any]:
    """How honest one bar (:func:`bars`) was, from its records alone (issue 36).

    Returns:
        ``first_answer_s`` (seconds from the bar's first record to its first answer, None if none);
        ``etas``: per share reached with a time left shown, ``(answered, eta_s, actual_s,
        measured)``, the actual seconds to the last answer (extrapolated at the later answer rate
        for a stopped call, ``measured`` False; None without a later answer); and ``total``,
        ``answered``, ``state``, ``seconds``.
    """
    t0, total = records[0]["t"], records[-1]["total"]
    first = next((r for r in records if r["new"] >= 1), None)
    last = max(records, key=lambda r: (r["answered"], -r["t"]))  # the last answer's first record
    finished = last["answered"] >= total
    etas = []
    for share in shares:
        r = next(
            (r for r in records if r["answered"] >= share * total and r.get("eta_s") is not None),
            None,
        )
        if r is None:
            continue
        if finished:
            actual: float | None = last["t"] - r["t"]
        elif last["answered"] > r["answered"]:
            rate = (last["answered"] - r["answered"]) / max(last["t"] - r["t"], 1e-9)
            actual = last["t"] - r["t"] + (total - last["answered"]) / rate
        else:
            actual = None
        etas.append((r["answered"], r["eta_s"], actual, finished))
    return {
        "first_answer_s": None if first is None else first["t"] - t0,
        "etas": etas,
        "total": total,
        "answered": last["answered"],
        "state": records[-1]["state"],
        "seconds": records[-1]["t"] - t0,
    }


def report(path: Path) -> list[str]:
    out = []
    for (pid, model), records in bars(path).items():
        h = honesty(records)
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
