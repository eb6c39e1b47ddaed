"""The model an LLM judge asks: :class:`ModelJudge` (lazy engine, resumable store), the
:class:`AsksModel` mixin and :class:`JudgeModel`, the options shared by the three judges
(``longgenbench:llm``, ``leval:judge``, ``cifbench:judge``). Prompts and verdict parsing stay in
each paper's folder; engines are imported at a judge's first question."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import field_validator

from lceval.core.errors import LcevalError
from lceval.core.records import Context, Response, Sample
from lceval.models import base, lifeline
from lceval.models.backends import check_backend_name
from lceval.models.base import Backend, GenerationConfig
from lceval.models.generate import generate
from lceval.params import JudgeOptions, ScorerOptions

if TYPE_CHECKING:
    from lceval.core.store import ResponseStore


@dataclass
class ModelJudge:
    """The model a batch judge asks: loads its engine at the first question, answers through a
    ResponseStore (resumable; identical questions asked once) and closes the engine.

    Args:
        load: loads the judge backend; called once, at the first question.
        store: where answers are appended (a file in the run folder); answered questions are
            not asked again.
        max_new_tokens: answer budget in tokens (caps every question's own).
        temperature: 0 = greedy decoding.
        batch_size: questions per ``backend.generate`` call.
        label: the judge's name until the backend is loaded (the model or backend name).
        progress: show a progress bar per ``ask``.
    """

    load: Callable[[], Backend]
    store: ResponseStore
    max_new_tokens: int | None = None
    temperature: float = 0.0
    batch_size: int = 8
    label: str = "judge"
    progress: bool = False
    engine: Backend | None = field(default=None, init=False)
    """The loaded backend (None until the first question, and after ``close``)."""
    _lifeline: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, init=False)
    """The engine's :func:`lceval.models.lifeline.guard`, open while it is loaded."""

    @property
    def name(self) -> str:
        """The judge model's name (``label`` until the backend is loaded)."""
        return self.engine.name if self.engine is not None else self.label

    def ask(
        self,
        questions: Sequence[Sample],
        desc: str,
        contexts: Mapping[str, Context] | None = None,
    ) -> dict[str, Response]:
        """Answer ``questions`` (ids unique); nothing loads when there are none.

        Args:
            questions: the judge prompts as samples.
            desc: the progress bar's label.
            contexts: the contexts the questions reference, by id.

        Returns:
            Sample id -> its answer (stored earlier, or generated now; a failed generation is a
            response with ``finish_reason == "error"``).

        Raises:
            LcevalError: duplicate ids, or another process writing the store.
        """
        if not questions:
            return {}
        if self.engine is None:
            # the judge's engine processes die with lceval (SIGKILL included)
            self._lifeline = contextlib.ExitStack()
            self._lifeline.enter_context(lifeline.guard(self.store.path.parent))
            try:
                self.engine = self.load()
            except BaseException:
                self._lifeline.close()
                raise
        config = GenerationConfig(temperature=self.temperature, max_new_tokens=self.max_new_tokens)
        got = generate(
            self.engine,
            list(questions),
            contexts or {},
            config,
            store=self.store,
            batch_size=self.batch_size,
            progress=self.progress,
            desc=desc,
        )
        return {r.sample_id: r for r in got}

    def close(self) -> None:
        """Close the judge backend, if it was loaded (again: nothing to do)."""
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
        """A ``load`` for :class:`ModelJudge`: ``load_backend(backend, model, **options)``.

        Raises:
            LcevalError: an unknown backend or backend option (checked now, before anything
                loads).
        """
        options = dict(options)
        base.check_backend_options(backend, options)

        def load() -> Backend:
            return base.load_backend(backend, model, **options)

        return load


class AsksModel:
    """Mixin for a batch judge holding a :class:`ModelJudge` as ``asker`` (its engine, name,
    close)."""

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
    """The model an LLM judge asks; each judge's options subclass it. A notebook's
    ``judge_<option>`` params (:class:`lceval.params.Judge`) fill these options
    (:func:`lceval.benchmarks.registry.judge_options`)."""

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        try:
            check_backend_name(value)
        except LcevalError as exc:
            raise ValueError(str(exc)) from None
        return value

    def loader(self) -> Callable[[], Backend]:
        """A ``load`` for :class:`ModelJudge`, backend options checked now."""
        return ModelJudge.loader(self.backend, self.model, self.backend_options)

    @property
    def label(self) -> str:
        """The judge's name until its engine loads: the model, else the backend."""
        return self.model or self.backend
