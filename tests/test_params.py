"""lceval.params: one routine reads a params section into its declared pydantic model."""

from __future__ import annotations

import re
from typing import Annotated

import pytest
from pydantic import Field, ValidationError

from lceval import params
from lceval.core.errors import LcevalError
from lceval.params import Judge, Scoring, parse


class Inference(params.Declared):
    """A section shaped like a notebook's inference keys, to exercise :func:`parse`."""

    backend: params.Text = "auto"
    batch_size: params.Positive | None = None
    max_new_tokens: params.Positive | None = None
    backend_options: params.Options = Field(default_factory=dict)


def test_defaults_and_a_frozen_result() -> None:
    inf = parse(Inference, {"batch_size": 4, "run_id": "r"}, "inference")
    assert (inf.backend, inf.batch_size, inf.max_new_tokens, inf.backend_options) == (
        "auto",
        4,
        None,
        {},
    )
    with pytest.raises(ValidationError):
        inf.batch_size = 8  # type: ignore[misc]


def test_other_sections_are_accepted_not_read() -> None:
    inf = parse(
        Inference, {"judge_model": "x", "scorer": "y"}, "inference", accept=(Judge, Scoring)
    )
    assert inf == Inference()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"batch_size": 0}, "inference: batch_size must be >= 1, got 0 (int)"),
        ({"batch_size": True}, "batch_size must be an integer, got True (bool)"),
        ({"batch_size": "4"}, "batch_size must be an integer, got '4' (str)"),
        ({"backend_options": [1]}, "backend_options must be a mapping, got [1] (list)"),
        ({"backend": ""}, "backend must not be empty, got '' (str)"),
        ({"bach_size": 4}, "unknown parameter 'bach_size'; did you mean batch_size?"),
        ({"tokenizer": "o200k_base"}, "'tokenizer' is now spelled 'encoding'"),
        ({"infer_max_new_tokens": 8}, "'infer_max_new_tokens' is now spelled 'max_new_tokens'"),
        (
            {"gen_max_new_tokens": 8},
            "'gen_max_new_tokens' is now spelled 'variants_max_new_tokens'",
        ),
    ],
)
def test_errors_are_one_line_naming_the_key(raw: dict, message: str) -> None:
    with pytest.raises(LcevalError, match=re.escape(message)) as err:
        parse(Inference, raw, "inference")
    assert "\n" not in str(err.value)


def test_not_a_mapping() -> None:
    with pytest.raises(LcevalError, match="inference: params must be a mapping, got list"):
        parse(Inference, [1], "inference")  # type: ignore[arg-type]


class Shared(params.Declared):
    """The shared field types, each in a section."""

    tasks: Annotated[tuple[str, ...], params.names(("a", "b", "c"), sort=True)] = ("a",)
    lengths: Annotated[tuple[int, ...] | None, params.lengths(256, {"4k": 4096}, sort=False)] = None
    data_path: Annotated[str | tuple[str, ...] | None, params.paths(many=True)] = None
    n: Annotated[int, Field(ge=1, le=5)] = 1
    encoding: params.Encoding = "o200k_base"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"tasks": ["bb"]}, "s: tasks[0] must be one of a, b, c, got 'bb' (str); did you mean b?"),
        ({"tasks": []}, "tasks must be a non-empty list, got [] (list)"),
        ({"lengths": [100]}, "lengths[0] must be >= 256 or '4k', got 100 (int)"),
        ({"data_path": 3}, "data_path must be a string or a list, got 3 (int)"),
        ({"n": 6}, "s: n must be <= 5, got 6 (int)"),
        ({"encoding": "gpt2"}, "encoding must be one of o200k_base, cl100k_base, got 'gpt2'"),
    ],
)
def test_shared_field_types(raw: dict, message: str) -> None:
    got = parse(Shared, {"tasks": ["c", "a", "c"], "lengths": ["4k", 300, 300]}, "s")
    assert (got.tasks, got.lengths) == (("a", "c"), (4096, 300))
    assert parse(Shared, {"data_path": ["a", "b"]}, "s").data_path == ("a", "b")
    with pytest.raises(LcevalError, match=re.escape(message)):
        parse(Shared, raw, "s")


def test_one_did_you_mean() -> None:
    assert params.did_you_mean("bach_size", ["batch_size", "seed"]) == "did you mean batch_size?"
    assert params.did_you_mean("zzz", ["batch_size"]) == ""


def test_builders_accept_the_declared_inference_keys() -> None:
    """A builder reading a notebook's params file accepts every key of the one inference
    declaration (params.InferenceSection, which InferConfig extends with model checks only)."""
    from lceval.run.config import InferConfig

    assert set(InferConfig.model_fields) == set(params.InferenceSection.model_fields)
    assert set(params.InferenceSection.model_fields) <= params.keys(*params.NOTEBOOK_SECTIONS)


def test_judge_section_is_the_judge_models_options() -> None:
    """``judge_<option>`` is JudgeModel's ``<option>``, same type: the notebook's judge keys and
    the judge scorers' options are one set of names (no rename table)."""
    from lceval.benchmarks.registry import JUDGE_PREFIX
    from lceval.models.judge import JudgeModel

    for key, info in Judge.model_fields.items():
        option = JudgeModel.model_fields[key.removeprefix(JUDGE_PREFIX)]
        assert key.startswith(JUDGE_PREFIX)
        assert info.get_default(call_default_factory=True) == option.get_default(
            call_default_factory=True
        ), key
