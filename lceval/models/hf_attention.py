"""Key/value caches and attention for the hf engine: a shared prefix held once per batch.

Many questions about one context: its keys/values are held once per batch, not per row, and
each decoding step reads them once for the whole batch. Attention is split in two and merged by
log-sum-exp (the "cascade" of FlashInfer and vLLM; Milakov & Gimelshein 2018): every query of
every row against the prefix ``[1, Hkv, P, d]`` unmasked, rows and grouped heads folded into one
query axis (:func:`lse_attention`); each row against its own tokens ``[B, Hkv, S, d]`` with the
padding/causal mask (:func:`masked_lse_attention`); then ``o = (o1 e^l1 + o2 e^l2) / (e^l1 +
e^l2)``. :class:`SharedPrefixLayer` gives transformers the sizes for positions and masks; the
model, ``generate`` and sampling stay transformers' own. ``bench/bench_attention.py``: 1.58x
over transformers' ``sdpa`` at 0.57x the memory (README).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import AttentionInterface
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

ATTENTION = "lceval_cascade"
"""Name under which :func:`cascade_attention` is registered with transformers."""
SCORE_BLOCK_BYTES = 256 << 20
"""Most bytes of float32 attention scores the unfused fallback materialises at once."""
PREFIX_ATTR = "_lceval_prefix"
"""Attribute of the key tensor a :class:`SharedPrefixLayer` returns: the shared (keys, values)."""


# -- attention with log-sum-exp ------------------------------------------------------------------
def manual_lse_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention in float32, in query blocks of at most :data:`SCORE_BLOCK_BYTES`.

    Args:
        q: ``[N, H, Lq, d]``; k, v: ``[N, H, Lk, d]`` (same heads).
        scale: softmax scale (usually ``d ** -0.5``).
        causal: query ``i`` sees keys ``j <= i + Lk - Lq`` (the queries are the last keys).

    Returns:
        ``(out [N, H, Lq, d]`` in ``q.dtype``, ``lse [N, H, Lq]`` float32, natural log).
    """
    kf, vf = k.float(), v.float()
    n, h, lq, _ = q.shape
    step = max(1, SCORE_BLOCK_BYTES // max(1, 4 * n * h * k.shape[-2]))
    outs, lses = [], []
    for i in range(0, lq, step):
        s = torch.matmul(q[:, :, i : i + step].float(), kf.transpose(-1, -2)) * scale
        if causal:
            rows = torch.arange(i, i + s.shape[2], device=q.device).unsqueeze(1)
            cols = torch.arange(s.shape[3], device=q.device).unsqueeze(0)
            s = s.masked_fill(cols > rows + (s.shape[3] - lq), float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        outs.append(torch.matmul(torch.exp(s - lse.unsqueeze(-1)), vf).to(q.dtype))
        lses.append(lse)
    return torch.cat(outs, dim=2), torch.cat(lses, dim=2)


def _fused_lse_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's own fused kernels, which return the log-sum-exp beside the output (``causal``
    only with as many queries as keys)."""
    if q.device.type == "cpu":
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, causal, attn_mask=None, scale=scale
        )
        return out, lse.float()
    if q.device.type == "cuda":
        if q.dtype in (torch.float16, torch.bfloat16):
            res = torch.ops.aten._scaled_dot_product_flash_attention(
                q, k, v, 0.0, causal, False, scale=scale
            )
        else:
            res = torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, causal, scale=scale
            )
        return res[0], res[1][..., : q.shape[2]].float()
    raise NotImplementedError(q.device.type)


_FUSED_OK: dict[tuple[str, torch.dtype, int], bool] = {}
"""(device type, dtype, head dim) -> whether the fused kernel passed its self-check."""


def _fused_ok(q: torch.Tensor) -> bool:
    """Whether torch's fused kernel agrees with :func:`manual_lse_attention` here (checked once
    per device type, dtype and head dimension on random inputs; private torch ops can change)."""
    key = (q.device.type, q.dtype, q.shape[-1])
    if key not in _FUSED_OK:
        ok = False
        try:
            gen = torch.Generator(device="cpu").manual_seed(0)
            shape = (1, 2, 37, q.shape[-1])
            a, b, c = (torch.randn(shape, generator=gen).to(q.device, q.dtype) for _ in range(3))
            scale = q.shape[-1] ** -0.5
            tol = 1e-4 if q.dtype == torch.float32 else 3e-2
            ok = True
            for causal, n in ((False, 29), (True, 37)):
                o1, l1 = _fused_lse_attention(a, b[:, :, :n], c[:, :, :n], scale, causal)
                o2, l2 = manual_lse_attention(a, b[:, :, :n], c[:, :, :n], scale, causal)
                ok = ok and (
                    o1.shape == o2.shape
                    and l1.shape == l2.shape
                    and torch.allclose(o1.float(), o2.float(), atol=tol, rtol=tol)
                    and torch.allclose(l1, l2, atol=tol, rtol=tol)
                )
        except (RuntimeError, NotImplementedError, TypeError, AttributeError):
            ok = False
        _FUSED_OK[key] = ok
    return _FUSED_OK[key]


def lse_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention without a mask (or ``causal``) returning ``(out, lse)``: torch's fused kernel
    where it passes a self-check (no score matrix materialised), else
    :func:`manual_lse_attention`."""
    if _fused_ok(q) and (not causal or q.shape[2] == k.shape[2]):
        return _fused_lse_attention(q, k, v, scale, causal)
    return manual_lse_attention(q, k, v, scale, causal)


