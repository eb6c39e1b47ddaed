"""The score stage: every response judged by its benchmark's scorer into scores.parquet."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm  # a plain text bar: tqdm.auto needs ipywidgets in notebooks

from lceval.benchmarks import registry
from lceval.benchmarks.base import BatchJudge, ScorerSpec
from lceval.core.console import terminal
from lceval.core.errors import LcevalError
from lceval.core.io import (
    RunDir,
    atomic_open,
    inputs_digest,
    new_meta,
    read_json_object,
    read_records,
    write_jsonl,
)
from lceval.core.records import Context, Judgement, Response, Sample, Score, sample_hashes
from lceval.core.store import ResponseStore
from lceval.models.base import log

if TYPE_CHECKING:  # pandas: imported where scores are made
    import pandas as pd


def load_samples(run: RunDir) -> list[Sample]:
    """The run's samples with typed gold."""
    return registry.load_samples(run.read_samples())


def score(
    run_id: str,
    *,
    root: str | Path | None = None,
    scorer: str | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
    reuse: bool = False,
) -> pd.DataFrame:
    """Score every response of the run into scores.parquet (only the used scorers' rows are
    replaced), streamed; a failed generation scores NaN with the error as explanation; a response
    to an earlier version of its sample (``sample_hash`` differs) is counted on stderr, not
    scored; a model answered under several generation configs is scored per config as
    ``<model>@<config hash[:8]>``. Batch judges get responses in groups.

    Args:
        scorer: a scorer name (``lifbench:strict``); default: each benchmark's first scorer.
        options: the named scorer's options (``ScorerSpec.options``).
        reuse: keep scores.parquet when this lceval scored these samples, contexts and
            responses with these scorers (names, versions, options) into it last
            (:data:`STAMP`; ``lceval eval`` run again): its rows of the scorers are returned.

    Returns:
        The scores as a tidy DataFrame (one row per response).

    Raises:
        LcevalError: missing samples or responses, nothing to score (no responses, or all
            answer earlier versions of their samples), a response for an unknown sample, an
            unknown scorer or option.
    """
    run = RunDir(run_id, root)
    job = Scoring(run, scorer, dict(options or {}))
    digest = inputs_digest(
        [run.samples, run.contexts, run.responses],
        scorers={k: [s.name, s.version, dict(job.options[k])] for k, s in job.chosen.items()},
    )
    if reuse and (kept := _scored_alike(run, digest)) is not None:
        names = {s.name for s in job.chosen.values()}
        log(
            f"scores: {run.scores.name} already holds these responses' scores "
            f"({', '.join(sorted(names))}); not scored again"
        )
        return kept[kept["scorer"].isin(names)]
    store = job.responses()
    try:
        for key, spec in job.chosen.items():
            if spec.batch is not None:
                job.judges[key] = spec.batch(run, **job.options[key])
        for r in tqdm(store, desc="score", unit="response", disable=not progress, file=terminal()):
            job.add(r)
        for key in list(job.pending):
            job.flush(key)
    finally:
        for judge in job.judges.values():
            judge.close()
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
    import pandas as pd  # heavy: pandas (import lceval stays light)

    for key, rows in job.details.items():
        name = job.benchmarks[key].details_file
        if name:
            with atomic_open(run.path / name, "wb") as f:
                pd.DataFrame(rows).to_parquet(f, index=False)
    written = run.write_scores(job.scores)
    stamp = {"inputs": digest, "scores_sha256": _sha256(run.scores)}
    with atomic_open(run.path / STAMP) as f:
        json.dump(stamp, f)
    return written


STAMP = "scores.inputs.json"
"""The run folder's record of what scores.parquet was last scored from (``inputs``: an
:func:`lceval.core.io.inputs_digest` of samples, contexts, responses and the scorers;
``scores_sha256``: the file as written, so a scores.parquet written otherwise is not taken
for it)."""


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _scored_alike(run: RunDir, digest: str) -> pd.DataFrame | None:
    """scores.parquet when :data:`STAMP` says it was scored from ``digest`` and it is the file
    then written and readable; else None."""
    stamp = read_json_object(run.path / STAMP)
    if stamp.get("inputs") != digest or stamp.get("scores_sha256") != _sha256(run.scores):
        return None
    try:
        return run.read_scores()
    except LcevalError:
        return None


