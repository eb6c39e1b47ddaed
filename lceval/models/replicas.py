"""Data-parallel inference on a Ray cluster: a model's ``replicas=N`` option starts N copies of
lceval's own engine (hf or vllm, built by :func:`lceval.models.base.load_backend` inside a Ray
actor), each in a placement group holding the GPUs its ``tensor_parallel_size x
pipeline_parallel_size`` needs (one CPU on a cluster without GPUs), and spreads the run's samples
over them.

Why Ray actors holding lceval's engines and not ``ray.data.llm`` (DEVELOPING.md, "Replicas"):
``ray.data.llm``'s vLLM processor builds its own engine from a config, so the hf engine (the NTK
sweep's RoPE overrides on transformers, Min-K%++'s prompt log-probabilities with mean and
variance) cannot run there, lceval's per-sample budgets, chat rendering, truncation and response
records would be rebuilt in its map stages, and Ray Data decides batch composition itself, so two
replica counts would not give the same tokens. An actor holding the engine that ``lceval infer``
uses in-process answers exactly as in-process (same code, same batches), and Ray keeps only what
it is good at: placing replicas, moving work, noticing deaths.

The driver (this process) is the only writer of ``responses.jsonl``: it cuts the pending samples
into the batches the in-process path would send (samples sharing a context adjacent, each batch
within one context where a context has several samples, so one context's questions reach one
replica and its prefix cache), hands each replica at most :data:`IN_FLIGHT` batches, and appends
and fsyncs each answered batch as it arrives. A replica that dies has its unanswered batches given
to another replica; a driver killed at any moment loses no answer already appended, and a rerun
answers only the rest.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lceval.core.errors import LcevalError
from lceval.core.records import Context, Response, Sample, sample_hashes
from lceval.core.store import ResponseStore
from lceval.models.base import GenerationConfig, log, replicas_of, split_run_options

EXTRA = 'pip install -e ".[ray]"'
"""How to install Ray for lceval (the ``ray`` optional extra of pyproject.toml)."""

RAY_ADDRESS_ENV = "LCEVAL_RAY_ADDRESS"
"""Environment variable: the Ray cluster ``lceval.run.infer`` joins when not told
(``lceval run --ray-address`` sets it, so the notebooks' inference goes there)."""

IN_FLIGHT = 2
"""Batches handed to one replica at a time (one answering, one waiting: no idle gap between
calls)."""

NAMESPACE = "lceval"
"""Ray namespace of the replica actors (named ``<run>/<model>/<i>/<driver pid>``)."""

ENV_KEYS = ("PYTHONPATH", "TOKENIZERS_PARALLELISM")
"""Environment variables of the driver that replicas get too (lceval's checkout first)."""

ENV_PREFIXES = ("HF_", "TRANSFORMERS_", "VLLM_", "LCEVAL_")
"""Prefixes of further variables replicas get: the hub's (offline mode, ``HF_HOME``, a gated
model's ``HF_TOKEN``), vLLM's (``VLLM_CPU_KVCACHE_SPACE``, ``VLLM_CPU_OMP_THREADS_BIND``, ...) and
lceval's. A cluster started outside lceval (``ray start``, KubeRay, Slurm) starts its workers with
its own environment, so without them a replica would import another lceval, go online or size
vLLM's KV cache by vLLM's defaults (tests/models/test_replicas.py checks a ``ray start`` cluster).
``CUDA_VISIBLE_DEVICES`` and ``OMP_NUM_THREADS`` are left to Ray (it sets them per actor)."""


def require_ray() -> Any:
    """The ``ray`` module.

    Raises:
        LcevalError: Ray is not installed (one line naming the extra).
    """
    try:
        import ray
    except ImportError:
        raise LcevalError(
            f"replicas > 1 and --ray-address need Ray, which is not installed: {EXTRA}"
        ) from None
    return ray


def connect(address: str | None = None) -> Any:
    """Join the Ray cluster at ``address`` (``auto``: the one ``ray start`` made on this node;
    ``HOST:PORT``: its head), or start a local one (None: Ray's ``address="local"``, so a
    cluster that ``ray start`` left on this machine, or its stale ``/tmp/ray/ray_current_cluster``
    record, is not joined by surprise), unless this process already is connected (a test's own
    ``ray.init``). Returns the ``ray`` module.

    Raises:
        LcevalError: Ray missing, or no cluster at ``address``.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    from lceval.core.console import verbose

    if address is not None:
        check_address(address)
        token_auth_if_token()

    def start() -> None:
        ray.init(
            address=address or "local",
            namespace=NAMESPACE,
            include_dashboard=False,
            log_to_driver=verbose(),
            logging_level="ERROR",
            configure_logging=True,
        )

    try:
        if address is None:
            _start_local(ray, start)
        else:
            start()
    except Exception as exc:  # noqa: BLE001 - Ray raises bare Exception on a start timeout
        where = address or "a local cluster"
        raise LcevalError(
            f"cannot join Ray at {where}: {' '.join(str(exc).split())[:200]}"
        ) from None
    return ray


PROBE_S = 5.0
"""Seconds :func:`check_address` waits for a TCP connection and then for the GCS's answer."""


def check_address(address: str) -> None:
    """Fail fast, in one line, when ``HOST:PORT`` (or ``ray://HOST:PORT``) is not a live Ray
    cluster: nothing listens there, or what listens does not answer the Ray GCS's
    ``NodeInfoGcsService.GetClusterId`` gRPC call (an HTTP server, a database). Within about
    2 x :data:`PROBE_S` seconds, where ``ray.init`` retries a dead address for minutes (841 s
    measured for ``127.0.0.1:1``, issue 38). ``auto`` and ``local`` are left to Ray.

    Raises:
        LcevalError: the address does not parse, or no Ray cluster answers there.
    """
    import socket

    if address in ("auto", "local"):
        return
    client = address.startswith("ray://")
    hostport = address.removeprefix("ray://").rstrip("/")
    host, sep, port = hostport.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LcevalError(
            f"--ray-address {address!r} is not HOST:PORT (e.g. 10.0.0.5:6379), ray://HOST:PORT "
            "or auto"
        )
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_S).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise LcevalError(
            f"no Ray cluster at {address}: cannot connect ({why}); is its head node up "
            "(ray start --head) and the port right?"
        ) from None
    if client:  # Ray Client speaks another protocol: the TCP check is what can be done here
        return
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    channel = grpc.insecure_channel(f"{host}:{port}" if ":" not in host else f"[{host}]:{port}")
    try:
        gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
            gcs_service_pb2.GetClusterIdRequest(),  # type: ignore[attr-defined]  # generated protobuf, no stubs
            timeout=PROBE_S,
        )
    except grpc.RpcError as exc:
        code = exc.code()
        no_gcs = (
            grpc.StatusCode.UNAVAILABLE,  # not gRPC (an HTTP/1 server: "Failed parsing HTTP/2")
            grpc.StatusCode.UNIMPLEMENTED,  # gRPC or HTTP/2 without Ray's GCS service
            grpc.StatusCode.DEADLINE_EXCEEDED,  # silent
        )
        if code in no_gcs:  # any other status (UNAUTHENTICATED: token auth) is a Ray GCS
            raise LcevalError(
                f"no Ray cluster at {address}: something listens there but does not answer as "
                f"Ray's GCS ({code.name}); give the head's GCS port (6379 unless set)"
            ) from None
    finally:
        channel.close()


