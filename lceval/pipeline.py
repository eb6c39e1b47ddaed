"""The stages on a run folder: build, infer, score, report. The CLI and the notebooks call these."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm  # a plain text bar: tqdm.auto needs ipywidgets in notebooks

from lceval import compare_page, plan, registry, samples_page
from lceval.benchmark import (
    NOTEBOOK_PARAMS,
    BatchJudge,
    BuildResult,
    ScorerSpec,
    scorer_of,
)
from lceval.config import INFERENCE_DEFAULTS, InferConfig, test_backend, test_limit, validate
from lceval.console import engine_output, terminal
from lceval.errors import LcevalError
from lceval.io import RunDir, atomic_open, new_meta
from lceval.models import lifeline
from lceval.models.base import (
    Backend,
    GenerationConfig,
    check_load,
    context_text,
    load_backend,
    log,
    replicas_of,
    runs_local_engine,
)
from lceval.models.cache import ResponseStore
from lceval.models.generate import engine_config, generate, prefix_reuse
from lceval.models.specs import (
    ModelSpec,
    check_fits,
    check_names,
    location,
    resolve_models,
    stored_name,
)
from lceval.params import load_params  # noqa: F401 - lceval.pipeline.load_params, as before
from lceval.progress import progress_path
from lceval.records import Context, Judgement, Response, Sample, Score, sample_hashes

DEFAULT_CALL_SIZE = 8
"""Samples per engine call when neither the caller nor the engine says (:func:`infer`)."""


def build(
    run_id: str,
    benchmark: str,
    params: Mapping[str, Any],
    *,
    root: str | Path | None = None,
    seed: int | None = None,
    force: bool = False,
) -> RunDir:
    """Build a benchmark's samples into ``<root>/<run_id>/`` and record run.json.

    A rebuild over a run that already has responses would pair old answers with new samples, so
    it is refused unless ``force``; then responses.jsonl and scores.parquet are moved aside to
    ``<name>.replaced-<UTC time>`` first. A rebuild that gives the same samples and contexts
    (builds are deterministic) keeps the responses and run.json's ``models``: rerunning a
    notebook resumes it.

    Args:
        run_id: run folder name.
        benchmark: a registered benchmark key (``lceval.registry.BENCHMARKS``).
        params: the builder's params (a notebook's params file as it is: ``run_id`` and
            ``outputs_root`` and the notebook-only keys each builder declares are ignored).
        root: folder holding run folders.
        seed: overrides ``params["seed"]`` when given.
        force: rebuild a run that has responses (moving them aside).

    Raises:
        LcevalError: unknown benchmark, bad params, unwritable folder, a run with responses
            whose samples would change and no ``force``.
    """
    return build_suite(run_id, {benchmark: params}, root=root, seed=seed, force=force)


def build_suite(
    run_id: str,
    parts: Mapping[str, Mapping[str, Any]],
    *,
    root: str | Path | None = None,
    seed: int | None = None,
    force: bool = False,
) -> RunDir:
    """Build several benchmarks' samples into one run folder (e.g. RULER retrieval beside L-Eval
    GSM for the NTK sweep); :func:`build` is the one-benchmark case.

    Samples and contexts of every part are written together (ids are prefixed by the benchmark
    key, so they cannot collide); run.json records each part's params and sources under its key.
    ``score`` and ``report`` already handle runs holding several benchmarks. Rebuilding follows
    :func:`build` (identical samples keep the responses).

    Args:
        run_id: run folder name.
        parts: benchmark key -> its builder params, in build order.
        root: folder holding run folders.
        seed: overrides every part's ``seed`` when given (run.json's seed: this, else the first
            part's).
        force: rebuild a run whose responses would otherwise be paired with changed samples.

    Raises:
        LcevalError: no parts, an unknown benchmark, bad params, duplicate sample or context ids,
            unwritable folder, a run with responses whose samples change and no ``force``.
    """
    if not parts:
        raise LcevalError("build: no benchmark to build")
    run = RunDir(run_id, root)
    cleaned: dict[str, dict[str, Any]] = {}
    results: dict[str, BuildResult] = {}
    for key, part in parts.items():
        p = {k: v for k, v in dict(part).items() if k not in NOTEBOOK_PARAMS}
        if seed is not None:
            p["seed"] = seed
        cleaned[key] = p
        results[key] = registry.get(key).build(p)
    samples = [s for r in results.values() for s in r.samples]
    contexts = [c for r in results.values() for c in r.contexts]
    for what, ids in (("sample", [s.id for s in samples]), ("context", [c.id for c in contexts])):
        if len(set(ids)) != len(ids):
            raise LcevalError(f"build: duplicate {what} ids across {', '.join(parts)}")
    has_responses = run.responses.exists() and run.responses.stat().st_size > 0
    models: dict[str, Any] = {}
    if has_responses and not force:
        if not _same_records(run, samples, contexts):
            raise LcevalError(
                f"run {run_id} already has responses; rebuilding would pair them with new "
                "samples (use --force to move them aside, or another --run-id)"
            )
        models = dict(run.read_meta().models) if run.run_json.exists() else {}
    encodings = sorted({r.encoding for r in results.values() if r.encoding})
    first = next(iter(cleaned.values()))
    inference = _inference_defaults(cleaned)
    meta = new_meta(
        run_id,
        params=cleaned,
        seed=int(seed if seed is not None else first.get("seed", 0)),
        sources={k: dict(r.sources) for k, r in results.items()},
        encoding=", ".join(encodings) or None,
        models=models,
        inference=inference,
    )
    run.create()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = [
        (path, path.with_name(f"{path.name}.replaced-{stamp}"))
        for path in (run.responses, run.scores)
        if has_responses and force and path.exists()
    ]
    # contexts, samples and run.json are put back, and the answers moved aside moved back, if
    # any write fails (a full disk): a failed build leaves the run as it was
    with run.restored_on_failure([run.contexts, run.samples, run.run_json]):
        try:
            for path, aside in moved:
                path.rename(aside)
            run.write_samples(samples, contexts)
            run.write_meta(meta)
        except BaseException:
            for path, aside in moved:
                if aside.exists() and not path.exists():
                    aside.rename(path)
            raise
    return run


def _inference_defaults(parts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The inference settings the build params declare (:data:`lceval.config.INFERENCE_DEFAULTS`:
    the smoke set's ``truncate: true`` and ``max_new_tokens: 64``), checked by the declared
    :class:`lceval.config.InferConfig`; null values are left out (the sample's own budget).

    Raises:
        LcevalError: a declared value of the wrong type or range (names the key).
    """
    out: dict[str, Any] = {}
    for key, part in parts.items():
        schema = registry.get(key).params_schema()
        own = {f.name for f in dataclasses.fields(schema)} if schema is not None else set()
        # a builder that declares a key itself (max_new_tokens: the samples' budgets) sets it there
        given = {k: part[k] for k in INFERENCE_DEFAULTS if part.get(k) is not None and k not in own}
        checked = validate(InferConfig, given, "params", key)
        for k in given:
            if k in out and out[k] != getattr(checked, k):
                raise LcevalError(
                    f"build: the parts declare different {k}: {out[k]!r} and {given[k]!r}"
                )
            out[k] = getattr(checked, k)
    return out


