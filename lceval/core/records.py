"""The records every stage passes on, as frozen dataclasses: Context, Sample, Response, Score,
RunMeta (DEVELOPING.md, "Records and the data flow"). Stages join by ``sample_id``; mapping
fields hold plain JSON."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

from pydantic import TypeAdapter, ValidationError

FinishReason = Literal["stop", "length", "error", "content_filter"]

T = TypeVar("T")


@dataclass(frozen=True)
class Context:
    """A long input X, stored once per run and referenced by id from many samples."""

    id: str
    """Unique within a run (e.g. ``"lifbench/list/4k/0"``)."""
    text: str
    n_tokens: int
    """Length of ``text`` in tokens of ``encoding`` (``"o200k_base"`` or ``"cl100k_base"``)."""
    encoding: str
    source: str = ""
    """Corpus name or path, for run.json provenance."""


@dataclass(frozen=True)
class Sample:
    """One evaluation item: prompt parts, the gold its scorer needs, and grouping fields.

    The user turn is ``description + context.text + instruction`` joined by ``joiner`` (empty parts
    skipped); backends right-truncate only the context to fit (LIFBench Sec. 5.1).
    """

    id: str
    """Unique within a run; the join key for responses and scores."""
    benchmark: str
    task: str
    """Task code as the paper writes it (LSI, OR, niah_single_1, ...)."""
    instruction: str
    """The instruction I, placed after the context."""
    context_id: str | None = None
    """The Context placed between description and instruction (None: no context)."""
    description: str = ""
    """Scenario description D, placed before the context."""
    system: str | None = None
    """System message (used when the chat template accepts one)."""
    history: tuple[Mapping[str, str], ...] = ()
    """Earlier chat turns ({role, content}) before the final user turn (ManyIFEval Sec. 5)."""
    assistant_prefix: str = ""
    """Text the assistant turn starts with; generation continues from it (LongGenBench prefix)."""
    joiner: str = "\n\n"
    max_new_tokens: int = 512
    """Generation budget in tokens (tasks differ: LIFBench List 100, MultiDoc 4096, ...)."""
    stop: tuple[str, ...] = ()
    """The generation ends before the first of these."""
    gold: Any = field(default_factory=dict)
    """The answer key: the task's frozen :class:`Gold` once loaded through the registry, a plain
    dict in the JSON files."""
    scenario: str = ""
    """Scenario (LIFBench List / MultiDoc / OneDoc; LongGenBench Diary / Menu ...)."""
    length: int | None = None
    """Length interval of the context in tokens (e.g. 3072 for LIFBench's "4k"), if any."""
    expression_id: int | None = None
    """Which rewrite of the instruction template was used (IFS expression perspective)."""
    variable_id: int | None = None
    """Which draw from the task's variable space was used (IFS variable perspective)."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Further typed-by-convention grouping fields (e.g. ``n_instructions`` for ManyIFEval)."""


@dataclass(frozen=True)
class Gold:
    """Base of every benchmark's per-task answer key (``lceval.benchmarks.<key>.gold``): frozen
    dataclasses of JSON types, parsed and type-checked once when samples load."""

    @classmethod
    def from_dict(cls: type[G], data: Mapping[str, Any]) -> G:
        """Parse the JSON form (unknown keys ignored, lists become tuples).

        Raises:
            ValueError: a required field is missing or has the wrong type.
        """
        return from_dict(cls, data)


G = TypeVar("G", bound=Gold)


@dataclass(frozen=True)
class Judgement:
    """What a scorer returns for one response; the pipeline adds sample id, model, benchmark,
    task and scorer to make a :class:`Score`."""

    value: float
    """Normalised score in 0..1, or NaN when it cannot be computed (``explanation`` says why)."""
    parts: Mapping[str, float] = field(default_factory=dict)
    """Per-item scores in the item's own points (e.g. ARS rubric items, CR/STIC counts)."""
    points: Mapping[str, float] = field(default_factory=dict)
    """Maximum points of each item in ``parts``."""
    explanation: str = ""
    details: tuple[Mapping[str, Any], ...] = ()
    """Optional per-item rows, written to the benchmark's details file."""

    def __post_init__(self) -> None:
        if not math.isnan(self.value) and not 0.0 <= self.value <= 1.0:
            raise ValueError(f"Judgement.value must be in [0, 1] or NaN, got {self.value!r}")


MAX_TOKEN_COUNT = 10**12
"""Largest token count a Response holds (larger or negative ones are refused when read)."""


@dataclass(frozen=True)
class Response:
    """A model's answer to one Sample under one generation config."""

    sample_id: str
    model: str
    """As given to the backend (path, hub id or alias)."""
    text: str
    """The answer without prompt, ``assistant_prefix`` or thinking; every scorer reads it alone."""
    config_hash: str
    """``lceval.models.base.GenerationConfig.hash``."""
    prompt_tokens: int = 0
    """Prompt length in the model's own tokens, after any truncation."""
    completion_tokens: int = 0
    finish_reason: FinishReason = "stop"
    """``length``: the budget was reached."""
    truncated_tokens: int = 0
    """Context tokens dropped to fit the model's window (0 when the prompt fit)."""
    latency_s: float = 0.0
    """Wall seconds for this sample (a batch's time divided by its size)."""
    error: str | None = None
    """One-line error when ``finish_reason == "error"``."""
    sample_hash: str | None = None
    """:func:`sample_hash` of the sample it answers; None (older or imported responses) matches
    any sample of its id."""
    reasoning: str | None = None
    """The model's thinking, kept apart from :attr:`text` and never scored; None if none."""
    reasoning_tokens: int = 0
    """Tokens of :attr:`reasoning` (the model's own tokens; counted in ``completion_tokens``)."""
    thinking_unfinished: bool = False
    """True when the thinking budget ran out before an answer: scorers give NaN
    (:meth:`no_answer_reason`)."""

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "truncated_tokens", "reasoning_tokens"):
            n = getattr(self, name)
            if isinstance(n, int) and not 0 <= n <= MAX_TOKEN_COUNT:
                raise ValueError(f"Response.{name}: {n:.3g} is not a token count (0..1e12)")

    def answers(self, current: str | None) -> bool:
        """True if this response answers the sample whose :func:`sample_hash` is ``current``."""
        return self.sample_hash is None or current is None or self.sample_hash == current

    def no_answer_reason(self) -> str | None:
        """``"no answer after N thinking tokens"`` when the thinking never ended, else None."""
        if not self.thinking_unfinished:
            return None
        return f"no answer after {self.reasoning_tokens} thinking tokens"


