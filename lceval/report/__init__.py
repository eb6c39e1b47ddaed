"""The report wing: what a scored run is shown as (:mod:`~lceval.report.stage`, the pages,
results.json, the reproduction index) and how runs are compared (:mod:`~lceval.report.compare`).
It reads the run wing's files and never answers a sample. The package is callable as the stage
(``lceval.report(run_id)``); pandas and matplotlib load when a report is written.
"""

import sys
import types
from pathlib import Path

from lceval.report.stage import ReportTables, report, report_sweep, write_run_pages

__all__ = ["ReportTables", "report", "report_sweep", "write_run_pages"]


class _ReportModule(types.ModuleType):
    """This package, callable as :func:`lceval.report.stage.report` (the stage ``lceval``
    exports under the package's name)."""

    def __call__(
        self, run_id: str, *, root: str | Path | None = None, scorer: str | None = None
    ) -> ReportTables:
        return report(run_id, root=root, scorer=scorer)


sys.modules[__name__].__class__ = _ReportModule