def _same_records(run: RunDir, samples: Sequence[Sample], contexts: Sequence[Context]) -> bool:
    """Whether the run's samples.jsonl and contexts.jsonl hold exactly these records."""
    from lceval.io import dumps

    for path, records in ((run.samples, samples), (run.contexts, contexts)):
        if not path.exists():
            return False
        with path.open(encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
        if lines != [dumps(r) for r in records]:
            return False
    return True


def select_samples(
    run: RunDir,
    samples: Sequence[Sample],
    *,
    limit: int | None = None,
    tasks: Sequence[str] | None = None,
) -> list[Sample]:
    """The samples of ``run`` an inference call answers: those of ``tasks`` (all when None),
    the first ``limit`` of them in file order.

    Raises:
        LcevalError: a task filter naming a task the run does not hold, limit < 1, or nothing
            left to answer.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise LcevalError(f"limit must be a positive integer, got {limit!r}")
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
        samples = samples[:limit]
    if not samples:
        raise LcevalError(f"run {run.run_id} has no samples to answer")
    return list(samples)


def _answer(
    run: RunDir,
    backend: Backend,
    config: GenerationConfig | None,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    batch_size: int,
    progress: bool,
) -> list[Response]:
    """Answer ``samples`` (already selected, :func:`select_samples`) with ``backend``, appending
    to the run's responses.jsonl (``lceval.models.generate``: resumable, answered samples
    skipped); the responses of this model and config, in sample order."""
    return generate(
        backend,
        samples,
        contexts,
        config,
        store=ResponseStore(run.responses),
        batch_size=batch_size,
        progress=progress,
        desc=f"infer {backend.name}",
        progress_log=progress_path(run.path),
    )


def infer(
    run_id: str,
    backend: str = "auto",
    model: str | None = None,
    *,
    models: Sequence[Any] | None = None,
    root: str | Path | None = None,
    batch_size: int | None = None,
    limit: int | None = None,
    tasks: Sequence[str] | None = None,
    max_new_tokens: int | None = None,
    temperature: float = 0.0,
    seed: int = 0,
    backend_options: Mapping[str, Any] | None = None,
    truncate: bool | None = None,
    progress: bool = True,
    config: InferConfig | None = None,
    ray_address: str | None = None,
) -> list[Response]:
    """Answer the run's pending samples with one model or several, one engine at a time (load,
    answer, close, next); resumable per model; each recorded in run.json.

    ``model`` names one model, ``models`` several (``lceval.models.specs``: strings, or
    ``{model, backend, options, name}`` mappings whose options go over ``backend_options``);
    ``"embedded"`` names the SmolLM2-135M stand-in, which is never used unless named. Everything
    that can be wrong is checked for every model before the first engine starts: names, options,
    and (unless ``truncate``) that each model's window holds the run's longest prompt plus its
    budget (:func:`lceval.models.specs.check_fits`). With ``truncate`` a longer prompt has its
    context right-truncated to the window (LIFBench Sec. 5.1, L-Eval Sec. 4).

    ``backend="auto"`` (the default) loads the engine ``lceval.models.base.choose_backend``
    picks (vLLM when it imports, CPU included; else hf) and says which on stderr. run.json's
    ``models`` entry records the engine actually loaded (``backend``), the one asked for
    (``requested_backend``), the response cache key's config hash (engine and dtype included)
    ``prefix_reuse``: prompt tokens requested and computed by this call (``reuse`` 0..1;
    ``measured: false`` where the engine does not report it) and ``timing``: seconds of this
    call spent starting the engine, answering (``generate_s``, cached answers skipped) and
    closing it. Before the engine starts, the samples' size and estimated GPU time
    (:func:`lceval.plan.announce`, in the run's tiktoken encoding) go to stderr in two lines and to
    run.json's ``plan``.

    ``batch_size`` is the number of samples per engine call, each call's answers flushed to disk
    before the next; None: the engine's ``call_size`` (vLLM 256: its scheduler batches a whole
    call continuously, and the smoke set answered in calls of 4 took 60 s instead of 44 s; hf its
    own batch size; else :data:`DEFAULT_CALL_SIZE`).

    A model with the ``replicas=N`` option (N > 1), and every model when ``ray_address`` is
    given (``auto`` or ``HOST:PORT``: an existing Ray cluster; the models' replicas default to 1
    there), is answered by engine replicas on Ray (:mod:`lceval.models.replicas`): models whose
    replicas fit the cluster together run at once, the driver (this process) writing every answer.
    The progress of each model goes to the terminal and to ``logs/progress.jsonl``
    (:mod:`lceval.progress`, ``lceval status RUN``).

    Returns:
        The responses of every model, model after model, each in sample order.

    Raises:
        LcevalError: no model named, both ``model`` and ``models``, unknown backend, model or
            option, a window shorter than the longest prompt, missing samples, bad limits,
            replicas asked without Ray installed, a cluster too small for a model's replicas.
    """
    given = {
        "backend": backend,
        "model": model,
        "models": models,
        "batch_size": batch_size,
        "limit": limit,
        "tasks": tasks,
        "max_new_tokens": max_new_tokens,
        "temperature": temperature,
        "seed": seed,
        "backend_options": backend_options,
        "truncate": truncate,
    }
    # keyword arguments are read by the same declared type as the CLI's flags
    cfg = config if config is not None else validate(InferConfig, given, "params", "infer")
    run = RunDir(run_id if cfg.run_id is None else cfg.run_id, root)
    meta = run.read_meta()
    # The run's build params may declare its inference settings (the smoke set: truncate,
    # 64-token answers); what the caller gives goes over them.
    declared = {k: v for k, v in dict(meta.inference).items() if k in INFERENCE_DEFAULTS}
    unset = {k: v for k, v in declared.items() if getattr(cfg, k) is None}
    if unset:
        cfg = validate(InferConfig, {**cfg.model_dump(exclude_unset=True), **unset})
    backend, batch_size, limit, tasks = (
        test_backend(cfg.backend),
        cfg.batch_size,
        test_limit(cfg.limit),
        cfg.tasks,
    )
    max_new_tokens, temperature, seed = cfg.max_new_tokens, cfg.temperature, cfg.seed
    backend_options, truncate = cfg.backend_options, bool(cfg.truncate)
    one, many = cfg.model, cfg.models
    if isinstance(one, list):  # the CLI's repeated --model: a list of models
        if many is not None:
            raise LcevalError("infer: give model or models, not both")
        one, many = None, one
    specs = resolve_models(one, many, backend, backend_options)
    check_names(specs, run.read_meta().models, run.run_id)  # an answer's identity: its name
    # Everything the user can get wrong is checked before the engine starts (tens of seconds).
    samples = select_samples(run, run.read_samples(), limit=limit, tasks=tasks)
    contexts = run.read_contexts()
    for s in samples:
        context_text(s, contexts)  # a sample naming a missing context stops here
    for spec in specs:
        check_load(spec.backend, spec.model, dict(spec.options))
    if ray_address is None:
        ray_address = cfg.ray_address
    if ray_address is None:
        from lceval.models.replicas import RAY_ADDRESS_ENV

        ray_address = os.environ.get(RAY_ADDRESS_ENV) or None
    on_ray = [  # API models (openai) stay in this process: their server does the work
        runs_local_engine(spec.backend)
        and (ray_address is not None or replicas_of(spec.options) > 1)
        for spec in specs
    ]
    if any(on_ray):
        from lceval.models.replicas import require_ray

        require_ray()  # one line naming the extra, before anything starts
    ResponseStore(run.responses)  # a corrupt responses file stops here, before a model loads
    gen = GenerationConfig(temperature=temperature, seed=seed, max_new_tokens=max_new_tokens)
    notes = [
        f"{spec.label}: truncate is set: contexts longer than its window are cut"
        if truncate
        else check_fits(
            spec,
            samples,
            contexts,
            _with_thinking(gen.budget, _thinking_budget(spec.options)),
        )
        for spec in specs
    ]
    for note in notes:  # said once every model is known to fit
        log(note)
    # size and estimate on stderr now; into run.json with the first model's entry, so a
    # command failing before its first answer (a missing or refused key) leaves run.json as it was
    thinking = max(_thinking_budget(spec.options) for spec in specs)
    sized = plan.announce(
        run, samples, max_new_tokens, record_it=False, max_thinking_tokens=thinking
    )
    pending = {"plan": sized.summary()} if sized is not None else {}
    responses: list[Response] = []
    ray_specs = [spec for spec, r in zip(specs, on_ray, strict=True) if r]
    if ray_specs:
        responses += _infer_ray(
            run, ray_specs, gen, samples, contexts, batch_size, progress, ray_address, pending
        )
    local = [spec for spec, r in zip(specs, on_ray, strict=True) if not r]
    for i, spec in enumerate(local):
        if len(local) > 1:
            log(f"model {i + 1}/{len(local)}: {spec.label} ({spec.backend})")
        responses += _infer_one(run, spec, gen, samples, contexts, batch_size, progress, pending)
    return responses


def _with_thinking(budget: Any, extra: int) -> Any:
    """``budget`` (sample -> answer tokens) plus a model's thinking budget ``extra``."""
    if not extra:
        return budget
    return lambda sample: budget(sample) + extra


