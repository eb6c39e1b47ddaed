"""Data-parallel inference on Ray: ``replicas=N`` (or ``--ray-address``) starts N Ray actors, each
holding one lceval engine in a placement group of ``tensor_parallel_size x pipeline_parallel_size``
GPUs (one CPU without GPUs). This process hands them lceval's own batches, is the only writer of
``responses.jsonl`` and gives a dead replica's batches to the others; DEVELOPING.md ("Replicas on
Ray") says why not Ray's own pooling.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

import psutil

from lceval.core.console import terminal, verbose
from lceval.core.errors import LcevalError, one_line
from lceval.core.progress import Progress
from lceval.core.records import Context, Response, Sample, sample_hashes
from lceval.core.store import ResponseStore
from lceval.models._compat import ray as ray_compat
from lceval.models.base import GenerationConfig, load_backend, log, replicas_of, split_run_options
from lceval.models.generate import answers, context_order, engine_config
from lceval.models.specs import stored_name

EXTRA = 'pip install -e ".[ray]"'  # the ray extra of pyproject.toml
RAY_ADDRESS_ENV = "LCEVAL_RAY_ADDRESS"  # the cluster infer joins when not told (lceval run sets it)
IN_FLIGHT = 2  # batches handed to one replica at a time: one answering, one waiting
PROBE_S = 5.0  # seconds check_address waits for a TCP connection, then for the GCS
RAYLET_WAIT_S = 90.0  # Ray's fixed 30 s (Ray 2.60): 12 of ~24 local starts missed it at load 7-22
NAMESPACE = "lceval"  # of the replica actors, named <run>/<model>/<i>/<driver pid>
# The driver's variables its replicas get (a cluster started outside lceval has its own env).
ENV_KEYS = ("PYTHONPATH", "TOKENIZERS_PARALLELISM")
ENV_PREFIXES = ("HF_", "TRANSFORMERS_", "VLLM_", "LCEVAL_")


def require_ray() -> Any:
    """The ``ray`` module; an LcevalError naming the extra when Ray is not installed."""
    try:
        import ray  # optional extra: ray, only when replicas are asked
    except ImportError:
        raise LcevalError(
            f"replicas > 1 and --ray-address need Ray, which is not installed: {EXTRA}"
        ) from None
    return ray


def connect(address: str | None = None) -> Any:
    """The ``ray`` module joined to the cluster at ``address`` (``auto``, ``HOST:PORT``; checked
    by :func:`check_address` first), or to a local cluster it starts (None); a process already
    connected (a test's ``ray.init``) stays so.

    Raises:
        LcevalError: Ray missing, or no cluster at ``address``.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    kw = {"namespace": NAMESPACE, "include_dashboard": False, "log_to_driver": verbose()}
    try:
        if address is None:
            start_local(ray, lambda: ray.init(address="local", logging_level="ERROR", **kw))
        else:  # as Ray's CLI: a token on this machine turns on token authentication
            ray_compat.enable_token_auth()
            ray.init(address=address, logging_level="ERROR", **kw)
    except Exception as exc:  # noqa: BLE001 - Ray raises bare Exception on a start timeout
        where = address or "a local cluster"
        raise LcevalError(f"cannot join Ray at {where}: {one_line(exc, 200)}") from None
    return ray


def check_address(address: str | None) -> None:
    """Ray installed and, for ``HOST:PORT`` or ``ray://HOST:PORT``, a live Ray cluster there:
    something listens and answers the GCS's ``GetClusterId``, within about 2 x :data:`PROBE_S`
    (``ray.init`` retries for minutes). None, ``auto`` and ``local`` are left to Ray.

    Raises:
        LcevalError: Ray missing, the address does not parse, or no Ray cluster answers there.
    """
    require_ray()
    if address in (None, "auto", "local"):
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
    refusal = ray_compat.gcs_refusal(host, int(port), PROBE_S)
    if refusal:
        raise LcevalError(
            f"no Ray cluster at {address}: something listens there but does not answer as "
            f"Ray's GCS ({refusal}); give the head's GCS port (6379 unless set)"
        )


def start_local(ray: Any, start: Callable[[], Any], tries: int = 2) -> None:
    """Run ``start()`` (a local ``ray.init``) up to ``tries`` times, Ray's fixed 30 s wait for its
    raylet (no setting in Ray 2.60) lengthened to :data:`RAYLET_WAIT_S` unless the raylet died;
    a failed try's processes (those that inherited its mark) are killed.

    Raises:
        Exception: Ray's own, when the last try fails.
    """
    for attempt in range(1, tries + 1):
        mark = os.environ["LCEVAL_RAY_START"] = f"{os.getpid()}-{attempt}-{os.urandom(4).hex()}"
        try:
            with ray_compat.patient_raylet_wait(RAYLET_WAIT_S, _raylet_alive):
                start()
            return
        except Exception:
            with suppress(Exception):  # a half-started cluster
                ray.shutdown()
            left = [p for p in psutil.process_iter() if p.pid != os.getpid() and _marked(p, mark)]
            for p in left:
                with suppress(psutil.Error):
                    p.kill()
            psutil.wait_procs(left, timeout=10)
            if attempt == tries:
                raise
            log(f"the local Ray cluster did not start (try {attempt}); trying again")


def _raylet_alive() -> bool:
    for p in psutil.Process().children(recursive=True):
        with suppress(psutil.Error):
            if p.name().startswith("raylet") and p.status() != psutil.STATUS_ZOMBIE:
                return True
    return False


def _marked(p: psutil.Process, mark: str) -> bool:
    with suppress(psutil.Error):
        return p.environ().get("LCEVAL_RAY_START") == mark
    return False


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
            "cache_fields": dict(self.engine.cache_fields),
            "info": self.engine.info(),
            "call_size": self.engine.call_size,
        }

    def answer(self, batch: list[Sample], ctx: dict[str, Context], config: Any) -> list[Response]:
        return list(answers(self.engine, batch, ctx, config))

    def close(self) -> None:
        self.engine.close()


