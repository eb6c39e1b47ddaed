"""RoPE overrides for the local engines: a new base (``rope_theta``) and a scaling spec, applied
through the engines' own config (transformers' model config at ``from_pretrained``, vLLM's
``hf_overrides``), never by patching model code.

Options (the same for ``hf`` and ``vllm``)
------------------------------------------
- ``rope_theta``: the RoPE base b (the checkpoint's own when None).
- ``rope_scaling``: None, a mapping ``{"type": T, "factor": s, "original_max_position_embeddings":
  n}`` (``rope_type`` is accepted for ``type``; ``n`` is optional) or the short form ``"T:s"``.
  T is one of

  * ``ntk``: static NTK-aware scaling. The base becomes b' = b * s^(d / (d - 2)) with d the
    rotary dimension (head_dim x partial_rotary_factor); the engine then runs plain RoPE with
    base b' (``rope_type: default``). Source: bloc97, "NTK-Aware Scaled RoPE allows LLaMA models
    to have extended (8k+) context size without any fine-tuning and minimal perplexity
    degradation" (r/LocalLLaMA, June 2023), written out as the "NTK-aware" interpolation in
    YaRN (Peng et al., 2023, arXiv:2309.00071, Sec. 3.2): b' = b * s^(|D| / (|D| - 2)). It keeps
    the highest frequency (i = 0) unchanged and divides the lowest (i = d/2 - 1) by exactly s,
    i.e. interpolates the longest wavelength like linear scaling by s. L-Eval's NTK sweep
    (An et al., ACL 2024, Sec. "NTK Base Scaling") varies b' directly (20,000 to 160,000 for
    Llama-2, trained with b = 10,000): pass those bases as ``rope_theta``.
  * ``dynamic``: dynamic NTK (bloc97 and emozilla, r/LocalLLaMA, 2023), the engines' own
    ``rope_type: dynamic`` with ``factor`` s. transformers recomputes the base from the current
    sequence length L past the trained window n: b' = b * (s L / n - (s - 1))^(d / (d - 2))
    (per forward call: the longest row of a batch sets it). vLLM has no per-sequence base: its
    ``dynamic`` computes one base for its whole window, L = s n (lceval passes
    ``max_trained_positions`` = n and ``max_position_embeddings`` = s n so that window is
    covered), i.e. b' = b * (s^2 - s + 1)^(d / (d - 2)) at every length. The engines differ
    here by design; run.json records which one answered.
  * ``linear``: position interpolation (Chen et al., 2023): positions divided by s
    (``rope_type: linear``).

  A scaling spec replaces the checkpoint's own scaling (e.g. Llama-3.1's ``llama3``); a bare
  ``rope_theta`` keeps the checkpoint's scaling type and changes only its base.
  ``original_max_position_embeddings`` is the trained window n: both engines read it from the
  config's ``max_position_embeddings`` (the length where dynamic scaling starts), so giving it
  sets that field; default: the checkpoint's.

What is recorded
----------------
:meth:`RopeOverride.record` (the backend's ``info()`` -> run.json ``models``): the effective
parameters, the checkpoint's, the rotary dimension and the spec. :meth:`RopeOverride.cache_field`
(the backend's ``cache_fields`` -> the response cache key) holds the effective parameters when
they differ from the checkpoint's, so answers under two bases never stand in for each other,
while an override equal to the checkpoint keys like the unmodified model (it is the same model).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lceval.errors import LcevalError, one_line

ScalingType = Literal["ntk", "dynamic", "linear"]
SCALING_TYPES: tuple[str, ...] = ("ntk", "dynamic", "linear")
"""Scaling types a spec may name (see the module docstring)."""


@dataclass(frozen=True)
class RopeScaling:
    """A RoPE scaling spec (the ``rope_scaling`` backend option, parsed)."""

    type: ScalingType
    """``ntk`` (static NTK-aware base), ``dynamic`` (dynamic NTK) or ``linear`` (interpolation)."""
    factor: float
    """Scaling factor s (> 0; s > 1 extends the window about s-fold)."""
    original_max_position_embeddings: int | None = None
    """Trained window n in tokens (None: the checkpoint's ``max_position_embeddings``)."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "factor": self.factor}
        if self.original_max_position_embeddings is not None:
            out["original_max_position_embeddings"] = self.original_max_position_embeddings
        return out


def parse_rope_scaling(spec: Any) -> RopeScaling | None:
    """Parse the ``rope_scaling`` option: None, a mapping, or ``"type:factor"``.

    Raises:
        LcevalError: an unknown type or key, or a factor / window that is not a positive number.
    """
    if spec is None:
        return None
    if isinstance(spec, RopeScaling):
        return spec
    if isinstance(spec, str):
        name, sep, number = spec.partition(":")
        if not sep:
            raise LcevalError(
                f"rope_scaling {spec!r}: use 'TYPE:FACTOR' (e.g. ntk:4) or a mapping "
                "{type: ..., factor: ...}"
            )
        try:
            spec = {"type": name.strip(), "factor": float(number)}
        except ValueError:
            raise LcevalError(f"rope_scaling {spec!r}: factor is not a number") from None
    if not isinstance(spec, Mapping):
        raise LcevalError(f"rope_scaling must be a mapping or 'TYPE:FACTOR', got {spec!r:.80}")
    known = {"type", "rope_type", "factor", "original_max_position_embeddings"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise LcevalError(
            f"rope_scaling: unknown key(s) {', '.join(unknown)}; known: {sorted(known)}"
        )
    kind = spec.get("type", spec.get("rope_type"))
    if kind not in SCALING_TYPES:
        raise LcevalError(
            f"rope_scaling type must be one of {', '.join(SCALING_TYPES)}, got {kind!r}"
        )
    factor = spec.get("factor")
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not factor > 0:
        raise LcevalError(f"rope_scaling factor must be a number > 0, got {factor!r}")
    if not math.isfinite(factor):
        raise LcevalError(f"rope_scaling factor must be finite, got {factor!r}")
    n = spec.get("original_max_position_embeddings")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise LcevalError(f"rope_scaling original_max_position_embeddings must be >= 1, got {n!r}")
    return RopeScaling(kind, float(factor), n)


def check_rope_theta(rope_theta: Any) -> float | None:
    """``rope_theta`` as a float (None stays None).

    Raises:
        LcevalError: not a finite number > 1.
    """
    if rope_theta is None:
        return None
    if isinstance(rope_theta, bool) or not isinstance(rope_theta, int | float):
        raise LcevalError(f"rope_theta must be a number, got {rope_theta!r:.60}")
    if not (math.isfinite(rope_theta) and rope_theta > 1):
        raise LcevalError(f"rope_theta must be a finite number > 1, got {rope_theta!r}")
    return float(rope_theta)


def ntk_aware_base(base: float, factor: float, rotary_dim: int) -> float:
    """The NTK-aware RoPE base b' = b * s^(d / (d - 2)).

    Args:
        base: the original base b (e.g. 10,000 for Llama-2).
        factor: the scaling factor s (the wanted window over the trained one).
        rotary_dim: d, the rotated dimensions per head (head_dim x partial_rotary_factor), >= 4.

    Raises:
        LcevalError: ``rotary_dim`` < 4 (the exponent needs d > 2), or a non-positive input.

    Source: bloc97, "NTK-Aware Scaled RoPE" (r/LocalLLaMA, 2023); YaRN (Peng et al., 2023,
    arXiv:2309.00071), Sec. 3.2 ("NTK-aware" interpolation). E.g. Llama-2 (d = 128, b = 10,000):
    s = 2 gives 20,221; s = 8 gives 82,685 (L-Eval's sweep covers 20,000-160,000).
    """
    if rotary_dim < 4:
        raise LcevalError(f"NTK-aware scaling needs a rotary dimension >= 4, got {rotary_dim}")
    if not (base > 0 and factor > 0):
        raise LcevalError(f"NTK-aware scaling needs base and factor > 0, got {base}, {factor}")
    return float(base * factor ** (rotary_dim / (rotary_dim - 2)))


def ntk_factor_for_base(base: float, new_base: float, rotary_dim: int) -> float:
    """The factor s whose NTK-aware base is ``new_base``: s = (b' / b)^((d - 2) / d)."""
    if rotary_dim < 4:
        raise LcevalError(f"NTK-aware scaling needs a rotary dimension >= 4, got {rotary_dim}")
    return float((new_base / base) ** ((rotary_dim - 2) / rotary_dim))


def rotary_dim(config: Any) -> int:
    """Rotated dimensions per attention head: ``head_dim`` (else hidden_size / heads) times
    ``partial_rotary_factor`` (from the rope parameters or the config; default 1)."""
    cfg = getattr(config, "text_config", None) or config
    head = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    params = getattr(cfg, "rope_parameters", None)
    partial = None
    if isinstance(params, Mapping):
        partial = params.get("partial_rotary_factor")
    if partial is None:
        partial = getattr(cfg, "partial_rotary_factor", None) or 1.0
    return int(head * partial)


def _uses_rope_parameters(config: Any) -> bool:
    """transformers >= 5 keeps RoPE settings in one ``rope_parameters`` dict; 4.x in
    ``rope_theta`` and ``rope_scaling``."""
    return isinstance(getattr(config, "rope_parameters", None), Mapping)


def checkpoint_rope(config: Any) -> dict[str, Any]:
    """The checkpoint's RoPE parameters as one flat dict (``rope_type``, ``rope_theta``, and the
    type's own keys such as ``factor``), for either transformers layout.

    Raises:
        LcevalError: the model has no RoPE base, or per-layer-type RoPE parameters (not supported).
    """
    cfg = getattr(config, "text_config", None) or config
    if _uses_rope_parameters(cfg):
        params = copy.deepcopy(dict(cfg.rope_parameters))
        if params and all(isinstance(v, Mapping) for v in params.values()):
            raise LcevalError("RoPE overrides: per-layer-type rope_parameters are not supported")
    else:
        params = copy.deepcopy(dict(getattr(cfg, "rope_scaling", None) or {}))
        if getattr(cfg, "rope_theta", None) is not None:
            params.setdefault("rope_theta", cfg.rope_theta)
    if "type" in params and "rope_type" not in params:
        params["rope_type"] = params.pop("type")
    params.setdefault("rope_type", "default")
    if not isinstance(params.get("rope_theta"), int | float):
        raise LcevalError(
            "RoPE overrides: the model config states no rope_theta (not a RoPE model?)"
        )
    params["rope_theta"] = float(params["rope_theta"])
    return params


@dataclass(frozen=True)
class RopeOverride:
    """The RoPE settings a backend loads a model with: the checkpoint's, or an override of them."""

    parameters: Mapping[str, Any]
    """Effective RoPE parameters (``rope_type``, ``rope_theta``, ``factor``, ...)."""
    checkpoint: Mapping[str, Any]
    """The checkpoint's own parameters (as :func:`checkpoint_rope` reads them)."""
    rotary_dim: int
    """Rotated dimensions per head, d."""
    max_position_embeddings: int
    """The config's ``max_position_embeddings`` after the override (tokens)."""
    checkpoint_max_position_embeddings: int
    """The checkpoint's ``max_position_embeddings`` (tokens)."""
    spec: Mapping[str, Any] = field(default_factory=dict)
    """The options as given: ``rope_theta`` and ``rope_scaling`` (those not None)."""

    @property
    def changed(self) -> bool:
        """Whether the effective settings differ from the checkpoint's."""
        return (
            dict(self.parameters) != dict(self.checkpoint)
            or self.max_position_embeddings != self.checkpoint_max_position_embeddings
        )

    @property
    def rope_theta(self) -> float:
        """The effective base (after NTK-aware scaling, if any)."""
        return float(self.parameters["rope_theta"])

    def extended_window(self) -> int | None:
        """Tokens a scaling spec is meant to reach (factor x trained window), None without one."""
        scaling = self.spec.get("rope_scaling")
        if not scaling:
            return None
        n = (
            scaling.get("original_max_position_embeddings")
            or self.checkpoint_max_position_embeddings
        )
        return int(n * scaling["factor"])

    def config_overrides(self) -> dict[str, Any]:
        """Config fields to set (transformers config attributes, vLLM ``hf_overrides``); empty
        when nothing changes. transformers >= 5 layout: ``rope_parameters`` (a whole dict: vLLM
        applies dict overrides by assignment); 4.x: ``rope_theta`` and ``rope_scaling``."""
        if not self.changed:
            return {}
        out: dict[str, Any] = {}
        if self.spec.get("_layout") == "rope_scaling":
            p = dict(self.parameters)
            out["rope_theta"] = p.pop("rope_theta")
            out["rope_scaling"] = None if p.get("rope_type") == "default" else p
        else:
            out["rope_parameters"] = dict(self.parameters)
        if self.max_position_embeddings != self.checkpoint_max_position_embeddings:
            out["max_position_embeddings"] = self.max_position_embeddings
        return out

    def cache_field(self) -> dict[str, Any] | None:
        """The response-cache-key entry: the effective parameters (and window field) when they
        differ from the checkpoint's, else None (same model, same key)."""
        if not self.changed:
            return None
        out: dict[str, Any] = {"parameters": dict(sorted(self.parameters.items()))}
        if self.max_position_embeddings != self.checkpoint_max_position_embeddings:
            out["max_position_embeddings"] = self.max_position_embeddings
        return out

    def record(self) -> dict[str, Any]:
        """For run.json: effective and checkpoint parameters, d, windows, the spec, changed."""
        return {
            "rope_theta": self.rope_theta,
            "parameters": dict(self.parameters),
            "checkpoint": dict(self.checkpoint),
            "rotary_dim": self.rotary_dim,
            "max_position_embeddings": self.max_position_embeddings,
            "spec": {k: v for k, v in self.spec.items() if not k.startswith("_")},
            "changed": self.changed,
        }


def resolve_rope(config: Any, rope_theta: Any = None, rope_scaling: Any = None) -> RopeOverride:
    """The effective RoPE settings of ``config`` under the options (nothing is modified).

    Args:
        config: a transformers model config (the checkpoint's).
        rope_theta: the base b (None: the checkpoint's).
        rope_scaling: a scaling spec (:func:`parse_rope_scaling`) or None.

    Raises:
        LcevalError: a bad option, or a model without a single RoPE base.
    """
    theta = check_rope_theta(rope_theta)
    scaling = parse_rope_scaling(rope_scaling)
    cfg = getattr(config, "text_config", None) or config
    ck = checkpoint_rope(cfg)
    dim = rotary_dim(cfg)
    ck_max = int(getattr(cfg, "max_position_embeddings", 0) or 0)
    base = theta if theta is not None else ck["rope_theta"]
    params = dict(ck)
    max_pos = ck_max
    if scaling is None:
        params["rope_theta"] = base
    else:
        keep = {k: ck[k] for k in ("partial_rotary_factor",) if k in ck}
        if scaling.type == "ntk":
            params = {
                "rope_type": "default",
                "rope_theta": ntk_aware_base(base, scaling.factor, dim),
            }
        else:
            params = {"rope_type": scaling.type, "rope_theta": base, "factor": scaling.factor}
        params.update(keep)
        if scaling.original_max_position_embeddings is not None and scaling.type != "ntk":
            max_pos = scaling.original_max_position_embeddings
    spec: dict[str, Any] = {}
    if theta is not None:
        spec["rope_theta"] = theta
    if scaling is not None:
        spec["rope_scaling"] = scaling.as_dict()
    if not _uses_rope_parameters(cfg):
        spec["_layout"] = "rope_scaling"
    return RopeOverride(params, ck, dim, max_pos, ck_max, spec)


def apply_rope(config: Any, rope: RopeOverride) -> Any:
    """Set ``rope``'s config overrides on ``config`` (a transformers config, changed in place and
    returned) and let transformers validate them.

    Raises:
        LcevalError: transformers rejects the parameters.
    """
    cfg = getattr(config, "text_config", None) or config
    for key, value in rope.config_overrides().items():
        setattr(cfg, key, copy.deepcopy(value))
    validate = getattr(cfg, "validate_rope", None)
    if callable(validate) and rope.changed:
        try:
            validate()
        except (ValueError, KeyError, TypeError) as exc:
            raise LcevalError(f"RoPE override rejected by transformers: {exc}") from None
    return config


def with_window(rope: RopeOverride, window: int) -> RopeOverride:
    """``rope`` with ``max_position_embeddings`` raised to ``window`` for plain RoPE
    (``rope_type: default``), where the field only sizes position tables (vLLM precomputes its
    cos/sin cache up to it); scaled types keep it, since there it is the trained window n."""
    if rope.parameters.get("rope_type") != "default" or window <= rope.max_position_embeddings:
        return rope
    if not rope.spec:  # no override asked: leave the model as it is
        return rope
    return RopeOverride(
        rope.parameters,
        rope.checkpoint,
        rope.rotary_dim,
        int(window),
        rope.checkpoint_max_position_embeddings,
        rope.spec,
    )


def load_config(path: str, trust_remote_code: bool = False, local_only: bool = False) -> Any:
    """The checkpoint's transformers config (``AutoConfig.from_pretrained``).

    Raises:
        LcevalError: the config cannot be read.
    """
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(
            path, trust_remote_code=trust_remote_code, local_files_only=local_only
        )
    except (OSError, ValueError) as exc:
        msg = one_line(exc)
        raise LcevalError(f"cannot read the model config of {path}: {msg}") from None


def for_vllm(
    config: Any, rope_theta: Any, rope_scaling: Any, max_model_len: int | None
) -> tuple[RopeOverride, int | None]:
    """The override vLLM gets through ``hf_overrides``, and the ``max_model_len`` to start with.

    vLLM precomputes cos/sin tables up to ``max_position_embeddings`` (times the factor for
    ``linear``), so: plain RoPE (a base or NTK-aware override) gets that field raised to the
    window asked (``max_model_len``, else factor x trained window for ``ntk``); ``dynamic`` gets
    ``max_trained_positions`` = n and ``max_position_embeddings`` = s n, and the window s n.

    Raises:
        LcevalError: a bad option, or a model without a single RoPE base.
    """
    rope = resolve_rope(config, rope_theta, rope_scaling)
    if not rope.changed:
        return rope, max_model_len
    window = max_model_len or rope.extended_window()
    if rope.parameters.get("rope_type") == "dynamic":
        n = rope.max_position_embeddings
        reach = int(n * float(rope.parameters["factor"]))
        params = {**rope.parameters, "max_trained_positions": n}
        rope = RopeOverride(
            params,
            rope.checkpoint,
            rope.rotary_dim,
            reach,
            rope.checkpoint_max_position_embeddings,
            rope.spec,
        )
        return rope, max_model_len or reach
    if rope.parameters.get("rope_type") != "default" or window is None:
        return rope, max_model_len  # linear: vLLM derives the window n s itself
    return with_window(rope, window), window