def _thinking_budget(options: Mapping[str, Any]) -> int:
    """A model's ``max_thinking_tokens`` option (0 when not given or not an integer)."""
    value = options.get("max_thinking_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _infer_ray(
    run: RunDir,
    specs: Sequence[ModelSpec],
    config: GenerationConfig,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    batch_size: int | None,
    progress: bool,
    address: str | None,
    pending: dict[str, Any] | None = None,
) -> list[Response]:
    """:func:`infer` for the models answered by replicas on Ray, recorded in run.json (with
    ``pending``'s fields, then cleared); run.json is put back as it was when nothing was
    answered (:meth:`lceval.io.RunDir.meta_kept_unless`)."""
    from lceval.models.replicas import Job, answer_jobs

    jobs = [Job(spec, samples, config, batch_size) for spec in specs]
    t0 = time.perf_counter()
    with run.meta_kept_unless(run.responses), engine_output(run.path, "infer (ray)"):
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
                    entry["options"] = dict(job.spec.options)
                    entry["timing"] = {"ray_wall_s": wall}
                    run.update_meta(models={job.entry["name"]: entry}, **(pending or {}))
                    if pending:
                        pending.clear()
    return [r for job in jobs for r in job.responses]


def _infer_one(
    run: RunDir,
    spec: ModelSpec,
    config: GenerationConfig,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    batch_size: int | None,
    progress: bool,
    pending: dict[str, Any] | None = None,
) -> list[Response]:
    """:func:`infer` for one model: load its engine, answer, close it, record it in run.json
    (with ``pending``'s fields, written once and then cleared). When it fails before storing an
    answer, run.json is put back as it was (:meth:`lceval.io.RunDir.meta_kept_unless`)."""
    with run.meta_kept_unless(run.responses):
        return _infer_engine(run, spec, config, samples, contexts, batch_size, progress, pending)