def batches(samples: Sequence[Sample], size: int) -> list[list[Sample]]:
    """``samples`` in context order cut into batches of at most ``size``, none spanning two
    contexts of several samples each (single-sample contexts and context-free samples share), so
    that a shared context's samples form whole batches (one prefix for the engine's cache)."""
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
            replicas (before any actor starts); every replica of a model died; an engine raised.
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
    waves = [[jobs[i] for i in wave] for wave in plan_waves(needs, room)]
    with store.writer():
        for wave in waves:
            if len(waves) > 1 or len(wave) > 1:
                log(f"on Ray at once: {', '.join(job.spec.label for job in wave)}")
            state = "stopped"
            try:
                for job in wave:  # its actors kept as they start: stopped whatever happens next
                    job.start(ray, run_id, contexts, store, progress_log, progress)
                _loop(ray, wave, contexts, store)
                state = "done"
            finally:
                for job in wave:
                    job.stop(ray, state)
            for job in wave:
                job.collect(store)
    return waves


@dataclass
class Job:
    """One model of a run answered by replicas: its samples, then its replicas and their queue of
    batches."""

    spec: Any
    """Its :class:`lceval.models.specs.ModelSpec` (``replicas`` among its options)."""
    samples: Sequence[Sample]
    config: GenerationConfig
    batch_size: int | None = None
    """Samples per replica call (None: the engine's call size)."""
    responses: list[Response] = field(default_factory=list)
    entry: dict[str, Any] = field(default_factory=dict)
    """Its run.json entry (``info()`` of a replica, ``replicas``, ``config_hash``, ``name``)."""
    actors: list[Any] = field(default_factory=list)
    groups: list[Any] = field(default_factory=list)
    alive: list[bool] = field(default_factory=list)
    per: list[int] = field(default_factory=list)
    """Samples answered by each replica (run.json's ``answered_by_replica``)."""
    queue: deque[list[Sample]] = field(default_factory=deque)
    got: dict[str, Response] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    chash: str = ""
    bar: Any = None

    @property
    def n(self) -> int:  # replicas
        return replicas_of(self.spec.options)

    def start(
        self,
        ray: Any,
        run_id: str,
        contexts: Mapping[str, Context],
        store: ResponseStore,
        progress_log: Path | None,
        progress: bool,
    ) -> None:
        """Start the replicas and queue the pending batches, keyed by what a replica says of
        its engine (its name, cache fields, call size)."""
        from ray.util.placement_group import placement_group  # with ray
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy  # with ray

        options = replica_options(self.spec.backend, split_run_options(self.spec.options)[1])
        per = replica_needs(options, ray.cluster_resources().get("GPU", 0.0))
        env = {k: v for k, v in os.environ.items() if k in ENV_KEYS or k.startswith(ENV_PREFIXES)}
        self.alive, self.per = [True] * self.n, [0] * self.n
        for i in range(self.n):
            self.groups.append(placement_group([per], strategy="STRICT_PACK"))
            actor = ray.remote(_Replica).options(
                name=f"{run_id}/{self.spec.label}/{i}/{os.getpid()}",
                namespace=NAMESPACE,
                num_cpus=per["CPU"],
                num_gpus=per.get("GPU", 0.0),
                max_restarts=0,  # a dead replica stays dead: the driver gives its batches away
                runtime_env={"env_vars": env},
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=self.groups[-1]
                ),
            )
            self.actors.append(
                actor.remote(self.spec.backend, self.spec.model, options, stored_name(self.spec))
            )
        about = self.describe(ray)
        self.config = engine_config(about["cache_fields"], self.config)
        self.chash, name = self.config.hash(), about["name"]
        self.entry = {
            **about["info"],
            "requested_backend": self.spec.backend,
            "replicas": self.n,
            "generation": self.config.model_dump(),
            "config_hash": self.chash,
            "answered_by_replica": self.per,  # filled as answers arrive
            "name": name,
        }
        self.hashes = sample_hashes(self.samples, contexts)
        done = store.done(name, self.chash, self.hashes)
        pending = [s for s in self.samples if s.id not in done]
        self.queue.extend(batches(pending, self.batch_size or about["call_size"]))
        total = len(self.samples)
        self.bar = Progress(
            progress_log,
            name,
            total,
            total - len(pending),
            desc=f"infer {name}",
            replicas=self.n,
            show=progress,
        )

    def describe(self, ray: Any) -> dict[str, Any]:
        """:meth:`_Replica.describe` of the first replica that started (others are marked dead).

        Raises:
            LcevalError: the engine's load failed (so it would on every replica), or none
                started.
        """
        from ray.exceptions import RayError, RayTaskError  # with ray

        label, last = self.spec.label, ""
        for i, actor in enumerate(self.actors):
            try:
                return dict(ray.get(actor.describe.remote()))
            except RayError as exc:
                why = _cause(exc) if isinstance(exc, RayTaskError) else creation_error(str(exc))
                if why is not None:
                    raise LcevalError(f"replica of {label} failed to start: {why}") from None
                self.alive[i] = False  # died otherwise
                last = one_line(exc, 120)
        raise LcevalError(f"no replica of {label} started: {last}")

    def take(self, i: int, out: list[Response], store: ResponseStore) -> None:
        """Write the answers replica ``i`` gave for one batch."""
        out = [dataclasses.replace(r, sample_hash=self.hashes[r.sample_id]) for r in out]
        store.append(out)
        self.got.update((r.sample_id, r) for r in out)
        self.per[i] += len(out)
        self.bar.add(
            len(out), sum(r.prompt_tokens for r in out), sum(r.completion_tokens for r in out)
        )

    def died(self, i: int) -> None:
        """Replica ``i`` is gone (its batches went back to the queue).

        Raises:
            LcevalError: it was the last one alive.
        """
        self.alive[i] = False
        alive, label = sum(self.alive), self.spec.label
        self.bar.set_alive(alive)
        _tell(
            f"warning: replica {i} of {label} died ({alive}/{len(self.alive)} alive); its "
            "unanswered batches go to the replicas alive"
        )
        if alive == 0:
            raise LcevalError(
                f"every replica of {label} died ({self.bar.total - self.bar.answered} sample(s) "
                "unanswered; finished answers are saved, rerun to resume)"
            )

    def collect(self, store: ResponseStore) -> None:
        """``self.responses``: the job's answers, new and stored earlier (a success over an
        error), in sample order."""
        got = self.got
        name = self.entry["name"]
        cut = [r.truncated_tokens for r in got.values() if r.truncated_tokens]
        if cut:  # as lceval.models.generate says it in-process
            log(
                f"warning: {len(cut)} of {len(got)} prompt(s) did not fit {name}'s window: their "
                f"contexts were right-truncated (up to {max(cut):,} tokens dropped; "
                "truncated_tokens in responses.jsonl)"
            )
        wanted = {s.id for s in self.samples} - set(got)
        for r in store:
            if (
                r.sample_id in wanted
                and r.model == name
                and r.config_hash == self.chash
                and r.answers(self.hashes[r.sample_id])
                and (r.sample_id not in got or got[r.sample_id].finish_reason == "error")
            ):
                got[r.sample_id] = r
        self.responses = [got[s.id] for s in self.samples if s.id in got]

    def stop(self, ray: Any, state: str) -> None:
        """Close the bar and every live replica's engine, end the actors, free their
        placement groups."""
        from ray.util.placement_group import remove_placement_group  # with ray

        if self.bar is not None:
            self.bar.close(state)
        closing = [a.close.remote() for a, ok in zip(self.actors, self.alive, strict=False) if ok]
        with suppress(Exception):  # a replica that died has nothing to close
            ray.wait(closing, num_returns=len(closing), timeout=30)
        for actor in self.actors:
            with suppress(Exception):  # already gone
                ray.kill(actor)
        for pg in self.groups:
            with suppress(Exception):  # already removed
                remove_placement_group(pg)


