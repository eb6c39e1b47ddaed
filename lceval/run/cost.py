"""What a run will cost in dollars, and the plan calibrated by the runs this machine answered.

Prices: ``lceval/run/prices.yaml`` or ``--prices FILE``; GPU dollars are GPU-hours times the
card's price, API dollars the prompt tokens at the input price plus the answer and thinking
budgets at the output price (an upper bound). Calibration: a model's measured answering seconds
(``logs/progress.jsonl``, else run.json's ``timing.generate_s``) over the floor on
:data:`~lceval.run.plan.REFERENCE_GPU` is this machine's factor for that model and engine, stored
in ``$LCEVAL_CACHE/calibration.json`` (or ``$LCEVAL_CALIBRATION``) so the next plan predicts
factor x floor plus engine start.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError, one_line
from lceval.core.io import atomic_open, load_yaml
from lceval.core.progress import progress_path, read
from lceval.core.tokens import count_tokens
from lceval.models.backends import resolve_backend
from lceval.models.embedded import EMBEDDED_NAME, cache_root, resolve_model
from lceval.models.specs import stored_name
from lceval.params import Judge
from lceval.run.plan import (
    EFFICIENCY,
    GPUS,
    REFERENCE_GPU,
    ModelShape,
    _hours,
    estimate,
    estimate_table,
    shape_of,
)
from lceval.run.plan import dollars as dollars  # re-exported: the CLI formats with cost.dollars

PRICES_PATH = Path(__file__).with_name("prices.yaml")
"""The price table shipped with lceval."""
MIN_SHARE = 0.05
"""Share of a call's samples answered (and at least 2) before its time calibrates the plan."""
CALIBRATION_NAME = "calibration.json"
"""The calibration file in lceval's cache folder (``$LCEVAL_CACHE``, else ``~/.cache/lceval``)."""
CALIBRATION_ENV = "LCEVAL_CALIBRATION"
"""A calibration file's path in place of the cache folder's (a test session's own, so that its
tiny runs never set the factors of the machine's real ones)."""


def calibration_path() -> Path:
    """The calibration file: ``$LCEVAL_CALIBRATION``, else :data:`CALIBRATION_NAME` in
    lceval's cache folder."""
    env = os.environ.get(CALIBRATION_ENV)
    return Path(env).expanduser() if env else cache_root() / CALIBRATION_NAME


# ------------------------------------------------------------------------------ prices
Usd = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ApiPrice(BaseModel):
    """One API model's prices, $ per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: Usd = Field(description="$ per million input (prompt) tokens")
    output: Usd = Field(description="$ per million output tokens (thinking included)")
    batch_discount: float | None = Field(
        None, ge=0, lt=1, description="this model's batch discount; null: the table's"
    )


class Prices(BaseModel):
    """A price table (``lceval/run/prices.yaml`` is the shipped one)."""

    model_config = ConfigDict(extra="forbid")

    date: str = Field(min_length=1, description="when the figures were read")
    gpu_hour: dict[str, Usd] = Field(default_factory=dict, description="$ per GPU-hour, by card")
    batch_discount: float = Field(0.5, ge=0, lt=1, description="share the batch endpoint takes off")
    api: dict[str, ApiPrice] = Field(default_factory=dict, description="$ per M tokens, by model")


def load_prices(path: str | os.PathLike[str] | None = None) -> Prices:
    """The price table at ``path`` (default: :data:`PRICES_PATH`).

    Raises:
        LcevalError: unreadable, not YAML, or a field missing, unknown, negative or not a number.
    """
    where = f"--prices {path or PRICES_PATH}"
    try:
        with open(path or PRICES_PATH, encoding="utf-8") as f:
            data = load_yaml(f.read())
    except OSError as exc:
        raise LcevalError(f"{where}: cannot read it ({exc.strerror})") from None
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # an alias bomb, not UTF-8
        raise LcevalError(f"{where}: not YAML ({one_line(exc, 120)})") from None
    if not isinstance(data, dict):
        raise LcevalError(f"{where}: expected a mapping, got {type(data).__name__}")
    try:
        return Prices.model_validate(data)
    except ValidationError as exc:  # params.first_error names top-level keys only: api.m.output
        err = exc.errors()[0]
        raise LcevalError(f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def gpu_dollars(estimates: pd.DataFrame, prices: Prices) -> pd.Series:
    """$ of each estimate row: its GPU-hours times its card's price (NaN: card not priced)."""
    rate = estimates["gpu"].map(prices.gpu_hour).astype(float)
    return (estimates["gpu_hours"] * rate).rename("usd")


