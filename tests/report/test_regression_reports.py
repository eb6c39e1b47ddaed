"""Same report numbers before and after the wings move (issue 31): each regression fixture scored
and reported by the current code gives the tables ``make_reports.py`` wrote from the code before
the move (``expected_report.json``): the same tables, columns, rows and values (floats to 1e-9
relative). The notebooks read these tables (``lceval.report.write_report``), so their numbers are
these."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "regression"
KEYS = sorted(p.parent.name for p in FIXTURES.glob("*/expected_report.json"))


def _same(got: object, want: object, where: str) -> None:
    """Equal JSON values, numbers to 1e-9 relative (NaN written as null on both sides)."""
    if isinstance(want, list) and isinstance(got, list):
        assert len(got) == len(want), f"{where}: {len(got)} entries, expected {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) or isinstance(got, float):
        assert isinstance(got, int | float) and isinstance(want, int | float), f"{where}: {got!r}"
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {got} != {want}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS)
def test_report_tables_as_before_the_move(key: str, tmp_path: Path) -> None:
    sys.path.insert(0, str(FIXTURES))
    try:
        from make_reports import tables_of
    finally:
        sys.path.remove(str(FIXTURES))
    expected = json.loads((FIXTURES / key / "expected_report.json").read_text(encoding="utf-8"))
    got = tables_of(key, tmp_path)
    assert sorted(got) == sorted(expected)
    for name in expected:
        g, w = json.loads(got[name]), json.loads(expected[name])
        assert sorted(g) == sorted(w), name
        for part in w:  # columns, index, data
            _same(g[part], w[part], f"{name}.{part}")


def test_the_fixtures_cover_every_benchmark() -> None:
    from lceval.benchmarks import registry

    assert KEYS == sorted(b.key for b in registry.all_benchmarks())