RAYLET_TRIES = 2
"""Local cluster starts tried (the second after the first's processes are killed)."""

RAYLET_WAIT_S = 90.0
"""Seconds a local start waits for its raylet to register with the GCS. Ray waits a fixed 30 s
(``ray._private.node.Node.__init__``, Ray 2.60), which a loaded machine misses: 12 of ~24 starts
failed at load 7-22 (issue 38). A raylet that died meanwhile ends the wait (at load 17 here
the raylet itself crashed on one of Ray's internal checks: only the retry helps then)."""


@contextmanager
def _patient_raylet_wait(seconds: float) -> Iterator[None]:
    """Within the block, Ray's lookup of the node it is starting
    (``ray._private.services.get_node``, which raises RuntimeError until the raylet has
    registered, and which ``Node.__init__`` calls in its 30 s loop) keeps trying for up to
    ``seconds`` from its first call before raising: Ray's wait, lengthened. Ray has no setting
    for it; a Ray without that function is left as it is."""
    try:
        import ray._private.services as services
    except ImportError:
        yield
        return
    original = getattr(services, "get_node", None)
    if original is None:
        yield
        return
    first: list[float] = []

    def get_node(*args: Any, **kwargs: Any) -> Any:
        first.append(first[0] if first else time.monotonic())
        while True:
            try:
                return original(*args, **kwargs)
            except RuntimeError:
                waited = time.monotonic() - first[0]
                if waited > seconds or (waited > 5 and not _raylet_running()):
                    raise  # a raylet that died (Ray's own check failures under load) won't come
                time.sleep(0.5)

    services.get_node = get_node
    try:
        yield
    finally:
        services.get_node = original


