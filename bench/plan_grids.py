"""Each paper's full grid, its size and its estimated GPU hours: ``lceval plan`` on the full params.

Run from the repo root: ``.venv/bin/python bench/plan_grids.py [--ruler-samples 10]
[--out bench/results/plan_grids.md]``.

For each paper the script builds the grid of its full params file (``lceval build KEY --params
params/<notebook>/full.yaml``) into a temporary outputs folder and plans it
(:func:`lceval.run.plan.plan_run`: the run's tiktoken encoding, no model window, every context
tokenized). Where the grid is
too large to build on the development machine it builds a slice and scales it, saying so:
RULER's 13 tasks x 6 lengths x 500 samples (39,000 prompts, about 1.6 billion tokens) is built
with ``--ruler-samples`` per task and length and multiplied by 500 / that number (samples, tokens
and hours add up per sample; unique tokens scaled from a slice are an upper bound, as more
samples share more prefixes). Where the official data are not available offline (L-Eval, CIF-Bench
need the user's copies) the build fails with its one-line reason and the row gives the sizes the
paper states instead, with no estimate. Build and plan times are wall seconds on this machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import lceval.params
import lceval.run
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.run import plan

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Grid:
    paper: str
    key: str
    params: str
    paper_size: str
    """What the paper states about its grid (used when the data are not offline)."""


GRIDS = (
    Grid("LIFBench", "lifbench", "params/01_build_data/full.yaml", "2,766 instructions (Table 2)"),
    Grid(
        "LongGenBench",
        "longgenbench",
        "params/06_longgenbench/full.yaml",
        "4 scenarios x 100 prompts, short (16K) and long (32K) versions (Sec. 3.1)",
    ),
    Grid("RULER", "ruler", "params/07_ruler/full.yaml", "13 tasks x 6 lengths x 500 samples"),
    Grid(
        "ManyIFEval",
        "manyifeval",
        "params/04_curse_of_instructions/full.yaml",
        "216 task prompts, 100 samples per instruction count n = 1..10 (Sec. 3)",
    ),
    Grid(
        "L-Eval",
        "leval",
        "params/08_leval/full.yaml",
        "20 sub-tasks, 508 documents of 3k-200k tokens, over 2,000 query-response pairs",
    ),
    Grid(
        "CIF-Bench",
        "cifbench",
        "params/11_cif_bench/full.yaml",
        "150 tasks x 100 input-output pairs; public half with 1 instruction, private half with "
        "5: 45,000 instances (Sec. 3)",
    ),
)


def measure(grid: Grid, root: Path, ruler_samples: int) -> dict:
    """Build and plan one grid; a row of the table."""
    params = lceval.params.load_params(ROOT / grid.params)
    scale = 1.0
    if grid.key == "ruler":
        scale = params["num_samples"] / ruler_samples
        params["num_samples"] = ruler_samples
    row = {"grid": grid, "scale": scale}
    t0 = time.perf_counter()
    try:
        run = lceval.run.build(f"plan-{grid.key}", grid.key, params, root=root)
    except LcevalError as exc:
        row["unavailable"] = str(exc)
        return row
    row["build_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    p = plan.plan_run(RunDir(run.run_id, root), exact=True)  # every context tokenized
    row["plan_s"] = time.perf_counter() - t0
    row["total"] = {k: v * scale for k, v in p.total().items()}
    est = p.estimates[p.estimates["model"].str.startswith("8B")].set_index("gpu")
    row["hours"] = {g: float(est.loc[g, "gpu_hours"]) * scale for g in est.index}
    row["floor"] = {g: float(est.loc[g, "floor_h"]) * scale for g in est.index}
    row["tasks"] = int((p.sizes["task"] != "*").sum())
    return row


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _h(x: float) -> str:
    return f"{x:.2g}" if x < 1 else f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def table(rows: list[dict], ruler_samples: int) -> str:
    lines = [
        "# Each paper's full grid: size and estimated GPU hours (`lceval plan`)",
        "",
        "Built from each paper's full params file and planned with its tiktoken encoding "
        f"(`bench/plan_grids.py`; {os.cpu_count()} CPUs). Unique = prompt tokens left to prefill "
        "after prefix sharing (the token trie of all prompts); budget = the samples' new-token "
        "budgets summed (an upper bound on generated tokens). GPU hours for an 8B dense model "
        "(Llama-3.1-8B shape), bf16, one GPU: the arithmetic floor on datasheet rates "
        f"x {plan.EFFICIENCY:g}. Efficiency: {plan.EFFICIENCY_SOURCE}.",
        "",
        "| paper | full params | samples | prompt tokens | unique tokens | budget | 8B floor h "
        "A100 / H100 | **8B GPU-h A100-80GB** | **8B GPU-h H100-80GB** | build s | plan s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    notes = []
    for r in rows:
        g = r["grid"]
        head = f"| {g.paper} | `{g.params}` |"
        if "unavailable" in r:
            lines.append(
                f"{head} {g.paper_size} (paper) | not built | | | | unavailable | unavailable | | |"
            )
            notes.append(f"- {g.paper}: not built offline: {r['unavailable']}")
            continue
        t, h, f = r["total"], r["hours"], r["floor"]
        lines.append(
            f"{head} {_n(t['samples'])} | {_n(t['prompt_tokens'])} | {_n(t['unique_tokens'])} | "
            f"{_n(t['budget'])} | {_h(f['A100-80GB'])} / {_h(f['H100-80GB'])} | "
            f"**{_h(h['A100-80GB'])}** | **{_h(h['H100-80GB'])}** | {r['build_s']:.1f} | "
            f"{r['plan_s']:.1f} |"
        )
        if g.key == "manyifeval":
            notes.append(
                "- ManyIFEval: the zero-shot answers only (the offline MT-Bench prompts, with the "
                "repeated-instruction control); Table 2's refinement (six strategies x 5 rounds "
                "of feedback calls and rewrites on every refined sample) is not planned."
            )
        if r["scale"] != 1:
            notes.append(
                f"- {g.paper}: built with {ruler_samples} samples per task and length and "
                f"scaled x{r['scale']:g} to the full grid; unique tokens are an upper bound (a "
                "slice shares fewer prefixes than the whole grid). Build and plan times are the "
                "slice's."
            )
    return "\n".join([*lines, "", *notes]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ruler-samples", type=int, default=10)
    ap.add_argument("--only", default=None, help="comma-separated benchmark keys")
    ap.add_argument("--out", default="bench/results/plan_grids.md")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    grids = [g for g in GRIDS if not args.only or g.key in args.only.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="lceval-plan-grids-") as tmp:
        for g in grids:
            print(f"{g.paper} ...", file=sys.stderr, flush=True)
            rows.append(measure(g, Path(tmp), args.ruler_samples))
            print(f"  {rows[-1].get('total', rows[-1].get('unavailable'))}", file=sys.stderr)
    text = table(rows, args.ruler_samples)
    print(text)
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
