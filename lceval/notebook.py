"""What the notebooks read beside the run stages, in one module, so that a notebook imports at
most three of lceval's (``lceval.run`` for build / infer / score, ``lceval.report`` for the
report stage, and this one) and reaches a paper's own modules through its ``Benchmark``::

    import lceval.report
    import lceval.run
    from lceval.notebook import RunDir, get_benchmark, highlight_run_rows

    ntk = get_benchmark("leval").helper("ntk")  # Benchmark.helpers: the paper's modules
    summary_tables = get_benchmark("lifbench").function("summary_tables")

Nothing here is new code: each name is the one its wing defines (``get_benchmark`` the registry's
``get``, typed per paper). Importing this module loads
pandas and matplotlib (the report wing's table and figure helpers), as a notebook does anyway;
``import lceval`` stays light.
"""

from typing import Literal, overload

from lceval.benchmarks import registry
from lceval.benchmarks.base import Benchmark
from lceval.benchmarks.cifbench.helpers import CIFBenchmark
from lceval.benchmarks.leval.helpers import LEvalBenchmark
from lceval.benchmarks.lifbench.helpers import LIFBenchmark
from lceval.benchmarks.longgenbench.helpers import LongGenBenchmark
from lceval.benchmarks.manyifeval.helpers import ManyIFEvalBenchmark
from lceval.benchmarks.registry import judge_options
from lceval.core.io import RunDir, outputs_root, project_root
from lceval.models.base import GenerationConfig
from lceval.models.specs import opened, resolve_models
from lceval.report import compare
from lceval.report.coverage import comparability_note
from lceval.report.reporting import (
    highlight_run_rows,
    inference_summary,
    responses_frame,
    save_figure,
    save_table,
)
from lceval.report.samples_page import show_samples


@overload
def get_benchmark(key: Literal["lifbench"]) -> LIFBenchmark: ...
@overload
def get_benchmark(key: Literal["manyifeval"]) -> ManyIFEvalBenchmark: ...
@overload
def get_benchmark(key: Literal["longgenbench"]) -> LongGenBenchmark: ...
@overload
def get_benchmark(key: Literal["leval"]) -> LEvalBenchmark: ...
@overload
def get_benchmark(key: Literal["cifbench"]) -> CIFBenchmark: ...
@overload
def get_benchmark(key: str) -> Benchmark: ...
def get_benchmark(key: str) -> Benchmark:
    """The registered Benchmark for ``key`` (:func:`lceval.benchmarks.registry.get`), typed per
    paper where the paper types its helpers (``helper("report")`` -> its Protocol).

    Raises:
        LcevalError: unknown key; the message lists the registered ones.
    """
    return registry.get(key)


__all__ = [
    "GenerationConfig",
    "RunDir",
    "comparability_note",
    "compare",
    "get_benchmark",
    "highlight_run_rows",
    "inference_summary",
    "judge_options",
    "opened",
    "outputs_root",
    "project_root",
    "resolve_models",
    "responses_frame",
    "save_figure",
    "save_table",
    "show_samples",
]