def _raylet_running() -> bool:
    """Whether a ``raylet`` process descends from this one."""
    import psutil

    for p in psutil.Process().children(recursive=True):
        try:
            if p.name().startswith("raylet"):
                return True
        except psutil.Error:
            pass
    return False


def _start_local(ray: Any, start: Any) -> None:
    """``start()`` (a local ``ray.init``) with Ray's raylet wait lengthened to
    :data:`RAYLET_WAIT_S`, tried :data:`RAYLET_TRIES` times; after a failed try the processes it
    left (Ray's GCS, raylet, workers: descendants of this process that were not there before)
    are killed, so nothing outlives a failed start."""
    import psutil

    me = psutil.Process()
    for attempt in range(1, RAYLET_TRIES + 1):
        before = {p.pid for p in me.children(recursive=True)}
        try:
            with _patient_raylet_wait(RAYLET_WAIT_S):
                start()
            return
        except Exception:
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001 - a half-started cluster
                pass
            _kill_new_children(me, before)
            if attempt == RAYLET_TRIES:
                raise
            log(f"the local Ray cluster did not start (try {attempt}); trying again")


def _kill_new_children(me: Any, before: set[int]) -> None:
    """SIGKILL this process's descendants whose pid is not in ``before``, and reap them."""
    import psutil

    new = [p for p in me.children(recursive=True) if p.pid not in before]
    for p in new:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(new, timeout=10)


AUTH_MODE_ENV = "RAY_AUTH_MODE"
"""Ray's switch for token authentication of its RPCs (``token`` or ``disabled``)."""


def token_auth_if_token() -> bool:
    """Join a cluster with Ray's token authentication when this machine holds a token and the
    user has not set :data:`AUTH_MODE_ENV`: the rule of Ray's own CLI (``ray status``).

    ``ray start`` turns token authentication on by default (Ray >= 2.5x; the token is written to
    ``~/.ray/auth_token``), but ``ray.init(address=...)`` sends the token only when
    ``RAY_AUTH_MODE=token`` is set, so without this lceval's driver could not join a cluster that
    ``ray start`` made (``InvalidAuthToken``, then "Failed to connect to Ray cluster"; seen with
    Ray 2.60). Returns whether token mode is on."""
    mode = os.environ.get(AUTH_MODE_ENV)
    if mode is not None:
        return mode.lower() == "token"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or str(Path.home() / ".ray" / "auth_token")
    if not (os.environ.get("RAY_AUTH_TOKEN") or Path(path).is_file()):
        return False
    os.environ[AUTH_MODE_ENV] = "token"
    try:  # Ray reads its config once per process: refresh it, as its CLI does after this switch
        from ray._raylet import Config  # type: ignore[attr-defined]  # Cython module, no stubs

        Config.initialize("")
    except (ImportError, AttributeError):  # a Ray without token authentication
        pass
    return True


def replica_needs(options: Mapping[str, Any], gpus_in_cluster: float) -> dict[str, float]:
    """Ray resources one replica holds: ``tensor_parallel_size x pipeline_parallel_size`` GPUs
    and one CPU on a cluster with GPUs (unless the engine is asked for ``device=cpu``), else one
    CPU."""
    tp = int(options.get("tensor_parallel_size") or 1)
    pp = int(options.get("pipeline_parallel_size") or 1)
    on_cpu = str(options.get("device", "")).startswith("cpu") or gpus_in_cluster <= 0
    return {"CPU": 1.0} if on_cpu else {"CPU": 1.0, "GPU": float(tp * pp)}


