"""The registered object of a paper: ``Benchmark``, its named ``ScorerSpec``s, and what a builder
returns.

Each paper is one folder ``lceval/benchmarks/<key>/`` whose ``__init__.py`` defines
``BENCHMARK = Benchmark(...)``; :mod:`lceval.benchmarks.registry` finds it by key. Heavy parts (the
builder, the scorers, the reporter) are referenced as ``"module:function"`` strings and imported
only when called (:func:`lazy`), so ``lceval list`` and loading samples stay fast.

Contracts:

- builder: ``build(params: Mapping) -> BuildResult``; a builder whose benchmark declares
  ``selects=True`` also takes ``select`` (:data:`Select`, keyword; None: build everything): it
  outlines its samples first (cheap: ids and the grouping fields, in its output order), asks
  ``select`` once which ids to build, and makes contexts and samples only for those, each
  exactly as the whole build makes it (``lceval eval --limit``). Reads its params with
  :func:`lceval.params.parse` into its ``Config`` (a pydantic model in the benchmark's
  folder; an unknown key or a bad value raises LcevalError naming the key); the keys of the
  notebook's other sections (:data:`lceval.params.NOTEBOOK_SECTIONS`,
  :data:`lceval.params.NOTEBOOK_PARAMS`) are accepted and ignored, so a notebook's params file
  builds as it is. Deterministic under a seed.
- scorer: ``score(sample, response, context, **options) -> Judgement``. Never raises on any model
  output; a score that cannot be computed is NaN with a reason; ``value`` in 0..1. The pipeline
  attaches ids, the scorer's name and version (:mod:`lceval.run`, the only scoring loop).
- batch judge (optional, for scorers that ask a model): ``batch(run, **options) -> BatchJudge``;
  the pipeline feeds it responses and calls ``finish`` on groups of about ``batch_items`` items.
  A judge that asks a model does it through :class:`ModelJudge` (lazy engine, resumable store)
  and declares its options as a :class:`JudgeModel` subclass (``ScorerSpec.option_type``).
- reporter: ``report(run, scores: DataFrame, samples) -> dict[str, DataFrame]``; writes CSV tables
  and PNG+PDF figures under the run's ``report/``.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from lceval.core.errors import LcevalError, one_line
from lceval.core.records import Context, Gold, Judgement, Response, Sample, Score
from lceval.params import ScorerOptions

if TYPE_CHECKING:
    import pandas as pd


Select = Callable[[Sequence[Sample]], Collection[str]]
"""``select(outlines) -> ids to build``: what :func:`lceval.run.building.build_suite` hands a
builder that ``selects`` when a limit is given. ``outlines`` are the samples the whole build would
write, in its order, with at least ``id``, ``benchmark``, ``task`` and the benchmark's
:attr:`Benchmark.strata` fields set (the rest may be empty): the draw
(:func:`lceval.run.selection.per_task`) reads nothing else."""


@dataclass(frozen=True)
class BuildResult:
    """The output of a benchmark's builder."""

    samples: list[Sample]
    contexts: list[Context]
    """Each long context once; samples reference them by id."""
    sources: Mapping[str, Any] = field(default_factory=dict)
    """Data sources actually used (corpus name -> path / package / sha256), for run.json."""
    encoding: str | None = None
    """tiktoken encoding used to measure lengths, if any."""


def scorer_key(name: str) -> str:
    """The benchmark key of a scorer name: ``lifbench:strict`` -> ``lifbench``, ``leval`` ->
    ``leval`` (the one place ``key:variant`` is parsed)."""
    return name.split(":", 1)[0]


def scorer_of(key: str, scorer: str | None) -> str | None:
    """``scorer`` when it is one of benchmark ``key``'s (``key`` or ``key:variant``), else None
    (the benchmark's default): how a run-wide ``--scorer`` applies to each of its benchmarks."""
    return scorer if scorer is not None and scorer_key(scorer) == key else None


