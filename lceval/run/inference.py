"""The infer stage: the run's pending samples answered by one or more models, in-process or on
Ray replicas, appended to responses.jsonl (resumable)."""

from __future__ import annotations

import functools
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lceval.benchmarks import registry
from lceval.contexts.modes import ContextMode, check_retrievers, variant_name
from lceval.contexts.modes import view as contexts_view
from lceval.core.console import engine_output, waiting
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.progress import progress_path
from lceval.core.records import Context, Response, Sample, sample_hashes
from lceval.core.store import ResponseStore
from lceval.models import lifeline
from lceval.models.backends import resolve_backend
from lceval.models.base import (
    Backend,
    GenerationConfig,
    check_load,
    load_backend,
    log,
    replicas_of,
    runs_local_engine,
)
from lceval.models.generate import engine_config, generate, prefix_reuse
from lceval.models.prompts import context_text
from lceval.models.replicas import RAY_ADDRESS_ENV, Job, answer_jobs, check_address
from lceval.models.specs import (
    ModelSpec,
    check_fits,
    check_names,
    location,
    recorded_options,
    resolve_models,
    stored_name,
    truncation_window,
)
from lceval.params import Generation, given, keywords_of, layered
from lceval.run import plan
from lceval.run.config import (
    INFERENCE_DEFAULTS,
    CheckedInference,
    InferCall,
    InferConfig,
    validate,
)
from lceval.run.selection import per_task

DEFAULT_CALL_SIZE = 8
"""Samples per engine call when neither the caller nor the engine says (:func:`infer`)."""


def select_samples(
    run: RunDir,
    samples: Sequence[Sample],
    *,
    limit: int | None = None,
    tasks: Sequence[str] | None = None,
) -> list[Sample]:
    """The samples of ``tasks`` (None: all), ``limit`` of each task (None: all), drawn across
    the task's lengths and variants (:func:`lceval.run.selection.per_task`: stratified, seeded;
    lm-evaluation-harness's ``--limit`` is per task too), in file order.

    Raises:
        LcevalError: a task the run does not hold, or nothing left to answer.
    """
    if tasks:
        held = {s.task for s in samples}
        unknown = set(tasks) - held
        if unknown:
            raise LcevalError(
                f"task(s) {', '.join(sorted(unknown))[:200]} not in run {run.run_id}; "
                f"it holds {', '.join(sorted(held))[:200]}"
            )
        samples = [s for s in samples if s.task in set(tasks)]
    if limit is not None:
        keys = {s.benchmark for s in samples}
        strata = {k: registry.get(k).strata for k in keys if k in registry.BENCHMARKS}
        samples = per_task(samples, limit, strata=strata)
    if not samples:
        raise LcevalError(f"run {run.run_id} has no samples to answer")
    return list(samples)


@keywords_of(InferCall)
def infer(run_id: str, /, **options: Any) -> list[Response]:
    """Answer the run's pending samples with one model or several, one engine at a time (load,
    answer, close, next); resumable per model; each recorded in run.json (engine, config hash,
    ``prefix_reuse``, ``timing``).

    The keywords are the fields of :class:`lceval.run.config.InferCall` (those of ``lceval
    infer``'s flags, and ``root``, ``progress``): :func:`run_infer` of those given. Names,
    options and (unless ``truncate``, which right-truncates contexts as LIFBench Sec. 5.1 and
    L-Eval Sec. 4 do) that each window holds the longest prompt plus its budget are checked
    before the first engine starts. A model's ``context`` option answers each mode
    (:func:`context_plans`) under ``<model>@context=<mode>``; ``replicas=N`` (N > 1) or
    ``ray_address`` answers on Ray.

    Returns:
        The responses of every model, model after model, each in sample order.

    Raises:
        LcevalError: no model or both ``model`` and ``models``, an unknown backend, model or
            option, a window shorter than the longest prompt, missing samples, bad limits, Ray
            asked for but not installed, a ``ray_address`` where no Ray cluster answers, a
            cluster too small for a model's replicas.
    """
    if "run_id" in options:  # the positional, never a keyword (it would go over it)
        raise LcevalError("infer: run_id is the first argument, not a keyword")
    call = validate(InferCall, {"run_id": run_id, **options}, "params", "infer")
    return run_infer(call, root=call.root, progress=call.progress)


