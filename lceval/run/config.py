"""One declared config per verb: its fields make the flags (:func:`add_flags`), check params
files and ``-p`` overrides (:func:`lceval.params.validate`) and give the JSON Schemas. A field's
``json_schema_extra`` says how it appears on the command line: ``flag`` (spellings),
``positional``, ``nargs``/``action``/``metavar`` as in argparse, ``required_flag``, ``kv`` (a
repeated ``KEY=VALUE`` flag read as a YAML-valued mapping), ``cli: False`` (no flag).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, Self, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from lceval.core.errors import LcevalError, one_line
from lceval.core.io import YAMLLimitError, load_yaml
from lceval.models.backends import known_backend
from lceval.models.specs import resolve_models
from lceval.params import (
    Budget,
    Declared,
    FilePath,
    FolderPath,
    InferenceSection,
    ScorerChoice,
    ThinkingBudget,
    _extra,
    flags_of,
    validate,
)

C = TypeVar("C", bound=BaseModel)

# params keys -p refuses: the run and its folder are the command's own flags
OWN_FLAGS = {"run_id": "--run-id RUN", "outputs_root": "--outputs FOLDER"}


def _kv(items: Sequence[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` items as a mapping, each value read as YAML (LcevalError: no ``=`` or key)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LcevalError(f"{flag} expects KEY=VALUE, got {item!r:.80}")
        if flag == "--param" and key in OWN_FLAGS:
            # a notebook's params name them, but the command's own flag decides: never ignored
            raise LcevalError(f"-p {key} is not taken here: give {OWN_FLAGS[key]} instead")
        if flag == "--param" and not value.strip():  # it was read as null: the default, silently
            raise LcevalError(f"-p {key}= needs a value after '=' (null: -p {key}=null)")
        try:
            out[key] = load_yaml(value)
        except YAMLLimitError as exc:  # an alias bomb, a duplicate key: refused
            raise LcevalError(f"{flag} {key}: {one_line(exc, 120)}") from None
        except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: int past 4300 digits
            out[key] = value
    return out


def add_flags(parser: argparse.ArgumentParser, config: type[BaseModel]) -> None:
    """One argument per field of ``config`` (defaults suppressed: the config's own apply)."""
    for name, info in config.model_fields.items():
        extra = _extra(info)
        if extra.get("cli") is False:
            continue
        kwargs: dict[str, Any] = {k: extra[k] for k in ("nargs", "metavar", "action") if k in extra}
        if kwargs.get("action") == "boolean":  # --truncate / --no-truncate
            kwargs["action"] = argparse.BooleanOptionalAction
        if extra.get("kv"):
            kwargs.update(action="append", metavar=extra.get("metavar", "KEY=VALUE"))
        if extra.get("positional"):  # an optional one (nargs ?) defaults to None
            parser.add_argument(name, help=info.description, **kwargs)
            continue
        parser.add_argument(
            *flags_of(name, info),
            dest=name,
            help=info.description,
            default=argparse.SUPPRESS,
            required=bool(extra.get("required_flag")),
            **kwargs,
        )


def from_args(config: type[C], args: argparse.Namespace) -> C:
    """The config from parsed flags (LcevalError: one line naming the flag and what it takes)."""
    values: dict[str, Any] = {}
    for name, info in config.model_fields.items():
        if name in vars(args):
            value = getattr(args, name)
            kv = _extra(info).get("kv")
            values[name] = _kv(value, flags_of(name, info)[-1]) if kv else value
    return validate(config, values, "cli")


def _mapping_text(item: Any) -> Any:
    """A ``--model`` value starting with ``{`` read as a YAML mapping, anything else as it is."""
    if not isinstance(item, str) or not item.lstrip().startswith("{"):
        return item
    try:
        value = load_yaml(item)
    except (yaml.YAMLError, ValueError, RecursionError):  # an alias bomb, a duplicate key
        value = None
    if not isinstance(value, dict):
        raise ValueError(
            f"{item!r:.80} is not a YAML mapping like "
            "'{model: ID, backend: vllm, options: {max_model_len: 32768}}'"
        )
    return value


class CheckedInference(InferenceSection):
    """A shared section: :class:`lceval.params.InferenceSection` plus the checks that need the
    models layer (backend names, model entries), which ``lceval.params`` may not import. Every
    verb config that answers (:class:`InferConfig`, :class:`InferCall`, :class:`EvalConfig`,
    :class:`EvaluateCall`) takes it as a base, none of them another verb's config."""

    _backend = field_validator("backend")(known_backend)

    @field_validator("model", "models", mode="before")
    @classmethod
    def _entries(cls, v: Any, info: ValidationInfo) -> Any:
        # said as the key given (model=3 was "`models` must be a non-empty list, got 3")
        name = info.field_name
        if v is not None and not isinstance(v, str | Mapping | list | tuple):
            raise ValueError(
                f"{name} must be a model id (a path, hub id or embedded), a mapping {{model, "
                f"backend, options, name}} or a list of them, got {v!r:.80} ({type(v).__name__})"
            )
        if isinstance(v, list | tuple) and not v:
            raise ValueError(f"{name} must name at least one model, got an empty list")
        if isinstance(v, list | tuple):
            v = [_mapping_text(x) for x in v]
        if v is not None:  # each {...} entry checked now
            try:
                resolve_models(None, v)
            except LcevalError as exc:
                raise ValueError(str(exc).removeprefix("inference: ")) from None
        return v


class Call(Declared):
    """What only a Python call of a verb gives (the command line has ``--outputs``; its bars are
    always drawn)."""

    root: FolderPath = Field(
        default=None,
        description="folder holding run folders (default $LCEVAL_OUTPUTS, else ./outputs)",
        json_schema_extra={"cli": False},
    )
    progress: bool = Field(
        default=True, description="draw the progress bars", json_schema_extra={"cli": False}
    )


class InferConfig(CheckedInference):
    """Answer a run's samples with a model (resumable).

    ``lceval infer``, :func:`lceval.run.infer` and a notebook's inference section:
    :class:`lceval.params.InferenceSection` plus the checks that need the models layer."""


class InferCall(CheckedInference, Call):
    """:func:`lceval.run.infer`'s keywords: :class:`InferConfig`'s and :class:`Call`'s."""


# inference settings a run's build params may declare (run.json's inference), infer's defaults
INFERENCE_DEFAULTS = (
    "truncate",
    "max_new_tokens",
    "backend",
    "backend_options",
    "batch_size",
    "temperature",
    "top_p",
    "stop",
    "max_thinking_tokens",
)


class BenchmarkKey(Declared):
    """The benchmark a build or an evaluation reads (``lceval build``'s and ``lceval eval``'s
    positional)."""

    benchmark: str = Field(
        min_length=1,
        description="a benchmark key (see lceval list)",
        json_schema_extra={"positional": True},
    )


class BuildParams(Declared):
    """A build's params file and ``-p`` overrides (the builder's own params are the benchmark's
    ``Config``)."""

    params: FilePath = Field(
        default=None, min_length=1, description="params YAML (the builder's parameters)"
    )
    param: dict[str, Any] = Field(
        default_factory=dict,
        description="override a build param",
        json_schema_extra={"flag": ["-p", "--param"], "kv": True},
    )


class BuildConfig(BuildParams, BenchmarkKey):
    """Build a benchmark's samples into a run folder."""

    run_id: str = Field(min_length=1, description="the run folder's name")
    seed: int | None = Field(default=None, ge=0, description="overrides the params' seed")
    force: bool = Field(
        default=False,
        description="rebuild a run that has responses (moved aside)",
        json_schema_extra={"action": "store_true"},
    )


class Evaluation(Declared):
    """A shared section: what ``lceval eval`` and :func:`lceval.evaluate` add to the inference
    (:class:`CheckedInference`) and build (:class:`BuildParams`) sections: the run's name (not
    positional here), the rebuild switch and the scorer the report reads."""

    run_id: str | None = Field(
        default=None,
        min_length=1,
        description="the run folder's name (default: BENCHMARK-MODEL); the same run id again "
        "resumes the run: its answers are kept",
    )
    list_options: None = Field(
        default=None, description="lceval infer's, not taken here", json_schema_extra={"cli": False}
    )
    force: bool = Field(
        default=False,
        description="rebuild a run whose answers would not match the new samples (they are "
        "moved aside)",
        json_schema_extra={"action": "store_true"},
    )
    scorer: str | None = Field(
        default=None, description="score and report with this scorer (e.g. lifbench:strict)"
    )


class EvalConfig(Evaluation, CheckedInference, BuildParams, BenchmarkKey):
    """Build, answer, score and report a benchmark in one command (resumable)."""


class EvaluateCall(Evaluation, CheckedInference, BuildParams, Call):
    """:func:`lceval.evaluate`'s keywords: ``lceval eval``'s flags less the positional benchmark
    (:class:`Evaluation`, :class:`CheckedInference`, :class:`BuildParams`) and :class:`Call`'s
    ``root`` and ``progress``."""


class PlanConfig(ThinkingBudget, Budget):
    """A built run's size (prompt, unique and budget tokens) and GPU-time estimate."""

    run_id: str = Field(
        min_length=1, description="a built run", json_schema_extra={"positional": True}
    )
    model: str | None = Field(
        default=None,
        description="count with this model's tokenizer, chat template and window, and estimate "
        "its shape too (default: the run's tiktoken encoding)",
    )
    tasks: list[str] | None = Field(
        default=None,
        min_length=1,
        description="only these task codes",
        json_schema_extra={"nargs": "+"},
    )
    limit: int | None = Field(
        default=None, ge=1, description="N samples per task, drawn across its lengths and variants"
    )
    efficiency: float | None = Field(
        default=None,
        gt=0,
        description="measured time over the arithmetic floor (default 3.2, measured on a CPU: "
        "see lceval.run.plan.EFFICIENCY_SOURCE; this machine's own calibrated factors are shown "
        "beside it)",
    )
    gpus: int | None = Field(
        default=None, ge=1, description="also the wall-clock estimate on N GPUs (replicas)"
    )
    csv: str | None = Field(
        default=None, description="also write the size table to this CSV (estimates beside it)"
    )
    exact: bool = Field(
        default=False,
        description="tokenize every context even in a run whose contexts hold over 20M tokens "
        "(by default those are counted from their recorded lengths; unique tokens an upper "
        "bound)",
        json_schema_extra={"action": "store_true"},
    )
    prices: str | None = Field(
        default=None,
        description="a price table (YAML: $/GPU-hour per card, $/M tokens per API model, batch "
        "discount) to price the plan with (default: lceval/run/prices.yaml, list prices to edit)",
    )


class ScoreConfig(ScorerChoice):
    """Score a run's responses."""

    run_id: str = Field(
        min_length=1, description="an answered run", json_schema_extra={"positional": True}
    )


class ReportConfig(Declared):
    """Write a run's tables and figures under report/."""

    run_id: str = Field(
        min_length=1, description="a scored run", json_schema_extra={"positional": True}
    )
    scorer: str | None = Field(
        default=None,
        description="report this scorer's scores (e.g. lifbench:strict, under "
        "report/lifbench-strict/); default: each benchmark's default scorer",
    )


class Comparison(Declared):
    """A shared section: the runs compared and how (``lceval compare``'s flags,
    :class:`CompareConfig`, and :func:`lceval.compare`'s keywords, :class:`CompareCall`)."""

    run_ids: list[str] = Field(
        min_length=1,
        description="scored runs: one (its models ranked; --model-a/--model-b: those two "
        "paired), two (paired), or more (a leaderboard); run ids, or results.json files (a path "
        "ending in .json, or a folder path holding report/results.json): results files alone "
        "give the leaderboard (headlines with CIs); a paired comparison needs each run's "
        "scores.parquet",
        json_schema_extra={"positional": True, "nargs": "+", "metavar": "RUN"},
    )
    benchmark: str | None = Field(default=None, description="only this benchmark")
    scorer: str | None = Field(
        default=None,
        description="compare this scorer's scores for its benchmark (e.g. lifbench:strict); "
        "default: each benchmark's default scorer",
    )
    model_a: str | None = Field(default=None, description="only this model of the first run")
    model_b: str | None = Field(default=None, description="only this model of the second run")
    no_tasks: bool = Field(
        default=False,
        description="headline rows only, no task rows",
        json_schema_extra={"action": "store_true"},
    )
    leaderboard: bool = Field(
        default=False,
        description="every model of every run ranked per benchmark, with bootstrap CIs "
        "(default with three or more runs)",
        json_schema_extra={"action": "store_true"},
    )
    alpha: float = Field(
        default=0.05, gt=0, lt=1, allow_inf_nan=False, description="family-wise error rate (Holm)"
    )
    seed: int = Field(default=0, ge=0, description="seed of the resampling")
    csv: str | None = Field(default=None, description="also write the table to this CSV file")
    samples: str | None = Field(
        default=None,
        description="also write the paired samples page: both models' answers, values and "
        "rubric items side by side with the difference (contexts/ is written beside it)",
        json_schema_extra={"metavar": "FILE.html"},
    )

    @property
    def ranked(self) -> bool:
        """A leaderboard is asked for: ``--leaderboard``, three or more runs, or one run without
        ``--model-a``/``--model-b`` (its models ranked); else a paired comparison."""
        one_run = len(self.run_ids) == 1 and not (self.model_a or self.model_b)
        return self.leaderboard or len(self.run_ids) > 2 or one_run

    @model_validator(mode="after")
    def _paired_flags(self) -> Self:
        """The flags of a paired comparison refused for a leaderboard (a ValueError: one line
        through :func:`lceval.params.first_error`)."""
        if self.ranked and (self.model_a or self.model_b):
            raise ValueError("--model-a/--model-b are for a paired comparison, not --leaderboard")
        if self.ranked and self.samples:
            raise ValueError("--samples is for a paired comparison of two runs, not --leaderboard")
        return self


class CompareConfig(Comparison):
    """Rank one run's models (a leaderboard), or compare two runs (or two models of one run)
    paired."""


class CompareCall(Comparison):
    """:func:`lceval.compare` (:func:`lceval.report.compare.compare_runs`, a paired comparison):
    :class:`Comparison` (``lceval compare``'s flags) with what only Python gives (``lceval
    compare`` takes these defaults): the folder of the runs and the paired test's resampling."""

    root: FolderPath = Field(
        default=None,
        description="folder holding run folders (default $LCEVAL_OUTPUTS, else ./outputs)",
    )
    n_resamples: int = Field(default=2000, ge=1, description="bootstrap resamples of each CI")
    n_permutations: int = Field(default=9999, ge=1, description="permutations of each paired test")
    confidence: float = Field(
        default=0.95, gt=0, lt=1, allow_inf_nan=False, description="the CIs' level (0.95: 95%)"
    )


class RunConfig(Declared):
    """Execute notebooks with papermill (a pipeline or one notebook)."""

    target: str = Field(
        min_length=1,
        description="pipeline YAML, or a notebook name/path",
        json_schema_extra={"positional": True},
    )
    params: str | None = Field(default=None, description="params YAML for a single notebook")
    run_id: str | None = Field(default=None, min_length=1, description="the run folder's name")
    param: dict[str, Any] = Field(
        default_factory=dict,
        description="inject a parameter into every notebook (checked against every step's "
        "declared params before the first runs)",
        json_schema_extra={"flag": ["-p", "--param"], "kv": True},
    )
    ray_address: str | None = Field(
        default=None,
        min_length=1,
        description="answer on this Ray cluster (the notebooks' inference; see lceval infer)",
        json_schema_extra={"metavar": "auto|HOST:PORT"},
    )


class ListConfig(Declared):
    """Benchmarks with their tasks and scorers, and the backends."""


class StatusConfig(Declared):
    """A run's inference progress (from another terminal; logs/progress.jsonl)."""

    run_id: str = Field(json_schema_extra={"positional": True})


class RepairConfig(Declared):
    """Move lines of responses.jsonl that do not parse aside."""

    run_id: str = Field(json_schema_extra={"positional": True})


class ImportConfig(Declared):
    """Turn a benchmark's official prediction files into a run."""

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
        default=False,
        description="replace a run that has responses",
        json_schema_extra={"action": "store_true"},
    )


class SchemaConfig(Declared):
    """Write the JSON Schema of every verb's params (for editors)."""

    folder: str | None = Field(
        default=None,
        description="write <verb>.schema.json here (default: print)",
        json_schema_extra={"positional": True, "nargs": "?"},
    )


# verb -> its declared config (its flags; its docstring's first paragraph: --help)
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


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of every verb's config (``lceval schema``), for editors of params files."""
    return {
        verb: {**c.model_json_schema(), "$id": f"lceval:{verb}", "title": f"lceval {verb}"}
        for verb, c in VERBS.items()
    }
