import math

import pytest

from lceval.core.records import Context, Response, Sample, Score, from_dict, to_dict


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

    from lceval.core.records import Gold

    @dataclass(frozen=True)
    class Pair(Gold):
        span: tuple[int, str]
        """A position and a label."""

    assert Pair.from_dict({"span": [3, "a"]}).span == (3, "a")
    with pytest.raises(ValueError, match=r"span\[1\]: expected str"):
        Pair.from_dict({"span": [3, 4]})
    with pytest.raises(ValueError, match="expected 2 items, got 3"):
        Pair.from_dict({"span": [3, "a", 5]})


def test_sample_hash_covers_prompt_context_and_gold_only():
    import dataclasses

    from lceval.core.records import Gold, sample_hash

    @dataclasses.dataclass(frozen=True)
    class G(Gold):
        target: str
        weights: tuple[float, ...] = ()

    ctx = Context(id="c", text="long text", n_tokens=2, encoding="o200k_base")
    raw = Sample("a", "b", "T", "Say.", context_id="c", gold={"target": "x", "weights": [1, 2.5]})
    h = sample_hash(raw, ctx)
    assert len(h) == 16 and h == sample_hash(raw, "long text")
    parsed = dataclasses.replace(raw, gold=G.from_dict(raw.gold))  # (1.0, 2.5): same hash
    assert sample_hash(parsed, ctx) == h
    same = dataclasses.replace(raw, scenario="s", length=4096, meta={"k": 1}, expression_id=2)
    assert sample_hash(same, ctx) == h  # grouping fields are not what an answer answers
    for changed, c in [
        (raw, dataclasses.replace(ctx, text="other text")),
        (dataclasses.replace(raw, instruction="Say it."), ctx),
        (dataclasses.replace(raw, gold={"target": "y", "weights": [1, 2.5]}), ctx),
        (dataclasses.replace(raw, max_new_tokens=7), ctx),
        (dataclasses.replace(raw, history=({"role": "user", "content": "hi"},)), ctx),
    ]:
        assert sample_hash(changed, c) != h
    r = Response("a", "m", "t", "c", sample_hash=h)
    assert from_dict(Response, to_dict(r)) == r and r.answers(h) and not r.answers("0" * 16)
    assert Response("a", "m", "t", "c").answers(h)  # no stored hash: taken as matching
