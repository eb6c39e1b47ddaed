"""What a run will cost in dollars, and the plan calibrated by the runs this machine answered.

Prices (:func:`load_prices`): ``lceval/run/prices.yaml`` or ``--prices FILE``; GPU dollars are
GPU-hours times the card's price, API dollars the prompt tokens at the input price plus the
answer and thinking budgets at the output price (an upper bound). Calibration
(:func:`calibrate`): a model's measured answering seconds (``logs/progress.jsonl``, else
run.json's ``timing.generate_s``) over the floor on :data:`~lceval.run.gpu_estimate.REFERENCE_GPU`
is this machine's factor for that model and engine, stored in ``$LCEVAL_CACHE/calibration.json``
so the next plan predicts factor x floor plus the engine start.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError, one_line
from lceval.core.progress import progress_path, read
from lceval.core.tokens import count_tokens
from lceval.models.embedded import EMBEDDED_NAME, cache_root, resolve_model
from lceval.params import Judge
from lceval.run.gpu_estimate import GPUS, REFERENCE_GPU, ModelShape, estimate, shape_of

PRICES_PATH = Path(__file__).with_name("prices.yaml")
"""The price table shipped with lceval."""
MIN_SHARE = 0.05
"""Share of a call's samples answered (and at least 2) before its time calibrates the plan."""
CALIBRATION_NAME = "calibration.json"
"""The calibration file in lceval's cache folder (``$LCEVAL_CACHE``, else ``~/.cache/lceval``)."""


# ------------------------------------------------------------------------------ prices
Usd = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A price in dollars: a finite number >= 0."""


class ApiPrice(BaseModel):
    """One API model's prices, $ per million tokens."""

    model_config = ConfigDict(extra="forbid", strict=False)

    input: Usd = Field(description="$ per million input (prompt) tokens")
    output: Usd = Field(description="$ per million output tokens (thinking included)")
    batch_discount: float | None = Field(
        None, ge=0, lt=1, description="this model's batch discount; null: the table's"
    )


class Prices(BaseModel):
    """A price table (``lceval/run/prices.yaml`` is the shipped one)."""

    model_config = ConfigDict(extra="forbid", strict=False)

    date: str = Field(min_length=1, description="when the figures were read")
    gpu_hour: dict[str, Usd] = Field(default_factory=dict, description="$ per GPU-hour, by card")
    batch_discount: float = Field(0.5, ge=0, lt=1, description="share the batch endpoint takes off")
    api: dict[str, ApiPrice] = Field(default_factory=dict, description="$ per M tokens, by model")

    def gpu(self, name: str) -> float | None:
        """$ per GPU-hour of a card (None: not priced)."""
        return self.gpu_hour.get(name)


