"""Issue 25, fail clean: a full disk (or quota, or a read-only folder) ends build, score and report
in one ``lceval:`` line with exit status 2, leaves no temporary file and no half-written report,
and the same command succeeds once space is freed.

Every test runs with writes patched to fail with ENOSPC; the same checks run on a real 4 MB
tmpfs filled to its last pages where this process may mount one (root), and are skipped
otherwise."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from lceval.cli import main
from lceval.core import io as lio
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, atomic_open, dumps
from lceval.core.records import Response

NO_SPACE = os.strerror(errno.ENOSPC)


class _FullDiskFile:
    """A file on a full disk: writes are buffered, flushing raises ENOSPC and so does closing,
    after closing the descriptor (as CPython's buffered files do when their last flush fails)."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        return len(data)

    def flush(self):
        raise OSError(errno.ENOSPC, NO_SPACE)

    def close(self):
        self._f.close()
        raise OSError(errno.ENOSPC, NO_SPACE)

    def __getattr__(self, name):
        return getattr(self._f, name)


@pytest.fixture
def full_disk(monkeypatch):
    """Make every ``atomic_open`` write land on a full disk (lceval.core.io's ``os.fdopen``
    only)."""
    fake = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    fake.fdopen = lambda *a, **k: _FullDiskFile(os.fdopen(*a, **k))

    def fill():
        monkeypatch.setattr(lio, "os", fake)

    def free():
        monkeypatch.setattr(lio, "os", os)

    return types.SimpleNamespace(fill=fill, free=free)


def _litter(folder: Path) -> list[str]:
    return sorted(
        p.name for p in folder.rglob("*") if p.name.endswith(".tmp") or ".report." in p.name
    )


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_atomic_open_cleans_up_when_close_fails(tmp_path, full_disk):
    full_disk.fill()
    with pytest.raises(LcevalError, match=f"cannot write {tmp_path / 'a.txt'}: {NO_SPACE}"):
        with atomic_open(tmp_path / "a.txt") as f:
            f.write("x" * 100)
    assert list(tmp_path.iterdir()) == []
    full_disk.free()
    with atomic_open(tmp_path / "a.txt") as f:
        f.write("ok")
    assert (tmp_path / "a.txt").read_text() == "ok" and _litter(tmp_path) == []


def test_atomic_open_keeps_other_errors(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with atomic_open(tmp_path / "a.txt") as f:
            f.write("x")
            1 / 0  # noqa: B018
    assert list(tmp_path.iterdir()) == []


def _one_line(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.startswith("lceval: ")]
    return code, out, lines, err


def _echo_report(run, scores, samples):
    from lceval.report.reporting import save_table

    table = scores.groupby("task")["value"].mean().to_frame()
    save_table(table, run.report, "echo_mean")
    return {"mean": table}


@pytest.fixture
def echo_run(tmp_path, echo_bench, monkeypatch):
    """A built, answered echo run whose report writes a table and index.html."""
    monkeypatch.setattr(
        sys.modules["lceval_test_echo"],
        "BENCHMARK",
        dataclasses.replace(echo_bench.BENCH, report=_echo_report),
    )
    root = tmp_path / "out"
    assert main(["--outputs", str(root), "build", "echo", "--run-id", "r", "-p", "n=4"]) == 0
    run = RunDir("r", root)
    lines = [
        dumps(Response(sample_id=f"e{i}", model="m", text=f"a{i}", config_hash="h"))
        for i in range(4)
    ]
    run.responses.write_text("\n".join(lines) + "\n")
    return run


def test_build_score_report_on_a_full_disk(capsys, echo_run, full_disk):
    run = echo_run
    root = str(run.path.parent)
    assert main(["--outputs", root, "score", "r"]) == 0
    assert main(["--outputs", root, "report", "r"]) == 0
    capsys.readouterr()
    good = _tree(run.report)
    assert "index.html" in good and "echo_mean.csv" in good
    commands = {
        "build": ["build", "echo", "--run-id", "r", "-p", "n=4"],
        "score": ["score", "r"],
        "report": ["report", "r"],
    }
    full_disk.fill()
    for name, argv in commands.items():
        code, out, lines, err = _one_line(capsys, ["--outputs", root, *argv])
        assert code == 2, (name, err)
        assert out == "", name
        assert len(lines) == 1 and NO_SPACE in lines[0], (name, err)
        assert "Traceback" not in err
        assert _litter(run.path) == [], name
    assert _tree(run.report) == good  # the last good report, whole
    full_disk.free()
    for argv in commands.values():
        assert main(["--outputs", root, *argv]) == 0
    assert _litter(run.path) == []


def test_failed_report_never_replaces_the_last_good_one(capsys, echo_run, monkeypatch):
    """A report that fails midway (any error) leaves report/ as it was; one that succeeds
    replaces it whole and keeps files other stages wrote there."""
    from lceval.report import index_page

    root = str(echo_run.path.parent)
    assert main(["--outputs", root, "score", "r"]) == 0
    assert main(["--outputs", root, "report", "r"]) == 0
    (echo_run.report / "contamination.csv").write_text("a\n1\n")  # another stage's table
    good = _tree(echo_run.report)

    def broken(run):
        raise LcevalError("index failed")

    with monkeypatch.context() as m:
        m.setattr(index_page, "write_index", broken)
        capsys.readouterr()
        assert main(["--outputs", root, "report", "r"]) == 2
    assert _tree(echo_run.report) == good and _litter(echo_run.path) == []
    (echo_run.report / "index.html").unlink()
    assert main(["--outputs", root, "report", "r"]) == 0
    after = _tree(echo_run.report)
    assert "index.html" in after and after["contamination.csv"] == good["contamination.csv"]


def test_other_writers_turn_os_errors_into_one_line(capsys, tmp_path):
    """An OSError no writer wraps (repair's .bad file here, which cannot be opened) is still one
    line and exit 2."""
    run = RunDir("r", tmp_path).create()
    run.responses.write_bytes(b"{bad\n")
    bad = tmp_path / "r" / "responses.jsonl.bad"
    bad.mkdir()  # opening it for appending fails with EISDIR
    code, out, lines, err = _one_line(capsys, ["--outputs", str(tmp_path), "repair", "r"])
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert lines == [f"lceval: {bad}: {os.strerror(errno.EISDIR)}"]


def _can_mount(where: Path) -> bool:
    if os.geteuid() != 0:
        return False
    where.mkdir(parents=True, exist_ok=True)
    cmd = ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)]
    return subprocess.run(cmd, capture_output=True).returncode == 0


