"""One declared config per verb: the same object at every door.

Each command of ``lceval`` (list, build, plan, infer, status, score, repair, report, compare,
import, run, schema) has a pydantic model here. Its fields are the command's settings, each with
its type, range, default and help text (``Field(description=...)``); the command line's flags are
generated from them (:func:`add_flags`), params files and ``-p`` overrides are validated by them
(:func:`validate`), and :func:`lceval.run.infer` builds an :class:`InferConfig` from its
keyword arguments, so a notebook, ``lceval infer`` and ``lceval run -p`` check a value by the
same rule, before anything is built or any engine starts.

A field's ``json_schema_extra`` may say how it appears on the command line:

- ``flag``: the flag's spelling (default ``--<name with dashes>``), or a tuple of spellings;
- ``positional``: an argument without a flag; ``nargs``/``action``/``metavar`` as in argparse;
- ``required_flag``: a flag the command line must give, refused by argparse when missing
  (``lceval import --run-id``; not ``required``, which a JSON Schema reads as its own keyword);
- ``kv``: a repeated ``KEY=VALUE`` flag collected into a mapping (values read as YAML);
- ``cli: False``: a params-file key with no flag (``models`` beside ``--model``).

``lceval schema`` (:func:`json_schemas`) writes the JSON Schema of every config for editors
(``lceval/schemas/params/<verb>.schema.json``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, Field, field_validator

from lceval.core.errors import LcevalError
from lceval.models.specs import resolve_models
from lceval.params import (
    Declared,
    InferenceSection,
    _extra,
    flags_of,
    validate,
)

C = TypeVar("C", bound=BaseModel)

OWN_FLAGS = {"run_id": "--run-id RUN", "outputs_root": "--outputs FOLDER"}
"""Params keys that ``-p`` refuses: the run and its folder are the command's flags."""


