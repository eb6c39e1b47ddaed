"""``lceval report``: a scored run's tables and figures under report/, with report/index.html
(:func:`lceval.report.write_report`)."""

from __future__ import annotations

from lceval.core.io import RunDir
from lceval.report.stage import write_report
from lceval.run.config import ReportConfig


def handle(cfg: ReportConfig, outputs: str | None) -> int:
    """Write the report; print each benchmark's scorers and the summary of what was written.

    Raises:
        LcevalError: a run without scores, an unknown scorer.
    """
    from lceval.report.index_page import report_summary  # pulls pandas, jinja2

    tables = write_report(cfg.run_id, root=outputs, scorer=cfg.scorer)
    for key, names in tables.scorers.items():
        print(f"{key}: scorer {', '.join(names)}")
    print(report_summary(RunDir(cfg.run_id, outputs), tables))
    return 0
