"""CPU threads of the hf engine: one thread, all cores and lceval's choice, on the machine as found,
just after a busy minute, and loaded.

Run from the repo root: ``python bench/bench_threads.py [--context-tokens 512] [--questions 8]
[--new-tokens 16] [--hogs 2] [--settle 60] [--out bench/results/threads.md]``.

Workload: one Paul Graham excerpt of ``--context-tokens`` SmolLM2 tokens (``lceval.core.corpora``)
followed by ``--questions`` short questions, answered with up to ``--new-tokens`` greedy tokens by
the embedded SmolLM2-135M-Instruct on the hf engine (float32, CPU), one ``generate`` call. Each
setting runs in a fresh child process:

- ``1``: ``num_threads=1``;
- ``all``: ``num_threads`` = the CPUs of the affinity mask (torch's default in a fresh process);
- ``chosen``: no ``num_threads``: lceval's choice (``lceval.models.threads.choose_threads``: the
  cores of the affinity mask and cgroup quota, less the ones other processes keep busy now).

``as found``: the machine as it is (its own background load is recorded, not removed); ``after``:
``--hogs`` busy loops ran ``--settle`` seconds and were stopped just before (the 1-minute load
average still counts them, as it counts lceval's own previous run: issue 36); ``loaded``: the
busy loops started ``--settle`` seconds before and kept running through every setting. The table
reports the generation seconds, the threads used, the load average and the CPUs busy
(``busy_cpus``) when the child started, and whether the answers equal the ``1`` ones. Tables
only, no assertions (DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time

CHILD = r"""
import json, os, sys, time
import torch
from lceval.models.base import load_backend
from bench.workload import answer_timed

args = json.loads(sys.argv[1])
opts = {"device": "cpu", "dtype": "float32"}
if args["threads"] != "chosen":
    opts["num_threads"] = 1 if args["threads"] == "1" else len(os.sched_getaffinity(0))
load = os.getloadavg()[0]
from lceval.models.threads import busy_cpus
busy = busy_cpus()
backend = load_backend("hf", "embedded", **opts)
out, seconds = answer_timed(backend, args)
info = backend.info()
backend.close()
print("RESULT " + json.dumps({"seconds": seconds, "threads": info["num_threads"],
                  "chosen_from": info["num_threads_chosen_from"], "load": load, "busy": busy,
                  "texts": [r.text for r in out]}))
"""


def _child(payload: dict, timeout: float) -> dict:
    from workload import run_child  # bench/workload.py (this script's folder)

    got = run_child(CHILD, payload, timeout=timeout)
    if "failed" in got and not got["failed"].startswith("stopped"):
        sys.exit(f"child failed: {got['stderr'][-2000:]}")
    if "failed" in got:  # timed out: a row without seconds
        return {"seconds": None, "threads": payload["threads"], "load": None, "texts": None}
    return got


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--context-tokens", type=int, default=512)
    p.add_argument("--questions", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--hogs", type=int, default=2, help="busy loops for the loaded case")
    p.add_argument("--settle", type=float, default=60.0, help="seconds the hogs run first")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per child at most")
    p.add_argument("--states", default="as_found,after,loaded")
    p.add_argument("--out", default="bench/results/threads.md")
    args = p.parse_args()
    from workload import payload as make_payload  # bench/workload.py (this script's folder)

    payload = make_payload(args.context_tokens, args.questions, args.new_tokens)
    rows = []
    for state in args.states.split(","):
        hogs = []
        if state in ("after", "loaded"):
            hogs = [
                subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.hogs)
            ]
            time.sleep(args.settle)
        try:
            ref = None
            for threads in ("1", "all", "chosen"):
                if state == "after":  # stopped just before each setting
                    for h in hogs:
                        h.kill()
                        h.wait()
                got = _child({**payload, "threads": threads}, args.timeout)
                if threads == "1":
                    ref = got["texts"]
                same = got["texts"] == ref if ref is not None and got["texts"] else None
                rows.append((state, threads, got, same))
                print(state, threads, got["seconds"], got["threads"], got["load"], flush=True)
                if state == "after" and threads != "chosen":
                    hogs = [
                        subprocess.Popen([sys.executable, "-c", "while True: pass"])
                        for _ in range(args.hogs)
                    ]
                    time.sleep(args.settle)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
    cpus = len(os.sched_getaffinity(0))
    lines = [
        "# hf engine CPU threads: one, all cores, lceval's choice",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {cpus} usable CPUs, "
        f"Python {platform.python_version()}; embedded SmolLM2-135M-Instruct, float32, "
        f"{args.questions} questions after one ~{args.context_tokens}-token context, "
        f"{args.new_tokens} new tokens each, one generate call. After / loaded: {args.hogs} busy "
        f"loops ran {args.settle:.0f} s before (after: stopped just before the setting). "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        "Command: `python bench/bench_threads.py`.",
        "",
        "| machine | threads | torch threads | load avg at start | CPUs busy at start "
        "| generate s | same answers as 1 thread |",
        "|---|---|---|---|---|---|---|",
    ]
    for state, threads, got, same in rows:
        secs = (
            f"> {args.timeout:.0f} (stopped)" if got["seconds"] is None else f"{got['seconds']:.1f}"
        )
        load = "?" if got["load"] is None else f"{got['load']:.2f}"
        busy = "?" if got.get("busy") is None else f"{got['busy']:.0f}"
        label = {
            "as_found": "as found",
            "after": f"just after {args.hogs} busy loops",
            "loaded": f"+{args.hogs} busy loops",
        }[state]
        same_text = "n/a" if same is None else str(same)
        lines.append(
            f"| {label} | {threads} | {got['threads']} | {load} | {busy} | {secs} | {same_text} |"
        )
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
