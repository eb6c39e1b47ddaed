"""Data-parallel inference on Ray: ``replicas=N`` (or ``--ray-address``) starts N Ray actors, each
holding one lceval engine in a placement group of ``tensor_parallel_size x pipeline_parallel_size``
GPUs (one CPU without GPUs). This process hands them the in-process batches (a shared context's
to one replica), is the only writer of ``responses.jsonl`` and gives a dead replica's batches to
the others; DEVELOPING.md ("Replicas on Ray") says why not Ray's own pooling.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil

from lceval.core.console import terminal, verbose
from lceval.core.errors import LcevalError, one_line
from lceval.core.progress import Progress
from lceval.core.records import Context, Response, Sample, sample_hashes
from lceval.core.store import ResponseStore
from lceval.models.base import GenerationConfig, load_backend, log, replicas_of, split_run_options
from lceval.models.generate import answers, context_order, engine_config
from lceval.models.specs import stored_name

EXTRA = 'pip install -e ".[ray]"'  # the ray extra of pyproject.toml
RAY_ADDRESS_ENV = "LCEVAL_RAY_ADDRESS"  # the cluster infer joins when not told (lceval run sets it)
IN_FLIGHT = 2  # batches handed to one replica at a time: one answering, one waiting
PING_S = 2.0  # seconds between the driver's checks that its replicas are alive
PROBE_S = 5.0  # seconds check_address waits for a TCP connection, then for the GCS
RAYLET_WAIT_S = 90.0  # Ray's fixed 30 s (Ray 2.60): 12 of ~24 local starts missed it at load 7-22
NAMESPACE = "lceval"  # of the replica actors, named <run>/<model>/<i>/<driver pid>
# The driver's variables its replicas get (a cluster started outside lceval has its own env).
ENV_KEYS = ("PYTHONPATH", "TOKENIZERS_PARALLELISM")
ENV_PREFIXES = ("HF_", "TRANSFORMERS_", "VLLM_", "LCEVAL_")


def require_ray() -> Any:
    """The ``ray`` module.

    Raises:
        LcevalError: Ray is not installed (one line naming the extra).
    """
    try:
        import ray  # heavy, and optional: only when replicas are asked
    except ImportError:
        raise LcevalError(
            f"replicas > 1 and --ray-address need Ray, which is not installed: {EXTRA}"
        ) from None
    return ray


def connect(address: str | None = None) -> Any:
    """The ``ray`` module joined to the cluster at ``address`` (``auto``, ``HOST:PORT``), or to a
    local cluster it starts (None); a process already connected (a test's ``ray.init``) stays so.

    Raises:
        LcevalError: Ray missing, or no cluster at ``address``.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    if address is not None:
        check_address(address)
        token_auth_if_token()
    kw = {"namespace": NAMESPACE, "include_dashboard": False, "log_to_driver": verbose()}
    try:
        if address is None:
            start_local(ray, lambda: ray.init(address="local", logging_level="ERROR", **kw))
        else:
            ray.init(address=address, logging_level="ERROR", **kw)
    except Exception as exc:  # noqa: BLE001 - Ray raises bare Exception on a start timeout
        where = address or "a local cluster"
        raise LcevalError(f"cannot join Ray at {where}: {one_line(exc, 200)}") from None
    return ray


def check_address(address: str) -> None:
    """Fail in one line within about 2 x :data:`PROBE_S` (``ray.init`` retries for minutes) when
    ``HOST:PORT`` or ``ray://HOST:PORT`` is no live Ray cluster: nothing listens, or what listens
    does not answer the GCS's ``GetClusterId``. ``auto`` and ``local`` are left to Ray.

    Raises:
        LcevalError: the address does not parse, or no Ray cluster answers there.
    """
    if address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rstrip("/").rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LcevalError(
            f"--ray-address {address!r} is not HOST:PORT (e.g. 10.0.0.5:6379), ray://HOST:PORT "
            "or auto"
        )
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_S).close()
    except OSError as exc:
        raise LcevalError(
            f"no Ray cluster at {address}: cannot connect ({exc.strerror or type(exc).__name__}); "
            "is its head node up (ray start --head) and the port right?"
        ) from None
    if address.startswith("ray://"):  # Ray Client's own protocol: TCP is what can be checked
        return
    import grpc  # Ray's dependencies, imported with it
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    channel = grpc.insecure_channel(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    try:
        gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
            gcs_service_pb2.GetClusterIdRequest(),  # type: ignore[attr-defined]  # no stubs
            timeout=PROBE_S,
        )
    except grpc.RpcError as exc:  # any other status (UNAUTHENTICATED: token auth) is a Ray GCS
        if exc.code().name in ("UNAVAILABLE", "UNIMPLEMENTED", "DEADLINE_EXCEEDED"):
            raise LcevalError(
                f"no Ray cluster at {address}: something listens there but does not answer as "
                f"Ray's GCS ({exc.code().name}); give the head's GCS port (6379 unless set)"
            ) from None
    finally:
        channel.close()


