"""Data-parallel inference on Ray (lceval.models.replicas): replicas answer exactly as one engine,
a killed replica and a killed driver lose nothing, several models at once, clear errors."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

import lceval.run
from lceval.errors import LcevalError
from lceval.io import RunDir, new_meta
from lceval.models.replicas import batches, plan_waves
from lceval.records import Context, Sample

OPTS = {"device": "cpu", "dtype": "float32"}


def _run(root, rid, n=16, budget=12, contexts=4):
    ctxs = [
        Context(id=f"c{j}", text=f"Context {j} says a thing. " * 20, n_tokens=120, encoding="x")
        for j in range(contexts)
    ]
    samples = [
        Sample(
            id=f"s{i:03d}",
            benchmark="lifbench",
            task="LSI",
            instruction=f"Question {i}: what does it say?",
            context_id=f"c{i % contexts}",
            max_new_tokens=budget,
        )
        for i in range(n)
    ]
    run = RunDir(rid, root).create()
    run.write_meta(new_meta(rid))
    run.write_samples(samples, ctxs)
    return run


def _lines(run):
    return [json.loads(x) for x in run.responses.read_text().splitlines() if x.strip()]


def test_batches_keep_a_context_on_one_batch_run():
    s = [
        Sample(id=f"s{i}", benchmark="b", task="T", instruction="q", context_id=c)
        for i, c in enumerate(["a", "b", "a", "x", "a", "b", None, "y"])
    ]
    out = [[x.id for x in b] for b in batches(s, 2)]
    # a's three samples, then b's two; contexts with one sample share batches
    assert out == [["s0", "s2"], ["s4"], ["s1", "s5"], ["s3", "s6"], ["s7"]]
    assert sorted(i for b in out for i in b) == sorted(x.id for x in s)


def test_plan_waves_runs_what_fits_together():
    room = {"CPU": 4.0, "GPU": 8.0}
    assert plan_waves([{"GPU": 4.0}, {"GPU": 4.0}, {"GPU": 2.0}], room) == [[0, 1], [2]]
    assert plan_waves([{"CPU": 1.0}, {"CPU": 1.0}], room) == [[0, 1]]
    with pytest.raises(LcevalError, match="model 2 needs 16 GPU"):
        plan_waves([{"GPU": 1.0}, {"GPU": 16.0}], room)


def test_replicas_without_ray_is_one_line(tmp_path, monkeypatch, tiny_model_dir):
    _run(tmp_path, "r")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(LcevalError, match=r'pip install -e "\.\[ray\]"') as err:
        lceval.run.infer(
            "r", "hf", str(tiny_model_dir), root=tmp_path, backend_options={"replicas": 2}
        )
    assert "\n" not in str(err.value)
    assert not (tmp_path / "r" / "responses.jsonl").exists()


@pytest.mark.parametrize("bad", [0, -1, "2", True, 1.5])
def test_bad_replicas_value(tmp_path, tiny_model_dir, bad):
    _run(tmp_path, "r")
    with pytest.raises(LcevalError, match="replicas"):
        lceval.run.infer(
            "r", "hf", str(tiny_model_dir), root=tmp_path, backend_options={"replicas": bad}
        )


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 2 CPUs, started by the test itself."""
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20, namespace="lceval"
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_two_replicas_answer_as_one_engine(tmp_path, tiny_model_dir, ray_cluster):
    """replicas=2 on Ray and the in-process engine: the same tokens, float32, every sample once."""
    for rid in ("one", "two"):
        _run(tmp_path, rid)
    one = lceval.run.infer(
        "one", "hf", str(tiny_model_dir), root=tmp_path, backend_options=OPTS, batch_size=2
    )
    two = lceval.run.infer(
        "two",
        "hf",
        str(tiny_model_dir),
        root=tmp_path,
        backend_options={**OPTS, "replicas": 2},
        batch_size=2,
    )
    assert [r.sample_id for r in one] == [r.sample_id for r in two]
    assert [r.text for r in one] == [r.text for r in two]
    assert [r.completion_tokens for r in one] == [r.completion_tokens for r in two]
    assert one[0].config_hash == two[0].config_hash  # replicas are not in the cache key
    lines = _lines(RunDir("two", tmp_path))
    assert Counter(x["sample_id"] for x in lines) == Counter(r.sample_id for r in one)
    meta = RunDir("two", tmp_path).read_meta().models[str(tiny_model_dir)]
    assert meta["replicas"] == 2 and meta["backend"] == "hf"
    progress = (tmp_path / "two" / "logs" / "progress.jsonl").read_text().splitlines()
    last = json.loads(progress[-1])
    assert (last["answered"], last["total"], last["replicas"], last["state"]) == (16, 16, 2, "done")


@pytest.mark.slow
def test_two_models_at_once(tmp_path, tiny_model_dir, tiny_base_model_dir, ray_cluster, capsys):
    _run(tmp_path, "r", n=6)
    out = lceval.run.infer(
        "r",
        "hf",
        models=[str(tiny_model_dir), {"model": str(tiny_base_model_dir), "name": "base"}],
        root=tmp_path,
        backend_options=OPTS,
        ray_address=ray_cluster,
    )
    assert Counter(r.model for r in out) == {str(tiny_model_dir): 6, "base": 6}
    assert "on Ray at once:" in capsys.readouterr().err
    assert set(RunDir("r", tmp_path).read_meta().models) == {str(tiny_model_dir), "base"}


@pytest.mark.slow
def test_a_cluster_too_small_is_one_line(tmp_path, tiny_model_dir, ray_cluster):
    _run(tmp_path, "r", n=2)
    with pytest.raises(LcevalError, match="needs 3 CPU.*the Ray cluster has 2"):
        lceval.run.infer(
            "r", "hf", str(tiny_model_dir), root=tmp_path, backend_options={**OPTS, "replicas": 3}
        )
    assert not (tmp_path / "r" / "responses.jsonl").exists()


def _wait(pred, timeout, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _answered(run):
    try:
        return len(_lines(run))
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


@pytest.mark.slow
def test_killed_replica_then_killed_driver_lose_nothing(tmp_path, tiny_model_dir, ray_cluster):
    """A replica actor killed mid-run: the other answers its samples; then the driver SIGKILLed
    mid-run; the rerun answers the rest: every sample exactly once."""
    import ray

    n = 40
    run = _run(tmp_path, "r", n=n, budget=24, contexts=10)
    env = {**os.environ, "LCEVAL_VERBOSE": "", "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-m", "lceval", "--outputs", str(tmp_path), "infer", "r"]
    argv += ["--backend", "hf", "--model", str(tiny_model_dir), "--ray-address", ray_cluster]
    argv += ["--batch-size", "1", "-o", "replicas=2", "-o", "device=cpu", "-o", "dtype=float32"]
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait(lambda: _answered(run) >= 2, 300, "the first answers")
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
        victim = next(x for x in names if x.startswith("r/") and x.split("/")[-2] == "0")
        ray.kill(ray.get_actor(victim, namespace="lceval"), no_restart=True)
        seen = _answered(run)
        _wait(lambda: _answered(run) >= seen + 4, 300, "answers after the replica died")
        assert driver.poll() is None, driver.communicate()
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    err = driver.stderr.read().decode()
    assert "replica 0 of" in err and "died" in err
    before = _answered(run)
    assert 0 < before < n
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    ids = Counter(x["sample_id"] for x in _lines(run))
    assert ids == Counter(f"s{i:03d}" for i in range(n))  # every sample exactly once
    assert "died" not in done.stderr
