"""The resume store: ``responses.jsonl``, appended and fsynced batch by batch (a killed run loses
at most the batch in flight), keyed by :data:`Key`: a rerun skips answered keys, the first
successful line of a key is the one scored, an ``error`` response does not count as answered and
one without a sample hash answers the current sample. A torn last line is moved to
``responses.jsonl.torn`` before the next append."""

from __future__ import annotations

import codecs
import fcntl
import mmap
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from lceval.core.console import log
from lceval.core.errors import LcevalError
from lceval.core.io import atomic_open, dumps, parse_line, read_lines
from lceval.core.records import Response, from_dict

Key = tuple[str, str, str, str | None]
"""(sample_id, model, config_hash, sample_hash): one stored answer per key."""


def _parse(raw: bytes) -> tuple[Response | None, str]:
    """(Response, "") for a valid line, (None, "") for a blank one, (None, problem) otherwise."""
    if not raw.strip():
        return None, ""
    try:
        data = parse_line(raw)
    except ValueError as exc:
        return None, str(exc)
    try:
        return from_dict(Response, data), ""
    except ValueError as exc:
        return None, f"is not a valid response ({exc})"


def _current(sample_id: str, stamp: str | None, hashes: Mapping[str, str] | None) -> bool:
    """Whether an answer stamped ``stamp`` answers the current version of its sample."""
    return hashes is None or (sample_id in hashes and stamp in (None, hashes[sample_id]))


def key_of(r: Response) -> Key:
    """The resume key of ``r``: (sample_id, model, config_hash, sample_hash)."""
    return (r.sample_id, r.model, r.config_hash, r.sample_hash)