def _raylet_alive() -> bool:
    for p in psutil.Process().children(recursive=True):
        with suppress(psutil.Error):
            if p.name().startswith("raylet") and p.status() != psutil.STATUS_ZOMBIE:
                return True
    return False


def start_local(ray: Any, start: Callable[[], Any], tries: int = 2) -> None:
    """Run ``start()`` (a local ``ray.init``) up to ``tries`` times, Ray's fixed 30 s wait for its
    raylet (no setting in Ray 2.60) lengthened to :data:`RAYLET_WAIT_S` unless the raylet died;
    a failed try's processes (those that inherited its mark) are killed.

    Raises:
        Exception: Ray's own, when the last try fails.
    """
    import ray._private.services as services  # with ray

    original = services.get_node

    def patient_get_node(*args: Any, **kwargs: Any) -> Any:
        t0 = time.monotonic()
        while True:
            try:
                return original(*args, **kwargs)
            except RuntimeError:  # until the raylet registers
                waited = time.monotonic() - t0
                if waited > RAYLET_WAIT_S or (waited > 5 and not _raylet_alive()):
                    raise
                time.sleep(0.5)

    for attempt in range(1, tries + 1):
        mark = os.environ["LCEVAL_RAY_START"] = f"{os.getpid()}-{attempt}-{os.urandom(4).hex()}"
        services.get_node = patient_get_node
        try:
            start()
            return
        except Exception:
            with suppress(Exception):  # a half-started cluster
                ray.shutdown()
            left = []
            for p in psutil.process_iter():
                with suppress(psutil.Error):
                    if p.pid != os.getpid() and p.environ().get("LCEVAL_RAY_START") == mark:
                        p.kill()
                        left.append(p)
            psutil.wait_procs(left, timeout=10)
            if attempt == tries:
                raise
            log(f"the local Ray cluster did not start (try {attempt}); trying again")
        finally:
            services.get_node = original


def token_auth_if_token() -> bool:
    """Turn on Ray's token authentication when this machine holds a token and ``RAY_AUTH_MODE``
    is unset, as Ray's CLI does (``ray.init(address=...)`` sends no token otherwise, Ray 2.60).
    Returns whether it is on."""
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is not None:
        return mode.lower() == "token"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or str(Path.home() / ".ray" / "auth_token")
    if not (os.environ.get("RAY_AUTH_TOKEN") or Path(path).is_file()):
        return False
    os.environ["RAY_AUTH_MODE"] = "token"
    try:  # Ray reads its config once per process: refresh it, as its CLI does
        from ray._raylet import Config  # type: ignore[attr-defined]  # Cython module, no stubs

        Config.initialize("")
    except (ImportError, AttributeError):  # a Ray without token authentication
        pass
    return True


def replica_needs(options: Mapping[str, Any], gpus_in_cluster: float) -> dict[str, float]:
    """Ray resources of one replica: one CPU, and ``tensor_parallel_size x
    pipeline_parallel_size`` GPUs on a cluster with GPUs unless the engine has ``device=cpu``."""
    tp = int(options.get("tensor_parallel_size") or 1)
    pp = int(options.get("pipeline_parallel_size") or 1)
    on_cpu = str(options.get("device", "")).startswith("cpu") or gpus_in_cluster <= 0
    return {"CPU": 1.0} if on_cpu else {"CPU": 1.0, "GPU": float(tp * pp)}


