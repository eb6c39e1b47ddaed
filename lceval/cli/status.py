"""``lceval status RUN``: a run's inference progress, read from another terminal
(``logs/progress.jsonl``, :func:`lceval.core.progress.status`)."""

from __future__ import annotations

import re

from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.progress import status
from lceval.run.config import StatusConfig

_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
"""Control characters other than the newline: ESC starts an ANSI sequence."""


def handle(cfg: StatusConfig, outputs: str | None) -> int:
    """Print the run's progress. Control characters read from the progress file (an ANSI
    escape in a model name) are printed escaped (``\\x1b``), never sent to the terminal.

    Raises:
        LcevalError: an invalid run id, a run that does not exist, a run without progress.
    """
    run = RunDir(cfg.run_id, outputs)
    if not run.path.is_dir():
        raise LcevalError(f"no run {cfg.run_id} in {run.path.parent} (lceval list shows the runs)")
    print(plain(status(run.path)))
    return 0


def plain(text: str) -> str:
    """``text`` with every control character but the newline written as its escape."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
