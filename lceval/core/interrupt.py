"""Ctrl-C while the ``lceval`` command starts: one line, exit 130.

Importing lceval takes about a second (pandas, pydantic, the registry); a SIGINT then would print
an import's traceback. Imported first by ``lceval/__init__.py``, this module installs
:func:`at_start` as the SIGINT handler when the process is the ``lceval`` command (the console
script, whose ``argv[0]`` ends in ``lceval``, or ``python -m lceval``, whose ``argv[0]`` is
``"-m"`` while the package is imported); :func:`lceval.cli.main` hands Ctrl-C back to Python
(:func:`release`) before it does anything, so its own handlers say what was saved. A program or
kernel importing lceval keeps its handler. Only modules that come with Python's start are
imported here.
"""

import os
import signal
import sys

LINE = "lceval: interrupted"


def at_start(signum: int, frame: object) -> None:
    """The SIGINT handler while the command starts: nothing is open yet, so exit at once."""
    try:
        print(LINE, file=sys.stderr, flush=True)
    finally:
        os._exit(130)


def release() -> None:
    """Give Ctrl-C back to Python (KeyboardInterrupt) if :func:`at_start` holds it."""
    try:
        if signal.getsignal(signal.SIGINT) is at_start:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: nothing was installed from it
        pass


def _is_command() -> bool:
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return os.path.splitext(name)[0] in ("lceval", "-m")


if _is_command():
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, at_start)
    except ValueError:  # imported outside the main thread
        pass