def masked_lse_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's queries against its own keys, grouped heads left grouped, in float32.

    Args:
        q: ``[B, H, q, d]``; k, v: ``[B, Hkv, S, d]`` with ``H = g * Hkv``.
        mask: ``[B, 1, q, S]`` bool (True: attend) or float (added), or None: causal, the
            queries being the last ``q`` of the ``S`` keys.

    Returns:
        ``(out [B, H, q, d]`` float32, ``lse [B, H, q]`` float32; ``-inf`` where a query sees
        none of these keys).
    """
    b, h, lq, d = q.shape
    hkv, s_len = k.shape[1], k.shape[2]
    g = h // hkv
    qg = q.float().reshape(b, hkv, g * lq, d)
    s = torch.matmul(qg, k.float().transpose(-1, -2)).view(b, hkv, g, lq, s_len) * scale
    if mask is None:
        if lq > 1:
            i = torch.arange(lq, device=q.device).unsqueeze(1) + (s_len - lq)
            j = torch.arange(s_len, device=q.device).unsqueeze(0)
            s = s.masked_fill(j > i, float("-inf"))
    elif mask.dtype == torch.bool:
        s = s.masked_fill(~mask[:, :, None, -lq:, -s_len:], float("-inf"))
    else:
        s = s + mask[:, :, None, -lq:, -s_len:].float()
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - torch.nan_to_num(lse, neginf=0.0).unsqueeze(-1))
    out = torch.matmul(p.view(b, hkv, g * lq, s_len), v.float()).view(b, h, lq, d)
    return out, lse.reshape(b, h, lq)


def merge_attention(
    o1: torch.Tensor, l1: torch.Tensor, o2: torch.Tensor, l2: torch.Tensor
) -> torch.Tensor:
    """Merge two attentions over disjoint key sets by their log-sum-exps (float32 out)."""
    m = torch.maximum(l1, l2)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(l1 - m), torch.exp(l2 - m)
    den = (w1 + w2).clamp_min(torch.finfo(torch.float32).tiny)
    return (o1.float() * w1.unsqueeze(-1) + o2 * w2.unsqueeze(-1)) / den.unsqueeze(-1)


def sdpa_gqa_attention(
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
    """transformers' ``sdpa`` attention with grouped key/value heads left grouped on the CPU
    (``enable_gqa=True``: the same numbers without transformers' per-head copies under a mask);
    on CUDA or anything unusual (position biases, paged caches) transformers' own function.
    """
    if (
        query.device.type != "cpu"
        or kwargs.get("position_bias") is not None
        or kwargs.get("cache") is not None
    ):
        return sdpa_attention_forward(  # type: ignore[no-any-return]
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(query.shape[2] > 1 and attention_mask is None and causal)
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=causal,
        enable_gqa=getattr(module, "num_key_value_groups", 1) > 1,
    )
    return out.transpose(1, 2).contiguous(), None


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
    own keys; any other call is :func:`sdpa_gqa_attention`. Returns ``[B, q, H, d]``.
    """
    prefix = getattr(key, PREFIX_ATTR, None)
    if prefix is None:
        return sdpa_gqa_attention(
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )
    pk, pv = prefix
    b, h, lq, d = query.shape
    hkv = pk.shape[1]
    g = h // hkv
    scale = scaling if scaling is not None else d**-0.5
    # rows and grouped heads folded into one query axis: the prefix is read once per batch
    qp = query.reshape(b, hkv, g * lq, d).transpose(0, 1).reshape(1, hkv, b * g * lq, d)
    o1, l1 = lse_attention(qp.contiguous(), pk, pv, scale)
    o1 = o1.reshape(hkv, b, g * lq, d).transpose(0, 1).reshape(b, h, lq, d)
    l1 = l1.reshape(hkv, b, g * lq).transpose(0, 1).reshape(b, h, lq)
    if attention_mask is None and lq == key.shape[2] and lq > 1:  # a chunk of a prefill
        o2, l2 = lse_attention(
            query, key.repeat_interleave(g, 1), value.repeat_interleave(g, 1), scale, True
        )
        out = merge_attention(o1, l1, o2, l2).to(query.dtype)
    elif key.shape[2]:
        o2, l2 = masked_lse_attention(query, key, value, attention_mask, scale)
        out = merge_attention(o1, l1, o2, l2).to(query.dtype)
    else:
        out = o1.to(query.dtype)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION, cascade_attention)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)


