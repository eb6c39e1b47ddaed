"""Fixtures of the cross-paper studies: L-Eval's data files (shared with tests/benchmarks/leval)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_leval_conftest", Path(__file__).parents[1] / "benchmarks" / "leval" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_leval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_leval)

leval_data = _leval.leval_data
"""L-Eval task files written in the official format (tests/benchmarks/leval/conftest.py)."""
