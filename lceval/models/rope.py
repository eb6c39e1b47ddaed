"""RoPE overrides set on the engines' own config, as HELMET does (transformers' config before
``from_pretrained``, vLLM's ``hf_overrides``), never on model code. ``rope_theta`` sets the base
(L-Eval's NTK sweep, An et al., ACL 2024); ``rope_scaling`` replaces the checkpoint's scaling:
``dynamic`` and ``linear`` pass through, ``ntk`` is plain RoPE with the NTK-aware base.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from lceval.core.errors import LcevalError, one_line
from lceval.params import first_error


class RopeScaling(BaseModel):
    """The ``rope_scaling`` option: ``{type, factor, original_max_position_embeddings}``
    (``rope_type`` is taken for ``type``) or the short form ``"TYPE:factor"``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["ntk", "dynamic", "linear"] = Field(
        validation_alias=AliasChoices("type", "rope_type")
    )
    factor: float = Field(gt=0, allow_inf_nan=False)  # s > 1 extends the window about s-fold
    original_max_position_embeddings: int | None = Field(None, ge=1)  # None: the checkpoint's

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        name, sep, number = value.partition(":") if isinstance(value, str) else ("", "", "")
        if sep:
            return {"type": name.strip(), "factor": number}
        if not isinstance(value, Mapping):
            raise ValueError("use 'TYPE:FACTOR' (e.g. ntk:4) or {type: ..., factor: ...}")
        return value


def parse_rope_scaling(spec: Any) -> RopeScaling | None:
    """The ``rope_scaling`` option parsed (None stays None).

    Raises:
        LcevalError: an unknown type or key, or a factor / window that is not a positive number.
    """
    if spec is None or isinstance(spec, RopeScaling):
        return spec
    try:
        return RopeScaling.model_validate(spec)
    except ValidationError as exc:
        raise LcevalError(first_error(RopeScaling, exc, "params", "rope_scaling")) from None


def ntk_aware_base(base: float, factor: float, rotary_dim: int) -> float:
    """The NTK-aware RoPE base b' = b * s^(d / (d - 2)) (b: base, s: factor, d: rotary dim >= 4).

    Source: YaRN (Peng et al., 2023, arXiv:2309.00071), Sec. 3.2. Llama-2 (d = 128,
    b = 10,000): s = 2 gives 20,221; s = 8 gives 82,685.
    """
    if rotary_dim < 4:
        raise LcevalError(f"NTK-aware scaling needs a rotary dimension >= 4, got {rotary_dim}")
    return float(base * factor ** (rotary_dim / (rotary_dim - 2)))


def rotary_dim(config: Any) -> int:
    """Rotated dims per head: ``head_dim`` (else hidden / heads) x ``partial_rotary_factor``."""
    cfg = getattr(config, "text_config", None) or config
    head = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    params = getattr(cfg, "rope_parameters", None) or {}
    partial = params.get("partial_rotary_factor") or getattr(cfg, "partial_rotary_factor", None)
    return int(head * (partial or 1.0))


def checkpoint_rope(config: Any) -> dict[str, Any]:
    """The checkpoint's RoPE parameters, flat (``rope_type``, ``rope_theta``, ...), from
    transformers 5's ``rope_parameters`` or 4.x's ``rope_scaling`` and ``rope_theta``.

    Raises:
        LcevalError: no RoPE base, or per-layer-type parameters (not supported).
    """
    cfg = getattr(config, "text_config", None) or config
    params = getattr(cfg, "rope_parameters", None)
    if not isinstance(params, Mapping):
        params = {"rope_theta": getattr(cfg, "rope_theta", None), **(cfg.rope_scaling or {})}
    params = copy.deepcopy(dict(params))
    if params and all(isinstance(v, Mapping) for v in params.values()):
        raise LcevalError("RoPE overrides: per-layer-type rope_parameters are not supported")
    params["rope_type"] = params.pop("type", None) or params.get("rope_type") or "default"
    if not isinstance(params.get("rope_theta"), int | float):
        raise LcevalError("RoPE overrides: the model config states no rope_theta (not RoPE?)")
    params["rope_theta"] = float(params["rope_theta"])
    return params


