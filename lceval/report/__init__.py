"""The report wing: what a scored run is shown as and how runs are compared; it reads the run
wing's files and never answers a sample. The report stage is :func:`write_report` (``lceval
report``; ``lceval.write_report`` in the public face, :mod:`lceval.api`)."""

from lceval.report.stage import ReportTables, report_sweep, write_report, write_run_pages

__all__ = ["ReportTables", "report_sweep", "write_report", "write_run_pages"]
