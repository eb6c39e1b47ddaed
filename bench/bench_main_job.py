"""README's first command, timed stage by stage on each engine: the "first five minutes" job.

Run from the repo root after ``make setup``: ``.venv/bin/python bench/bench_main_job.py
[--backends auto,hf] [--pipeline params/pipelines/lifbench_smoke.yaml]
[--out bench/results/main_job.md]``.

For each engine, one child process runs exactly what ``make smoke`` runs after setup,
``python -m lceval run PIPELINE`` (notebooks 01 build, 02 inference, 03 scoring and report,
through papermill, each in a fresh Jupyter kernel), on a fresh run id in a temporary outputs
folder, with ``-p backend=NAME`` as the only change. The wall time is the child's, from
interpreter start to exit. The breakdown comes from what the job records itself: papermill's
per-cell durations in the executed notebooks, and ``run.json``'s ``models.*.timing`` (engine
start, answering, engine close) and ``prefix_reuse`` (prompt tokens requested and computed).
"Notebook overhead" is each notebook's time outside its cells (kernel start, papermill, writing
the notebook); "lceval run overhead" is the rest of the wall time (interpreter start, imports,
the HTML rendering of the executed notebooks for report/index.html).

The physical floor (:func:`floor`) is the arithmetic that cannot be skipped: the prefill of the
prompts' unique tokens (the nodes of the token trie of all prompts, which is what an ideal
prefix cache computes) and the decoding of the generated tokens, in FLOPs, over the best dense
matmul rate measured on the machine. Tables only, no assertions (DEVELOPING.md: no timed tests).
Runs are sequential: one model in memory at a time.
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


def notebook_times(path: Path) -> tuple[float, dict[str, float]]:
    """(notebook duration, {first line of a cell: seconds}) from papermill's metadata."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    total = float(nb["metadata"]["papermill"].get("duration") or 0.0)
    cells: dict[str, float] = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        lines = [x for x in src.splitlines() if x.strip() and not x.startswith("#")]
        key = lines[0].strip()[:60] if lines else "(comment)"
        cells[key] = cells.get(key, 0.0) + float(cell["metadata"]["papermill"].get("duration") or 0)
    return total, cells


def floor(
    run_dir: Path, window: int, generated: list[tuple[int, int]], cap: int | None = None
) -> dict[str, float]:
    """The job's compute floor: unique prompt tokens and the FLOPs of prefill plus decoding.

    The prompts are counted as sent: rendered with the run's generation cap ``cap`` (run.json's
    ``generation.max_new_tokens``), which leaves more of the window to the context than the
    samples' own budgets do (without it the smoke run's floor read 12.85 TFLOP, 14.69 as sent).

    FLOPs per token at position p: 2 x (non-embedding parameters) for the matrix products plus
    4 x layers x hidden size x p for attention (scores and weighted values); generated tokens
    also pay the output projection (2 x vocabulary x hidden). ``generated`` holds (prompt
    length, new tokens) per sample. Seconds = FLOPs / the best dense matmul rate measured here
    (float32 and bfloat16, 2048 x 2048, all threads): an optimistic lower bound.
    """
    import torch
    from transformers import AutoConfig, AutoTokenizer

    from lceval.core.io import RunDir
    from lceval.models.base import GenerationConfig
    from lceval.models.embedded import resolve_model
    from lceval.models.prompts import render_sample
    from lceval.run.plan import unique_prefix_positions

    path = resolve_model(None).path
    tok = AutoTokenizer.from_pretrained(path)
    cfg = AutoConfig.from_pretrained(path)
    run = RunDir(run_dir.name, run_dir.parent)
    contexts = run.read_contexts()
    rows = []
    for s in run.read_samples():
        config = GenerationConfig(max_new_tokens=cap)
        text = render_sample(tok, s, contexts, window, config, "chat").text
        rows.append(tok(text, add_special_tokens=False)["input_ids"])
    positions = unique_prefix_positions(rows)
    d, layers, vocab = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    inter, heads, kv = cfg.intermediate_size, cfg.num_attention_heads, cfg.num_key_value_heads
    head = d // heads
    dense = layers * (d * head * (heads + 2 * kv) + heads * head * d + 3 * d * inter)
    flops = sum(2 * dense + 4 * layers * d * p for p in positions)
    for n_prompt, n_new in generated:
        flops += sum(
            2 * dense + 2 * vocab * d + 4 * layers * d * (n_prompt + j) for j in range(n_new)
        )
    rate = 0.0
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(2048, 2048, dtype=dtype)
        torch.matmul(a, a)
        t = time.perf_counter()
        for _ in range(5):
            torch.matmul(a, a)
        rate = max(rate, 5 * 2 * 2048**3 / (time.perf_counter() - t))
    return {"tokens": len(positions), "tflop": flops / 1e12, "gflops": rate / 1e9,
            "seconds": flops / rate}  # fmt: skip


