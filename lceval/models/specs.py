"""The models of a run (a params file's ``model:`` or ``models:``) and whether each one's window
holds the run's longest prompt plus its answer budget, both checked before any engine starts
(unless truncation was asked for: LIFBench Sec. 5.1 and L-Eval right-truncate the context)."""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, model_validator

from lceval.core.console import engine_output, verbose
from lceval.core.errors import LcevalError, without_credentials
from lceval.core.records import Context, Sample
from lceval.core.tokens import count_tokens
from lceval.models.backends import BACKENDS, LocalOptions, parse_options, resolve_backend
from lceval.models.base import load_backend, split_run_options
from lceval.models.embedded import (
    EMBEDDED_ALIASES,
    EMBEDDED_NAME,
    check_model,
    hub_snapshot,
    resolve_model,
)
from lceval.models.prompts import context_text, plain_text, render_chat_prompt
from lceval.params import Options, Text, validate

CHECKED_PROMPTS = 16  # prompts tokenized by check_fits (the run's longest in characters)


def _display_name(name: str) -> str:
    if not name.strip():
        raise ValueError("must be a non-empty string")
    if not name.isprintable():
        raise ValueError(f"{name!r:.80} holds a newline or control character")
    if len(name) > 200:
        raise ValueError(f"is {len(name)} characters long; at most 200")
    return name