# -- cache layers --------------------------------------------------------------------------------
class GrowingLayer(DynamicLayer):
    """A full-attention cache layer writing new keys/values into a buffer with ``room`` spare
    tokens (transformers' ``DynamicLayer`` copies the cache at every step); ``keys``/``values`` are
    views of it, so ``DynamicLayer``'s methods still work.
    """

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = max(1, room)
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None

    def preload(self, keys: torch.Tensor, values: torch.Tensor, batch: int) -> None:
        """Start from ``keys``/``values`` (batch 1 or ``batch``), repeated to ``batch`` rows."""
        self.lazy_initialization(keys, values)
        self._alloc(batch, keys, values, keys.shape[-2])

    def _alloc(self, batch: int, keys: torch.Tensor, values: torch.Tensor, n: int) -> None:
        size = (batch, keys.shape[1], n + self.room, keys.shape[-1])
        self._k = torch.empty(size, dtype=keys.dtype, device=keys.device)
        self._v = torch.empty(
            size[:-1] + (values.shape[-1],), dtype=values.dtype, device=values.device
        )
        self._k[:, :, :n] = keys
        self._v[:, :, :n] = values
        self.keys, self.values = self._k[:, :, :n], self._v[:, :, :n]

    def _owns(self, n: int, add: int) -> bool:
        k, buf = self.keys, self._k
        return (
            buf is not None
            and k is not None
            and k.data_ptr() == buf.data_ptr()
            and k.shape[:2] == buf.shape[:2]
            and k.stride() == buf.stride()
            and n + add <= buf.shape[-2]
        )

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, add = self.get_seq_length(), key_states.shape[-2]
        if not self._owns(n, add):
            self.room = max(self.room, add)
            if n:
                assert self.keys is not None and self.values is not None
                self._alloc(self.keys.shape[0], self.keys, self.values, n)
            else:
                self._alloc(key_states.shape[0], key_states[:, :, :0], value_states[:, :, :0], 0)
        assert self._k is not None and self._v is not None
        self._k[:, :, n : n + add] = key_states
        self._v[:, :, n : n + add] = value_states
        self.keys, self.values = self._k[:, :, : n + add], self._v[:, :, : n + add]
        return self.keys, self.values

    def nbytes(self) -> int:
        """Bytes of this layer's buffers."""
        return sum(t.numel() * t.element_size() for t in (self._k, self._v) if t is not None)


