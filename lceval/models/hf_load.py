"""What the hf engine resolves when it loads: the device, the dtype and the context window."""

from __future__ import annotations

from typing import Any

import torch

from lceval.errors import LcevalError

DTYPES = ("auto", "float32", "bfloat16", "float16")


def pick_device(device: str) -> str:
    """The torch device name for ``device`` (``auto``: CUDA when available, else CPU).

    Raises:
        LcevalError: an unknown device, or CUDA asked for where there is none.
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" or device.startswith("cuda") or device == "mps":
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise LcevalError(f"device {device!r} requested but no CUDA GPU is available")
        return device
    raise LcevalError(f"device must be 'auto', 'cpu', 'cuda[:N]' or 'mps', got {device!r}")


def pick_dtype(dtype: str, device: str) -> torch.dtype:
    """The torch dtype for ``dtype`` on ``device`` (``auto``: bfloat16 on GPUs that support it,
    float16 on older GPUs, float32 on the CPU).

    Raises:
        LcevalError: an unknown dtype name.
    """
    if dtype not in DTYPES:
        raise LcevalError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32  # CPU: bf16 is no faster here and fp32 keeps batching exact
    return getattr(torch, dtype)


def model_window(config: Any, tokenizer: Any) -> int:
    """The context window in tokens: ``max_position_embeddings`` or the tokenizer's max length.

    Raises:
        LcevalError: neither the model config nor the tokenizer states a window.
    """
    for cfg in (config, getattr(config, "text_config", None)):
        n = getattr(cfg, "max_position_embeddings", None)
        if isinstance(n, int) and n > 0:
            return n
    n = getattr(tokenizer, "model_max_length", None)
    if isinstance(n, int) and 0 < n < 10_000_000:
        return n
    raise LcevalError("cannot tell the model's context window; pass window=<tokens>")
