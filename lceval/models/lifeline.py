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
killed. The reaper trusts no record further than it can check (a record is a file anyone may
write): it signals a process only when its command line is the one the watchdog recorded and it
descends from the guarded lceval process, shown by its environment: it carries the guard's
token (:data:`TOKEN_ENV`, inherited by every spawned or exec'd child) or, for a forked child,
the owner's own start-up environment (hashed in the record). A record that does not parse (a pid
of -1, text for a number, ``children`` as a list) is reported in one line naming it and removed;
it never stops the command.
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

TOKEN_ENV = "LCEVAL_LIFELINE"
"""The environment variable a guard sets for its block: a token its record holds, inherited by
every process spawned or exec'd from the guarded one (the reaper's proof of descent)."""

MAX_RECORD_BYTES = 4 << 20
"""The largest record the reaper reads."""

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


def _environ(pid: int) -> bytes | None:
    """The environment a process started with (``/proc/PID/environ``), None when unreadable."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read(1 << 22)
    except OSError:
        return None


def _env_hash(pid: int) -> str | None:
    import hashlib

    env = _environ(pid)
    return hashlib.sha256(env).hexdigest() if env is not None else None


def _cmdline(pid: int) -> list[str] | None:
    import psutil

    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return None


def _ours(pid: int, started: float, command: Any, token: Any, env: Any) -> bool:
    """Whether ``pid`` is the process a record names and one lceval started: the same start
    time, the recorded command line, and an environment descended from the guard (its token,
    or the owner's start-up environment for a forked child)."""
    if not isinstance(command, list) or not command or not _alive(pid, started):
        return False
    if _cmdline(pid) != command:
        return False
    raw = _environ(pid)
    if raw is None:
        return False
    if isinstance(token, str) and token and f"{TOKEN_ENV}={token}".encode() in raw.split(b"\0"):
        return True
    import hashlib

    return isinstance(env, str) and hashlib.sha256(raw).hexdigest() == env


class BadRecord(ValueError):
    """A record in ``.engines/`` that is not one the watchdog writes."""


def _pid(value: Any, where: str) -> int:
    if isinstance(value, str) and value.isdecimal():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 < value < 1 << 32:
        raise BadRecord(f"{where} is not a process id: {value!r:.40}")
    return value


def _time(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise BadRecord(f"{where} is not a start time: {value!r:.40}")
    return float(value)


def parse_record(data: Any) -> tuple[tuple[int, float] | None, dict[int, float], dict[str, Any]]:
    """(owner, children ``pid -> start``, the rest: ``commands``, ``token``, ``env``) of a
    record's JSON value.

    Raises:
        BadRecord: not an object, an owner that is not ``[pid, start]``, children that are not
            a ``{pid: start}`` mapping, a pid that is not a whole number above 1.
    """
    if not isinstance(data, dict):
        raise BadRecord(f"not a JSON object but {type(data).__name__}")
    owner = data.get("owner")
    if owner is not None and (not isinstance(owner, list) or len(owner) != 2):
        raise BadRecord(f"owner is not [pid, start time]: {owner!r:.40}")
    me = (_pid(owner[0], "owner"), _time(owner[1], "owner start")) if owner else None
    children = data.get("children") or {}
    if not isinstance(children, dict):
        raise BadRecord(f"children is a {type(children).__name__}, not a {{pid: start}} mapping")
    kids = {_pid(k, "a child"): _time(v, f"child {k}'s start") for k, v in children.items()}
    commands = data.get("commands") or {}
    rest = {
        "commands": commands if isinstance(commands, dict) else {},
        "token": data.get("token"),
        "env": data.get("env"),
    }
    return me, kids, rest


def _write(record: Path, data: dict[str, Any]) -> None:
    tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, record)


def read_record(record: Path) -> dict[str, Any] | None:
    """The record's contents (``owner``: [pid, start], ``children``: {pid: start},
    ``commands``: {pid: command line}, ``token``, ``env``); None when absent or bad."""
    try:
        data = _load(record)
    except BadRecord:
        return None
    return data if isinstance(data, dict) else None


def _load(record: Path) -> Any:
    """The JSON value of a record; None when it is gone (removed by its owner meanwhile).

    Raises:
        BadRecord: not a regular file, over :data:`MAX_RECORD_BYTES`, not UTF-8 JSON.
    """
    import stat

    try:
        if not stat.S_ISREG(os.stat(record).st_mode):
            raise BadRecord("not a regular file")
        with open(record, "rb") as f:
            raw = f.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadRecord(f"unreadable: {exc.strerror}") from None
    if len(raw) > MAX_RECORD_BYTES:
        raise BadRecord(f"over {MAX_RECORD_BYTES} bytes")
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise BadRecord(f"not JSON: {str(exc)[:80]}") from None


def reap(run_path: str | os.PathLike[str]) -> list[int]:
    """Kill what a killed command on this run left running (layer 3): the processes the records
    name whose owner (the lceval process that started them) is gone. A record whose owner still
    runs (another command on the run, a notebook kernel inside ``lceval run``) is left alone.

    Returns:
        The pids killed (empty when nothing was left).
    """
    killed: list[int] = []
    for record in sorted((Path(run_path) / RECORDS).glob("*.json")):
        try:
            data = _load(record)
            if data is None:
                continue
            owner, children, rest = parse_record(data)
        except BadRecord as exc:
            print(
                f"lceval: warning: {record} is not an engine record ({exc}); removed",
                file=sys.stderr,
            )
            with contextlib.suppress(OSError):
                record.unlink()
            continue
        if owner is not None and _alive(*owner):
            continue
        commands = rest["commands"]
        ours = {
            pid: t
            for pid, t in children.items()
            if pid != os.getpid()
            and _ours(pid, t, commands.get(str(pid)), rest["token"], rest["env"])
        }
        killed += _kill(ours)
        with contextlib.suppress(OSError):
            record.unlink()
    return killed


def watch(owner: int, record: Path, token: str = "", env: str | None = None) -> None:
    """The watchdog's loop (layer 2): record ``owner``'s descendants; once ``owner`` is gone,
    kill them all and remove the record. Ends when the record is removed (the engine closed)."""
    import psutil

    me = _ident(owner)
    if me is None:
        return
    children: dict[int, float] = {}
    commands: dict[str, list[str]] = {}
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
        seen = {str(pid): _cmdline(pid) or [] for pid in found}  # an exec changes it
        if any(children.get(pid) != t for pid, t in found.items()) or any(
            commands.get(k) != v for k, v in seen.items()
        ):
            commands.update(seen)
            children.update(found)
            with contextlib.suppress(OSError):
                if record.exists():
                    _write(record, _contents(me, children, commands, token, env))
        time.sleep(POLL_S)


def _contents(
    me: tuple[int, float],
    children: dict[int, float],
    commands: dict[str, list[str]],
    token: str,
    env: str | None,
) -> dict[str, Any]:
    return {
        "owner": list(me),
        "children": children,
        "commands": commands,
        "token": token,
        "env": env,
    }


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
    token = f"{os.getpid()}-{os.urandom(8).hex()}"
    env = _env_hash(os.getpid())
    before = os.environ.get(TOKEN_ENV)
    os.environ[TOKEN_ENV] = token  # every process started in the block inherits it
    if me is not None:
        _write(record, _contents(me, {}, {}, token, env))
        watchdog = subprocess.Popen(
            [
                sys.executable,
                "-P",
                __file__,
                str(os.getpid()),
                str(record),
                token,
                env or "",
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
        if before is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = before
        with contextlib.suppress(OSError):
            record.unlink()
        if watchdog is not None:  # the engine was closed in the block: nothing left to watch
            watchdog.kill()
            watchdog.wait()
        with contextlib.suppress(OSError):  # the run folder as it was (others' records stay)
            record.parent.rmdir()


if __name__ == "__main__":  # the watchdog: python lifeline.py OWNER_PID RECORD (stdlib, psutil)
    watch(int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4] or None)
