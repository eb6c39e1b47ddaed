"""Benchmarks by key: each is the ``BENCHMARK`` object of ``lceval.benchmarks.<key>``.

Benchmarks are discovered from their folders: every package ``lceval/benchmarks/<key>/`` is
registered under its folder name (nothing is imported until a benchmark is asked for), so adding
one is a folder (see DEVELOPING.md, "Add a benchmark"). A benchmark kept outside lceval (a
plugin, a test's toy benchmark) is added at run time with :func:`register`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from importlib import resources as _resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from lceval.benchmarks.base import Benchmark, ScorerSpec, scorer_key
from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.params import Judge, unknown_keys


def discover() -> dict[str, str]:
    """Benchmark key -> module of every package under ``lceval/benchmarks/`` (its folder name;
    sorted), found without importing any of them."""
    folder = Path(__file__).parent
    keys = sorted(m.name for m in pkgutil.iter_modules([str(folder)]) if m.ispkg)
    return {key: f"lceval.benchmarks.{key}" for key in keys}


_MODULES = discover()
"""Registered benchmarks: those discovered, then those added by :func:`register`."""

BENCHMARKS = tuple(_MODULES)
"""Registered benchmark keys."""


def register(key: str, module: str) -> None:
    """Register the benchmark whose ``BENCHMARK`` lives in ``module`` under ``key`` (a benchmark
    outside lceval/benchmarks/, e.g. a plugin or a test's toy benchmark); imported on first use.

    Raises:
        LcevalError: ``key`` is already registered to another module, or is not a valid key.
    """
    global BENCHMARKS
    if not isinstance(key, str) or not key.isidentifier():
        raise LcevalError(f"benchmark key {key!r} must be a Python identifier")
    if _MODULES.get(key, module) != module:
        raise LcevalError(f"benchmark {key!r} is already registered to {_MODULES[key]}")
    _MODULES[key] = module
    BENCHMARKS = tuple(_MODULES)


def unregister(key: str) -> None:
    """Forget a benchmark added by :func:`register` (no error when it is not registered)."""
    global BENCHMARKS
    _MODULES.pop(key, None)
    BENCHMARKS = tuple(_MODULES)


def get(key: str) -> Benchmark:
    """The registered Benchmark for ``key``.

    Raises:
        LcevalError: unknown key; the message lists the registered ones.
    """
    if not isinstance(key, str) or key not in _MODULES:
        raise LcevalError(f"unknown benchmark {key!r}; choose one of {', '.join(BENCHMARKS)}")
    bench: Benchmark = importlib.import_module(_MODULES[key]).BENCHMARK
    return bench


def all_benchmarks() -> list[Benchmark]:
    """Every registered Benchmark, in registry order."""
    return [get(k) for k in BENCHMARKS]


def find_scorer(name: str, benchmarks: Iterable[str] | None = None) -> tuple[Benchmark, ScorerSpec]:
    """The benchmark and scorer for a scorer name such as ``lifbench:strict``.

    Args:
        name: a scorer name; its part before ``:`` is the benchmark key.
        benchmarks: restrict to these keys (those of a run).

    Raises:
        LcevalError: unknown benchmark or scorer; the message lists the choices.
    """
    key = scorer_key(name)
    keys = list(benchmarks) if benchmarks is not None else list(BENCHMARKS)
    if key not in keys:
        choices = [s for k in keys if k in _MODULES for s in get(k).scorers]
        raise LcevalError(f"unknown scorer {name!r}; choose one of {', '.join(choices)}")
    bench = get(key)
    return bench, bench.scorer(name)


def load_samples(samples: Iterable[Sample]) -> list[Sample]:
    """Samples with their gold parsed into each task's typed Gold (done once, at load time): the
    one loader of a run's samples (``lceval.run.load_samples(run)`` reads a run folder's);
    each benchmark's part goes through its ``Benchmark.load_samples``.

    Raises:
        LcevalError: a sample names an unregistered benchmark or its gold does not parse.
    """
    out = []
    cache: dict[str, Benchmark] = {}
    for s in samples:
        bench = cache.get(s.benchmark)
        if bench is None:
            bench = cache[s.benchmark] = get(s.benchmark)
        out.extend(bench.load_samples([s]))
    return out


JUDGE_PREFIX = "judge_"
"""A notebook's judge param ``judge_<option>`` (:class:`lceval.params.Judge`) is the judge
scorer's option ``<option>`` (``lceval.models.judge.JudgeModel``)."""


def judge_options(
    scorer: str | None, scorer_options: Mapping[str, Any] | None, **judge: Any
) -> dict[str, Any]:
    """The options of ``scorer`` with a notebook's judge params filled in: for a scorer with a
    model judge (``ScorerSpec.batch``), each ``judge_<option>`` param that is not None and whose
    option the scorer declares; other scorers get ``scorer_options`` as they are.

    Args:
        scorer: a scorer name (None: the default scorer, options as they are).
        scorer_options: the notebook's ``scorer_options``.
        judge: the fields of :class:`lceval.params.Judge` (any of them).

    Raises:
        LcevalError: an unknown judge param or scorer, or one option given both ways with
            different values.
    """
    out = dict(scorer_options or {})
    unknown_keys(judge, Judge.model_fields, "judge")
    if scorer is None:
        return out
    _, spec = find_scorer(scorer)
    if spec.batch is None:
        return out
    for key, value in judge.items():
        option = key.removeprefix(JUDGE_PREFIX)
        if value is None or option not in spec.options:
            continue
        if option in out and out[option] != value:
            raise LcevalError(
                f"{key} ({value!r}) and scorer_options.{option} ({out[option]!r}) disagree; "
                "keep one"
            )
        out[option] = value
    return out


def resources(key: str) -> Traversable:
    """The ``resources/`` folder of benchmark ``key``'s package (the paper's published tables),
    for a study that reads a paper's published numbers through the registry.

    Raises:
        LcevalError: unknown key.
    """
    get(key)
    return _resources.files(_MODULES[key]).joinpath("resources")
