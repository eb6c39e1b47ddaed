"""What several verbs share: the handler's shape, the ``next:`` line, the output files' checks
and the ``--csv`` writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lceval.core.errors import LcevalError
from lceval.core.io import atomic_open

Handler = Callable[[Any, "str | None"], int]
"""``handle(config, outputs) -> exit status``: the verb's declared config and the ``--outputs``
folder (None: the default); bad input raises :class:`~lceval.core.errors.LcevalError`."""


def next_steps(run_id: str, outputs: str | None, *steps: str) -> str:
    """``next: lceval VERB RUN  (what it does)`` for each (verb, what) pair of ``steps``, with
    ``--outputs`` repeated where it was given."""
    where = f"--outputs {outputs} " if outputs else ""
    pairs = zip(steps[::2], steps[1::2], strict=True)
    return "\n".join(f"next: lceval {where}{v} {run_id}   ({what})" for v, what in pairs)


def out_path(value: str, flag: str = "--csv", suffix: str = ".csv") -> Path:
    """An output file's path (``--csv``, ``--samples``), checked before anything is computed.

    Raises:
        LcevalError: not a ``suffix`` name, a folder, or a missing parent folder.
    """
    path = Path(value)
    if path.suffix != suffix:
        raise LcevalError(f"{flag} must name a {suffix} file, got {value!r}")
    if path.is_dir():
        raise LcevalError(f"{flag}: {path} is a folder, not a file")
    if not path.parent.is_dir():
        raise LcevalError(f"{flag}: folder {path.parent} does not exist")
    return path


def write_csv(frame: Any, path: Path) -> Path:
    """``frame`` (a DataFrame) written to ``path`` atomically without its index (a failed write:
    LcevalError, one line, from :func:`lceval.core.io.atomic_open`)."""
    with atomic_open(path) as f:
        frame.to_csv(f, index=False)
    return path
