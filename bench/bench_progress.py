"""How honest a run's progress was: from ``outputs/RUN/logs/progress.jsonl``, the seconds from
the bar's start (the engine ready) to the first answer written, and the time left shown once
10 / 25 / 50 / 75% of the samples were answered against the time the run actually took from there
(:func:`honesty`; a run stopped early has its end extrapolated).

    python bench/bench_progress.py outputs/RUN/logs/progress.jsonl
    python bench/bench_progress.py --decode-heavy [--prompts 16] [--budget 1280]

The first prints one block per (process, model) bar. Issue 36's bars: first answer within 60 s
of the engine being ready; time left after 25% within 2x of the actual remainder. The second
(issue 49) answers a decode-heavy run the way a user does (``lceval build manyifeval``: shipped
MT-Bench prompts with one IFEval instruction each, IFEval's 1,280-token budgets; then ``lceval
infer`` on the default engine and model) in a temporary outputs folder, samples the load
average every 5 s, and writes ``bench/results/progress_decode_heavy_<UTC date-time>.md``: the
time left shown at 10 / 25 / 50 / 75% answered beside the actual remainder, the engine's start
lines and the plan's estimate. No assertions (STYLE.md: no timed tests).
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


SHARES = (0.1, 0.25, 0.5, 0.75)
"""The shares of samples answered at which the time left shown is checked."""


def honesty(records: list[dict[str, Any]], shares: tuple[float, ...] = SHARES) -> dict[str, Any]:
    """How honest one bar (:func:`bars`) was, from its records alone (issue 36).

    Returns:
        ``first_answer_s`` (seconds from the bar's first record to its first answer, None if none);
        ``etas``: per share reached with a time left shown, ``(answered, eta_s, actual_s,
        measured)``, the actual seconds to the last answer (extrapolated at the later answer rate
        for a stopped call, ``measured`` False; None without a later answer); ``at_least``: for a
        stopped call, per share ``(answered, eta_s, seconds it ran on from there)``, a lower bound
        of the actual remainder; and ``total``, ``answered``, ``state``, ``seconds``.
    """
    t0, total = records[0]["t"], records[-1]["total"]
    first = next((r for r in records if r["new"] >= 1), None)
    last = max(records, key=lambda r: (r["answered"], -r["t"]))  # the last answer's first record
    finished = last["answered"] >= total
    etas: list[tuple[int, float, float | None, bool]] = []
    lower: list[tuple[int, float, float]] = []
    for share in shares:
        r = next(
            (
                r
                for r in records
                if share * total <= r["answered"] < total and r.get("eta_s") is not None
            ),
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
        if not finished:  # a stopped call: the remainder was at least what it ran on for
            lower.append((r["answered"], r["eta_s"], records[-1]["t"] - r["t"]))
    return {
        "first_answer_s": None if first is None else first["t"] - t0,
        "etas": etas,
        "at_least": lower,
        "total": total,
        "answered": last["answered"],
        "state": records[-1]["state"],
        "seconds": records[-1]["t"] - t0,
    }


def checked(h: dict[str, Any]) -> list[tuple[int, float, float, str, float]]:
    """The shares of :func:`honesty`'s ``h`` with an actual remainder: ``(answered, time left
    shown s, actual s, "actual" or "extrapolated", shown / actual)``."""
    return [
        (answered, eta, actual, "actual" if measured else "extrapolated", eta / max(actual, 1e-9))
        for answered, eta, actual, measured in h["etas"]
        if actual is not None
    ]


def report(path: Path) -> list[str]:
    out = []
    for (pid, model), records in bars(path).items():
        h = honesty(records)
        out.append(f"{model} (pid {pid}): {h['total']} samples, {h['state']}, {h['seconds']:.1f} s")
        if h["first_answer_s"] is not None:
            out.append(f"  first answer written {h['first_answer_s']:.1f} s after the bar started")
        for answered, eta, actual, how, ratio in checked(h):
            out.append(
                f"  at {answered}/{h['total']}: time left shown {eta:.1f} s, "
                f"{how} {actual:.1f} s (ratio {ratio:.2f})"
            )
        for answered, eta, ran in h["at_least"]:
            out.append(
                f"  at {answered}/{h['total']}: time left shown {eta:.1f} s; the call ran on "
                f"{ran:.1f} s from there unfinished: actual > {ran:.1f} s (ratio < "
                f"{eta / max(ran, 1e-9):.2f})"
            )
    return out


def decode_heavy(prompts: int, budget: int, out: Path) -> Path:
    """Build and answer the decode-heavy run (module docstring); write its results to ``out``."""
    import datetime as dt
    import os
    import platform
    import subprocess
    import tempfile
    import threading
    import time

    root = Path(tempfile.mkdtemp(prefix="lceval-bench-progress-"))
    lceval = [sys.executable, "-m", "lceval", "--outputs", str(root)]
    run_id = "decode-heavy"
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    loads: list[float] = []
    stop = threading.Event()

    def sample_load() -> None:
        while True:
            loads.append(os.getloadavg()[0])
            if stop.wait(5):
                return

    threading.Thread(target=sample_load, daemon=True).start()
    build = [
        *lceval, "build", "manyifeval", "--run-id", run_id, "-p", f"n_prompts={prompts}",
        "-p", "max_instructions=1", "-p", f"max_new_tokens={budget}",
    ]  # fmt: skip
    built = subprocess.run(build, capture_output=True, text=True)
    if built.returncode:
        stop.set()
        raise SystemExit(f"bench_progress: the build failed: {built.stderr.strip()[-500:]}")
    t0 = time.time()
    infer = [*lceval, "infer", run_id, "--max-new-tokens", str(budget)]
    done = subprocess.run(infer, capture_output=True, text=True)
    wall = time.time() - t0
    stop.set()
    said = [ln for ln in done.stderr.splitlines() if ln.startswith("lceval:")]
    path = progress.progress_path(root / run_id)
    lines = [
        f"# Time left on a decode-heavy run ({started})",
        "",
        f"`python bench/bench_progress.py --decode-heavy --prompts {prompts} --budget {budget}`: "
        f"`lceval build manyifeval -p n_prompts={prompts} -p max_instructions=1 "
        f"-p max_new_tokens={budget}` (shipped MT-Bench prompts, one IFEval instruction each; "
        "IFEval's own input_data.jsonl is not to be had offline), then "
        f"`lceval infer {run_id} --max-new-tokens {budget}` (default engine and model). "
        f"Machine: {platform.node()}, {os.cpu_count()} CPUs; 1-min load average during the run "
        f"{min(loads):.1f} to {max(loads):.1f} (mean {sum(loads) / len(loads):.1f}). "
        f"infer exit {done.returncode}, {wall:.0f} s wall.",
        "",
        "What lceval infer printed (its own lines; the bar's last line below):",
        "",
        "```",
        *said,
        "```",
        "",
    ]
    for (_, model), records in bars(path).items():
        h = honesty(records)
        gen = [r for r in records if r["answered"] == h["answered"]][0]
        lines += [
            f"{model}: {h['answered']}/{h['total']} answered in {h['seconds']:.0f} s from the "
            f"bar's start ({h['state']}); first answer after {h['first_answer_s']:.0f} s; "
            f"generated {gen.get('gen_tok_s', 0):.1f} tok/s on average.",
            "",
            "| answered | share | time left shown (s) | actual (s) | shown / actual |",
            "|---:|---:|---:|---:|---:|",
        ]
        for answered, eta, actual, how, ratio in checked(h):
            note = "" if how == "actual" else f" ({how})"
            lines.append(
                f"| {answered}/{h['total']} | {answered / h['total']:.0%} | {eta:.0f} | "
                f"{actual:.0f}{note} | {ratio:.2f} |"
            )
        lines.append("")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    (out.with_suffix(".jsonl")).write_bytes(path.read_bytes())  # the bar's records, as written
    return out


if __name__ == "__main__":
    import argparse
    import datetime as dt

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("progress", nargs="?", type=Path, help="a run's logs/progress.jsonl")
    ap.add_argument("--decode-heavy", action="store_true", help="run the decode-heavy bench")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--budget", type=int, default=1280)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    if a.decode_heavy:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d_%H%M")
        here = Path(__file__).resolve().parent / "results"
        print(
            decode_heavy(a.prompts, a.budget, a.out or here / f"progress_decode_heavy_{stamp}.md")
        )
    elif a.progress is not None:
        print("\n".join(report(a.progress)))
    else:
        ap.error("give a progress.jsonl or --decode-heavy")
