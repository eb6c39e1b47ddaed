"""What reaches the terminal: lceval's own lines and progress bars; engines' logs go to the run.

vLLM, transformers, torch and a Jupyter kernel print dozens of start-up and shutdown records
(66 lines around one progress bar for ``lceval infer RUN --limit 1`` on the CPU). While an engine
runs, :func:`engine_output` points the process's file descriptors 1 and 2 at the run's log file
``outputs/<run>/logs/lceval.log`` (appended, each section headed by the time and the command
line), so the engine's worker processes, which inherit them, write there too. lceval's own lines
(:func:`log`: backend choice, fallbacks, truncated prompts) and progress bars
(with tokens per second) go to :func:`terminal`, a stream on the terminal's saved descriptor.

``lceval -v`` or ``LCEVAL_VERBOSE=1`` (a notebook, ``lceval run``) leaves everything on the
terminal, as lm-evaluation-harness and inspect_ai keep engine logs one flag away.
"""

from __future__ import annotations

import datetime as _dt
import io
import os
import shlex
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from lceval.core.errors import LcevalError, one_line

VERBOSE_ENV = "LCEVAL_VERBOSE"
"""Environment variable: ``1`` shows engine logs on the terminal (``lceval -v`` sets it, so
notebooks run by ``lceval run`` inherit it)."""

LOG_NAME = "lceval.log"
"""The log file under a run's ``logs/`` folder."""

_terminal: TextIO | None = None
"""The terminal while an engine's output is redirected (None: ``sys.stderr``)."""


def verbose() -> bool:
    """Whether engine logs stay on the terminal (``$LCEVAL_VERBOSE`` is 1, true, yes or on)."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (an IPython shell with a ``kernel``), where
    lceval's information lines belong on stdout (stderr renders as a pink error box)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    return shell is not None and hasattr(shell, "kernel")


def terminal() -> TextIO:
    """Where lceval's own lines and progress bars go: the terminal (stderr; stdout inside a
    Jupyter kernel, so information is not shown as an error), also while :func:`engine_output`
    sends everything else to the run's log."""
    if _terminal is not None:
        return _terminal
    return sys.stdout if in_kernel() else sys.stderr


_sink: TextIO | None = None
"""The run's log while :func:`engine_output` runs (None otherwise)."""


class _Switch(io.TextIOBase):
    """Stands in for ``sys.stdout`` / ``sys.stderr`` while an engine runs: writes go to the run's
    log then, and to the stream it replaced afterwards. A logging handler the engine sets up on
    import (vLLM binds its handler to ``sys.stdout`` then) keeps this object, so the engine's
    records reach the log inside a notebook kernel too, and the terminal again later."""

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
    """Note each SIGINT in ``seen`` before the handler in place acts on it; returns that handler
    (to put back), or None where signals cannot be handled (not the main thread).

    Ctrl-C reaches vLLM's engine processes too, and the main process may learn of their death
    (``EngineDeadError``) before its own ``KeyboardInterrupt``: with a SIGINT noted, either is
    an interruption (finished answers kept, exit 130), not an engine failure."""
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
    """``warnings.showwarning`` that sends warnings raised by lceval's own code (say, an API key
    about to travel over plain http) to the terminal, and the engines' to the log."""
    package = str(Path(__file__).resolve().parents[1])

    def show(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        if file is None and str(Path(filename).resolve()).startswith(package):
            file = _terminal if _terminal is not None else sys.stderr  # a warning stays one
        shown(message, category, filename, lineno, file, line)

    return show


def log_path(run_path: str | os.PathLike[str]) -> Path:
    """``<run folder>/logs/lceval.log``."""
    return Path(run_path) / "logs" / LOG_NAME


def _on_fd2(stream: TextIO) -> bool:
    """Whether ``stream`` writes to file descriptor 2 itself (a console script's stderr; not
    a notebook kernel's or pytest's replacement)."""
    try:
        return isinstance(stream, io.TextIOWrapper) and stream.fileno() == 2
    except (OSError, ValueError):
        return False


@contextmanager
def engine_output(run_path: str | os.PathLike[str], what: str) -> Iterator[Path | None]:
    """Send everything printed to descriptors 1 and 2 (this process and the processes it
    starts) to the run's log while the block runs; lceval's lines go to :func:`terminal`.

    An exception other than ``KeyboardInterrupt`` raised in the block reaches the caller as one
    :class:`LcevalError` line naming the log file (its traceback is written to the log).
    Nothing is redirected when :func:`verbose`, or when already inside an ``engine_output``.

    Args:
        run_path: the run folder (the log is ``logs/lceval.log`` in it).
        what: a few words for the log's section header (``infer``, ``notebook 02_inference``).

    Yields:
        The log file's path, or None when nothing is redirected.

    Raises:
        LcevalError: the block raised (the message names the log file); the log cannot be
            opened (no space, read-only folder).
    """
    global _terminal, _sink
    if verbose() or _terminal is not None:
        yield None
        return
    path = log_path(run_path)
    stamp = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    command = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "?"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        logf = open(path, "ab")  # noqa: SIM115 - closed in the finally below
    except OSError as exc:
        raise LcevalError(f"cannot write the log {path}: {exc.strerror or exc}") from None
    try:
        logf.write(f"\n=== {stamp} {what}: {command}\n".encode())
        logf.flush()
    except OSError as exc:
        try:
            logf.close()
        except OSError:
            pass
        raise LcevalError(f"cannot write the log {path}: {exc.strerror or exc}") from None
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    saved = (os.dup(1), os.dup(2))
    err = sys.stdout if in_kernel() else sys.stderr
    term: TextIO = (
        open(saved[1], "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        if _on_fd2(err)
        else err
    )
    os.dup2(logf.fileno(), 1)
    os.dup2(logf.fileno(), 2)
    _terminal = term
    _sink = open(path, "a", encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
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
        logf.write(traceback.format_exc().encode(errors="replace"))
        if interrupted:  # Ctrl-C reached the engine's processes first (EngineDeadError)
            raise KeyboardInterrupt from None
        msg = one_line(exc)
        raise LcevalError(
            f"{what} failed: {type(exc).__name__}: {msg} (traceback in {path})"
        ) from None
    finally:
        for stream in (sys.stdout, sys.stderr, *streams):  # the log's and the originals' buffers
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        sys.stdout, sys.stderr = streams
        warnings.showwarning = shown
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        _sink.close()
        _sink = None
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        _terminal = None
        if term is not err:
            term.close()
        for fd in saved:
            os.close(fd)
        logf.close()


def quiet_tqdm_auto() -> None:
    """Take tqdm's plain bar quietly in a Jupyter kernel without ipywidgets.

    vLLM, transformers and huggingface_hub import ``tqdm.auto``; in a kernel without ipywidgets
    its first import shows ``TqdmWarning: IProgress not found`` in the notebook, then falls
    back to the plain bar (which lceval's own bars use anyway). Imported once here with that
    warning silenced, the fallback is cached and the later imports are quiet. Called when
    :mod:`lceval.core.console` is imported in a kernel; outside one it does nothing.
    """
    if not in_kernel() or "tqdm.autonotebook" in sys.modules:
        return
    try:
        from tqdm import TqdmWarning
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        import tqdm.autonotebook  # noqa: F401


quiet_tqdm_auto()


def log(message: str) -> None:
    """One ``lceval: ...`` line on stderr (backend choice, fallbacks), on the terminal also while
    an engine's logs go to the run's log file (:func:`terminal`)."""
    print(f"lceval: {message}", file=terminal(), flush=True)
