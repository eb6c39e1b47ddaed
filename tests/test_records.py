import math

import pytest

from lceval.records import Context, Response, Sample, Score, from_dict, to_dict


def test_sample_round_trips_through_dict_with_tuples():
    s = Sample(
        id="a",
        benchmark="lifbench",
        task="LSI",
        instruction="Which element?",
        context_id="c1",
        stop=("*** finished",),
        history=({"role": "user", "content": "hi"},),
        gold={"target": "x", "positions": [1, 2]},
        length=3072,
    )
    back = from_dict(Sample, to_dict(s))
    assert back == s
    assert isinstance(back.stop, tuple)


def test_from_dict_names_missing_fields():
    with pytest.raises(ValueError, match="Response"):
        from_dict(Response, {"sample_id": "a"})


def test_score_value_must_be_unit_interval_or_nan():
    Score("a", "m", "lifbench", "LSI", "s", "1", math.nan, explanation="no output")
    Score("a", "m", "lifbench", "LSI", "s", "1", 1.0)
    with pytest.raises(ValueError, match="Score.value"):
        Score("a", "m", "lifbench", "LSI", "s", "1", 1.5)


def test_records_are_frozen():
    c = Context(id="c", text="t", n_tokens=1, encoding="o200k_base")
    with pytest.raises(AttributeError):
        c.text = "u"  # type: ignore[misc]


def test_gold_fixed_length_tuples_are_checked_item_by_item():
    from dataclasses import dataclass

    import pytest

    from lceval.records import Gold

    @dataclass(frozen=True)
    class Pair(Gold):
        span: tuple[int, str]
        """A position and a label."""

    assert Pair.from_dict({"span": [3, "a"]}).span == (3, "a")
    with pytest.raises(ValueError, match=r"span\[1\]: expected str"):
        Pair.from_dict({"span": [3, 4]})
    with pytest.raises(ValueError, match="expected 2 items, got 3"):
        Pair.from_dict({"span": [3, "a", 5]})
