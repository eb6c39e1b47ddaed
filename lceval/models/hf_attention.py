"""Key/value caches and attention for the hf engine: a shared prefix held once per batch.

Attention is split in two and merged by log-sum-exp (the "cascade" of FlashInfer and vLLM;
Milakov & Gimelshein 2018): every row's queries against the prefix ``[1, Hkv, P, d]`` unmasked,
rows and grouped heads folded into one query axis, then each row against its own tokens with the
padding/causal mask: ``o = (o1 e^l1 + o2 e^l2) / (e^l1 + e^l2)``. The model, ``generate`` and
sampling stay transformers' own. Measured by ``bench/bench_attention.py`` (bench/results/README.md).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from lceval.models._compat.torch import fused_lse_attention

ATTENTION = "lceval_cascade"  # the name cascade_attention is registered under in transformers
SCORE_BLOCK_BYTES = 256 << 20  # most bytes of float32 scores the unfused attention holds at once
PREFIX_ATTR = "_lceval_prefix"  # key tensor attribute carrying the shared (keys, values) prefix


def manual_lse_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float,
    causal: bool = False,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention in float32 with grouped heads left grouped, in query blocks of at most
    :data:`SCORE_BLOCK_BYTES` of scores.

    Args:
        q: ``[N, H, Lq, d]``; k, v: ``[N, Hkv, Lk, d]`` with ``H = g * Hkv``.
        scale: softmax scale (usually ``d ** -0.5``).
        causal: query ``i`` sees keys ``j <= i + Lk - Lq`` (the queries are the last keys).
        mask: instead of ``causal``, ``[N, 1, >=Lq, >=Lk]`` bool (True: attend) or float
            (added), its last ``Lq x Lk`` used.

    Returns:
        ``(out [N, H, Lq, d]``, ``lse [N, H, Lq]``), float32, natural log; ``lse`` is ``-inf``
        (and ``out`` 0) where a query sees no key.
    """
    n, h, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    g = h // hkv
    kf, vf = k.float().transpose(-1, -2), v.float()
    step = max(1, SCORE_BLOCK_BYTES // max(1, 4 * n * h * lk))
    outs, lses = [], []
    for i in range(0, lq, step):
        qb = q[:, :, i : i + step].float()
        m = qb.shape[2]
        s = torch.matmul(qb.reshape(n, hkv, g * m, d), kf).view(n, hkv, g, m, lk) * scale
        if mask is not None:
            part = mask[:, :, None, -lq:, -lk:][..., i : i + m, :]
            s = s.masked_fill(~part, float("-inf")) if part.dtype == torch.bool else s + part
        elif causal:
            last = torch.arange(i, i + m, device=q.device)[:, None] + (lk - lq)
            s = s.masked_fill(torch.arange(lk, device=q.device) > last, float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - torch.nan_to_num(lse, neginf=0.0).unsqueeze(-1))
        outs.append(torch.matmul(p.view(n, hkv, g * m, lk), vf).view(n, h, m, d))
        lses.append(lse.reshape(n, h, m))
    return torch.cat(outs, dim=2), torch.cat(lses, dim=2)


@functools.cache
def _fused_ok(device: torch.device, dtype: torch.dtype, d: int) -> bool:
    """Whether the fused kernel agrees with :func:`manual_lse_attention` on random inputs here
    (private ops can change between torch versions)."""
    gen = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn((1, 2, 37, d), generator=gen).to(device, dtype) for _ in range(3))
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    try:
        for causal, n in ((False, 29), (True, 37)):
            args = (a, b[:, :, :n], c[:, :, :n], d**-0.5, causal)
            got, want = fused_lse_attention(*args), manual_lse_attention(*args)
            for x, y in zip(got, want, strict=True):
                if x.shape != y.shape or not torch.allclose(x.float(), y, atol=tol, rtol=tol):
                    return False
    except (RuntimeError, TypeError, AttributeError):
        return False
    return True


