"""A checkpoint's window, read by one rule (``lceval.models.specs.model_window``) from a config
object or config.json, its text config, or the tokenizer."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from lceval.core.errors import LcevalError
from lceval.models.specs import ModelSpec, declared_window, model_window, window_config


def test_one_rule_for_objects_dicts_text_configs_and_tokenizers() -> None:
    assert model_window({"max_position_embeddings": 4096}) == 4096
    assert model_window(SimpleNamespace(max_position_embeddings=2048)) == 2048
    multimodal = {"vision_config": {}, "text_config": {"max_position_embeddings": 8192}}
    assert model_window(multimodal) == 8192
    assert window_config(multimodal) == multimodal["text_config"]
    assert model_window(SimpleNamespace(), SimpleNamespace(model_max_length=512)) == 512
    assert window_config({"max_position_embeddings": True}) is None  # a bool is no window
    with pytest.raises(LcevalError, match="cannot tell the model's context window"):
        model_window(SimpleNamespace(), SimpleNamespace(model_max_length=10**30))


def test_declared_window_reads_the_same_rule_and_the_scaling(tmp_path) -> None:
    config = {"text_config": {"max_position_embeddings": 4096, "rope_scaling": None}}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    spec = ModelSpec(model=str(tmp_path), backend="hf", options={}, name="m")
    assert declared_window(spec, tmp_path) == (4096, "config max_position_embeddings")
    linear = {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 4}}
    (tmp_path / "config.json").write_text(json.dumps(linear), encoding="utf-8")
    assert declared_window(spec, tmp_path)[0] == 16384