def run_job(backend: str, args: argparse.Namespace) -> dict:
    """Run the pipeline once on ``backend`` in a fresh outputs folder; collect its records."""
    root = Path(tempfile.mkdtemp(prefix="lceval-bench-main-"))
    run_id = f"bench-main-{backend}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LCEVAL_OUTPUTS": str(root)}
    cmd = [sys.executable, "-m", "lceval", "run", args.pipeline, "--run-id", run_id,
           "-p", f"backend={backend}"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{backend} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    run_dir = root / run_id
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    entry = next(iter(meta["models"].values()))
    notebooks = {}
    for nb in sorted((run_dir / "notebooks").glob("*.ipynb")):
        notebooks[nb.stem] = notebook_times(nb)
    responses = [
        json.loads(line)
        for line in (run_dir / "responses.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    picked = [x for x in proc.stderr.splitlines() if x.startswith("lceval: backend auto")]
    return {
        "wall_s": wall,
        "notebooks": notebooks,
        "timing": entry.get("timing", {}),
        "engine": entry["backend"],
        "dtype": entry.get("dtype"),
        "picked": picked[0].removeprefix("lceval: ") if picked else "",
        "prefix_reuse": entry.get("prefix_reuse"),
        "floor": floor(
            run_dir,
            entry.get("window", 8192),
            [(r["prompt_tokens"], r["completion_tokens"]) for r in responses],
            (entry.get("generation") or {}).get("max_new_tokens"),
        ),
        "samples": len(responses),
        "errors": sum(r["finish_reason"] == "error" for r in responses),
        "prompt_tokens": sum(r["prompt_tokens"] for r in responses),
        "completion_tokens": sum(r["completion_tokens"] for r in responses),
        "load_after": os.getloadavg()[0],
    }


def stages(res: dict) -> dict[str, float]:
    """Seconds per stage of one job (they add up to its wall time)."""
    nbs = res["notebooks"]
    timing = res["timing"]

    def cell(nb: str, prefix: str) -> float:
        return sum(v for k, v in nbs.get(nb, (0, {}))[1].items() if k.startswith(prefix))

    build = cell("01_build_data", "run = lceval.run.build(")
    infer_cell = cell("02_inference", "responses = lceval.run.infer(")
    start = timing.get("engine_start_s", 0.0)
    close = timing.get("engine_close_s", 0.0)
    answer = timing.get("generate_s", 0.0)
    report = cell("03_ars_ifs_scoring", "tables = lceval.report.write_report(")
    cells_total = sum(sum(c.values()) for _, c in nbs.values())
    nb_total = sum(t for t, _ in nbs.values())
    out = {
        "build (01)": build,
        "engine start (02)": start,
        "answering the samples (02)": answer,
        "engine close (02)": close,
        "other inference-cell work (02)": infer_cell - start - answer - close,
        "scoring + report tables/figures (03)": report,
        "other cells": cells_total - build - infer_cell - report,
        "notebook overhead (3 kernels)": nb_total - cells_total,
    }
    out["lceval run overhead"] = res["wall_s"] - nb_total
    return out


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
        "# Main job end to end: `make smoke` after setup "
        "(LIFBench smoke set, SmolLM2-135M-Instruct)",
        "",
        f"`python -m lceval run {args.pipeline} -p backend=NAME` in a fresh outputs folder, "
        f"the three notebooks through papermill. Machine: {cpu_name()} ({os.cpu_count()} CPUs); "
        "1-minute load average after each run in the last row. Seconds per stage (they add up "
        "to the wall time), from papermill's cell durations and run.json's `timing`.",
        "",
        "| stage | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    per = {n: stages(rows[n]) for n in names}
    for stage in per[names[0]]:
        lines.append(f"| {stage} | " + " | ".join(f"{per[n][stage]:.1f}" for n in names) + " |")

    def row(label: str, fn) -> None:  # type: ignore[no-untyped-def]
        lines.append(f"| {label} | " + " | ".join(fn(rows[n]) for n in names) + " |")

    row("**wall s**", lambda r: f"**{r['wall_s']:.1f}**")
    row("engine (dtype)", lambda r: f"{r['engine']} ({r['dtype']})")
    row("samples (errors)", lambda r: f"{r['samples']} ({r['errors']})")
    row("prompt tokens requested", lambda r: f"{r['prompt_tokens']:,}")
    row("prompt tokens computed", lambda r: _computed(r["prefix_reuse"]))
    row("prefix reuse", lambda r: _reuse(r["prefix_reuse"]))
    row("floor: unique prompt tokens (trie of all prompts)", lambda r: f"{r['floor']['tokens']:,}")
    row("generated tokens", lambda r: f"{r['completion_tokens']:,}")
    row(
        "tokens/s while answering (prompt computed + generated)",
        lambda r: _rate(r),
    )
    row(
        "floor: TFLOP (unique prefill + decoding)",
        lambda r: f"{r['floor']['tflop']:.1f}",
    )
    row(
        "floor: seconds at the best measured matmul rate",
        lambda r: f"{r['floor']['seconds']:.1f} ({r['floor']['gflops']:.0f} GFLOP/s)",
    )
    row("load average after", lambda r: f"{r['load_after']:.1f}")
    picked = [f"- `{n}`: {rows[n]['picked']}" for n in names if rows[n]["picked"]]
    if picked:
        lines += ["", "Engine picked by `backend=auto`:", *picked]
    return "\n".join(lines) + "\n"


def _rate(r: dict) -> str:
    p = r["prefix_reuse"] or {}
    secs = r["timing"].get("generate_s")
    if not secs or p.get("computed") is None:
        return "not measured"
    return f"{(p['computed'] + r['completion_tokens']) / secs:,.0f}"


def _computed(p: dict | None) -> str:
    if not p or p.get("computed") is None:
        return "not measured"
    return f"{p['computed']:,}"


def _reuse(p: dict | None) -> str:
    if not p or p.get("reuse") is None:
        return "not measured"
    return f"{p['reuse']:.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backends", default="auto,hf")
    ap.add_argument("--pipeline", default="params/pipelines/lifbench_smoke.yaml")
    ap.add_argument("--out", default="bench/results/main_job.md")
    args = ap.parse_args()
    rows = {}
    for b in args.backends.split(","):
        print(f"running {b} ...", file=sys.stderr, flush=True)
        rows[b] = run_job(b, args)
        print(f"  {b}: wall {rows[b]['wall_s']:.1f} s {stages(rows[b])}", file=sys.stderr)
    text = table(rows, args)
    print(text)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
