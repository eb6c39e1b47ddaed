"""RoPE overrides (lceval.models.rope) and their use by the hf and vllm backends: the base reaches
the model config, changes the logits, joins the cache key; the checkpoint's own base reproduces
the unmodified model."""

from __future__ import annotations

import math
import types
from pathlib import Path

import pytest
import torch

from lceval.core.errors import LcevalError
from lceval.models.base import GenerationConfig, check_backend_options
from lceval.models.generate import engine_config
from lceval.models.rope import (
    apply_rope,
    checkpoint_rope,
    for_vllm,
    ntk_aware_base,
    parse_rope_scaling,
    resolve_rope,
    rotary_dim,
)


def _llama_config(theta: float = 10000.0, max_pos: int = 4096):
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=256,
        num_attention_heads=2,
        num_key_value_heads=2,
        num_hidden_layers=1,
        intermediate_size=64,
        vocab_size=100,
        max_position_embeddings=max_pos,
        rope_theta=theta,
    )


# -- the NTK-aware relation ----------------------------------------------------------------------
def test_ntk_aware_base_matches_the_formula_and_llama2_numbers() -> None:
    # b' = b * s^(d/(d-2)); Llama-2: d = 128, b = 10,000
    assert ntk_aware_base(10000, 2, 128) == pytest.approx(10000 * 2 ** (128 / 126))
    assert ntk_aware_base(10000, 2, 128) == pytest.approx(20221.3, abs=0.1)
    assert ntk_aware_base(10000, 8, 128) == pytest.approx(82685, rel=1e-4)
    assert ntk_aware_base(10000, 1, 128) == 10000
    # The lowest frequency is divided by exactly s, the highest is unchanged.
    d, b, s = 64, 10000.0, 4.0
    nb = ntk_aware_base(b, s, d)
    low = (1 / b ** ((d - 2) / d)) / (1 / nb ** ((d - 2) / d))
    assert low == pytest.approx(s)
    with pytest.raises(LcevalError, match="rotary dimension"):
        ntk_aware_base(10000, 2, 2)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (None, None),
        ("ntk:4", ("ntk", 4.0, None)),
        ({"type": "dynamic", "factor": 2}, ("dynamic", 2.0, None)),
        (
            {"rope_type": "linear", "factor": 2.5, "original_max_position_embeddings": 2048},
            ("linear", 2.5, 2048),
        ),
    ],
)
def test_parse_rope_scaling(spec, want) -> None:
    got = parse_rope_scaling(spec)
    if want is None:
        assert got is None
    else:
        assert (got.type, got.factor, got.original_max_position_embeddings) == want


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ntk", "TYPE:FACTOR"),
        ("ntk:x", "factor must be a number"),
        ({"type": "yarn", "factor": 2}, "type must be one of ntk, dynamic, linear"),
        ({"type": "ntk", "factor": 0}, "factor must be > 0"),
        ({"type": "ntk", "factor": float("inf")}, "factor must be a finite number"),
        ({"type": "ntk", "factor": 2, "beta": 1}, "unknown parameter 'beta'"),
        (
            {"type": "linear", "factor": 2, "original_max_position_embeddings": 0},
            "original_max_position_embeddings must be >= 1",
        ),
        (3, "TYPE:FACTOR"),
    ],
)
def test_bad_scaling_specs(spec, message) -> None:
    with pytest.raises(LcevalError, match=message):
        parse_rope_scaling(spec)


