"""``--limit N`` (issue 49 item 1): N samples per task, as lm-evaluation-harness counts, spread
over each task's lengths and variants (seeded), and a ``lceval eval --limit`` build writes only
those, recorded in run.json; the same command again keeps them without building."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import lceval.run
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, write_jsonl
from lceval.core.records import Context, Response, Sample
from lceval.models.base import Backend
from lceval.report.coverage import coverage
from lceval.run import building
from lceval.run.selection import STRATA, per_task


def _grid():
    """Two tasks of 3 lengths x 2 expressions x 2 variables, ordered as builders write them
    (shortest length and first wording first)."""
    return [
        Sample(
            id=f"{task}/{length}/e{e}/v{v}",
            benchmark="b",
            task=task,
            instruction="x",
            length=length,
            expression_id=e,
            variable_id=v,
        )
        for task in ("A", "B")
        for length in (1000, 2000, 4000)
        for e in range(2)
        for v in range(2)
    ]


def test_limit_is_per_task_and_spread_over_lengths():
    samples = _grid()
    one = per_task(samples, 1)
    assert Counter(s.task for s in one) == {"A": 1, "B": 1}  # the first 1 were both task A
    three = per_task(samples, 3)
    for task in ("A", "B"):
        mine = [s for s in three if s.task == task]
        assert sorted(s.length for s in mine) == [1000, 2000, 4000]  # one per length
    six = per_task(samples, 6)
    for task in ("A", "B"):  # two per length, and those two of different wordings
        mine = [s for s in six if s.task == task]
        for length in (1000, 2000, 4000):
            assert sorted(s.expression_id for s in mine if s.length == length) == [0, 1]


def test_limit_is_seeded_nested_and_in_file_order():
    samples = _grid()
    assert per_task(samples, 5) == per_task(list(samples), 5)  # the same draw every time
    small, large = per_task(samples, 2), per_task(samples, 7)
    assert {s.id for s in small} <= {
        s.id for s in large
    }  # --limit 2 then --limit 7 answers 5 more per task
    order = {s.id: i for i, s in enumerate(samples)}
    assert [order[s.id] for s in large] == sorted(order[s.id] for s in large)
    assert per_task(samples, None) == samples and len(per_task(samples, 100)) == len(samples)


def test_limit_spreads_over_a_benchmarks_own_strata():
    samples = [
        Sample(id=f"p{p}/n{n}", benchmark="m", task="unique", instruction="x",
               meta={"n_instructions": n})
        for p in range(5)
        for n in range(1, 11)
    ]  # fmt: skip
    chosen = per_task(samples, 10, strata={"m": ("n_instructions",)})
    assert sorted(s.meta["n_instructions"] for s in chosen) == list(range(1, 11))


def test_infer_selects_per_task(echo_bench, tmp_path):
    run = lceval.run.build("r", "echo", {"n": 6}, root=tmp_path)
    samples = run.read_samples()
    assert len(lceval.run.select_samples(run, samples, limit=2)) == 2  # one task: T
    with pytest.raises(LcevalError, match="task\\(s\\) X not in run r"):
        lceval.run.select_samples(run, samples, limit=1, tasks=["X"])


def _two_task_bench(monkeypatch, echo_bench, calls):
    """The echo benchmark with a second task and a builder that counts its calls."""
    import dataclasses
    import sys

    original = echo_bench.BENCH.build

    def build(params):
        calls.append(dict(params))
        res = original(params)
        more = [dataclasses.replace(s, id=s.id + "u", task="U") for s in res.samples]
        extra = Context(id="echo/unused", text="read by none", n_tokens=3, encoding="o200k_base")
        return dataclasses.replace(
            res, samples=[*res.samples, *more], contexts=[*res.contexts, extra]
        )

    bench = dataclasses.replace(echo_bench.BENCH, build=build, tasks=("T", "U"))
    monkeypatch.setattr(sys.modules["lceval_test_echo"], "BENCHMARK", bench)
    return bench


def test_a_limited_build_writes_only_what_is_answered_and_records_it(
    monkeypatch, echo_bench, tmp_path
):
    calls: list = []
    _two_task_bench(monkeypatch, echo_bench, calls)
    run = building.build("r", "echo", {"n": 9}, root=tmp_path, limit=2, reuse=True)
    samples = run.read_samples()
    assert Counter(s.task for s in samples) == {"T": 2, "U": 2}
    assert set(run.read_contexts()) <= {"echo/c"}  # the unread context is not written
    selection = json.loads(run.run_json.read_text())["selection"]
    assert selection["limit"] == 2 and selection["per"] == "task"
    assert (selection["grid"], selection["kept"]) == (18, 4) and selection["seed"] == 0
    # the same command again: nothing built, the files kept byte for byte
    before = run.samples.read_bytes(), run.run_json.read_bytes()
    assert (
        building.build("r", "echo", {"n": 9}, root=tmp_path, limit=2, reuse=True).path == run.path
    )
    assert len(calls) == 1 and (run.samples.read_bytes(), run.run_json.read_bytes()) == before
    # another limit builds again; the answered samples stay, more are added
    write_jsonl(
        run.responses,
        [Response(sample_id=s.id, model="m", text="a", config_hash="c") for s in samples],
    )
    grown = building.build("r", "echo", {"n": 9}, root=tmp_path, limit=3, reuse=True)
    assert len(calls) == 2
    assert {s.id for s in samples} < {s.id for s in grown.read_samples()}
    assert Counter(s.task for s in grown.read_samples()) == {"T": 3, "U": 3}
    # a limit below the answers keeps them (a run never loses answered samples)
    kept = building.build("r", "echo", {"n": 9}, root=tmp_path, limit=1, reuse=True)
    assert {s.id for s in samples} <= {s.id for s in kept.read_samples()}


def test_other_params_build_again(monkeypatch, echo_bench, tmp_path):
    calls: list = []
    _two_task_bench(monkeypatch, echo_bench, calls)
    building.build("r", "echo", {"n": 9}, root=tmp_path, limit=2, reuse=True)
    building.build("r", "echo", {"n": 8}, root=tmp_path, limit=2, reuse=True)
    building.build("r", "echo", {"n": 8}, root=tmp_path, reuse=True)  # no limit: the grid
    assert len(calls) == 3
    assert len(RunDir("r", tmp_path).read_samples()) == 16
    building.build("r", "echo", {"n": 8}, root=tmp_path)  # no reuse (notebooks): builds
    assert len(calls) == 4


def test_coverage_says_n_per_task(echo_bench, tmp_path):
    import pandas as pd

    samples = [Sample(id=f"e{i}", benchmark="echo", task="T", instruction="x") for i in range(2)]
    frame = pd.DataFrame(
        {
            "sample_id": ["e0", "e1"],
            "model": ["m", "m"],
            "error": [None, None],
            "finish_reason": ["stop", "stop"],
            "truncated_tokens": [0, 0],
        }
    )
    meta = {"selection": {"limit": 2, "per": "task", "grid": 300, "kept": 2}}
    (cov,) = coverage(samples, frame, meta)
    assert cov.label.startswith("subset: 2 per task (--limit): 2 samples answered of 300 built")
    assert not cov.paper_grid
    (whole,) = coverage(samples, frame, {})
    assert "2 of 2 samples answered" in whole.label


def test_infer_again_with_everything_answered_checks_no_window(echo_bench, monkeypatch, tmp_path):
    """The same command again: the stored answers at once, without the window check's tokenizer
    load (107 s of a 245 s rerun at load 25), the plan or an engine."""
    import lceval.run.inference as inference

    class Echo(Backend):
        name = "echo"

        def generate(self, samples, contexts, config):
            return [Response(s.id, self.name, "a", config.hash()) for s in samples]

        def info(self):
            return {"backend": "hf"}  # what the hf engine says

        def close(self):
            pass

    lceval.run.build("r", "echo", {"n": 4}, root=tmp_path)
    monkeypatch.setattr(inference, "load_backend", lambda *a, **k: Echo())
    first = lceval.run.infer(
        "r", backend="hf", model="embedded", root=tmp_path, limit=2, progress=False
    )
    monkeypatch.setattr(inference, "check_fits", lambda *a, **k: pytest.fail("window checked"))
    monkeypatch.setattr(inference, "load_backend", lambda *a, **k: pytest.fail("engine loaded"))
    again = lceval.run.infer(
        "r", backend="hf", model="embedded", root=tmp_path, limit=2, progress=False
    )
    assert [r.sample_id for r in again] == [r.sample_id for r in first] and len(again) == 2


def selected_matches_grid(key, params, full, pick):
    """Build ``key`` with ``select`` (``pick(outlines) -> ids``) and check it against ``full``,
    the same params' whole build: the outlines are the grid's samples (ids, order and the draw's
    fields) and the selected build is the grid's records of those ids, byte for byte, with only
    the contexts they read. Returns the selected build."""
    from lceval.benchmarks import registry
    from lceval.core.io import dumps

    bench = registry.get(key)
    seen = []

    def select(outlines):
        seen.append(list(outlines))
        return pick(outlines)

    got = bench.build(params, select=select)
    assert len(seen) == 1  # asked once
    fields = ("id", "benchmark", "task", *STRATA)

    def grouping(s):
        return tuple(
            getattr(s, f) if hasattr(s, f) else s.meta.get(f) for f in (*fields, *bench.strata)
        )

    assert [grouping(s) for s in seen[0]] == [grouping(s) for s in full.samples]
    chosen = set(pick(seen[0]))
    assert [dumps(s) for s in got.samples] == [dumps(s) for s in full.samples if s.id in chosen]
    used = {s.context_id for s in got.samples}
    assert [dumps(c) for c in got.contexts] == [dumps(c) for c in full.contexts if c.id in used]
    return got


def test_selects_flag_matches_the_builders_signature():
    """A benchmark declaring ``selects`` has a builder taking ``select`` (and the others are
    handed none): RULER and LIFBench build only the drawn samples."""
    import importlib
    import inspect

    from lceval.benchmarks import registry

    selecting = set()
    for key in registry.BENCHMARKS:
        bench = registry.get(key)
        module, _, name = bench.build.__qualname__.partition(":")
        fn = getattr(importlib.import_module(module), name)
        assert ("select" in inspect.signature(fn).parameters) == bench.selects, key
        selecting |= {key} if bench.selects else set()
    assert {"ruler", "lifbench"} <= selecting


def test_a_selecting_builder_is_handed_the_draw_and_the_answered(monkeypatch, echo_bench, tmp_path):
    """build_suite hands a ``selects`` builder the draw of ``limit`` per task plus the answered
    samples, records the outlines' count as the grid, and writes what it built."""
    import dataclasses
    import sys

    calls: list = []
    _two_task_bench(monkeypatch, echo_bench, calls)
    grid_builder = sys.modules["lceval_test_echo"].BENCHMARK.build
    asked: list = []

    def build(params, *, select=None):
        res = grid_builder(params)
        if select is None:
            return res
        ids = set(select(res.samples))
        asked.append(ids)
        return dataclasses.replace(res, samples=[s for s in res.samples if s.id in ids])

    bench = dataclasses.replace(
        sys.modules["lceval_test_echo"].BENCHMARK, build=build, selects=True
    )
    monkeypatch.setattr(sys.modules["lceval_test_echo"], "BENCHMARK", bench)
    full = grid_builder({"n": 9})
    run = building.build("r", "echo", {"n": 9}, root=tmp_path, limit=2)
    expect = {s.id for s in per_task(full.samples, 2, strata={"echo": bench.strata})}
    assert asked == [expect] and {s.id for s in run.read_samples()} == expect
    selection = json.loads(run.run_json.read_text())["selection"]
    assert (selection["grid"], selection["kept"]) == (18, 4)
    # a sample answered before (a larger limit once) is handed to the builder too, and stays
    extra = next(s for s in full.samples if s.id not in expect)
    write_jsonl(run.responses, [Response(sample_id=extra.id, model="m", text="a", config_hash="c")])
    again = building.build("r", "echo", {"n": 9}, root=tmp_path, limit=2)
    assert asked[-1] == expect | {extra.id}
    assert {s.id for s in again.read_samples()} == expect | {extra.id}
