"""Resumable inference: a SIGKILLed `lceval infer` resumes with no duplicate, no missing answer."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

import lceval.run
import lceval.run.inference
from lceval.core.io import RunDir, new_meta
from lceval.core.records import Context, Response, Sample
from lceval.core.store import ResponseStore
from lceval.models.base import Backend, GenerationConfig
from lceval.models.generate import generate
from lceval.run.inference import select_samples


def run_inference(
    run, backend, config=None, *, batch_size=8, limit=None, tasks=None, progress=True
):
    """Answer the run's pending samples with a backend object (what ``lceval.run.infer`` does
    after loading each model's engine)."""
    samples = select_samples(run, run.read_samples(), limit=limit, tasks=tasks)
    store = ResponseStore(run.responses)
    return generate(
        backend,
        samples,
        run.read_contexts(),
        config,
        store=store,
        batch_size=batch_size,
        progress=progress,
    )


def _samples(n):
    ctx = Context(id="c0", text="Shared context. " * 20, n_tokens=80, encoding="o200k_base")
    samples = [
        Sample(
            id=f"s{i:03d}",
            benchmark="lifbench",
            task="LSI" if i % 2 else "LOI",
            instruction=f"Question number {i}: say something.",
            context_id="c0" if i % 3 else None,
            max_new_tokens=24,
        )
        for i in range(n)
    ]
    return samples, [ctx]


class CountingBackend(Backend):
    """Scripted backend for unit tests: answers with the sample id and counts calls."""

    name = "scripted"

    def __init__(self):
        self.seen = []

    def generate(self, samples, contexts, config):
        self.seen.extend(s.id for s in samples)
        return [
            Response(
                sample_id=s.id,
                model=self.name,
                text=f"answer to {s.id}",
                config_hash=config.hash(),
                completion_tokens=3,
            )
            for s in samples
        ]

    def info(self):
        return {"backend": "scripted"}

    def close(self):
        pass


def test_rerun_skips_finished_samples(tmp_path):
    run = RunDir("r", tmp_path).create()
    samples, contexts = _samples(10)
    run.write_samples(samples, contexts)
    b = CountingBackend()
    out = run_inference(run, b, batch_size=3, limit=2, progress=False)  # 2 per task
    task = {s.id: s.task for s in samples}
    assert Counter(task[r.sample_id] for r in out) == {"LSI": 2, "LOI": 2}
    out = run_inference(run, b, batch_size=3, progress=False)
    assert [r.sample_id for r in out] == [s.id for s in samples]
    assert Counter(b.seen) == Counter(s.id for s in samples)  # nothing answered twice
    # A different config is a different key: answered again.
    run_inference(run, b, GenerationConfig(max_new_tokens=5), progress=False)
    assert len(b.seen) == 20


def test_unknown_task_filter_is_an_error(tmp_path):
    from lceval.core.errors import LcevalError

    run = RunDir("r", tmp_path).create()
    samples, contexts = _samples(3)
    run.write_samples(samples, contexts)
    with pytest.raises(LcevalError, match="task\\(s\\) XYZ not in run"):
        run_inference(run, CountingBackend(), tasks=["XYZ"], progress=False)


