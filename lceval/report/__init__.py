"""The report wing: what a scored run is shown as and how runs are compared; it reads the run
wing's files, never answers a sample, and is callable as the stage (``lceval.report(run_id)``)."""

import sys
import types
from pathlib import Path

from lceval.report.stage import ReportTables, report, report_sweep, write_run_pages

__all__ = ["ReportTables", "report", "report_sweep", "write_run_pages"]


class _ReportModule(types.ModuleType):
    """This package, callable as :func:`lceval.report.stage.report`."""

    def __call__(
        self, run_id: str, *, root: str | Path | None = None, scorer: str | None = None
    ) -> ReportTables:
        return report(run_id, root=root, scorer=scorer)


sys.modules[__name__].__class__ = _ReportModule
