"""L-Eval's helper modules as typed for a notebook's checker: one :class:`typing.Protocol` per
module of :attr:`Benchmark.helpers` (the functions notebooks call, with the module's own
signatures) and :class:`LEvalBenchmark`, whose ``helper(name)`` returns that Protocol (the
pattern of :mod:`lceval.benchmarks.lifbench.helpers`; each module checked against its Protocol
by ``tests/test_typed_api.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from lceval.benchmarks.base import Benchmark

if TYPE_CHECKING:  # the names of the signatures alone
    import pandas as pd

    from lceval.benchmarks.leval.ntk import Sweep


class Data(Protocol):
    """:mod:`lceval.benchmarks.leval.data` (notebook 08)."""

    def write_demo_data(
        self, folder: str | Path, doc_words: int = ..., n_docs: int = ...
    ) -> dict[str, Path]: ...


class Ntk(Protocol):
    """:mod:`lceval.benchmarks.leval.ntk` (notebook 09)."""

    def answer_changes(self, sweep: Sweep, reference: str | None = ...) -> pd.DataFrame: ...

    def plan_sweep(
        self,
        run_id: str,
        *,
        bases: Sequence[float] | None = ...,
        ntk_factors: Sequence[float] | None = ...,
        lengths: Sequence[int],
        samples: int,
        seed: int = ...,
        data_path: str | Sequence[str] | None = ...,
        retrieval_tasks: Sequence[str] | None = ...,
        encoding: str = ...,
        reasoning_max_new_tokens: int = ...,
        arithmetic_shots: int | None = ...,
        arithmetic_steps: int = ...,
        outputs_root: str | Path | None = ...,
    ) -> Sweep: ...


class LEvalBenchmark(Benchmark):
    """L-Eval's :class:`Benchmark`: ``helper`` typed per helper name."""

    @overload
    def helper(self, name: Literal["data"]) -> Data: ...
    @overload
    def helper(self, name: Literal["ntk"]) -> Ntk: ...
    @overload
    def helper(self, name: str) -> Any: ...
    def helper(self, name: str) -> Any:
        return super().helper(name)