def replica_options(backend: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The engine options a replica's engine is built with: ``options``, and for vLLM with
    ``tensor_parallel_size x pipeline_parallel_size > 1`` and no ``distributed_executor_backend``
    given, ``"mp"``.

    Why: vLLM chooses its ``ray`` executor by itself when it starts inside a Ray placement group
    (vLLM 0.32, ``ParallelConfig``: ``ray.util.get_current_placement_group()`` is not None), and
    that executor wants one bundle per GPU in the group and places its own workers there
    (``ray_utils.initialize_ray_cluster``): with the replica's one bundle of
    ``tensor_parallel_size x pipeline_parallel_size`` GPUs, already held by the actor
    (:func:`replica_needs`), it stops with "Placement group bundle cannot have more than 1 GPU".
    A replica's GPUs are on one node (``STRICT_PACK``) and Ray gives the actor exactly them
    (``CUDA_VISIBLE_DEVICES``), so vLLM's multiprocessing executor runs the parallel ranks inside
    the replica. Read from vLLM's source, not run: no machine here has two GPUs (on the CPU,
    ``pipeline_parallel_size=2`` started in a replica with either executor)."""
    out = dict(options)
    world = int(out.get("tensor_parallel_size") or 1) * int(out.get("pipeline_parallel_size") or 1)
    if (
        backend in ("vllm", "auto")
        and world > 1
        and out.get("distributed_executor_backend") is None
    ):
        out["distributed_executor_backend"] = "mp"
    return out


class _Replica:
    """The body of a replica actor: one lceval engine, answering batches."""

    def __init__(self, backend: str, model: str | None, options: dict[str, Any], name: str | None):
        from lceval.models.base import load_backend

        self.engine = load_backend(backend, model, **options)
        if name:
            self.engine.name = name

    def describe(self) -> dict[str, Any]:
        """Name, cache fields, provenance and default call size of the engine, and the pid."""
        from lceval.models.generate import prefix_reuse

        counts = prefix_reuse(self.engine)
        return {
            "name": self.engine.name,
            "cache_fields": dict(getattr(self.engine, "cache_fields", None) or {}),
            "info": self.engine.info(),
            "call_size": int(getattr(self.engine, "call_size", 8)),
            "pid": os.getpid(),
            "counts": None if counts is None else dataclasses.asdict(counts),
        }

    def alive(self) -> int:
        """The pid (the driver's check that an idle replica is still there)."""
        return os.getpid()

    def answer(
        self, batch: list[Sample], contexts: dict[str, Context], config: GenerationConfig
    ) -> list[Response]:
        """The batch's answers (``lceval.models.generate.answers``)."""
        from lceval.models.generate import answers

        return list(answers(self.engine, batch, contexts, config))

    def close(self) -> None:
        self.engine.close()


@dataclass
class Job:
    """One model of a run answered by replicas."""

    spec: Any
    """Its :class:`lceval.models.specs.ModelSpec` (``replicas`` among its options)."""
    samples: Sequence[Sample]
    config: GenerationConfig
    batch_size: int | None = None
    """Samples per replica call (None: the engine's call size)."""
    responses: list[Response] = field(default_factory=list)
    entry: dict[str, Any] = field(default_factory=dict)
    """The engine's run.json entry (``info()`` of replica 0, ``replicas``, ``config_hash``)."""

    @property
    def n(self) -> int:
        return replicas_of(self.spec.options)


@dataclass
class _Pool:
    job: Job
    actors: list[Any]
    groups: list[Any]
    alive: list[bool]
    queue: deque[tuple[int, list[Sample]]]
    owner: dict[str | None, int] = field(default_factory=dict)
    flight: dict[Any, tuple[int, int, list[Sample]]] = field(default_factory=dict)
    chash: str = ""
    hashes: dict[str, str] = field(default_factory=dict)
    per: list[int] = field(default_factory=list)
    """Samples answered by each replica in this call (run.json's ``answered_by_replica``)."""
    unanswered: set[str] = field(default_factory=set)
    """Ids of the samples queued by this call whose answers are not yet written."""
    cut: list[int] = field(default_factory=list)
    """Tokens dropped from each truncated prompt answered by this call."""
    bar: Any = None


def batches(samples: Sequence[Sample], size: int) -> list[list[Sample]]:
    """``samples`` in context order cut into batches of at most ``size``, none spanning two
    contexts that have several samples each (single-sample contexts share batches)."""
    from lceval.models.generate import context_order

    out: list[list[Sample]] = []
    loose: list[Sample] = []
    ordered = context_order(samples)
    counts: dict[str | None, int] = {}
    for s in ordered:
        counts[s.context_id] = counts.get(s.context_id, 0) + 1
    i = 0
    while i < len(ordered):
        cid = ordered[i].context_id
        j = i
        while j < len(ordered) and ordered[j].context_id == cid:
            j += 1
        group = ordered[i:j]
        if counts[cid] > 1 and cid is not None:
            out.extend(group[k : k + size] for k in range(0, len(group), size))
        else:
            loose.extend(group)
        i = j
    out.extend(loose[k : k + size] for k in range(0, len(loose), size))
    return out


def plan_waves(needs: Sequence[dict[str, float]], room: Mapping[str, float]) -> list[list[int]]:
    """Jobs (by index) grouped into waves that run at once: each wave's summed needs fit
    ``room`` (the cluster's resources); jobs keep their order.

    Raises:
        LcevalError: one job alone needs more than the cluster has (names it).
    """
    waves: list[list[int]] = []
    used: dict[str, float] = {}
    for i, need in enumerate(needs):
        for k, v in need.items():
            if v > room.get(k, 0.0):
                raise LcevalError(
                    f"model {i + 1} needs {v:g} {k}(s) for its replicas; the Ray cluster has "
                    f"{room.get(k, 0.0):g}: lower replicas or tensor_parallel_size, or add nodes"
                )
        if waves and all(used.get(k, 0.0) + v <= room.get(k, 0.0) for k, v in need.items()):
            waves[-1].append(i)
            for k, v in need.items():
                used[k] = used.get(k, 0.0) + v
        else:
            waves.append([i])
            used = dict(need)
    return waves


def answer_jobs(
    jobs: Sequence[Job],
    contexts: Mapping[str, Context],
    store: ResponseStore,
    *,
    run_id: str,
    address: str | None = None,
    progress_log: Path | None = None,
    progress: bool = True,
) -> list[list[Job]]:
    """Answer every job's samples on Ray replicas: several models at once when the cluster has
    room for all their replicas (:func:`plan_waves`), else wave after wave. Every answer is
    appended to ``store`` (fsynced) by this process as its batch arrives. Returns the waves.

    Raises:
        LcevalError: Ray missing; the cluster has fewer GPUs/CPUs than one model's replicas need
            (before anything starts); every replica of a model died; an engine raised.
    """
    ray = connect(address)
    room = {k: float(v) for k, v in ray.cluster_resources().items()}
    gpus = room.get("GPU", 0.0)
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    needs = []
    for job in jobs:
        per = replica_needs(split_run_options(job.spec.options)[1], gpus)
        if nodes and not any(all(n.get(k, 0) >= v for k, v in per.items()) for n in nodes):
            biggest = max(float(n.get("GPU" if "GPU" in per else "CPU", 0)) for n in nodes)
            kind = "GPU" if "GPU" in per else "CPU"
            raise LcevalError(
                f"{job.spec.label}: one replica needs {per[kind]:g} {kind}(s) on one node "
                f"(tensor_parallel_size x pipeline_parallel_size); the largest node has "
                f"{biggest:g}"
            )
        needs.append({k: v * job.n for k, v in per.items()})
    waves = plan_waves(needs, room)
    with store.writer():
        for wave in waves:
            if len(waves) > 1 or len(wave) > 1:
                names = ", ".join(jobs[i].spec.label for i in wave)
                log(f"on Ray at once: {names}")
            _run_wave(ray, [jobs[i] for i in wave], contexts, store, run_id, progress_log, progress)
    return [[jobs[i] for i in wave] for wave in waves]


def _env() -> dict[str, str]:
    """The driver's variables named by :data:`ENV_KEYS` and :data:`ENV_PREFIXES`."""
    return {k: v for k, v in os.environ.items() if k in ENV_KEYS or k.startswith(ENV_PREFIXES)}


def _start(ray: Any, job: Job, run_id: str) -> _Pool:
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    from lceval.models.specs import stored_name

    spec = job.spec
    engine_options = replica_options(spec.backend, split_run_options(spec.options)[1])
    per = replica_needs(engine_options, ray.cluster_resources().get("GPU", 0.0))
    actor_cls = ray.remote(_Replica)
    actors, groups = [], []
    for i in range(job.n):
        pg = placement_group([per], strategy="STRICT_PACK")
        groups.append(pg)
        name = f"{run_id}/{spec.label}/{i}/{os.getpid()}"
        actors.append(
            actor_cls.options(
                name=name,
                namespace=NAMESPACE,
                num_cpus=per["CPU"],
                num_gpus=per.get("GPU", 0.0),
                max_restarts=0,
                runtime_env={"env_vars": _env()},
                scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=pg),
            ).remote(spec.backend, spec.model, engine_options, stored_name(spec))
        )
    return _Pool(job, actors, groups, [True] * job.n, deque(), per=[0] * job.n)


