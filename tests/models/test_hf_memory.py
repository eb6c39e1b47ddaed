"""Long-context memory of the hf engine, caught on the CPU (issue: 128k prompts on one GPU).

Each test pins one defect the GPU run showed: logits over the whole prompt, unchunked prefill,
the shared context copied per row, and a run dying (or losing samples) on out-of-memory errors.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from lceval.core.records import Context, Sample
from lceval.models import hf_attention
from lceval.models.base import GenerationConfig
from lceval.models.hf import HFBackend

GREEDY = GenerationConfig()
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def _context(n_words: int, seed: int = 0) -> Context:
    text = " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n_words))
    return Context(f"c{seed}", text, 0, "o200k_base")


def _sample(i: int, context_id: str = "c0", budget: int = 10) -> Sample:
    return Sample(
        id=f"s{i}",
        benchmark="test",
        task="T",
        instruction=f"Question {i}: list the {WORDS[i % len(WORDS)]} items.",
        context_id=context_id,
        max_new_tokens=budget,
    )


@pytest.fixture()
def tiny(tiny_model_dir: Path) -> HFBackend:
    return HFBackend(str(tiny_model_dir), device="cpu", max_batch_rows=8)


def test_logits_only_where_a_token_is_sampled(tiny: HFBackend) -> None:
    # The 128k OOM was a float32 logits tensor over the whole prompt: lm_head must only ever see
    # one position per row, in the chunked prefill of the context and in generate alike.
    seen: list[int] = []
    hook = tiny.model.lm_head.register_forward_hook(lambda m, a, out: seen.append(a[0].shape[1]))
    try:
        tiny.prefill_chunk = 64
        ctx = {"c0": _context(500)}
        out = tiny.generate([_sample(i) for i in range(3)], ctx, GREEDY)
    finally:
        hook.remove()
    assert all(r.error is None for r in out)
    assert seen and max(seen) == 1


def test_prefill_in_chunks_equals_one_pass(tiny_model_dir: Path) -> None:
    ctx = {"c0": _context(600)}
    samples = [_sample(i) for i in range(4)]
    one = HFBackend(str(tiny_model_dir), device="cpu", prefill_chunk=4096)
    chunked = HFBackend(str(tiny_model_dir), device="cpu", prefill_chunk=50)
    widths: list[int] = []
    hook = chunked.model.model.register_forward_hook(
        lambda m, a, kw, out: widths.append(kw["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        got = [r.text for r in chunked.generate(samples, ctx, GREEDY)]
    finally:
        hook.remove()
    assert got == [r.text for r in one.generate(samples, ctx, GREEDY)]
    assert max(widths) <= 50 and len(widths) > 10  # the ~700-token prefix took many passes


def _cache_bytes(cache) -> tuple[int, int]:
    """(shared prefix bytes, own bytes) of a cache of SharedPrefixLayer, each storage once."""
    prefix: dict[int, int] = {}
    own = 0
    for layer in cache.layers:
        for t in layer.prefix:
            s = t.untyped_storage()
            prefix[s.data_ptr()] = s.nbytes()
        own += sum(t.untyped_storage().nbytes() for t in (layer.keys, layer.values))
    return sum(prefix.values()), own


def test_shared_context_held_once_whatever_the_batch(tiny: HFBackend, monkeypatch) -> None:
    # A shared context's keys/values are stored once per batch, never once per row: the prefix
    # bytes are the same for 2 and 8 rows, and each row adds only its own tokens.
    made: list = []
    real = tiny._shared_cache

    def spy(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(tiny, "_shared_cache", spy)
    ctx = {"c0": _context(700)}
    sizes = {}
    for rows in (2, 8):
        tiny._prefix_ids, tiny._prefix_kv = [], None
        tiny.batch_size = rows
        out = tiny.generate([_sample(i) for i in range(rows)], ctx, GREEDY)
        assert all(r.error is None for r in out)
        sizes[rows] = _cache_bytes(made[-1])
    (p2, own2), (p8, own8) = sizes[2], sizes[8]
    prefix_tokens = len(tiny._prefix_ids)
    assert prefix_tokens > 600
    assert p2 == p8 == 2 * tiny._kv_token // 2 * prefix_tokens  # keys + values, once
    per_row = tiny._kv_token * (50 + 2 * 10)  # own tokens (< 50) + answer room
    assert own8 <= 8 * per_row and own2 <= 2 * per_row
    assert own8 < p8  # 8 rows' own tokens are still smaller than the context held once


def test_out_of_memory_halves_the_batch_and_answers_every_sample(
    tiny: HFBackend, monkeypatch
) -> None:
    ctx = {"c0": _context(300), "c1": _context(200, 1)}
    samples = [_sample(i, f"c{i % 2}") for i in range(10)]
    want = [r.text for r in tiny.generate(samples, ctx, GREEDY)]
    tiny._prefix_ids, tiny._prefix_kv = [], None
    real = tiny.model.generate
    batches: list[int] = []

    def oom_over_two(*args, **kwargs):
        batches.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 33.92 GiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(tiny.model, "generate", oom_over_two)
    out = tiny.generate(samples, ctx, GREEDY)
    assert [r.error for r in out] == [None] * 10
    assert [r.text for r in out] == want  # same samples, same answers after the retries
    assert max(batches) == 5 and batches.count(5) == 2  # 5 -> 3 + 2 -> ... per context
    assert all(b <= 2 for b in batches if b not in (5, 3))


def test_out_of_memory_in_one_forward_of_the_prefill(tiny: HFBackend, monkeypatch) -> None:
    # An injected OOM in one forward pass (the context's prefill) is retried, nothing is lost.
    ctx = {"c0": _context(400)}
    samples = [_sample(i) for i in range(4)]
    real = tiny.model.forward
    state = {"raised": False}

    def once(*args, **kwargs):
        if not state["raised"]:
            state["raised"] = True
            raise torch.OutOfMemoryError("CUDA out of memory (injected)")
        return real(*args, **kwargs)

    monkeypatch.setattr(tiny.model, "forward", once)
    out = tiny.generate(samples, ctx, GREEDY)
    assert state["raised"] and [r.error for r in out] == [None] * 4
    assert all(r.completion_tokens > 0 for r in out)


def test_a_row_that_runs_out_of_memory_alone_is_an_error_with_its_length(
    tiny: HFBackend, monkeypatch
) -> None:
    ctx = {"c0": _context(300)}

    def always(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(tiny.model, "generate", always)
    out = tiny.generate([_sample(0), _sample(1)], ctx, GREEDY)
    assert [r.finish_reason for r in out] == ["error", "error"]
    assert "out of memory answering alone: prompt" in (out[0].error or "")
    assert "tokens" in (out[0].error or "") and "on cpu" in (out[0].error or "")


def test_batch_size_from_free_gpu_memory(tiny: HFBackend, monkeypatch) -> None:
    # On a GPU the rows of a batch are sized from free memory: the shared context counted once,
    # then each row's own tokens, activations and logits (a user's batch_size is kept as is).
    tiny.auto_batch, tiny.batch_size = True, 64
    gib = 2**30
    monkeypatch.setattr(tiny, "free_memory", lambda: (3 * gib, 80 * gib))
    row = tiny.row_bytes(300, 64)
    fit = tiny.rows_that_fit(0, 300, 64)
    assert fit == min(64, max(1, (gib - tiny.row_bytes(0, 0)) // row))
    assert tiny.rows_that_fit(10**9, 300, 64) == 1  # never below one row
    tiny.auto_batch = False
    tiny.batch_size = 8
    assert tiny.rows_that_fit(0, 300, 64) == 8


def test_cascade_attention_equals_full_attention() -> None:
    # The prefix part (rows folded, no mask) merged with each row's masked own part equals one
    # softmax over [prefix | own] with the same mask, for grouped heads and padded rows.
    torch.manual_seed(0)
    b, h, hkv, d, p, s, q = 3, 4, 2, 16, 40, 7, 3
    query = torch.randn(b, h, q, d)
    pk, pv = torch.randn(1, hkv, p, d), torch.randn(1, hkv, p, d)
    k, v = torch.randn(b, hkv, s, d), torch.randn(b, hkv, s, d)
    own = torch.ones(b, 1, q, s, dtype=torch.bool).tril(diagonal=s - q)
    own[1, :, :, :2] = False  # row 1 is left-padded by two tokens
    setattr(k, hf_attention.PREFIX_ATTR, (pk, pv))
    module = torch.nn.Module()
    module.num_key_value_groups = h // hkv
    got, _ = hf_attention.cascade_attention(module, query, k, v, own, scaling=d**-0.5)
    full_k = torch.cat([pk.expand(b, -1, -1, -1), k], 2).repeat_interleave(h // hkv, 1)
    full_v = torch.cat([pv.expand(b, -1, -1, -1), v], 2).repeat_interleave(h // hkv, 1)
    full_mask = torch.cat([torch.ones(b, 1, q, p, dtype=torch.bool), own], -1)
    want = torch.nn.functional.scaled_dot_product_attention(
        query, full_k, full_v, attn_mask=full_mask, scale=d**-0.5
    ).transpose(1, 2)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_unfused_fallback_equals_fused(monkeypatch, causal: bool) -> None:
    torch.manual_seed(1)
    n = 33 if causal else 70
    q, k, v = torch.randn(1, 2, 33, 16), torch.randn(1, 2, n, 16), torch.randn(1, 2, n, 16)
    fused = hf_attention.lse_attention(q, k, v, 0.25, causal)
    monkeypatch.setattr(hf_attention, "SCORE_BLOCK_BYTES", 4 * 2 * n * 5)  # blocks of 5 rows
    manual = hf_attention.manual_lse_attention(q, k, v, 0.25, causal)
    torch.testing.assert_close(fused[0], manual[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fused[1], manual[1], atol=1e-5, rtol=1e-5)
    if causal:  # and both equal torch's own causal attention
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
        torch.testing.assert_close(manual[0], want, atol=1e-5, rtol=1e-5)


PEAK_SCRIPT = textwrap.dedent(
    """
    import json, sys, torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from lceval.models.hf import HFBackend
    from lceval.models.base import GenerationConfig
    from lceval.core.records import Context, Sample

    src, out = sys.argv[1], sys.argv[2]
    tok = AutoTokenizer.from_pretrained(src)
    cfg = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=32768, tie_word_embeddings=False,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    backend = HFBackend(out, device="cpu", max_batch_rows=1)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    text = " ".join(words[(i * 7) % 10] for i in range(11_700))
    ctx = {"c0": Context("c0", text, 0, "o200k_base")}
    s = Sample(id="s0", benchmark="t", task="T", instruction="Answer.", context_id="c0",
               max_new_tokens=4)
    (r,) = backend.generate([s], ctx, GenerationConfig())
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print(json.dumps({"prompt_tokens": r.prompt_tokens, "error": r.error, "peak_kb": hwm}))
    """
)


@pytest.mark.slow
def test_16k_prompt_peak_memory_on_cpu(embedded_model_dir: Path, tmp_path: Path) -> None:
    # Issue bound: a 16k-token prompt on a 2-layer random Llama with a 49,152-token vocabulary
    # (25 MB of weights) peaks under 1.8 GB RSS (3.4 GB before: logits over the whole prompt).
    if not Path("/proc/self/status").exists():
        pytest.skip("peak RSS is read from /proc")
    res = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, str(embedded_model_dir), str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["error"] is None and 16_000 <= got["prompt_tokens"] < 17_000
    assert got["peak_kb"] < 1.8 * 2**20, got
