"""Engines die with lceval: no process started for a run outlives the lceval process (or notebook
kernel) that started it, SIGKILL to its process group included (DEVELOPING.md, "Backends"):
(1) forked children get ``PR_SET_PDEATHSIG = SIGKILL``; (2) a watchdog in a session of its own
records every descendant in ``<run>/.engines/<pid>.json`` and kills them once lceval is gone;
(3) the next command on the run kills what a record of a dead owner names (:func:`reap`), only
processes of the recorded start time and command line that descend from the guard (its token in
their environment, or the owner's start-up environment), since anyone may write a record.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import psutil
from pydantic import BaseModel, Field, ValidationError

RECORDS = ".engines"  # the run folder's records: one <pid>.json per lceval process with an engine
TOKEN_ENV = "LCEVAL_LIFELINE"  # a guard's token, inherited by every process started in its block
MAX_RECORD_BYTES = 4 << 20
POLL_S = 0.5  # seconds between the watchdog's looks at lceval and its descendants

Pid = Annotated[int, Field(gt=1, lt=1 << 32)]
Start = Annotated[float, Field(ge=0)]


class Record(BaseModel):
    """A watchdog's record: the owner and its descendants as ``(pid, start time)``, each child's
    command line by pid, the guard's token and the SHA-256 of the owner's start-up environment
    (``/proc/PID/environ``)."""

    owner: tuple[Pid, Start] | None = None
    children: dict[Pid, Start] = {}
    commands: dict[str, list[str]] = {}
    token: str | None = None
    env: str | None = None


def _pdeathsig() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux: layers 2 and 3 remain
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


@functools.cache
def tie_forked_children() -> None:
    """Give every child this process forks from now on ``PR_SET_PDEATHSIG = SIGKILL`` (once per
    process, Linux only)."""
    if sys.platform.startswith("linux"):
        os.register_at_fork(after_in_child=_pdeathsig)


def _alive(pid: int, started: float) -> bool:
    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - started) < 0.01 and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kill(procs: dict[int, float]) -> list[int]:
    killed = []
    for pid, started in procs.items():
        if _alive(pid, started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


def _environ(pid: int) -> bytes | None:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as f:
        return f.read(1 << 22)
    return None


def _ours(pid: int, started: float, record: Record) -> bool:
    command = record.commands.get(str(pid))
    raw = _environ(pid) if command and _alive(pid, started) else None
    with contextlib.suppress(psutil.Error):
        if raw is None or psutil.Process(pid).cmdline() != command:
            return False
        if record.token and f"{TOKEN_ENV}={record.token}".encode() in raw.split(b"\0"):
            return True
        return record.env == hashlib.sha256(raw).hexdigest()
    return False


def read_record(path: Path) -> Record | None:
    """The record at ``path``; None when it is gone (removed by its owner meanwhile).

    Raises:
        ValueError: not a regular file of at most :data:`MAX_RECORD_BYTES`, or not a record's
            JSON (pids above 1, start times >= 0), in one line naming the field.
    """
    try:
        if not path.is_file():
            raise ValueError("not a regular file")
        with open(path, "rb") as f:
            raw = f.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"unreadable: {exc.strerror}") from None
    if len(raw) > MAX_RECORD_BYTES:
        raise ValueError(f"over {MAX_RECORD_BYTES} bytes")
    try:
        return Record.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"]) or "record"
        raise ValueError(f"{where}: {err['msg']}, got {err['input']!r:.40}") from None


def reap(run_path: str | os.PathLike[str]) -> list[int]:
    """Kill what a killed command on this run left running: the processes the records name whose
    owner is gone (a record whose owner runs, another command or a notebook kernel, stays). A bad
    record is one warning line naming it, and removed. Returns the pids killed."""
    killed: list[int] = []
    for path in sorted((Path(run_path) / RECORDS).glob("*.json")):
        try:
            record = read_record(path)
        except ValueError as exc:
            print(
                f"lceval: warning: {path} is not an engine record ({exc}); removed", file=sys.stderr
            )
            record = None
        if record is not None:
            if record.owner is not None and _alive(*record.owner):
                continue
            kids = record.children.items()
            killed += _kill({p: t for p, t in kids if p != os.getpid() and _ours(p, t, record)})
        with contextlib.suppress(OSError):  # a folder, or gone
            path.unlink()
    return killed


def _write(path: Path, record: Record) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(record.model_dump_json(), encoding="utf-8")
    os.replace(tmp, path)


def watch(owner: int, path: Path, token: str = "", env: str | None = None) -> None:
    """The watchdog's loop: record ``owner``'s descendants; once ``owner`` is gone, kill them and
    remove the record. Ends when the record is removed (the engine closed)."""
    try:
        proc = psutil.Process(owner)
        started = proc.create_time()
    except psutil.Error:
        return
    record = Record(owner=(owner, started), token=token, env=env)
    while path.exists():
        if not _alive(owner, started):
            for _ in range(2):  # again after a look: a child forked meanwhile
                _kill(record.children)
                time.sleep(POLL_S)
            path.unlink(missing_ok=True)
            return
        before = record.model_dump()
        with contextlib.suppress(psutil.Error):
            for c in proc.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if c.pid != os.getpid():
                        record.children[c.pid] = c.create_time()
                        record.commands[str(c.pid)] = c.cmdline()  # an exec changes it
        if record.model_dump() != before and path.exists():
            with contextlib.suppress(OSError):
                _write(path, record)
        time.sleep(POLL_S)


@contextlib.contextmanager
def guard(run_path: str | os.PathLike[str]) -> Iterator[None]:
    """Around an engine's life for a run (the folder ``run_path``): reap what an earlier killed
    command left, tie forked children to this process and start the watchdog; on exit stop it
    and remove this process's record."""
    folder = Path(run_path) / RECORDS
    reap(run_path)
    tie_forked_children()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}.json"
    token = f"{os.getpid()}-{os.urandom(8).hex()}"
    raw = _environ(os.getpid())
    env = hashlib.sha256(raw).hexdigest() if raw is not None else ""
    before = os.environ.get(TOKEN_ENV)
    os.environ[TOKEN_ENV] = token  # every process started in the block inherits it
    _write(path, Record(owner=(os.getpid(), psutil.Process().create_time()), token=token, env=env))
    watchdog = subprocess.Popen(  # -P: not models/ on the path
        [sys.executable, "-P", __file__, str(os.getpid()), str(path), token, env],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = before
        path.unlink(missing_ok=True)
        watchdog.kill()
        watchdog.wait()
        with contextlib.suppress(OSError):  # the run folder as it was (others' records stay)
            folder.rmdir()


if __name__ == "__main__":  # the watchdog: python -P lifeline.py OWNER_PID RECORD TOKEN ENV
    watch(int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4] or None)
