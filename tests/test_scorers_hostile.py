"""Every registered per-response scorer on hostile model output: never raises, value in [0, 1] or
NaN with a reason (the full-size run is bench/fuzz_scorers.py)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lceval.benchmarks import registry
from lceval.core.io import read_records
from lceval.core.records import Context, Response, Sample

FIXTURES = Path(__file__).parent / "fixtures" / "regression"
SCORERS = [
    (bench.key, spec.name)
    for bench in registry.all_benchmarks()
    for spec in bench.scorers.values()
    if spec.score is not None
]

_cache: dict[str, tuple[list[Sample], dict[str, Context]]] = {}


def _fixture(key: str) -> tuple[list[Sample], dict[str, Context]]:
    if key not in _cache:
        folder = FIXTURES / key
        samples = registry.load_samples(read_records(folder / "samples.jsonl", Sample))
        contexts = {c.id: c for c in read_records(folder / "contexts.jsonl", Context)}
        _cache[key] = (samples, contexts)
    return _cache[key]


# Text with lone surrogates, controls, brackets and gold-like words mixed in.
hostile = st.one_of(
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=300),
    st.text(alphabet="[](){}#*\\\"'\n\t .,:;-_0123456789AaBbCcDdWeek", max_size=400),
    st.builds(
        lambda c, n: c * n,
        st.sampled_from(["[", "(", "#*#", "Week 1 ", "\ud800", "a"]),
        st.integers(0, 3000),
    ),
)


def _check(key: str, name: str, index: int, text: str) -> float:
    samples, contexts = _fixture(key)
    spec = registry.get(key).scorer(name)
    s = samples[index % len(samples)]
    ctx = contexts.get(s.context_id) if s.context_id else None
    t = time.perf_counter()
    j = spec.score(s, Response(sample_id=s.id, model="m", text=text, config_hash="h"), ctx)
    dt = time.perf_counter() - t
    assert math.isnan(j.value) and j.explanation or 0.0 <= j.value <= 1.0, (s.task, j)
    return dt


@pytest.mark.parametrize(("key", "name"), SCORERS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 10_000), text=hostile)
def test_scorer_never_raises_and_stays_in_range(key, name, index, text):
    _check(key, name, index, text)


@pytest.mark.parametrize(("key", "name"), SCORERS)
@pytest.mark.parametrize("unit", ["[", "a", "#*#", "Week 1 ", "\ud800", "[x] "])
def test_one_megabyte_of_one_pattern_is_scored_in_time(key, name, unit):
    samples, _ = _fixture(key)
    text = (unit * (1_000_000 // len(unit)))[:1_000_000]
    worst = max(
        _check(key, name, i, text) for i in range(0, len(samples), max(1, len(samples) // 4))
    )
    # A hang guard, not a speed measurement (bench/fuzz_scorers.py reports the real times):
    # quadratic work on 1 MB takes hours, bounded work well under a second.
    assert worst < 30.0
