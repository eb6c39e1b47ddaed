"""``lceval import BENCHMARK PATH --run-id RUN``: a benchmark's official prediction files turned
into a run (samples and responses), through the importer the benchmark declares
(``Benchmark.importers``; L-Eval's ``Predictions/``)."""

from __future__ import annotations

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.run.config import ImportConfig


def handle(cfg: ImportConfig, outputs: str | None) -> int:
    """Import with the benchmark's first importer and print the sample count.

    Raises:
        LcevalError: a benchmark without an importer (the ones with one named), an unreadable
            prediction file, a run that has responses (without ``--force``).
    """
    with_importer = [b.key for b in registry.all_benchmarks() if b.importers]
    if cfg.benchmark not in with_importer:
        raise LcevalError(
            f"no importer for {cfg.benchmark!r}; choose one of {', '.join(with_importer)}"
        )
    importer = next(iter(registry.get(cfg.benchmark).importers.values()))
    run = importer(cfg.path, cfg.run_id, root=outputs, force=cfg.force)
    n = sum(1 for _ in open(run.samples, encoding="utf-8"))
    print(f"imported {n} samples and their responses into {run.path}")
    return 0
