"""What the test suite needs to know about each paper: the small build of its params files, the
full pipeline that runs it, and the numbered tables and figures its ``reproduction.yaml`` must
list. Test settings, so they live here and not on the product's ``Benchmark``; a new benchmark
adds one entry (DEVELOPING.md, "Add a benchmark", step 7). Imported by the tests as
``tests.papers`` (``pythonpath = ["."]`` in pyproject's pytest options)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PaperTests:
    """One benchmark's test settings."""

    small: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    """``small(params) -> overrides``: ``-p`` overrides that keep a build of a params file small
    (counts, lengths, no model-backed retrieval); None: build the file as it is."""
    pipeline: str | None = None
    """The full pipeline that runs this benchmark, ``params/pipelines/<pipeline>_full.yaml``
    (LongGenBench and RULER share ``longgenbench_ruler``); None: none."""
    full_runs: tuple[str, ...] = ()
    """Run ids the full pipeline writes for this benchmark (their responses and scores are
    checked)."""
    paper: str | None = None
    """The paper's name as ``reproduction.yaml`` writes it (``LIFBench``); None: no numbered
    items are required (RULER's README has none)."""
    items: tuple[str, ...] = ()
    """Numbered tables and figures of the paper that ``reproduction.yaml`` must list."""


def numbered(tables: int, figures: int, *extra: str) -> tuple[str, ...]:
    """``Table 1`` .. ``Table <tables>``, ``Fig. 1`` .. ``Fig. <figures>`` and ``extra``: a
    paper's numbered items for :attr:`PaperTests.items` (read from the papers' captions)."""
    return (
        *(f"Table {i}" for i in range(1, tables + 1)),
        *(f"Fig. {i}" for i in range(1, figures + 1)),
        *extra,
    )


PAPERS: dict[str, PaperTests] = {
    "cifbench": PaperTests(
        small=lambda p: {"n_inputs": 1},
        pipeline="cifbench",
        full_runs=("cifbench-full",),
        paper="CIF-Bench",
        items=numbered(13, 3),
    ),
    "leval": PaperTests(
        small=lambda p: {
            "limit_docs": 1,
            # the dense retriever loads a model (tests/benchmarks/leval covers it, marked slow)
            "retrieval": [r for r in p["retrieval"] if r != "dense"],
        },
        pipeline="leval",
        full_runs=("leval-full",),
        paper="L-Eval",
        items=(
            "Closed-ended table",
            "Open-ended table",
            "Human evaluation table",
            "LIE Kendall-tau table",
            "LIE NQ example",
            "Retrieval vs full-context",
            "NTK base sweep",
        ),
    ),
    "lifbench": PaperTests(
        small=lambda p: {"max_samples_per_task": 1, "lengths": p["lengths"][:2]},
        pipeline="lifbench",
        full_runs=("lifbench-full",),
        paper="LIFBench",
        items=numbered(5, 3),
    ),
    "longgenbench": PaperTests(
        small=lambda p: {"n_per_scenario": 1},
        pipeline="longgenbench_ruler",
        full_runs=("longgenbench-full",),
        paper="LongGenBench",
        items=numbered(7, 2, "Fig. 3a", "Fig. 3b"),
    ),
    "manyifeval": PaperTests(
        small=lambda p: {"n_prompts": 1},
        pipeline="manyifeval",
        full_runs=("manyifeval-full",),
        paper="ManyIFEval",
        items=numbered(7, 10),
    ),
    "ruler": PaperTests(
        small=lambda p: {"num_samples": 1, "lengths": p["lengths"][:1]},
        pipeline="longgenbench_ruler",
        full_runs=("ruler-full",),
    ),
}
"""Benchmark key -> its test settings; every registered benchmark has one
(``tests/test_suite_hygiene.py::test_every_benchmark_has_test_settings``)."""


def of(key: str) -> PaperTests:
    """The test settings of benchmark ``key`` (the defaults when it declares none)."""
    return PAPERS.get(key, PaperTests())
