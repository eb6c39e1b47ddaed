"""ManyIFEval's helper modules as typed for a notebook's checker: one :class:`typing.Protocol` per
module of :attr:`Benchmark.helpers` (the functions notebooks call, with the module's own
signatures) and :class:`ManyIFEvalBenchmark`, whose ``helper(name)`` returns that Protocol (the
pattern of :mod:`lceval.benchmarks.lifbench.helpers`; each module checked against its Protocol
by ``tests/test_typed_api.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from lceval.benchmarks.base import Benchmark

if TYPE_CHECKING:  # the names of the signatures alone
    import pandas as pd

    from lceval.core.io import RunDir
    from lceval.core.records import Sample
    from lceval.models.base import Backend


class Refine(Protocol):
    """:mod:`lceval.benchmarks.manyifeval.refine` (notebook 04)."""

    def run_strategies(
        self,
        run: RunDir,
        backend: Backend,
        strategies: Sequence[str] | None = ...,
        **options: Any,
    ) -> pd.DataFrame: ...

    def select_samples(
        self,
        samples: Sequence[Sample] | RunDir,
        *,
        n_instructions: Iterable[int] | None = ...,
        n_prompts: int | None = ...,
        condition: str = ...,
    ) -> list[Sample]: ...


class ManyIFEvalBenchmark(Benchmark):
    """ManyIFEval's :class:`Benchmark`: ``helper`` typed per helper name."""

    @overload
    def helper(self, name: Literal["refine"]) -> Refine: ...
    @overload
    def helper(self, name: str) -> Any: ...
    def helper(self, name: str) -> Any:
        return super().helper(name)
