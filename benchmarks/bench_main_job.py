"""The LIFBench smoke run end to end, per stage, on each engine: the "first five minutes" job.

Run from the repo root: ``python benchmarks/bench_main_job.py [--backends hf,vllm]
[--params params/01_build_data/smoke.yaml] [--out benchmarks/results/main_job.md]``.

For each backend, one fresh child process does what a newcomer's first run does, through
``lceval.pipeline`` on a fresh run id in a temporary outputs folder: import lceval, build the
LIFBench smoke set (22 samples, 3 shared contexts), ``pipeline.infer`` with the default model
(embedded SmolLM2-135M-Instruct, ``model=None``) and default settings, score, report. Engine start
and close are timed by wrapping ``load_backend`` and the engine's ``close`` inside
``pipeline.infer`` (nothing else is changed); "inference" is the rest of ``pipeline.infer``. The
table gives seconds per stage, the child's wall time from interpreter start, prompt tokens
requested and computed (prefix reuse, from run.json), generated tokens and the longest answer.

The physical floor of the prompt side is the prefill of the three unique contexts: the requested
prompt tokens minus those shared within each context (printed as "floor prompt tokens"). Tables
only, no assertions (STYLE.md: no timed tests). Runs are sequential: one model in memory at a
time.
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

STAGES = ("import", "build", "engine start", "inference", "engine close", "score", "report")


def child(backend: str, params_path: str, root: str) -> None:
    """One end-to-end job; prints ``RESULT {json}`` on stdout."""
    t_proc = time.perf_counter()
    times: dict[str, float] = {}
    t = time.perf_counter()
    from lceval import pipeline
    from lceval.models import base

    times["import"] = time.perf_counter() - t
    run_id = f"bench-main-{backend}"
    t = time.perf_counter()
    pipeline.build(run_id, "lifbench", pipeline.load_params(params_path), root=root)
    times["build"] = time.perf_counter() - t

    real_load = base.load_backend

    def timed_load(*args: object, **kwargs: object) -> base.Backend:
        t0 = time.perf_counter()
        engine = real_load(*args, **kwargs)  # type: ignore[arg-type]
        times["engine start"] = time.perf_counter() - t0
        real_close = engine.close

        def timed_close() -> None:
            t1 = time.perf_counter()
            real_close()
            times["engine close"] = time.perf_counter() - t1

        engine.close = timed_close  # type: ignore[method-assign]
        return engine

    pipeline.load_backend = timed_load  # type: ignore[assignment]
    t = time.perf_counter()
    responses = pipeline.infer(run_id, backend, None, root=root, progress=False)
    infer_s = time.perf_counter() - t
    times["inference"] = infer_s - times["engine start"] - times.get("engine close", 0.0)

    t = time.perf_counter()
    scores = pipeline.score(run_id, root=root, progress=False)
    times["score"] = time.perf_counter() - t
    t = time.perf_counter()
    pipeline.report(run_id, root=root)
    times["report"] = time.perf_counter() - t

    from lceval.io import RunDir

    run = RunDir(run_id, root)
    entry = next(iter(run.read_meta().models.values()))
    print(
        "RESULT "
        + json.dumps(
            {
                "times": times,
                "in_process_s": time.perf_counter() - t_proc,
                "engine": entry["backend"],
                "dtype": entry.get("dtype"),
                "prefix_reuse": entry.get("prefix_reuse"),
                "floor_prompt_tokens": floor_prompt_tokens(run, entry.get("window", 8192)),
                "samples": len(responses),
                "errors": sum(r.finish_reason == "error" for r in responses),
                "prompt_tokens": sum(r.prompt_tokens for r in responses),
                "completion_tokens": sum(r.completion_tokens for r in responses),
                "longest_answer": max(r.completion_tokens for r in responses),
                "mean_score": float(scores["value"].mean()),
            }
        ),
        flush=True,
    )


def floor_prompt_tokens(run: object, window: int) -> int:
    """Prompt tokens left when each context's shared prefix is encoded once (SmolLM2 tokens)."""
    from transformers import AutoTokenizer

    from lceval.models.base import GenerationConfig, render_sample
    from lceval.models.embedded import resolve_model
    from lceval.models.hf import common_prefix_len

    tok = AutoTokenizer.from_pretrained(resolve_model(None).path)
    contexts = run.read_contexts()  # type: ignore[attr-defined]
    by_context: dict[str | None, list[list[int]]] = {}
    for s in run.read_samples():  # type: ignore[attr-defined]
        text = render_sample(tok, s, contexts, window, GenerationConfig(), "chat").text
        ids = tok(text, add_special_tokens=False)["input_ids"]
        by_context.setdefault(s.context_id, []).append(ids)
    total = 0
    for rows in by_context.values():
        common = common_prefix_len(rows)
        total += common + sum(len(r) - common for r in rows)
    return total


