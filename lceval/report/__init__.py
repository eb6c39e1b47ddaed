"""The report wing: what a scored run is shown as, and how runs are compared.

- :mod:`lceval.report.stage`: ``report`` (the report stage: each benchmark's tables and figures,
  the pages, results.json, report/index.html); ``report_sweep`` (the NTK sweep's);
- :mod:`lceval.report.index_page`, :mod:`lceval.report.samples_page`,
  :mod:`lceval.report.compare_page`: the HTML pages (``show_samples`` for a notebook cell);
- :mod:`lceval.report.results`: results.json (schema, writer, reader, leaderboard of files);
- :mod:`lceval.report.reproduction`: the reproduction index (paper items -> files);
- :mod:`lceval.report.compare`: headlines, leaderboards and paired tests across runs;
- :mod:`lceval.report.reasoning`: reasoning models' thinking beside their scores.

It reads the run wing's files and never answers a sample itself. ``lceval.report.report`` is
imported on first use, so ``import lceval.report`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "report": "stage",
    "report_sweep": "stage",
    "write_run_pages": "stage",
    "ReportTables": "stage",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """The report stage, imported from :mod:`lceval.report.stage` on first use (PEP 562)."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"lceval.report.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'lceval.report' has no attribute {name!r}")
