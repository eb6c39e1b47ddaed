"""The ``lceval`` command: one verb per module, each ``handle(config, outputs) -> status``
(:data:`HANDLERS`) with its flags generated from its declared config
(:data:`lceval.run.config.VERBS`); docs/quickstart.md, "Step by step", shows them in use. Bad
input prints one line ``lceval: <what is wrong>`` and exits 2; Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Any, NoReturn

from lceval.cli.common import Handler
from lceval.core import interrupt
from lceval.core.console import VERBOSE_ENV
from lceval.core.errors import LcevalError, did_you_mean, one_line, redact
from lceval.run.config import VERBS, add_flags, from_args

MODULES = {"eval": "evaluation", "list": "listing", "import": "imports"}
"""Verbs whose module is not named after them (``list`` and ``import`` are Python's)."""
HANDLERS: dict[str, Handler] = {
    verb: import_module(f"lceval.cli.{MODULES.get(verb, verb)}").handle for verb in VERBS
}
"""Verb -> its module's ``handle``, in ``lceval --help``'s order (:data:`VERBS`')."""


def verb_help(verb: str) -> str:
    """A verb's line in ``lceval --help``: its config's docstring, first paragraph."""
    return " ".join(inspect.cleandoc(VERBS[verb].__doc__ or "").split("\n\n")[0].split())


class _Parser(argparse.ArgumentParser):
    """argparse's parser with its errors in one line, exit status 2 (argparse printed the usage,
    up to ten lines, above the error): ``lceval eval: the following arguments are required:
    benchmark (lceval eval -h lists the flags)``; it keeps the arguments ``add_argument``
    returned (``arguments``, its parents' too; their option strings: ``flags``) and its verbs'
    parsers (``verbs``), which argparse's public API does not list."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.arguments: list[argparse.Action] = []
        self.verbs: dict[str, _Parser] = {}
        super().__init__(*args, **kwargs)  # adds -h/--help through add_argument
        for parent in kwargs.get("parents", ()):
            self.arguments += getattr(parent, "arguments", [])

    @property
    def flags(self) -> list[str]:
        """Every option string the parser takes (``-h``, ``--outputs``, the verb's own)."""
        return [flag for action in self.arguments for flag in action.option_strings]

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} ({self.prog} -h lists the flags)\n")


def _unknown_flags(parser: _Parser, extra: Sequence[str]) -> NoReturn:
    """Exit 2 with one line naming the arguments ``parser`` (the verb's) does not take, with the
    closest flag for the first one that looks like a flag."""
    flags = parser.flags
    first = next((x.partition("=")[0] for x in extra if x.startswith("-")), "")
    hint = did_you_mean(first, flags) if first else ""
    said = " ".join(extra)
    said = f"{said[:80]}..." if len(said) > 80 else said
    parser.error(f"unrecognized arguments: {said}" + (f"; {hint}" if hint else ""))


def _parser() -> _Parser:
    """``--outputs`` and ``-v`` before or after the verb, one subparser per verb."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--outputs",
        default=argparse.SUPPRESS,
        help="folder of run folders (default: $LCEVAL_OUTPUTS, else ./outputs); before or after "
        "the command",
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show engine logs (vLLM, transformers, torch, Jupyter) on the terminal; by default "
        "they go to outputs/RUN/logs/lceval.log (LCEVAL_VERBOSE=1 does the same)",
    )
    p = _Parser(
        prog="lceval",
        description="Evaluate instruction following over long contexts and long outputs.",
        parents=[common],
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in HANDLERS:
        p.verbs[name] = sub.add_parser(name, help=verb_help(name), parents=[common])
        add_flags(p.verbs[name], VERBS[name])
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lceval`` console script; returns the exit status."""
    interrupt.release()  # Ctrl-C from here: KeyboardInterrupt, said below (exit 130)
    try:
        parser = _parser()
        args, extra = parser.parse_known_args(argv)
    except KeyboardInterrupt:
        print("lceval: interrupted", file=sys.stderr)
        return 130
    if extra:  # said by the verb's parser, with its closest flag
        _unknown_flags(parser.verbs[args.command], extra)
    if getattr(args, "verbose", False):
        os.environ[VERBOSE_ENV] = "1"  # notebooks run by `lceval run` inherit it
    try:
        config = from_args(VERBS[args.command], args)
        return HANDLERS[args.command](config, getattr(args, "outputs", None))
    except LcevalError as exc:
        print(f"lceval: {_bounded(redact(str(exc), patterns=True))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write no lceval writer wraps: full disk, quota, read-only folder
        reason = exc.strerror or one_line(exc) or type(exc).__name__  # No space left on device
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"lceval: {where}{reason}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lceval: interrupted (finished answers are saved; rerun to resume)", file=sys.stderr)
        return 130


MAX_ERROR_CHARS = 2000
"""The most characters of an error message printed (the rest is counted, not shown)."""


def _bounded(message: str) -> str:
    if len(message) <= MAX_ERROR_CHARS:
        return message
    return f"{message[:MAX_ERROR_CHARS]}... ({len(message) - MAX_ERROR_CHARS} more characters)"