def run_infer(
    config: CheckedInference, *, root: str | Path | None = None, progress: bool = True
) -> list[Response]:
    """:func:`infer` of a validated config (``lceval infer``, ``lceval eval``, the NTK sweep):
    what ``config`` set (:func:`lceval.params.given`) goes over the inference settings the run's
    build params declared (run.json's ``inference``: the smoke set's truncation and 64-token
    answers, L-Eval's ``backend: hf``), which go over the defaults (:func:`lceval.params.layered`).
    """
    if config.run_id is None:
        raise LcevalError("infer needs a run id: lceval infer RUN (see lceval list)")
    run = RunDir(config.run_id, root)
    declared = {k: v for k, v in run.read_meta().inference.items() if k in INFERENCE_DEFAULTS}
    said = {k: v for k, v in given(config).items() if k in InferConfig.model_fields}
    if said.get("backend", declared.get("backend")) != declared.get("backend"):
        declared.pop("backend_options", None)  # another engine than declared: not its options
    cfg = layered(InferConfig, declared, said, where="infer")
    one, many = cfg.model, cfg.models
    if isinstance(one, list):  # the CLI's repeated --model (InferConfig refuses it beside models)
        one, many = None, one
    if one is None and many is None:  # the declared default, from every door
        if cfg.backend == "openai":
            raise LcevalError("the openai backend needs --model <served model name> (model=)")
        one = "embedded"  # the offline stand-in
    specs = resolve_models(one, many, cfg.backend, cfg.backend_options)
    # -o context=full,none: what each model reads in place of the long context (never the
    # engine's option): each mode's answers are stored under their own name
    modes = [ContextMode.parse_list(spec.options.get("context", "full")) for spec in specs]
    specs = tuple(
        spec.with_options({k: v for k, v in spec.options.items() if k != "context"})
        for spec in specs
    )
    check_names(specs, run.read_meta().models, run.run_id)  # an answer's identity: its name
    # Everything the user can get wrong is checked before the engine starts (tens of seconds).
    samples = select_samples(run, run.read_samples(), limit=cfg.limit, tasks=cfg.tasks)
    plans = [context_plans(m, samples) for m in modes]
    check_retrievers([m for ms in modes for m in ms])
    contexts = run.read_contexts()
    for s in samples:
        context_text(s, contexts)  # a sample naming a missing context stops here
    for spec in specs:
        check_load(spec.backend, spec.model, dict(spec.options))
    ray_address = cfg.ray_address or os.environ.get(RAY_ADDRESS_ENV) or None
    on_ray = [  # API models (openai) stay in this process: their server does the work
        runs_local_engine(spec.backend)
        and (ray_address is not None or replicas_of(spec.options) > 1)
        for spec in specs
    ]
    if any(r and m != (ContextMode("full"),) for r, m in zip(on_ray, modes, strict=True)):
        raise LcevalError(
            "option context other than full is not supported with Ray replicas yet: answer the "
            "baselines without replicas or --ray-address"
        )
    if any(on_ray):  # Ray installed, its cluster answering: one line, before anything starts
        check_address(ray_address)
    ResponseStore(run.responses)  # a corrupt responses file stops here, before a model loads
    gen = GenerationConfig(**cfg.model_dump(include=set(Generation.model_fields)))
    # the same command again, every selected sample answered by every model: no window check
    # (a tokenizer load), plan or engine; the stored answers (seconds, not minutes)
    stored: list[list[Response] | None] = [
        None if r else _answered_before(run, spec, gen, p, contexts)
        for spec, p, r in zip(specs, plans, on_ray, strict=True)
    ]
    if all(kept is not None for kept in stored):
        out: list[Response] = []
        for spec, kept in zip(specs, stored, strict=True):
            out += kept or []
            n = len(kept or [])
            log(f"{spec.label}: all {n} sample(s) already answered; no engine started")
        return out
    notes = [
        check_fits(
            spec, samples, contexts, functools.partial(_budget, gen), truncate=bool(cfg.truncate)
        )
        for spec in specs
    ]
    for note in notes:  # said once every model is known to fit
        log(note)
    # size and estimate on stderr now; into run.json with the first model's entry, so a
    # command failing before its first answer (a missing or refused key) leaves run.json as it was
    pending: dict[str, Any] = {}
    sized = None
    try:
        # the prompts as the engine gets them: with --truncate, cut to the window
        window = truncation_window(specs) if cfg.truncate else None
        sized = plan.plan_run(run, samples=samples, generation=gen, window=window)
        pending["plan"] = sized.summary()
        from lceval.run import cost  # pulls pandas

        for line in [*sized.lines(), *cost.before_answering(sized.rows, specs)]:
            log(line)
    except LcevalError as exc:  # no tiktoken file: inference goes on
        log(f"plan: not computed ({exc})")
    responses: list[Response] = []
    ray_specs = [spec for spec, r in zip(specs, on_ray, strict=True) if r]
    if ray_specs:
        responses += _infer_ray(
            run, ray_specs, gen, samples, contexts, cfg.batch_size, progress, ray_address, pending
        )
    local = [(spec, p) for spec, p, r in zip(specs, plans, on_ray, strict=True) if not r]
    for i, (spec, p) in enumerate(local):
        if len(local) > 1:
            log(f"model {i + 1}/{len(local)}: {spec.label} ({spec.backend})")
        with run.restored_on_failure([run.run_json], unless_changed=run.responses):
            responses += _infer_engine(
                run, spec, gen, contexts, cfg.batch_size, progress, pending, p
            )
    if sized is not None:  # this machine calibrated by what was measured: the next estimate
        from lceval.run import cost  # pulls pandas

        for line in cost.after_answering(run, sized.rows):
            log(line)
    return responses


