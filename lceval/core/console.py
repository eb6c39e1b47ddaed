"""What reaches the terminal: lceval's lines and bars (:func:`terminal`); while an engine runs,
:func:`engine_output` points descriptors 1 and 2 (and so its workers') at
``<run>/logs/lceval.log``. ``lceval -v`` / ``LCEVAL_VERBOSE=1`` keeps everything on the terminal.
"""

from __future__ import annotations

import datetime as _dt
import io
import os
import shlex
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, TextIO

from tqdm import TqdmWarning

from lceval.core.errors import LcevalError, one_line, redact

VERBOSE_ENV = "LCEVAL_VERBOSE"
"""``1`` keeps engine logs on the terminal (``lceval -v`` sets it for child notebooks)."""

_terminal: TextIO | None = None
"""The terminal while an engine's output is redirected (None: ``sys.stderr``)."""


def verbose() -> bool:
    """Whether engine logs stay on the terminal (``$LCEVAL_VERBOSE`` is 1, true, yes or on)."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (information goes to stdout there)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    return shell is not None and hasattr(shell, "kernel")


def terminal() -> TextIO:
    """Where lceval's lines and bars go: stderr (stdout in a Jupyter kernel), also while
    :func:`engine_output` redirects the rest."""
    if _terminal is not None:
        return _terminal
    return sys.stdout if in_kernel() else sys.stderr


_sink: TextIO | None = None


class _Switch(io.TextIOBase):
    """Stands in for ``sys.stdout``/``sys.stderr`` while an engine runs (writes go to the log),
    so a logging handler bound at import (vLLM's) follows the redirection in a kernel too."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream

    def _target(self) -> TextIO:
        return _sink if _sink is not None else self._stream

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"


def _record_interrupts(seen: list[int]) -> Any:
    """Note each SIGINT in ``seen`` before the current handler acts; returns that handler (None
    off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGINT)

    def note(signum: int, frame: Any) -> None:
        seen.append(signum)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, note)
    return previous


def _own_warnings_to_terminal(shown: Any) -> Any:
    """``warnings.showwarning`` sending lceval's warnings to the terminal, engines' to the log."""
    package = str(Path(__file__).resolve().parents[1])

    def show(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        if file is None and str(Path(filename).resolve()).startswith(package):
            file = _terminal if _terminal is not None else sys.stderr  # a warning stays one
        shown(message, category, filename, lineno, file, line)

    return show


def _on_fd2(stream: TextIO) -> bool:
    """Whether ``stream`` writes to descriptor 2 itself (not a kernel's or pytest's replacement)."""
    try:
        return isinstance(stream, io.TextIOWrapper) and stream.fileno() == 2
    except (OSError, ValueError):
        return False


def _flush(*streams: io.IOBase | IO[str]) -> None:
    for stream in streams:
        with suppress(OSError, ValueError):
            stream.flush()


@contextmanager
def engine_output(run_path: str | os.PathLike[str], what: str) -> Iterator[Path | None]:
    """Send descriptors 1 and 2 (this process and its children) to the run's log while the block
    runs; nothing is redirected when :func:`verbose` or already inside one.

    Args:
        run_path: the run folder (the log is ``logs/lceval.log`` in it).
        what: the log section's header words (``infer``, ``notebook 02_inference``).

    Yields:
        The log's path, or None when nothing is redirected.

    Raises:
        LcevalError: the block raised (one line naming the log, which holds the traceback;
            ``KeyboardInterrupt`` passes), or the log cannot be written.
    """
    global _terminal, _sink
    if verbose() or _terminal is not None:
        yield None
        return
    path = Path(run_path) / "logs" / "lceval.log"
    stamp = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    command = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "?"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sink = open(path, "a", encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
        sink.write(f"\n=== {stamp} {what}: {command}\n")  # line-buffered: a full disk fails here
    except OSError as exc:
        raise LcevalError(f"cannot write the log {path}: {exc.strerror or exc}") from None
    _flush(sys.stdout, sys.stderr)
    saved = (os.dup(1), os.dup(2))
    err = sys.stdout if in_kernel() else sys.stderr
    term: TextIO = (
        open(saved[1], "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        if _on_fd2(err)
        else err
    )
    os.dup2(sink.fileno(), 1)
    os.dup2(sink.fileno(), 2)
    _terminal, _sink = term, sink
    streams = (sys.stdout, sys.stderr)
    sys.stdout, sys.stderr = _Switch(sys.stdout), _Switch(sys.stderr)
    shown = warnings.showwarning
    warnings.showwarning = _own_warnings_to_terminal(shown)
    interrupted: list[int] = []
    handler = _record_interrupts(interrupted)
    try:
        yield path
    except (KeyboardInterrupt, LcevalError) as exc:
        if isinstance(exc, LcevalError) and str(path) not in str(exc):
            raise LcevalError(f"{exc} (engine log: {path})") from None
        raise
    except Exception as exc:  # an engine's own error: its traceback to the log, one line here
        sink.write(traceback.format_exc())
        if interrupted:  # Ctrl-C reached the engine's processes first (EngineDeadError)
            raise KeyboardInterrupt from None
        msg = one_line(exc)
        raise LcevalError(
            f"{what} failed: {type(exc).__name__}: {msg} (traceback in {path})"
        ) from None
    finally:
        _flush(sys.stdout, sys.stderr, *streams)  # the log's and the originals' buffers
        sys.stdout, sys.stderr = streams
        warnings.showwarning = shown
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        _terminal, _sink = None, None
        if term is not err:
            term.close()
        for fd in saved:
            os.close(fd)
        sink.close()


def quiet_tqdm_auto() -> None:
    """Import ``tqdm.autonotebook`` with its ``IProgress not found`` warning silenced (engines
    import ``tqdm.auto`` in kernels without ipywidgets)."""
    if not in_kernel() or "tqdm.autonotebook" in sys.modules:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        import tqdm.autonotebook  # noqa: F401  # in a kernel: tqdm.notebook, IPython


quiet_tqdm_auto()


def log(message: str) -> None:
    """One ``lceval: ...`` line on :func:`terminal`."""
    print(f"lceval: {redact(message)}", file=terminal(), flush=True)


@contextmanager
def waiting(what: str, every_s: float = 30.0) -> Iterator[None]:
    """Lines on :func:`terminal` while a slow step with nothing else to show runs (an engine's
    cold start took 145 s on a loaded CPU, issue 49): ``what...`` at once, ``still what (30s)``
    every ``every_s`` seconds, and ``what: done in 41s`` at the end (not after an error)."""
    log(f"{what} ...")
    t0 = time.perf_counter()
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every_s):
            log(f"still {what} ({round(time.perf_counter() - t0)}s)")

    thread = threading.Thread(target=beat, name="lceval-waiting", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
    log(f"{what}: done in {round(time.perf_counter() - t0)}s")
