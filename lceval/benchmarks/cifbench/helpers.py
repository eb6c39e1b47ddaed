"""CIF-Bench's helper modules as typed for a notebook's checker: one :class:`typing.Protocol` per
module of :attr:`Benchmark.helpers` (the functions notebooks call, with the module's own
signatures) and :class:`CIFBenchmark`, whose ``helper(name)`` returns that Protocol (the pattern
of :mod:`lceval.benchmarks.lifbench.helpers`; each module checked against its Protocol by
``tests/test_typed_api.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from lceval.benchmarks.base import Benchmark

if TYPE_CHECKING:  # the names of the signatures alone
    import pandas as pd


class Data(Protocol):
    """:mod:`lceval.benchmarks.cifbench.data` (notebooks 10, 11)."""

    def write_demo_dataset(
        self, folder: str | Path, *, public_inputs: int = ...
    ) -> dict[str, str]: ...


class Report(Protocol):
    """:mod:`lceval.benchmarks.cifbench.report` (notebook 11)."""

    def published_tables(
        self, *, n_resamples: int = ..., seed: int = ...
    ) -> dict[str, pd.DataFrame]: ...


class Tables(Protocol):
    """:mod:`lceval.benchmarks.cifbench.tables` (notebook 11)."""

    def leaderboard_with_published(
        self, leaderboard: pd.DataFrame, split: str, models: Sequence[str] | None = ...
    ) -> pd.DataFrame: ...

    def read_other_leaderboards(self, path: str | Path) -> pd.DataFrame: ...

    def table6(
        self,
        overall: pd.DataFrame,
        other: pd.DataFrame | None = ...,
        models: Sequence[str] | None = ...,
    ) -> tuple[pd.DataFrame, pd.DataFrame]: ...


class Variants(Protocol):
    """:mod:`lceval.benchmarks.cifbench.variants` (notebook 11)."""

    def generate_variants_file(
        self,
        split_dir: str | Path,
        path: str | Path,
        *,
        backend: str = ...,
        model: str | None = ...,
        n: int = ...,
        tasks: list[str | int] | None = ...,
        backend_options: Mapping[str, Any] | None = ...,
        **options: Any,
    ) -> Path: ...


class CIFBenchmark(Benchmark):
    """CIF-Bench's :class:`Benchmark`: ``helper`` typed per helper name."""

    @overload
    def helper(self, name: Literal["data"]) -> Data: ...
    @overload
    def helper(self, name: Literal["report"]) -> Report: ...
    @overload
    def helper(self, name: Literal["tables"]) -> Tables: ...
    @overload
    def helper(self, name: Literal["variants"]) -> Variants: ...
    @overload
    def helper(self, name: str) -> Any: ...
    def helper(self, name: str) -> Any:
        return super().helper(name)