def _budget(gen: GenerationConfig, sample: Sample) -> int:
    """``sample``'s answer budget in tokens plus the thinking budget given (none when not)."""
    return gen.budget(sample) + (gen.max_thinking_tokens or 0)


def _infer_ray(
    run: RunDir,
    specs: Sequence[ModelSpec],
    config: GenerationConfig,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    batch_size: int | None,
    progress: bool,
    address: str | None,
    pending: dict[str, Any],
) -> list[Response]:
    """:func:`infer` for the models answered by replicas on Ray, recorded in run.json (with
    ``pending``'s fields, then cleared); run.json is put back as it was when nothing was
    answered (:meth:`lceval.core.io.RunDir.restored_on_failure`)."""
    jobs = [Job(spec, samples, config, batch_size) for spec in specs]
    t0 = time.perf_counter()
    # a local cluster this command starts (gcs, raylet, agents, replica workers) dies with it
    with (
        run.restored_on_failure([run.run_json], unless_changed=run.responses),
        engine_output(run.path, "infer (ray)"),
        lifeline.guard(run.path),
    ):
        try:
            answer_jobs(
                jobs,
                contexts,
                ResponseStore(run.responses),
                run_id=run.run_id,
                address=address,
                progress_log=progress_path(run.path),
                progress=progress,
            )
        finally:
            wall = round(time.perf_counter() - t0, 2)
            for job in jobs:
                if job.entry:
                    entry = {k: v for k, v in job.entry.items() if k != "name"}
                    entry["location"] = location(job.spec)
                    entry["options"] = recorded_options(job.spec)
                    entry["timing"] = {"ray_wall_s": wall}
                    run.update_meta(models={job.entry["name"]: entry}, **pending)
                    pending.clear()
    return [r for job in jobs for r in job.responses]


