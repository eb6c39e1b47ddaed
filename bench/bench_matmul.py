"""The machine's rate: dense float32 and bfloat16 matmul GFLOP/s on the CPU (torch), the figure
printed beside every timing in bench/results/README.md so a timing can be read against the
machine it ran on.

Run from the repo root after ``make setup``: ``.venv/bin/python bench/bench_matmul.py
[--size 2048] [--repeats 5]``. For each dtype, one warm-up product, then the best of
``--repeats`` timed products of two ``size x size`` matrices (2 x size^3 FLOPs each), with
torch's default thread count. On a machine shared with other jobs the best of several repeats
is the least disturbed one; read it as what the machine could give at the time. Prints one
Markdown table; no assertions (DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import time


def rate(dtype: object, size: int, repeats: int) -> float:
    """Best GFLOP/s of ``repeats`` ``size x size`` matmuls in ``dtype`` (after one warm-up)."""
    import torch

    a = torch.randn(size, size, dtype=dtype)  # type: ignore[arg-type]
    b = torch.randn(size, size, dtype=dtype)  # type: ignore[arg-type]
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * size**3 / best / 1e9


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=2048, help="matrix side (default 2048)")
    ap.add_argument("--repeats", type=int, default=5, help="timed products per dtype (default 5)")
    args = ap.parse_args()
    print(f"{dt.date.today()}, {platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} torch threads, torch {torch.__version__}")  # fmt: skip
    print(f"\n| dtype | GFLOP/s (best of {args.repeats}, {args.size} x {args.size}) |")
    print("| --- | --- |")
    for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        print(f"| {name} | {rate(dtype, args.size, args.repeats):.0f} |")


if __name__ == "__main__":
    main()
