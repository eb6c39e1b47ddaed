"""HFBackend on the tiny random Llama (fast) and the embedded SmolLM2 (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lceval.core.records import Context, Sample
from lceval.models import hf as hf_module
from lceval.models.base import GenerationConfig, load_backend
from lceval.models.hf import OWN_BATCH_PREFIX, HFBackend, common_prefix_len

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def _text(n_words: int, seed: int) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n_words))


def _sample(i: int, context_id: str | None = "c0", **kw: object) -> Sample:
    base: dict = dict(
        id=f"s{i}",
        benchmark="test",
        task="T",
        instruction=f"Question {i}: list the {WORDS[i % len(WORDS)]} items.",
        context_id=context_id,
        description="Scenario description.",
        max_new_tokens=12,
    )
    base.update(kw)
    return Sample(**base)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path) -> HFBackend:
    return HFBackend(str(tiny_model_dir), device="cpu", max_batch_rows=4)


@pytest.fixture(scope="module")
def contexts() -> dict[str, Context]:
    return {f"c{k}": Context(f"c{k}", _text(60 + 40 * k, k), 0, "o200k_base") for k in range(3)}


GREEDY = GenerationConfig()


def _one_by_one(backend: HFBackend, samples, contexts, config=GREEDY):
    return [backend.generate([s], contexts, config)[0] for s in samples]


def test_batched_equals_one_by_one(tiny: HFBackend, contexts) -> None:
    # Different contexts (no shared prefix beyond the chat header) and prompt lengths: left padding.
    samples = [_sample(i, f"c{i % 3}") for i in range(6)]
    tiny.share_prefix = False
    batched = tiny.generate(samples, contexts, GREEDY)
    single = _one_by_one(tiny, samples, contexts)
    assert [r.sample_id for r in batched] == [s.id for s in samples]
    assert [r.text for r in batched] == [r.text for r in single]
    assert [r.completion_tokens for r in batched] == [r.completion_tokens for r in single]
    assert all(r.text and r.prompt_tokens > 50 for r in batched)
    assert len({r.text for r in batched}) > 1


def test_shared_prefix_equals_plain_batch(tiny: HFBackend, contexts) -> None:
    # Same long context, different instructions: the common prefix is encoded once.
    samples = [_sample(i, "c2", description="") for i in range(4)]
    ids = [tiny.tokenizer(tiny.render(s, contexts, GREEDY).text)["input_ids"] for s in samples]
    assert common_prefix_len(ids) > 100
    tiny.share_prefix = True
    shared = tiny.generate(samples, contexts, GREEDY)
    tiny.share_prefix = False
    plain = tiny.generate(samples, contexts, GREEDY)
    single = _one_by_one(tiny, samples, contexts)
    assert [r.text for r in shared] == [r.text for r in plain] == [r.text for r in single]


def test_prefix_kept_across_calls_and_batches(tiny_model_dir: Path) -> None:
    # Two long contexts, answered in calls of 3 and batches of 2 (samples of a context split over
    # calls and batches, as lceval.models.generate sends them): each context is encoded once.
    ctx = {k: Context(k, _text(300, j), 0, "o200k_base") for j, k in enumerate(("A", "B"))}
    samples = [_sample(i, "A" if i < 5 else "B", max_new_tokens=8) for i in range(9)]
    kept = HFBackend(str(tiny_model_dir), device="cpu", max_batch_rows=2)
    shared = [r for k in range(0, 9, 3) for r in kept.generate(samples[k : k + 3], ctx, GREEDY)]
    plain_backend = HFBackend(
        str(tiny_model_dir), device="cpu", max_batch_rows=2, share_prefix=False
    )
    plain = plain_backend.generate(samples, ctx, GREEDY)
    assert [r.text for r in shared] == [r.text for r in plain]
    assert [r.completion_tokens for r in shared] == [r.completion_tokens for r in plain]
    assert [r.sample_id for r in shared] == [s.id for s in samples]
    # Prompt tokens: each context's common prefix once, then every sample's own suffix.
    bound = 0
    for group in (samples[:5], samples[5:]):
        ids = [kept.tokenizer(kept.render(s, ctx, GREEDY).text)["input_ids"] for s in group]
        common = common_prefix_len(ids)
        assert common > OWN_BATCH_PREFIX
        bound += common + sum(len(x) - common for x in ids)
    requested = sum(r.prompt_tokens for r in shared)
    assert kept.prompt_tokens_requested == requested == plain_backend.prompt_tokens_requested
    assert kept.prompt_tokens_computed <= bound < 0.4 * requested
    assert plain_backend.prompt_tokens_computed == requested


def test_plan_keeps_shared_contexts_in_their_own_batches(tiny: HFBackend) -> None:
    ctx = {
        "A": Context("A", _text(300, 0), 0, "o200k_base"),
        "B": Context("B", _text(300, 1), 0, "o200k_base"),
        "c": Context("c", "short", 0, "o200k_base"),
        "d": Context("d", "other", 0, "o200k_base"),
    }
    samples = [
        _sample(0, "A"),
        _sample(1, "c"),
        _sample(2, "A"),
        _sample(3, "B"),
        _sample(4, "d"),
        _sample(5, "B"),
        _sample(6, "A", max_new_tokens=4),
    ]
    rows = []
    for i, s in enumerate(samples):
        rows.append(hf_module._Row(i, s, tiny.render(s, ctx, GREEDY)))
    tiny.share_prefix = True
    tiny._prefix_ids, tiny._prefix_kv = [], None
    plan = [[r.sample.id for r in b] for b in tiny._plan(rows)]
    # A (budget 4) is a single row with no kept cache: batched with the short contexts.
    assert plan == [["s0", "s2"], ["s3", "s5"], ["s6", "s1", "s4"]]
    tiny.share_prefix = False
    assert [[r.sample.id for r in b] for b in tiny._plan(rows)] == [
        ["s6", "s0", "s2", "s3"],
        ["s5", "s1", "s4"],
    ]


def test_equals_stock_transformers_generate(
    tiny: HFBackend, tiny_model_dir: Path, contexts
) -> None:
    # The CPU attention (grouped heads left grouped) and the key/value buffers with room give
    # the tokens of transformers' own sdpa attention and DynamicCache on a left-padded batch.
    import torch
    from transformers import AutoModelForCausalLM

    assert tiny.model.config._attn_implementation == hf_module.ATTENTION
    stock = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    assert stock.config._attn_implementation == "sdpa"
    samples = [_sample(i, f"c{i % 3}", max_new_tokens=12) for i in range(4)]
    enc = [tiny.tokenizer(tiny.render(s, contexts, GREEDY).text)["input_ids"] for s in samples]
    width = max(len(e) for e in enc)
    input_ids = torch.tensor([[tiny.pad_id] * (width - len(e)) + e for e in enc])
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in enc])
    with torch.inference_mode():
        out = stock.generate(
            input_ids=input_ids,
            attention_mask=mask,
            max_new_tokens=12,
            do_sample=False,
            pad_token_id=tiny.pad_id,
            eos_token_id=sorted(tiny.eos_ids),
        )
    want = []
    for row in out[:, width:].tolist():
        end = next((j for j, t in enumerate(row) if t in tiny.eos_ids), len(row))
        want.append(tiny.tokenizer.decode(row[:end], skip_special_tokens=True))
    for share in (False, True):
        tiny.share_prefix = share
        assert [r.text for r in tiny.generate(samples, contexts, GREEDY)] == want


def test_cache_fields_name_engine_and_dtype(tiny: HFBackend, tiny_base_model_dir: Path) -> None:
    assert tiny.cache_fields == {"engine": "hf", "dtype": "float32"}
    base = HFBackend(str(tiny_base_model_dir), device="cpu", dtype="bfloat16")
    assert base.cache_fields == {"engine": "hf", "dtype": "bfloat16", "prompt_format": "plain"}


def test_common_prefix_len() -> None:
    assert common_prefix_len([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_len([[5, 6], [5, 6]]) == 2
    assert common_prefix_len([[1], [2]]) == 0
    assert common_prefix_len([]) == 0


def test_per_sample_budgets_and_config_cap(tiny: HFBackend, contexts) -> None:
    samples = [_sample(i, max_new_tokens=b) for i, b in enumerate([3, 9, 5, 14])]
    out = tiny.generate(samples, contexts, GREEDY)
    assert [r.completion_tokens for r in out] == [3, 9, 5, 14]
    assert {r.finish_reason for r in out} == {"length"}
    capped = tiny.generate(samples, contexts, GenerationConfig(max_new_tokens=4))
    assert [r.completion_tokens for r in capped] == [3, 4, 4, 4]
    # Greedy: a shorter budget yields a prefix of the longer answer.
    assert out[3].text.startswith(capped[3].text)


def test_stop_strings_cut_text(tiny: HFBackend, contexts) -> None:
    base = _sample(0, max_new_tokens=20)
    full = tiny.generate([base], contexts, GREEDY)[0]
    assert full.finish_reason == "length" and len(full.text) > 12
    j = next(j for j in range(5, len(full.text) - 3) if full.text[j : j + 3].isascii())
    stop = full.text[j : j + 3]
    want = full.text[: full.text.find(stop)]
    stopped = _sample(0, max_new_tokens=20, stop=("NEVER-APPEARS", stop))
    other = _sample(1, max_new_tokens=20)
    got, got_other = tiny.generate([stopped, other], contexts, GREEDY)
    assert got.text == want
    assert got.finish_reason == "stop"
    assert got.completion_tokens < full.completion_tokens
    assert got_other.finish_reason == "length" and got_other.completion_tokens == 20


def test_truncation_keeps_description_and_instruction(tiny_model_dir: Path) -> None:
    backend = HFBackend(str(tiny_model_dir), device="cpu", window=200)
    ctx = {"long": Context("long", _text(600, 1) + " CONTEXT-END", 0, "o200k_base")}
    s = _sample(
        0,
        "long",
        description="DESCRIPTION-MARKER",
        instruction="INSTRUCTION-MARKER",
        max_new_tokens=10,
    )
    prompt = backend.render(s, ctx, GREEDY)
    assert "DESCRIPTION-MARKER" in prompt.text and "INSTRUCTION-MARKER" in prompt.text
    assert ctx["long"].text[:40] in prompt.text  # the start of the context is kept
    assert "CONTEXT-END" not in prompt.text  # its end is cut
    r = backend.generate([s], ctx, GREEDY)[0]
    assert r.finish_reason == "length"
    assert r.truncated_tokens == prompt.truncated_tokens > 300
    assert r.prompt_tokens == prompt.n_tokens <= 200 - 10


def test_prompt_that_cannot_fit_is_an_error_response(tiny_model_dir: Path, contexts) -> None:
    backend = HFBackend(str(tiny_model_dir), device="cpu", window=120)
    bad = _sample(0, instruction=_text(300, 2), max_new_tokens=10)
    good = _sample(1, context_id=None, max_new_tokens=10)
    zero = _sample(2, context_id=None, max_new_tokens=0)
    r_bad, r_good, r_zero = backend.generate([bad, good, zero], contexts, GREEDY)
    assert r_bad.finish_reason == "error" and "window" in (r_bad.error or "")
    assert r_bad.text == "" and r_bad.sample_id == "s0"
    assert r_good.finish_reason == "length" and r_good.completion_tokens == 10
    assert r_zero.finish_reason == "error" and "budget" in (r_zero.error or "")


def test_sampling_is_seeded(tiny: HFBackend, contexts) -> None:
    samples = [_sample(i, max_new_tokens=10) for i in range(2)]
    a = tiny.generate(samples, contexts, GenerationConfig(temperature=1.0, seed=1))
    b = tiny.generate(samples, contexts, GenerationConfig(temperature=1.0, seed=1))
    c = tiny.generate(samples, contexts, GenerationConfig(temperature=1.0, seed=2))
    greedy = tiny.generate(samples, contexts, GREEDY)
    assert [r.text for r in a] == [r.text for r in b]
    assert [r.text for r in a] != [r.text for r in c]
    assert [r.text for r in a] != [r.text for r in greedy]


def test_responses_record_model_and_config(tiny: HFBackend, tiny_model_dir: Path, contexts) -> None:
    cfg = GenerationConfig(max_new_tokens=3)
    (r,) = tiny.generate([_sample(0)], contexts, cfg)
    assert r.model == str(tiny_model_dir) == tiny.name
    assert r.config_hash == cfg.hash()
    assert r.latency_s > 0
    info = tiny.info()
    assert info["backend"] == "hf" and info["source"] == "local" and info["window"] == 1024


def test_bad_arguments(tiny_model_dir: Path) -> None:
    from lceval.core.errors import LcevalError

    with pytest.raises(LcevalError, match="device"):
        HFBackend(str(tiny_model_dir), device="tpu")
    with pytest.raises(LcevalError, match="dtype"):
        HFBackend(str(tiny_model_dir), dtype="int3")
    with pytest.raises(LcevalError, match="max_batch_rows"):
        HFBackend(str(tiny_model_dir), max_batch_rows=0)
    with pytest.raises(LcevalError, match="does not exist"):
        HFBackend("/no/such/model/dir")
    with pytest.raises(LcevalError, match="no option .prefil_chunk. .did you mean prefill_chunk"):
        HFBackend(str(tiny_model_dir), prefil_chunk=64)  # a misspelt option: one line


def test_options_are_one_typed_object(tiny_model_dir: Path) -> None:
    from lceval.models.backends import HFOptions

    given = HFOptions(device="cpu", max_batch_rows=3, prefill_chunk=64, share_prefix=False)
    b = HFBackend(str(tiny_model_dir), given)
    assert b.options is given
    assert (b.batch_size, b.prefill_chunk, b.share_prefix) == (3, 64, False)
    assert (
        HFBackend(str(tiny_model_dir), device="cpu", max_batch_rows=3).options.max_batch_rows == 3
    )


@pytest.mark.slow
def test_embedded_model_answers_a_chat_prompt() -> None:
    backend = load_backend("hf", None, device="cpu")
    assert backend.name == "SmolLM2-135M-Instruct"
    s = Sample(
        id="q",
        benchmark="test",
        task="chat",
        instruction="What is the capital of France?",
        max_new_tokens=16,
    )
    (r,) = backend.generate([s], {}, GREEDY)
    assert r.finish_reason in ("stop", "length") and r.error is None
    assert r.text.strip() and "Paris" in r.text
    assert 0 < r.completion_tokens <= 16 and r.prompt_tokens > 10
    backend.close()


def test_failed_batch_is_retried_one_by_one(tiny: HFBackend, contexts, monkeypatch) -> None:
    real = tiny.model.generate
    calls: list[int] = []

    def flaky(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > 1:
            raise RuntimeError("out of memory (simulated)")
        if kwargs["input_ids"].shape[1] > 110:  # one prompt still fails on its own
            raise RuntimeError("out of memory (simulated, single)")
        return real(*args, **kwargs)

    monkeypatch.setattr(tiny.model, "generate", flaky)
    samples = [_sample(0, context_id=None), _sample(1, "c2"), _sample(2, context_id=None)]
    out = tiny.generate(samples, contexts, GREEDY)
    assert calls[0] == 3 and calls[1:] == [1, 1, 1]
    assert [r.finish_reason for r in out] == ["length", "error", "length"]
    assert "simulated, single" in (out[1].error or "")