def test_resolve_rope_effective_parameters() -> None:
    cfg = _llama_config()
    assert rotary_dim(cfg) == 128
    assert checkpoint_rope(cfg) == {"rope_type": "default", "rope_theta": 10000.0}
    same = resolve_rope(cfg, rope_theta=10000)
    assert not same.changed and same.cache_field() is None and same.config_overrides() == {}
    theta = resolve_rope(cfg, rope_theta=40000)
    assert theta.changed and theta.rope_theta == 40000
    assert theta.cache_field() == {"parameters": {"rope_theta": 40000.0, "rope_type": "default"}}
    ntk = resolve_rope(cfg, rope_scaling="ntk:2")
    assert ntk.parameters == {"rope_type": "default", "rope_theta": ntk_aware_base(1e4, 2, 128)}
    assert ntk.extended_window() == 8192
    dyn = resolve_rope(cfg, rope_theta=20000, rope_scaling={"type": "dynamic", "factor": 2})
    assert dyn.parameters == {"rope_type": "dynamic", "rope_theta": 20000.0, "factor": 2.0}
    lin = resolve_rope(
        cfg, rope_scaling={"type": "linear", "factor": 4, "original_max_position_embeddings": 2048}
    )
    assert lin.max_position_embeddings == 2048 and lin.extended_window() == 8192
    assert lin.config_overrides()["max_position_embeddings"] == 2048
    record = theta.record()
    assert record["checkpoint"]["rope_theta"] == 10000.0 and record["changed"] is True
    assert record["spec"] == {"rope_theta": 40000.0}
    for bad in (-1, 1, float("inf")):  # the base is checked with the options, before loading
        with pytest.raises(LcevalError, match="option rope_theta"):
            check_backend_options("vllm", {"rope_theta": bad})


def test_apply_rope_sets_and_validates_the_transformers_config() -> None:
    cfg = _llama_config()
    apply_rope(cfg, resolve_rope(cfg, rope_scaling="dynamic:3"))
    assert cfg.rope_parameters == {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 3.0}


def test_transformers_4_layout() -> None:
    """A config with ``rope_theta`` / ``rope_scaling`` attributes (transformers 4.x)."""
    cfg = types.SimpleNamespace(
        hidden_size=256,
        num_attention_heads=2,
        head_dim=128,
        max_position_embeddings=4096,
        rope_theta=10000.0,
        rope_scaling=None,
    )
    rope = resolve_rope(cfg, rope_scaling="linear:2")
    assert rope.config_overrides() == {
        "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
    }
    apply_rope(cfg, rope)
    assert cfg.rope_scaling == {"rope_type": "linear", "factor": 2.0}
    assert resolve_rope(cfg, rope_theta=5e4).config_overrides()["rope_theta"] == 5e4


def test_vllm_overrides_cover_the_window() -> None:
    cfg = _llama_config()
    rope, window = for_vllm(cfg, 80000, None, 16384)
    assert window == 16384
    assert rope.config_overrides() == {
        "rope_parameters": {"rope_type": "default", "rope_theta": 80000.0},
        "max_position_embeddings": 16384,
    }
    rope, window = for_vllm(cfg, None, "ntk:2", None)
    assert window == 8192 and rope.max_position_embeddings == 8192
    rope, window = for_vllm(cfg, None, "dynamic:2", None)
    assert window == 8192
    assert rope.parameters["max_trained_positions"] == 4096
    assert rope.config_overrides()["max_position_embeddings"] == 8192
    rope, window = for_vllm(cfg, None, "linear:2", None)
    assert window is None and "max_position_embeddings" not in rope.config_overrides()
    rope, window = for_vllm(cfg, 10000, None, None)
    assert not rope.changed and window is None


def test_backend_options_are_declared_and_typed() -> None:
    check_backend_options("hf", {"rope_theta": 20000, "rope_scaling": {"type": "ntk", "factor": 2}})
    check_backend_options("hf", {"rope_scaling": "dynamic:2"})
    with pytest.raises(LcevalError, match="rope_theta"):
        check_backend_options("hf", {"rope_theta": "big"})


# -- the hf backend on the tiny random Llama (fast) -------------------------------------------
PROMPT = list(range(5, 905))


def _logits(backend, ids=PROMPT) -> torch.Tensor:
    with torch.inference_mode():
        return backend.model(torch.tensor([ids])).logits[0]