def test_real_full_tmpfs(capsys, tmp_path, echo_bench, monkeypatch):
    """The same on a real 4 MB tmpfs filled to its last pages (needs root; skipped otherwise)."""
    mnt = tmp_path / "tmpfs"
    if not _can_mount(mnt):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        monkeypatch.setattr(
            sys.modules["lceval_test_echo"],
            "BENCHMARK",
            dataclasses.replace(echo_bench.BENCH, report=_echo_report),
        )
        root = str(mnt)
        assert main(["--outputs", root, "build", "echo", "--run-id", "r", "-p", "n=40"]) == 0
        run = RunDir("r", mnt)
        rows = [
            dumps(Response(sample_id=f"e{i}", model="m", text="x", config_hash="h"))
            for i in range(40)
        ]
        run.responses.write_text("\n".join(rows) + "\n")
        assert main(["--outputs", root, "score", "r"]) == 0
        assert main(["--outputs", root, "report", "r"]) == 0
        capsys.readouterr()
        good = _tree(run.report)
        filler = mnt / "filler"
        commands = [
            ["build", "echo", "--run-id", "r", "-p", "n=40", "-p", "seed=0"],
            ["score", "r"],
            ["report", "r"],
        ]
        for argv in commands:
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            try:  # fill to the last page
                while True:
                    os.write(fd, b"\0" * 4096)
            except OSError:
                pass
            finally:
                os.close(fd)
            code, out, lines, err = _one_line(capsys, ["--outputs", root, *argv])
            assert code == 2 and out == "" and len(lines) == 1, (argv, err)
            assert "No space left" in lines[0] and "Traceback" not in err
            assert _litter(mnt) == []
            assert _tree(run.report) == good
            filler.unlink()
            assert main(["--outputs", root, *argv]) == 0
            capsys.readouterr()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
