"""Issue 25, quiet by default: engine logs go to ``outputs/RUN/logs/lceval.log``; the terminal
keeps lceval's own lines and progress bars; ``-v`` / ``LCEVAL_VERBOSE=1`` shows everything.

Descriptor redirection is checked in child processes, where descriptors 1 and 2 are the
terminal's (pytest's capture would otherwise stand between)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta
from lceval.core.records import Sample
from lceval.models.base import Backend

CHILD = textwrap.dedent(
    """
    import os, subprocess, sys
    from lceval.core.console import engine_output
    from lceval.core.errors import LcevalError
    from lceval.models.base import log
    run = sys.argv[1]
    print("before", flush=True)
    try:
        with engine_output(run, "test"):
            os.write(1, b"engine stdout record\\n")
            os.write(2, b"engine stderr record\\n")
            print("python print to stdout", flush=True)
            print("python print to stderr", file=sys.stderr, flush=True)
            worker = "import sys; sys.stderr.write('worker record\\\\n')"
            subprocess.run([sys.executable, "-c", worker])
            log("own line")
            if sys.argv[2] == "fail":
                raise RuntimeError("engine exploded")
    except LcevalError as exc:
        print(f"lceval: {exc}", file=sys.stderr)
    print("after", flush=True)
    """
)


def _child(tmp_path, mode="ok", **env):
    environ = {**os.environ, "LCEVAL_VERBOSE": "", **env}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), mode],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
    )


def test_engine_records_go_to_the_run_log(tmp_path):
    out = _child(tmp_path)
    assert out.stdout.splitlines() == ["before", "after"]
    assert out.stderr.splitlines() == ["lceval: own line"]
    log = (tmp_path / "logs" / "lceval.log").read_text()
    for record in (
        "engine stdout record",
        "engine stderr record",
        "python print to stdout",
        "python print to stderr",
        "worker record",  # a child process inherits the redirection
    ):
        assert record in log
    assert log.startswith("\n=== ") and " test: " in log.splitlines()[1]
    again = _child(tmp_path)  # appended, one section per command
    assert again.returncode == 0
    assert (tmp_path / "logs" / "lceval.log").read_text().count("\n=== ") == 2


def test_verbose_shows_everything(tmp_path):
    out = _child(tmp_path, LCEVAL_VERBOSE="1")
    assert "engine stderr record" in out.stderr and "worker record" in out.stderr
    assert "engine stdout record" in out.stdout
    assert not (tmp_path / "logs").exists()


def test_an_engine_error_is_one_line_naming_the_log(tmp_path):
    out = _child(tmp_path, "fail")
    log = tmp_path / "logs" / "lceval.log"
    assert out.stderr.splitlines() == [
        "lceval: own line",
        f"lceval: test failed: RuntimeError: engine exploded (traceback in {log})",
    ]
    assert "Traceback" in log.read_text() and "engine exploded" in log.read_text()


def _terminal_lines(stderr: str) -> tuple[list[str], list[str]]:
    """(lceval's own lines and progress bars, every other line) of a terminal's stderr."""
    own, other = [], []
    for line in stderr.replace("\r", "\n").splitlines():
        if not line.strip():
            continue
        is_bar = "samples answered" in line or "| 0/" in line
        (own if line.startswith("lceval: ") or is_bar else other).append(line)
    return own, other


@pytest.mark.slow
def test_a_tiny_real_infer_is_quiet(tmp_path, tiny_model_dir):
    """``lceval infer RUN --limit 1`` with a real engine (hf, tiny Llama): the terminal holds
    lceval's lines and the progress bar (at most 3 other lines); ``-v`` adds the engine's."""
    run = RunDir("r", tmp_path).create()
    run.write_meta(new_meta("r"))
    samples = [
        Sample(id=f"s{i}", benchmark="b", task="T", instruction="Say hi.", max_new_tokens=4)
        for i in range(2)
    ]
    run.write_samples(samples, [])
    env = {**os.environ, "LCEVAL_VERBOSE": "", "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, "-m", "lceval", "--outputs", str(tmp_path)]
    cmd = ["infer", "r", "--limit", "1", "--backend", "hf", "--model", str(tiny_model_dir)]
    # transformers warns on stderr when generation flags meet a greedy config: made to speak
    env["TRANSFORMERS_VERBOSITY"] = "info"
    out = subprocess.run([*argv, *cmd], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    result, nxt = out.stdout.strip().splitlines()
    assert result == "1 responses (0 errors) in run r"
    assert nxt.startswith("next: lceval ") and nxt.split("   ")[0].endswith(" score r")
    own, other = _terminal_lines(out.stderr)
    assert len(other) <= 3, other
    assert any("infer " in line and "tok/s" in line for line in own)  # bar with tokens/s
    log = (tmp_path / "r" / "logs" / "lceval.log").read_text()
    assert "infer: " in log and "--limit 1" in log
    engine_lines = [ln for ln in log.splitlines()[2:] if ln.strip()]
    assert engine_lines  # transformers' records, at info verbosity
    verbose = subprocess.run(
        [*argv, "-v", *cmd[:3], "2", *cmd[4:]], capture_output=True, text=True, env=env
    )
    assert verbose.returncode == 0, verbose.stderr
    assert len(_terminal_lines(verbose.stderr)[1]) > len(other)
    models = json.loads(run.run_json.read_text())["models"]
    assert models  # the run was recorded as before


def test_truncated_prompts_are_said_on_the_terminal(capsys):
    """Answers to right-truncated prompts change results: one lceval line says how many."""
    from lceval.core.records import Response
    from lceval.models.generate import generate

    class Cutting(Backend):
        name = "cutter"

        def generate(self, samples, contexts, config):
            return [
                Response(
                    sample_id=s.id,
                    model=self.name,
                    text="x",
                    config_hash=config.hash(),
                    truncated_tokens=1200 if s.id == "a" else 0,
                )
                for s in samples
            ]

    samples = [Sample(id=i, benchmark="b", task="T", instruction="x") for i in ("a", "b")]
    generate(Cutting(), samples, {}, progress=False)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "lceval: warning: 1 of 2 prompt(s) did not fit cutter's window: their contexts were "
        "right-truncated (up to 1,200 tokens dropped; truncated_tokens in responses.jsonl)"
    ]


def test_an_engine_dying_of_ctrl_c_is_an_interruption(tmp_path):
    """Ctrl-C reaches vLLM's processes too; when the main process hears of their death
    (EngineDeadError) before its own KeyboardInterrupt, it is still an interruption (exit 130),
    not an engine failure."""
    import signal
    import time

    from lceval.core.console import engine_output

    # Python's own Ctrl-C handler, whatever an earlier test of this process (Ray, vLLM) left
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with engine_output(tmp_path, "test"):
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(2)
                except KeyboardInterrupt:  # the engine swallowed it ...
                    pass
                raise RuntimeError("engine core died")  # ... and died of it
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)
    with pytest.raises(LcevalError, match="test failed: RuntimeError: boom"):
        with engine_output(tmp_path, "test"):  # no Ctrl-C: an engine failure
            raise RuntimeError("boom")


_KERNEL_CELL = """
import subprocess, sys
from lceval.models.specs import opened, resolve_models

spec = resolve_models({model!r}, None, "hf", {{"device": "cpu"}})[0]
with opened(spec, log_to={run!r}) as engine:
    # an engine's worker process writes to descriptor 2 directly (vLLM's EngineCore does)
    subprocess.run([sys.executable, "-c", "import os; os.write(2, b'ENGINE-WORKER-LOG')"])
    import tqdm.auto  # vLLM and transformers import it; without ipywidgets it warns
print("lceval-done", engine.name)
"""


@pytest.mark.slow
def test_a_notebook_shows_no_engine_output_nor_tqdm_warning(tmp_path, tiny_model_dir):
    """Issue 36: a notebook cell driving an engine (ManyIFEval's refinement, the contamination
    signals) shows lceval's lines only: the engine's and its workers' output go to the run's
    log, and tqdm.auto's "IProgress not found" warning is not shown (ipywidgets is absent)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    run = tmp_path / "run"
    cell = _KERNEL_CELL.format(model=str(tiny_model_dir), run=str(run))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    env_before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        x for x in (os.path.dirname(os.path.dirname(__file__)), env_before) if x
    )
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    finally:
        if env_before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = env_before
    outputs = nb.cells[0].outputs
    shown = "".join(o.get("text", "") for o in outputs)
    assert [o.get("name") for o in outputs if o.output_type == "stream"] == ["stdout"], outputs
    assert "lceval-done" in shown, shown
    assert "TqdmWarning" not in shown and "IProgress" not in shown
    assert "ENGINE-WORKER-LOG" in (run / "logs" / "lceval.log").read_text()


def test_a_slow_step_says_it_is_still_running(capsys):
    """Issue 49: an engine's cold start printed nothing for 145 s. waiting() says what starts at
    once, again every every_s seconds, and how long it took."""
    import time

    from lceval.core.console import waiting

    with waiting("starting the vllm engine for m", every_s=0.2):
        time.sleep(0.5)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "lceval: starting the vllm engine for m ..."
    assert lines[1].startswith("lceval: still starting the vllm engine for m (")
    assert lines[-1] in {f"lceval: starting the vllm engine for m: done in {s}s" for s in (0, 1)}
    with pytest.raises(ValueError), waiting("loading", every_s=10):
        raise ValueError("no")
    assert capsys.readouterr().err == "lceval: loading ...\n"  # no "done" after an error