def lse_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention without a mask (or ``causal``) returning ``(out, lse)`` as
    :func:`manual_lse_attention` (same heads in ``q``, ``k``, ``v``): torch's fused kernel (no
    scores materialised) on the CPU or CUDA where it passes a self-check, else the float32 path."""
    fits = q.device.type in ("cpu", "cuda") and (not causal or q.shape[2] == k.shape[2])
    if fits and _fused_ok(q.device, q.dtype, q.shape[-1]):
        return fused_lse_attention(q, k, v, scale, causal)
    return manual_lse_attention(q, k, v, scale, causal)


def merge_attention(
    o1: torch.Tensor, l1: torch.Tensor, o2: torch.Tensor, l2: torch.Tensor
) -> torch.Tensor:
    """Merge two attentions over disjoint key sets by their log-sum-exps (float32 out)."""
    m = torch.maximum(l1, l2).nan_to_num(neginf=0.0)  # both -inf: no key seen at all
    w1, w2 = torch.exp(l1 - m), torch.exp(l2 - m)
    den = (w1 + w2).clamp_min(torch.finfo(torch.float32).tiny)
    return (o1.float() * w1.unsqueeze(-1) + o2 * w2.unsqueeze(-1)) / den.unsqueeze(-1)


def cascade_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention for rows sharing a prefix held once: ``key``/``value`` ``[B, Hkv, S, d]`` from
    a :class:`SharedPrefixLayer` carry the ``[1, Hkv, P, d]`` prefix and the mask covers the ``S``
    own keys. Any other call: torch's ``sdpa`` with grouped heads left grouped on the CPU
    (``enable_gqa``: no per-head copies under a mask), else transformers' ``sdpa`` (CUDA,
    position biases, paged caches). Returns ``[B, q, H, d]``.
    """
    prefix = getattr(key, PREFIX_ATTR, None)
    if prefix is None:
        if (
            query.device.type != "cpu"
            or kwargs.get("position_bias") is not None
            or kwargs.get("cache") is not None
        ):
            return sdpa_attention_forward(  # type: ignore[no-any-return]
                module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
            )
        causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
        out = torch.nn.functional.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attention_mask,
            dropout_p=dropout,
            scale=scaling,
            is_causal=bool(query.shape[2] > 1 and attention_mask is None and causal),
            enable_gqa=getattr(module, "num_key_value_groups", 1) > 1,
        )
        return out.transpose(1, 2).contiguous(), None
    pk, pv = prefix
    b, h, lq, d = query.shape
    hkv = pk.shape[1]
    g = h // hkv
    scale = scaling if scaling is not None else d**-0.5
    # rows and grouped heads folded into one query axis: the prefix is read once per batch
    qp = query.reshape(b, hkv, g * lq, d).transpose(0, 1).reshape(1, hkv, b * g * lq, d)
    o1, l1 = lse_attention(qp.contiguous(), pk, pv, scale)
    out = o1.reshape(hkv, b, g * lq, d).transpose(0, 1).reshape(b, h, lq, d)
    if key.shape[2]:
        l1 = l1.reshape(hkv, b, g * lq).transpose(0, 1).reshape(b, h, lq)
        if attention_mask is None and lq == key.shape[2] and lq > 1:  # a chunk of a prefill
            kg, vg = key.repeat_interleave(g, 1), value.repeat_interleave(g, 1)
            o2, l2 = lse_attention(query, kg, vg, scale, True)
        else:
            o2, l2 = manual_lse_attention(query, key, value, scale, True, attention_mask)
        out = merge_attention(out, l1, o2, l2)
    return out.to(query.dtype).transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION, cascade_attention)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)


class GrowingLayer(DynamicLayer):
    """A full-attention cache layer writing new keys/values into a buffer with ``room`` spare
    tokens (``DynamicLayer`` concatenates at every step); ``keys``/``values`` are views of it."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = max(1, room)
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None

    def preload(self, keys: torch.Tensor, values: torch.Tensor, batch: int) -> None:
        """Start from ``keys``/``values`` (batch 1 or ``batch``), repeated to ``batch`` rows."""
        self.lazy_initialization(keys, values)
        self._alloc(batch, keys, values)

    def _alloc(self, batch: int, keys: torch.Tensor, values: torch.Tensor) -> None:
        n = keys.shape[-2]
        self._k = keys.new_empty((batch, keys.shape[1], n + self.room, keys.shape[-1]))
        self._v = values.new_empty((batch, values.shape[1], n + self.room, values.shape[-1]))
        self._k[:, :, :n], self._v[:, :, :n] = keys, values
        self.keys, self.values = self._k[:, :, :n], self._v[:, :, :n]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, add = DynamicLayer.get_seq_length(self), key_states.shape[-2]  # own tokens
        old_k, old_v = self.keys, self.values
        if not n or old_k is None or old_v is None:
            old_k, old_v = key_states[:, :, :0], value_states[:, :, :0]
        buf = self._k
        if buf is None or old_k.data_ptr() != buf.data_ptr() or n + add > buf.shape[-2]:
            # no buffer, or transformers replaced the views (a reorder), or it is full
            self.room = max(self.room, add)
            self._alloc(old_k.shape[0], old_k, old_v)
        assert self._k is not None and self._v is not None
        self._k[:, :, n : n + add], self._v[:, :, n : n + add] = key_states, value_states
        self.keys, self.values = self._k[:, :, : n + add], self._v[:, :, : n + add]
        return self.keys, self.values


class PrefixLayer(GrowingLayer):
    """The kept prefix cache (one row), prefilled chunk by chunk, each chunk attending to the
    earlier tokens through :func:`cascade_attention` (no mask spans the prompt)."""

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        n = self.get_seq_length()
        keys, values = super().update(key_states, value_states)
        if n == 0:
            return keys, values
        own_k = keys[:, :, n:]
        setattr(own_k, PREFIX_ATTR, (keys[:, :, :n], values[:, :, :n]))
        return own_k, values[:, :, n:]

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return query_length, self.get_seq_length()


class SharedPrefixLayer(GrowingLayer):
    """A cache layer of rows sharing one prefix ``[1, Hkv, P, d]`` (views of the kept prefix, not
    copied), each row with ``room`` tokens of its own before its buffer grows.

    ``keys``/``values`` hold the rows' own tokens; ``get_seq_length`` counts the prefix too and
    ``get_mask_sizes`` offsets the mask by ``P``, so masks cover the own tokens only.
    """

    def __init__(self, prefix_keys: torch.Tensor, prefix_values: torch.Tensor, room: int) -> None:
        super().__init__(room)
        self.prefix = (prefix_keys, prefix_values)
        self.lazy_initialization(prefix_keys, prefix_values)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = super().update(key_states, value_states)
        setattr(keys, PREFIX_ATTR, self.prefix)  # carried to cascade_attention
        return keys, values

    def get_seq_length(self) -> int:
        return self.prefix[0].shape[-2] + DynamicLayer.get_seq_length(self)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return DynamicLayer.get_seq_length(self) + query_length, self.prefix[0].shape[-2]


def kv_bytes_per_token(config: Any, dtype: torch.dtype) -> int:
    """Bytes of keys and values one token takes over all layers (``2 * L * Hkv * d * size``)."""
    cfg = getattr(config, "text_config", None) or config
    heads = getattr(cfg, "num_attention_heads", 1)
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return int(2 * cfg.num_hidden_layers * kv * d * dtype.itemsize)
