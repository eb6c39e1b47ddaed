"""LIFBench's helper modules as typed for a notebook's checker: one :class:`typing.Protocol` per
module of :attr:`Benchmark.helpers` (the functions notebooks call, with the module's own
signatures) and :class:`LIFBenchmark`, whose :meth:`~LIFBenchmark.helper` returns that Protocol
for the helper's name (``typing.overload`` on a ``Literal``), so that
``lceval.notebook.get_benchmark("lifbench").helper("report").report_ifs_gap(...)`` is checked.
A module is checked against its Protocol by ``tests/test_typed_api.py`` (mypy reads a module as a
Protocol's implementation). The pattern of every paper: DEVELOPING.md, "Typed helpers"."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from lceval.benchmarks.base import Benchmark

if TYPE_CHECKING:  # the names of the signatures alone (a notebook imports pandas itself)
    import pandas as pd


class Report(Protocol):
    """:mod:`lceval.benchmarks.lifbench.report` (notebook 03)."""

    def write_ifp_radar(
        self,
        ifp_table: pd.DataFrame,
        figures: str | Path,
        published: str | Sequence[str] = "reference",
    ) -> list[Path]: ...

    def report_ifs_gap(
        self, run_id: str, random_run_id: str, *, root: str | Path | None = None
    ) -> dict[str, pd.DataFrame]: ...


class LIFBenchmark(Benchmark):
    """LIFBench's :class:`Benchmark`: :meth:`helper` typed per helper name."""

    @overload
    def helper(self, name: Literal["report"]) -> Report: ...
    @overload
    def helper(self, name: str) -> Any: ...
    def helper(self, name: str) -> Any:
        return super().helper(name)