def _infer_engine(
    run: RunDir,
    spec: ModelSpec,
    config: GenerationConfig,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    batch_size: int | None,
    progress: bool,
    pending: dict[str, Any] | None,
) -> list[Response]:
    """The body of :func:`_infer_one`."""
    # Engine start-up and shutdown records go to logs/lceval.log (the terminal keeps lceval's
    # lines and the progress bar; -v or LCEVAL_VERBOSE=1 shows everything).
    with engine_output(run.path, "infer"), lifeline.guard(run.path):  # engines die with us
        t0 = time.perf_counter()
        engine = load_backend(spec.backend, spec.model, **spec.options)
        engine.name = stored_name(spec)
        timing = {"engine_start_s": round(time.perf_counter() - t0, 2)}
        try:
            keyed = engine_config(engine, config)
            entry = {
                **engine.info(),
                "requested_backend": spec.backend,
                "location": location(spec),
                "options": dict(spec.options),
                "generation": keyed.__dict__,
                "config_hash": keyed.hash(),
            }
            earlier = run.read_meta().models.get(engine.name)
            if isinstance(earlier, Mapping) and earlier.get("config_hash") not in (
                None,
                keyed.hash(),
            ):
                log(
                    f"run {run.run_id} already has answers of {engine.name} from "
                    f"{earlier.get('backend')} (config {earlier.get('config_hash')}); these are "
                    f"kept apart under config {keyed.hash()} ({keyed.engine}), and both are scored"
                )
            run.update_meta(models={engine.name: entry}, **(pending or {}))
            if pending:
                pending.clear()
            t0 = time.perf_counter()
            size = batch_size or int(getattr(engine, "call_size", DEFAULT_CALL_SIZE))
            responses = _answer(run, engine, config, samples, contexts, size, progress)
            timing["generate_s"] = round(time.perf_counter() - t0, 2)
            counts = prefix_reuse(engine)
            if counts is not None:
                entry["prefix_reuse"] = counts.as_dict()
        finally:
            t0 = time.perf_counter()
            engine.close()
            timing["engine_close_s"] = round(time.perf_counter() - t0, 2)
    run.update_meta(models={engine.name: {**entry, "timing": timing}})
    return responses


