"""Backends registered lazily by name; options checked before anything loads; plain prompts for
base models (no chat template)."""

from __future__ import annotations

import sys

import pytest

from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.models import base
from lceval.models.base import GenerationConfig, backend_options, check_backend_options
from lceval.models.prompts import plain_text, render_chat_prompt


def test_base_imports_no_backend():
    heavy = "('lceval.models.hf', 'lceval.models.vllm', 'lceval.models.openai', 'torch')"
    code = f"import lceval.models.base, sys; print(any(m in sys.modules for m in {heavy}))"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_options_are_declared_in_one_entry_per_backend():
    """Each backend's options are a declared type (types, ranges, help), and what it can do is
    declared beside them; no constructor source is read."""
    import inspect

    from lceval.models.backends import BACKENDS, HFOptions

    opts = backend_options("hf")
    assert {"device", "dtype", "max_batch_rows", "window", "prompt_format"} <= set(opts)
    assert "model" not in opts and "batch_size" not in opts
    hf, api = BACKENDS["hf"], BACKENDS["openai"]
    assert hf.options is HFOptions and hf.local and hf.window_option == "window"
    assert not api.local and api.window_option is None and not api.prefix_counters
    schema = HFOptions.model_json_schema()["properties"]["prefill_chunk"]
    assert {"minimum": 16, "type": "integer"} in schema["anyOf"]
    # the engine takes the declared options as one typed object, not a second list of
    # keywords (reads the real class); keywords are parsed into the same object
    from lceval.models.hf import HFBackend

    params = inspect.signature(HFBackend.__init__).parameters
    assert "HFOptions" in str(params["options"].annotation)
    assert not set(HFOptions.model_fields) & set(params)


@pytest.mark.parametrize(
    ("backend", "options", "message"),
    [
        ("hf", {"bogus": 1}, "backend hf has no option 'bogus'; all "),
        (
            "hf",
            {"prefill_chunk": "x"},
            "backend hf option prefill_chunk must be an integer, got 'x'",
        ),
        ("hf", {"prefill_chunk": 8}, "backend hf option prefill_chunk must be >= 16, got 8"),
        ("hf", {"num_threads": True}, "backend hf option num_threads must be an integer, got True"),
        ("hf", {"batch_size": 4}, "backend hf option batch_size is now max_batch_rows"),
        (
            "hf",
            {"device": "tpu"},
            "backend hf option device must match .*, got 'tpu'",
        ),
        ("openai", {"timeout": 0}, "backend openai option timeout must be > 0.0, got 0"),
        ("openai", {"bogus": 1}, "backend openai has no option 'bogus'"),
        ("tgi", {}, "unknown backend 'tgi'; choose one of hf, vllm, openai"),
    ],
)
def test_bad_options_are_refused_before_loading(backend, options, message):
    with pytest.raises(LcevalError, match=message.replace("(", r"\(")):
        check_backend_options(backend, options)
    with pytest.raises(LcevalError):
        base.load_backend(backend, "/no/such/model", **options)


def _sample(**kw):
    return Sample(id="s", benchmark="ruler", task="t", instruction="Answer:", **kw)


def test_plain_text_layout():
    s = _sample(description="Read.", assistant_prefix="The answer is")
    assert plain_text(s, "CTX") == "Read.\n\nCTX\n\nAnswer:\nThe answer is"
    h = _sample(history=({"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}))
    assert plain_text(h, "") == "hi\n\nyo\n\nAnswer:"


def test_auto_format_sends_plain_text_to_a_base_tokenizer(tiny_base_model_dir, tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_base_model_dir)
    assert not tok.chat_template
    s = _sample(description="Read.")
    p = render_chat_prompt(tok, s, "some context " * 5, 1024, 16, "auto")
    assert p.text == plain_text(s, "some context " * 5) and p.truncated_tokens == 0
    with pytest.raises(LcevalError, match="has no chat template; use prompt_format=plain"):
        render_chat_prompt(tok, s, "x", 1024, 16, "chat")
    # right-truncation of the context also works in plain text
    p = render_chat_prompt(tok, s, "word " * 2000, 256, 16, "plain")
    assert p.n_tokens <= 240 and p.truncated_tokens > 0 and p.text.endswith("Answer:")
    chat = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert "<|im_start|>" in render_chat_prompt(chat, s, "x", 1024, 16, "auto").text


@pytest.mark.slow
def test_base_model_runs_end_to_end_with_plain_prompts(tiny_base_model_dir, tmp_path):
    from lceval.core.store import ResponseStore
    from lceval.models.generate import generate

    backend = base.load_backend("hf", str(tiny_base_model_dir), device="cpu")
    try:
        assert backend.info()["prompt_format"] == "plain"
        store = ResponseStore(tmp_path / "r.jsonl")
        out = generate(
            backend,
            [_sample()],
            {},
            GenerationConfig(max_new_tokens=4),
            store=store,
            progress=False,
        )
        assert out[0].finish_reason != "error" and out[0].completion_tokens > 0
        # plain prompts are part of the cache key: a chat-format config never matches them
        assert out[0].config_hash != GenerationConfig(max_new_tokens=4).hash()
        assert store.done(backend.name, out[0].config_hash) == {"s"}
    finally:
        backend.close()
