"""``lceval repair RUN``: lines of responses.jsonl that do not parse (a crash mid-write, a full
disk) moved aside to ``responses.jsonl.bad``, so the next ``lceval infer`` answers them again."""

from __future__ import annotations

from lceval.errors import LcevalError
from lceval.io import RunDir
from lceval.run.config import RepairConfig
from lceval.store import ResponseStore


def handle(cfg: RepairConfig, outputs: str | None) -> int:
    """Move the bad lines aside (:meth:`lceval.store.ResponseStore.drop_bad_lines`) and say how
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
