"""Replicas on Ray against the in-process engine, on the LIFBench smoke set.

Run from the repo root after ``make setup``: ``.venv/bin/python bench/bench_replicas.py
[--model embedded] [--limit 16] [--max-new-tokens 16] [--out bench/results/replicas.md]``.

Builds the LIFBench smoke set once (params/01_build_data/smoke.yaml), then answers its first
``--limit`` samples with the hf engine (greedy, float32 on the CPU) three ways, each on a fresh
copy of the run: (a) in-process (``lceval infer``'s default path), (b) one replica on a local Ray
cluster (``--ray-address``'s path with ``replicas=1``), (c) two replicas there. The wall time of
each is ``lceval.run.infer``'s, engine start and close included (for Ray: the actors' start, the
dispatch of batches, the driver's writes); the Ray cluster's own start (``ray.init``) is timed
apart, as a cluster outlives one run. Every engine gets one CPU thread (the hf option
``num_threads=1``, in-process and in each replica: left out, the in-process engine takes every
core this process may use while a replica has Ray's one CPU), so (a) and (b) differ only by Ray
and (c) shows what a second replica adds on a second core.
The answers of (b) and (c) are compared with (a) token for token. Tables only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import lceval.params
import lceval.run

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--limit", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "replicas.md"))
    args = ap.parse_args()

    import ray
    import torch

    from lceval.core.io import RunDir
    from lceval.models.replicas import start_local

    torch.set_num_threads(1)
    root = Path(tempfile.mkdtemp(prefix="bench_replicas_"))
    try:
        params = lceval.params.load_params(ROOT / "params" / "01_build_data" / "smoke.yaml")
        params = {k: v for k, v in params.items() if k not in ("run_id", "outputs_root", "seed")}
        base = lceval.run.build("base", "lifbench", params, root=root, seed=0)
        # one thread per engine, given as the engine option (the hf engine otherwise picks the
        # cores this process may use: 2 in-process against 1 in a replica Ray gave one CPU)
        opts = {"device": "cpu", "dtype": "float32", "num_threads": 1}
        common = dict(
            root=root,
            limit=args.limit,
            max_new_tokens=args.max_new_tokens,
            truncate=True,
            progress=False,
        )
        cores = os.cpu_count() or 1
        t0 = time.perf_counter()
        start_local(  # lceval's start: a patient raylet wait, a retry
            ray,
            lambda: ray.init(
                address="local",
                num_cpus=min(cores, 2),
                include_dashboard=False,
                log_to_driver=False,
            ),
        )
        ray_init = time.perf_counter() - t0
        address = ray.get_runtime_context().gcs_address
        rows = []
        answers = {}
        for label, extra, addr in [
            ("in-process", {}, None),
            ("Ray, 1 replica", {"replicas": 1}, address),
            ("Ray, 2 replicas", {"replicas": 2}, address),
        ]:
            rid = label.replace(" ", "").replace(",", "_")
            shutil.copytree(base.path, root / rid)
            t0 = time.perf_counter()
            out = lceval.run.infer(
                rid, "hf", args.model, backend_options={**opts, **extra}, ray_address=addr, **common
            )
            wall = time.perf_counter() - t0
            gen = sum(r.completion_tokens for r in out)
            answers[label] = [r.text for r in out]
            meta = RunDir(rid, root).read_meta().models
            rows.append((label, len(out), gen, wall, next(iter(meta.values())).get("timing")))
        ray.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ref = rows[0][3]
    lines = [
        "# Replicas on Ray vs in-process (bench/bench_replicas.py)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {cores} cores "
        f"(os.cpu_count), shared with other work; torch {torch.__version__}, ray "
        f"{ray.__version__}. Model {args.model} on hf, float32, one CPU thread per engine; "
        f"LIFBench smoke set, first {args.limit} samples, max_new_tokens {args.max_new_tokens}. "
        f"Local Ray cluster start (ray.init, not in the rows): {ray_init:.1f} s. Load average "
        f"at the end: {os.getloadavg()[0]:.1f} (1 min).",
        "",
        "| path | samples | generated tokens | wall s | vs in-process | answers = in-process |",
        "|---|---|---|---|---|---|",
    ]
    for label, n, gen, wall, _ in rows:
        same = answers[label] == answers["in-process"]
        lines.append(
            f"| {label} | {n} | {gen} | {wall:.1f} | {wall / ref - 1:+.0%} | "
            f"{'yes' if same else 'NO'} |"
        )
    lines += ["", "run.json timing per path:", ""]
    lines += [f"- {label}: {timing}" for label, _, _, _, timing in rows]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
