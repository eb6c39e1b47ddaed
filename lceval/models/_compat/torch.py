"""torch's fused attention kernels that return the log-sum-exp beside the output (private aten
ops): the cascade attention of ``lceval.models.hf_attention`` merges two partial attentions by
it. ``hf_attention`` checks them against its float32 path before use (``_fused_ok``) and falls
back to that path when they change or fail.
"""

from __future__ import annotations

import torch


def fused_lse_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(out [N, H, Lq, d], lse [N, H, Lq] float32)`` from torch's fused kernels (no scores
    materialised): flash attention for CPU; on CUDA flash (half precision) or memory-efficient.

    Waits for: a public fused attention returning the log-sum-exp on the CPU. In torch 2.13
    ``torch.nn.attention.flex_attention.flex_attention(..., return_lse=True)`` compiled on the
    CPU refuses ``return_lse`` ("not supported yet") and eager is 7-20x slower than this op
    (``bench/bench_lse_kernels.py``, ``bench/results/lse_kernels_2026-11-29.md``).
    """
    ops = torch.ops.aten
    if q.device.type == "cpu":
        out, lse = ops._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, causal, attn_mask=None, scale=scale
        )
        return out, lse.float()
    if q.dtype in (torch.float16, torch.bfloat16):
        res = ops._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
    else:
        res = ops._scaled_dot_product_efficient_attention(
            q, k, v, None, True, 0.0, causal, scale=scale
        )
    return res[0], res[1][..., : q.shape[2]].float()