def _run_wave(
    ray: Any,
    jobs: Sequence[Job],
    contexts: Mapping[str, Context],
    store: ResponseStore,
    run_id: str,
    progress_log: Path | None,
    progress: bool,
) -> None:
    from lceval.core.progress import Progress
    from lceval.models.generate import engine_config

    pools = [_start(ray, job, run_id) for job in jobs]
    state = "stopped"
    try:
        for pool in pools:
            job = pool.job
            about = _first_alive(ray, pool, "describe")
            keyed = engine_config(SimpleNamespace(cache_fields=about["cache_fields"]), job.config)
            pool.chash = keyed.hash()
            job.entry = {
                **about["info"],
                "requested_backend": job.spec.backend,
                "replicas": job.n,
                "generation": keyed.__dict__,
                "config_hash": pool.chash,
                "answered_by_replica": pool.per,  # filled as answers arrive
            }
            name = about["name"]
            pool.hashes = sample_hashes(job.samples, contexts)
            done = store.done(name, pool.chash, pool.hashes)
            pending = [s for s in job.samples if s.id not in done]
            size = job.batch_size or about["call_size"]
            pool.queue.extend(enumerate(batches(pending, size)))
            pool.unanswered = {s.id for s in pending}
            pool.bar = Progress(
                progress_log,
                name,
                len(job.samples),
                len(job.samples) - len(pending),
                desc=f"infer {name}",
                replicas=job.n,
                show=progress,
            )
            job.entry["name"] = name
            job.config = keyed
        _loop(ray, pools, contexts, store)
        for pool in pools:
            _all_answered(pool)
        state = "done"
    finally:
        for pool in pools:
            if pool.bar is not None:
                pool.bar.close(state)
            _stop(ray, pool)
    for pool in pools:  # every answer of the job's samples, stored earlier or now
        job = pool.job
        name = job.entry["name"]
        if pool.cut:  # as lceval.models.generate says it in-process
            log(
                f"warning: {len(pool.cut)} prompt(s) did not fit {name}'s window: their contexts "
                f"were right-truncated (up to {max(pool.cut):,} tokens dropped; truncated_tokens "
                "in responses.jsonl)"
            )
        found: dict[str, Response] = {}
        for r in store:
            if (
                r.model == name
                and r.config_hash == pool.chash
                and r.sample_id in pool.hashes
                and r.answers(pool.hashes[r.sample_id])
                and (r.sample_id not in found or found[r.sample_id].finish_reason == "error")
            ):
                found[r.sample_id] = r
        job.responses = [found[s.id] for s in job.samples if s.id in found]


