"""Time and memory of building RULER's 13 tasks x N samples at one length (default 128K tokens).

Run from the repo root: ``python bench/bench_ruler_build.py [--length 131072]
[--num-samples 500] [--out bench/results/ruler_build.md]``. Each task is built in a fresh
child process (so shared caches are counted once per task, as a cold build would) and the table
records wall seconds and the child's peak resident memory; the total is the sum. Tables only, no
assertions (see DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from lceval.benchmarks.ruler.build import build_ruler
p = {"tasks": [sys.argv[1]], "lengths": [int(sys.argv[2])], "num_samples": int(sys.argv[3])}
r = build_ruler(p)
dt = time.perf_counter() - t0
chars = sum(len(c.text) for c in r.contexts)
tok = sum(c.n_tokens for c in r.contexts) / len(r.contexts)
print(json.dumps({"s": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "chars": chars, "mean_ctx_tokens": tok, "n": len(r.samples)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--length", type=int, default=131072)
    ap.add_argument("--num-samples", type=int, default=500)
    ap.add_argument("--out", default="bench/results/ruler_build.md")
    args = ap.parse_args()
    from lceval.benchmarks.ruler.gold import TASKS

    rows = []
    t_all = time.perf_counter()
    for task in TASKS:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, task, str(args.length), str(args.num_samples)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append((task, json.loads(out.stdout.strip().splitlines()[-1])))
        print(task, rows[-1][1], flush=True)
    wall = time.perf_counter() - t_all
    lines = [
        f"# RULER build: 13 tasks x {args.num_samples} samples at {args.length} tokens",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
        f"(shared), Python {platform.python_version()}. Tokenizer o200k_base. "
        "One child process per task (cold caches).",
        "",
        "| task | samples | seconds | peak RSS (MB) | mean context tokens | context chars (M) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for task, r in rows:
        lines.append(
            f"| {task} | {r['n']} | {r['s']:.1f} | {r['rss_mb']:.0f} | "
            f"{r['mean_ctx_tokens']:.0f} | {r['chars'] / 1e6:.1f} |"
        )
    tot = sum(r["s"] for _, r in rows)
    peak = max(r["rss_mb"] for _, r in rows)
    lines += [
        "",
        f"Total build time: {tot:.1f} s (sum over tasks; wall incl. process start "
        f"{wall:.1f} s); largest peak RSS of one task: {peak:.0f} MB.",
        "",
    ]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
