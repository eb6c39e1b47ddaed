"""The hf engine's shared-prefix ("cascade") attention against transformers' own ``sdpa`` with
batching, on the LIFBench smoke set's long prompts.

Run from the repo root: ``python bench/bench_attention.py [--contexts 1] [--rows 4]
[--new-tokens 8] [--out bench/results/attention.md]``.

Workload: the LIFBench smoke set is built into a temporary folder (params/01_build_data/smoke.yaml);
the ``--contexts`` longest contexts shared by several samples (4k-8k tokens, right-truncated to
SmolLM2's 8,192-token window as the smoke run does) each give ``--rows`` samples, answered with up
to ``--new-tokens`` greedy tokens by the embedded SmolLM2-135M-Instruct on the hf engine (float32,
CPU), one ``generate`` call per context. Both settings share the context's prefill (the engine
encodes the common prefix once); they differ in how a batch's rows attend to it:

- ``cascade``: lceval's attention (:mod:`lceval.models.hf_attention`): the context's keys/values
  held once per batch, merged with each row's own tokens by log-sum-exp;
- ``sdpa``: transformers' ``sdpa`` attention, the context's keys/values repeated per row.

Each setting runs in a fresh child process (peak RSS = its ``ru_maxrss``). The table gives the
seconds of the ``generate`` calls, the peak RSS, and whether the answers equal ``cascade``'s.
Tables only, no assertions (DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from dataclasses import replace
from lceval.core.io import RunDir
from lceval.models.base import GenerationConfig, load_backend

args = json.loads(sys.argv[1])
run = RunDir(args["run_id"], args["root"])
contexts = run.read_contexts()
by_id = {s.id: replace(s, max_new_tokens=args["new_tokens"]) for s in run.read_samples()}
backend = load_backend("hf", "embedded", device="cpu", dtype="float32", num_threads=args["threads"])
if args["mode"] == "sdpa":
    backend.model.set_attn_implementation("sdpa")
    backend._cascade = False  # the prefix then repeats over the batch's rows
seconds, texts = 0.0, []
for group in args["groups"]:
    t0 = time.perf_counter()
    out = backend.generate([by_id[i] for i in group], contexts, GenerationConfig())
    seconds += time.perf_counter() - t0
    texts += [r.text for r in out]
info = backend.info()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "rss_mib": rss,
                  "held_once": info["shared_prefix_held_once"], "texts": texts}))
"""


def _groups(run_id: str, root: str, contexts: int, rows: int) -> list[list[str]]:
    """Sample ids of the ``contexts`` longest contexts shared by >= 2 samples, ``rows`` each."""
    from lceval.core.io import RunDir

    run = RunDir(run_id, root)
    ctx = run.read_contexts()
    samples = run.read_samples()
    shared: dict[str, list[str]] = {}
    for s in samples:
        if s.context_id:
            shared.setdefault(s.context_id, []).append(s.id)
    long = sorted((c for c in shared if len(shared[c]) >= 2), key=lambda c: -len(ctx[c].text))
    return [shared[c][:rows] for c in long[:contexts]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, default=1)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="bench/results/attention.md")
    a = ap.parse_args()

    import yaml

    from lceval.run.building import build

    root = tempfile.mkdtemp(prefix="bench-attention-")
    params = yaml.safe_load(Path("params/01_build_data/smoke.yaml").read_text())
    build("attn", "lifbench", params, root=root)
    groups = _groups("attn", root, a.contexts, a.rows)
    results = {}
    for mode in ("cascade", "sdpa"):
        arg = json.dumps(
            {
                "mode": mode,
                "run_id": "attn",
                "root": root,
                "groups": groups,
                "new_tokens": a.new_tokens,
                "threads": a.threads,
            }
        )
        load = os.getloadavg()[0]
        out = subprocess.run(
            [sys.executable, "-c", CHILD, arg], capture_output=True, text=True, check=False
        )
        if out.returncode:
            sys.exit(f"{mode} failed: {out.stderr.strip().splitlines()[-1:]}")
        results[mode] = {**json.loads(out.stdout.strip().splitlines()[-1]), "load": load}
    ref = results["cascade"]
    lines = [
        "# hf attention: lceval's cascade against transformers' sdpa (bench/bench_attention.py)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} cores, {a.threads} threads; LIFBench smoke set, {len(groups)} contexts "
        f"x {a.rows} rows, {a.new_tokens} new tokens, SmolLM2-135M-Instruct float32 on CPU.",
        "",
        "| attention | generate s | peak RSS MiB | load avg at start | answers = cascade |",
        "| --- | --- | --- | --- | --- |",
    ]
    for mode, r in results.items():
        same = sum(x == y for x, y in zip(r["texts"], ref["texts"], strict=True))
        lines.append(
            f"| {mode} | {r['seconds']:.1f} | {r['rss_mib']:.0f} | {r['load']:.2f} | "
            f"{same}/{len(ref['texts'])} |"
        )
    speed = results["sdpa"]["seconds"] / ref["seconds"]
    lines += ["", f"cascade speed-up over sdpa: {speed:.2f}x"]
    text = "\n".join(lines) + "\n"
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
