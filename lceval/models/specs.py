"""Several models per run: the ``models:`` list of a params file, and whether each model's window
holds the run's prompts, both checked before any engine starts.

A params section that answers samples (:class:`lceval.params.InferenceSection`) names its
models in one of two ways (never both)::

    model: meta-llama/Llama-3.1-8B-Instruct        # one model
    models:                                        # several, answered one engine at a time
      - Qwen/Qwen2.5-7B-Instruct                   # a string: the params' backend and options
      - model: /models/llama-3.1-70b               # a mapping:
        backend: vllm                              #   optional, default: the params' backend
        options: {tensor_parallel_size: 2}         #   merged over the params' backend_options
        name: llama-70b                            #   optional display name (Response.model)

``embedded`` (or ``smollm2``) names the embedded SmolLM2-135M-Instruct stand-in; it is used only
when named: a params section naming no model stops with one line (:func:`resolve_models`).

Before inference, :func:`check_fits` compares each model's context window with the run's longest
prompt plus its answer budget; a model that cannot hold it stops the run with one line naming the
model, its window and the prompt, unless truncation was asked for (LIFBench Sec. 5.1 and L-Eval
right-truncate the context of models with shorter windows).
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample

SPEC_KEYS = ("model", "backend", "options", "name")
"""Keys of one ``models:`` entry given as a mapping."""

CHECKED_PROMPTS = 16
"""Prompts tokenized by :func:`longest_prompt`: the run's longest in characters."""

NO_MODEL = (
    "no model named: set `model:` or `models:` (a path or hub id; `model: embedded` for the "
    "135M CPU stand-in)"
)


@dataclass(frozen=True)
class ModelSpec:
    """One model of a run: what to load, on which engine, with which options."""

    model: str
    """Model id, local folder, or ``embedded`` (the SmolLM2-135M-Instruct stand-in)."""
    backend: str = "auto"
    """Backend name (``auto``, ``hf``, ``vllm``, ``openai``)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Engine options: the params' ``backend_options``, the entry's own ``options`` over them."""
    name: str | None = None
    """Display name recorded as ``Response.model`` (None: the engine's own name for the model)."""

    def with_options(self, options: Mapping[str, Any]) -> ModelSpec:
        """This model with ``options`` as its engine options (e.g. an NTK point's RoPE ones)."""
        return ModelSpec(self.model, self.backend, dict(options), self.name)

    @property
    def label(self) -> str:
        """The name used in messages: the display name, else the model."""
        return self.name or self.model


def _entry(value: Any, i: int, backend: str, options: Mapping[str, Any], where: str) -> ModelSpec:
    """One ``models:`` entry (a string or a mapping) as a :class:`ModelSpec`."""
    at = f"{where}: models[{i}]"
    if isinstance(value, ModelSpec):  # already resolved (e.g. the NTK sweep's per-point model)
        return value
    if isinstance(value, str):
        if not value.strip():
            raise LcevalError(f"{at} is an empty string")
        return ModelSpec(value, backend, dict(options))
    if not isinstance(value, Mapping):
        raise LcevalError(
            f"{at} must be a model id or a mapping {{model, backend, options, name}}, "
            f"got {type(value).__name__}"
        )
    unknown = sorted(set(value) - set(SPEC_KEYS))
    if unknown:
        raise LcevalError(
            f"{at}: unknown key(s) {', '.join(map(str, unknown))}; known: model, "
            "backend, options, name"
        )
    model = value.get("model")
    if not isinstance(model, str) or not model.strip():
        raise LcevalError(f"{at}: 'model' must be a non-empty string, got {model!r:.80}")
    own_backend = value.get("backend") or backend
    if not isinstance(own_backend, str):
        raise LcevalError(f"{at}: 'backend' must be a string, got {own_backend!r:.80}")
    own = value.get("options") or {}
    if not isinstance(own, Mapping):
        raise LcevalError(f"{at}: 'options' must be a mapping, got {type(own).__name__}")
    name = value.get("name")
    if name is not None:
        check_display_name(name, f"{at}: 'name'")
    return ModelSpec(model, own_backend, {**dict(options), **dict(own)}, name)


