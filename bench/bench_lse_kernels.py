"""Attention with its log-sum-exp (what the hf engine's cascade attention merges by): torch's
fused private op (``lceval.models._compat.torch``), the float32 path of ``hf_attention`` and the
public ``flex_attention(..., return_lse=True)``, eager and compiled; plain ``sdpa`` (no lse) for
scale. The question it answers: can the public flex attention replace the private op (issue 52)?

Run from the repo root: ``python bench/bench_lse_kernels.py [--keys 4096] [--repeat 5]
[--out bench/results/lse_kernels.md]``. Float32, CPU, 3 heads of 64 (SmolLM2-135M's KV heads),
8 queries (decode of a batch) and 512 (prefill of a row's own tokens) against ``--keys`` keys.
Tables only, no assertions (STYLE.md: no timed tests).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime

import torch
from torch.nn.attention.flex_attention import flex_attention

from lceval.models._compat.torch import fused_lse_attention
from lceval.models.hf_attention import manual_lse_attention


def _ms(f: Callable[[], object], repeat: int) -> float:
    f()
    t0 = time.perf_counter()
    for _ in range(repeat):
        f()
    return (time.perf_counter() - t0) / repeat * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench/results/lse_kernels.md")
    a = ap.parse_args()
    torch.manual_seed(0)
    scale = 64**-0.5
    lines = [
        "# attention with log-sum-exp: private fused op vs public flex_attention "
        "(bench/bench_lse_kernels.py)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f} at start",
        "",
        "| queries | keys | fused (private) ms | float32 path ms | flex eager ms | flex compiled "
        "| sdpa, no lse ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for lq in (8, 512):
        q = torch.randn(1, 3, lq, 64)
        k, v = torch.randn(1, 3, a.keys, 64), torch.randn(1, 3, a.keys, 64)
        fused = _ms(lambda q=q, k=k, v=v: fused_lse_attention(q, k, v, scale), a.repeat)
        manual = _ms(lambda q=q, k=k, v=v: manual_lse_attention(q, k, v, scale), a.repeat)
        flex = _ms(
            lambda q=q, k=k, v=v: flex_attention(q, k, v, scale=scale, return_lse=True), a.repeat
        )
        try:
            compiled = torch.compile(flex_attention, dynamic=True)
            ms = _ms(lambda q=q, k=k, v=v, c=compiled: c(q, k, v, scale=scale, return_lse=True), 1)
            flex_c = f"{ms:.1f} ms"
        except Exception as exc:  # noqa: BLE001 - the table records why it cannot run
            said = [x for x in str(exc).splitlines() if "Error:" in x] or [type(exc).__name__]
            flex_c = f"fails: {said[-1].split('Error: ')[-1][:110]}"
        sdpa = _ms(
            lambda q=q, k=k, v=v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
            a.repeat,
        )
        lines.append(
            f"| {lq} | {a.keys} | {fused:.1f} | {manual:.1f} | {flex:.1f} | {flex_c} | {sdpa:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
