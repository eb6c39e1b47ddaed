"""``lceval status RUN``: a run's inference progress, read from another terminal
(``logs/progress.jsonl``, :func:`lceval.progress.status`)."""

from __future__ import annotations

from lceval.run.config import StatusConfig


def handle(cfg: StatusConfig, outputs: str | None) -> int:
    """Print the run's progress.

    Raises:
        LcevalError: an invalid run id.
    """
    from lceval.io import RunDir
    from lceval.progress import status

    print(status(RunDir(cfg.run_id, outputs).path))
    return 0
