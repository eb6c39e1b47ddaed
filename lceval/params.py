"""Declared params: one routine that turns a params mapping into a frozen dataclass.

A notebook's params file (``params/<notebook>/{smoke,full}.yaml``) has sections: the builder's
params (each benchmark's ``build.py`` declares them as a frozen dataclass), the inference params
(:class:`Inference`, shared by every notebook that answers samples), the judge params
(:class:`Judge`) and the scoring params (:class:`Scoring`). :func:`parse` reads one section and
accepts the keys of the other sections it is told about, so ``lceval build KEY --params FILE``
takes a notebook's file as it is with no hand-kept list of ignored keys.

Each field names its validator in its metadata (``field(metadata=check(...))``); the shared
validators below cover tasks, lengths, integers, booleans, encodings and paths. Every error is
one :class:`~lceval.errors.LcevalError` line naming the section, the key, what it accepts and the
value given: an unknown key names its close matches, an old spelling (:data:`RENAMED`) names the
new one.

Spelling (one per concept):
    - ``max_new_tokens``: the answer budget in tokens (the samples' ``max_new_tokens`` when a
      builder declares it, the inference cap when only the notebook does). A second model role
      in the same notebook gets ``<role>_max_new_tokens``: ``judge_max_new_tokens`` (an LLM
      judge), ``variants_max_new_tokens`` (CIF-Bench's model that proposes instruction
      variants), ``reasoning_max_new_tokens`` (the NTK sweep's arithmetic answers beside its
      retrieval answers).
    - ``encoding``: the tokenizer that measures lengths (a tiktoken encoding name, or for RULER
      also a local Hugging Face tokenizer folder).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lceval.errors import LcevalError, one_line
from lceval.tokens import ENCODINGS

T = TypeVar("T")

Validator = Callable[[str, Any], Any]
"""``(key, value) -> normalised value``; raises :class:`Invalid` with what the key accepts."""

NOTEBOOK_PARAMS = frozenset({"run_id", "outputs_root"})
"""Parameters every notebook takes that no section reads (the run folder's name and root)."""

RENAMED: Mapping[str, str] = {
    "tokenizer": "encoding",
    "infer_max_new_tokens": "max_new_tokens",
    "gen_max_new_tokens": "variants_max_new_tokens",
    "refine_strategy": "refine_strategies",
}
"""Old spelling -> the one spelling now read (refused with a message naming the new one)."""


class Invalid(ValueError):
    """A validator's complaint: what the key accepts (the message is ``"<key> must be ..."``)."""


def check(validator: Validator) -> dict[str, Validator]:
    """Field metadata naming the field's validator: ``field(default=..., metadata=check(v))``."""
    return {"check": validator}


def _got(value: Any) -> str:
    """``got VALUE (type)``, the value's repr cut to 80 characters (a 100 MB value is never
    echoed whole)."""
    text = repr(value)
    if len(text) > 80:
        text = f"{text[:80]}... ({len(text)} characters)"
    return f"got {text} ({type(value).__name__})"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ------------------------------------------------------------------------------ validators
def integer(
    minimum: int | None = None, maximum: int | None = None, optional: bool = False
) -> Validator:
    """An integer in ``minimum..maximum`` (None: unbounded); ``optional``: null allowed."""
    if minimum == 1 and maximum is None:
        what = "a positive integer"
    elif minimum == 0 and maximum is None:
        what = "a non-negative integer"
    elif minimum is not None and maximum is not None:
        what = f"an integer in {minimum}..{maximum}"
    elif minimum is not None:
        what = f"an integer >= {minimum}"
    else:
        what = "an integer"
    what += " or null" if optional else ""

    def v(key: str, value: Any) -> Any:
        if value is None and optional:
            return None
        ok = _is_int(value) and (minimum is None or value >= minimum)
        if not ok or (maximum is not None and value > maximum):
            raise Invalid(f"{key} must be {what}, {_got(value)}")
        return value

    return v


POSITIVE = integer(1)
"""A positive integer."""
POSITIVE_OR_NULL = integer(1, optional=True)
"""A positive integer or null."""
SEED = integer(0)
"""A non-negative integer."""


def boolean(key: str, value: Any) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise Invalid(f"{key} must be true or false, {_got(value)}")
    return value


def one_of(options: Iterable[Any]) -> Validator:
    """One of ``options`` (compared with ``==``)."""
    allowed = tuple(options)

    def v(key: str, value: Any) -> Any:
        if isinstance(value, list | dict) or value not in allowed:
            names = ", ".join(str(o) for o in allowed)
            raise Invalid(f"{key} must be one of {names}, {_got(value)}")
        return value

    return v


ENCODING = one_of(ENCODINGS)
"""A tiktoken encoding name (:data:`lceval.tokens.ENCODINGS`)."""


def text(optional: bool = False) -> Validator:
    """A non-empty string; ``optional``: null allowed."""

    def v(key: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            what = "a non-empty string" + (" or null" if optional else "")
            raise Invalid(f"{key} must be {what}, {_got(value)}")
        return value

    return v


def path(optional: bool = True, many: bool = False) -> Validator:
    """A file or folder path (a string); ``many``: also a list of paths (kept as a tuple)."""

    def v(key: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, str) and value:
            return value
        if many and isinstance(value, list | tuple) and value:
            if all(isinstance(x, str) and x for x in value):
                return tuple(value)
        what = "a path" + (" or a list of paths" if many else "") + (" or null" if optional else "")
        raise Invalid(f"{key} must be {what}, {_got(value)}")

    return v


def mapping(key: str, value: Any) -> dict[str, Any]:
    """A mapping (``{}`` when null)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid(f"{key} must be a mapping, {_got(value)}")
    return dict(value)


def names(
    options: Sequence[str], item: str = "name", null_means_all: bool = True, sort: bool = False
) -> Validator:
    """A non-empty list of ``options`` (a single name counts as a list of one), deduplicated and
    kept as a tuple in the given order (``sort``: in the order of ``options``); null: all of them
    when ``null_means_all``, else null."""
    allowed = tuple(options)

    def v(key: str, value: Any) -> Any:
        if value is None:
            return allowed if null_means_all else None
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not items:
            raise Invalid(f"{key} must be a non-empty list of {item}s, {_got(value)}")
        for x in items:
            if x not in allowed:
                close = difflib.get_close_matches(str(x), allowed, n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise Invalid(
                    f"{key}: unknown {item} {x!r}{hint}; choose from {', '.join(allowed)}"
                )
        out = tuple(dict.fromkeys(items))
        return tuple(o for o in allowed if o in out) if sort else out

    return v


def lengths(
    minimum: int = 1, labels: Mapping[str, int] | None = None, sort: bool = True
) -> Validator:
    """A non-empty list of lengths in tokens (a single one counts), each an integer >=
    ``minimum`` or one of ``labels`` (``"4k"`` -> 4096); deduplicated, sorted unless ``sort`` is
    false. Null stays null (the section's default decides)."""
    label_text = f" or one of {', '.join(labels)}" if labels else ""

    def v(key: str, value: Any) -> Any:
        if value is None:
            return None
        items = [value] if isinstance(value, int | str) else value
        if not isinstance(items, list | tuple) or not items:
            raise Invalid(f"{key} must be a non-empty list of token counts, {_got(value)}")
        out = []
        for x in items:
            if labels and isinstance(x, str) and x in labels:
                out.append(labels[x])
            elif _is_int(x) and x >= minimum:
                out.append(x)
            else:
                raise Invalid(f"{key} must be token counts >= {minimum}{label_text}, {_got(x)}")
        unique = tuple(dict.fromkeys(out))
        return tuple(sorted(unique)) if sort else unique

    return v


# ---------------------------------------------------------------------------- the routine
def _fields(section: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(section) if f.init}


def keys(*sections: type) -> frozenset[str]:
    """The keys the given sections read (dataclass sections, or declared pydantic ones such as
    :class:`InferenceSection`)."""
    out: set[str] = set()
    for s in sections:
        fields = getattr(s, "model_fields", None)
        out.update(fields if isinstance(fields, Mapping) else _fields(s))
    return frozenset(out)


def parse(
    section: type[T],
    params: Mapping[str, Any] | None,
    where: str,
    accept: Iterable[type] = (),
) -> T:
    """Read one section of a params mapping into its frozen dataclass.

    Args:
        section: a dataclass whose fields are the section's keys; a field's default is the key's
            default and its ``metadata["check"]`` (:func:`check`) validates and normalises the
            value. The dataclass's ``__post_init__`` may check one key against another (raise
            :class:`Invalid` there).
        params: the params (None: all defaults).
        where: the section's owner for messages (``"ruler"``, ``"inference"``).
        accept: other sections of the same file (their keys are accepted and not read here), on
            top of :data:`NOTEBOOK_PARAMS`.

    Returns:
        The section, every field validated.

    Raises:
        LcevalError: one line: params not a mapping, an old spelling (names the new one), an
            unknown key (names close matches), or a bad value (names the key, what it accepts and
            the value given).
    """
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise LcevalError(f"{where}: params must be a mapping, got {type(params).__name__}")
    own = _fields(section)
    others = keys(*accept) | NOTEBOOK_PARAMS
    for k in params:
        if k in own or k in others:
            continue
        if k in RENAMED:
            raise LcevalError(f"{where}: {k!r} is now spelled {RENAMED[k]!r}; rename the key")
        close = difflib.get_close_matches(str(k), [*own, *others], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise LcevalError(
            f"{where}: unknown parameter {k!r}{hint} (known: {', '.join(sorted(own))})"
        )
    values: dict[str, Any] = {}
    for name, f in own.items():
        if name in params:
            value = params[name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise LcevalError(f"{where}: {name} is required")
        validator = f.metadata.get("check")
        try:
            values[name] = validator(name, value) if validator else value
        except Invalid as exc:
            raise LcevalError(f"{where}: {exc}") from None
    try:
        return section(**values)
    except Invalid as exc:
        raise LcevalError(f"{where}: {exc}") from None


def _str_list_or_null(key: str, value: Any) -> list[str] | None:
    """Null, or a non-empty list of non-empty strings."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise Invalid(f"{key} must be null or a non-empty list of names, {_got(value)}")
    return list(value)


MAX_PARAMS_BYTES = 16 << 20
"""The largest params file lceval reads (16 MiB; the repository's are a few KiB)."""


def load_params(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a params YAML file (UTF-8, at most :data:`MAX_PARAMS_BYTES`) into a dict.

    A relative path is looked up in the working directory, then in the lceval checkout's root.

    Raises:
        LcevalError: the file is missing, unreadable, not a regular file (a device, a FIFO),
            too large, not UTF-8 (UTF-16 is named as such), not YAML, or not a mapping at top
            level.
    """
    from pathlib import Path

    import yaml

    from lceval.io import project_root, read_bounded

    path = Path(path)
    if not path.is_absolute() and not path.exists():
        top = project_root()
        if top is not None and (top / path).exists():
            path = top / path  # repo-relative paths work from notebooks/ too
    raw = read_bounded(path, "params file", MAX_PARAMS_BYTES)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise LcevalError(f"params file {path} is UTF-16 text; save it as UTF-8")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LcevalError(f"params file {path} is not UTF-8 text (byte {exc.start})") from None
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise LcevalError(f"params file {path} is nested too deeply") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise LcevalError(f"params file {path}: {one_line(exc, 120)}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise LcevalError(f"params file {path} is not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise LcevalError(f"params file {path} must hold a mapping, got {type(data).__name__}")
    return data


# ------------------------------------------------------------------------- shared sections
class Declared(BaseModel):
    """Base of every verb's config: frozen, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class InferenceSection(Declared):
    """The inference section of a params file and ``lceval infer``'s settings, declared once:
    every notebook that answers samples reads these keys, a builder accepts them in its notebook's
    params file (:data:`NOTEBOOK_SECTIONS`), and ``lceval infer`` makes its flags from them.
    Backend names and model entries are checked by the run wing's
    :class:`lceval.run.config.InferConfig`, which adds only those checks (the core knows no
    engine)."""

    run_id: str | None = Field(
        None,
        min_length=1,
        description="the run to answer (see lceval build)",
        json_schema_extra={"positional": True, "nargs": "?"},
    )
    list_options: str | None = Field(
        None,
        description="print every -o option BACKEND takes (hf, vllm, openai) and exit",
        json_schema_extra={"metavar": "BACKEND"},
    )
    backend: str = Field(
        "auto",
        description="auto (default: vllm when it imports and the CPU has native bfloat16 or "
        "a CUDA GPU is present, else hf; says which), hf, vllm or openai",
    )
    model: str | list[Any] | None = Field(
        None,
        description="a path or hub id; repeat for several models, answered one engine at a time "
        "(load, answer, close, next). One model's own backend and options: a YAML mapping, "
        '"{model: ID, backend: vllm, options: {tensor_parallel_size: 2}, name: NAME}" (its '
        "options go over -o, which applies to every model). Default: embedded, the "
        "SmolLM2-135M CPU stand-in",
        json_schema_extra={"action": "append", "metavar": "MODEL"},
    )
    models: list[Any] | None = Field(
        None,
        description="several models (params files): each an id or {model, backend, options, "
        "name}; null: model",
        json_schema_extra={"cli": False},
    )
    truncate: bool | None = Field(
        None,
        description="right-truncate contexts longer than a model's window (LIFBench Sec. 5.1, "
        "L-Eval Sec. 4) instead of stopping before inference (default: what the run's build "
        "params declare, else no)",
        json_schema_extra={"action": "boolean"},
    )
    batch_size: int | None = Field(
        None,
        ge=1,
        description="samples per engine call, flushed to disk after each (default: the "
        "engine's: vllm 256, hf its batch size)",
    )
    limit: int | None = Field(None, ge=1, description="answer only the first N samples")
    tasks: list[str] | None = Field(
        None, min_length=1, description="only these task codes", json_schema_extra={"nargs": "+"}
    )
    max_new_tokens: int | None = Field(
        None,
        ge=1,
        description="cap every sample's answer budget, in tokens (default: what the run's build "
        "params declare, else each sample's own budget)",
    )
    temperature: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="sampling temperature (0: greedy)"
    )
    seed: int = Field(0, ge=0, description="sampling seed")
    backend_options: dict[str, Any] = Field(
        default_factory=dict,
        description="backend option, e.g. device=cuda, tensor_parallel_size=2, base_url=http://...",
        json_schema_extra={"flag": ["-o", "--option"], "kv": True},
    )
    ray_address: str | None = Field(
        None,
        min_length=1,
        description="answer on an existing Ray cluster (auto or HOST:PORT: ray start, KubeRay, "
        "Slurm); each model's -o replicas=N engine replicas there (default: replicas > 1 start a "
        "local cluster)",
        json_schema_extra={"metavar": "auto|HOST:PORT"},
    )

    @field_validator("backend_options", mode="before")
    @classmethod
    def _null_options(cls, v: Any) -> Any:
        return {} if v is None else v

    @model_validator(mode="after")
    def _model_or_models(self) -> Self:
        if self.model is not None and self.models is not None:
            raise ValueError(f"give model or models, not both (model: {self.model!r:.80})")
        return self


@dataclass(frozen=True)
class Judge:
    """An LLM judge's section (notebooks 06, 08, 11): its own backend, model, options and budget,
    passed to the judge scorer through ``lceval.registry.judge_options``."""

    judge_backend: str = field(default="hf", metadata=check(text()))
    """Backend of the judge model."""
    judge_model: str | None = field(default=None, metadata=check(text(optional=True)))
    """Judge model id or folder; null: the embedded model."""
    judge_max_new_tokens: int | None = field(default=None, metadata=check(POSITIVE_OR_NULL))
    """The judge's verdict budget in tokens; null: the judge's own default."""
    judge_backend_options: dict[str, Any] = field(default_factory=dict, metadata=check(mapping))
    """The judge backend's options (``device``, vLLM engine options, ``base_url`` of an
    OpenAI-compatible endpoint with ``judge_backend: openai``)."""


@dataclass(frozen=True)
class Scoring:
    """The scoring section (notebooks 06, 08, 10, 11): which scorer, its options, the CIs."""

    scorer: str | None = field(default=None, metadata=check(text(optional=True)))
    """Scorer name (``"<benchmark>"`` or ``"<benchmark>:<variant>"``); null: the default."""
    scorer_options: dict[str, Any] = field(default_factory=dict, metadata=check(mapping))
    """Keyword options of the scorer."""
    n_resamples: int = field(default=1000, metadata=check(POSITIVE))
    """Bootstrap resamples of the confidence intervals."""
    baseline: str | None = field(default=None, metadata=check(text(optional=True)))
    """L-Eval's judge baseline (notebook 08): official prediction files, ``model:NAME``,
    ``run:RUN_ID[/MODEL]``; null: the run's own no-LIE answers
    (``lceval.benchmarks.leval.judge.resolve_baseline``)."""
    published_models: list[str] | None = field(default=None, metadata=check(_str_list_or_null))
    """Published models to draw beside the run's (notebooks 05, 06, 07, 11); null: all of them.
    The report's CSV files keep every published row."""


NOTEBOOK_SECTIONS: tuple[type, ...] = (InferenceSection, Judge, Scoring)
"""The shared sections a builder's params file may carry beside the builder's own."""
