"""LongGenBench's helper modules as typed for a notebook's checker: one :class:`typing.Protocol`
per module of :attr:`Benchmark.helpers` (the functions notebooks call, with the module's own
signatures) and :class:`LongGenBenchmark`, whose ``helper(name)`` returns that Protocol (the
pattern of :mod:`lceval.benchmarks.lifbench.helpers`; each module checked against its Protocol
by ``tests/test_typed_api.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from lceval.benchmarks.base import Benchmark

if TYPE_CHECKING:  # the names of the signatures alone
    import pandas as pd


class RulerCorrelation(Protocol):
    """:mod:`lceval.benchmarks.longgenbench.ruler_correlation` (notebook 05)."""

    STUDY: str

    def correlate(self, pairs: pd.DataFrame) -> pd.DataFrame: ...

    def correlation_figure(
        self,
        pairs: pd.DataFrame,
        folder: str | Path,
        name: str = ...,
        title: str = ...,
        *,
        runs: pd.DataFrame | None = ...,
        models: Sequence[str] | None = ...,
    ) -> list[Path]: ...

    def correlation_summary(self, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame: ...

    def headline(self, summary: pd.DataFrame) -> pd.DataFrame: ...

    def measured_pairs(
        self,
        ruler_runs: Sequence[str],
        longgenbench_runs: Sequence[str],
        *,
        metric: str = ...,
        root: str | Path | None = ...,
    ) -> pd.DataFrame: ...

    def missing_pairs(
        self,
        ruler_runs: Sequence[str],
        longgenbench_runs: Sequence[str],
        measured: pd.DataFrame,
        runs_pairs: pd.DataFrame,
        *,
        metric: str = ...,
        root: str | Path | None = ...,
    ) -> pd.DataFrame: ...

    def published_pairs(self, source: str = ..., metric: str = ...) -> pd.DataFrame: ...

    def readme_pairs(
        self,
        longgenbench_runs: Sequence[str],
        ruler_names: Mapping[str, str],
        *,
        metric: str = ...,
        root: str | Path | None = ...,
    ) -> pd.DataFrame: ...

    def scored_runs(self, run_ids: Sequence[str], root: str | Path | None = ...) -> list[str]: ...

    def study_meta(
        self,
        run_id: str,
        ruler_runs: Sequence[str],
        longgenbench_runs: Sequence[str],
        *,
        metric: str = ...,
    ) -> Any: ...

    def with_runs(self, published: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame: ...


class Tables(Protocol):
    """:mod:`lceval.benchmarks.longgenbench.tables` (notebook 06)."""

    def paper_style(self, table: pd.DataFrame, which: str) -> pd.DataFrame: ...

    def table3_with_published(
        self, t3: pd.DataFrame, models: Sequence[str] | None = ...
    ) -> pd.DataFrame: ...

    def table7_with_published(
        self, t7: pd.DataFrame, models: Sequence[str] | None = ...
    ) -> pd.DataFrame: ...


class LongGenBenchmark(Benchmark):
    """LongGenBench's :class:`Benchmark`: ``helper`` typed per helper name."""

    @overload
    def helper(self, name: Literal["ruler_correlation"]) -> RulerCorrelation: ...
    @overload
    def helper(self, name: Literal["tables"]) -> Tables: ...
    @overload
    def helper(self, name: str) -> Any: ...
    def helper(self, name: str) -> Any:
        return super().helper(name)