def context_plans(
    modes: Sequence[ContextMode], samples: Sequence[Sample]
) -> list[tuple[ContextMode, list[Sample]]]:
    """The samples each context mode answers: all of them for ``full``; for another mode those
    whose benchmark supports it on their task (:attr:`lceval.benchmarks.base.Benchmark.context`),
    the others named with the reason in one line on stderr.

    Raises:
        LcevalError: a mode that no selected sample supports, in one line naming why (RULER's
            needle search with ``context=none``).
    """
    out: list[tuple[ContextMode, list[Sample]]] = []
    for mode in modes:
        if mode.kind == "full":  # every sample, of any benchmark (registered or not)
            out.append((mode, list(samples)))
            continue
        kept: list[Sample] = []
        refused: Counter[tuple[str, str, str]] = Counter()  # (benchmark, task, why) -> samples
        for s in samples:
            try:
                declared = registry.get(s.benchmark).context
            except LcevalError:
                declared = None
            why = (
                declared.why_not(mode.kind, s.task) if declared else "it declares no context modes"
            )
            if why is None:
                kept.append(s)
            else:
                refused[s.benchmark, s.task, why] += 1
        if refused:
            bench, task, why = next(iter(refused))
            more = f" (and {len(refused) - 1} more task(s))" if len(refused) > 1 else ""
            named = f"context={mode} makes no sense on {bench} {task}: {why}{more}"
            if not kept:
                raise LcevalError(named)
            log(f"{named}; its {refused.total()} sample(s) are not answered")
        out.append((mode, kept))
    return out


def _infer_engine(
    run: RunDir,
    spec: ModelSpec,
    config: GenerationConfig,
    contexts: Mapping[str, Context],
    batch_size: int | None,
    progress: bool,
    pending: dict[str, Any],
    plans: Sequence[tuple[ContextMode, Sequence[Sample]]],
) -> list[Response]:
    """:func:`infer` for one model: one engine answers the samples of each context mode in
    ``plans``, each mode's answers under its own name and run.json entry (with ``pending``'s
    fields, written once and then cleared)."""
    stored = _answered_before(run, spec, config, plans, contexts)
    if stored is not None:  # a resumed run with nothing left loads no model
        log(f"{spec.label}: all {len(stored)} sample(s) already answered; no engine started")
        return stored
    # Engine start-up and shutdown records go to logs/lceval.log (the terminal keeps lceval's
    # lines and the progress bar; -v or LCEVAL_VERBOSE=1 shows everything).
    entries: dict[str, dict[str, Any]] = {}
    responses: list[Response] = []
    with engine_output(run.path, "infer"), lifeline.guard(run.path):  # engines die with us
        t0 = time.perf_counter()
        with waiting(f"starting the {resolve_backend(spec.backend)} engine for {spec.label}"):
            engine = load_backend(spec.backend, spec.model, **spec.options)
        base = stored_name(spec)
        start_s = round(time.perf_counter() - t0, 2)
        try:
            for mode, chosen in plans:
                engine.name = variant_name(base, mode)
                responses += _answer_mode(
                    run, spec, engine, config, mode, chosen, contexts, batch_size, progress,
                    pending, entries,
                )  # fmt: skip
        finally:
            t0 = time.perf_counter()
            engine.close()
            close_s = round(time.perf_counter() - t0, 2)
    for name, entry in entries.items():
        timing = {"engine_start_s": start_s, **entry.pop("timing", {}), "engine_close_s": close_s}
        run.update_meta(models={name: {**entry, "timing": timing}})
    return responses


