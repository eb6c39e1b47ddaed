"""``lceval repair RUN``: lines of responses.jsonl that do not parse (a crash mid-write, a full
disk) moved aside to ``responses.jsonl.bad``, so the next ``lceval infer`` answers them again."""

from __future__ import annotations

from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.store import ResponseStore
from lceval.run.config import RepairConfig


def handle(cfg: RepairConfig, outputs: str | None) -> int:
    """Move the bad lines aside (:meth:`lceval.core.store.ResponseStore.drop_bad_lines`) and say how
    many.

    Raises:
        LcevalError: an invalid run id, a run without responses.jsonl.
    """
    run = RunDir(cfg.run_id, outputs)
    if not run.responses.exists():
        raise LcevalError(f"{run.responses} does not exist")
    n = ResponseStore(run.responses, index=False).drop_bad_lines()
    print(f"moved {n} bad line(s) to {run.responses}.bad" if n else "no bad lines")
    return 0
