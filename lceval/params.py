"""Declared params: every section of a params file (a builder's, :class:`InferenceSection`,
:class:`Judge`, :class:`Scoring`) is a pydantic model; every error is one
:class:`~lceval.core.errors.LcevalError` line from :func:`first_error`, the one translator.
"""

from __future__ import annotations

import copy
import inspect
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Concatenate, Literal, ParamSpec, Self, TypeVar

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)
from pydantic_core import core_schema

from lceval.core.errors import LcevalError, did_you_mean, one_line
from lceval.core.io import load_yaml, project_root, read_bounded

M = TypeVar("M", bound=BaseModel)
P = ParamSpec("P")
R = TypeVar("R")

Door = Literal["cli", "params"]
"""Who gave the values: the command line (errors name ``--flag``) or a params mapping."""

RENAMED: Mapping[str, str] = {
    "tokenizer": "encoding",
    "infer_max_new_tokens": "max_new_tokens",
    "gen_max_new_tokens": "variants_max_new_tokens",
    "refine_strategy": "refine_strategies",
}
"""Old spelling -> the one spelling now read (refused with a message naming the new one)."""


def _got(value: Any, door: Door = "params") -> str:
    """``got VALUE (type)``, cut to 80 characters; from the command line, the text as typed."""
    if door == "cli" and isinstance(value, str):  # `--limit ""` said "got" and nothing
        return f"got {value:.80}" if value.strip() else f"got {value!r} (nothing)"
    if value is None:
        return "got null"
    if isinstance(value, dict | BaseModel):
        return "got a mapping"
    text = repr(value)
    if len(text) > 80:
        text = f"{text[:80]}... ({len(text)} characters)"
    return f"got {text} ({type(value).__name__})"


# --------------------------------------------------------------------------- declared fields
Positive = Annotated[int, Field(ge=1)]
NonNegative = Annotated[int, Field(ge=0)]
Text = Annotated[str, Field(min_length=1)]
Options = Annotated[
    dict[str, Any], BeforeValidator(lambda v: {} if v is None else v, dict[str, Any] | None)
]
"""A mapping of options (``{}`` when null)."""


def _folder_path(value: Any, info: ValidationInfo) -> Any:
    if value is None or isinstance(value, str | Path):
        return value
    path = os.fspath(value) if isinstance(value, os.PathLike) else None
    if isinstance(path, str):
        return Path(path)
    says = "must be a folder path (str or os.PathLike)"
    raise ValueError(f"{info.field_name} {says}, {_got(value)}")


FolderPath = Annotated[str | Path | None, BeforeValidator(_folder_path)]
"""A folder given from Python (``root``): a str or any ``os.PathLike`` (read as a Path), or None
for the default; anything else one line naming the field (``root must be a folder path ...``)."""

FilePath = Annotated[
    str | None, BeforeValidator(lambda v: os.fspath(v) if isinstance(v, os.PathLike) else v)
]
"""A file given from Python or the command line (``params``): a str, or any ``os.PathLike`` read
as its string (``pathlib.Path("p.yaml")``), or None."""


class Shaped:
    """Field metadata: the value ``shape``d, validated by pydantic as ``type_``, then ``finish``ed;
    the JSON Schema says the field takes ``takes``."""

    def __init__(
        self, type_: Any, shape: Callable[[Any], Any], finish: Callable[[Any], Any], takes: Any
    ) -> None:
        self.type_, self.shape, self.finish, self.takes = type_, shape, finish, takes

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        inner = handler.generate_schema(self.type_)
        return core_schema.no_info_before_validator_function(
            self.shape,
            core_schema.no_info_after_validator_function(self.finish, inner),
            json_schema_input_schema=handler.generate_schema(self.takes),
        )