def run_child(backend: str, args: argparse.Namespace) -> dict:
    root = tempfile.mkdtemp(prefix="lceval-bench-main-")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LCEVAL_OUTPUTS": root}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", backend, "--params", args.params,
         "--root", root],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"{backend} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    res = json.loads(line.removeprefix("RESULT "))
    res["wall_s"] = wall
    res["load_after"] = os.getloadavg()[0]
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


def table(rows: dict[str, dict], args: argparse.Namespace) -> str:
    names = list(rows)
    lines = [
        "# Main job end to end: LIFBench smoke set, embedded SmolLM2-135M-Instruct",
        "",
        f"`{args.params}` (22 samples, 3 contexts), `pipeline.infer` defaults (greedy, "
        f"batch size 8, sample budgets uncapped), fresh run id per engine. Machine: {cpu_name()} "
        f"({os.cpu_count()} CPUs), shared with other work: 1-minute load average after each "
        "run in the last rows. Seconds per stage; wall = the child process from interpreter "
        "start to exit.",
        "",
        "| stage | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for stage in STAGES:
        cells = [f"{rows[n]['times'].get(stage, 0.0):.1f}" for n in names]
        lines.append(f"| {stage} s | " + " | ".join(cells) + " |")

    def row(label: str, fn) -> None:  # type: ignore[no-untyped-def]
        lines.append(f"| {label} | " + " | ".join(fn(rows[n]) for n in names) + " |")

    row("**wall s**", lambda r: f"**{r['wall_s']:.1f}**")
    row("engine (dtype)", lambda r: f"{r['engine']} ({r['dtype']})")
    row("prompt tokens requested", lambda r: f"{r['prompt_tokens']:,}")
    row("prompt tokens computed", lambda r: _computed(r["prefix_reuse"]))
    row("prefix reuse", lambda r: _reuse(r["prefix_reuse"]))
    row("floor prompt tokens", lambda r: f"{r['floor_prompt_tokens']:,}")
    row("generated tokens", lambda r: f"{r['completion_tokens']:,}")
    row("longest answer (tokens)", lambda r: f"{r['longest_answer']:,}")
    row("errors", lambda r: str(r["errors"]))
    row("mean score", lambda r: f"{r['mean_score']:.3f}")
    row("load average after", lambda r: f"{r['load_after']:.1f}")
    return "\n".join(lines) + "\n"


def _computed(p: dict | None) -> str:
    if not p or not p.get("measured", True):
        return "not measured"
    return f"{p['computed']:,}"


def _reuse(p: dict | None) -> str:
    if not p or p.get("reuse") is None:
        return "not measured"
    return f"{p['reuse']:.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backends", default="hf,vllm")
    ap.add_argument("--params", default="params/01_build_data/smoke.yaml")
    ap.add_argument("--out", default="benchmarks/results/main_job.md")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--root", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.params, args.root)
        return

    rows = {}
    for b in args.backends.split(","):
        print(f"running {b} ...", file=sys.stderr, flush=True)
        rows[b] = run_child(b, args)
        print(f"  {b}: {rows[b]}", file=sys.stderr, flush=True)
    text = table(rows, args)
    print(text)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
