"""``lceval list``: per benchmark its tasks (codes summarised), scorers, whether the paper's
setting needs the user's data, its importer and notebooks; then the backends and their main
options."""

from __future__ import annotations

from lceval.benchmarks import registry
from lceval.models.base import BACKENDS, backend_options
from lceval.run.config import ListConfig

VLLM_SHOWN = {
    "max_model_len",
    "dtype",
    "enable_prefix_caching",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "distributed_executor_backend",
    "prompt_format",
    "rope_theta",
    "rope_scaling",
}
"""vLLM options shown by ``lceval list`` (any other ``vllm.LLM`` engine argument is accepted;
all of them: ``lceval infer --list-options vllm``)."""


def handle(cfg: ListConfig, outputs: str | None) -> int:
    """Print per benchmark (:mod:`lceval.benchmarks.registry`) its tasks (at most 14 codes:
    CIF-Bench has 150), scorers, user data (:attr:`~lceval.benchmarks.base.Benchmark.user_data`),
    importer and notebooks, then the backends (:data:`lceval.models.base.BACKENDS`; an engine that
    is not installed is said so). Reads no run: ``outputs`` is unused."""
    lines = []
    for bench in registry.all_benchmarks():
        tasks = list(bench.tasks)
        more = f", ... and {len(tasks) - 14} more" if len(tasks) > 14 else ""
        lines.append(f"{bench.key}: {bench.title}")
        lines.append(f"  {len(tasks)} tasks: {', '.join(tasks[:14])}{more}")
        if bench.user_data:
            lines.append(f"  the paper's setting needs your data: {bench.user_data}")
        for spec in bench.scorers.values():
            lines.append(f"  scorer {spec.name} (v{spec.version}): {spec.description}")
            lines.append(f"    metrics: {', '.join(spec.metrics)}")
            for opt, doc in spec.options.items():
                lines.append(f"    -o {opt}=...: {doc}")
        if bench.importers:
            lines.append(f"  import: lceval import {bench.key} PATH (official prediction files)")
        if bench.notebooks:
            lines.append(f"  notebooks: {', '.join(bench.notebooks)}")
    lines.append("backends:")
    for name in BACKENDS:
        try:
            opts = ", ".join(o for o in backend_options(name) if name != "vllm" or o in VLLM_SHOWN)
        except ImportError as exc:  # an engine that is not installed
            opts = f"(not installed: {exc.name})"
        lines.append(f"  {name}: {opts}")
    lines.append("  (every option of a backend: lceval infer --list-options BACKEND)")
    print("\n".join(lines))
    return 0