def load_prices(path: str | os.PathLike[str] | None = None) -> Prices:
    """The price table at ``path`` (default: :data:`PRICES_PATH`).

    Raises:
        LcevalError: unreadable, not YAML, or a field missing, unknown, negative or not a number.
    """
    import yaml

    where = str(path or PRICES_PATH)
    try:
        with open(where, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise LcevalError(f"--prices {where}: cannot read it ({exc.strerror})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LcevalError(f"--prices {where}: not YAML ({one_line(exc, 120)})") from None
    if not isinstance(data, dict):
        raise LcevalError(f"--prices {where}: expected a mapping, got {type(data).__name__}")
    try:
        prices = Prices.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(top)"
        raise LcevalError(f"--prices {where}: {loc}: {err['msg']}") from None
    return prices


def gpu_dollars(estimates: pd.DataFrame, prices: Prices) -> pd.Series:
    """$ of each estimate row: its GPU-hours times its card's price (NaN: card not priced)."""
    rate = estimates["gpu"].map(lambda g: prices.gpu(g))
    return (estimates["gpu_hours"] * rate.astype(float)).rename("usd")


def api_table(
    prompt_tokens: int, output_tokens: int, prices: Prices, models: Sequence[str] = ()
) -> pd.DataFrame:
    """Dollars of answering ``prompt_tokens`` input and ``output_tokens`` output tokens with each
    priced API model (``models``, the run's own, first; unpriced: NaN). Columns ``model``,
    ``input_usd``, ``output_usd``, ``usd``, ``batch_usd``."""
    names = list(dict.fromkeys([*models, *prices.api]))
    rows = []
    for name in names:
        p = prices.api.get(name)
        if p is None:
            rows.append({"model": name, "input_usd": float("nan"), "output_usd": float("nan")})
            continue
        cut = prices.batch_discount if p.batch_discount is None else p.batch_discount
        i, o = prompt_tokens * p.input / 1e6, output_tokens * p.output / 1e6
        rows.append({"model": name, "input_usd": i, "output_usd": o, "cut": cut})
    out = pd.DataFrame(rows, columns=["model", "input_usd", "output_usd", "cut"])
    out["usd"] = out["input_usd"] + out["output_usd"]
    out["batch_usd"] = out["usd"] * (1 - out["cut"].astype(float))
    return out.drop(columns="cut")


def dollars(x: float) -> str:
    """``$1,234.56``, ``$0.0042``; ``?`` for NaN (not priced)."""
    if x != x:
        return "?"
    return f"${x:,.2f}" if x >= 1 else f"${x:.4f}"


# ------------------------------------------------------------------------------ calibration
def machine() -> str:
    """This machine as calibrations are keyed: host, CPU model and count, GPU models (/proc)."""
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        cpu = platform.processor()
    gpus = []
    root = Path("/proc/driver/nvidia/gpus")
    for info in sorted(root.glob("*/information")) if root.is_dir() else []:
        try:
            text = info.read_text(encoding="utf-8")
        except OSError:
            continue
        gpus += [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Model")]
    return " | ".join([platform.node(), f"{os.cpu_count()}x {cpu}", *gpus])


def calibration_path() -> Path:
    """``$LCEVAL_CACHE/calibration.json`` (default ``~/.cache/lceval``)."""
    return cache_root() / CALIBRATION_NAME


@dataclass(frozen=True)
class Calibration:
    """One model's measured answering time on one machine with one engine."""

    machine: str
    model: str
    engine: str
    factor: float
    """Measured seconds over the floor seconds on :data:`REFERENCE_GPU`."""
    measured_s: float
    """Seconds the samples took to answer."""
    floor_s: float
    samples: int
    """Samples answered in the measured time."""
    of: int
    """Samples of the call (``samples < of``: calibrated from its first part)."""
    engine_start_s: float | None
    run: str
    date: str
    shape: dict[str, Any]
    """The model's :class:`ModelShape` fields."""

    @property
    def key(self) -> str:
        return f"{self.machine} || {self.model} || {self.engine}"

    def model_shape(self) -> ModelShape:
        return ModelShape(**self.shape)


def stored() -> dict[str, Calibration]:
    """The stored calibrations by key (an unreadable file: none)."""
    try:
        data = json.loads(calibration_path().read_text(encoding="utf-8"))
        return {k: Calibration(**v) for k, v in data.items()}
    except (OSError, ValueError, TypeError):
        return {}


def store(cals: Sequence[Calibration]) -> Path:
    """Add ``cals`` to the stored calibrations (replacing those of the same key), atomically."""
    path = calibration_path()
    data = {k: asdict(c) for k, c in stored().items()}
    data.update({c.key: asdict(c) for c in cals})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return path


def floor_s(rows: pd.DataFrame, shape: ModelShape) -> float:
    """The arithmetic floor of answering ``rows`` (:func:`lceval.run.plan.per_sample`) with a
    model of ``shape`` on :data:`REFERENCE_GPU`, in seconds."""
    return float(estimate(rows, shape, GPUS[REFERENCE_GPU], efficiency=1.0)["floor_h"]) * 3600


def model_shape(entry: dict[str, Any], name: str) -> ModelShape:
    """A run.json model entry's shape from the ``config.json`` in its ``path``.

    Raises:
        LcevalError: no readable config.json there, or it lacks a field the floor needs.
    """
    from types import SimpleNamespace

    path = Path(str(entry.get("path") or "")) / "config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise LcevalError(f"no readable config.json at {path}") from None
    if not isinstance(cfg, dict):
        raise LcevalError(f"{path} is not a JSON object")
    text = cfg.get("text_config")
    ns = SimpleNamespace(**(text if isinstance(text, dict) else cfg))
    return shape_of(ns, name)


def _bars(run: Any) -> dict[str, list[dict[str, Any]]]:
    """Each model's last progress bar (its records of the last process that answered it)."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for rec in read(progress_path(run.path)):
        bar = by_model.setdefault(str(rec["model"]), [])
        if bar and bar[-1].get("pid") != rec.get("pid"):
            bar.clear()
        bar.append(rec)
    return by_model


def measure(
    run: Any, rows: pd.DataFrame
) -> list[tuple[str, dict[str, Any], float, list[str], int]]:
    """Per answered model with a usable measurement: (name, run.json entry, measured seconds,
    the sample ids answered in them, samples of that call)."""
    meta = run.read_meta()
    bars = _bars(run)
    responses = None
    out = []
    for name, entry in (meta.models or {}).items():
        if not isinstance(entry, dict):
            continue
        bar = bars.get(name) or []
        last = bar[-1] if bar else None
        secs: float | None = None
        if last is not None and int(last.get("new") or 0) >= 1:
            new, answered = int(last["new"]), int(last["answered"])
            pending = int(last["total"]) - (answered - new)
            if new >= max(2, MIN_SHARE * pending) or last.get("state") == "done":
                secs = float(last["t"]) - float(bar[0]["t"])
        timing = entry.get("timing") or {}
        if secs is None and isinstance(timing.get("generate_s"), int | float) and last is None:
            new = pending = -1  # every answer of the model, timed by run.json
            secs = float(timing["generate_s"])
        if secs is None or secs <= 0:
            continue
        if responses is None:
            responses = run.read_responses()
        ids = list(dict.fromkeys(r.sample_id for r in responses if r.model == name))
        ids = [i for i in ids if i in set(rows["sample_id"])]
        if new >= 0:
            ids = ids[-new:] if new <= len(ids) else ids
        else:
            pending = len(ids)
        out.append((name, entry, secs, ids, pending))
    return out


def calibrate(run: Any, rows: pd.DataFrame) -> tuple[list[Calibration], list[str]]:
    """The calibrations of an answered run (module docstring) from ``rows``
    (:func:`lceval.run.plan.per_sample` of all its samples), and per model a line: predicted
    beside measured, or why not calibrated."""
    here, before = machine(), stored()
    cals, lines = [], []
    today = _dt.datetime.now(_dt.UTC).date().isoformat()
    for name, entry, secs, ids, pending in measure(run, rows):
        engine = str(entry.get("backend") or "?")
        try:
            shape = model_shape(entry, name)
        except LcevalError as exc:
            lines.append(f"calibration: {name} ({engine}) not calibrated: {exc}")
            continue
        part = rows[rows["sample_id"].isin(ids)]
        if part.empty:
            continue
        floor = floor_s(part, shape)
        start = (entry.get("timing") or {}).get("engine_start_s")
        cal = Calibration(
            here, name, engine, secs / floor, secs, floor, len(part), pending,
            float(start) if isinstance(start, int | float) else None,
            str(run.run_id), today, asdict(shape),
        )  # fmt: skip
        old = before.get(cal.key)
        whole = "" if len(part) >= pending else f" (the first {len(part)} of {pending} samples)"
        was = (
            f"predicted {old.factor * floor:,.1f} s from run {old.run}'s factor"
            if old is not None
            else "no earlier calibration on this machine"
        )
        lines.append(
            f"calibration: {name} ({engine}) answered {len(part)} samples{whole} in "
            f"{secs:,.1f} s measured; {was}; now {cal.factor:,.1f}x the {REFERENCE_GPU} floor"
        )
        cals.append(cal)
    return cals, lines


def predictions(rows: pd.DataFrame, models: Sequence[str] = ()) -> pd.DataFrame:
    """This machine's calibrated answering time of ``rows`` per stored calibration (only
    ``models``' when given): ``answer_s`` = factor x floor, ``wall_s`` adds the engine start."""
    here = machine()
    out = []
    for c in stored().values():
        if c.machine != here or (models and c.model not in models):
            continue
        out.append(
            {
                "model": c.model,
                "engine": c.engine,
                "factor": c.factor,
                "answer_s": (answer := c.factor * floor_s(rows, c.model_shape())),
                "engine_start_s": c.engine_start_s,
                "wall_s": answer + (c.engine_start_s or 0.0),
                "from_run": c.run,
                "date": c.date,
            }
        )
    columns = "model engine factor answer_s engine_start_s wall_s from_run date".split()
    return pd.DataFrame(out, columns=columns)


# ------------------------------------------------------------------------------ judge calls
@dataclass(frozen=True)
class JudgeCalls:
    """The LLM-judge calls scoring one benchmark of a run will make (an estimate:
    :func:`judge_calls`)."""

    benchmark: str
    scorer: str
    backend: str
    model: str
    """The judge model (``SmolLM2-135M-Instruct``: the embedded one, the judges' default)."""
    answers: int
    """Answers to judge (samples x the run's models)."""
    calls: int
    """Judge prompts: ``answers x`` the judge's prompts per answer."""
    prompt_tokens: int
    """Per call the template's tokens plus the answer budget(s) it quotes, summed."""
    output_tokens: int
    """``calls x`` the judge's answer budget."""
    path: str | None = None
    """The judge model's folder (its config.json gives the GPU estimate's shape), when local."""

    @property
    def label(self) -> str:
        return f"judge: {self.model}"


def _judge_prompt(scorer: str, opts: Any) -> tuple[str, int, int, int]:
    """(template, prompts per answer, answers each quotes, answer budget) of a judge scorer."""
    budget = getattr(opts, "max_new_tokens", None)
    if scorer == "longgenbench:llm":
        from lceval.benchmarks.longgenbench.judge import judge_prompt_parts

        few = bool(getattr(opts, "few_shot", False))
        head, tail = judge_prompt_parts("", few)
        return head + tail, 1, 1, budget or (160 if few else 8)
    if scorer == "leval:judge":
        from lceval.benchmarks.leval.prompts import JUDGE_SYSTEM, JUDGE_TEMPLATE

        return JUDGE_SYSTEM + JUDGE_TEMPLATE, 2, 2, budget or 2048
    if scorer == "cifbench:judge":
        from lceval.benchmarks.cifbench.judge import JUDGE_TEMPLATE as CIF_TEMPLATE

        return CIF_TEMPLATE, 1, 1, budget or 256
    return "", 1, 1, budget or 256


def judge_calls(run: Any, rows: pd.DataFrame) -> list[JudgeCalls]:
    """The judge calls of each benchmark of ``rows`` whose scorer is an LLM judge (the build
    params' ``scorer`` with its judge options, else the default). An estimate: each answer
    (samples x models) is judged by the judge's prompts, each the template's tokens (o200k_base)
    plus the answer budget per answer it quotes (references and contexts left out).

    Raises:
        LcevalError: the params name an unknown scorer or a bad judge option (one line).
    """
    params = dict(run.read_meta().params or {})
    n_models = max(1, len(run.read_meta().models or {}))
    chosen, options = params.get("scorer"), params.get("scorer_options") or {}
    judge = {k: params[k] for k in Judge.model_fields if params.get(k) is not None}
    out = []
    for bench, group in rows.groupby("benchmark", sort=True):
        b = registry.get(str(bench))
        spec, opts_in = b.scorer(), {}
        if chosen is not None:
            owner, named = registry.find_scorer(str(chosen))
            if owner.key == bench:
                spec = named
                opts_in = registry.judge_options(str(chosen), options, **judge)
        if spec.batch is None:
            continue
        opts = spec.option_type.parse(spec.name, opts_in) if spec.option_type else None
        template, per_answer, quoted, budget = _judge_prompt(spec.name, opts)
        answers = len(group) * n_models
        calls = answers * per_answer
        backend = str(getattr(opts, "backend", "hf"))
        model = getattr(opts, "model", None)
        path: str | None = None
        if model is None:
            name = EMBEDDED_NAME
            if backend != "openai":
                try:
                    path = resolve_model("embedded").path
                except (LcevalError, OSError):
                    path = None
        else:
            name = str(model)
            path = name if backend != "openai" and Path(name).is_dir() else None
        per_prompt = count_tokens(template) * len(group) + quoted * int(group["budget"].sum())
        out.append(
            JudgeCalls(
                str(bench), spec.name, backend, name, answers, calls,
                per_prompt * per_answer * n_models, calls * budget, path,
            )
        )  # fmt: skip
    return out


def judge_table(
    calls: Sequence[JudgeCalls], prices: Prices, efficiency: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Price the judge calls: (GPU rows of local judges, API rows (:func:`api_table`), lines
    saying what was not estimated); each row's model ``judge: MODEL``."""
    import numpy as np

    gpu_rows, api_rows, notes = [], [], []
    for c in calls:
        if c.backend == "openai":
            t = api_table(c.prompt_tokens, c.output_tokens, prices, [c.model]).iloc[:1]
            if t["usd"].isna().all():
                notes.append(f"{c.label}: no price for {c.model} in the table")
            api_rows.append(t.assign(model=c.label))
            continue
        try:
            shape = model_shape({"path": c.path or ""}, c.label)
        except LcevalError as exc:
            notes.append(f"{c.label}: GPU time not estimated ({exc})")
            continue
        n = max(c.calls, 1)
        rows = pd.DataFrame(
            {
                "prompt_tokens": np.full(n, c.prompt_tokens // n, dtype=np.int64),
                "unique_tokens": np.full(n, c.prompt_tokens // n, dtype=np.int64),
                "budget": np.full(n, c.output_tokens // n, dtype=np.int64),
            }
        )
        p = rows["prompt_tokens"]
        rows["position_sum"] = p * (p - 1) // 2
        for gpu in GPUS.values():
            gpu_rows.append(
                {
                    "model": c.label,
                    "gpu": gpu.name,
                    **estimate(rows, shape, gpu, efficiency=efficiency),
                }
            )
    gpu_df = pd.DataFrame(gpu_rows)
    if not gpu_df.empty:
        gpu_df["usd"] = gpu_dollars(gpu_df, prices)
    return gpu_df, (pd.concat(api_rows) if api_rows else pd.DataFrame()), notes
