"""Issue 50 items 5-10: hostile files and values a careless user or an attacker hands lceval,
each answered with one ``lceval: ...`` line, exit 2, every run file byte-identical; a SIGKILLed
writer is not "running"; Ctrl-C at any moment of the command's start is one line, exit 130.

The runs are test_attacks.py's (L-Eval prediction files imported and scored, offline)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from lceval.cli import main
from tests.test_attacks import _files, _params, built, root  # noqa: F401 - the runs' fixtures

REPO = Path(__file__).resolve().parents[1]

FLOW_BOMB = (
    "[&a [1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], "
    + ", ".join(
        f"&{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("bcdefg", "cdefgh", strict=True)
    )
    + "]"
)
"""A YAML anchor bomb of 8 levels on one line (a -p value): 9**8 numbers once expanded; on
2b3ef5e its error message was 157,389,568 characters, built in ~15 s, as the issue measured."""
BOMB = f"n_prompts: {FLOW_BOMB}\n".encode()
"""The bomb as a params file."""


def _edit(rel: str, change: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(r: Path) -> None:
        change(r / "two" / rel)

    return apply


def _duplicate_first_sample(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], *lines]))


def _zero_rows(path: Path) -> None:
    pd.read_parquet(path).iloc[:0].to_parquet(path, index=False)


def _escape_run_id(path: Path) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), "run_id": "../../escape"}))


def _deep_results(tmp: Path) -> str:
    path = tmp / "deep" / "results.json"
    path.parent.mkdir()
    path.write_text('{"a":' * 5000 + "1" + "}" * 5000)
    return str(path)


BUILD = ["build", "manyifeval", "--run-id", "new", "--params"]
CASES: list[tuple[str, Callable[[Path, Path], list[str]], str]] = [
    (
        f"item 5: a {len(BOMB)}-byte YAML anchor bomb as the params file",
        lambda r, tmp: [*BUILD, _params(tmp, BOMB)],
        "params file {tmp}/params.yaml: it expands past 1,000,000 values (aliases)",
    ),
    (
        "item 5: the bomb as a -p value",
        lambda r, tmp: [
            "build",
            "manyifeval",
            "--run-id",
            "new",
            "-p",
            f"n_prompts={FLOW_BOMB}",
        ],
        "--param n_prompts: it expands past 1,000,000 values (aliases)",
    ),
    (
        "item 9: an empty params file",
        lambda r, tmp: [*BUILD, _params(tmp, b"")],
        "params file {tmp}/params.yaml is empty (or null)",
    ),
    (
        "item 9: a params file holding null",
        lambda r, tmp: [*BUILD, _params(tmp, b"# nothing set\nnull\n")],
        "params file {tmp}/params.yaml is empty (or null)",
    ),
    (
        "item 9: a params file with a duplicate key",
        lambda r, tmp: [*BUILD, _params(tmp, b"n_prompts: 2\nseed: 1\nn_prompts: 3\n")],
        "params file {tmp}/params.yaml: duplicate key 'n_prompts' (line 3)",
    ),
    (
        "item 6: compare of a results.json nested 5000 deep",
        lambda r, tmp: ["compare", _deep_results(tmp), "two", "--leaderboard"],
        "results.json is not a results document: nested too deeply",
    ),
    (
        "item 8: score of a samples.jsonl holding one id twice",
        lambda r, tmp: [_edit("samples.jsonl", _duplicate_first_sample)(r), "score", "two"][1:],
        "samples.jsonl holds sample id 'leval/",
    ),
    (
        "item 10: report of a zero-row scores.parquet",
        lambda r, tmp: [_edit("scores.parquet", _zero_rows)(r), "report", "two"][1:],
        "scores.parquet holds no scores (0 rows); score the run again (lceval score two)",
    ),
    (
        "item 10: a run.json whose run_id is not its folder's",
        lambda r, tmp: [_edit("run.json", _escape_run_id)(r), "report", "two"][1:],
        "run.json records run_id '../../escape', not its folder's name 'two'",
    ),
    (
        "item 10: a base_url that is not an http(s) URL",
        lambda r, tmp: [
            *("infer", "two", "--backend", "openai", "--model", "m", "-o", "base_url=ftp://h/v1")
        ],
        "model m: base_url must be an http(s) URL, got 'ftp://h/v1'",
    ),
    (
        "item 10: a base_url without a scheme",
        lambda r, tmp: [
            *("infer", "two", "--backend", "openai", "--model", "m"),
            *("-o", "base_url=localhost:8000/v1"),
        ],
        "model m: base_url must be an http(s) URL, got 'localhost:8000/v1'",
    ),
]


@pytest.mark.parametrize(("name", "argv", "message"), CASES, ids=[c[0] for c in CASES])
def test_hostile_file_is_one_line_and_changes_nothing(root, tmp_path, capsys, name, argv, message):  # noqa: F811
    args = argv(root, tmp_path)
    before = _files(root)
    capsys.readouterr()
    code = main(["--outputs", str(root), *args])
    out, err = capsys.readouterr()
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith("lceval: ") and message.format(tmp=tmp_path) in last, err[-2000:]
    assert len(last) < 600
    assert _files(root) == before
    assert not (root / "new").exists()


def test_yaml_limits_keep_merge_keys_and_repeated_values() -> None:
    from lceval.core.io import load_yaml

    doc = "base: &b {lengths: [1, 2], seed: 1}\nrun:\n  <<: *b\n  seed: 2\nlist: [1, 1]\n"
    assert load_yaml(doc) == {
        "base": {"lengths": [1, 2], "seed": 1},
        "run": {"lengths": [1, 2], "seed": 2},
        "list": [1, 1],
    }


def test_status_checks_the_recorded_writer_pid(root, capsys) -> None:  # noqa: F811
    """Item 7: a record saying "running" whose writer was SIGKILLed is not running."""
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        logs = root / "two" / "logs"
        logs.mkdir(exist_ok=True)
        rec = {"t": time.time(), "pid": writer.pid, "model": "m", "answered": 3, "total": 8}
        (logs / "progress.jsonl").write_text(json.dumps({**rec, "state": "running"}) + "\n")
        capsys.readouterr()
        assert main(["--outputs", str(root), "status", "two"]) == 0
        assert "[running]" in capsys.readouterr().out
    finally:
        writer.kill()
        writer.wait()
    assert main(["--outputs", str(root), "status", "two"]) == 0
    out = capsys.readouterr().out
    assert "[running]" not in out and f"not running: writer pid {writer.pid} is gone" in out, out


CONSOLE_SCRIPT = """
import sys
sys.argv[0] = "lceval"  # what the console script's argv[0] ends with
print("started", flush=True)
from lceval.cli import main
sys.exit(main())
"""
"""The ``lceval`` console script pip writes, saying when its Python has started."""


def test_ctrl_c_at_any_moment_of_the_start_is_one_line_and_130() -> None:
    """Item 10: SIGINT 0.05 to 1.55 s after the script's Python has started (the imports take
    ~1 s; then the command runs): one line, exit 130, never a traceback. (Before 0.05 s the
    signal can land in this script's own lines, between its print and its import.)"""
    for i in range(16):
        proc = subprocess.Popen(
            [sys.executable, "-c", CONSOLE_SCRIPT, "list"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline() == "started\n"
        time.sleep(0.05 + 0.1 * i)
        if proc.poll() is not None:  # finished already (a fast machine)
            break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        if "every option of a backend" in out:  # `list` had printed all: its exit was interrupted
            break
        lines = err.strip().splitlines()
        assert (proc.returncode, len(lines)) == (130, 1), f"after {0.05 + 0.1 * i:.2f} s: {err}"
        assert lines[0].startswith("lceval: interrupted")


def test_deeply_nested_json_data_files_are_one_line(tmp_path: Path) -> None:
    """Item 6: user data files read with json.loads (LongGenBench's official format, LIFBench's
    Alpaca list) nested past Python's recursion limit: LcevalError, not RecursionError."""
    from lceval.benchmarks.lifbench.inputs import list_texts
    from lceval.benchmarks.longgenbench.official import load_official
    from lceval.core.errors import LcevalError

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(LcevalError, match="nested too deeply"):
        load_official(deep)
    with pytest.raises(LcevalError, match="is corrupt"):
        list_texts(str(deep))
