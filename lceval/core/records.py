"""The records every lceval stage passes on: Context, Sample, Response, Score and RunMeta.

Typed, frozen dataclasses and nothing else (see the repository's STYLE.md, "Data flow"):

    Sample (+ its Context, stored once) -> prompt via the model's chat template -> Response
    -> Score -> metrics -> tables and figures.

Stages join by ``sample_id``, never by prompt text. Mapping-valued fields hold plain JSON types
(str, int, float, bool, None, lists and dicts of them) so every record round-trips through JSON.
"""

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
    """Stable id, unique within a run (e.g. ``"lifbench/list/4k/0"``)."""
    text: str
    """The full context text exactly as it is placed in the prompt."""
    n_tokens: int
    """Length of ``text`` in tokens of ``encoding``."""
    encoding: str
    """tiktoken encoding used to count ``n_tokens`` (``"o200k_base"`` or ``"cl100k_base"``)."""
    source: str = ""
    """Where the text came from (corpus name or path), for run.json provenance."""


@dataclass(frozen=True)
class Sample:
    """One evaluation item: the prompt parts, the gold data its scorer needs, and grouping fields.

    The user turn of the prompt is ``description + context.text + instruction`` (empty parts are
    skipped, the rest joined by ``joiner``). Backends right-truncate only the context when the
    prompt does not fit the model's window, keeping description and instruction (LIFBench
    Sec. 5.1).
    """

    id: str
    """Unique sample id within a run; the join key for responses and scores."""
    benchmark: str
    """Benchmark key: lifbench, longgenbench, ruler, manyifeval, leval or cifbench."""
    task: str
    """Task code as the paper writes it (LSI, OR, niah_single_1, ...)."""
    instruction: str
    """The instruction I, placed after the context."""
    context_id: str | None = None
    """Id of the Context placed between description and instruction, or None for no context."""
    description: str = ""
    """Scenario description D, placed before the context."""
    system: str | None = None
    """Optional system message (only used when the chat template accepts one)."""
    history: tuple[Mapping[str, str], ...] = ()
    """Earlier chat turns ({"role", "content"}) placed before the final user turn (multi-turn
    refinement, e.g. ManyIFEval Sec. 5)."""
    assistant_prefix: str = ""
    """Text the assistant turn starts with; generation continues from it (LongGenBench prefix)."""
    joiner: str = "\n\n"
    """Separator between description, context and instruction."""
    max_new_tokens: int = 512
    """Generation budget in tokens (tasks differ: LIFBench List 100, MultiDoc 4096, ...)."""
    stop: tuple[str, ...] = ()
    """Stop strings; the generation ends before the first one."""
    gold: Any = field(default_factory=dict)
    """The answer key its scorer needs: a per-task frozen :class:`Gold` dataclass from
    ``lceval.benchmarks.<key>.gold`` once samples are loaded through the registry
    (``lceval.registry.load_samples``), a plain dict in the JSON files (same field names)."""
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
    """Base class of every benchmark's per-task answer key (``lceval.benchmarks.<key>.gold``).

    Subclasses are frozen dataclasses whose fields are plain JSON types, tuples of them, or
    mappings of them; each field is documented with its unit. :meth:`from_dict` parses and
    type-checks the JSON form once, when samples load; scorers then read attributes and never
    re-validate.
    """

    @classmethod
    def from_dict(cls: type[G], data: Mapping[str, Any]) -> G:
        """Parse the JSON form (unknown keys are ignored; lists become tuples).

        Raises:
            ValueError: a required field is missing or a field has the wrong type.
        """
        return from_dict(cls, data)


G = TypeVar("G", bound=Gold)


@dataclass(frozen=True)
class Judgement:
    """What a scorer returns for one response; the pipeline turns it into a :class:`Score` by
    attaching the sample id, model, benchmark, task, scorer name and scorer version."""

    value: float
    """Normalised score in 0..1, or NaN when it cannot be computed (``explanation`` says why)."""
    parts: Mapping[str, float] = field(default_factory=dict)
    """Per-item scores in the item's own points (e.g. ARS rubric items, CR/STIC counts)."""
    points: Mapping[str, float] = field(default_factory=dict)
    """Maximum points of each item in ``parts``."""
    explanation: str = ""
    details: tuple[Mapping[str, Any], ...] = ()
    """Optional per-item rows (e.g. LongGenBench's per-check verdicts), written by the pipeline
    to the benchmark's details file with ``sample_id`` and ``model`` added."""

    def __post_init__(self) -> None:
        if not math.isnan(self.value) and not 0.0 <= self.value <= 1.0:
            raise ValueError(f"Judgement.value must be in [0, 1] or NaN, got {self.value!r}")


