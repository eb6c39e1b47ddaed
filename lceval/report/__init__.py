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
imported here (typed); pandas and matplotlib are imported when a report is written, so
``import lceval.report`` stays light. The package itself is callable as the stage
(``lceval.report(run_id)``), the name :mod:`lceval` exports.
"""

import sys
import types
from pathlib import Path

from lceval.report.stage import ReportTables, report, report_sweep, write_run_pages

__all__ = ["ReportTables", "report", "report_sweep", "write_run_pages"]


class _ReportModule(types.ModuleType):
    """This package, callable as its report stage: ``lceval.report(run_id)`` is
    :func:`lceval.report.stage.report` (the name ``lceval.report`` is both the package, read as
    ``lceval.report.report`` by notebooks, and the stage the ``lceval`` package exports)."""

    def __call__(
        self, run_id: str, *, root: str | Path | None = None, scorer: str | None = None
    ) -> ReportTables:
        return report(run_id, root=root, scorer=scorer)


sys.modules[__name__].__class__ = _ReportModule