class ResponseStore:
    """Append-only JSONL store of Responses with crash-safe resume.

    Args:
        path: the run's ``responses.jsonl``.
        index: read the file now (False only to repair a file that does not parse).

    Raises:
        LcevalError: the file exists but a complete line in it is not a valid Response.
    """

    def __init__(self, path: str | os.PathLike[str], *, index: bool = True) -> None:
        self.path = Path(path)
        self.torn_bytes = 0
        """Bytes of a torn last line cut off before the last append."""
        self.tail_bytes = 0
        """Bytes of an unterminated last line that is not a whole response, at the last read."""
        self._keys: dict[Key, bool] = {}
        """key -> True once a successful (non-error) response is stored."""
        self.conflicts: dict[Key, int] = {}
        """key -> later successful lines whose text differs from the first (the one scored)."""
        if index:
            self._index()

    def _index(self) -> None:
        self._keys.clear()
        self.conflicts.clear()
        if not self.path.exists():
            return
        first: dict[Key, int] = {}  # the hash of the first successful text of each key
        for _, r in self._lines():
            k = key_of(r)
            self._keys[k] = self._keys.get(k, False) or r.finish_reason != "error"
            if r.finish_reason != "error" and first.setdefault(k, hash(r.text)) != hash(r.text):
                self.conflicts[k] = self.conflicts.get(k, 0) + 1

    def _cut_torn_tail(self) -> None:
        """Before appending, end the file with a newline: an unterminated last line that is a whole
        Response gets one; anything else is a torn append, moved to ``<file>.torn`` and cut. Writers
        only (a reader must never cut a line being written)."""
        if not self.path.exists():
            return
        try:
            with self.path.open("r+b") as f:
                size = f.seek(0, os.SEEK_END)
                if size == 0:
                    return
                f.seek(size - 1)
                if f.read(1) == b"\n":
                    return
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    end = mm.rfind(b"\n") + 1
                f.seek(end)
                tail = f.read()
                if _parse(tail.removeprefix(codecs.BOM_UTF8) if end == 0 else tail)[0] is not None:
                    f.seek(size)
                    f.write(b"\n")
                else:
                    aside = self.path.with_name(self.path.name + ".torn")
                    with aside.open("ab") as g:
                        g.write(tail + b"\n")
                        g.flush()
                        os.fsync(g.fileno())
                    self.torn_bytes = size - end
                    f.truncate(end)
                    log(
                        f"{self.path.name}: its last {self.torn_bytes:,} bytes were not a whole "
                        f"response (a write killed midway, or no line ends); moved to {aside.name}"
                    )
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise LcevalError(f"cannot write {self.path}: {exc.strerror}") from None

    def _lines(self) -> Iterator[tuple[int, Response]]:
        """(line number, Response) over the complete lines; LcevalError naming a bad line."""
        for lineno, raw in self._raw_lines():
            r, problem = _parse(raw)
            if problem:
                raise LcevalError(
                    f"{self.path}: line {lineno} {problem}; `lceval repair RUN` moves bad lines "
                    "to responses.jsonl.bad"
                )
            if r is not None:
                yield lineno, r

    def _raw_lines(self, *, any_tail: bool = False) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes with newline) of the complete lines, a leading BOM dropped; an
        unterminated last line only if it is a whole Response (or with ``any_tail``)."""
        self.tail_bytes = 0
        for lineno, raw in read_lines(self.path):
            if raw.endswith(b"\n"):
                yield lineno, raw
            elif any_tail or _parse(raw)[0] is not None:
                yield lineno, raw + b"\n"
            else:
                self.tail_bytes = len(raw)

    def drop_bad_lines(self) -> int:
        """Move every line that is not a valid Response to ``<file>.bad`` and rewrite the rest
        atomically (``lceval repair RUN``); returns how many moved."""
        good: list[bytes] = []
        bad: list[bytes] = []
        for _, raw in self._raw_lines(any_tail=True):  # every byte ends up in one of the two
            _, problem = _parse(raw)
            (bad if problem else good).append(raw)
        if bad:
            with self.path.with_name(self.path.name + ".bad").open("ab") as f:
                f.write(b"".join(bad))
            with atomic_open(self.path, "wb") as f:
                f.write(b"".join(good))
            self._index()
        return len(bad)

    @contextmanager
    def writer(self) -> Iterator[ResponseStore]:
        """Hold the run's writer lock while appending (one ``lceval infer`` per run at a time).

        Raises:
            LcevalError: another process holds the lock (it is answering this run now).
        """
        lock_path = self.path.with_name(self.path.name + ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
                raise LcevalError(
                    f"{self.path.parent.name}: another process (pid {holder}) is writing "
                    f"{self.path.name}; wait for it to finish, or use another run id"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            # Another writer may have appended before we got the lock: index its lines too.
            self._index()
            yield self
        finally:
            os.close(fd)  # closing releases the lock

    def __contains__(self, key: Key) -> bool:
        """True if ``key`` has a successful response."""
        return self._keys.get(key, False)

    def __len__(self) -> int:
        return len(self._keys)

    def configs(
        self, hashes: Mapping[str, str] | None = None, *, answered: bool = False
    ) -> dict[str, set[str]]:
        """Model -> the generation-config hashes it has stored answers under (only answers to the
        current samples when ``hashes``, sample id -> sample hash, is given; only successful
        answers when ``answered``: a config whose every answer failed is no config of its own)."""
        out: dict[str, set[str]] = {}
        for (s, model, config_hash, sh), ok in self._keys.items():
            if _current(s, sh, hashes) and (ok or not answered):
                out.setdefault(model, set()).add(config_hash)
        return out

    def answered(self, hashes: Mapping[str, str] | None = None) -> set[tuple[str, str]]:
        """``(sample id, model)`` pairs with a successful answer under any config."""
        return {
            (s, m) for (s, m, _, sh), ok in self._keys.items() if ok and _current(s, sh, hashes)
        }

    def done(
        self, model: str, config_hash: str, hashes: Mapping[str, str] | None = None
    ) -> set[str]:
        """Sample ids answered successfully by ``model`` under ``config_hash``; with ``hashes``
        (sample id -> current :func:`~lceval.core.records.sample_hash`) only answers stamped with
        the current version (or unstamped) count."""
        return {
            s
            for (s, m, h, sh), ok in self._keys.items()
            if ok and m == model and h == config_hash and _current(s, sh, hashes)
        }

    def append(self, responses: Iterable[Response]) -> int:
        """Append responses durably (one write of whole lines, fsynced), skipping keys already
        answered successfully; returns how many were written."""
        lines = []
        for r in responses:
            k = key_of(r)
            if self._keys.get(k, False):
                continue
            self._keys[k] = self._keys.get(k, False) or r.finish_reason != "error"
            lines.append(dumps(r) + "\n")
        if not lines:
            return 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cut_torn_tail()
        try:
            with self.path.open("ab") as f:
                f.write("".join(lines).encode("utf-8"))  # dumps() output is always encodable
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise LcevalError(f"cannot write {self.path}: {exc.strerror}") from None
        return len(lines)

    def __iter__(self) -> Iterator[Response]:
        """One response per key, in file order: the first successful one, else the last error
        (streams the file twice, so memory stays small)."""
        if not self.path.exists():
            return
        chosen: dict[Key, tuple[int, bool]] = {}
        for lineno, r in self._lines():
            k = key_of(r)
            old = chosen.get(k)
            if old is None or not old[1]:
                chosen[k] = (lineno, r.finish_reason != "error")
        keep = {lineno for lineno, _ in chosen.values()}
        for lineno, r in self._lines():
            if lineno in keep:
                yield r