def replica_options(backend: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with ``distributed_executor_backend="mp"`` for a vLLM engine of several ranks
    unless given: in a placement group vLLM picks ``ray``, which refuses the replica's one
    multi-GPU bundle (vLLM 0.32's source; not run here, no machine has two GPUs)."""
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
    """A replica actor's body: one lceval engine answering batches."""

    def __init__(self, backend: str, model: str | None, options: dict[str, Any], name: str | None):
        self.engine = load_backend(backend, model, **options)
        if name:
            self.engine.name = name

    def describe(self) -> dict[str, Any]:
        """The engine's name, cache fields, ``info()`` and default call size."""
        return {
            "name": self.engine.name,
            "cache_fields": dict(getattr(self.engine, "cache_fields", None) or {}),
            "info": self.engine.info(),
            "call_size": int(getattr(self.engine, "call_size", 8)),
        }

    def alive(self) -> bool:
        return True

    def answer(
        self, batch: list[Sample], contexts: dict[str, Context], config: GenerationConfig
    ) -> list[Response]:
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
    """Its run.json entry (``info()`` of a replica, ``replicas``, ``config_hash``, ``name``)."""

    @property
    def n(self) -> int:
        return replicas_of(self.spec.options)


def batches(samples: Sequence[Sample], size: int) -> list[list[Sample]]:
    """``samples`` in context order cut into batches of at most ``size``, none spanning two
    contexts of several samples each (single-sample contexts and context-free samples share)."""
    out: list[list[Sample]] = []
    loose: list[Sample] = []
    for cid, group in groupby(context_order(samples), key=lambda s: s.context_id):
        items = list(group)
        if cid is not None and len(items) > 1:
            out += [items[k : k + size] for k in range(0, len(items), size)]
        else:
            loose += items
    return out + [loose[k : k + size] for k in range(0, len(loose), size)]


def plan_waves(needs: Sequence[dict[str, float]], room: Mapping[str, float]) -> list[list[int]]:
    """Jobs (by index, in order) grouped into waves that run at once, each wave's summed needs
    within ``room`` (the cluster's resources).

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
            used = {k: used.get(k, 0.0) + need.get(k, 0.0) for k in {*used, *need}}
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
    """Answer every job's samples on Ray replicas, models whose replicas fit the cluster together
    at once (:func:`plan_waves`); each batch's answers are appended to ``store`` (fsynced) as they
    arrive, and ``job.responses`` holds the job's answers. Returns the waves.

    Raises:
        LcevalError: Ray missing; the cluster or its largest node too small for a model's
            replicas (before any actor starts); every replica of a model died; an engine raised;
            samples left unanswered.
    """
    ray = connect(address)
    room = {k: float(v) for k, v in ray.cluster_resources().items()}
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    needs = []
    for job in jobs:
        per = replica_needs(split_run_options(job.spec.options)[1], room.get("GPU", 0.0))
        if nodes and not any(all(n.get(k, 0) >= v for k, v in per.items()) for n in nodes):
            kind = "GPU" if "GPU" in per else "CPU"
            raise LcevalError(
                f"{job.spec.label}: one replica needs {per[kind]:g} {kind}(s) on one node "
                "(tensor_parallel_size x pipeline_parallel_size); the largest node has "
                f"{max(float(n.get(kind, 0)) for n in nodes):g}"
            )
        needs.append({k: v * job.n for k, v in per.items()})
    waves = plan_waves(needs, room)
    with store.writer():
        for wave in waves:
            if len(waves) > 1 or len(wave) > 1:
                log(f"on Ray at once: {', '.join(jobs[i].spec.label for i in wave)}")
            _run_wave(ray, [jobs[i] for i in wave], contexts, store, run_id, progress_log, progress)
    return [[jobs[i] for i in wave] for wave in waves]


@dataclass
class _Pool:
    """One job's replicas and batches; the driver's only scheduling state."""

    job: Job
    actors: list[Any]
    groups: list[Any]
    alive: list[bool]
    per: list[int]
    """Samples answered by each replica (run.json's ``answered_by_replica``)."""
    queue: deque[tuple[int, list[Sample]]] = field(default_factory=deque)
    flight: dict[Any, tuple[int, int, list[Sample]]] = field(default_factory=dict)
    """Batches in flight by Ray ref: (replica, batch index, batch), until their answers are
    written."""
    owner: dict[str, int] = field(default_factory=dict)
    """A shared context's replica (the one that took its first batch)."""
    got: dict[str, Response] = field(default_factory=dict)
    unanswered: set[str] = field(default_factory=set)
    hashes: dict[str, str] = field(default_factory=dict)
    chash: str = ""
    bar: Any = None

    def dispatch(self, contexts: Mapping[str, Context]) -> None:
        """Hand queued batches to live replicas with room; a shared context's batches to the
        replica that took its first one, while that one lives."""
        for i, actor in enumerate(self.actors):
            while self.alive[i] and sum(f[0] == i for f in self.flight.values()) < IN_FLIGHT:
                pick = next(
                    (
                        k
                        for k, (_, b) in enumerate(self.queue)
                        if (home := _home(b)) is None
                        or self.owner.get(home, i) == i
                        or not self.alive[self.owner[home]]
                    ),
                    None,
                )
                if pick is None:
                    break
                idx, batch = self.queue[pick]
                del self.queue[pick]
                if (home := _home(batch)) is not None:
                    self.owner[home] = i
                need = {s.context_id: contexts[s.context_id] for s in batch if s.context_id}
                self.flight[actor.answer.remote(batch, need, self.job.config)] = (i, idx, batch)

    def take(self, ref: Any, out: list[Response], store: ResponseStore) -> None:
        """Write the answers of the batch in flight at ``ref``."""
        out = [dataclasses.replace(r, sample_hash=self.hashes[r.sample_id]) for r in out]
        store.append(out)
        i = self.flight.pop(ref)[0]  # accounted for once its answers are written
        self.got.update((r.sample_id, r) for r in out)
        self.unanswered.difference_update(r.sample_id for r in out)
        self.per[i] += len(out)
        self.bar.add(
            len(out), sum(r.prompt_tokens for r in out), sum(r.completion_tokens for r in out)
        )

    def died(self, i: int) -> None:
        """Replica ``i`` is gone: its batches in flight go back to the front of the queue.

        Raises:
            LcevalError: it was the last one alive.
        """
        self.alive[i] = False
        mine = [ref for ref, f in self.flight.items() if f[0] == i]
        back = sorted(self.flight.pop(ref)[1:] for ref in mine)
        self.queue.extendleft(reversed(back))
        alive, label = sum(self.alive), self.job.spec.label
        self.bar.set_alive(alive)
        _tell(
            f"warning: replica {i} of {label} died ({alive}/{len(self.alive)} alive); its "
            f"{sum(len(b) for _, b in back)} unanswered sample(s) go to the replicas alive"
        )
        if alive == 0:
            raise LcevalError(
                f"every replica of {label} died ({len(self.unanswered)} sample(s) unanswered; "
                "finished answers are saved, rerun to resume)"
            )


def _home(batch: Sequence[Sample]) -> str | None:
    """The shared context a batch keeps to one replica (None: any replica may answer it)."""
    cid = batch[0].context_id
    return cid if cid is not None and all(s.context_id == cid for s in batch) else None


def _start(
    ray: Any,
    job: Job,
    run_id: str,
    contexts: Mapping[str, Context],
    store: ResponseStore,
    progress_log: Path | None,
    progress: bool,
    pools: list[_Pool],
) -> None:
    """Start a job's replicas (appended to ``pools`` at once, so they are stopped whatever
    happens next) and queue its pending batches, keyed by what a replica says of its engine."""
    from ray.util.placement_group import placement_group  # with ray
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    options = replica_options(job.spec.backend, split_run_options(job.spec.options)[1])
    per = replica_needs(options, ray.cluster_resources().get("GPU", 0.0))
    env = {k: v for k, v in os.environ.items() if k in ENV_KEYS or k.startswith(ENV_PREFIXES)}
    pool, cls = _Pool(job, [], [], [True] * job.n, [0] * job.n), ray.remote(_Replica)
    pools.append(pool)
    for i in range(job.n):
        pool.groups.append(placement_group([per], strategy="STRICT_PACK"))
        actor = cls.options(
            name=f"{run_id}/{job.spec.label}/{i}/{os.getpid()}",
            namespace=NAMESPACE,
            num_cpus=per["CPU"],
            num_gpus=per.get("GPU", 0.0),
            max_restarts=0,  # a dead replica stays dead: the driver gives its batches away
            runtime_env={"env_vars": env},
            scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=pool.groups[-1]),
        )
        pool.actors.append(
            actor.remote(job.spec.backend, job.spec.model, options, stored_name(job.spec))
        )
    about = _describe(ray, pool)
    job.config = engine_config(SimpleNamespace(cache_fields=about["cache_fields"]), job.config)
    pool.chash, name = job.config.hash(), about["name"]
    job.entry = {
        **about["info"],
        "requested_backend": job.spec.backend,
        "replicas": job.n,
        "generation": job.config.__dict__,
        "config_hash": pool.chash,
        "answered_by_replica": pool.per,  # filled as answers arrive
        "name": name,
    }
    pool.hashes = sample_hashes(job.samples, contexts)
    done = store.done(name, pool.chash, pool.hashes)
    pending = [s for s in job.samples if s.id not in done]
    pool.queue.extend(enumerate(batches(pending, job.batch_size or about["call_size"])))
    pool.unanswered = {s.id for s in pending}
    total = len(job.samples)
    pool.bar = Progress(
        progress_log,
        name,
        total,
        total - len(pending),
        desc=f"infer {name}",
        replicas=job.n,
        show=progress,
    )


def _run_wave(
    ray: Any,
    jobs: Sequence[Job],
    contexts: Mapping[str, Context],
    store: ResponseStore,
    run_id: str,
    progress_log: Path | None,
    progress: bool,
) -> None:
    pools: list[_Pool] = []
    state = "stopped"
    try:
        for job in jobs:
            _start(ray, job, run_id, contexts, store, progress_log, progress, pools)
        _loop(ray, pools, contexts, store)
        for pool in pools:
            if pool.unanswered:  # an engine returned fewer answers than asked
                missing = sorted(pool.unanswered)
                more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
                raise LcevalError(
                    f"{pool.job.spec.label}: {len(missing)} sample(s) left unanswered by the "
                    f"replicas ({', '.join(missing[:10])}{more}); the answers written are kept, "
                    "rerun to answer the rest"
                )
        state = "done"
    finally:
        for pool in pools:
            if pool.bar is not None:
                pool.bar.close(state)
            _stop(ray, pool)
    for pool in pools:
        _collect(pool, store)


def _collect(pool: _Pool, store: ResponseStore) -> None:
    """The job's answers, new and stored earlier (a success over an error), in sample order."""
    job, got = pool.job, pool.got
    name = job.entry["name"]
    cut = [r.truncated_tokens for r in got.values() if r.truncated_tokens]
    if cut:  # as lceval.models.generate says it in-process
        log(
            f"warning: {len(cut)} of {len(got)} prompt(s) did not fit {name}'s window: their "
            f"contexts were right-truncated (up to {max(cut):,} tokens dropped; truncated_tokens "
            "in responses.jsonl)"
        )
    wanted = {s.id for s in job.samples} - set(got)
    for r in store:
        if (
            r.sample_id in wanted
            and r.model == name
            and r.config_hash == pool.chash
            and r.answers(pool.hashes[r.sample_id])
            and (r.sample_id not in got or got[r.sample_id].finish_reason == "error")
        ):
            got[r.sample_id] = r
    job.responses = [got[s.id] for s in job.samples if s.id in got]


def _cause(exc: Any) -> str:
    """The exception a Ray task raised, in one line."""
    return one_line(exc.cause if getattr(exc, "cause", None) is not None else exc, 200)


def _describe(ray: Any, pool: _Pool) -> dict[str, Any]:
    """:meth:`_Replica.describe` of the first replica that started (others are marked dead)."""
    from ray.exceptions import RayError, RayTaskError  # with ray

    label, last = pool.job.spec.label, ""
    for i, actor in enumerate(pool.actors):
        try:
            return dict(ray.get(actor.describe.remote()))
        except RayError as exc:  # the engine's load failed (so it would on every replica): say why
            why = _cause(exc) if isinstance(exc, RayTaskError) else creation_error(str(exc))
            if why is not None:
                raise LcevalError(f"replica of {label} failed to start: {why}") from None
            pool.alive[i] = False  # died otherwise
            last = one_line(exc, 120)
    raise LcevalError(f"no replica of {label} started: {last}")


def creation_error(text: str) -> str | None:
    """The exception that ended a replica's ``__init__`` (its engine's load), from the last line
    of Ray's ``ActorDiedError`` text (Ray 2.60) without the module path; None when the actor died
    otherwise."""
    if "creation task" not in text:
        return None
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    head, sep, rest = last.partition(": ")
    if sep and "." in head and " " not in head:  # lceval.core.errors.LcevalError: message
        last = rest if head.endswith("LcevalError") else f"{head.rsplit('.', 1)[-1]}: {rest}"
    return one_line(last, 300) or None


def _loop(
    ray: Any, pools: Sequence[_Pool], contexts: Mapping[str, Context], store: ResponseStore
) -> None:
    """Dispatch and collect until no batch is queued or in flight, or an engine raised; live
    replicas are pinged every :data:`PING_S`, so one killed while idle is noticed too."""
    from ray.exceptions import RayError, RayTaskError  # with ray

    pings: dict[Any, tuple[_Pool, int]] = {}
    pinged = 0.0
    while True:
        for pool in pools:
            pool.dispatch(contexts)
        refs = [ref for pool in pools for ref in pool.flight]
        if not refs:
            return
        if time.monotonic() - pinged >= PING_S:
            pinged = time.monotonic()
            asked = {(id(p), j) for p, j in pings.values()}
            for pool in pools:
                for j, actor in enumerate(pool.actors):
                    if pool.alive[j] and (id(pool), j) not in asked:
                        pings[actor.alive.remote()] = (pool, j)
        for ref in ray.wait(refs + list(pings), num_returns=1, timeout=PING_S)[0]:
            ping = pings.pop(ref, None)
            pool, i = ping or next((p, p.flight[ref][0]) for p in pools if ref in p.flight)
            try:
                out = ray.get(ref)
            except RayTaskError as exc:  # the engine raised: it would on any replica
                raise LcevalError(f"replica {i} of {pool.job.spec.label}: {_cause(exc)}") from None
            except RayError:  # the actor died (SIGKILL, OOM, node lost), with its batches
                if pool.alive[i]:
                    pool.died(i)
                continue
            if ping is None:
                pool.take(ref, out, store)


def _tell(message: str) -> None:
    """``message`` logged, and on the terminal while engine output goes to the run's log."""
    log(message)
    if sys.stderr is not terminal():
        print(f"lceval: {message}", file=sys.stderr, flush=True)


def _stop(ray: Any, pool: _Pool) -> None:
    """Close every live replica's engine, end the actors, free their placement groups."""
    from ray.util.placement_group import remove_placement_group  # with ray

    closing = [a.close.remote() for a, ok in zip(pool.actors, pool.alive, strict=True) if ok]
    with suppress(Exception):  # a replica that died has nothing to close
        ray.wait(closing, num_returns=len(closing), timeout=30)
    for actor in pool.actors:
        with suppress(Exception):  # already gone
            ray.kill(actor)
    for pg in pool.groups:
        with suppress(Exception):  # already removed
            remove_placement_group(pg)