def _all_answered(pool: _Pool) -> None:
    """Raise when a sample queued by this call has no answer written (an engine that returned
    fewer answers than it was given, a batch lost on the way): one line naming them."""
    if not pool.unanswered:
        return
    missing = sorted(pool.unanswered)
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    raise LcevalError(
        f"{pool.job.spec.label}: {len(missing)} sample(s) left unanswered by the replicas "
        f"({', '.join(missing[:10])}{more}); the answers written are kept, rerun to answer the rest"
    )


def _first_alive(ray: Any, pool: _Pool, method: str) -> Any:
    """``method()`` on the first replica that answers it (replicas that fail to start are
    marked dead)."""
    from ray.exceptions import RayActorError, RayTaskError

    last = ""
    for i, actor in enumerate(pool.actors):
        try:
            return ray.get(getattr(actor, method).remote())
        except RayTaskError as exc:  # the engine failed to load: the same on every replica
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            msg = " ".join(str(cause).split())[:200]
            raise LcevalError(f"replica of {pool.job.spec.label} failed to start: {msg}") from None
        except RayActorError as exc:
            why = creation_error(str(exc))
            if why is not None:  # the engine failed to load: the same on every replica
                raise LcevalError(
                    f"replica of {pool.job.spec.label} failed to start: {why}"
                ) from None
            pool.alive[i] = False
            last = " ".join(str(exc).split())[:120]
    raise LcevalError(f"no replica of {pool.job.spec.label} started: {last}")


