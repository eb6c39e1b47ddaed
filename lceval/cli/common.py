"""What several verbs share: the handler's shape, the ``next:`` line, the ``--csv`` check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lceval.core.errors import LcevalError

Handler = Callable[[Any, "str | None"], int]
"""``handle(config, outputs) -> exit status``: the verb's declared config and the ``--outputs``
folder (None: the default); bad input raises :class:`~lceval.core.errors.LcevalError`."""


def next_steps(run_id: str, outputs: str | None, *steps: str) -> str:
    """``next: lceval VERB RUN  (what it does)`` for each (verb, what) pair of ``steps``, with
    ``--outputs`` repeated where it was given."""
    where = f"--outputs {outputs} " if outputs else ""
    pairs = zip(steps[::2], steps[1::2], strict=True)
    return "\n".join(f"next: lceval {where}{v} {run_id}   ({what})" for v, what in pairs)


def csv_path(value: str) -> Path:
    """``--csv``'s path, checked before anything is computed.

    Raises:
        LcevalError: not a .csv name, a folder, or a missing parent folder.
    """
    path = Path(value)
    if path.suffix != ".csv":
        raise LcevalError(f"--csv must name a .csv file, got {value!r}")
    if path.is_dir():
        raise LcevalError(f"--csv: {path} is a folder, not a file")
    if not path.parent.is_dir():
        raise LcevalError(f"--csv: folder {path.parent} does not exist")
    return path