def _cli(tmp_path, run_id, model_dir):
    return [
        sys.executable,
        "-m",
        "lceval",
        "--outputs",
        str(tmp_path),
        "infer",
        run_id,
        "--backend",
        "hf",
        "--model",
        str(model_dir),
        "--batch-size",
        "1",
    ]


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.crash
def test_sigkill_during_infer_then_rerun(tmp_path, tiny_model_dir):
    samples, contexts = _samples(40)
    for rid in ("killed", "clean"):
        run = RunDir(rid, tmp_path).create()
        run.write_samples(samples, contexts)
        run.write_meta(new_meta(rid))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    clean = subprocess.run(
        _cli(tmp_path, "clean", tiny_model_dir),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert clean.returncode == 0, clean.stderr[-2000:]

    killed = RunDir("killed", tmp_path)
    proc = subprocess.Popen(
        _cli(tmp_path, "killed", tiny_model_dir),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while time.time() < deadline and len(_lines(killed.responses)) < 5 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_before = len(_lines(killed.responses))
    assert 0 < n_before < len(samples), "the kill must land mid-run"
    with killed.responses.open("a") as f:  # as if the kill landed mid-write
        f.write('{"sample_id": "s999", "model": "x", "te')

    rerun = subprocess.run(
        _cli(tmp_path, "killed", tiny_model_dir),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]

    got = _lines(killed.responses)
    ids = [r["sample_id"] for r in got]
    assert sorted(ids) == [s.id for s in samples]  # no duplicate, none missing, torn line gone
    want = {r["sample_id"]: r["text"] for r in _lines(RunDir("clean", tmp_path).responses)}
    assert {r["sample_id"]: r["text"] for r in got} == want  # greedy: same answers


class OracleBackend(CountingBackend):
    """Scripted backend that answers each sample's gold target (the echo benchmark's)."""

    name = "oracle"

    def generate(self, samples, contexts, config):
        self.seen.extend(s.id for s in samples)
        targets = [s.gold["target"] if isinstance(s.gold, dict) else s.gold.target for s in samples]
        return [
            Response(sample_id=s.id, model=self.name, text=t, config_hash=config.hash())
            for s, t in zip(samples, targets, strict=True)
        ]


def _rebuild_without_force(run, params):
    """Rewrite the run's samples under responses already there: what a rebuild did before
    ``--force`` (and what writing samples through the API still does)."""
    from lceval.benchmarks import registry

    result = registry.get("echo").build(params)
    run.write_samples(result.samples, result.contexts)


def test_rebuilt_samples_are_answered_again_and_stale_answers_never_scored(
    echo_bench, tmp_path, capsys
):
    """Issue 9, item 6: responses are tied to the exact sample (prompt, context, gold)."""

    run = lceval.run.build("r", "echo", {"n": 4}, root=tmp_path)
    oracle = OracleBackend()
    run_inference(run, oracle, progress=False)
    assert oracle.seen == ["e0", "e1", "e3", "e2"]  # e2 reads the context: grouped last
    assert set(lceval.run.score("r", root=tmp_path, progress=False)["value"]) == {1.0}

    # seed 1: e1 and e3 get another gold, e2 another context text; e0 is unchanged
    _rebuild_without_force(run, {"n": 4, "seed": 1})
    capsys.readouterr()
    df = lceval.run.score("r", root=tmp_path, progress=False)
    assert list(df["sample_id"]) == ["e0"]  # the stale answers of e1, e2, e3 are not scored
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "3 response(s) in responses.jsonl answer an earlier version" in err[0]

    oracle.seen.clear()
    out = run_inference(run, oracle, progress=False)
    assert sorted(oracle.seen) == ["e1", "e2", "e3"]  # the changed samples, answered again
    assert {r.sample_id: r.text for r in out} == {
        "e0": "a0",
        "e1": "a1.1",
        "e2": "a2",
        "e3": "a3.1",
    }
    df = lceval.run.score("r", root=tmp_path, progress=False).set_index("sample_id")
    assert sorted(df.index) == ["e0", "e1", "e2", "e3"] and set(df["value"]) == {1.0}
    oracle.seen.clear()
    run_inference(run, oracle, progress=False)
    assert oracle.seen == []  # nothing more to answer


def test_responses_without_sample_hash_still_resume_and_score(echo_bench, tmp_path):
    """A responses.jsonl written before the sample hash existed: missing = matching."""

    run = lceval.run.build("r", "echo", {"n": 4}, root=tmp_path)
    run_inference(run, OracleBackend(), progress=False)
    old = []
    for line in run.responses.read_text().splitlines():
        row = json.loads(line)
        assert len(row.pop("sample_hash")) == 16
        old.append(json.dumps(row))
    run.responses.write_text("\n".join(old) + "\n")
    again = OracleBackend()
    assert len(run_inference(run, again, progress=False)) == 4 and again.seen == []
    df = lceval.run.score("r", root=tmp_path, progress=False)
    assert len(df) == 4 and set(df["value"]) == {1.0}


class SizedBackend(CountingBackend):
    """Records the size of every generate call; ``call_size`` as an engine sets it."""

    def __init__(self, call_size=None):
        super().__init__()
        self.calls = []
        if call_size is not None:
            self.call_size = call_size

    def generate(self, samples, contexts, config):
        self.calls.append(len(samples))
        return super().generate(samples, contexts, config)


@pytest.mark.parametrize(
    ("call_size", "batch_size", "calls"),
    [(5, None, [5, 5, 2]), (None, None, [8, 4]), (5, 3, [3, 3, 3, 3])],
)
def test_infer_calls_the_engine_in_its_call_size_and_records_timing(
    monkeypatch, tmp_path, call_size, batch_size, calls
):
    """batch_size None: the engine's call_size (vLLM 256), else 8; run.json gets the timing."""

    run = RunDir("r", tmp_path).create()
    samples, contexts = _samples(12)
    run.write_samples(samples, contexts)
    run.write_meta(new_meta("r"))
    engine = SizedBackend(call_size)
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: engine)
    out = lceval.run.infer(
        "r",
        backend="auto",
        model="embedded",
        root=tmp_path,
        batch_size=batch_size,
        truncate=True,
        progress=False,
    )
    assert len(out) == 12 and engine.calls == calls
    # answers are stored under the name known before the engine starts (specs.stored_name)
    timing = run.read_meta().models["SmolLM2-135M-Instruct"]["timing"]
    assert set(timing) == {"engine_start_s", "generate_s", "engine_close_s"}
    assert all(isinstance(v, float) and v >= 0 for v in timing.values())


def test_infer_refuses_a_bad_batch_size_before_loading(monkeypatch, tmp_path):
    from lceval.core.errors import LcevalError

    run = RunDir("r", tmp_path).create()
    samples, contexts = _samples(2)
    run.write_samples(samples, contexts)
    run.write_meta(new_meta("r"))
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: pytest.fail("loaded"))
    for bad in (0, -1, 2.5, "8"):
        with pytest.raises(LcevalError, match="batch_size must be (>= 1|an integer)"):
            lceval.run.infer("r", backend="auto", root=tmp_path, batch_size=bad, progress=False)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.5, True, "0.7"])
