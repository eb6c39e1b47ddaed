"""lceval's error type: a one-line message naming the field, file or value that is wrong."""

import base64
import difflib
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit


class LcevalError(Exception):
    """A user-facing error: bad input, a missing file, an unknown name.

    The CLI prints ``lceval: <message>`` and exits with status 2; notebooks show the one line.
    """


def one_line(error: BaseException | str, limit: int = 200) -> str:
    """``error``'s text on one line: secrets redacted (:func:`redact`, on the whole text first),
    whitespace runs (newlines of a traceback-like message included) collapsed to single spaces,
    cut to ``limit`` characters; the one form in which lceval quotes another library's exception
    in its own one-line errors and explanations."""
    return " ".join(redact(str(error)).split())[:limit]


REDACTED = "[redacted]"
"""What a secret is replaced by wherever lceval writes or prints text."""
MIN_SECRET = 4
"""Shorter strings are not registered as secrets (redacting them would garble ordinary text)."""
_SECRETS: set[str] = set()
_LOCK = threading.Lock()
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+")
_KEYLIKE = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")


def add_secret(*secrets: str | None) -> None:
    """Register ``secrets`` (an API key, a password) for :func:`redact` in this process, with the
    forms a server may echo them in (URL-quoted and -unquoted); shorter than ``MIN_SECRET``
    characters, or None: ignored."""
    with _LOCK:
        for s in secrets:
            for form in {s or "", quote(s or "", safe=""), unquote(s or "")}:
                if len(form) >= MIN_SECRET:
                    _SECRETS.add(form)


def redact(text: str, *, patterns: bool = False) -> str:
    """``text`` with every registered secret (:func:`add_secret`) replaced by ``[redacted]``;
    with ``patterns``, also ``Bearer <token>`` and ``sk-...`` keys (for error messages: in an
    answer, "bearer of" is text). Applied to a whole text before any cut, wherever text leaves
    the engine layer (errors, answers, logs, run files, the terminal): servers may echo the
    request's headers, URL or key in an error body or an answer."""
    if not isinstance(text, str):
        return text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    if patterns:
        text = _KEYLIKE.sub(REDACTED, _BEARER.sub(r"\1" + REDACTED, text))
    return text


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part, its credentials registered as secrets (the
    form in which a ``base_url`` is recorded, logged and shown); other strings as given."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    add_secret(password, userinfo)
    if user and password:
        add_secret(base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode())
    return urlunsplit(parts._replace(netloc=host))


def did_you_mean(word: Any, choices: Iterable[Any], n: int = 3) -> str:
    """``"did you mean a, b?"`` naming the closest of ``choices`` to ``word``, or ``""``: the one
    did-you-mean of lceval's messages (difflib's close matches)."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=n)
    return f"did you mean {', '.join(close)}?" if close else ""