def check_display_name(name: Any, what: str = "model name") -> str:
    """``name`` when it can name a model's answers: a non-empty string of printable characters
    (no newline or other control character: it is written on progress lines, in tables and as a
    key of run.json), at most 200 characters, not only spaces.

    Raises:
        LcevalError: one line naming ``what`` and the problem.
    """
    if not isinstance(name, str) or not name.strip():
        raise LcevalError(f"{what} must be a non-empty string, got {name!r:.80}")
    if any(not c.isprintable() for c in name):
        raise LcevalError(f"{what} {name!r:.80} holds a newline or control character")
    if len(name) > 200:
        raise LcevalError(f"{what} is {len(name)} characters long; at most 200")
    return name


def stored_name(spec: ModelSpec) -> str:
    """The name ``spec``'s answers are stored under (``Response.model``, run.json's ``models``
    key), known without loading anything: the display name, else the name the engine gives the
    model (the embedded model's, a local folder as typed, a hub id, an API's served name).
    An answer's identity is this name: two models of a run never share it (:func:`check_names`).
    """
    if spec.name:
        return spec.name
    from lceval.models.embedded import EMBEDDED_ALIASES, EMBEDDED_NAME

    text = spec.model.strip()
    if spec.backend != "openai" and text.lower() in EMBEDDED_ALIASES:
        return EMBEDDED_NAME
    return text.rstrip("/") or text


def location(spec: ModelSpec) -> str:
    """Where ``spec``'s weights (or API model) are: ``embedded``, a local folder's absolute
    path, a hub id, or ``openai:<base_url>|<served name>`` (no engine loaded)."""
    text = spec.model.strip()
    if spec.backend == "openai":
        base = str(spec.options.get("base_url") or os.environ.get("OPENAI_BASE_URL") or "")
        return f"openai:{base.rstrip('/')}|{text}"
    from lceval.models.embedded import EMBEDDED_ALIASES

    if text.lower() in EMBEDDED_ALIASES:
        return "embedded"
    path = Path(text).expanduser()
    if path.is_dir():
        return str(path.resolve())
    return text


def _engine_of(spec: ModelSpec) -> str:
    """The engine ``spec`` will load (``auto`` decided by ``choose_backend``)."""
    from lceval.models.backends import resolve_backend

    return resolve_backend(spec.backend)


def recorded_location(entry: Mapping[str, Any]) -> str | None:
    """:func:`location` of a model as run.json's ``models`` entry records it (None: unknown)."""
    if isinstance(entry.get("location"), str):
        return str(entry["location"])
    if entry.get("backend") == "openai":
        return f"openai:{str(entry.get('base_url', '')).rstrip('/')}|{entry.get('model')}"
    source = entry.get("source")
    if source == "embedded":
        return "embedded"
    if source == "local" and isinstance(entry.get("path"), str):
        return str(entry["path"])
    if source == "hub" and isinstance(entry.get("hub_id"), str):
        return str(entry["hub_id"])
    return None


ANSWER_OPTIONS = (
    "dtype",
    "prompt_format",
    "rope_theta",
    "rope_scaling",
    "window",
    "max_model_len",
    "trust_remote_code",
)
"""Engine options that change a model's answers (the others, ``device``, ``num_threads``, batch
and parallelism sizes, retries, change only speed): a model whose answers are already stored
under a name may answer more samples under it only with the same values of these."""


def _options_text(options: Mapping[str, Any]) -> str:
    kept = {k: v for k, v in options.items() if k in ANSWER_OPTIONS}
    return json.dumps(kept, sort_keys=True, default=str)