def creation_error(text: str) -> str | None:
    """The exception that ended a replica actor's ``__init__`` (its engine's load), from the text
    of Ray's ``ActorDiedError`` (Ray 2.60 gives the remote traceback there, its last line the
    exception), without the exception's module path; None when the actor died otherwise."""
    if "creation task" not in text:
        return None
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    head, sep, rest = last.partition(": ")
    if sep and "." in head and " " not in head:  # lceval.core.errors.LcevalError: message
        last = rest if head.endswith("LcevalError") else f"{head.rsplit('.', 1)[-1]}: {rest}"
    return " ".join(last.split())[:300] or None


def _home(batch: Sequence[Sample]) -> str | None:
    """The context a batch keeps to one replica: its samples' shared context, None for a batch
    of context-free samples (ManyIFEval, LongGenBench) or of several single-sample contexts,
    which any replica may answer."""
    cid = batch[0].context_id
    return cid if cid is not None and all(s.context_id == cid for s in batch) else None


def _dispatch(pool: _Pool, contexts: Mapping[str, Context]) -> None:
    """Hand queued batches to live replicas with room, each batch of a shared context to the
    replica that took that context before when that one is alive; other batches (no context,
    or single-sample contexts) go to whichever replica has room."""
    for i, actor in enumerate(pool.actors):
        if not pool.alive[i]:
            continue
        while sum(1 for v in pool.flight.values() if v[0] == i) < IN_FLIGHT and pool.queue:
            pick = next(
                (
                    k
                    for k, (_, b) in enumerate(pool.queue)
                    if (home := _home(b)) is None
                    or pool.owner.get(home, i) == i
                    or not pool.alive[pool.owner[home]]
                ),
                None,
            )
            if pick is None:
                break
            idx, batch = pool.queue[pick]
            del pool.queue[pick]
            home = _home(batch)
            if home is not None:
                pool.owner[home] = i
            need = {s.context_id: contexts[s.context_id] for s in batch if s.context_id}
            ref = actor.answer.remote(batch, need, pool.job.config)
            pool.flight[ref] = (i, idx, batch)


PING_S = 2.0
"""Seconds without an answer after which idle replicas are asked whether they are alive (a
replica killed while it had nothing to do is noticed, not only one killed mid-batch)."""


