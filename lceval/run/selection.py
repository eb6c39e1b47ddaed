"""``--limit N``: N samples per task, drawn across the task's lengths and variants (stratified,
seeded), the one meaning of ``limit`` in ``lceval eval``, ``lceval infer``, ``lceval plan``,
:func:`lceval.evaluate` and the notebooks' inference params.

lm-evaluation-harness applies ``--limit`` per task (``lm_eval/evaluator_utils.py``,
``get_sample_size``: an integer is a count of each task's documents, a value below 1.0 a share of
them; ``Task.build_all_requests`` then takes the task's first ``limit`` documents in order).
lceval follows it in counting per task (integers only) and differs in which samples: a
benchmark's samples come ordered by length and variant (LIFBench: 4k before 128k, expression 0
before 1), so the first N would all be the shortest length and first wording; lceval takes N
spread over them instead (:func:`per_task`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

from lceval.core.records import Sample

STRATA = ("length", "scenario", "expression_id", "variable_id")
"""The grouping fields a task's samples are spread over, outermost first (a
:class:`~lceval.core.records.Sample` attribute, else a key of its ``meta``); a benchmark may
declare its own (``Benchmark.strata``: ManyIFEval's ``n_instructions``)."""

SEED = 0
"""The seed of the draw: fixed, so ``--limit 1`` then ``--limit 4`` answers 3 more per task
(the first N of one seeded order), whatever the sampling ``--seed``."""


def _value(sample: Sample, key: str) -> Any:
    if key in Sample.__dataclass_fields__:
        return getattr(sample, key)
    meta = sample.meta if isinstance(sample.meta, Mapping) else {}
    return meta.get(key)


def _spread(items: list[Sample], keys: Sequence[str], rng: random.Random) -> list[Sample]:
    """``items`` in an order whose every prefix is spread over the values of ``keys[0]``, then
    within each of those over ``keys[1]``, and so on (round robin over shuffled strata)."""
    if len(items) <= 1 or not keys:
        out = list(items)
        rng.shuffle(out)
        return out
    groups: dict[str, list[Sample]] = {}
    for s in items:
        groups.setdefault(repr(_value(s, keys[0])), []).append(s)
    if len(groups) == 1:
        return _spread(items, keys[1:], rng)
    orders = [_spread(groups[k], keys[1:], rng) for k in sorted(groups)]
    rng.shuffle(orders)  # which stratum comes first in each round
    return [s for tier in itertools.zip_longest(*orders) for s in tier if s is not None]


def per_task(
    samples: Sequence[Sample],
    limit: int | None,
    *,
    strata: Mapping[str, Sequence[str]] | None = None,
    seed: int = SEED,
) -> list[Sample]:
    """``limit`` samples of each task (all of a task with fewer), in the samples' own order.

    Within a task the draw is stratified: samples are grouped by the first of the benchmark's
    strata (default :data:`STRATA`: length, then scenario, expression and variable), the groups
    taken in turn in a seeded order, each group spread the same way over the next field; so 6
    samples of a task built at 6 lengths are one per length, and 1 is one of any length. The
    order depends only on the task's samples and ``seed``: a larger limit keeps the smaller's
    samples. lm-evaluation-harness counts per task too and takes each task's first documents
    (module docstring).

    Args:
        samples: a run's samples (several benchmarks may share a run).
        limit: samples per task; None: every sample.
        strata: benchmark key -> its fields, outermost first (missing: :data:`STRATA`).
        seed: the draw's seed (:data:`SEED`).

    Returns:
        The chosen samples, in the order of ``samples``.
    """
    if limit is None:
        return list(samples)
    by_task: dict[tuple[str, str], list[Sample]] = {}
    for s in samples:
        by_task.setdefault((s.benchmark, s.task), []).append(s)
    keep: set[str] = set()
    for (bench, task), group in by_task.items():
        keys = (strata or {}).get(bench, STRATA)
        rng = random.Random(f"{seed}:{bench}:{task}")  # a str seed: the same on every machine
        keep.update(s.id for s in _spread(group, keys, rng)[:limit])
    return [s for s in samples if s.id in keep]


def describe(
    limit: int, strata: Mapping[str, Sequence[str]], grid: int, kept: int
) -> dict[str, Any]:
    """run.json's ``selection``: what ``--limit`` kept of the built grid."""
    return {
        "limit": limit,
        "per": "task",
        "seed": SEED,
        "strata": {k: list(v) for k, v in strata.items()},
        "grid": grid,
        "kept": kept,
    }
