"""The ``lceval`` command as a package (issue 31 item 1): one module per verb, each with one
handler ``handle(config, outputs)``, and a dispatch table beside ``main()`` and the parser; the
table, the parser's verbs and the declared configs name the same verbs; the startup stays light."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import lceval.cli
from lceval.cli import HANDLERS, _parser, main, verb_help
from lceval.run.config import VERBS

CLI = Path(lceval.cli.__file__).parent
MODULE = {"list": "listing", "import": "imports", "eval": "evaluation"}
"""Verbs whose module is not named after them (``list`` and ``import`` are Python builtins or
keywords)."""
NOT_VERBS = {"__init__", "__main__", "common", "notebooks"}
"""Modules of lceval/cli/ that hold no verb: the table and main(), ``python -m lceval.cli``, the
helpers verbs share, the papermill runner (with the own parameters of the notebooks that build
nothing)."""


def _parser_verbs() -> set[str]:
    """The verbs ``lceval -h`` offers (argparse's ``{build,compare,...}`` in the usage line)."""
    found = re.search(r"\{([\w,-]+)\}", _parser().format_usage())
    assert found, _parser().format_usage()
    return set(found.group(1).split(","))


def test_dispatch_table_parser_and_configs_name_the_same_verbs():
    assert set(HANDLERS) == _parser_verbs() == set(_parser().verbs)
    assert set(HANDLERS) == set(VERBS)
    assert all(verb_help(v) and "\n" not in verb_help(v) for v in VERBS)
    assert {"list", "build", "infer", "plan", "score", "report", "compare", "run"} <= set(HANDLERS)


@pytest.mark.parametrize("verb", sorted(HANDLERS))
def test_each_verbs_handler_lives_in_its_module_and_takes_its_config(verb):
    handler = HANDLERS[verb]
    assert handler.__module__ == f"lceval.cli.{MODULE.get(verb, verb)}"
    assert handler.__name__ == "handle"
    assert list(inspect.signature(handler).parameters) == ["cfg", "outputs"]
    hints = typing.get_type_hints(handler)
    assert hints["cfg"] is VERBS[verb]
    assert hints["return"] is int


def test_every_module_of_the_package_is_a_verb_or_a_named_helper():
    modules = {p.stem for p in CLI.glob("*.py")}
    verbs = {MODULE.get(v, v) for v in HANDLERS}
    assert modules == verbs | NOT_VERBS


def test_main_dispatches_through_the_table(monkeypatch, capsys, tmp_path):
    """main() calls the table's handler with the verb's config and ``--outputs``, and words what
    a handler raises as before: LcevalError and OSError one line and 2, Ctrl-C 130."""
    seen = []

    def record(cfg, outputs):
        seen.append((cfg, outputs))
        return 7

    monkeypatch.setitem(HANDLERS, "status", record)
    assert main(["status", "r", "--outputs", str(tmp_path)]) == 7
    assert seen == [(VERBS["status"](run_id="r"), str(tmp_path))]

    def full_disk(cfg, outputs):
        raise OSError(28, "No space left on device", str(tmp_path / "x"))

    monkeypatch.setitem(HANDLERS, "status", full_disk)
    assert main(["status", "r"]) == 2
    assert capsys.readouterr().err == f"lceval: {tmp_path / 'x'}: No space left on device\n"

    def interrupted(cfg, outputs):
        raise KeyboardInterrupt

    monkeypatch.setitem(HANDLERS, "status", interrupted)
    assert main(["status", "r"]) == 130
    err = capsys.readouterr().err
    assert err == "lceval: interrupted (finished answers are saved; rerun to resume)\n"


@pytest.mark.parametrize("module", ["lceval", "lceval.cli"])
def test_python_dash_m_runs_the_command(module):
    out = subprocess.run(
        [sys.executable, "-m", module, "status", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: lceval status")


HEAVY = ("pandas", "torch", "transformers", "vllm", "lceval.models.hf")


def _imported(argv: list[str], tmp_path: Path) -> tuple[int, list[str]]:
    """(exit status, heavy modules imported) of ``main(argv)`` in a fresh interpreter."""
    code = (
        "import io, json, sys\n"
        "from lceval.cli import main\n"
        "out, sys.stdout, sys.stderr = sys.stdout, io.StringIO(), io.StringIO()\n"
        f"code = main({argv!r})\n"
        f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]), file=out)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    status, mods = json.loads(out.stdout)
    return status, mods


def test_list_imports_no_pandas_and_no_engine(tmp_path):
    assert _imported(["list"], tmp_path) == (0, [])


def test_status_imports_no_pandas(tmp_path):
    """``lceval status`` from a second terminal reads one JSON-lines file: no pandas, no engine."""
    assert _imported(["--outputs", str(tmp_path), "status", "x"], tmp_path) == (2, [])


@pytest.mark.parametrize(
    "argv",
    [
        ["build", "lifbench", "--run-id", "x", "-p", "bogus=1"],
        [
            "run",
            str(Path(__file__).parents[2] / "params/pipelines/lifbench_smoke.yaml"),
            "-p",
            "x=1",
        ],
    ],
)
def test_a_refused_param_key_starts_no_engine(tmp_path, argv):
    status, mods = _imported(["--outputs", str(tmp_path / "out"), *argv], tmp_path)
    assert status == 2
    assert mods == []  # no engine, and no pandas either
    assert not (tmp_path / "out").exists()  # refused before a run folder was made
