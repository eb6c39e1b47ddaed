"""Same scores after the one-folder refactor: fixed responses per benchmark, scored through the one
scoring loop (``lceval.run.score``), equal the scores the code before the change gave
(``tests/fixtures/regression/make_before.py`` wrote ``expected*.jsonl`` from that code; L-Eval's
and CIF-Bench's came later from ``make_responses.py``, run on main before issue 19).

Each fixture's responses.jsonl starts with a failed attempt followed (later in the file) by a
successful response for the same key: the success must be what is scored, on every benchmark.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import lceval.run
from lceval.benchmarks import registry
from lceval.core.io import RunDir, new_meta

FIXTURES = Path(__file__).parent / "fixtures" / "regression"


def _cases() -> list[tuple[str, str | None, str]]:
    """(benchmark, scorer, expected file) for every registered benchmark's scorers that have an
    expected file: ``expected.jsonl`` for the default scorer, ``expected_<variant>.jsonl`` for
    ``<key>:<variant>`` (LLM judges have none: they need a model)."""
    cases = []
    for bench in registry.all_benchmarks():
        for name in bench.scorers:
            variant = name.partition(":")[2]
            expected = f"expected_{variant}.jsonl" if variant else "expected.jsonl"
            if (FIXTURES / bench.key / expected).exists():
                cases.append((bench.key, None if not variant else name, expected))
    return cases


CASES = _cases()


def test_every_benchmark_has_a_regression_fixture():
    assert {key for key, _, _ in CASES} == set(registry.BENCHMARKS)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


@pytest.mark.parametrize(("key", "scorer", "expected"), CASES)
def test_scores_equal_before_refactor(tmp_path: Path, key: str, scorer: str | None, expected: str):
    src = FIXTURES / key
    run = RunDir("reg", tmp_path).create()
    for name in ("samples.jsonl", "contexts.jsonl", "responses.jsonl"):
        shutil.copy(src / name, run.path / name)
    run.write_meta(new_meta("reg"))
    df = lceval.run.score("reg", root=tmp_path, scorer=scorer, progress=False)
    got = {(r["sample_id"], r["model"]): r for r in df.to_dict("records")}
    want = [json.loads(line) for line in (src / expected).read_text().splitlines()]
    assert len(got) == len(want)
    for w in want:
        g = got[(w["sample_id"], w["model"])]
        assert _same(g["value"], w["value"]), (w["sample_id"], w["model"], g["value"], w["value"])
        parts = json.loads(g["parts"])
        assert set(parts) == set(w["parts"]), (w["sample_id"], w["model"])
        for k, v in w["parts"].items():
            assert _same(parts[k], v), (w["sample_id"], w["model"], k, parts[k], v)
        assert g["explanation"] == w["explanation"]
    first = json.loads((src / "responses.jsonl").read_text().splitlines()[0])
    assert first["finish_reason"] == "error"
    retried = got[(first["sample_id"], first["model"])]
    assert not retried["explanation"].startswith("generation failed"), key