class Scoring:
    """One pass of :func:`score`: the scorer per benchmark, the batch judges, the responses
    waiting for a judge, and the Score and detail rows made so far."""

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
        self.ok_configs: dict[str, set[str]] = {}
        self.ok_pairs: set[tuple[str, str]] = set()
        self.judges: dict[str, BatchJudge] = {}
        self.pending: dict[str, list[tuple[Sample, Response, Any]]] = {}
        self.n_items: dict[str, int] = {}
        self.scores: list[Score] = []
        self.details: dict[str, list[dict[str, Any]]] = {}
        self.stale = 0

    def responses(self) -> ResponseStore:
        """The run's responses (one per key); notes the models answering under several configs."""
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
        if store.conflicts:
            keys = sorted(store.conflicts)
            named = ", ".join(f"{k[0]} of {k[1]}" for k in keys[:5])
            more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
            log(
                f"warning: {len(keys)} sample(s) have several different answers in "
                f"{run.responses} ({named}{more}; {sum(store.conflicts.values())} extra "
                "line(s)): the first successful answer of each is scored"
            )
        # a failed answer is an error row of its model, never a model of its own: configs with
        # no successful answer do not split a model, and a failure is dropped where another
        # config answered the sample (the working command run after the failing one)
        ok_configs = store.configs(self.hashes, answered=True)
        self.ok_configs = ok_configs
        self.ok_pairs = store.answered(self.hashes)
        self.split = {m for m, c in ok_configs.items() if len(c) > 1}
        if self.split:
            log(
                f"{', '.join(sorted(self.split))} answered under several generation configs "
                "(engine, dtype or settings): scored apart as <model>@<config hash>"
            )
        return store

    def label(self, r: Response) -> str:
        if r.model not in self.split:
            return r.model
        if r.config_hash not in self.ok_configs.get(r.model, set()):  # a failure's own config
            return f"{r.model}@{sorted(self.ok_configs[r.model])[0][:8]}"
        return f"{r.model}@{r.config_hash[:8]}"

    def add(self, r: Response) -> None:
        """Score one response now, or queue it for its benchmark's batch judge."""
        s = self.samples.get(r.sample_id)
        if s is None:
            raise LcevalError(f"{self.run.responses}: response for unknown sample {r.sample_id!r}")
        if not r.answers(self.hashes[s.id]):
            self.stale += 1
            return
        if r.finish_reason == "error" and (r.sample_id, r.model) in self.ok_pairs:
            return  # answered under another config: that answer is scored
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
        self.scores.append(self.chosen[s.benchmark].record(s, self.label(r), j))
        if j.details:
            rows = self.details.setdefault(s.benchmark, [])
            rows.extend({"sample_id": s.id, "model": self.label(r), **d} for d in j.details)

    def flush(self, key: str) -> None:
        group = self.pending.pop(key, [])
        self.n_items[key] = 0
        if group:
            judged = self.judges[key].finish([p for _, _, p in group])
            for (s, r, _), j in zip(group, judged, strict=True):
                self.emit(s, r, j)


def score_files(
    run_id: str,
    folder: str | Path,
    *,
    root: str | Path | None = None,
    rename: Mapping[str, str] | None = None,
) -> str:
    """A scored run (``run_id``, made afresh) from a folder of ``samples.jsonl``,
    ``contexts.jsonl`` and ``responses.jsonl`` (models renamed by ``rename``), scored by the
    benchmarks' default scorers (the overview notebook's demo runs).

    Raises:
        LcevalError: a file is missing or the scorer fails.
    """
    src = Path(folder)
    for name in ("samples.jsonl", "responses.jsonl"):
        if not (src / name).exists():
            raise LcevalError(f"{src / name} does not exist")
    run = RunDir(run_id, root)
    if run.path.exists():
        shutil.rmtree(run.path)
    run.create()
    samples = read_records(src / "samples.jsonl", Sample)
    contexts = (
        read_records(src / "contexts.jsonl", Context) if (src / "contexts.jsonl").exists() else []
    )
    run.write_samples(samples, contexts)
    names = dict(rename or {})
    responses = read_records(src / "responses.jsonl", Response)
    write_jsonl(run.responses, [replace(r, model=names.get(r.model, r.model)) for r in responses])
    run.write_meta(new_meta(run_id, params={"source": str(src)}))
    score(run_id, root=root, progress=False)
    return run_id