def api_table(
    prompt_tokens: int, output_tokens: int, prices: Prices, models: Sequence[str] = ()
) -> pd.DataFrame:
    """Dollars of answering ``prompt_tokens`` input and ``output_tokens`` output tokens with each
    priced API model (``models``, the run's own, first; unpriced: NaN). Columns ``model``,
    ``input_usd``, ``output_usd``, ``usd``, ``batch_usd``."""
    unpriced = ApiPrice.model_construct(input=float("nan"), output=float("nan"))
    rows = []
    for name in dict.fromkeys([*models, *prices.api]):
        p = prices.api.get(name, unpriced)
        cut = prices.batch_discount if p.batch_discount is None else p.batch_discount
        i, o = prompt_tokens * p.input / 1e6, output_tokens * p.output / 1e6
        rows.append((name, i, o, i + o, (i + o) * (1 - cut)))
    columns = ["model", "input_usd", "output_usd", "usd", "batch_usd"]
    return pd.DataFrame(rows, columns=columns)


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
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            text = info.read_text(encoding="utf-8")
        except OSError:
            continue
        gpus += [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Model")]
    return " | ".join([platform.node(), f"{os.cpu_count()}x {cpu}", *gpus])


class Calibration(BaseModel):
    """One model's answering time on one machine and engine: ``factor`` = ``measured_s`` over
    ``floor_s`` on :data:`REFERENCE_GPU`, from ``samples`` of the call's ``of`` samples."""

    model_config = ConfigDict(frozen=True)

    machine: str
    model: str
    engine: str
    factor: float
    measured_s: float
    floor_s: float
    samples: int
    of: int
    engine_start_s: float | None
    run: str
    date: str
    shape: ModelShape

    @property
    def key(self) -> str:
        return f"{self.machine} || {self.model} || {self.engine}"


def stored() -> dict[str, Calibration]:
    """The stored calibrations by key (an unreadable file: none)."""
    try:
        data = json.loads(calibration_path().read_text(encoding="utf-8"))
        return {k: Calibration.model_validate(v) for k, v in data.items()}
    except (OSError, ValueError, TypeError, AttributeError, RecursionError):  # ValidationError
        return {}


def store(cals: Sequence[Calibration]) -> Path:
    """Add ``cals`` to the stored calibrations (replacing those of the same key), atomically."""
    path = calibration_path()
    data = {c.key: c.model_dump() for c in [*stored().values(), *cals]}
    with atomic_open(path) as f:
        json.dump(data, f, indent=1, sort_keys=True)
    return path


def floor_s(rows: pd.DataFrame, shape: ModelShape) -> float:
    """Seconds of the arithmetic floor of ``rows`` (:func:`~lceval.run.plan.per_sample`) on
    :data:`REFERENCE_GPU`."""
    return float(estimate(rows, shape, GPUS[REFERENCE_GPU], efficiency=1.0)["floor_h"]) * 3600


def model_shape(entry: dict[str, Any], name: str) -> ModelShape:
    """A run.json model entry's shape from the ``config.json`` in its ``path``.

    Raises:
        LcevalError: no readable config.json there, or it lacks a field the floor needs.
    """
    path = Path(str(entry.get("path") or "")) / "config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        raise LcevalError(f"no readable config.json at {path}") from None
    if not isinstance(cfg, dict):
        raise LcevalError(f"{path} is not a JSON object")
    text = cfg.get("text_config")
    return shape_of(SimpleNamespace(**(text if isinstance(text, dict) else cfg)), name)


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
    bars, planned = _bars(run), set(rows["sample_id"])
    responses = None
    out = []
    for name, entry in (run.read_meta().models or {}).items():
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
        ids = [
            i
            for i in dict.fromkeys(r.sample_id for r in responses if r.model == name)
            if i in planned
        ]
        if new >= 1:  # the last `new` answers were timed
            ids = ids[-new:]
        else:
            pending = len(ids)
        out.append((name, entry, secs, ids, pending))
    return out


def calibrate(run: Any, rows: pd.DataFrame) -> tuple[list[Calibration], list[str]]:
    """An answered run's calibrations from ``rows`` (:func:`~lceval.run.plan.per_sample` of all
    its samples), and per model a line: predicted beside measured, or why not calibrated."""
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
            machine=here, model=name, engine=engine, factor=secs / floor, measured_s=secs,
            floor_s=floor, samples=len(part), of=pending,
            engine_start_s=float(start) if isinstance(start, int | float) else None,
            run=str(run.run_id), date=today, shape=shape,
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


def predictions(rows: pd.DataFrame) -> pd.DataFrame:
    """This machine's calibrated answering time of ``rows`` per stored calibration:
    ``answer_s`` = factor x floor, ``wall_s`` adds the engine start."""
    here = machine()
    out = []
    for c in stored().values():
        if c.machine != here:
            continue
        answer = c.factor * floor_s(rows, c.shape)
        out.append(
            {
                "model": c.model,
                "engine": c.engine,
                "factor": c.factor,
                "answer_s": answer,
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
    """The LLM-judge calls scoring one benchmark will make: ``answers`` (samples x models)
    judged by ``calls`` prompts of ``prompt_tokens`` in all, ``output_tokens`` the judge's
    budgets; ``path``: the local judge model's folder."""

    benchmark: str
    scorer: str
    backend: str
    model: str
    answers: int
    calls: int
    prompt_tokens: int
    output_tokens: int
    path: str | None = None

    @property
    def label(self) -> str:
        return f"judge: {self.model}"


def judge_calls(run: Any, rows: pd.DataFrame) -> list[JudgeCalls]:
    """The judge calls of each benchmark of ``rows`` whose scorer is an LLM judge (the build
    params' ``scorer`` with its judge options, else the default). An estimate: each answer is
    judged by the scorer's prompts (:attr:`lceval.benchmarks.base.ScorerSpec.plan_cost`), each
    the template's o200k_base tokens plus the budget of each answer it quotes.

    Raises:
        LcevalError: the params name an unknown scorer or a bad judge option (one line).
    """
    meta = run.read_meta()
    params = dict(meta.params or {})
    n_models = max(1, len(meta.models or {}))
    chosen, options = params.get("scorer"), params.get("scorer_options") or {}
    judge = {k: params[k] for k in Judge.model_fields if params.get(k) is not None}
    out = []
    for bench, group in rows.groupby("benchmark", sort=True):
        spec, opts_in = registry.get(str(bench)).scorer(), {}
        if chosen is not None:
            owner, named = registry.find_scorer(str(chosen))
            if owner.key == bench:
                spec = named
                opts_in = registry.judge_options(str(chosen), options, **judge)
        if spec.batch is None:
            continue
        opts = spec.option_type.parse(spec.name, opts_in) if spec.option_type else None
        template, per_answer, quoted, budget = (
            spec.plan_cost(opts) if spec.plan_cost else ("", 1, 1, 256)
        )
        answers = len(group) * n_models
        backend = str(getattr(opts, "backend", "hf"))
        model = getattr(opts, "model", None)
        path: str | None = None
        if model is None and backend != "openai":
            try:
                path = resolve_model("embedded").path
            except (LcevalError, OSError):
                path = None
        elif model is not None and backend != "openai" and Path(str(model)).is_dir():
            path = str(model)
        per_prompt = count_tokens(template) * len(group) + quoted * int(group["budget"].sum())
        out.append(
            JudgeCalls(
                str(bench), spec.name, backend, str(model or EMBEDDED_NAME), answers,
                answers * per_answer, per_prompt * per_answer * n_models,
                answers * per_answer * budget, path,
            )
        )  # fmt: skip
    return out


def judge_table(
    calls: Sequence[JudgeCalls], prices: Prices, efficiency: float
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Price the judge calls: (GPU rows of local judges, API rows (:func:`api_table`), lines
    saying what was not estimated); each row's model ``judge: MODEL``."""
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
        n = max(c.calls, 1)  # n equal prompts, no prefix shared
        p = pd.Series([c.prompt_tokens // n] * n, dtype="int64")
        rows = pd.DataFrame(
            {
                "prompt_tokens": p,
                "unique_tokens": p,
                "budget": c.output_tokens // n,
                "position_sum": p * (p - 1) // 2,
            }
        )
        gpu_rows.append(estimate_table(rows, {c.label: shape}, efficiency))
    gpu_df = pd.concat(gpu_rows, ignore_index=True) if gpu_rows else pd.DataFrame()
    if not gpu_df.empty:
        gpu_df["usd"] = gpu_dollars(gpu_df, prices)
    return gpu_df, (pd.concat(api_rows) if api_rows else pd.DataFrame()), notes


# ------------------------------------------------------------------------------ before answering
LONG_RUN_S = 3600.0
"""A run estimated over this many seconds is warned about before its first answer."""


def answer_estimate(
    rows: pd.DataFrame, model: str, engine: str, folder: str | os.PathLike[str] | None = None
) -> tuple[float | None, str]:
    """This machine's estimate of answering ``rows`` (:func:`~lceval.run.plan.per_sample`) with
    ``model`` (run.json's name) on ``engine``, and the line ``lceval infer`` prints before its
    first answer (issue 49).

    Calibrated (:func:`predictions`): ``factor`` x the floor + the engine start, by this
    model's calibration on this machine and engine, else another model's on them (the machine's
    factor, this model's floor; from ``folder``'s config.json). Not calibrated: on a GPU machine
    the floor on :data:`~lceval.run.plan.REFERENCE_GPU` times
    :data:`~lceval.run.plan.EFFICIENCY`; on a CPU, no seconds (this run calibrates it).

    Returns:
        (seconds, or None when nothing estimates it; the line).
    """
    here = [c for c in stored().values() if c.machine == machine() and c.engine == engine]
    shape = None
    if folder is not None:
        try:
            shape = model_shape({"path": str(folder)}, model)
        except LcevalError:
            shape = None
    cal = next((c for c in here if c.model == model), None)
    if cal is None and shape is not None and here:
        cal = max(here, key=lambda c: c.date)  # the machine's latest factor on this engine
    if cal is not None:
        answer = cal.factor * floor_s(rows, shape if cal.model != model and shape else cal.shape)
        wall = answer + (cal.engine_start_s or 0.0)
        whose = "its" if cal.model == model else f"{cal.model}'s"
        return wall, (
            f"estimate on this machine: {_hours(wall / 3600)} (h:mm) to answer {len(rows):,} "
            f"samples with {model} on {engine}, engine start included ({whose} calibration "
            f"from run {cal.run} of {cal.date}: {cal.factor:,.1f}x the {REFERENCE_GPU} floor)"
        )
    if shape is not None and Path("/proc/driver/nvidia/gpus").is_dir():
        wall = EFFICIENCY * floor_s(rows, shape)
        return wall, (
            f"estimate: {_hours(wall / 3600)} (h:mm) on an {REFERENCE_GPU} for {model} "
            f"({EFFICIENCY:g}x the arithmetic floor; not calibrated on this machine yet: this "
            "run's answers calibrate it)"
        )
    return None, (
        f"no calibrated estimate for {model} on {engine} on this machine yet: this run's "
        "answers calibrate it (lceval plan RUN shows it)"
    )


def long_run_warning(seconds: float | None) -> str | None:
    """The warning for a run estimated over :data:`LONG_RUN_S`, else None."""
    if seconds is None or seconds <= LONG_RUN_S:
        return None
    return (
        f"warning: this run is estimated at {_hours(seconds / 3600)} (h:mm) on this machine, "
        "over an hour: --limit N or --max-new-tokens N answers less (lceval plan RUN shows the "
        "sizes); Ctrl-C keeps every finished answer"
    )


def before_answering(rows: pd.DataFrame, specs: Sequence[Any]) -> list[str]:
    """What ``lceval infer`` and ``eval`` print before the first answer: per model
    (:class:`lceval.models.specs.ModelSpec`) :func:`answer_estimate`'s line, then
    :func:`long_run_warning` for them all (engines answer one after another)."""
    lines, total = [], 0.0
    for spec in specs:
        if spec.backend == "openai":
            continue  # a server answers: its time is not this machine's
        try:
            folder: str | None = resolve_model(spec.model).path
        except LcevalError:  # not to be read here: no floor of its own
            folder = None
        seconds, line = answer_estimate(
            rows, stored_name(spec), resolve_backend(spec.backend), folder
        )
        lines.append(line)
        total += seconds or 0.0
    warning = long_run_warning(total)
    return lines + ([warning] if warning else [])


def after_answering(run: Any, rows: pd.DataFrame) -> list[str]:
    """Calibrate this machine by the answers just measured (:func:`calibrate`, stored) and say
    so: the next run's :func:`before_answering` estimate reads it."""
    cals, lines = calibrate(run, rows)
    if cals:
        store(cals)
    return lines