MAX_TOKEN_COUNT = 10**12
"""The largest token count a Response holds: larger or negative counts (a hand-edited or hostile
responses.jsonl) are refused when read, never passed on to pandas' 64-bit integers."""


@dataclass(frozen=True)
class Response:
    """A model's answer to one Sample under one generation config."""

    sample_id: str
    model: str
    """Model name as given to the backend (path, hub id or alias)."""
    text: str
    """The answer: generated text without the prompt, without ``assistant_prefix`` and without
    the model's thinking (:attr:`reasoning`). Every scorer reads this field alone."""
    config_hash: str
    """Hash of the generation config (see ``lceval.models.base.GenerationConfig.hash``)."""
    prompt_tokens: int = 0
    """Prompt length in the model's own tokens, after any truncation."""
    completion_tokens: int = 0
    """Generated tokens."""
    finish_reason: FinishReason = "stop"
    """``stop`` (EOS or stop string), ``length`` (budget reached), ``error``, or
    ``content_filter`` (an API's moderation cut the answer; the text it kept is scored)."""
    truncated_tokens: int = 0
    """Context tokens dropped to fit the model's window (0 when the prompt fit)."""
    latency_s: float = 0.0
    """Wall seconds attributed to this sample (batch time divided by batch size for batches)."""
    error: str | None = None
    """One-line error when ``finish_reason == "error"``."""
    sample_hash: str | None = None
    """:func:`sample_hash` of the sample (and context) it answers, stamped by
    ``lceval.models.generate.generate``; None in responses written before it existed or imported
    from elsewhere, which are taken as answering the current sample (see :meth:`answers`)."""
    reasoning: str | None = None
    """The model's thinking before its answer (``<think>`` block, an analysis channel, or the
    ``reasoning_content`` / ``reasoning`` field of an OpenAI-compatible server), kept apart
    from :attr:`text` and never scored; None for a model that does not think (and in responses
    written before the field existed)."""
    reasoning_tokens: int = 0
    """Tokens of :attr:`reasoning` (the model's own tokens; counted in ``completion_tokens``)."""
    thinking_unfinished: bool = False
    """True when the model was still thinking when its thinking budget ran out: it gave no answer
    (``text`` is empty) and every scorer gives NaN with the reason
    ``"no answer after N thinking tokens"`` (:meth:`no_answer_reason`)."""

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "truncated_tokens", "reasoning_tokens"):
            n = getattr(self, name)
            if isinstance(n, int) and not 0 <= n <= MAX_TOKEN_COUNT:
                raise ValueError(f"Response.{name}: {n:.3g} is not a token count (0..1e12)")

    def answers(self, current: str | None) -> bool:
        """True if this response answers the sample whose :func:`sample_hash` is ``current``.

        A response without a stored hash (older responses.jsonl files, imported predictions)
        matches any sample of its id: such runs load, resume and score as before.
        """
        return self.sample_hash is None or current is None or self.sample_hash == current

    def no_answer_reason(self) -> str | None:
        """``"no answer after N thinking tokens"`` when the thinking never ended, else None."""
        if not self.thinking_unfinished:
            return None
        return f"no answer after {self.reasoning_tokens} thinking tokens"


SAMPLE_HASH_FIELDS = (
    "benchmark",
    "task",
    "instruction",
    "context_id",
    "description",
    "system",
    "history",
    "assistant_prefix",
    "joiner",
    "max_new_tokens",
    "stop",
    "gold",
)
"""The Sample fields :func:`sample_hash` covers: what goes into the prompt and the generation
budget, and the answer key. Grouping fields (scenario, length, expression and variable ids,
meta) are left out: relabelling a sample does not change what its answer answers."""


def sample_hashes(samples: Iterable[Sample], contexts: Mapping[str, Context]) -> dict[str, str]:
    """Sample id -> :func:`sample_hash` of the sample with its context (from ``contexts``)."""
    return {
        s.id: sample_hash(s, contexts.get(s.context_id) if s.context_id else None) for s in samples
    }