def _loop(
    ray: Any, pools: Sequence[_Pool], contexts: Mapping[str, Context], store: ResponseStore
) -> None:
    """Dispatch and collect until every queued batch is answered or an engine raised. A batch
    stays in ``pool.flight`` until its answers are appended; a batch whose replica died (the
    failed call and that replica's other calls) goes back to the front of the queue."""
    from ray.exceptions import RayError, RayTaskError

    pings: dict[Any, tuple[_Pool, int]] = {}
    pinged = time.monotonic() - PING_S  # the first round at once
    while True:
        for pool in pools:
            _dispatch(pool, contexts)
        refs = [ref for pool in pools for ref in pool.flight]
        if not refs:
            if any(pool.queue for pool in pools):
                continue  # batches whose context owner died: taken on the next pass
            return
        if time.monotonic() - pinged >= PING_S:  # are the idle replicas still there?
            pinged = time.monotonic() - PING_S  # the first round at once
            for pool in pools:
                busy = {v[0] for v in pool.flight.values()}
                waiting = {j for p, j in pings.values() if p is pool}
                for j, actor in enumerate(pool.actors):
                    if pool.alive[j] and j not in busy and j not in waiting:
                        pings[actor.alive.remote()] = (pool, j)
        ready, _ = ray.wait(refs + list(pings), num_returns=1, timeout=PING_S)
        for ref in ready:
            if ref in pings:
                pool, i = pings.pop(ref)
                try:
                    ray.get(ref)
                except RayError:
                    if pool.alive[i]:
                        _died(pool, i)
                continue
            pool = next(p for p in pools if ref in p.flight)
            i, idx, batch = pool.flight[ref]
            try:
                out = ray.get(ref)
            except RayTaskError as exc:
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                msg = " ".join(str(cause).split())[:200]
                raise LcevalError(f"replica {i} of {pool.job.spec.label}: {msg}") from None
            except RayError:  # the actor died (SIGKILL, OOM, node lost): this batch too
                _died(pool, i)
                continue
            out = [dataclasses.replace(r, sample_hash=pool.hashes[r.sample_id]) for r in out]
            store.append(out)
            del pool.flight[ref]  # accounted for: its answers are written
            pool.unanswered.difference_update(r.sample_id for r in out)
            pool.per[i] += len(out)
            pool.cut += [r.truncated_tokens for r in out if r.truncated_tokens]
            pool.bar.add(
                len(out), sum(r.prompt_tokens for r in out), sum(r.completion_tokens for r in out)
            )


def _tell(message: str) -> None:
    """``message`` on the terminal and, while an engine's output goes to the run's log, there
    too."""
    import sys

    from lceval.core.console import terminal

    log(message)
    if sys.stderr is not terminal():
        print(f"lceval: {message}", file=sys.stderr, flush=True)


def _died(pool: _Pool, i: int) -> None:
    """Replica ``i`` is gone: its batches in flight (the one whose call failed among them) go
    back to the front of the queue, in their order; the terminal and the log say so."""
    pool.alive[i] = False
    mine = [ref for ref, (j, _, _) in pool.flight.items() if j == i]
    back = sorted((pool.flight.pop(ref)[1:] for ref in mine), key=lambda t: t[0])
    for item in reversed(back):
        pool.queue.appendleft(item)
    alive = sum(pool.alive)
    pool.bar.set_alive(alive)
    lost = sum(len(b) for _, b in back)
    _tell(
        f"warning: replica {i} of {pool.job.spec.label} died ({alive}/{len(pool.alive)} alive); "
        f"its {lost} unanswered sample(s) go to the replicas alive"
    )
    if alive == 0:
        raise LcevalError(
            f"every replica of {pool.job.spec.label} died ({len(pool.unanswered)} sample(s) "
            "unanswered; finished answers are saved, rerun to resume)"
        )


def _stop(ray: Any, pool: _Pool) -> None:
    """Close every live replica's engine, end the actors, free their placement groups."""
    from ray.util.placement_group import remove_placement_group

    closing = [a.close.remote() for a, ok in zip(pool.actors, pool.alive, strict=True) if ok]
    try:
        ray.wait(closing, num_returns=len(closing), timeout=30)
    except Exception:  # noqa: BLE001 - shutting down: a dead replica has nothing to close
        pass
    for actor in pool.actors:
        try:
            ray.kill(actor)
        except Exception:  # noqa: BLE001 - already gone
            pass
    for pg in pool.groups:
        try:
            remove_placement_group(pg)
        except Exception:  # noqa: BLE001 - already removed
            pass
