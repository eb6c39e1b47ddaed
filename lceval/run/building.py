"""The build stage: a benchmark's builder (or several, one suite) into a run folder's samples.jsonl,
contexts.jsonl and run.json."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lceval.benchmarks import registry
from lceval.benchmarks.base import BuildResult, Select
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, dumps, new_meta
from lceval.core.records import Context, Sample
from lceval.core.store import ResponseStore
from lceval.params import NOTEBOOK_PARAMS
from lceval.run.config import INFERENCE_DEFAULTS, InferConfig, validate
from lceval.run.selection import describe, per_task


def build(
    run_id: str,
    benchmark: str,
    params: Mapping[str, Any],
    *,
    root: str | Path | None = None,
    seed: int | None = None,
    force: bool = False,
    limit: int | None = None,
    reuse: bool = False,
) -> RunDir:
    """Build a benchmark's samples into ``<root>/<run_id>/`` with its builder ``params`` (a
    notebook's params file as it is) and record run.json: :func:`build_suite` with one part."""
    return build_suite(
        run_id, {benchmark: params}, root=root, seed=seed, force=force, limit=limit, reuse=reuse
    )


def build_suite(
    run_id: str,
    parts: Mapping[str, Mapping[str, Any]],
    *,
    root: str | Path | None = None,
    seed: int | None = None,
    force: bool = False,
    limit: int | None = None,
    reuse: bool = False,
) -> RunDir:
    """Build several benchmarks' samples into one run folder (RULER retrieval beside L-Eval GSM
    for the NTK sweep); run.json records each part's params and sources under its key.

    A rebuild giving the same samples and contexts keeps the responses (rerunning a notebook
    resumes it); one that changes them is refused over existing responses unless ``force``,
    which moves responses.jsonl and scores.parquet aside to ``<name>.replaced-<UTC time>``.

    Args:
        parts: benchmark key -> its builder params, in build order.
        seed: overrides every part's ``seed`` (run.json's seed: this, else the first part's).
        limit: write only ``limit`` samples per task (:func:`lceval.run.selection.per_task`:
            stratified over lengths and variants, seeded; recorded in run.json's
            ``selection``), and the contexts they read; samples the run has answers to stay.
            A benchmark that ``selects`` builds only those (its builder is handed the draw,
            :data:`lceval.benchmarks.base.Select`); another builds its grid and the draw keeps
            the same samples of it.
        reuse: keep the run's samples without building when run.json records the same params,
            seed, limit, lceval version and git commit (``lceval eval`` run again: seconds).

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
    if reuse and not force and _built_alike(run, cleaned, seed, limit):
        return run
    has_responses = run.responses.exists() and run.responses.stat().st_size > 0
    answered = _answered_ids(run) if has_responses and limit is not None else set()
    drawn: dict[str, tuple[int, set[str]]] = {}  # benchmark -> (grid size, ids drawn)

    def draw(key: str) -> Select:
        """The draw of ``limit`` per task over ``key``'s outlines, plus the answered samples."""

        def select(outlines: Sequence[Sample]) -> set[str]:
            strata = {key: registry.get(key).strata}
            ids = {s.id for s in per_task(outlines, limit, strata=strata)} | answered
            drawn[key] = (len(outlines), ids)
            return ids

        return select

    for key, p in cleaned.items():
        bench = registry.get(key)
        if limit is not None and bench.selects:  # the builder makes only the drawn samples
            results[key] = bench.build(p, select=draw(key))
        else:
            results[key] = bench.build(p)
        if limit is not None:
            result = results[key]
            if key not in drawn:
                draw(key)(result.samples)  # the whole grid was built: the draw keeps its part
            chosen = drawn[key][1]
            kept = [s for s in result.samples if s.id in chosen]
            used = {s.context_id for s in kept}
            results[key] = dataclasses.replace(
                result, samples=kept, contexts=[c for c in result.contexts if c.id in used]
            )
    samples = [s for r in results.values() for s in r.samples]
    contexts = [c for r in results.values() for c in r.contexts]
    for what, ids in (("sample", [s.id for s in samples]), ("context", [c.id for c in contexts])):
        if len(set(ids)) != len(ids):
            raise LcevalError(f"build: duplicate {what} ids across {', '.join(parts)}")
    selection: dict[str, Any] = {}
    if limit is not None:
        strata = {k: registry.get(k).strata for k in parts}
        grid = sum(n for n, _ in drawn.values())
        selection = describe(limit, strata, grid, len(samples))
    models: dict[str, Any] = {}
    if has_responses and not force:
        same = (
            _same_records(run, samples, contexts)
            if limit is None
            else _keeps_answered(run, samples, contexts)
        )
        if not same:
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
        selection=selection,
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
    """The inference settings the build params declare (:data:`INFERENCE_DEFAULTS`), checked by
    :class:`InferConfig`; null values left out."""
    out: dict[str, Any] = {}
    for key, part in parts.items():
        schema = registry.get(key).params_schema()
        own = set(schema.model_fields) if schema is not None else set()
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
    for path, records in ((run.samples, samples), (run.contexts, contexts)):
        if not path.exists():
            return False
        with path.open(encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
        if lines != [dumps(r) for r in records]:
            return False
    return True


def _built_alike(
    run: RunDir, params: Mapping[str, Any], seed: int | None, limit: int | None
) -> bool:
    """Whether the run folder holds a build of these params, seed and limit by this lceval
    (version and git commit): building again would give the same files."""
    if not (run.run_json.exists() and run.samples.exists() and run.contexts.exists()):
        return False
    try:
        old = run.read_meta()
    except LcevalError:
        return False
    now = new_meta(run.run_id)
    same_params = json.loads(dumps(dict(params))) == json.loads(dumps(dict(old.params)))
    return (
        same_params
        and (seed is None or seed == old.seed)
        and (old.selection or {}).get("limit") == limit
        and dict(old.versions).get("lceval") == dict(now.versions).get("lceval")
        and old.git_commit == now.git_commit
    )


def _answered_ids(run: RunDir) -> set[str]:
    """Sample ids the run's responses.jsonl holds answers to (unreadable: none)."""
    try:
        return {r.sample_id for r in ResponseStore(run.responses)}
    except LcevalError:
        return set()


def _keeps_answered(run: RunDir, samples: Sequence[Sample], contexts: Sequence[Context]) -> bool:
    """Whether every answered sample of the run, and the context it reads, is among these
    records unchanged (a ``--limit`` build may add samples to a run, never change one)."""
    answered = _answered_ids(run)
    new = {s.id: dumps(s) for s in samples}
    new_ctx = {c.id: dumps(c) for c in contexts}
    reads: set[str] = set()
    for path, records in ((run.samples, new), (run.contexts, new_ctx)):
        if not path.exists():
            return False
        with path.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                wanted = rec.get("id") in answered if records is new else rec.get("id") in reads
                if not wanted:
                    continue
                if records.get(rec["id"]) != line.rstrip("\n"):
                    return False
                if records is new and rec.get("context_id"):
                    reads.add(rec["context_id"])
    return True