def sample_hash(sample: Sample, context: Context | str | None = None) -> str:
    """A short stable hash of one sample as a prompt and an answer key: 16 hex digits of the
    SHA-256 of canonical JSON of :data:`SAMPLE_HASH_FIELDS` and the context text.

    Ties a stored Response to the exact sample it answers, so a rebuilt run (another seed, new
    data) never pairs old answers with changed prompts or gold (resume key and scoring). The gold
    may be the stored dict or the parsed :class:`Gold`: both give the same hash (tuples and lists
    alike, integral floats as integers, keys sorted).

    Args:
        sample: the sample.
        context: its Context (or the context's text), None when it has none.
    """
    gold = sample.gold
    data = {f: getattr(sample, f) for f in SAMPLE_HASH_FIELDS}
    data["gold"] = dataclasses.asdict(gold) if isinstance(gold, Gold) else gold
    data["context"] = context.text if isinstance(context, Context) else context
    text = json.dumps(_canonical(data), sort_keys=True, ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def _canonical(value: Any) -> Any:
    """JSON-ready ``value`` with one spelling per meaning (tuples as lists, 2.0 as 2)."""
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
    """Scorer name, e.g. ``"lifbench.ars"``."""
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
    """The params the run was built with (as loaded from the params file and overrides)."""
    seed: int = 0
    versions: Mapping[str, str] = field(default_factory=dict)
    """Versions of lceval and its key dependencies."""
    sources: Mapping[str, Any] = field(default_factory=dict)
    """Data sources actually used (corpus names, paths, sha256), per benchmark."""
    models: Mapping[str, Any] = field(default_factory=dict)
    """Per model name: backend, resolved path or hub id, revision or file hash."""
    git_commit: str | None = None
    encoding: str | None = None
    """tiktoken encoding used for data lengths."""
    inference: Mapping[str, Any] = field(default_factory=dict)
    """Inference settings the build params declare (``truncate``, ``max_new_tokens``), the
    defaults of ``lceval infer`` and ``lceval.run.infer`` on this run."""
    plan: Mapping[str, Any] = field(default_factory=dict)
    """The run's size and estimated cost when last planned (``lceval.run.plan.Plan.summary``:
    samples,
    prompt, unique and budget tokens, GPU hours per model size and GPU)."""


def to_dict(record: Any) -> dict[str, Any]:
    """Plain-JSON dict of a record (tuples become lists)."""
    return dataclasses.asdict(record)


def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Build record ``cls`` from a dict: unknown keys ignored, each field type-checked against
    its annotation as JSON would hold it (pydantic's strict JSON mode: an integer field takes an
    integer only, a float field any number, NaN included; lists become tuples where the field is
    a tuple; a nested :class:`Gold` is parsed too).

    Raises:
        ValueError: ``data`` is not a mapping, a required field is missing, or a field has the
            wrong type (one line naming the first field, e.g. ``Response.prompt_tokens:
            expected an integer``).
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object for {cls.__name__}, got {type(data).__name__}")
    try:
        text = json.dumps(data, ensure_ascii=False, default=_plain)
        record: T = _adapter(cast(Any, cls)).validate_json(text, strict=True)
        return record
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        errors = exc.errors() if isinstance(exc, ValidationError) else []
        if not errors:
            raise ValueError(f"cannot build {cls.__name__}: {exc}") from None
        raise ValueError(_one_error(cls.__name__, errors[0])) from None


@functools.cache
def _adapter(cls: Any) -> TypeAdapter[Any]:  # a record class (hashable; mypy's type[T] is not)
    return TypeAdapter(cls)


def _plain(value: Any) -> Any:
    """JSON for what ``json`` does not know: a parsed Gold (or any dataclass) as its dict."""
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
    """``Sample.history[0]['role']`` for loc ``('history', 0, 'role')``."""
    parts = [
        f"[{p}]" if isinstance(p, int) else f".{p}" if i == 0 else f"[{p!r}]"
        for i, p in enumerate(loc)
    ]
    return name + "".join(parts)


def _one_error(name: str, error: Mapping[str, Any]) -> str:
    """One pydantic error as lceval's line: ``Sample.history[0]['role']: expected str, got int``."""
    kind, got, loc = error["type"], error.get("input"), error["loc"]
    if kind == "missing":
        return f"{_where(name, loc[:-1])}: missing field {loc[-1]!r}"
    where = _where(name, loc)
    if kind == "literal_error":
        return f"{where}: expected one of {error['ctx']['expected']}, got {got!r:.60}"
    if kind == "value_error":
        return f"cannot build {name}: {str(error['ctx']['error'])}"
    if kind in ("too_long", "too_short"):  # a fixed-length tuple
        ctx = error["ctx"]
        want = ctx.get("max_length", ctx.get("min_length"))
        return f"{where}: expected {want} items, got {ctx.get('actual_length')}"
    if kind in _EXPECTED:
        return f"{where}: {_EXPECTED[kind]}, got {type(got).__name__}"
    return f"{where}: {error['msg']}"