def test_hf_backend_overrides_theta_through_the_config(tiny_model_dir: Path) -> None:
    from lceval.models.hf import HFBackend

    plain = HFBackend(str(tiny_model_dir), device="cpu")
    own = HFBackend(str(tiny_model_dir), device="cpu", rope_theta=10000)
    other = HFBackend(str(tiny_model_dir), device="cpu", rope_theta=500)
    assert other.model.config.rope_parameters["rope_theta"] == 500
    dim = rotary_dim(other.model.config)
    want = 1.0 / 500 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)
    assert torch.allclose(other.model.model.rotary_emb.inv_freq, want)
    # The checkpoint's own base reproduces the unmodified model and keys like it.
    assert torch.equal(_logits(plain), _logits(own))
    assert own.cache_fields == plain.cache_fields
    # Another base changes the logits and the response cache key.
    assert not torch.allclose(_logits(plain), _logits(other))
    cfg = GenerationConfig()
    assert engine_config(other, cfg).hash() != engine_config(plain, cfg).hash()
    assert other.cache_fields["rope"]["parameters"]["rope_theta"] == 500
    assert other.info()["rope"]["rope_theta"] == 500
    assert plain.info()["rope"]["changed"] is False


def test_hf_backend_scaling_specs(tiny_model_dir: Path) -> None:
    from lceval.models.hf import HFBackend

    dyn = HFBackend(str(tiny_model_dir), device="cpu", rope_scaling="dynamic:2")
    assert dyn.model.config.rope_parameters["rope_type"] == "dynamic"
    assert dyn.window == 2048 and dyn.share_prefix is False
    ntk = HFBackend(str(tiny_model_dir), device="cpu", rope_scaling={"type": "ntk", "factor": 4})
    dim = rotary_dim(ntk.model.config)
    assert ntk.model.config.rope_parameters["rope_theta"] == pytest.approx(
        ntk_aware_base(10000, 4, dim)
    )
    lin = HFBackend(str(tiny_model_dir), device="cpu", rope_scaling="linear:2", window=1500)
    assert lin.window == 1500
    assert not torch.allclose(_logits(lin), _logits(ntk))


# -- the real embedded model ---------------------------------------------------------------------
@pytest.mark.slow
def test_embedded_smollm2_two_bases_give_different_logits_on_a_long_prompt() -> None:
    from lceval.models.hf import HFBackend

    text = " ".join(f"Item {i} is stored in box {i * 7 % 97}." for i in range(120))
    plain = HFBackend(None, device="cpu", num_threads=1)
    ids = plain.tokenizer(text)["input_ids"]
    assert len(ids) > 1000
    base = _logits(plain, ids)
    default = HFBackend(None, device="cpu", rope_theta=plain.rope.checkpoint["rope_theta"])
    assert default.model.config.rope_parameters == plain.model.config.rope_parameters
    assert torch.equal(_logits(default, ids), base)
    assert default.cache_fields == plain.cache_fields
    del default
    moved = HFBackend(None, device="cpu", rope_theta=10000)
    assert moved.model.config.rope_parameters["rope_theta"] == 10000
    other = _logits(moved, ids)
    assert not torch.allclose(other, base, atol=1e-3)
    assert (other.argmax(-1) != base.argmax(-1)).any()  # different next-token predictions
    cfg = GenerationConfig()
    assert engine_config(moved, cfg).hash() != engine_config(plain, cfg).hash()
    assert math.isclose(moved.info()["rope"]["rope_theta"], 10000)


@pytest.mark.engine
def test_vllm_engine_gets_the_override(tiny_model_dir: Path) -> None:
    pytest.importorskip("vllm")
    from lceval.models.vllm import VLLMBackend

    engine = VLLMBackend(str(tiny_model_dir), dtype="float32", rope_theta=40000, max_model_len=2048)
    try:
        hf_config = engine.llm.llm_engine.model_config.hf_config
        assert hf_config.rope_parameters["rope_theta"] == 40000
        assert hf_config.max_position_embeddings == 2048 and engine.window == 2048
        assert engine.cache_fields["rope"]["parameters"]["rope_theta"] == 40000
        assert engine.info()["rope"]["checkpoint"]["rope_theta"] == 10000
    finally:
        engine.close()
