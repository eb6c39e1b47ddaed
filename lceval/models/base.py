"""The Backend base class, the generation config, and loading an engine (each backend's options:
:mod:`lceval.models.backends`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import Field

from lceval.core.console import log
from lceval.core.errors import LcevalError, one_line
from lceval.core.records import Context, Response, Sample
from lceval.models.backends import (
    AUTO_BACKEND,
    BACKENDS,
    BackendOptions,
    check_backend_options,
    choose_backend,
    engine_class,
    parse_options,
    resolve_backend,
)
from lceval.models.embedded import check_model
from lceval.models.lifeline import tie_forked_children
from lceval.params import Generation, validate

__all__ = ["BACKENDS", "check_backend_options", "choose_backend"]


class GenerationConfig(Generation):
    """What an engine receives: the generation config declared once
    (:class:`lceval.params.Generation`: ``max_new_tokens`` caps every sample's own budget,
    ``max_thinking_tokens`` a thinking model's, ``temperature`` (0: greedy), ``top_p``, ``seed``,
    ``stop`` added to every sample's own stop strings), with ``extra`` (backend sampling options,
    passed through) and ``engine`` (the backend's ``cache_fields``,
    :func:`lceval.models.generate.engine_config`: in the hash, never passed to the engine). Each
    engine maps it once to its library's settings (transformers ``generate`` keywords, vLLM
    ``SamplingParams``, the OpenAI request) through :meth:`budget` and :meth:`stops`."""

    extra: dict[str, Any] = Field(default_factory=dict)
    engine: dict[str, Any] = Field(default_factory=dict)

    def hash(self) -> str:
        """12-hex-digit hash, part of the response cache key (an empty ``engine``, no ``stop`` and
        a null ``max_thinking_tokens`` are left out, so older configs keep their hash)."""
        d = self.model_dump()
        for key, unset in (("engine", {}), ("stop", []), ("max_thinking_tokens", None)):
            if d[key] == unset:
                del d[key]
        blob = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def budget(self, sample: Sample) -> int:
        """New-token budget for ``sample`` (its own, capped by ``max_new_tokens``)."""
        if self.max_new_tokens is None:
            return sample.max_new_tokens
        return min(sample.max_new_tokens, self.max_new_tokens)

    def stops(self, sample: Sample) -> tuple[str, ...]:
        """``sample``'s own stop strings, then ``stop``'s (duplicates once; an empty one, which
        would end every answer before it starts, left out)."""
        return tuple(dict.fromkeys(s for s in (*sample.stop, *self.stop) if s))


class Backend:
    """What every engine is (hf, vllm, openai and the tests' scripted ones subclass it): all that
    :func:`lceval.models.generate.generate` and the inference stage use of one, with the defaults
    of an engine that counts nothing (an API's). An engine overrides :meth:`generate` and what it
    measures; ``name`` is recorded in Response.model."""

    name: str = "engine"
    call_size: int = 8
    """Samples per engine call when the caller gives no ``batch_size`` (vLLM 256)."""
    prompt_tokens_requested: int | None = None
    """Prompt tokens answered so far (None: not counted; API engines)."""
    prompt_tokens_computed: int | None = None
    """Of those, the tokens the engine encoded (the rest came from a prefix cache)."""
    prompt_tokens_prefilled: int | None = None
    """Prompt tokens of requests whose prefill is done (the bar's progress before the first
    answer)."""
    prompt_work: Mapping[str, float] | None = None
    """The engine's measured prefill and decode work (:data:`lceval.core.progress.WORK_KEYS`) for
    the bar's time left."""
    running_answers: Sequence[tuple[int, int]] = ()
    """``(tokens generated so far, budget)`` of each answer in flight (vLLM's; empty where the
    engine does not report them) for the bar's time left."""

    @property
    def cache_fields(self) -> Mapping[str, Any]:
        """The engine's settings that change outputs (:func:`cache_fields`): in the response
        key's config hash, never passed to the engine."""
        return {}

    def generate(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> list[Response]:
        """One Response per sample, in order. Errors of one sample become finish_reason="error"."""
        raise NotImplementedError

    def stream(
        self,
        samples: Sequence[Sample],
        contexts: Mapping[str, Context],
        config: GenerationConfig,
    ) -> Iterator[Response]:
        """The answers of :meth:`generate` as the engine finishes them (any order); by default
        its whole batch at once (hf, openai; vLLM streams)."""
        yield from self.generate(samples, contexts, config)

    def info(self) -> dict[str, Any]:
        """Provenance for run.json: backend, resolved path or hub id, revision or file hash."""
        return {"backend": self.name}

    def close(self) -> None:
        """Release the engine (GPU memory, worker processes, HTTP clients)."""
        return None


def cache_fields(
    engine: str, dtype: str, prompt_format: str, rope: Any, thinking: Any = None
) -> dict[str, Any]:
    """An engine's settings that change outputs and so join the response cache key: the engine
    and dtype always, ``prompt_format`` when plain, the RoPE override when it differs from the
    checkpoint (``rope``: a ``RopeOverride``), a thinking model's switch, budget and marker.
    """
    out = {
        "engine": engine,
        "dtype": dtype,
        "thinking": thinking.cache_field() if thinking is not None else None,
        "prompt_format": "plain" if prompt_format == "plain" else None,
        "rope": rope.cache_field() if rope is not None else None,
    }
    return {k: v for k, v in out.items() if v is not None}


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


def backend_options(backend: str) -> dict[str, Any]:
    """Option name -> default for ``backend`` (``auto``: the one :func:`choose_backend` picks):
    its declared options, then the engine arguments it passes through (None: the engine's own).

    Raises:
        LcevalError: unknown backend name.
    """
    spec = BACKENDS[resolve_backend(backend)]
    out = {k: f.get_default() for k, f in spec.options.model_fields.items()}
    passed = spec.extra_options() if spec.extra_options is not None else []
    return out | {k: None for k in passed if k not in out and k != "model"}


class RunOptions(BackendOptions):
    """Options every local backend takes that say how a model is run (never passed to the engine
    nor in the cache key)."""

    replicas: int = Field(1, ge=1, description="engine replicas on Ray (lceval.models.replicas)")


RUN_OPTIONS: dict[str, Any] = {k: f.default for k, f in RunOptions.model_fields.items()}


def runs_local_engine(backend: str) -> bool:
    """Whether ``backend`` (``auto`` included) loads weights in this process (hf, vllm)."""
    return backend == AUTO_BACKEND or (backend in BACKENDS and BACKENDS[backend].local)


def split_run_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` split into (:class:`RunOptions` given, the engine's own options)."""
    run = {k: v for k, v in options.items() if k in RUN_OPTIONS}
    return run, {k: v for k, v in options.items() if k not in RUN_OPTIONS}


def replicas_of(options: Mapping[str, Any]) -> int:
    """The ``replicas`` option (default 1); LcevalError unless an integer >= 1."""
    return validate(RunOptions, split_run_options(options)[0], "params", "option").replicas


def check_load(backend: str, model: str | None, options: Mapping[str, Any]) -> str:
    """The backend that will load (``auto`` resolved), after checking without starting an engine
    what :func:`load_backend` can refuse: every option, the model, a remote backend's name and key.

    Raises:
        LcevalError: one line naming what is wrong.
    """
    name = resolve_backend(backend)
    spec = BACKENDS[name]
    run, options = split_run_options(options)
    if run:
        if not spec.local:
            raise LcevalError(f"backend {name} has no option replicas (it answers over an API)")
        replicas_of(run)
    parsed = parse_options(name, options, backend)
    if spec.local:
        check_model(model)
    if spec.ready is not None:
        spec.ready(model, parsed)
    return name


def load_backend(backend: str, model: str | None = None, **options: Any) -> Backend:
    """Construct a backend by name, its engine imported only now.

    Args:
        backend: ``"hf"``, ``"vllm"``, ``"openai"`` or ``"auto"`` (:func:`choose_backend`; when
            vLLM does not start, hf answers after a one-line warning, without its options).
        model: a model folder, hub id or None (the embedded model); for ``openai`` the served name.
        **options: the backend's declared options (:mod:`lceval.models.backends`); ``replicas``
            is the caller's (:mod:`lceval.models.replicas`).

    Raises:
        LcevalError: what :func:`check_load` refuses.
    """
    name = check_load(backend, model, options)
    options = split_run_options(options)[1]
    if backend == AUTO_BACKEND:  # decided once (choose_backend), said once
        log(f"backend auto -> {name} ({choose_backend()[1]})")
        if name == "vllm":
            try:
                return load_backend("vllm", model, **options)
            except LcevalError as exc:
                kept = {k: v for k, v in options.items() if k in backend_options("hf")}
                dropped = sorted(set(options) - set(kept))
                note = f"; options left out: {', '.join(dropped)}" if dropped else ""
                log(f"warning: vLLM did not start ({one_line(exc)}); using hf{note}")
                return load_backend("hf", model, **kept)
    tie_forked_children()  # engine processes forked from here die with this process
    engine: Backend = engine_class(name)(model, options=parse_options(name, options))
    return engine