def test_infer_refuses_a_bad_temperature_before_loading(monkeypatch, tmp_path, bad):
    from lceval.core.errors import LcevalError

    run = RunDir("r", tmp_path).create()
    samples, contexts = _samples(2)
    run.write_samples(samples, contexts)
    run.write_meta(new_meta("r"))
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: pytest.fail("loaded"))
    with pytest.raises(LcevalError, match="temperature must be (>= 0|a finite number|a number)"):
        lceval.run.infer("r", backend="auto", root=tmp_path, temperature=bad, progress=False)


def test_truncated_runs_are_sized_as_the_engine_gets_them(monkeypatch, tmp_path, capsys):
    """With --truncate, infer's plan line, the estimate before answering and the calibration
    after it count each prompt cut to the model's window (SmolLM2: 8,192 tokens), not the
    context as built: a LIFBench --limit 1 run planned 423K prompt tokens for 81K answered, its
    estimate 1:44 (h:mm) for a 1:43 (m:ss) run, with a false over-an-hour warning."""
    long = Context(id="c0", text="Shared context words. " * 12_000, n_tokens=48_000,
                   encoding="o200k_base")  # fmt: skip
    samples = [
        Sample(id=f"s{i}", benchmark="lifbench", task="LSI", instruction=f"Question {i}?",
               context_id="c0", max_new_tokens=24)
        for i in range(3)
    ]  # fmt: skip
    run = RunDir("r", tmp_path).create()
    run.write_samples(samples, [long])
    run.write_meta(new_meta("r"))
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: CountingBackend())
    lceval.run.infer("r", backend="hf", model="embedded", root=tmp_path, truncate=True,
                     progress=False)  # fmt: skip
    planned = json.loads(run.run_json.read_text())["plan"]
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "prompt tokens" in x and "plan:" in x]
    prompt_tokens = int(line.split(" samples, ")[1].split(" prompt tokens")[0].replace(",", ""))
    assert 3 * 7_000 < prompt_tokens <= 3 * 8_192, line  # cut to the window, not 3 x 48K
    assert planned["prompt_tokens"] == prompt_tokens


def test_a_resumed_run_with_nothing_left_loads_no_model(monkeypatch, tmp_path):
    """Issue 36: when run.json records the model (backend, options, decoding) and every sample
    is answered under its config, infer returns the stored answers without starting an engine;
    another decoding setting still loads one."""
    run = RunDir("r", tmp_path).create()
    samples, contexts = _samples(4)
    run.write_samples(samples, contexts)
    run.write_meta(new_meta("r"))
    engine = CountingBackend()
    engine.info = lambda: {"backend": "hf"}
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: engine)
    args = {"root": tmp_path, "truncate": True, "progress": False}
    first = lceval.run.infer("r", backend="hf", model="embedded", **args)
    assert len(first) == 4 and len(engine.seen) == 4
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: pytest.fail("loaded"))
    again = lceval.run.infer("r", backend="hf", model="embedded", **args)
    assert [r.text for r in again] == [r.text for r in first]
    monkeypatch.setattr(lceval.run.inference, "load_backend", lambda *a, **k: engine)
    lceval.run.infer("r", backend="hf", model="embedded", max_new_tokens=5, **args)
    assert len(engine.seen) == 8  # another decoding: an engine answers again