class ModelSpec(BaseModel):
    """One model of a run: a ``models:`` entry, ``{model, backend, options, name}`` (a bare
    string is ``{model: ...}``); :func:`resolve_models` fills in the section's backend and puts
    the entry's ``options`` over the section's ``backend_options``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    """Model id, local folder, or ``embedded`` (the SmolLM2-135M-Instruct stand-in)."""
    backend: Text = "auto"
    options: Options = {}
    """Engine options (``lceval infer --list-options BACKEND``)."""
    name: Annotated[str, AfterValidator(_display_name)] | None = None
    """Display name recorded as ``Response.model`` (None: the engine's name for the model):
    printable, not blank, at most 200 characters."""

    @model_validator(mode="before")
    @classmethod
    def _nulls_unset(cls, value: Any) -> Any:  # a null key: not given (the section's applies)
        if isinstance(value, Mapping):
            return {k: v for k, v in value.items() if v is not None}
        return value

    def with_options(self, options: Mapping[str, Any]) -> ModelSpec:
        """This model with ``options`` as its engine options (e.g. an NTK point's RoPE ones)."""
        return self.model_copy(update={"options": dict(options)})

    @property
    def label(self) -> str:
        """The name used in messages: the display name, else the model."""
        return self.name or self.model


def stored_name(spec: ModelSpec) -> str:
    """The name ``spec``'s answers are stored under (``Response.model``), known without loading
    anything: the display name, else the engine's name for the model."""
    if spec.name:
        return spec.name
    if spec.backend != "openai" and spec.model.lower() in EMBEDDED_ALIASES:
        return EMBEDDED_NAME
    return spec.model.rstrip("/") or spec.model


def recorded_options(spec: ModelSpec) -> dict[str, Any]:
    """``spec``'s options as run.json records them: a ``base_url``'s ``user:password@`` dropped
    (its credentials are secrets, :func:`lceval.core.errors.without_credentials`)."""
    out = dict(spec.options)
    if isinstance(out.get("base_url"), str):
        out["base_url"] = without_credentials(out["base_url"])
    return out


def location(spec: ModelSpec) -> str:
    """Where ``spec``'s weights are: ``embedded``, a folder's absolute path, a hub id, or
    ``openai:<base_url>|<served name>`` (the URL without credentials)."""
    if spec.backend == "openai":
        base = str(spec.options.get("base_url") or os.environ.get("OPENAI_BASE_URL") or "")
        return f"openai:{without_credentials(base).rstrip('/')}|{spec.model}"
    if spec.model.lower() in EMBEDDED_ALIASES:
        return "embedded"
    path = Path(spec.model).expanduser()
    return str(path.resolve()) if path.is_dir() else spec.model


def recorded_location(entry: Mapping[str, Any]) -> str | None:
    """:func:`location` as run.json's ``models`` entry records it (older runs: from its
    ``source``); None: unknown."""
    if isinstance(entry.get("location"), str):
        return str(entry["location"])
    if entry.get("backend") == "openai":
        return f"openai:{str(entry.get('base_url', '')).rstrip('/')}|{entry.get('model')}"
    kinds = {"embedded": "embedded", "local": entry.get("path"), "hub": entry.get("hub_id")}
    found = kinds.get(str(entry.get("source")))
    return found if isinstance(found, str) else None


ANSWER_OPTIONS = tuple(
    "dtype prompt_format rope_theta rope_scaling window max_model_len trust_remote_code".split()
)
"""Engine options that change a model's answers (the others change only speed)."""


def _options_text(options: Mapping[str, Any]) -> str:
    kept = {k: v for k, v in options.items() if k in ANSWER_OPTIONS}
    return json.dumps(kept, sort_keys=True, default=str)


def check_names(
    specs: Sequence[ModelSpec], earlier: Mapping[str, Any], run_id: str = "the run"
) -> None:
    """Refuse two models that would store their answers under one name: two of ``specs``, or
    one of them and ``earlier`` answers (run.json's ``models``: stored name -> entry) from
    another location, backend or answer options.

    Raises:
        LcevalError: one line naming both models, the shared name and the way out (``name``).
    """
    seen: dict[str, int] = {}
    for i, spec in enumerate(specs):
        name = stored_name(spec)
        if name in seen:
            j = seen[name]
            raise LcevalError(
                f"models[{j}] ({specs[j].model[:60]}) and models[{i}] ({spec.model[:60]}) would "
                f"both store their answers as {name[:60]!r}; give one a different `name`"
            )
        seen[name] = i
        entry = earlier.get(name)
        if not isinstance(entry, Mapping):
            continue
        was, why = recorded_location(entry), None
        if was is not None and was != location(spec):
            why = f"from {was[-80:]}"
        elif "options" in entry and _options_text(entry["options"]) != _options_text(
            recorded_options(spec)
        ):
            why = f"with options {_options_text(entry['options'])[:80]}"
        elif entry.get("backend") not in (None, resolve_backend(spec.backend)):
            why = f"from backend {entry.get('backend')}"
        if why:
            raise LcevalError(
                f"model {spec.model[:60]} would store its answers as {name[:60]!r}, which run "
                f"{run_id} already holds {why}; give it a different `name`"
            )


def resolve_models(
    model: Any,
    models: Sequence[Any] | None,
    backend: str = "auto",
    options: Mapping[str, Any] | None = None,
    where: str = "inference",
    one: str | None = None,
) -> tuple[ModelSpec, ...]:
    """The models a params section names, in order: ``model`` (one entry) or ``models`` (a
    list), each a model id, a ``{model, backend, options, name}`` mapping or a
    :class:`ModelSpec`; the section's ``backend`` and ``options`` fill in under an entry's own.
    ``where`` names the section in messages; ``one`` says why only one model is taken here.

    Raises:
        LcevalError: one line: both ``model`` and ``models``, neither, an empty list, a
            malformed entry (its index and key), two entries sharing a stored name; more than
            one with ``one``.
    """
    if model is not None and models is not None:
        raise LcevalError(f"{where}: give `model` or `models`, not both (model: {model!r:.80})")
    if models is None:
        if model is None:
            raise LcevalError(
                f"{where}: no model named: set `model:` or `models:` (a path or hub id; "
                "`model: embedded` for the 135M CPU stand-in)"
            )
        models = [model]
    elif isinstance(models, str | Mapping):
        models = [models]
    if not isinstance(models, Sequence) or not models:
        raise LcevalError(f"{where}: `models` must be a non-empty list, got {models!r:.80}")
    specs = []
    for i, value in enumerate(models):
        if isinstance(value, ModelSpec):  # already resolved (the NTK sweep's per-point model)
            specs.append(value)
            continue
        if isinstance(value, str):
            value = {"model": value}
        elif not isinstance(value, Mapping):
            raise LcevalError(
                f"{where}: models[{i}] must be a model id or a mapping {{model, backend, "
                f"options, name}}, got {type(value).__name__}"
            )
        spec = validate(ModelSpec, value, "params", f"{where}: models[{i}]")
        own = spec.backend if "backend" in spec.model_fields_set else backend
        update = {"backend": own, "options": {**(options or {}), **spec.options}}
        specs.append(spec.model_copy(update=update))
    try:
        check_names(specs, {})
    except LcevalError as exc:
        raise LcevalError(f"{where}: {exc}") from None
    if one is not None and len(specs) > 1:
        raise LcevalError(f"{where}: give one model here ({one}), got {len(specs)}")
    return tuple(specs)


# --------------------------------------------------------------------- window vs longest prompt
TOKENIZER_FILES = tuple(
    "config.json tokenizer* *.model *.tiktoken *.jinja vocab* merges.txt special_tokens*".split()
)


def _local_folder(model: str) -> Path | None:
    """A folder holding ``model``'s :data:`TOKENIZER_FILES` (None: not to be had)."""
    if check_model(model) != "hub":
        return Path(resolve_model(model).path)
    try:
        return hub_snapshot(model, TOKENIZER_FILES)
    except LcevalError:  # not cached, no network, gated: window unknown
        return None


def window_config(config: Any) -> Any:
    """The part of a config (object or config.json dict) stating ``max_position_embeddings``:
    itself or its ``text_config`` (multimodal); None: neither."""

    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

    for cfg in (config, get(config, "text_config")):
        n = get(cfg, "max_position_embeddings") if cfg is not None else None
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return cfg
    return None


def model_window(config: Any, tokenizer: Any = None) -> int:
    """A model's context window in tokens, one rule for the hf engine, the planner and
    :func:`declared_window`: the config's ``max_position_embeddings`` (:func:`window_config`),
    else the tokenizer's ``model_max_length``.

    Raises:
        LcevalError: neither the model config nor the tokenizer states a window.
    """
    cfg = window_config(config)
    if cfg is not None:
        key = "max_position_embeddings"
        return int(cfg[key] if isinstance(cfg, Mapping) else getattr(cfg, key))
    length = getattr(tokenizer, "model_max_length", None)
    if isinstance(length, int) and 0 < length < 10_000_000:
        return length
    raise LcevalError("cannot tell the model's context window; pass window=<tokens>")


def declared_window(spec: ModelSpec, folder: Path | None) -> tuple[int | None, str]:
    """``(tokens, source)``: the window ``spec``'s engine will have (its backend's window option;
    else :func:`model_window` times a ``rope_scaling`` option's factor, or the checkpoint's own
    linear / dynamic / YaRN factor, as vLLM derives it); ``(None, why)`` for an API model or an
    unreadable config.

    Raises:
        LcevalError: an unknown backend or a bad option (:func:`.backends.parse_options`).
    """
    name = resolve_backend(spec.backend)
    if not BACKENDS[name].local:
        return None, "an API model's window is not known here"
    options = cast(LocalOptions, parse_options(name, split_run_options(spec.options)[1]))
    key = BACKENDS[name].window_option
    if key is not None and getattr(options, key) is not None:
        return int(getattr(options, key)), f"option {key}"
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8") if folder else "")
    except (OSError, ValueError, RecursionError):
        return None, "its config.json could not be read"
    section = window_config(config)
    if section is None:
        return None, "its config.json states no max_position_embeddings"
    n, own, scaling = model_window(section), section.get("rope_scaling"), options.rope_scaling
    if isinstance(own, Mapping) and scaling is None:
        # the checkpoint's own scaling, as vLLM derives its window (Vicuna-16k: linear x4 over
        # 4,096; YaRN over original_max_position_embeddings; llama3 / longrope already count it)
        kind, factor = own.get("type", own.get("rope_type")), own.get("factor")
        if kind in ("linear", "dynamic", "yarn") and isinstance(factor, int | float) and factor > 1:
            base = own.get("original_max_position_embeddings") if kind == "yarn" else None
            m = int((base or n) * factor)
            return m, f"config max_position_embeddings with its {kind} scaling x{factor:g}"
    if scaling is not None:
        base = scaling.original_max_position_embeddings or n
        return int(base * scaling.factor), f"rope_scaling x{scaling.factor:g} over {base:,}"
    return n, "config max_position_embeddings"


def truncation_window(specs: Sequence[ModelSpec]) -> int | None:
    """The window ``--truncate`` cuts contexts to for a size estimate of ``specs``' answers: the
    smallest :func:`declared_window` among them in tokens (None: none known, e.g. API models)."""
    windows = []
    for spec in specs:
        folder = None if spec.backend == "openai" else _local_folder(spec.model)
        n, _ = declared_window(spec, folder)
        if n is not None:
            windows.append(n)
    return min(windows, default=None)


def _quiet_tokenizer(folder: Path) -> Any:
    """The tokenizer in ``folder`` (None: unreadable), transformers' info held back unless
    verbose (it loads before the engine's log redirection)."""
    from transformers import AutoTokenizer  # heavy: transformers, for a window check
    from transformers.utils import logging as hf_logging  # heavy: transformers

    level = hf_logging.get_verbosity()
    if not verbose():
        hf_logging.set_verbosity_error()
    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except Exception:  # noqa: BLE001 - no tokenizer files: said by the caller
        return None
    finally:
        hf_logging.set_verbosity(level)


def check_fits(
    spec: ModelSpec,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    budget: Callable[[Sample], int],
    *,
    truncate: bool = False,
) -> str:
    """One line saying what was checked (or why not), before inference: the
    :data:`CHECKED_PROMPTS` samples longest in characters, rendered as the engine renders them and
    counted in the model's tokens (an API model: o200k_base tokens of the plain prompt), plus
    ``budget(sample)`` answer tokens, against :func:`declared_window`. With ``truncate`` (contexts
    are cut to fit) only the prompts without their context are checked: what no cut can help.

    Raises:
        LcevalError: the window cannot hold the longest prompt (naming the model, its window, the
            prompt's tokens and sample, and the way out that works: ``--max-new-tokens N`` when
            the prompt without its context and the budget already overflow, else ``--truncate``).
    """
    folder = None if spec.backend == "openai" else _local_folder(spec.model)
    window, source = declared_window(spec, folder)
    if window is None:
        return f"{spec.label}: window not checked ({source})"
    tokenizer = None if folder is None else _quiet_tokenizer(folder)
    if folder is not None and tokenizer is None:
        raise LcevalError(
            f"model {spec.label[-60:]}: no tokenizer could be loaded from {str(folder)[-80:]}"
        )
    fmt = str(spec.options.get("prompt_format", "auto"))
    how = "o200k_base estimate" if tokenizer is None else "model tokenizer"

    def chars(s: Sample, with_context: bool = True) -> int:
        parts = (s.description, s.instruction, s.system or "", s.assistant_prefix)
        history = sum(len(m["content"]) for m in s.history)
        text = len(context_text(s, contexts)) if with_context else 0
        return text + sum(len(p) for p in parts) + history

    def tokens(s: Sample, with_context: bool = True) -> int:
        text = context_text(s, contexts) if with_context else ""
        if tokenizer is None:
            return count_tokens(plain_text(s, text))
        return render_chat_prompt(tokenizer, s, text, 1 << 40, 0, fmt).n_tokens

    # the prompts without their context: no truncation helps them, only a smaller budget
    longest_bare = heapq.nlargest(CHECKED_PROMPTS, samples, key=lambda s: chars(s, False))
    bare = [(tokens(s, False), s) for s in longest_bare]
    n_bare, worst = max(bare, key=lambda c: c[0] + int(budget(c[1])))  # never empty
    if n_bare + int(budget(worst)) > window:
        most = max(window - max(n for n, _ in bare), 0)
        way = (
            f"cap the answers: --max-new-tokens {most} (max_new_tokens: {most} in a params file)"
            if most
            else "use a model with a longer window"
        )
        raise LcevalError(
            f"model {spec.label[-60:]}: window {window:,} tokens ({source}) < prompt without "
            f"its context {n_bare:,} tokens + {int(budget(worst)):,} new (sample "
            f"{worst.id[:40]}; {how}): truncating the context cannot help; {way}"
        )
    if truncate:
        return f"{spec.label}: truncate is set: contexts longer than its window are cut"
    counted = [(tokens(s), s) for s in heapq.nlargest(CHECKED_PROMPTS, samples, key=chars)]
    n, longest = max(counted, key=lambda c: c[0] + int(budget(c[1])))  # never empty
    new = int(budget(longest))
    if n + new > window:
        raise LcevalError(
            f"model {spec.label[-60:]}: window {window:,} tokens ({source}) < longest prompt "
            f"{n:,} tokens + {new:,} new (sample {longest.id[:40]}; {how}); use a longer "
            "window or shorter lengths, or truncate (--truncate; truncate: true in a params file)"
        )
    return (
        f"{spec.label}: window {window:,} tokens ({source}) holds the longest prompt "
        f"({n + new:,} tokens with its budget; {how})"
    )


@contextmanager
def opened(spec: ModelSpec, log_to: str | os.PathLike[str] | None = None) -> Iterator[Any]:
    """``spec``'s engine, loaded on entry and closed on exit, named by :func:`stored_name` (for
    notebooks that drive one: ManyIFEval's refinement, the contamination signals); with
    ``log_to`` (a run folder) its output goes to that run's ``logs/lceval.log``.

    Raises:
        LcevalError: what :func:`lceval.models.base.load_backend` refuses.
    """
    logged = nullcontext() if log_to is None else engine_output(log_to, f"engine {spec.model}")
    with logged:
        engine = load_backend(spec.backend, spec.model, **spec.options)
        engine.name = stored_name(spec)
        try:
            yield engine
        finally:
            engine.close()
