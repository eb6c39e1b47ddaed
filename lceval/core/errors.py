"""lceval's error type: a one-line message naming the field, file or value that is wrong."""

import difflib
from collections.abc import Iterable
from typing import Any


class LcevalError(Exception):
    """A user-facing error: bad input, a missing file, an unknown name.

    The CLI prints ``lceval: <message>`` and exits with status 2; notebooks show the one line.
    """


def one_line(error: BaseException | str, limit: int = 200) -> str:
    """``error``'s text on one line: whitespace runs (newlines of a traceback-like message
    included) collapsed to single spaces, cut to ``limit`` characters; the one form in which
    lceval quotes another library's exception in its own one-line errors and explanations."""
    return " ".join(str(error).split())[:limit]


def did_you_mean(word: Any, choices: Iterable[Any], n: int = 3) -> str:
    """``"did you mean a, b?"`` naming the closest of ``choices`` to ``word``, or ``""``: the one
    did-you-mean of lceval's messages (difflib's close matches)."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=n)
    return f"did you mean {', '.join(close)}?" if close else ""
