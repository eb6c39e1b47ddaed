"""Prompt log-probabilities: hf on the tiny random Llama (checked against a plain forward pass),
and vLLM on the embedded SmolLM2 against hf (slow)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from lceval.core.errors import LcevalError
from lceval.models.hf import HFBackend
from lceval.models.logprobs import backend_kind, prompt_logprobs

TEXTS = ["alpha beta gamma delta epsilon", "the sky is blue and the grass is green"]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path) -> HFBackend:
    return HFBackend(str(tiny_model_dir), device="cpu")


def _reference(backend: HFBackend, ids: list[int], start: int):
    with torch.inference_mode():
        logits = backend.model(torch.tensor([ids])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    target = torch.tensor(ids[start:])
    lp = logp[start - 1 : -1].gather(1, target[:, None])[:, 0]
    p = logp[start - 1 : -1].exp()
    mu = (p * logp[start - 1 : -1]).sum(-1)
    var = (p * logp[start - 1 : -1] ** 2).sum(-1) - mu**2
    return lp.numpy(), mu.numpy(), var.clamp_min(0).sqrt().numpy()


def test_matches_a_plain_forward_pass(tiny: HFBackend) -> None:
    out = prompt_logprobs(tiny, TEXTS)
    tok = tiny.tokenizer
    for text, got in zip(TEXTS, out, strict=True):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert got.token_ids == tuple(ids[1:])  # no BOS: the first token is not scored
        lp, mu, sd = _reference(tiny, ids, 1)
        np.testing.assert_allclose(got.logprobs, lp, atol=1e-4)
        np.testing.assert_allclose(got.mean, mu, atol=1e-4)
        np.testing.assert_allclose(got.std, sd, atol=1e-4)
        assert got.engine == "hf" and got.truncated == 0
        assert np.all(got.logprobs <= 0)


def test_prefix_is_not_scored(tiny: HFBackend) -> None:
    tok = tiny.tokenizer
    [got] = prompt_logprobs(tiny, ["delta epsilon"], ["alpha beta gamma "])
    head = tok("alpha beta gamma ", add_special_tokens=False)["input_ids"]
    body = tok("delta epsilon", add_special_tokens=False)["input_ids"]
    assert got.token_ids == tuple(body)
    lp, _, _ = _reference(tiny, head + body, len(head))
    np.testing.assert_allclose(got.logprobs, lp, atol=1e-4)
    [plain] = prompt_logprobs(tiny, ["delta epsilon"], distribution=False)
    assert plain.mean is None and plain.std is None


def test_lone_surrogates_are_scored_as_replacement_characters(tiny: HFBackend) -> None:
    [got] = prompt_logprobs(tiny, ["alpha \ud800 beta"])
    [want] = prompt_logprobs(tiny, ["alpha ? beta"])
    assert got.token_ids == want.token_ids
    np.testing.assert_allclose(got.logprobs, want.logprobs)


def test_chunking_and_window(tiny: HFBackend) -> None:
    text = " ".join(["word"] * 40)
    a = prompt_logprobs(tiny, [text])[0]
    b = prompt_logprobs(tiny, [text], chunk=7)[0]
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)
    np.testing.assert_allclose(a.std, b.std, atol=1e-5)
    cut = prompt_logprobs(tiny, [text], window=10)[0]
    assert len(cut.token_ids) == 9 and cut.truncated == len(a.token_ids) + 1 - 10
    np.testing.assert_allclose(cut.logprobs, a.logprobs[:9], atol=1e-4)


def test_errors(tiny_model_dir: Path, tiny: HFBackend) -> None:
    with pytest.raises(LcevalError, match="no tokens"):
        prompt_logprobs(tiny, [""])
    with pytest.raises(LcevalError, match="differ in length"):
        prompt_logprobs(tiny, ["a"], ["x", "y"])
    with pytest.raises(LcevalError, match="fills the window"):
        prompt_logprobs(tiny, ["a"], ["one two three four"], window=3)
    with pytest.raises(LcevalError, match="no scorable token"):
        prompt_logprobs(tiny, ["hello"])  # one token, no BOS
    with pytest.raises(LcevalError, match="must be lists of strings"):
        prompt_logprobs(tiny, "alpha beta")  # type: ignore[arg-type]
    with pytest.raises(LcevalError, match="every prefix must be a string"):
        prompt_logprobs(tiny, ["alpha beta"], [5])  # type: ignore[list-item]
    with pytest.raises(LcevalError, match="window must be an integer"):
        prompt_logprobs(tiny, ["alpha beta"], window="x")  # type: ignore[arg-type]
    closed = HFBackend(str(tiny_model_dir), device="cpu")
    closed.close()
    with pytest.raises(LcevalError, match="only loaded hf and vllm"):
        backend_kind(closed)

    class Api:
        name = "openai-model"

    with pytest.raises(LcevalError, match="openai-model gives no prompt log-probabilities"):
        prompt_logprobs(Api(), ["a b"])


@pytest.mark.engine
def test_vllm_prompt_logprobs_match_hf(embedded_model_dir: Path) -> None:
    """vLLM (``SamplingParams(prompt_logprobs=0)``) and hf agree on the embedded model."""
    pytest.importorskip("vllm")
    from lceval.models.base import load_backend

    texts = ["The capital of France is Paris.", "Once upon a time there was a small cat."]
    hf = HFBackend(str(embedded_model_dir), device="cpu", dtype="float32")
    try:
        want = prompt_logprobs(hf, texts)
    finally:
        hf.close()
    engine = load_backend("vllm", str(embedded_model_dir), max_model_len=256, dtype="float32")
    try:
        assert backend_kind(engine) == "vllm"
        got = prompt_logprobs(engine, texts)
    finally:
        engine.close()
    for g, w in zip(got, want, strict=True):
        assert g.token_ids == w.token_ids and g.engine == "vllm"
        assert g.mean is None and g.std is None  # vLLM returns no full distribution
        np.testing.assert_allclose(g.logprobs, w.logprobs, atol=0.05)