def _loop(
    ray: Any, jobs: Sequence[Job], contexts: Mapping[str, Context], store: ResponseStore
) -> None:
    """Hand each live replica up to :data:`IN_FLIGHT` queued batches and write the answers as
    they arrive, until no batch is queued or in flight; a dead replica's batches go back to the
    queue (a replica is idle only once the queue is empty, so Ray's failed task tells of every
    death that matters).

    Raises:
        LcevalError: an engine raised (it would on any replica; a batch answered in part
            included), or every replica of a model died.
    """
    from ray.exceptions import RayError, RayTaskError  # with ray

    flight: dict[Any, tuple[Job, int, list[Sample]]] = {}
    while True:
        for job in jobs:
            for i, actor in enumerate(job.actors):
                busy = sum(x is job and j == i for x, j, _ in flight.values())
                for _ in range(IN_FLIGHT - busy if job.alive[i] else 0):
                    if not job.queue:
                        break
                    batch = job.queue.popleft()
                    need = {s.context_id: contexts[s.context_id] for s in batch if s.context_id}
                    flight[actor.answer.remote(batch, need, job.config)] = (job, i, batch)
        if not flight:
            return
        ref = ray.wait(list(flight), num_returns=1)[0][0]
        job, i, batch = flight.pop(ref)
        try:
            out = ray.get(ref)
        except RayTaskError as exc:
            raise LcevalError(f"replica {i} of {job.spec.label}: {_cause(exc)}") from None
        except RayError:  # the actor died (SIGKILL, OOM, node lost) with this batch
            job.queue.appendleft(batch)
            if job.alive[i]:
                job.died(i)
            continue
        job.take(i, out, store)  # every sample of it: the replica's answers() checks


def _cause(exc: Any) -> str:
    """The exception a Ray task raised, in one line."""
    return one_line(exc.cause if getattr(exc, "cause", None) is not None else exc, 200)


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


def _tell(message: str) -> None:
    """``message`` logged, and on the terminal while engine output goes to the run's log."""
    log(message)
    if sys.stderr is not terminal():
        print(f"lceval: {message}", file=sys.stderr, flush=True)