class PrefixLayer(GrowingLayer):
    """The kept prefix cache (one row), prefilled chunk by chunk, each chunk attending to the
    earlier tokens through :func:`cascade_attention` (no mask spans the prompt).
    """

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        n = self.get_seq_length()
        keys, values = super().update(key_states, value_states, *args, **kwargs)
        if n == 0 or key_states.shape[0] != 1:
            return keys, values
        own_k, own_v = keys[:, :, n:], values[:, :, n:]
        setattr(own_k, PREFIX_ATTR, (keys[:, :, :n], values[:, :, :n]))
        return own_k, own_v

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return query_length, self.get_seq_length()


class SharedPrefixLayer(GrowingLayer):
    """A cache layer of ``batch`` rows sharing one prefix, held once.

    Args:
        prefix_keys, prefix_values: ``[1, Hkv, P, d]`` (views of the kept prefix, not copied).
        batch: rows.
        room: tokens of each row's own buffer before it grows.

    ``keys``/``values`` hold the rows' own tokens; ``get_seq_length`` counts the prefix too and
    ``get_mask_sizes`` offsets the mask by ``P``, so masks cover ``[B, 1, q, S]`` only.
    """

    def __init__(
        self, prefix_keys: torch.Tensor, prefix_values: torch.Tensor, batch: int, room: int
    ) -> None:
        super().__init__(room)
        self.prefix = (prefix_keys, prefix_values)
        self.prefix_len = prefix_keys.shape[-2]
        self.lazy_initialization(prefix_keys, prefix_values)
        shape = (batch, prefix_keys.shape[1], 0, prefix_keys.shape[-1])
        self.keys = prefix_keys.new_empty(shape)
        self.values = prefix_values.new_empty(shape)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        n, add = self._own_length(), key_states.shape[-2]
        if not self._owns(n, add):
            self.room = max(self.room, add)
            assert self.keys is not None and self.values is not None
            self._alloc(key_states.shape[0], self.keys, self.values, n)
        assert self._k is not None and self._v is not None
        self._k[:, :, n : n + add] = key_states
        self._v[:, :, n : n + add] = value_states
        keys, values = self._k[:, :, : n + add], self._v[:, :, : n + add]
        self.keys, self.values = keys, values
        out = keys.view(keys.shape)  # a fresh view carries the prefix to the attention
        setattr(out, PREFIX_ATTR, self.prefix)
        return out, values

    def _own_length(self) -> int:
        return 0 if self.keys is None else int(self.keys.shape[-2])

    def get_seq_length(self) -> int:
        return self.prefix_len + self._own_length()

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self._own_length() + query_length, self.prefix_len

    def crop(self, max_length: int) -> None:
        raise NotImplementedError("a shared-prefix cache cannot be cropped")

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise NotImplementedError("a shared-prefix cache is not repeated")


def kv_bytes_per_token(config: Any, dtype: torch.dtype) -> int:
    """Bytes of keys and values one token takes over all layers (``2 * L * Hkv * d * size``)."""
    cfg = getattr(config, "text_config", None) or config
    heads = getattr(cfg, "num_attention_heads", 1)
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    size = torch.finfo(dtype).bits // 8 if dtype.is_floating_point else 4
    return int(2 * cfg.num_hidden_layers * kv * d * size)