def lazy(target: str) -> Callable[..., Any]:
    """A callable that imports ``"package.module:function"`` on first call and calls it."""
    module, sep, name = target.partition(":")
    if not sep:
        raise ValueError(f"lazy target must be 'module:function', got {target!r}")
    resolved: list[Callable[..., Any]] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not resolved:
            resolved.append(getattr(importlib.import_module(module), name))
        return resolved[0](*args, **kwargs)

    call.__name__ = name
    call.__qualname__ = target
    call.__doc__ = f"Lazily imported {target}."
    return call


class BatchJudge(Protocol):
    """A scorer that judges many responses at once (an LLM judge through a backend).

    The pipeline calls ``prepare`` per response (cheap: parse, collect the questions to judge),
    then ``finish`` on a group of prepared items whose ``n_items`` add up to about
    ``batch_items``, and finally ``close``.
    """

    batch_items: int

    def prepare(self, sample: Sample, response: Response, context: Context | None) -> Any:
        """Parse one response; the result has an ``n_items`` attribute (questions to judge)."""
        ...

    def finish(self, prepared: Sequence[Any]) -> list[Judgement]:
        """Judge a group of prepared responses; one Judgement each, in order."""
        ...

    def close(self) -> None:
        """Release engines the judge loaded."""
        ...


@dataclass(frozen=True)
class ScorerSpec:
    """A named scorer of a benchmark, like inspect_ai's ``@scorer(metrics=[...])``."""

    name: str
    """Registry name: the benchmark key, or ``key:variant`` (``lifbench:strict``)."""
    version: str
    """Bumped whenever the scorer's rules change; recorded in every Score."""
    description: str
    """One line: what the scorer does and which source it follows."""
    metrics: tuple[str, ...]
    """The paper's metrics the reporter computes from this scorer's scores."""
    score: Callable[..., Judgement] | None = None
    """``score(sample, response, context, **options) -> Judgement``."""
    batch: Callable[..., BatchJudge] | None = None
    """``batch(run, **options) -> BatchJudge`` for scorers that judge in batches."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Options ``lceval score --option KEY=VALUE`` accepts, with a one-line description each
    (filled from ``option_type`` when that is given)."""
    option_type: type[ScorerOptions] | None = None
    """The options as a declared type (names, types, ranges, help): checked by
    :meth:`check_options` before anything loads; an LLM judge's subclasses :class:`JudgeModel`."""
    plan_cost: Callable[[Any], tuple[str, int, int, int]] | None = None
    """An LLM judge's ``plan_cost(options) -> (template text, prompts per answer, answers
    each quotes, answer budget in tokens)``: what ``lceval plan`` counts of its calls."""

    def __post_init__(self) -> None:
        if self.option_type is not None and not self.options:
            object.__setattr__(self, "options", self.option_type.docs())

    def judge(
        self,
        sample: Sample,
        response: Response,
        context: Context | None,
        options: Mapping[str, Any] | None = None,
    ) -> Judgement:
        """Judge one response with the per-response scorer: a failed generation is NaN with the
        error as explanation; an exception of the scorer is NaN naming it (the scorer contract
        says never raise, and a run's other scores are never lost).

        Raises:
            LcevalError: this scorer judges in batches only (no ``score``).
        """
        if response.finish_reason == "error" or response.thinking_unfinished:
            return failed_generation(response)
        if self.score is None:
            raise LcevalError(f"scorer {self.name} judges in batches; it has no per-response score")
        try:
            return self.score(sample, response, context, **dict(options or {}))
        except Exception as exc:  # noqa: BLE001 - the scorer contract says never raise
            msg = one_line(exc)
            return Judgement(
                value=math.nan, explanation=f"scorer error: {type(exc).__name__}: {msg}"
            )

    def record(self, sample: Sample, model: str, judgement: Judgement) -> Score:
        """The Score row of ``judgement``: the sample's ids, ``model``, this scorer's name and
        version (how the pipeline and ManyIFEval's refinement rounds store a judgement)."""
        return Score(
            sample_id=sample.id,
            model=model,
            benchmark=sample.benchmark,
            task=sample.task,
            scorer=self.name,
            scorer_version=self.version,
            value=judgement.value,
            parts=judgement.parts,
            points=judgement.points,
            explanation=judgement.explanation,
        )

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise LcevalError naming the first option this scorer does not take (with a declared
        ``option_type``: also a value of the wrong type or out of range)."""
        if self.option_type is not None:
            self.option_type.parse(self.name, options)
            return
        for k in options:
            if k not in self.options:
                known = ", ".join(sorted(self.options)) or "none"
                raise LcevalError(f"scorer {self.name} has no option {k!r}; options: {known}")


@dataclass(frozen=True)
class ContextModes:
    """Whether and how a benchmark's samples can be answered with other than their full context
    (``lceval infer -o context=none|bm25:K|dense:K``): the paired difference full - none (and
    full - retrieved) in the report says whether a model needs the long context at all.

    A mode is supported unless :attr:`refused` (for the whole benchmark) or :attr:`refused_tasks`
    (for some tasks) names why not; ``full`` is always supported.
    """

    how: str
    """One line: what the model reads in each mode for this paper (where the context sits in the
    prompt, what the retrieval query is)."""
    refused: Mapping[str, str] = field(default_factory=dict)
    """Kind (``none``, ``bm25``, ``dense``) -> why the mode makes no sense on any task."""
    refused_tasks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Kind -> task code -> why the mode makes no sense on that task (a needle search without
    its haystack)."""

    def why_not(self, kind: str, task: str) -> str | None:
        """Why mode ``kind`` is refused on ``task``; None when it is supported."""
        if kind == "full":
            return None
        return self.refused.get(kind) or self.refused_tasks.get(kind, {}).get(task)


