"""lceval.params: one routine reads a params section into its frozen dataclass."""

from __future__ import annotations

import dataclasses
import re

import pytest

from lceval import params
from lceval.errors import LcevalError
from lceval.params import Judge, Scoring, parse


@dataclasses.dataclass(frozen=True)
class Inference:
    """A section shaped like a notebook's inference keys, to exercise :func:`parse`."""

    backend: str = dataclasses.field(default="auto", metadata=params.check(params.text()))
    batch_size: int | None = dataclasses.field(
        default=None, metadata=params.check(params.POSITIVE_OR_NULL)
    )
    max_new_tokens: int | None = dataclasses.field(
        default=None, metadata=params.check(params.POSITIVE_OR_NULL)
    )
    backend_options: dict = dataclasses.field(
        default_factory=dict, metadata=params.check(params.mapping)
    )


def test_defaults_and_a_frozen_result() -> None:
    inf = parse(Inference, {"batch_size": 4, "run_id": "r"}, "inference")
    assert (inf.backend, inf.batch_size, inf.max_new_tokens, inf.backend_options) == (
        "auto",
        4,
        None,
        {},
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        inf.batch_size = 8  # type: ignore[misc]


def test_other_sections_are_accepted_not_read() -> None:
    inf = parse(
        Inference, {"judge_model": "x", "scorer": "y"}, "inference", accept=(Judge, Scoring)
    )
    assert inf == Inference()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"batch_size": 0},
            "inference: batch_size must be a positive integer or null, got 0 (int)",
        ),
        ({"batch_size": True}, "batch_size must be a positive integer or null, got True (bool)"),
        ({"backend_options": [1]}, "backend_options must be a mapping, got [1] (list)"),
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


def test_shared_validators() -> None:
    tasks = params.names(("a", "b", "c"), "task", sort=True)
    assert tasks("tasks", ["c", "a", "c"]) == ("a", "c")
    assert tasks("tasks", None) == ("a", "b", "c")
    with pytest.raises(params.Invalid, match=r"tasks: unknown task 'bb' \(did you mean b\?\)"):
        tasks("tasks", ["bb"])
    lengths = params.lengths(256, labels={"4k": 4096}, sort=False)
    assert lengths("lengths", ["4k", 300, 300]) == (4096, 300)
    with pytest.raises(params.Invalid, match=r"lengths must be token counts >= 256 or one of 4k"):
        lengths("lengths", [100])
    assert params.path(many=True)("data_path", ["a", "b"]) == ("a", "b")
    with pytest.raises(params.Invalid, match="data_path must be a path or a list of paths or null"):
        params.path(many=True)("data_path", 3)
    with pytest.raises(params.Invalid, match=r"n must be an integer in 1\.\.5, got 6 \(int\)"):
        params.integer(1, 5)("n", 6)


def test_builders_accept_the_declared_inference_keys() -> None:
    """A builder reading a notebook's params file accepts every key of the one inference
    declaration (params.InferenceSection, which InferConfig extends with model checks only)."""
    from lceval.run.config import InferConfig

    assert set(InferConfig.model_fields) == set(params.InferenceSection.model_fields)
    assert set(params.InferenceSection.model_fields) <= params.keys(*params.NOTEBOOK_SECTIONS)