@dataclass(frozen=True)
class RopeOverride:
    """The RoPE a backend loads a model with: the effective and the checkpoint's parameters
    (``rope_type``, ``rope_theta``, ``factor``, ...), ``max_position_embeddings`` after and before
    (tokens), the options as given and the config layout (transformers 5's ``rope_parameters``,
    else 4.x's ``rope_theta`` / ``rope_scaling``: transformers 4.56 is still allowed)."""

    parameters: Mapping[str, Any]
    checkpoint: Mapping[str, Any]
    rotary_dim: int
    max_position_embeddings: int
    checkpoint_max_position_embeddings: int
    spec: Mapping[str, Any] = field(default_factory=dict)
    layout_v5: bool = True

    @property
    def _window(self) -> dict[str, int]:
        n = self.max_position_embeddings
        return (
            {} if n == self.checkpoint_max_position_embeddings else {"max_position_embeddings": n}
        )

    @property
    def changed(self) -> bool:
        return bool(self._window) or dict(self.parameters) != dict(self.checkpoint)

    @property
    def rope_theta(self) -> float:
        return float(self.parameters["rope_theta"])

    def extended_window(self) -> int | None:
        """Tokens a scaling spec is meant to reach (s x n), None without one."""
        s = self.spec.get("rope_scaling")
        if not s:
            return None
        n = s.get("original_max_position_embeddings") or self.checkpoint_max_position_embeddings
        return int(n * s["factor"])

    def config_overrides(self) -> dict[str, Any]:
        """Config fields to set (transformers config, vLLM ``hf_overrides``); empty: unchanged."""
        if not self.changed:
            return {}
        p = dict(self.parameters)
        if self.layout_v5:
            return {"rope_parameters": p, **self._window}
        theta = p.pop("rope_theta")
        scaling = None if p["rope_type"] == "default" else p
        return {"rope_theta": theta, "rope_scaling": scaling, **self._window}

    def cache_field(self) -> dict[str, Any] | None:
        """The response-cache-key entry (None when the model is the checkpoint's)."""
        if not self.changed:
            return None
        return {"parameters": dict(sorted(self.parameters.items())), **self._window}

    def record(self) -> dict[str, Any]:
        """For run.json: effective and checkpoint parameters, d, window, the spec, changed."""
        return {
            "rope_theta": self.rope_theta,
            "parameters": dict(self.parameters),
            "checkpoint": dict(self.checkpoint),
            "rotary_dim": self.rotary_dim,
            "max_position_embeddings": self.max_position_embeddings,
            "spec": dict(self.spec),
            "changed": self.changed,
        }


def resolve_rope(config: Any, rope_theta: Any = None, rope_scaling: Any = None) -> RopeOverride:
    """The effective RoPE of ``config`` (a transformers config, not modified) under the options
    (checked by ``lceval.models.backends.LocalOptions``).

    Raises:
        LcevalError: a bad ``rope_scaling``, or a model without a single RoPE base.
    """
    scaling = parse_rope_scaling(rope_scaling)
    cfg = getattr(config, "text_config", None) or config
    ck, dim = checkpoint_rope(cfg), rotary_dim(cfg)
    ck_max = int(getattr(cfg, "max_position_embeddings", 0) or 0)
    base = float(rope_theta) if rope_theta is not None else ck["rope_theta"]
    params, max_pos = {**ck, "rope_theta": base}, ck_max
    spec: dict[str, Any] = {} if rope_theta is None else {"rope_theta": float(rope_theta)}
    if scaling is not None:
        spec["rope_scaling"] = scaling.model_dump(exclude_none=True)
        keep = {k: ck[k] for k in ("partial_rotary_factor",) if k in ck}
        if scaling.type == "ntk":
            params = {
                "rope_type": "default",
                "rope_theta": ntk_aware_base(base, scaling.factor, dim),
            }
        else:
            params = {"rope_type": scaling.type, "rope_theta": base, "factor": scaling.factor}
            max_pos = scaling.original_max_position_embeddings or ck_max
        params.update(keep)
    v5 = isinstance(getattr(cfg, "rope_parameters", None), Mapping)
    return RopeOverride(params, ck, dim, max_pos, ck_max, spec, v5)


def apply_rope(config: Any, rope: RopeOverride) -> Any:
    """Set ``rope``'s overrides on ``config`` (in place, returned); transformers validates them.

    Raises:
        LcevalError: transformers rejects the parameters.
    """
    cfg = getattr(config, "text_config", None) or config
    for key, value in rope.config_overrides().items():
        setattr(cfg, key, copy.deepcopy(value))
    if rope.changed and callable(validate := getattr(cfg, "validate_rope", None)):
        try:
            validate()
        except (ValueError, KeyError, TypeError) as exc:
            raise LcevalError(f"RoPE override rejected by transformers: {exc}") from None
    return config


def load_config(path: str, trust_remote_code: bool = False) -> Any:
    """The checkpoint's transformers config (raises LcevalError where it cannot be read)."""
    from transformers import AutoConfig  # heavy: transformers, only for an override

    try:
        return AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as exc:
        raise LcevalError(f"cannot read the model config of {path}: {one_line(exc)}") from None


def for_vllm(
    config: Any, rope_theta: Any, rope_scaling: Any, max_model_len: int | None
) -> tuple[RopeOverride, int | None]:
    """The override vLLM gets as ``hf_overrides``, and the ``max_model_len`` to start with.

    vLLM precomputes cos/sin up to ``max_position_embeddings``: plain RoPE (a base, ``ntk``)
    gets it raised to the window asked (``max_model_len``, else s x n); ``dynamic`` gets
    ``max_trained_positions`` = n and a window of s x n; vLLM derives ``linear``'s itself.
    """
    rope = resolve_rope(config, rope_theta, rope_scaling)
    kind = rope.parameters.get("rope_type")
    if not rope.changed or kind not in ("default", "dynamic"):
        return rope, max_model_len
    if kind == "dynamic":
        n = rope.max_position_embeddings
        reach = int(n * float(rope.parameters["factor"]))
        params = {**rope.parameters, "max_trained_positions": n}
        return replace(
            rope, parameters=params, max_position_embeddings=reach
        ), max_model_len or reach
    window = max_model_len or rope.extended_window()
    if window is None or window <= rope.max_position_embeddings:
        return rope, window
    return replace(rope, max_position_embeddings=int(window)), window