@dataclass(frozen=True)
class Benchmark:
    """Everything lceval knows about one paper, registered under its key."""

    key: str
    """lifbench, longgenbench, ruler, manyifeval, ..."""
    title: str
    """Paper title and authors, short."""
    tasks: tuple[str, ...]
    """Task codes as the paper writes them."""
    build: Callable[..., BuildResult]
    """The builder, ``build(params)`` or with :attr:`selects` ``build(params, *, select=None)``
    (see the module docstring)."""
    gold: Mapping[str, type[Gold]]
    """Task code -> its Gold dataclass (``"*"`` for one type shared by every task)."""
    scorers: Mapping[str, ScorerSpec]
    """Named scorers; the first is the default."""
    report: Callable[..., dict[str, Any]]
    """The reporter (see the module docstring)."""
    notebooks: tuple[str, ...] = ()
    """Notebooks (file names under notebooks/) that belong to this benchmark."""
    details_file: str | None = None
    """File name (in the run folder) for per-item rows of Judgement.details, if any."""
    headline: Callable[..., Any] | None = None
    """``headline(scores, samples) -> lceval.metrics.Headline``: the benchmark's headline metric
    over its default scorer's scores (``lceval compare``); None: the mean task score."""
    metrics: Callable[..., Any] | None = None
    """``metrics(scores, samples) -> DataFrame`` (columns model, metric, unit, estimate, low,
    high, n): numbers shown beside the headline in results.json's ``metrics`` and
    ``lceval score``'s summary (ManyIFEval: IFEval's four pooled accuracies); None: none."""
    importers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Name -> ``import(path, run_id, *, root, force) -> RunDir``: turns the paper's official
    prediction files into a run folder (``lceval import <key> PATH``); the first is used."""
    report_scorers: tuple[str, ...] = ()
    """Scorers whose rows the reporter reads together (L-Eval: its n-gram scorer and its judge);
    empty: the default scorer alone."""
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Name -> a function of the paper's that a cross-paper study (L-Eval's NTK sweep,
    LongGenBench's RULER correlation) calls, e.g. RULER's ``"tables"`` (per-model scores per
    length) or its ``"leaderboard"`` (the README's published numbers), or a notebook calls
    (LIFBench's ``"summary_tables"``): studies and notebooks reach a benchmark through
    :mod:`lceval.benchmarks.registry` and :meth:`function`, never by module path."""
    helpers: Mapping[str, str] = field(default_factory=dict)
    """Name -> ``"package.module"``: the paper's modules its notebooks read beyond the run stages
    (CIF-Bench's ``data`` writes the demo dataset, L-Eval's ``ntk`` plans the NTK sweep), reached
    as ``lceval.notebook.get_benchmark(key).helper(name)`` and imported when asked for, so a
    notebook names no module path of a paper's (:meth:`helper`)."""
    context: ContextModes | None = None
    """Which context modes its samples can be answered in (:class:`ContextModes`); None: not
    declared (only ``full``; ``lceval infer -o context=none`` refuses it in one line)."""
    params: str | None = None
    """The builder's params schema, ``"module:Config"`` (a pydantic model read by
    :func:`lceval.params.parse`, its JSON Schema in ``lceval schema``'s), imported only when
    asked for (:meth:`params_schema`)."""
    user_data: str | None = None
    """What data the paper's setting reads that the user downloads, and its params key (L-Eval:
    ``"the L-Eval data folder, LEval-data (data_path)"``), shown by ``lceval list``; None: the
    builder generates or ships everything."""

    sections: tuple[str, ...] = ()
    """Further sections of its notebooks' params files that the paper's code reads,
    ``"module:Class"`` each (a :class:`lceval.params.Declared` model; ManyIFEval's refinement,
    CIF-Bench's variant generation): the builder accepts their keys, the notebook's JSON Schema
    types them."""
    studies: Mapping[str, str] = field(default_factory=dict)
    """Report file prefix -> ``"package.module"`` of a study of the paper's that writes report
    files of its own (L-Eval's ``ntk``): report/index.html files them under the module's
    ``CAPTIONS``, so the report wing names no paper's module."""
    strata: tuple[str, ...] = ("length", "scenario", "expression_id", "variable_id")
    """The grouping fields ``--limit N`` spreads each task's N samples over, outermost first
    (a Sample attribute, else a key of its ``meta``; :func:`lceval.run.selection.per_task`)."""

    selects: bool = False
    """Whether the builder takes ``select`` (:data:`Select`) and builds only the samples it
    names: a ``--limit`` build then makes only what will be answered (RULER's haystacks,
    LIFBench's contexts); otherwise the whole grid is built and the draw keeps its part."""

    def params_schema(self) -> type[BaseModel] | None:
        """The builder's params model (None: not declared).

        Raises:
            LcevalError: the declared ``"module:Class"`` cannot be imported.
        """
        return None if self.params is None else self._model(self.params)

    def notebook_sections(self) -> list[type[BaseModel]]:
        """The builder's params model and the further :attr:`sections`, in that order."""
        own = [self.params] if self.params is not None else []
        return [self._model(target) for target in (*own, *self.sections)]

    def _model(self, target: str) -> type[BaseModel]:
        module, _, name = target.partition(":")
        try:
            model: type[BaseModel] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise LcevalError(f"{self.key}: params schema {target} not found: {exc}") from None
        return model

    def function(self, name: str) -> Callable[..., Any]:
        """The declared function ``name`` (:attr:`functions`).

        Raises:
            LcevalError: the benchmark declares no such function; the message lists them.
        """
        if name not in self.functions:
            known = ", ".join(self.functions) or "none"
            raise LcevalError(f"benchmark {self.key} has no function {name!r}; it has: {known}")
        return self.functions[name]

    def helper(self, name: str) -> ModuleType:
        """The paper's module declared as helper ``name`` (:attr:`helpers`), imported now.

        Raises:
            LcevalError: the benchmark declares no such helper; the message lists them.
        """
        if name not in self.helpers:
            known = ", ".join(self.helpers) or "none"
            raise LcevalError(f"benchmark {self.key} has no helper {name!r}; it has: {known}")
        return importlib.import_module(self.helpers[name])

    @property
    def default_scorer(self) -> str:
        """The default scorer's name (the first of ``scorers``)."""
        return next(iter(self.scorers))

    def scores_for(
        self, scores: pd.DataFrame, scorer: str | None = None, *, report: bool = False
    ) -> tuple[pd.DataFrame, tuple[str, ...]]:
        """This benchmark's rows of a scores table (every scorer's rows), for one scorer.

        Args:
            scores: scores.parquet as read (``RunDir.read_scores``); columns of ``Score``.
            scorer: a scorer of this benchmark; None: the default scorer (with ``report``, the
                ``report_scorers``). When none of the default's rows exist and the table holds
                exactly one scorer of this benchmark, that one is read (a run scored only with
                a variant).
            report: read every scorer the reporter combines (``report_scorers``).

        Returns:
            The rows (a subset of ``scores``) and the scorer names they were selected by.

        Raises:
            LcevalError: ``scorer`` is not a scorer of this benchmark.
        """
        mine = scores[scores["benchmark"] == self.key]
        if scorer is not None:
            self.scorer(scorer)
            names: tuple[str, ...] = (scorer,)
        else:
            names = (self.report_scorers if report else ()) or (self.default_scorer,)
            present = sorted(set(mine["scorer"].astype(str)))
            if present and not set(names) & set(present) and len(present) == 1:
                names = (present[0],)
        return mine[mine["scorer"].isin(names)], names

    def scorer(self, name: str | None = None) -> ScorerSpec:
        """The named scorer (default: the first).

        Raises:
            LcevalError: unknown name; the message lists the choices.
        """
        if name is None:
            return next(iter(self.scorers.values()))
        if name not in self.scorers:
            raise LcevalError(
                f"benchmark {self.key} has no scorer {name!r}; choose one of "
                f"{', '.join(self.scorers)}"
            )
        return self.scorers[name]

    def gold_type(self, task: str) -> type[Gold] | None:
        """The Gold dataclass for ``task`` (None: the benchmark keeps no typed gold for it)."""
        return self.gold.get(task, self.gold.get("*"))

    def load_samples(self, samples: Iterable[Sample]) -> list[Sample]:
        """This benchmark's ``samples`` with typed gold (:meth:`parse_gold`); the loader a
        benchmark's own modules use (``lceval.benchmarks.registry.load_samples`` does the same for a
        run holding several benchmarks).

        Raises:
            LcevalError: a sample of another benchmark, or a gold that does not parse (names the
                sample and the field).
        """
        out = []
        for s in samples:
            if s.benchmark != self.key:
                raise LcevalError(f"sample {s.id} is a {s.benchmark} sample, not {self.key}")
            out.append(self.parse_gold(s))
        return out

    def parse_gold(self, sample: Sample) -> Sample:
        """``sample`` with its gold dict parsed into the task's Gold dataclass.

        Raises:
            LcevalError: the gold does not match the task's schema (names sample and field).
        """
        if isinstance(sample.gold, Gold):
            return sample
        cls = self.gold_type(sample.task)
        if cls is None:
            raise LcevalError(f"sample {sample.id}: {self.key} has no task {sample.task!r}")
        try:
            gold = cls.from_dict(sample.gold)
        except ValueError as exc:
            raise LcevalError(f"sample {sample.id}: bad gold: {exc}") from None
        return _replace(sample, gold=gold)


def _replace(sample: Sample, **changes: Any) -> Sample:
    return dataclasses.replace(sample, **changes)


def failed_generation(response: Response) -> Judgement:
    """NaN judgement for a response whose generation failed (``finish_reason == "error"``) or
    that has no answer (the thinking did not end within its budget).

    The explanation carries the backend's error, or ``"no answer after N thinking tokens"``, so
    reports can say why a sample has no score.
    """
    reason = response.no_answer_reason()
    if reason is not None:
        return Judgement(value=math.nan, explanation=reason)
    return Judgement(value=math.nan, explanation=f"generation failed: {response.error}")
