"""Resumable inference: a SIGKILLed `lceval infer` resumes with no duplicate, no missing answer."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from lceval.io import RunDir, new_meta
from lceval.models.base import GenerationConfig
from lceval.pipeline import run_inference
from lceval.records import Context, Response, Sample


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


class CountingBackend:
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
    out = run_inference(run, b, batch_size=3, limit=4, progress=False)
    assert [r.sample_id for r in out] == [s.id for s in samples[:4]]
    out = run_inference(run, b, batch_size=3, progress=False)
    assert [r.sample_id for r in out] == [s.id for s in samples]
    assert Counter(b.seen) == Counter(s.id for s in samples)  # nothing answered twice
    # A different config is a different key: answered again.
    run_inference(run, b, GenerationConfig(max_new_tokens=5), progress=False)
    assert len(b.seen) == 20


def test_unknown_task_filter_is_an_error(tmp_path):
    from lceval.errors import LcevalError

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


@pytest.mark.slow
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
