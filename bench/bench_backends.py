"""Throughput of the hf backend (with and without shared-prefix KV reuse) against vLLM.

Run from the repo root: ``python bench/bench_backends.py [--context-tokens 3000]
[--questions 20] [--new-tokens 32] [--backends hf,hf-share,vllm] [--hf-threads N]
[--out bench/results/backends.md]``.

Workload: one Paul Graham essay excerpt of ``--context-tokens`` SmolLM2 tokens (from
``lceval.core.corpora``) shared by ``--questions`` different short questions, each answered with up
to
``--new-tokens`` greedy tokens by the embedded SmolLM2-135M-Instruct in bfloat16 — the shape of
LIFBench and RULER, where many instructions follow one long context. Each backend runs in a fresh
child process; one ``generate`` call answers all questions. The table reports model/engine load
seconds, generation seconds, prompt tokens requested and actually computed (prefix reuse: the
backends' ``prompt_tokens_computed``), prompt and generated tokens per second of generation time,
and the speed ratio against plain ``hf``. Tables only, no assertions (DEVELOPING.md: no timed
tests).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

QUESTIONS = [
    "What is the main argument of the text?",
    "Name one person mentioned in the text.",
    "Summarise the first paragraph in one sentence.",
    "What advice does the author give?",
    "Which company is mentioned first?",
    "What is the tone of the text?",
    "List three key words from the text.",
    "Who is the intended reader?",
    "What problem does the author describe?",
    "Give a title for this text.",
    "What does the author think about startups?",
    "Quote one sentence about money.",
    "What year is mentioned in the text?",
    "Does the author like big companies?",
    "What is the last topic discussed?",
    "Explain one example from the text.",
    "What would the author tell a student?",
    "Which claim is the most surprising?",
    "Rewrite the main idea for a child.",
    "What question does the text leave open?",
]

CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
from lceval.core.corpora import paul_graham_essays
from lceval.models.base import GenerationConfig, load_backend
from lceval.core.records import Context, Sample

t0 = time.perf_counter()
kind = args["backend"]
if kind == "vllm":
    backend = load_backend("vllm", None, max_model_len=args["window"], dtype="bfloat16")
else:
    backend = load_backend("hf", None, dtype="bfloat16", max_batch_rows=args["batch_size"],
                           share_prefix=(kind == "hf-share"), num_threads=args["hf_threads"])
load_s = time.perf_counter() - t0
tok = backend.tokenizer
ids = tok(paul_graham_essays()[:60000], add_special_tokens=False)["input_ids"]
text = tok.decode(ids[: args["context_tokens"]])
ctx = {"pg": Context("pg", text, args["context_tokens"], "smollm2", "paul_graham_essays")}
samples = [
    Sample(id=f"q{i}", benchmark="bench", task="qa", instruction=q, context_id="pg",
           description="Read the essay excerpt and answer the question after it.",
           max_new_tokens=args["new_tokens"])
    for i, q in enumerate(args["questions"])
]
t1 = time.perf_counter()
out = backend.generate(samples, ctx, GenerationConfig())
gen_s = time.perf_counter() - t1
errors = [r.error for r in out if r.error]
print("RESULT " + json.dumps({
    "load_s": load_s, "gen_s": gen_s,
    "prompt_tokens": sum(r.prompt_tokens for r in out),
    "completion_tokens": sum(r.completion_tokens for r in out),
    "computed_tokens": getattr(backend, "prompt_tokens_computed", None),
    "errors": errors[:3], "texts": [r.text for r in out[:2]],
}))
backend.close()
"""


def run_child(backend: str, args: argparse.Namespace) -> dict:
    payload = {
        "backend": backend,
        "context_tokens": args.context_tokens,
        "new_tokens": args.new_tokens,
        "questions": QUESTIONS[: args.questions],
        "window": args.context_tokens + 512,
        "batch_size": args.batch_size,
        "hf_threads": args.hf_threads,
    }
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(payload)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"{backend} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    res = json.loads(line.removeprefix("RESULT "))
    res["wall_s"] = wall
    return res


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (Linux), else platform.processor()."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--context-tokens", type=int, default=3000)
    ap.add_argument("--questions", type=int, default=20, choices=range(1, len(QUESTIONS) + 1))
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--backends", default="hf,hf-share,vllm")
    ap.add_argument("--batch-size", type=int, default=8, help="hf samples per generate call")
    ap.add_argument("--hf-threads", type=int, default=None, help="torch threads for hf")
    ap.add_argument("--out", default="bench/results/backends.md")
    args = ap.parse_args()

    rows = {}
    for b in args.backends.split(","):
        print(f"running {b} ...", file=sys.stderr, flush=True)
        rows[b] = run_child(b, args)
        print(f"  {b}: {rows[b]}", file=sys.stderr, flush=True)

    base = rows.get("hf")
    lines = [
        f"# Backend throughput: {args.questions} questions x {args.context_tokens}-token shared "
        f"context, {args.new_tokens} new tokens each",
        "",
        f"Embedded SmolLM2-135M-Instruct, bfloat16, greedy. Machine: {cpu_name()}"
        f" ({os.cpu_count()} CPUs), load average at end {os.getloadavg()[0]:.1f}; hf batch size "
        f"{args.batch_size}, hf threads {args.hf_threads or 'torch default'}. Generation seconds "
        "exclude model/engine load; tokens per second are over generation seconds.",
        "",
        "| backend | load s | generate s | prompt tok | computed prompt tok | generated tok "
        "| prompt tok/s | generated tok/s | speed-up vs hf |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for b, r in rows.items():
        ratio = f"{base['gen_s'] / r['gen_s']:.2f}x" if base else "n/a"
        computed = r.get("computed_tokens")
        lines.append(
            f"| {b} | {r['load_s']:.1f} | {r['gen_s']:.1f} | {r['prompt_tokens']} "
            f"| {'n/a' if computed is None else computed} "
            f"| {r['completion_tokens']} | {r['prompt_tokens'] / r['gen_s']:.0f} "
            f"| {r['completion_tokens'] / r['gen_s']:.1f} | {ratio} |"
        )
    if base and "vllm" in rows:
        lines += [
            "",
            f"vllm/hf generation-time ratio: {base['gen_s'] / rows['vllm']['gen_s']:.2f}x.",
        ]
    table = "\n".join(lines) + "\n"
    print(table)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(table)


if __name__ == "__main__":
    main()