_GROUPING = ("id", "scenario", "length", "expression_id", "variable_id", "meta")
SAMPLE_HASH_FIELDS = tuple(f.name for f in dataclasses.fields(Sample) if f.name not in _GROUPING)
"""The Sample fields :func:`sample_hash` covers: prompt, budget and gold; the id and grouping
fields are left out (relabelling does not change what an answer answers)."""


def sample_hashes(samples: Iterable[Sample], contexts: Mapping[str, Context]) -> dict[str, str]:
    """Sample id -> :func:`sample_hash` of the sample with its context (from ``contexts``)."""
    return {
        s.id: sample_hash(s, contexts.get(s.context_id) if s.context_id else None) for s in samples
    }


def sample_hash(sample: Sample, context: Context | str | None = None) -> str:
    """16 hex digits of the SHA-256 of canonical JSON of :data:`SAMPLE_HASH_FIELDS` and the
    context text: ties a Response to the exact sample it answers (resume and scoring). A stored
    gold dict and its parsed :class:`Gold` hash alike."""
    gold = sample.gold
    data = {f: getattr(sample, f) for f in SAMPLE_HASH_FIELDS}
    data["gold"] = dataclasses.asdict(gold) if isinstance(gold, Gold) else gold
    data["context"] = context.text if isinstance(context, Context) else context
    text = json.dumps(_canonical(data), sort_keys=True, ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _canonical(dataclasses.asdict(value))
    return value


@dataclass(frozen=True)
class Score:
    """The score of one Response by one scorer."""

    sample_id: str
    model: str
    benchmark: str
    task: str
    scorer: str
    scorer_version: str
    value: float
    """Normalised score in 0..1, or NaN when it cannot be computed (``explanation`` says why)."""
    parts: Mapping[str, float] = field(default_factory=dict)
    """Per-item scores in the item's own points (e.g. ARS rubric items)."""
    points: Mapping[str, float] = field(default_factory=dict)
    """Maximum points of each item in ``parts``."""
    explanation: str = ""

    def __post_init__(self) -> None:
        if not math.isnan(self.value) and not 0.0 <= self.value <= 1.0:
            raise ValueError(f"Score.value must be in [0, 1] or NaN, got {self.value!r}")


@dataclass(frozen=True)
class RunMeta:
    """What run.json records about a run: enough to reproduce and to audit it."""

    run_id: str
    created: str
    """ISO-8601 UTC time the run folder was created."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """As loaded from the params file and overrides."""
    seed: int = 0
    versions: Mapping[str, str] = field(default_factory=dict)
    """Versions of lceval and its key dependencies."""
    sources: Mapping[str, Any] = field(default_factory=dict)
    """Data sources used (corpus names, paths, sha256), per benchmark."""
    models: Mapping[str, Any] = field(default_factory=dict)
    """Per model name: backend, resolved path or hub id, revision or file hash."""
    git_commit: str | None = None
    encoding: str | None = None
    """The tiktoken encoding of data lengths."""
    inference: Mapping[str, Any] = field(default_factory=dict)
    """Inference settings the build params declare (``truncate``, ``max_new_tokens``)."""
    plan: Mapping[str, Any] = field(default_factory=dict)
    """The run's size and estimated cost when last planned (``lceval.run.plan.Plan.summary``)."""
    selection: Mapping[str, Any] = field(default_factory=dict)
    """What ``--limit N`` kept of the built grid (``lceval.run.selection.describe``: limit per
    task, seed, strata, grid and kept counts); empty: every built sample."""


def to_dict(record: Any) -> dict[str, Any]:
    """Plain-JSON dict of a record (tuples become lists)."""
    return dataclasses.asdict(record)


def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Build record ``cls`` from a dict through pydantic's strict JSON mode: unknown keys ignored,
    an int field takes integers only, a float field any number (NaN too), lists become tuples,
    nested :class:`Gold` parsed.

    Raises:
        ValueError: not a mapping, a field missing or of the wrong type (one line naming the
            first field, e.g. ``Response.prompt_tokens: expected an integer``).
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object for {cls.__name__}, got {type(data).__name__}")
    try:
        text = json.dumps(data, ensure_ascii=False, default=_plain)
        return _adapter(cast(Any, cls)).validate_json(text, strict=True)
    except ValidationError as exc:
        raise ValueError(_one_error(cls.__name__, exc.errors()[0])) from None
    except (TypeError, ValueError) as exc:  # not JSON values; pydantic's own ValueErrors
        raise ValueError(f"cannot build {cls.__name__}: {exc}") from None


@functools.cache
def _adapter(cls: Any) -> TypeAdapter[Any]:  # a record class (hashable; mypy's type[T] is not)
    return TypeAdapter(cls)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_EXPECTED = {
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "string_type": "expected str",
    "bool_type": "expected bool",
    "dict_type": "expected a mapping",
    "tuple_type": "expected a list",
    "list_type": "expected a list",
    "none_required": "expected null",
}


def _where(name: str, loc: tuple[Any, ...]) -> str:
    return name + "".join(
        f"[{p}]" if isinstance(p, int) else f".{p}" if i == 0 else f"[{p!r}]"
        for i, p in enumerate(loc)
    )


def _one_error(name: str, error: Mapping[str, Any]) -> str:
    """One pydantic error as one line: ``Sample.history[0]['role']: expected str, got int``."""
    kind, got, loc, ctx = error["type"], error.get("input"), error["loc"], error.get("ctx", {})
    where = _where(name, loc)
    if kind == "missing":
        return f"{_where(name, loc[:-1])}: missing field {loc[-1]!r}"
    if kind == "value_error":
        return f"cannot build {name}: {ctx['error']}"
    if kind == "literal_error":
        return f"{where}: expected one of {ctx['expected']}, got {got!r:.60}"
    if kind in ("too_long", "too_short"):  # a fixed-length tuple
        want = ctx.get("max_length", ctx.get("min_length"))
        return f"{where}: expected {want} items, got {ctx.get('actual_length')}"
    if kind in _EXPECTED:
        return f"{where}: {_EXPECTED[kind]}, got {type(got).__name__}"
    return f"{where}: {error['msg']}"
