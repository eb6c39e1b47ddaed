"""The model an LLM judge asks (``longgenbench:llm``, ``leval:judge``, ``cifbench:judge``):
:class:`ModelJudge`, the :class:`AsksModel` mixin and :class:`JudgeModel`, their shared options.
Prompts and verdict parsing stay in each paper's folder."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import field_validator

from lceval.core.records import Context, Response, Sample
from lceval.models import base, lifeline
from lceval.models.backends import known_backend
from lceval.models.base import Backend, GenerationConfig
from lceval.models.generate import generate
from lceval.params import Generation, JudgeOptions, ScorerOptions

if TYPE_CHECKING:
    from lceval.core.store import ResponseStore


@dataclass
class ModelJudge:
    """The model a batch judge asks: its engine loads at the first question (and dies with
    lceval), answers go through ``store`` (resumable; a question is asked once).

    Args:
        load: loads the judge backend (:meth:`loader`).
        store: the run folder's file of judge answers.
        config: the generation config (:class:`lceval.params.Generation`: ``max_new_tokens``
            caps every question's own budget; ``temperature`` 0 = greedy decoding).
        batch_size: questions per ``backend.generate`` call.
        label: the judge's name until the backend is loaded.
        progress: show a progress bar per ``ask``.
    """

    load: Callable[[], Backend]
    store: ResponseStore
    config: GenerationConfig = field(default_factory=GenerationConfig)
    batch_size: int = 8
    label: str = "judge"
    progress: bool = False
    engine: Backend | None = field(default=None, init=False)
    _lifeline: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, init=False)

    @property
    def name(self) -> str:
        return self.engine.name if self.engine is not None else self.label

    def ask(
        self, questions: Sequence[Sample], desc: str, contexts: Mapping[str, Context] | None = None
    ) -> dict[str, Response]:
        """Sample id -> its answer (stored earlier or generated now; a failed generation has
        ``finish_reason == "error"``) for ``questions`` (ids unique), under the bar ``desc``.

        Raises:
            LcevalError: duplicate ids, or another process writing the store.
        """
        if not questions:
            return {}
        if self.engine is None:
            with contextlib.ExitStack() as guarded:  # the engine's processes die with lceval
                guarded.enter_context(lifeline.guard(self.store.path.parent))
                self.engine = self.load()
                self._lifeline = guarded.pop_all()
        got = generate(
            self.engine,
            list(questions),
            contexts or {},
            self.config,
            store=self.store,
            batch_size=self.batch_size,
            progress=self.progress,
            desc=desc,
        )
        return {r.sample_id: r for r in got}

    def close(self) -> None:
        """Close the judge backend if it is loaded."""
        if self.engine is not None:
            engine, self.engine = self.engine, None
            try:
                engine.close()
            finally:
                self._lifeline.close()

    @staticmethod
    def loader(
        backend: str, model: str | None, options: Mapping[str, Any]
    ) -> Callable[[], Backend]:
        """``load_backend(backend, model, **options)`` to call later.

        Raises:
            LcevalError: an unknown backend or option (checked now, before anything loads).
        """
        base.check_backend_options(backend, options)
        return functools.partial(base.load_backend, backend, model, **options)


class AsksModel:
    """Mixin for a batch judge holding a :class:`ModelJudge` as ``asker``."""

    asker: ModelJudge

    @property
    def engine(self) -> Backend | None:
        return self.asker.engine

    @property
    def name(self) -> str:
        return self.asker.name

    def close(self) -> None:
        self.asker.close()


class JudgeModel(ScorerOptions, JudgeOptions):
    """The model an LLM judge asks; each judge's options subclass it, a notebook's
    ``judge_<option>`` params fill them (:func:`lceval.benchmarks.registry.judge_options`)."""

    _backend = field_validator("backend")(known_backend)

    def generation(self) -> GenerationConfig:
        """The generation config of the judge's questions: these options' :class:`Generation`
        fields (``stop``, ``max_thinking_tokens``, ``temperature``, ...), each engine mapping
        it as it maps an answering model's; ``max_new_tokens`` as given (a judge whose option
        is null replaces it with its own default)."""
        return GenerationConfig(**self.model_dump(include=set(Generation.model_fields)))

    def loader(self) -> Callable[[], Backend]:
        """:meth:`ModelJudge.loader` of these options."""
        return ModelJudge.loader(self.backend, self.model, self.backend_options)

    @property
    def label(self) -> str:
        """The judge's name until its engine loads: the model, else the backend."""
        return self.model or self.backend