def load_samples(run: RunDir) -> list[Sample]:
    """The run's samples with typed gold (``lceval.registry.load_samples``)."""
    return registry.load_samples(run.read_samples())


def score(
    run_id: str,
    *,
    root: str | Path | None = None,
    scorer: str | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Score every response of the run; stores them in scores.parquet (only the used scorers'
    rows are replaced: every other scorer's stay). The only scoring loop (:class:`Scoring`).

    Responses are streamed through ``ResponseStore`` (one per key: the first successful one, else
    the last error), so long-output runs are never all in memory. A failed generation gets a NaN
    score with the error as explanation. A response stamped with another ``sample_hash`` than its
    sample's current one answers an earlier version of the sample (the run was rebuilt) and is
    not scored: they are counted and reported in one line on stderr. Responses without a hash
    (written before it existed) are scored as answering the current sample. A model with answers
    under several generation configs in the run (e.g. hf, then vLLM) is scored as one model per
    config, ``<model>@<first 8 hex digits of the config hash>``, so no table averages them.
    Scorers with a batch judge (LLM judges) get responses in groups; per-item rows of
    ``Judgement.details`` go to the benchmark's details file.

    Args:
        run_id: run folder name.
        root: folder holding run folders.
        scorer: a scorer name (``lifbench:strict``); default: each benchmark's first scorer.
        options: the named scorer's options (``ScorerSpec.options``).
        progress: show a tqdm bar.

    Returns:
        The scores as a tidy DataFrame (one row per response).

    Raises:
        LcevalError: missing samples or responses, nothing to score (no responses, or all
            answer earlier versions of their samples), a response for an unknown sample, an
            unknown scorer or option.
    """
    run = RunDir(run_id, root)
    job = Scoring(run, scorer, dict(options or {}))
    store = job.responses()
    try:
        job.open_judges()
        bar = tqdm(
            store,
            total=len(store),
            desc="score",
            unit="response",
            disable=not progress,
            file=terminal(),
        )
        for r in bar:
            job.add(r)
        job.flush_all()
    finally:
        job.close()
    if job.stale:
        log(
            f"{job.stale} response(s) in {run.responses.name} answer an earlier version of their "
            "sample (sample hash differs: the run was rebuilt) and were not scored; "
            f"`lceval infer {run_id}` answers the current samples"
        )
    if not job.scores:
        raise LcevalError(
            f"{run.responses}: every response answers an earlier version of its sample: "
            f"nothing to score (run `lceval infer {run_id}` first)"
        )
    job.write_details()
    return run.write_scores(job.scores)


class Scoring:
    """One pass of :func:`score` over a run: the chosen scorer per benchmark, the batch judges,
    the responses waiting for a judge, and the Score rows and detail rows made so far.

    Args:
        run: the run folder (samples, contexts; responses are read by :meth:`responses`).
        scorer: a scorer name; None: each benchmark's default scorer.
        options: the named scorer's options.

    Raises:
        LcevalError: missing samples, an unknown scorer or option, options without a scorer.
    """

    def __init__(self, run: RunDir, scorer: str | None, options: Mapping[str, Any]) -> None:
        self.run = run
        raw = run.read_samples()
        self.contexts = run.read_contexts()
        self.hashes = sample_hashes(raw, self.contexts)
        self.samples = {s.id: s for s in registry.load_samples(raw)}
        keys = sorted({s.benchmark for s in self.samples.values()})
        self.benchmarks = {k: registry.get(k) for k in keys}
        self.chosen: dict[str, ScorerSpec] = {k: b.scorer() for k, b in self.benchmarks.items()}
        self.options: dict[str, Mapping[str, Any]] = {k: {} for k in keys}
        if scorer is not None:
            bench, spec = registry.find_scorer(scorer, keys)
            spec.check_options(options)
            self.chosen[bench.key] = spec
            self.options[bench.key] = options
        elif options:
            raise LcevalError("scorer options need --scorer NAME")
        self.split: set[str] = set()
        self.judges: dict[str, BatchJudge] = {}
        self.pending: dict[str, list[tuple[Sample, Response, Any]]] = {}
        self.n_items: dict[str, int] = {}
        self.scores: list[Score] = []
        self.details: dict[str, list[dict[str, Any]]] = {}
        self.stale = 0

    def responses(self) -> ResponseStore:
        """The run's responses (one per key); notes the models answering under several configs.

        Raises:
            LcevalError: no responses file, or one holding no response.
        """
        run = self.run
        if not run.responses.exists():
            raise LcevalError(f"{run.responses} does not exist: run inference first (lceval infer)")
        store = ResponseStore(run.responses)
        if len(store) == 0:
            why = (
                f" (its {store.tail_bytes:,} bytes end in no line break: a file without line "
                "ends, or a write still in progress or killed)"
                if store.tail_bytes
                else ""
            )
            raise LcevalError(f"{run.responses} holds no responses{why}: nothing to score")
        # A model answering under two configs (say hf float32, then vLLM bfloat16) is scored as
        # two models, "<name>@<config hash>", so tables never average the two engines' answers.
        self.split = {m for m, c in store.configs(self.hashes).items() if len(c) > 1}
        if self.split:
            log(
                f"{', '.join(sorted(self.split))} answered under several generation configs "
                "(engine, dtype or settings): scored apart as <model>@<config hash>"
            )
        return store

    def label(self, r: Response) -> str:
        """The model name a response is scored under (``<model>@<hash>`` for a split model)."""
        return f"{r.model}@{r.config_hash[:8]}" if r.model in self.split else r.model

    def open_judges(self) -> None:
        """Create the batch judge of every chosen scorer that has one."""
        for key, spec in self.chosen.items():
            if spec.batch is not None:
                self.judges[key] = spec.batch(self.run, **self.options[key])

    def add(self, r: Response) -> None:
        """Score one response now, or queue it for its benchmark's batch judge.

        Raises:
            LcevalError: a response for an unknown sample.
        """
        s = self.samples.get(r.sample_id)
        if s is None:
            raise LcevalError(f"{self.run.responses}: response for unknown sample {r.sample_id!r}")
        if not r.answers(self.hashes[s.id]):
            self.stale += 1
            return
        key = s.benchmark
        ctx = self.contexts.get(s.context_id) if s.context_id else None
        if r.finish_reason == "error" or r.thinking_unfinished or key not in self.judges:
            self.emit(s, r, self.chosen[key].judge(s, r, ctx, self.options[key]))
            return
        prepared = self.judges[key].prepare(s, r, ctx)
        self.pending.setdefault(key, []).append((s, r, prepared))
        self.n_items[key] = self.n_items.get(key, 0) + int(getattr(prepared, "n_items", 1))
        if self.n_items[key] >= self.judges[key].batch_items:
            self.flush(key)

    def emit(self, s: Sample, r: Response, j: Judgement) -> None:
        """Keep the Score row of one judgement (and its detail rows)."""
        self.scores.append(self.chosen[s.benchmark].record(s, self.label(r), j))
        if j.details:
            rows = self.details.setdefault(s.benchmark, [])
            rows.extend({"sample_id": s.id, "model": self.label(r), **d} for d in j.details)

    def flush(self, key: str) -> None:
        """Judge the responses waiting for benchmark ``key``'s batch judge."""
        group = self.pending.pop(key, [])
        self.n_items[key] = 0
        if group:
            judged = self.judges[key].finish([p for _, _, p in group])
            for (s, r, _), j in zip(group, judged, strict=True):
                self.emit(s, r, j)

    def flush_all(self) -> None:
        """Judge every response still waiting."""
        for key in list(self.pending):
            self.flush(key)

    def close(self) -> None:
        """Close the batch judges (their engines)."""
        for judge in self.judges.values():
            judge.close()

    def write_details(self) -> None:
        """Write each benchmark's detail rows to its ``details_file``."""
        for key, rows in self.details.items():
            name = self.benchmarks[key].details_file
            if name:
                with atomic_open(self.run.path / name, "wb") as f:
                    pd.DataFrame(rows).to_parquet(f, index=False)


class ReportTables(dict[str, pd.DataFrame]):
    """The tables of :func:`report`, ``"<benchmark>/<table>" -> DataFrame``, and which scorers
    each benchmark's tables were read from (``scorers``: key -> scorer names)."""

    scorers: dict[str, tuple[str, ...]]


def write_run_pages(run: RunDir) -> list[Path]:
    """The report stage's per-sample pages: ``samples.html`` (:mod:`lceval.samples_page`) and,
    for a run with two or more models, ``compare.html`` (every pair of its models, or what each
    answered when no pair shares a sample: :func:`lceval.compare_page.write_run_compare_page`)
    under the run's report folder; nothing when the run has no scores.

    Raises:
        LcevalError: a score of an unknown sample; the folder cannot be written.
    """
    page_path = samples_page.write_samples_page(run)
    if page_path is None:
        return []
    out = [page_path]
    models = set(run.read_scores()["model"].astype(str))
    if len(models) > 1:
        out.append(compare_page.write_run_compare_page(run))
    return out


def report(
    run_id: str, *, root: str | Path | None = None, scorer: str | None = None
) -> ReportTables:
    """Write each benchmark's tables and figures of the run under report/, samples.html (every
    answer, :mod:`lceval.samples_page`; compare.html with two or more models), results.json
    (:mod:`lceval.results`) and report/index.html (provenance, every table and figure, the
    executed notebooks, links to the pages); returns the tables.

    scores.parquet keeps every scorer's rows; each benchmark's reporter reads its default
    scorer's (``Benchmark.scores_for``; L-Eval both of its ``report_scorers``). With ``scorer``
    (``lifbench:strict``), its benchmark is reported from that scorer's rows instead, written
    under ``report/<scorer>/`` (``:`` written ``-``) so the default's files stay.

    The report is written to a temporary folder and renamed into place when complete
    (:meth:`lceval.io.RunDir.staged_report`): a failed report leaves the last good one as it was.

    Returns:
        ``"<benchmark>/<table>" -> DataFrame``, with ``.scorers``: benchmark key -> the scorer
        names its tables were read from.

    Raises:
        LcevalError: missing scores or samples; an unknown scorer or one of a benchmark the run
            does not hold; a folder that cannot be written (no space).
    """
    run = RunDir(run_id, root)
    scores = run.read_scores()
    samples = load_samples(run)
    keys = sorted({s.benchmark for s in samples})
    if scorer is not None:
        registry.find_scorer(scorer, keys)
    tables = ReportTables()
    tables.scorers = {}
    from lceval.index_page import write_index  # matplotlib: imported only when reporting
    from lceval.results import write_results

    with run.staged_report() as staged:  # swapped in whole, or not at all
        for key in keys:
            bench = registry.get(key)
            mine = scorer_of(key, scorer)
            bench_scores, names = bench.scores_for(scores, mine, report=mine is None)
            bench_samples = [s for s in samples if s.benchmark == key]
            where = staged
            if mine is not None and mine != bench.default_scorer:
                where = staged.with_report(staged.report / mine.replace(":", "-"))
            out = bench.report(where, bench_scores, bench_samples)
            tables.update({f"{key}/{k}": v for k, v in out.items()})
            tables.scorers[key] = names
        from lceval.reasoning import report_reasoning  # thinking tokens, when the run has any

        tables.update({f"reasoning/{k}": v for k, v in report_reasoning(staged, scores).items()})
        write_run_pages(staged)
        write_results(staged)
        write_index(staged)
    return tables
