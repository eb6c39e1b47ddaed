"""Same input, same score in every benchmark: scoring a regression fixture twice (in one process,
where lm-eval's checkers and any other random draw would move on) gives byte-identical
scores.parquet."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import lceval.run
from lceval.core.io import RunDir, new_meta

FIXTURES = Path(__file__).parents[1] / "fixtures" / "regression"
KEYS = sorted(p.name for p in FIXTURES.iterdir() if (p / "samples.jsonl").exists())


@pytest.mark.parametrize("key", KEYS)
def test_scoring_twice_is_byte_identical(tmp_path: Path, key: str) -> None:
    run = RunDir("twice", tmp_path).create()
    for name in ("samples.jsonl", "contexts.jsonl", "responses.jsonl"):
        shutil.copy(FIXTURES / key / name, run.path / name)
    run.write_meta(new_meta("twice"))
    lceval.run.score("twice", root=tmp_path, progress=False)
    first = run.scores.read_bytes()
    lceval.run.score("twice", root=tmp_path, progress=False)
    assert run.scores.read_bytes() == first
