"""Shared LIFBench fixtures: the smoke set of params/01_build_data/smoke.yaml, built once."""

from __future__ import annotations

import pytest

import lceval.params
from lceval.benchmarks.base import BuildResult
from lceval.benchmarks.lifbench.build import build_lifbench

SMOKE_PARAMS = "params/01_build_data/smoke.yaml"


@pytest.fixture(scope="session")
def smoke_params() -> dict:
    """The notebook params of the smoke set, as the notebook and ``lceval build`` read them."""
    return lceval.params.load_params(SMOKE_PARAMS)


@pytest.fixture(scope="session")
def smoke_build(smoke_params: dict) -> BuildResult:
    """The smoke set built once per session (about 6 s)."""
    return build_lifbench(smoke_params)
