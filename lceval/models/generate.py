"""The one resumable generation loop (``lceval infer``, refinement rounds, LLM judges): samples
sharing a context run together; each answer is appended to a ResponseStore as it completes, and
samples answered under (model, config hash, sample hash) are skipped, so a killed run resumes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lceval.core.console import log
from lceval.core.errors import LcevalError
from lceval.core.progress import Progress
from lceval.core.records import Context, Response, Sample, sample_hashes
from lceval.core.store import ResponseStore
from lceval.models.base import Backend, GenerationConfig


def context_order(samples: Sequence[Sample]) -> list[Sample]:
    """``samples`` with those sharing a context adjacent (contexts in order of first sample)."""
    first: dict[str | None, int] = {}
    for i, s in enumerate(samples):
        first.setdefault(s.context_id, i)
    return [s for _, s in sorted(enumerate(samples), key=lambda t: (first[t[1].context_id], t[0]))]


@dataclass(frozen=True)
class PrefixReuse:
    """Prompt tokens a backend was asked to encode and those it encoded (None: not reported)."""

    requested: int
    computed: int | None

    @property
    def reuse(self) -> float | None:
        """Share of requested prompt tokens served from a prefix cache (0..1), or None."""
        if self.computed is None or self.requested <= 0:
            return None
        return 1.0 - self.computed / self.requested

    def minus(self, earlier: PrefixReuse) -> PrefixReuse:
        """The counts since ``earlier`` (the same backend's counts read before)."""
        computed = None
        if self.computed is not None and earlier.computed is not None:
            computed = self.computed - earlier.computed
        return PrefixReuse(self.requested - earlier.requested, computed)

    def as_dict(self) -> dict[str, Any]:
        """For run.json: ``requested``, ``computed``, ``reuse`` (4 decimals) or ``measured``."""
        if self.computed is None:
            return {"requested": self.requested, "measured": False}
        reuse = None if self.reuse is None else round(self.reuse, 4)
        return {"requested": self.requested, "computed": self.computed, "reuse": reuse}


def prefix_reuse(backend: Backend) -> PrefixReuse | None:
    """The backend's ``prompt_tokens_requested`` / ``_computed`` counts, None for API backends."""
    requested = backend.prompt_tokens_requested
    if requested is None:
        return None
    return PrefixReuse(requested, backend.prompt_tokens_computed)


def engine_config(
    backend: Backend | Mapping[str, Any], config: GenerationConfig | None = None
) -> GenerationConfig:
    """``config`` with the backend's ``cache_fields`` (engine, dtype, ...; or ``backend`` is
    those fields, as a replica reports them) merged into ``engine``: the config whose hash keys
    this backend's responses."""
    config = config or GenerationConfig()
    fields = backend if isinstance(backend, Mapping) else backend.cache_fields
    return config.model_copy(update={"engine": {**config.engine, **fields}}) if fields else config


def generate(
    backend: Backend,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    config: GenerationConfig | None = None,
    *,
    store: ResponseStore | None = None,
    batch_size: int = 8,
    progress: bool = True,
    desc: str | None = None,
    progress_log: str | os.PathLike[str] | None = None,
    hashes: Mapping[str, str] | None = None,
) -> list[Response]:
    """Answer ``samples`` (ids unique; ``contexts`` by id) with ``backend``, greedy by default.

    Args:
        store: where each answer is appended as it completes (its writer lock held throughout);
            samples answered there are skipped.
        batch_size: samples per ``backend.generate`` / ``stream`` call (>= 1).
        progress, desc: show the progress bar, with this label.
        progress_log: also write the bar to this progress.jsonl (``lceval status`` reads it).
        hashes: sample id -> :func:`~lceval.core.records.sample_hash` (None: computed here).

    Returns:
        One response per sample, in order: the stored one (the first success, else the last
        error) for samples answered before in their current version, else the new one.

    Raises:
        LcevalError: batch_size < 1, duplicate sample ids, another process writing the store,
            or a backend answering a sample not asked, twice or not at all.
    """
    config = engine_config(backend, config)  # engine settings that change outputs: in the key
    if not isinstance(batch_size, int) or batch_size < 1:
        raise LcevalError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        raise LcevalError("generate: duplicate sample ids")
    with store.writer() if store is not None else contextlib.nullcontext():
        chash = config.hash()
        hashes = dict(hashes) if hashes is not None else sample_hashes(samples, contexts)
        done = store.done(backend.name, chash, hashes) if store is not None else set()
        pending = context_order([s for s in samples if s.id not in done])
        got: dict[str, Response] = {}
        bar = Progress(
            None if progress_log is None else Path(progress_log),
            backend.name,
            len(samples),
            len(samples) - len(pending),
            desc=desc or f"generate {backend.name}",
            show=progress,
            prefilled=lambda: backend.prompt_tokens_prefilled,
            work=lambda: _work(backend),
        )
        counts0 = prefix_reuse(backend)
        state = "stopped"
        try:
            for i in range(0, len(pending), batch_size):
                batch = pending[i : i + batch_size]
                for r in answers(backend, batch, contexts, config):
                    r = dataclasses.replace(r, sample_hash=hashes[r.sample_id])
                    if store is not None:
                        store.append([r])  # each answer on disk as it completes
                    got[r.sample_id] = r
                    counts = prefix_reuse(backend)
                    if counts is not None and counts0 is not None:
                        reuse = counts.minus(counts0).reuse
                        bar.extra["prefix reuse"] = "n/a" if reuse is None else f"{reuse:.0%}"
                    bar.add(1, r.prompt_tokens, r.completion_tokens)
            state = "done"
        except KeyboardInterrupt:
            where = "in responses.jsonl" if store is not None else "in memory only: no store given"
            if got:
                log(f"interrupted: the {len(got)} answer(s) finished by then are kept ({where})")
            else:
                log(
                    "interrupted before the first answer was finished: no answer of this call was "
                    "written (the engine was still prefilling or decoding the first ones)"
                )
            raise
        finally:
            bar.close(state)
        cut = [r.truncated_tokens for r in got.values() if r.truncated_tokens]
        if cut:  # the answers are to shortened prompts: say so on the terminal
            log(
                f"warning: {len(cut)} of {len(got)} prompt(s) did not fit {backend.name}'s window: "
                f"their contexts were right-truncated (up to {max(cut):,} tokens dropped; "
                "truncated_tokens in responses.jsonl)"
            )
        if store is not None and done:
            wanted = set(ids) - set(got)
            for r in store:
                if (
                    r.sample_id in wanted
                    and r.model == backend.name
                    and r.config_hash == chash
                    and r.answers(hashes[r.sample_id])
                ):
                    got.setdefault(r.sample_id, r)
        return [got[i] for i in ids if i in got]


def _work(backend: Backend) -> dict[str, Any] | None:
    """The backend's measured work for the bar's time left: its ``prompt_work`` and
    ``running_answers`` (vLLM's; :func:`lceval.core.progress.work_eta`), None if not reported."""
    work = backend.prompt_work
    if work is None:
        return None
    return {**work, "running": backend.running_answers}


def answers(
    backend: Backend,
    batch: Sequence[Sample],
    contexts: Mapping[str, Context],
    config: GenerationConfig,
) -> Iterator[Response]:
    """The answers to ``batch`` as the engine finishes them (its ``stream``; :class:`Backend`'s is
    ``generate``'s whole batch at once).

    Raises:
        LcevalError: the backend answers a sample not asked, one twice, or misses one.
    """
    wanted = {s.id for s in batch}
    for r in backend.stream(batch, contexts, config):
        if r.sample_id not in wanted:
            raise LcevalError(
                f"backend {backend.name} answered {r.sample_id!r:.60}, not asked or twice"
            )
        wanted.discard(r.sample_id)
        yield r
    if wanted:
        raise LcevalError(f"backend {backend.name} left {len(wanted)} sample(s) unanswered")