def _answered_before(
    run: RunDir,
    spec: ModelSpec,
    config: GenerationConfig,
    plans: Sequence[tuple[ContextMode, Sequence[Sample]]],
    contexts: Mapping[str, Context],
) -> list[Response] | None:
    """The stored answers when run.json records ``spec`` (same backend, place, options and
    decoding) and every sample of ``plans`` is answered under its config hash, else None."""
    models, store = run.read_meta().models, ResponseStore(run.responses)
    decoding = config.model_dump(exclude={"engine"})
    out: list[Response] = []
    for mode, chosen in plans:
        name = variant_name(stored_name(spec), mode)
        e = models.get(name)
        if not isinstance(e, Mapping) or not isinstance(e.get("generation"), Mapping):
            return None
        same = (e.get("requested_backend"), e.get("backend"), e.get("location")) == (
            spec.backend,
            resolve_backend(spec.backend),
            location(spec),
        )
        recorded = {k: v for k, v in e["generation"].items() if k != "engine"}
        if not same or e.get("options") != recorded_options(spec) or recorded != decoding:
            return None
        hashes = sample_hashes(chosen, contexts)
        if not {s.id for s in chosen} <= store.done(name, e["config_hash"], hashes):
            return None
        got: dict[str, Response] = {}
        for r in store:
            if r.model == name and r.config_hash == e["config_hash"] and r.sample_id in hashes:
                if r.finish_reason != "error" and r.answers(hashes[r.sample_id]):
                    got.setdefault(r.sample_id, r)
        out += [got[s.id] for s in chosen]
    return out


def _answer_mode(
    run: RunDir,
    spec: ModelSpec,
    engine: Backend,
    config: GenerationConfig,
    mode: ContextMode,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    batch_size: int | None,
    progress: bool,
    pending: dict[str, Any],
    entries: dict[str, dict[str, Any]],
) -> list[Response]:
    """Answer ``samples`` with ``engine`` (named for ``mode`` already) reading their contexts as
    ``mode`` says (:func:`lceval.contexts.modes.view`); its run.json entry is written before
    the first answer and kept in ``entries`` for the timings."""
    if mode.kind != "full":  # the mode joins the response key's config hash
        config = config.model_copy(update={"engine": {**config.engine, "context": str(mode)}})
    keyed = engine_config(engine, config)
    entry: dict[str, Any] = {
        **engine.info(),
        "requested_backend": spec.backend,
        "location": location(spec),
        "options": recorded_options(spec),
        "generation": keyed.model_dump(),
        "config_hash": keyed.hash(),
    }
    if mode.kind != "full":
        entry["context"] = str(mode)
        entry["model"] = stored_name(spec)
    earlier = run.read_meta().models.get(engine.name)
    if isinstance(earlier, Mapping) and earlier.get("config_hash") not in (None, keyed.hash()):
        log(
            f"run {run.run_id} already has answers of {engine.name} from "
            f"{earlier.get('backend')} (config {earlier.get('config_hash')}); these are "
            f"kept apart under config {keyed.hash()} ({keyed.engine}), and both are scored"
        )
    run.update_meta(models={engine.name: entry}, **pending)
    pending.clear()
    hashes = sample_hashes(samples, contexts)  # the built samples': answers join the full ones
    shown, shown_contexts = contexts_view(mode, samples, contexts)
    counts0 = prefix_reuse(engine)
    t0 = time.perf_counter()
    size = batch_size or engine.call_size
    if hasattr(engine, "run_dir"):  # the openai backend records its batches there
        engine.run_dir = run.path
    responses = generate(
        engine,
        shown,
        shown_contexts,
        config,
        store=ResponseStore(run.responses),
        batch_size=size,
        progress=progress,
        desc=f"infer {engine.name}",
        progress_log=progress_path(run.path),
        hashes=hashes,
    )
    entry["timing"] = {"generate_s": round(time.perf_counter() - t0, 2)}
    counts = prefix_reuse(engine)
    if counts is not None and counts0 is not None:
        entry["prefix_reuse"] = counts.minus(counts0).as_dict()
    entries[engine.name] = entry
    return responses