def _kv(items: Sequence[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` items as a mapping, each value read as YAML (``8`` an int, ``true`` a bool).

    Raises:
        LcevalError: an item without ``=`` or key.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LcevalError(f"{flag} expects KEY=VALUE, got {item!r:.80}")
        if flag == "--param" and key in OWN_FLAGS:
            # a notebook's params name them, but the command's own flag decides: never ignored
            raise LcevalError(f"-p {key} is not taken here: give {OWN_FLAGS[key]} instead")
        try:
            out[key] = yaml.safe_load(value)
        except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: int past 4300 digits
            out[key] = value
    return out


def add_flags(parser: argparse.ArgumentParser, config: type[BaseModel]) -> None:
    """Add one argument per field of ``config`` to ``parser`` (help from the field's
    description; every default ``argparse.SUPPRESS``, so only flags given reach
    :func:`from_args` and the config's own defaults apply)."""
    for name, info in config.model_fields.items():
        extra = _extra(info)
        if extra.get("cli") is False:
            continue
        kwargs: dict[str, Any] = {"help": info.description, "default": argparse.SUPPRESS}
        for key in ("nargs", "metavar", "action"):
            if key in extra:
                kwargs[key] = extra[key]
        if extra.get("required_flag"):
            kwargs["required"] = True
        if kwargs.get("action") == "boolean":  # --truncate / --no-truncate
            kwargs["action"] = argparse.BooleanOptionalAction
        if extra.get("kv"):
            kwargs.update(action="append", metavar=extra.get("metavar", "KEY=VALUE"))
        if extra.get("positional"):
            kwargs.pop("default")
            if extra.get("nargs") in ("?", "*"):
                kwargs["default"] = None
            parser.add_argument(name, **kwargs)
            continue
        parser.add_argument(*flags_of(name, info), dest=name, **kwargs)


def from_args(config: type[C], args: argparse.Namespace, **given: Any) -> C:
    """The config from parsed flags (those :func:`add_flags` made) and ``given`` values (which
    flags override).

    Raises:
        LcevalError: one line naming the flag and what it accepts.
    """
    values = dict(given)
    for name, info in config.model_fields.items():
        if name not in vars(args):
            continue
        value = getattr(args, name)
        if _extra(info).get("kv"):
            value = {**dict(values.get(name) or {}), **_kv(value, flags_of(name, info)[-1])}
        values[name] = value
    return validate(config, values, "cli")


# ----------------------------------------------------------------------------------- fields
def _model_entries(value: Any) -> Any:
    """Each ``{...}`` entry checked by :func:`lceval.models.specs.resolve_models` (unknown
    keys named with their close matches)."""
    if value is None:
        return None

    try:
        resolve_models(None, value)
    except LcevalError as exc:
        raise ValueError(str(exc).removeprefix("inference: ")) from None
    return value


def _mapping_text(item: Any) -> Any:
    """A ``--model`` value starting with ``{`` read as a YAML mapping ``{model, backend,
    options, name}``; anything else as it is."""
    if not isinstance(item, str) or not item.lstrip().startswith("{"):
        return item
    try:
        value = yaml.safe_load(item)
    except yaml.YAMLError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(
            f"{item!r:.80} is not a YAML mapping like "
            "'{model: ID, backend: vllm, options: {max_model_len: 32768}}'"
        )
    return value


class InferConfig(InferenceSection):
    """``lceval infer`` / :func:`lceval.run.infer` / notebook 02's inference section: the fields of
    :class:`lceval.params.InferenceSection` (one declaration: adding an inference key is one
    field there), with the checks that need the models: backend names and model entries."""

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str) -> str:
        from lceval.models.backends import check_backend_name

        try:
            check_backend_name(v)
        except LcevalError as exc:
            raise ValueError(str(exc)) from None
        return v

    @field_validator("model", "models", mode="before")
    @classmethod
    def _entries(cls, v: Any) -> Any:
        if isinstance(v, list | tuple):
            v = [_mapping_text(x) for x in v]
        return _model_entries(v)


INFERENCE_DEFAULTS = (
    "truncate",
    "max_new_tokens",
    "backend",
    "backend_options",
    "batch_size",
    "temperature",
)
"""Inference settings a run's build params may declare (the smoke set's ``truncate: true``,
``max_new_tokens: 64``; L-Eval's and CIF-Bench's ``backend: hf``, ``batch_size: 4``): recorded
in run.json's ``inference`` and read by ``lceval infer`` and :func:`lceval.run.infer` where not
given, so the CLI answers a run with the engine and options its notebook takes from the same
params file."""


TEST_LIMIT_ENV = "LCEVAL_TEST_LIMIT"
"""Environment variable capping every inference's sample count (tests run the README's commands
as written with it: ``LCEVAL_TEST_LIMIT=2``); unset: no cap."""


def test_limit(limit: int | None) -> int | None:
    """``limit`` capped by ``$LCEVAL_TEST_LIMIT`` when that is set.

    Raises:
        LcevalError: the variable is not a positive integer.
    """
    raw = os.environ.get(TEST_LIMIT_ENV, "").strip()
    if not raw:
        return limit
    if not raw.isdigit() or int(raw) < 1:
        raise LcevalError(f"{TEST_LIMIT_ENV} must be a positive integer, got {raw!r}")
    return int(raw) if limit is None else min(limit, int(raw))


class EvalConfig(InferConfig):
    """``lceval eval`` / :func:`lceval.evaluate`: build, answer, score and report one benchmark
    in one call. Every inference key of :class:`InferConfig` (one declaration), the build's
    params (a file and ``-p`` overrides, as ``lceval build`` takes them) and the scorer the
    report reads. The run folder's name defaults to ``<benchmark>-<model>``, so the same command
    run again resumes the run (answers kept)."""

    benchmark: str = Field(
        min_length=1,
        description="a benchmark key (see lceval list)",
        json_schema_extra={"positional": True},
    )
    run_id: str | None = Field(
        None,
        min_length=1,
        description="the run folder's name (default: BENCHMARK-MODEL); the same run id again "
        "resumes the run: its answers are kept",
    )
    list_options: None = Field(
        None, description="lceval infer's, not taken here", json_schema_extra={"cli": False}
    )
    params: str | None = Field(None, description="params YAML (the builder's parameters)")
    param: dict[str, Any] = Field(
        default_factory=dict,
        description="override a build param",
        json_schema_extra={"flag": ["-p", "--param"], "kv": True},
    )
    force: bool = Field(
        False,
        description="rebuild a run whose answers would not match the new samples (they are "
        "moved aside)",
        json_schema_extra={"action": "store_true"},
    )
    scorer: str | None = Field(
        None, description="score and report with this scorer (e.g. lifbench:strict)"
    )


class PlanConfig(Declared):
    """``lceval plan``."""

    run_id: str = Field(
        min_length=1, description="a built run", json_schema_extra={"positional": True}
    )
    model: str | None = Field(
        None,
        description="count with this model's tokenizer, chat template and window, and estimate "
        "its shape too (default: the run's tiktoken encoding)",
    )
    tasks: list[str] | None = Field(
        None, min_length=1, description="only these task codes", json_schema_extra={"nargs": "+"}
    )
    limit: int | None = Field(None, ge=1, description="only the first N samples")
    max_new_tokens: int | None = Field(
        None,
        ge=1,
        description="cap every sample's budget, in tokens (default: what the run's build "
        "params declare, else each sample's own)",
    )
    max_thinking_tokens: int = Field(
        0,
        ge=0,
        description="a reasoning model's thinking budget per sample, counted beside the answer "
        "budget",
    )
    efficiency: float | None = Field(
        None,
        gt=0,
        description="measured time over the arithmetic floor (default 3.2, measured on a CPU: "
        "see lceval.run.plan.EFFICIENCY_SOURCE; this machine's own calibrated factors are shown "
        "beside it)",
    )
    gpus: int | None = Field(
        None, ge=1, description="also the wall-clock estimate on N GPUs (replicas)"
    )
    csv: str | None = Field(
        None, description="also write the size table to this CSV (estimates beside it)"
    )
    exact: bool = Field(
        False,
        description="tokenize every context even in a run whose contexts hold over 20M tokens "
        "(by default those are counted from their recorded lengths; unique tokens an upper "
        "bound)",
        json_schema_extra={"action": "store_true"},
    )
    prices: str | None = Field(
        None,
        description="a price table (YAML: $/GPU-hour per card, $/M tokens per API model, batch "
        "discount) to price the plan with (default: lceval/run/prices.yaml, list prices to edit)",
    )


class BuildConfig(Declared):
    """``lceval build`` (the builder's own params are the benchmark's ``Config``)."""

    benchmark: str = Field(
        min_length=1,
        description="a benchmark key (see lceval list)",
        json_schema_extra={"positional": True},
    )
    params: str | None = Field(None, description="params YAML (the builder's parameters)")
    run_id: str = Field(min_length=1, description="the run folder's name")
    seed: int | None = Field(None, ge=0, description="overrides the params' seed")
    force: bool = Field(
        False,
        description="rebuild a run that has responses (moved aside)",
        json_schema_extra={"action": "store_true"},
    )
    param: dict[str, Any] = Field(
        default_factory=dict,
        description="override a param",
        json_schema_extra={"flag": ["-p", "--param"], "kv": True},
    )


class ScoreConfig(Declared):
    """``lceval score``."""

    run_id: str = Field(
        min_length=1, description="an answered run", json_schema_extra={"positional": True}
    )
    scorer: str | None = Field(None, description="a scorer name, e.g. lifbench:strict")
    option: dict[str, Any] = Field(
        default_factory=dict,
        description="an option of the scorer",
        json_schema_extra={"flag": ["-o", "--option"], "kv": True},
    )


class ReportConfig(Declared):
    """``lceval report``."""

    run_id: str = Field(
        min_length=1, description="a scored run", json_schema_extra={"positional": True}
    )
    scorer: str | None = Field(
        None,
        description="report this scorer's scores (e.g. lifbench:strict, under "
        "report/lifbench-strict/); default: each benchmark's default scorer",
    )


class CompareConfig(Declared):
    """``lceval compare``."""

    run_ids: list[str] = Field(
        min_length=1,
        description="scored runs: one (its models ranked; --model-a/--model-b: those two "
        "paired), two (paired), or more (a leaderboard); run ids, or results.json files (a path "
        "ending in .json, or a folder path holding report/results.json): results files alone "
        "give the leaderboard (headlines with CIs); a paired comparison needs each run's "
        "scores.parquet",
        json_schema_extra={"positional": True, "nargs": "+", "metavar": "RUN"},
    )
    benchmark: str | None = Field(None, description="only this benchmark")
    scorer: str | None = Field(
        None,
        description="compare this scorer's scores for its benchmark (e.g. lifbench:strict); "
        "default: each benchmark's default scorer",
    )
    model_a: str | None = Field(None, description="only this model of the first run")
    model_b: str | None = Field(None, description="only this model of the second run")
    no_tasks: bool = Field(
        False,
        description="headline rows only, no task rows",
        json_schema_extra={"action": "store_true"},
    )
    leaderboard: bool = Field(
        False,
        description="every model of every run ranked per benchmark, with bootstrap CIs "
        "(default with three or more runs)",
        json_schema_extra={"action": "store_true"},
    )
    alpha: float = Field(0.05, gt=0, lt=1, description="family-wise error rate (Holm)")
    seed: int = Field(0, ge=0, description="seed of the resampling")
    csv: str | None = Field(None, description="also write the table to this CSV file")
    samples: str | None = Field(
        None,
        description="also write the paired samples page: both models' answers, values and "
        "rubric items side by side with the difference (contexts/ is written beside it)",
        json_schema_extra={"metavar": "FILE.html"},
    )


class RunConfig(Declared):
    """``lceval run``: a pipeline or one notebook through papermill."""

    target: str = Field(
        min_length=1,
        description="pipeline YAML, or a notebook name/path",
        json_schema_extra={"positional": True},
    )
    params: str | None = Field(None, description="params YAML for a single notebook")
    run_id: str | None = Field(None, min_length=1, description="the run folder's name")
    param: dict[str, Any] = Field(
        default_factory=dict,
        description="inject a parameter into every notebook (checked against every step's "
        "declared params before the first runs)",
        json_schema_extra={"flag": ["-p", "--param"], "kv": True},
    )
    ray_address: str | None = Field(
        None,
        min_length=1,
        description="answer on this Ray cluster (the notebooks' inference; see lceval infer)",
        json_schema_extra={"metavar": "auto|HOST:PORT"},
    )


class ListConfig(Declared):
    """``lceval list``: no settings (it prints the benchmarks, scorers and backends installed)."""


class StatusConfig(Declared):
    """``lceval status``: a run's inference progress, read from its logs/progress.jsonl."""

    run_id: str = Field(json_schema_extra={"positional": True})


class RepairConfig(Declared):
    """``lceval repair``: a run's responses.jsonl lines that do not parse moved aside."""

    run_id: str = Field(json_schema_extra={"positional": True})


class ImportConfig(Declared):
    """``lceval import``: a benchmark's official prediction files turned into a run."""

    benchmark: str = Field(
        description="a benchmark with an importer (see lceval list)",
        json_schema_extra={"positional": True},
    )
    path: str = Field(
        description="a prediction file or folder (e.g. a clone's Predictions/)",
        json_schema_extra={"positional": True},
    )
    run_id: str = Field(json_schema_extra={"required_flag": True})
    force: bool = Field(
        False,
        description="replace a run that has responses",
        json_schema_extra={"action": "store_true"},
    )


class SchemaConfig(Declared):
    """``lceval schema``: the JSON Schema of every verb's params, printed or written."""

    folder: str | None = Field(
        None,
        description="write <verb>.schema.json here (default: print)",
        json_schema_extra={"positional": True, "nargs": "?"},
    )


VERBS: dict[str, type[Declared]] = {
    "eval": EvalConfig,
    "build": BuildConfig,
    "plan": PlanConfig,
    "infer": InferConfig,
    "score": ScoreConfig,
    "report": ReportConfig,
    "compare": CompareConfig,
    "run": RunConfig,
    "list": ListConfig,
    "status": StatusConfig,
    "repair": RepairConfig,
    "import": ImportConfig,
    "schema": SchemaConfig,
}
"""Verb -> its declared config: every verb's flags are generated from it (``lceval.cli``'s
parser), so a verb without one has no flags beyond ``--outputs`` and ``--verbose``."""


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of every verb's config (``lceval schema``), for editors of params files.

    A params file for ``lceval run`` / a notebook's inference section follows ``infer``.
    """
    out = {}
    for verb, config in VERBS.items():
        schema = config.model_json_schema(mode="validation")
        schema["$id"] = f"lceval:{verb}"
        schema["title"] = f"lceval {verb}"
        out[verb] = schema
    return out
