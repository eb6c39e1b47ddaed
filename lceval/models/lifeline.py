"""Engines die with lceval: no process started for a run outlives the lceval process (or notebook
kernel) that started it, SIGKILL included.

vLLM starts an ``EngineCore`` process and ``Worker`` processes, in their own session; after a
SIGKILL to the process group of ``lceval run`` they lived on with parent 1, holding 2.4 GB and a
full core each (issue 32). Three layers, each enough alone for the common case:

1. Forked children get ``PR_SET_PDEATHSIG = SIGKILL`` (Linux ``prctl``) through an
   ``os.register_at_fork`` hook: the kernel kills a child the moment its parent dies, and the hook
   is inherited, so a worker forked by the engine core dies with the core.
2. A watchdog process, in a session of its own (a signal to lceval's process group does not reach
   it), polls lceval's pid twice a second, records every descendant (pid and start time) in the
   run folder, and kills them all once lceval is gone. It covers processes that are not forked
   from Python (``spawn``, ``exec``) and ones that set up their own session.
3. The next command on the run (:func:`reap`) kills what the record names and is still alive
   when the process that started it is gone (a watchdog killed too, a reboot of the parent's
   pid space aside).

A process is identified by its pid and start time (``psutil``), so a recycled pid is never
killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RECORDS = ".engines"
"""The folder of records in the run folder: one ``<pid>.json`` per lceval process (a command, a
notebook kernel) with an engine open: the process and its descendants (pid, start time)."""

POLL_S = 0.5
"""Seconds between the watchdog's looks at lceval and its descendants."""

_HOOKED = False


def _pdeathsig() -> None:
    """In a forked child: ask the kernel for SIGKILL when the parent (thread) dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: the watchdog and the reaper remain
        pass


def tie_forked_children() -> None:
    """Give every child this process forks from now on ``PR_SET_PDEATHSIG = SIGKILL`` (layer 1;
    once per process, Linux only)."""
    global _HOOKED
    if _HOOKED or not sys.platform.startswith("linux"):
        return
    os.register_at_fork(after_in_child=_pdeathsig)
    _HOOKED = True


def _ident(pid: int) -> tuple[int, float] | None:
    """``(pid, start time)`` of a live process, None when it is gone."""
    import psutil

    try:
        return pid, psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _alive(pid: int, started: float) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (not a zombie)."""
    import psutil

    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - started) < 0.01 and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _kill(procs: dict[int, float]) -> list[int]:
    """SIGKILL each still-running ``pid -> start time``; the pids killed."""
    killed = []
    for pid, started in procs.items():
        if _alive(pid, started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


def _write(record: Path, data: dict[str, Any]) -> None:
    tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, record)


def read_record(record: Path) -> dict[str, Any] | None:
    """The record's contents (``owner``: [pid, start], ``children``: {pid: start}); None when
    absent or unreadable."""
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def reap(run_path: str | os.PathLike[str]) -> list[int]:
    """Kill what a killed command on this run left running (layer 3): the processes the records
    name whose owner (the lceval process that started them) is gone. A record whose owner still
    runs (another command on the run, a notebook kernel inside ``lceval run``) is left alone.

    Returns:
        The pids killed (empty when nothing was left).
    """
    killed: list[int] = []
    for record in sorted((Path(run_path) / RECORDS).glob("*.json")):
        data = read_record(record)
        if data is None:
            continue
        owner = data.get("owner") or [0, 0.0]
        if owner[0] and _alive(int(owner[0]), float(owner[1])):
            continue
        children = {int(k): float(v) for k, v in (data.get("children") or {}).items()}
        killed += _kill(children)
        with contextlib.suppress(OSError):
            record.unlink()
    return killed


def watch(owner: int, record: Path) -> None:
    """The watchdog's loop (layer 2): record ``owner``'s descendants; once ``owner`` is gone,
    kill them all and remove the record. Ends when the record is removed (the engine closed)."""
    import psutil

    me = _ident(owner)
    if me is None:
        return
    children: dict[int, float] = {}
    try:
        proc = psutil.Process(owner)
    except psutil.NoSuchProcess:
        return
    while True:
        if not record.exists():  # the command closed its engine and said so
            return
        if not _alive(*me):
            _kill(children)
            time.sleep(POLL_S)
            _kill(children)  # a child forked between two looks
            with contextlib.suppress(OSError):
                record.unlink()
            return
        try:
            found = {
                c.pid: c.create_time()
                for c in proc.children(recursive=True)
                if c.pid != os.getpid()
            }
        except psutil.Error:
            found = {}
        if any(children.get(pid) != t for pid, t in found.items()):
            children.update(found)
            with contextlib.suppress(OSError):
                if record.exists():
                    _write(record, {"owner": list(me), "children": children})
        time.sleep(POLL_S)


@contextlib.contextmanager
def guard(run_path: str | os.PathLike[str]) -> Iterator[None]:
    """Around an engine's life for a run: reap what an earlier killed command left, tie forked
    children to this process, and start the watchdog; on exit stop the watchdog and remove the
    record (the engine was closed in the block).

    Args:
        run_path: the run folder (the record is ``.engines/<pid>.json`` there).
    """
    folder = Path(run_path)
    reap(folder)
    tie_forked_children()
    (folder / RECORDS).mkdir(parents=True, exist_ok=True)
    record = folder / RECORDS / f"{os.getpid()}.json"
    me = _ident(os.getpid())
    watchdog = None
    if me is not None:
        _write(record, {"owner": list(me), "children": {}})
        watchdog = subprocess.Popen(
            [
                sys.executable,
                "-P",
                __file__,
                str(os.getpid()),
                str(record),
            ],  # -P: no models/ on sys.path
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            record.unlink()
        if watchdog is not None:  # the engine was closed in the block: nothing left to watch
            watchdog.kill()
            watchdog.wait()
        with contextlib.suppress(OSError):  # the run folder as it was (others' records stay)
            record.parent.rmdir()


if __name__ == "__main__":  # the watchdog: python lifeline.py OWNER_PID RECORD (stdlib, psutil)
    watch(int(sys.argv[1]), Path(sys.argv[2]))