def _listed(value: Any, scalar: Any) -> Any:
    """A scalar as a list of one; a Path as its string."""
    if isinstance(value, scalar):
        value = [value]
    if isinstance(value, list | tuple):
        return [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
    return value


def names(options: Sequence[Any], null_means_all: bool = True, sort: bool = False) -> Shaped:
    """A non-empty list of ``options`` (a single name counts as a list of one), deduplicated and
    kept as a tuple in the given order (``sort``: in the order of ``options``); null: all of them
    when ``null_means_all``, else null."""
    allowed = tuple(options)

    def shape(value: Any) -> Any:
        if value is None:
            return list(allowed) if null_means_all else None
        return _listed(value, str)

    def finish(value: Any) -> Any:
        out = None if value is None else tuple(dict.fromkeys(value))
        return tuple(o for o in allowed if o in out) if sort and out else out

    one: Any = Literal.__getitem__(allowed)
    return Shaped(
        Annotated[list[one], Field(min_length=1)] | None, shape, finish, str | list[str] | None
    )


def lengths(
    minimum: int = 1,
    labels: Mapping[str, int] | None = None,
    sort: bool = True,
    default: tuple[int, ...] | None = None,
) -> Shaped:
    """A non-empty list of lengths in tokens (a single one counts), each an integer >=
    ``minimum`` or one of ``labels`` (``"4k"`` -> 4096); deduplicated, sorted unless ``sort`` is
    false. Null: ``default``."""
    item: Any = Annotated[int, Field(ge=minimum)]
    if labels:
        item = item | Literal.__getitem__(tuple(labels))

    def shape(value: Any) -> Any:
        return _listed(default if value is None else value, int | str)

    def finish(value: Any) -> Any:
        if value is None:
            return None
        out = tuple(dict.fromkeys((labels or {}).get(x, x) for x in value))
        return tuple(sorted(out)) if sort else out

    takes = int | str | list[int | str] | None
    return Shaped(Annotated[list[item], Field(min_length=1)] | None, shape, finish, takes)


def paths(many: bool = False) -> Shaped:
    """A file or folder path (a string or a ``Path``, kept as a string) or null; ``many``: also
    a non-empty list of paths (kept as a tuple)."""

    def shape(value: Any) -> Any:
        if isinstance(value, list | tuple):
            return _listed(value, ())
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    def finish(value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    many_type: Any = Annotated[list[Text], Field(min_length=1)] if many else None
    return Shaped(
        Text | many_type | None, shape, finish, str | list[str] | None if many else str | None
    )


def texts(null: tuple[str, ...] | None = None) -> Shaped:
    """A non-empty list of non-empty strings (names, paths), kept as a tuple; null refused; or,
    where ``null`` is given, any list, null meaning ``null``."""

    def finish(value: Any) -> Any:
        return null if value is None else tuple(value)

    many: Any = Annotated[list[Text], Field(min_length=1 if null is None else 0)]
    if null is None:
        return Shaped(many, lambda v: _listed(v, ()), finish, list[str])
    return Shaped(many | None, lambda v: _listed(v, ()), finish, list[str] | None)


Encoding = Literal["o200k_base", "cl100k_base"]
"""A tiktoken encoding name (:data:`lceval.core.tokens.ENCODINGS`)."""


# ------------------------------------------------------------------------ the one translator
def _extra(info: Any) -> dict[str, Any]:
    extra = getattr(info, "json_schema_extra", None)
    return dict(extra) if isinstance(extra, Mapping) else {}


def flags_of(name: str, info: Any) -> tuple[str, ...]:
    """The command-line spellings of field ``name`` (empty: positional or no flag)."""
    extra = _extra(info)
    if extra.get("positional") or extra.get("cli") is False:
        return ()
    flag = extra.get("flag", "--" + name.replace("_", "-"))
    return (flag,) if isinstance(flag, str) else tuple(flag)


_SAYS = {
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "finite_number": "must be a finite number",
    "too_short": "must be a non-empty list",
    "string_too_short": "must not be empty",
    "literal_error": "must be one of {expected}",
    "string_pattern_mismatch": "must match {pattern}",
    "string_unicode": "must be text (it holds a byte that is not UTF-8)",
}
"""pydantic's error types as lceval words them (``must be >= 1``)."""

_TYPES = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "list": "a list",
    "tuple": "a list",
    "dict": "a mapping",
    "model": "a mapping",
}
"""A type error's type (``int`` of ``int_parsing``, ``int_from_float``) -> what it must be."""
_TYPE_ERRORS = ("_type", "_parsing", "_strict", "_from_float")


def first_error(config: type[BaseModel], exc: ValidationError, door: Door, where: str) -> str:
    """The first of pydantic's errors as one line: ``WHERE: KEY must be ..., got VALUE (type)``
    (the command line's flag for ``door="cli"``); a model check's own message (a ValueError)
    as it is. The one translator of pydantic errors in lceval."""
    errors = [
        e for e in exc.errors(include_url=False) if e["loc"][:1] == exc.errors()[0]["loc"][:1]
    ]
    # a union field reports one error per member: the member that got deepest, said together
    # with the others at that depth ("must be >= 256 or one of 4k")
    depth = [sum(isinstance(x, int) for x in e["loc"]) for e in errors]
    errors = [e for e, d in zip(errors, depth, strict=True) if d == max(depth)]
    err = errors[0]
    loc = [str(x) for x in err.get("loc", ())]
    head = loc[0] if loc else ""
    info = config.model_fields.get(head)  # named by its flag to the command line
    flags = flags_of(head, info) if info is not None and door == "cli" else ()
    name = (flags[-1] if flags else head) + "".join(f"[{x}]" for x in loc[1:] if x.isdigit())
    prefix = f"{where}: " if where else ""
    kind = str(err.get("type", ""))
    if kind == "value_error":  # lceval's own checks: the message says it all
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        own = name and not msg.startswith(head)
        return f"{prefix}{name}: {msg}" if own else f"{prefix}{msg}"
    nested = loc[-1] if len(loc) > 1 and not loc[-1].isdigit() else ""  # a nested model's key
    if kind == "missing":
        return f"{prefix}{name}{f'.{nested}' if nested else ''} is required"
    if kind == "extra_forbidden" and nested:
        return f"{prefix}{name}: unknown parameter {nested!r}"
    if kind == "extra_forbidden":  # a key of the config itself
        hint = did_you_mean(head, config.model_fields)
        return f"{prefix}unknown parameter {head!r}" + (f"; {hint}" if hint else "")
    if door == "cli" and err.get("input") is None:  # `-o KEY=` with nothing after the "="
        return f"{prefix}{name} needs a value after '='"
    same = [e for e in errors if e["loc"][:-1] == err["loc"][:-1] and e["input"] is err["input"]]
    said = [
        x.removeprefix("must be ") if i else x
        for i, x in enumerate(dict.fromkeys(map(_said, same)))
    ]
    if len(said) > 1:  # a union: "must be true, false or 'both'", "must be >= 256 or '4k'"
        said = [", ".join(x.replace(" or ", ", ") for x in said[:-1]), said[-1]]
    choices = re.findall(r"'([^']*)'", err["ctx"]["expected"]) if kind == "literal_error" else []
    hint = did_you_mean(err.get("input"), choices) if choices else ""
    return f"{prefix}{name} {' or '.join(said)}, {_got(err.get('input'), door)}" + (
        f"; {hint}" if hint else ""
    )


def _said(err: Any) -> str:
    """What one pydantic error says the value must be (``must be >= 1``; a single literal
    quoted: ``must be 'both'``)."""
    kind = str(err.get("type", ""))
    ctx = {k: str(v).replace("'", "").replace(" or ", ", ") for k, v in err.get("ctx", {}).items()}
    if kind == "literal_error" and "," not in ctx["expected"]:
        return f"must be {err['ctx']['expected']}"
    says = _SAYS.get(kind)
    typed = kind.partition("_")[0] if kind.endswith(_TYPE_ERRORS) else ""
    if says is None and typed in _TYPES:
        says = f"must be {_TYPES[typed]}"
    return says.format(**ctx) if says else f"must be valid ({err.get('msg', '')})".lower()


def unknown_keys(keys: Iterable[Any], known: Iterable[str], where: str) -> None:
    """Refuse keys not in ``known``: an old spelling (:data:`RENAMED`) names the new one, any
    other the closest known names.

    Raises:
        LcevalError: one line naming the first unknown key.
    """
    known = list(known)
    prefix = f"{where}: " if where else ""
    for k in keys:
        if k in known:
            continue
        if k in RENAMED:
            raise LcevalError(f"{prefix}{k!r} is now spelled {RENAMED[k]!r}; rename the key")
        hint = did_you_mean(k, known)
        raise LcevalError(f"{prefix}unknown parameter {k!r:.60}{f'; {hint}' if hint else ''}")


def validate(
    config: type[M], values: Mapping[str, Any] | None, door: Door = "params", where: str = ""
) -> M:
    """``values`` (None: all defaults) read into the declared model ``config``: unknown keys
    refused with the closest names, every value typed and ranged (strict for params and Python
    calls; the command line's text is parsed); messages name ``where`` the values came from.

    Raises:
        LcevalError: one line (:func:`first_error`).
    """
    values = {} if values is None else values
    if not isinstance(values, Mapping):
        got = type(values).__name__
        raise LcevalError(f"{where or config.__name__}: params must be a mapping, got {got}")
    unknown_keys(list(values), list(config.model_fields), where)  # a flag is never unknown
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
    try:
        return config.model_validate(data, strict=door == "params")
    except ValidationError as exc:
        raise LcevalError(first_error(config, exc, door, where)) from None


def given(values: BaseModel | Mapping[str, Any] | None) -> dict[str, Any]:
    """What a layer of settings set: a model's ``model_fields_set`` (a flag on the command line, a
    keyword of a Python call, a key of a params file), a mapping's keys. Null, an empty mapping
    and an empty list are never set: they are the unset markers no flag can say (a notebook's
    ``max_new_tokens = None``, ``backend_options = {}`` and ``stop = []`` leave the run's
    declared values in place)."""
    if values is None:
        return {}
    if isinstance(values, BaseModel):
        values = {k: getattr(values, k) for k in values.model_fields_set}
    return {k: v for k, v in values.items() if v is not None and v != {} and v != []}


def layered(config: type[M], *layers: BaseModel | Mapping[str, Any] | None, where: str = "") -> M:
    """The one precedence rule of every verb and entry point: ``layers`` from the lowest to the
    highest (the run's declared build settings, then a params file, then the flags or keywords),
    each giving only what it set (:func:`given`), over ``config``'s defaults; whether a value
    equals a default never matters. The result's ``model_fields_set`` is what some layer set.

    Raises:
        LcevalError: one line (:func:`validate`).
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(given(layer))
    return validate(config, merged, "params", where)


def keywords_of(
    options: Callable[P, Any],
) -> Callable[[Callable[..., R]], Callable[Concatenate[str, P], R]]:
    """Give a ``(first, /, **options)`` function the keywords of ``options``, a :class:`Declared`
    model: for any type checker, its ``__init__`` (pydantic's ``dataclass_transform``: each field a
    keyword-only parameter of its declared type, no plugin needed); at run time the same
    ``__signature__`` (``help()``, ``inspect.signature``). One declaration: the fields. The
    function receives only the keywords the caller gave (:func:`given` reads them)."""

    def wrap(f: Callable[..., R]) -> Callable[Concatenate[str, P], R]:
        own = inspect.signature(f)
        first = next(iter(own.parameters.values()))  # positional-only
        keywords = [
            p for p in inspect.signature(options).parameters.values() if p.name != first.name
        ]
        f.__signature__ = own.replace(parameters=[first, *keywords])  # type: ignore[attr-defined]
        return f

    return wrap


def keys(*sections: type[BaseModel]) -> frozenset[str]:
    """The keys the given sections read."""
    return frozenset(k for s in sections for k in s.model_fields)


def parse(
    section: type[M],
    params: Mapping[str, Any] | None,
    where: str,
    accept: Iterable[type[BaseModel]] = (),
) -> M:
    """One section of a params mapping (None: all defaults) read by :func:`validate`; the keys
    of the sections ``accept`` names and :data:`NOTEBOOK_PARAMS` are accepted and not read.

    Raises:
        LcevalError: one line naming ``where`` (the section's owner: ``"ruler"``).
    """
    if isinstance(params, Mapping):
        others = keys(*accept) | NOTEBOOK_PARAMS
        params = {k: v for k, v in params.items() if k in section.model_fields or k not in others}
    return validate(section, params, "params", where)


MAX_PARAMS_BYTES = 16 << 20
"""The largest params file lceval reads (16 MiB; the repository's are a few KiB)."""


def load_params(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a params YAML file (UTF-8, at most :data:`MAX_PARAMS_BYTES`; a relative path from
    the working directory, else the checkout's root) into a dict.

    Raises:
        LcevalError: missing, unreadable, not a regular file, too large, not UTF-8, not YAML,
            empty or null, or not a mapping at top level; more than
            :data:`lceval.core.io.MAX_YAML_ALIASES` aliases, a larger expansion, a duplicate key.
    """
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
        data = load_yaml(text)  # aliases, expansion and duplicate keys bounded
    except RecursionError:
        raise LcevalError(f"params file {path} is nested too deeply") from None
    except ValueError as exc:  # an alias bomb, a duplicate key, an int past 4300 digits
        raise LcevalError(f"params file {path}: {one_line(exc, 120)}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise LcevalError(f"params file {path} is not valid YAML{where}") from None
    if data is None:  # it would build the builder's defaults, as --params '' would
        raise LcevalError(
            f"params file {path} is empty (or null); give the params, or leave --params out "
            "for the defaults"
        )
    if not isinstance(data, dict):
        raise LcevalError(f"params file {path} must hold a mapping, got {type(data).__name__}")
    return data


# ------------------------------------------------------------------------- shared sections
class Declared(BaseModel):
    """Base of every verb's config: frozen, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class Notebook(Declared):
    """The parameters every notebook takes: the run folder's name and root (``lceval run`` and
    ``lceval build`` set them from ``--run-id`` and ``--outputs``)."""

    run_id: Text | None = Field(default=None, description="the run folder's name")
    outputs_root: Text | None = Field(
        default=None,
        description="folder of run folders; null: $LCEVAL_OUTPUTS, else <repo>/outputs",
    )


NOTEBOOK_PARAMS = frozenset(Notebook.model_fields)
"""Parameters every notebook takes that no other section reads."""


class Budget(Declared):
    """The answer cap, declared once (``lceval plan`` reads it alone; :class:`Generation` holds
    it beside the sampling settings). A sample's own budget is ``Sample.max_new_tokens``, what
    its builder wrote: the cap lowers it, never raises it."""

    max_new_tokens: int | None = Field(
        default=None,
        ge=1,
        description="cap every sample's answer budget, in tokens (null: each sample's own; "
        "lceval infer: what the run's build params declare first)",
    )


class ThinkingBudget(Declared):
    """A reasoning model's thinking budget, declared once (``lceval plan`` reads it beside
    :class:`Budget`; :class:`Generation` holds it)."""

    max_thinking_tokens: int | None = Field(
        default=None,
        ge=1,
        description="a reasoning model's thinking budget in tokens, beside each sample's answer "
        "budget; thinking longer gives no answer (NaN). Null: 32768 for a local model whose "
        "template thinks, none for openai (lceval plan: not counted)",
    )


class Generation(ThinkingBudget, Budget):
    """The generation config, declared once: ``lceval infer``'s flags, :func:`lceval.infer`'s and
    :func:`lceval.evaluate`'s keywords, a params file's and notebook's inference keys and a
    judge's options all read these fields; :class:`lceval.models.base.GenerationConfig` (what an
    engine receives, each engine mapping it once to its library's sampling settings) extends it.
    A sample's own budget and stop strings (``Sample.max_new_tokens``, ``Sample.stop``, what its
    builder wrote) stay the sample's: ``max_new_tokens`` caps the one, ``stop`` adds to the other.
    """

    temperature: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="sampling temperature (0: greedy)"
    )
    top_p: float = Field(
        default=1.0,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="nucleus sampling: the smallest set of tokens whose probability reaches top_p "
        "(1: all)",
    )
    seed: int = Field(default=0, ge=0, description="sampling seed")
    stop: list[Text] = Field(
        default_factory=list,
        description="stop strings added to every sample's own: each answer is cut before the "
        "first (a thinking model's after its thinking is split off)",
        json_schema_extra={"action": "append", "metavar": "STRING"},
    )


class Engine(Declared):
    """The engine choice, declared once: the backend and its options (``replicas=N`` among them:
    engine replicas on Ray). :class:`InferenceSection` (``lceval infer``'s ``--backend`` and
    ``-o``, a params file's and notebook's inference keys) and :class:`JudgeOptions` (a judge's,
    whose backend defaults to hf: :func:`_default`) read it."""

    backend: Text = Field(
        default="auto",
        description="auto (vllm when it imports and the CPU has native bfloat16 or a CUDA GPU "
        "is present, else hf; says which), hf, vllm or openai (default: auto; a judge's: hf)",
    )
    backend_options: Options = Field(
        default_factory=dict,
        description="backend option, e.g. device=cuda, tensor_parallel_size=2, replicas=2, "
        "base_url=http://... (an OpenAI-compatible endpoint, with backend openai)",
        json_schema_extra={"flag": ["-o", "--option"], "kv": True},
    )


def _default(section: type[M], name: str, value: Any) -> None:
    """Give ``section``'s inherited field ``name`` the default ``value``, its declaration
    (type, range, description) kept: a section that differs from the one that declares a field
    in its default only overrides that, rather than declaring the field a second time. Call it
    right after the class, before any subclass."""
    field = copy.copy(section.model_fields[name])  # the inherited one stays the base's
    field.default = value
    section.model_fields[name] = field  # pydantic's public fields, rebuilt from them
    section.model_rebuild(force=True)


class InferenceSection(Engine, Generation):
    """The inference section of a params file and ``lceval infer``'s settings, declared once:
    the engine choice and the samples answered, beside the :class:`Generation` config (backend
    names and model entries are checked by :class:`lceval.run.config.InferConfig`)."""

    run_id: str | None = Field(
        default=None,
        min_length=1,
        description="the run to answer (see lceval build)",
        json_schema_extra={"positional": True, "nargs": "?"},
    )
    list_options: str | None = Field(
        default=None,
        description="print every -o option BACKEND takes (hf, vllm, openai) and exit",
        json_schema_extra={"metavar": "BACKEND"},
    )
    model: str | list[Any] | None = Field(
        default=None,
        description="a path or hub id; repeat for several models, answered one engine at a time "
        "(load, answer, close, next). One model's own backend and options: a YAML mapping, "
        '"{model: ID, backend: vllm, options: {tensor_parallel_size: 2}, name: NAME}" (its '
        "options go over -o, which applies to every model). Default: embedded, the "
        "SmolLM2-135M CPU stand-in",
        json_schema_extra={"action": "append", "metavar": "MODEL"},
    )
    models: list[Any] | None = Field(
        default=None,
        description="several models (params files): each an id or {model, backend, options, "
        "name}; null: model",
        json_schema_extra={"cli": False},
    )
    truncate: bool | None = Field(
        default=None,
        description="right-truncate contexts longer than a model's window (LIFBench Sec. 5.1, "
        "L-Eval Sec. 4) instead of stopping before inference (default: what the run's build "
        "params declare, else no)",
        json_schema_extra={"action": "boolean"},
    )
    batch_size: int | None = Field(
        default=None,
        ge=1,
        description="samples per engine call, flushed to disk after each (default: the "
        "engine's: vllm 256, hf its batch size)",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description="N samples per task (as lm-evaluation-harness), drawn across each task's "
        "lengths and variants (stratified, seeded)",
    )
    tasks: list[str] | None = Field(
        default=None,
        min_length=1,
        description="only these task codes",
        json_schema_extra={"nargs": "+"},
    )
    ray_address: str | None = Field(
        default=None,
        min_length=1,
        description="answer on an existing Ray cluster (auto or HOST:PORT: ray start, KubeRay, "
        "Slurm); each model's -o replicas=N engine replicas there (default: replicas > 1 start a "
        "local cluster)",
        json_schema_extra={"metavar": "auto|HOST:PORT"},
    )

    @model_validator(mode="after")
    def _model_or_models(self) -> Self:
        if self.model is not None and self.models is not None:
            raise ValueError(f"give model or models, not both (model: {self.model!r:.80})")
        return self


class JudgeOptions(Engine, Generation):
    """The judge model's options, declared once: the engine choice (:class:`Engine`'s, its
    backend defaulting to hf) and the generation config of its questions (:class:`Generation`'s:
    the answer cap, null: the judge's own default; the thinking budget, stop strings,
    temperature, top_p, seed), every LLM judge scorer's options
    (:class:`lceval.models.judge.JudgeModel` subclasses this) and, each prefixed ``judge_``, a
    notebook's judge section (:class:`Judge`)."""

    model: Text | None = Field(
        default=None, description="judge model path or hub id; null: the embedded SmolLM2"
    )
    batch_size: Positive = Field(default=8, description="judge prompts per engine call")


_default(JudgeOptions, "backend", "hf")  # a judge answers on transformers unless told


_JUDGE_FIELDS: dict[str, Any] = {
    f"judge_{k}": (f.annotation, copy.deepcopy(f)) for k, f in JudgeOptions.model_fields.items()
}
Judge = create_model(
    "Judge",
    __base__=Declared,
    __doc__="An LLM judge's section (notebooks 06, 08, 11): ``judge_<option>`` is "
    ":class:`JudgeOptions`' ``<option>`` (filled in by\n"
    ":func:`lceval.benchmarks.registry.judge_options`).",
    **_JUDGE_FIELDS,
)


class ScorerChoice(Declared):
    """Which scorer and its options, declared once: ``lceval score``'s
    (:class:`lceval.run.config.ScoreConfig`) and a notebook's scoring section (:class:`Scoring`)."""

    scorer: Text | None = Field(
        default=None,
        description="scorer name (<benchmark> or <benchmark>:<variant>); null: the default",
    )
    scorer_options: Options = Field(
        default_factory=dict,
        description="keyword options of the scorer",
        json_schema_extra={"flag": ["-o", "--option"], "kv": True},
    )


class Scoring(ScorerChoice):
    """The scoring section (notebooks 06, 08, 10, 11): which scorer, its options, the CIs."""

    n_resamples: Positive = Field(
        default=1000, description="bootstrap resamples of the confidence intervals"
    )
    baseline: Text | None = Field(
        default=None,
        description="L-Eval's judge baseline (notebook 08): official prediction files, "
        "model:NAME, run:RUN_ID[/MODEL]; null: the run's own no-LIE answers",
    )
    published_models: list[Text] | None = Field(
        default=None,
        min_length=1,
        description="published models to draw beside the run's (notebooks 05, 06, 07, 11); "
        "null: all of them (the report's CSV files keep every published row)",
    )


NOTEBOOK_SECTIONS: tuple[type[Declared], ...] = (InferenceSection, Judge, Scoring)
"""The shared sections a builder's params file may carry beside the builder's own."""


class ScorerOptions(BaseModel):
    """A scorer's options as a declared type: names, types, ranges, defaults and one line of help
    each (pydantic; ``model_json_schema()`` gives them to tools). Strict: an int is never a bool,
    a number never a string; an unknown name is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @classmethod
    def docs(cls) -> dict[str, str]:
        """Option name -> its help line with the default (``lceval list``)."""
        return {
            k: f"{f.description or ''} (default {f.get_default(call_default_factory=True)!r})"
            for k, f in cls.model_fields.items()
        }

    @classmethod
    def parse(cls, scorer: str, options: Mapping[str, Any]) -> Self:
        """``options`` checked and typed (:func:`lceval.params.validate`).

        Raises:
            LcevalError: one line: ``scorer S: unknown parameter 'k'; did you mean ...`` or
                ``scorer S: k must be ..., got VALUE (type)``.
        """
        return validate(cls, options, "params", f"scorer {scorer}")
