"""``lceval run PIPELINE -p 'models=[...]'`` keeps each listed model's own options."""

from __future__ import annotations

from pathlib import Path

from lceval.cli.notebooks import with_overrides
from lceval.params import load_params

FULL = Path(__file__).resolve().parents[2] / "params" / "02_inference" / "full.yaml"


def test_a_bare_id_the_params_list_keeps_its_own_options(capsys):
    params = load_params(FULL)
    assert params["backend_options"]["max_model_len"] == 131072
    out = with_overrides(params, {"models": ["Qwen/Qwen2.5-7B-Instruct"]})
    (qwen,) = out["models"]
    assert qwen == {"model": "Qwen/Qwen2.5-7B-Instruct", "options": {"max_model_len": 32768}}
    assert capsys.readouterr().err == ""


def test_an_unlisted_id_is_told_it_inherits_backend_options(capsys):
    params = load_params(FULL)
    out = with_overrides(params, {"models": ["org/new-model", {"model": "x", "options": {}}]})
    assert out["models"] == ["org/new-model", {"model": "x", "options": {}}]
    err = capsys.readouterr().err
    assert "org/new-model is not in this params file's list" in err and "131072" in err
    assert err.count("\n") == 1


def test_other_overrides_pass_through():
    assert with_overrides({"a": 1, "models": None}, {"a": 2}) == {"a": 2, "models": None}
    assert with_overrides({"a": 1}, None) == {"a": 1}