def check_names(
    specs: Sequence[ModelSpec], earlier: Mapping[str, Any], run_id: str = "the run"
) -> None:
    """Refuse, before anything starts, two models that would store their answers under one name:
    two models of this command, or a model and earlier answers in the run folder (run.json's
    ``models``) from another place (path, hub id, endpoint), backend or options.

    Args:
        specs: the models of the command.
        earlier: run.json's ``models`` (stored name -> the entry recorded when it answered).
        run_id: the run, for messages.

    Raises:
        LcevalError: one line naming both models and the shared name, and the way out (a
            different ``name``).
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
        was, now = recorded_location(entry), location(spec)
        why = None
        if was is not None and was != now:
            why = f"from {was[-80:]}"
        elif "options" in entry and _options_text(entry["options"]) != _options_text(spec.options):
            why = f"with options {_options_text(entry['options'])[:80]}"
        elif entry.get("backend") not in (None, _engine_of(spec)):
            why = f"from backend {entry.get('backend')}"
        if why:
            raise LcevalError(
                f"model {spec.model[:60]} would store its answers as {name[:60]!r}, which run "
                f"{run_id} already holds {why}; give it a different `name`"
            )


def resolve_models(
    model: str | None,
    models: Sequence[Any] | None,
    backend: str = "auto",
    options: Mapping[str, Any] | None = None,
    where: str = "inference",
    one: str | None = None,
) -> tuple[ModelSpec, ...]:
    """The models a params section names, in order.

    Args:
        model: one model (a string), or None.
        models: several (strings, ``{model, backend, options, name}`` mappings, or
            :class:`ModelSpec` taken as they are), or None.
        backend: the section's backend (an entry's own ``backend`` wins).
        options: the section's ``backend_options`` (an entry's own ``options`` go over them).
        where: the section's owner for messages.
        one: why only one model can be taken here (then more than one is refused with it).

    Returns:
        One :class:`ModelSpec` per model.

    Raises:
        LcevalError: one line: both ``model`` and ``models``, neither (the embedded stand-in is
            used only when named), an empty list, a malformed entry, or two entries that would
            store their answers under the same name (:func:`stored_name`); more than one with
            ``one``.
    """
    options = dict(options or {})
    if model is not None and models is not None:
        raise LcevalError(f"{where}: give `model` or `models`, not both (model: {model!r:.80})")
    if models is None:
        if model is None:
            raise LcevalError(f"{where}: {NO_MODEL}")
        return (_entry(model, 0, backend, options, where),)
    if isinstance(models, str | Mapping):
        models = [models]
    if not isinstance(models, Sequence) or not models:
        raise LcevalError(f"{where}: `models` must be a non-empty list, got {models!r:.80}")
    specs = tuple(_entry(v, i, backend, options, where) for i, v in enumerate(models))
    try:
        check_names(specs, {})
    except LcevalError as exc:
        raise LcevalError(f"{where}: {exc}") from None
    if one is not None and len(specs) > 1:
        raise LcevalError(f"{where}: give one model here ({one}), got {len(specs)}")
    return specs


# --------------------------------------------------------------------- window vs longest prompt
def _local_folder(model: str, files: Sequence[str]) -> Path | None:
    """A local folder holding ``files`` of ``model`` (the embedded model converted, a local
    folder, or a hub snapshot: the cache first, then the network unless ``HF_HUB_OFFLINE``);
    None when it cannot be had."""
    from lceval.models.embedded import check_model, resolve_model

    kind = check_model(model)
    if kind != "hub":
        return Path(resolve_model(model).path)
    try:
        from huggingface_hub import snapshot_download

        try:
            return Path(snapshot_download(model, allow_patterns=list(files), local_files_only=True))
        except Exception:  # noqa: BLE001 - not cached: the network, unless offline
            if os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0"):
                return None
            return Path(snapshot_download(model, allow_patterns=list(files)))
    except Exception:  # noqa: BLE001 - no network, gated repo: the window stays unknown
        return None


TOKENIZER_FILES = (
    "config.json",
    "tokenizer*",
    "*.model",
    "*.tiktoken",
    "*.jinja",
    "vocab*",
    "merges.txt",
    "special_tokens_map.json",
)


def window_config(config: Any) -> Any:
    """The section of a model config that states its window: the config itself, or its
    ``text_config`` (multimodal checkpoints); a transformers config object or config.json as a
    dict. None: neither states ``max_position_embeddings``."""

    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

    for cfg in (config, get(config, "text_config")):
        n = get(cfg, "max_position_embeddings") if cfg is not None else None
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return cfg
    return None


def model_window(config: Any, tokenizer: Any = None) -> int:
    """A loaded model's context window in tokens: the config's ``max_position_embeddings`` (or
    its text config's, :func:`window_config`), else the tokenizer's ``model_max_length``; the one
    rule the hf engine (``HFBackend.window``), the planner (``lceval.run.plan``) and
    :func:`declared_window` read a checkpoint's window by.

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
    """The context window ``spec``'s engine will have, in tokens, and where it comes from.

    The ``max_model_len`` (vllm) or ``window`` (hf) option; else the checkpoint's
    ``max_position_embeddings`` (or its text config's), times the factor of a ``rope_scaling``
    option (over its ``original_max_position_embeddings`` when given), as the engines resolve it
    (:func:`model_window`, ``lceval.models.rope``), or times the factor of the
    checkpoint's own linear, dynamic or YaRN scaling (as vLLM derives ``max_model_len``).

    Returns:
        ``(tokens, source)``, or ``(None, why unknown)`` for an API model or an unreadable config.
    """
    if spec.backend == "openai":
        return None, "an API model's window is not known here"
    for key in ("max_model_len", "window"):
        value = spec.options.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"option {key}"
    if folder is None or not (folder / "config.json").is_file():
        return None, "its config.json could not be read"
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, "its config.json could not be read"
    section = window_config(config)
    if section is None:
        return None, "its config.json states no max_position_embeddings"
    n, own = model_window(section), section.get("rope_scaling")
    if isinstance(own, Mapping) and "rope_scaling" not in spec.options:
        # the checkpoint's own scaling, as vLLM derives its window (Vicuna-16k: linear x4 over
        # 4,096; YaRN over original_max_position_embeddings; llama3 / longrope already count it)
        kind = own.get("type", own.get("rope_type"))
        factor = own.get("factor")
        if kind in ("linear", "dynamic", "yarn") and isinstance(factor, int | float) and factor > 1:
            base = own.get("original_max_position_embeddings") if kind == "yarn" else None
            m = int((base or n) * factor)
            return m, f"config max_position_embeddings with its {kind} scaling x{factor:g}"
    from lceval.models.rope import parse_rope_scaling

    scaling = parse_rope_scaling(spec.options.get("rope_scaling"))
    if scaling is not None:
        base = scaling.original_max_position_embeddings or n
        return int(base * scaling.factor), f"rope_scaling x{scaling.factor:g} over {base:,}"
    return int(n), "config max_position_embeddings"


@dataclass(frozen=True)
class Longest:
    """The run's longest prompt for one model."""

    tokens: int
    """Prompt tokens plus the sample's answer budget."""
    prompt_tokens: int
    """Prompt tokens alone (chat template included when the model has one)."""
    sample_id: str
    """The sample."""
    how: str
    """``"model tokenizer"`` or the estimate used."""


def longest_prompt(
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    budget: Any,
    tokenizer: Any | None,
    prompt_format: str = "auto",
) -> Longest:
    """The run's longest prompt plus answer budget, in the model's tokens.

    The :data:`CHECKED_PROMPTS` samples longest in characters (prompt parts and history) are
    rendered as the engine renders them (``render_chat_prompt`` with no window) and counted with
    the model's tokenizer. Without a tokenizer (an API model, a hub model that cannot be
    fetched) the estimate is the o200k_base count of the plain prompt: GPT-4o's tokenizer needs
    about as many or fewer tokens than open models' for English text, so the estimate rarely
    stops a run that fits.

    Args:
        samples: the samples to answer.
        contexts: context id -> Context.
        budget: ``budget(sample) -> int``, the answer budget in tokens.
        tokenizer: a transformers tokenizer, or None to estimate.
        prompt_format: the engine's ``prompt_format`` option.
    """
    from lceval.core.tokens import count_tokens
    from lceval.models.prompts import context_text, plain_text, render_chat_prompt

    def chars(s: Sample) -> int:
        parts = (s.description, s.instruction, s.system or "", s.assistant_prefix)
        ctx = context_text(s, contexts)
        return len(ctx) + sum(len(p) for p in parts) + sum(len(m["content"]) for m in s.history)

    best: Longest | None = None
    for s in heapq.nlargest(CHECKED_PROMPTS, samples, key=chars):
        ctx = context_text(s, contexts)
        if tokenizer is not None:
            n = render_chat_prompt(tokenizer, s, ctx, 1 << 40, 0, prompt_format).n_tokens
            how = "model tokenizer"
        else:
            n = count_tokens(plain_text(s, ctx))
            how = "o200k_base estimate"
        total = n + int(budget(s))
        if best is None or total > best.tokens:
            best = Longest(total, n, s.id, how)
    assert best is not None  # samples is never empty here (select_samples refuses)
    return best


def _quiet_tokenizer(folder: Path) -> Any:
    """The tokenizer in ``folder``, or None when it cannot be read (the caller estimates).

    Loaded before the engine's own log redirection starts, so transformers' records (config
    dumps at info verbosity) are held back unless lceval is verbose (``-v``, LCEVAL_VERBOSE=1).
    """
    from lceval.core.console import verbose

    try:
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError:
        return None
    level = hf_logging.get_verbosity()
    if not verbose():
        hf_logging.set_verbosity_error()
    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except Exception:  # noqa: BLE001 - no tokenizer files: estimate instead
        return None
    finally:
        hf_logging.set_verbosity(level)


def check_fits(
    spec: ModelSpec,
    samples: Sequence[Sample],
    contexts: Mapping[str, Context],
    budget: Any,
) -> str:
    """Stop before inference when ``spec``'s window cannot hold the run's longest prompt.

    Returns:
        One line saying what was checked (or why the window is unknown and was not checked).

    Raises:
        LcevalError: one line naming the model, its window and the longest prompt (tokens,
            sample id), and the ways out.
    """
    folder = None if spec.backend == "openai" else _local_folder(spec.model, TOKENIZER_FILES)
    window, source = declared_window(spec, folder)
    if window is None:
        return f"{spec.label}: window not checked ({source})"
    tokenizer = None
    if folder is not None:
        tokenizer = _quiet_tokenizer(folder)
        if tokenizer is None and spec.backend != "openai":
            raise LcevalError(
                f"model {spec.label[-60:]}: no tokenizer could be loaded from {str(folder)[-80:]}"
            )
    fmt = str(spec.options.get("prompt_format", "auto"))
    longest = longest_prompt(samples, contexts, budget, tokenizer, fmt)
    if longest.tokens > window:
        new = longest.tokens - longest.prompt_tokens
        raise LcevalError(
            f"model {spec.label[-60:]}: window {window:,} tokens ({source}) < longest prompt "
            f"{longest.prompt_tokens:,} tokens + {new:,} new (sample {longest.sample_id[:40]}; "
            f"{longest.how[:40]}); use a longer window or shorter lengths, or truncate "
            "(--truncate; truncate: true in a params file)"
        )
    return (
        f"{spec.label}: window {window:,} tokens ({source}) holds the longest prompt "
        f"({longest.tokens:,} tokens with its budget; {longest.how})"
    )


@contextmanager
def opened(spec: ModelSpec, log_to: str | os.PathLike[str] | None = None) -> Iterator[Any]:
    """``spec``'s engine, loaded on entry and closed on exit (for notebooks that drive an engine
    themselves: ManyIFEval's refinement rounds, the contamination signals), named by its display
    name when it has one.

    Args:
        spec: the model.
        log_to: a run folder: while the engine lives, its output (and its worker processes')
            goes to the run's ``logs/lceval.log`` (:func:`lceval.core.console.engine_output`), not
            to
            the notebook; None: left where it goes.

    Raises:
        LcevalError: what :func:`lceval.models.base.load_backend` refuses.
    """
    from contextlib import nullcontext

    from lceval.core.console import engine_output
    from lceval.models.base import load_backend

    logged = nullcontext() if log_to is None else engine_output(log_to, f"engine {spec.model}")
    with logged:
        engine = load_backend(spec.backend, spec.model, **spec.options)
        engine.name = stored_name(spec)
        try:
            yield engine
        finally:
            engine.close()
