"""LongGenBench scoring: hand-computed CR / STIC-1 / STIC-2, judges, robustness, streamed runs."""

from __future__ import annotations

import math
import re
from itertools import accumulate

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lceval.run
from lceval.benchmarks.longgenbench import CHECKS_FILE
from lceval.benchmarks.longgenbench import score as score_module
from lceval.benchmarks.longgenbench.gold import CHECK_COLUMNS, LongGenBenchGold
from lceval.benchmarks.longgenbench.judge import (
    LLMJudge,
    judge_prompt,
    judge_prompt_few_shot,
    parse_verdict,
)
from lceval.benchmarks.longgenbench.score import (
    JUDGE_FILE,
    STOP_WORDS,
    OfflineJudge,
    content_stems,
    evaluate,
    parse_entries,
    score_longgenbench,
    split_blocks,
    stem,
    to_judgement,
    word_count,
    word_layout,
)
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, dumps
from lceval.core.records import Response, Sample
from lceval.core.store import ResponseStore
from lceval.models.base import Backend
from lceval.models.prompts import user_text


def gold(once=None, rng=None, per=None, unit="Floor", number=10, prefix="#*# Floor 1:"):
    return LongGenBenchGold.from_dict(
        {
            "checks_once": once or {},
            "checks_range": rng or {},
            "checks_periodic": per or {},
            "type": unit,
            "number": number,
            "prefix": prefix,
        }
    )


def sample(**kw):
    g = gold(**kw)
    return Sample(
        id="s",
        benchmark="longgenbench",
        task="skyscraper_100",
        instruction="build",
        assistant_prefix=g.prefix,
        gold=g,
        scenario="Skyscraper",
        meta={"version": "short"},
    )


class SubstringJudge:
    """Scripted judge for exact hand-computed values: yes iff the description is in the block."""

    name = "substring"

    def judge(self, pairs):
        return [d.lower() in b.lower() for b, d in pairs]


def floors(contents: dict[int, str], first_in_prefix: bool = True) -> str:
    """A generation continuing the prefix '#*# Floor 1:' with the given floors in order."""
    parts = []
    for f, text in contents.items():
        if f == 1 and first_in_prefix:
            parts.append(f" {text} ")
        else:
            parts.append(f"#*# Floor {f}: {text} ")
    return "".join(parts)


def score(s, text, judge=None):
    return to_judgement(evaluate(s, text, judge or SubstringJudge()), "substring")


# -- the paper's Appendix E.2 example --------------------------------------------------------
def test_appendix_e_example_offline_judge():
    # TS1 coffee shop and TS2 reception desk on floor 1; TP washroom on floors 1..3.
    s = sample(
        once={"1": ["coffee shop", "reception desk"]},
        per={"1": "washroom", "2": "washroom", "3": "washroom"},
        number=3,
    )
    r = Response("s", "m", " coffee shop, washroom; #*# Floor 2: washroom.", "h")
    sc = score_longgenbench(s, r, None)
    assert sc.parts["CR"] == pytest.approx(2 / 3)
    assert sc.parts["STIC_1"] == pytest.approx(3 / 4)
    assert sc.parts["STIC_2"] == pytest.approx(3 / 5)
    assert sc.value == pytest.approx(3 / 5)
    assert sc.parts["n_checks"] == 5 and sc.parts["n_judged"] == 4 and sc.parts["n_yes"] == 3
    assert "STIC-1 3/4" in sc.explanation
    # one detail row per check, in gold order (the pipeline adds sample_id and model)
    assert [(d["kind"], d["entry"], d["judged"], d["yes"]) for d in sc.details] == [
        ("single", 1, True, True),
        ("single", 1, True, False),
        ("periodic", 1, True, True),
        ("periodic", 2, True, True),
        ("periodic", 3, False, False),
    ]
    assert list(sc.details[0]) == list(CHECK_COLUMNS[2:])
    assert sc.details[0]["judge"] == "offline" and sc.details[0]["judge_2"] is None
    assert [d["block_index"] for d in sc.details] == [1, 1, 1, 2, None]
    assert [d["word_offset"] for d in sc.details] == [0, 0, 0, 5, None]  # "Floor 1: ... washroom;"


# -- hand-made outputs -------------------------------------------------------------------------
GOLD = dict(
    once={"2": "art gallery", "5": "law firm", "9": "dance studio"},
    rng={"3": "hospital", "4": "hospital"},
    per={"2": "sky garden", "6": "sky garden", "10": "sky garden"},
)


def complete_output():
    c = {f: "an ordinary office floor" for f in range(1, 11)}
    c[2] = "an art gallery and a sky garden"
    c[3] = "the hospital wing"
    c[4] = "more hospital wards"
    c[5] = "a law firm"
    c[6] = "a sky garden"
    c[9] = "a dance studio"
    c[10] = "a sky garden on the roof"
    return floors(c)


def test_complete_output():
    sc = score(sample(**GOLD), complete_output())
    assert sc.parts["CR"] == 1.0
    assert sc.parts["n_checks"] == 8 and sc.parts["n_judged"] == 8 and sc.parts["n_yes"] == 8
    assert sc.parts["STIC_1"] == 1.0 and sc.parts["STIC_2"] == 1.0
    assert sc.parts["n_yes_single"] == 3 and sc.parts["n_yes_range"] == 2
    assert sc.parts["n_yes_periodic"] == 3


def test_cut_off_at_60_percent():
    text = complete_output()
    cut = text[: text.index("#*# Floor 7:")]  # floors 1..6 written
    sc = score(sample(**GOLD), cut)
    # judged: 2 (art), 5 (law), 3, 4 (hospital), 2, 6 (sky garden) -> 6 judged, all yes
    # missing: 9 (dance studio), 10 (sky garden)
    assert sc.parts["CR"] == pytest.approx(0.6)
    assert sc.parts["n_judged"] == 6 and sc.parts["n_yes"] == 6
    assert sc.parts["STIC_1"] == 1.0
    assert sc.parts["STIC_2"] == pytest.approx(6 / 8)
    # cut mid-word inside floor 6 as well: still scores what it earned
    mid = text[: text.index("#*# Floor 6:") + len("#*# Floor 6: a sky")]
    sc = score(sample(**GOLD), mid)
    assert sc.parts["CR"] == pytest.approx(0.6)
    assert sc.parts["n_yes"] == 5 and sc.parts["n_judged"] == 6
    assert sc.parts["STIC_1"] == pytest.approx(5 / 6) and sc.parts["STIC_2"] == pytest.approx(5 / 8)


def test_instructions_on_wrong_entries():
    c = {f: "an ordinary office floor" for f in range(1, 11)}
    c[1] = "art gallery, law firm, dance studio, hospital, sky garden"  # all on floor 1
    sc = score(sample(**GOLD), floors(c))
    assert sc.parts["CR"] == 1.0
    assert sc.parts["n_judged"] == 8 and sc.parts["n_yes"] == 0
    assert sc.parts["STIC_1"] == 0.0 and sc.parts["STIC_2"] == 0.0
    # off by one floor: each requirement one floor too high
    c = {f: "an ordinary office floor" for f in range(1, 11)}
    c.update({3: "art gallery", 6: "law firm", 10: "dance studio", 4: "hospital", 5: "hospital"})
    c.update({7: "sky garden"})
    sc = score(sample(**GOLD), floors(c))
    # only floor 4 'hospital' (range) happens to be right
    assert sc.parts["n_yes"] == 1 and sc.parts["n_yes_range"] == 1


def test_same_outputs_offline_judge_agrees_with_hand_values():
    # the offline judge is unambiguous on these outputs
    s = sample(**GOLD)
    for text, yes in ((complete_output(), 8), (floors({1: "x", 2: "an office"}), 0)):
        sc = score_longgenbench(s, Response("s", "m", text, "h"), None)
        assert sc.parts["n_yes"] == yes


def test_first_block_per_id_is_kept():
    text = " lobby #*# Floor 2: an office #*# Floor 2: an art gallery"
    sc = score(sample(once={"2": "art gallery"}, number=2), text)
    assert sc.parts["CR"] == 1.0 and sc.parts["n_yes"] == 0


def test_first_match_in_block_gives_its_id():
    blocks = split_blocks("#*# Floor 5: see also Floor 7 #*# Floor 7: x")
    assert parse_entries(blocks, "Floor") == {5: 1, 7: 2}
    # the unit is matched literally and case-sensitively, as the official regex
    assert parse_entries(["floor 3", "Floors 4", "Menu Week 2"], "Floor") == {}
    assert parse_entries(["Menu Week 2"], "Week") == {2: 0}


def test_entries_outside_range_do_not_count():
    text = " a #*# Floor 0: b #*# Floor 11: c #*# Floor 99999999999999999999: d"
    sc = score(sample(number=2), text)
    assert sc.parts["CR"] == 0.5 and sc.parts["n_found"] == 1


def test_length_and_official_filter():
    body = " ".join(["word"] * 60)
    text = "".join(f"#*# Floor {f}: {body} " for f in range(2, 43))
    s = sample(number=42)
    sc = score(s, text)
    out = "#*# Floor 1:" + text
    assert sc.parts["words"] == len(out.split())
    assert sc.parts["n_blocks"] == len(out.split("#*#")) == 43
    assert sc.parts["len_eligible"] == 1.0  # > 40 blocks and > 2,000 words
    short = score(s, " ".join(["word"] * 3000))
    assert short.parts["len_eligible"] == 0.0  # 2 blocks


def test_empty_output_and_no_checks():
    sc = score_longgenbench(sample(**GOLD), Response("s", "m", "", "h"), None)
    assert sc.parts["CR"] == pytest.approx(0.1)  # the prefix holds Floor 1
    assert sc.value == 0.0 and math.isnan(sc.parts["STIC_1"])  # nothing judged
    sc = score_longgenbench(sample(), Response("s", "m", "x", "h"), None)
    assert math.isnan(sc.value) and "no checks" in sc.explanation


# -- judges -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "a,b",
    [
        ("gardens", "garden"),
        ("attended", "attend"),
        ("studies", "study"),
        ("shopping", "shop"),
        ("churches", "church"),
        ("workshops", "workshop"),
        ("classes", "class"),
    ],
)
def test_stem_makes_inflections_meet(a, b):
    assert stem(a) == stem(b)


def test_stem_leaves_short_and_ss_words():
    assert [stem(w) for w in ("is", "bus", "glass", "red", "sing")] == [
        "is",
        "bus",
        "glass",
        "red",
        "sing",
    ]


def test_offline_judge_stems_and_threshold():
    j = OfflineJudge()
    assert j.verdict("Floor 5 hosts two Sky Gardens.", "sky garden")
    assert not j.verdict("Floor 5 hosts a garden.", "sky garden")  # 1 of 2 stems < 0.75
    assert j.verdict(
        "Burger Monday with our gourmet burgers", "Burger Mondays featuring Gourmet Burgers"
    )
    assert j.verdict("we attended the parenting workshops", "Attend a parenting workshop")
    assert not j.verdict("", "art gallery")
    assert not j.verdict("anything", "")
    assert j.judge([("a law firm", "law firm"), ("x", "law firm")]) == [True, False]


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=120),
        st.lists(
            st.sampled_from(["Gardens", "K", "İ", "café", "the", "12", "’", " ", "\ud800"])
        ).map("".join),
    )
)
def test_content_stems_are_the_regex_tokens(text):
    tokens = re.findall(r"[a-z0-9]+", text.lower())
    assert content_stems(text) == {stem(t) for t in tokens if t not in STOP_WORDS}


def test_judge_prompts():
    assert judge_prompt("Floor 3: spa", "spa") == (
        "Context: Floor 3: spa### Instruction: Does this context include the spa? "
        "Please answer with 'yes' or 'no' only."
    )
    p = judge_prompt_few_shot("Floor 3: spa", "spa")
    assert p.count("#*# Yes") >= 2 and "#*# No" in p and "'spa'" in p


@pytest.mark.parametrize(
    "text,few,expected",
    [
        ("Yes.", False, True),
        ("no", False, False),
        ("", False, False),
        ("Nope, but yesterday", False, True),  # the official substring rule
        ("The floor has a spa. #*# Yes", True, True),
        ("yes it mentions a spa, but not here #*# No", True, False),
        ("#*# No ... #*# yes", True, True),
        ("yes, it does", True, True),  # no mark: zero-shot rule
    ],
)
def test_parse_verdict(text, few, expected):
    assert parse_verdict(text, few) is expected


class FakeBackend(Backend):
    """Scripted judge backend: 'Yes' when the description is in the block, else 'No'."""

    name = "fake-judge"

    def __init__(self, fail_on: str | None = None):
        self.calls = 0
        self.prompts: list[str] = []
        self.fail_on = fail_on
        self.closed = False

    def generate(self, samples, contexts, config):
        self.calls += 1
        out = []
        for s in samples:
            block = contexts[s.context_id].text
            prompt = user_text(s, block)
            self.prompts.append(prompt)
            desc = prompt.split("Does this context include the ")[1].split("? Please")[0]
            if self.fail_on and self.fail_on in block:
                out.append(
                    Response(s.id, self.name, "", config.hash(), finish_reason="error", error="x")
                )
                continue
            out.append(Response(s.id, self.name, "Yes" if desc in block else "No", config.hash()))
        return out

    def info(self):
        return {}

    def close(self):
        self.closed = True


def test_llm_judge_batches_parses_and_resumes(tmp_path):
    backend = FakeBackend(fail_on="broken")
    store = ResponseStore(tmp_path / JUDGE_FILE)
    judge = LLMJudge(lambda: backend, store, batch_size=2, label="m")
    assert judge.name == "llm:m" and judge.engine is None  # nothing loads before a question
    pairs = [
        ("a spa", "spa"),
        ("a gym", "spa"),
        ("a spa, broken", "spa"),
        ("gym", "gym"),
        ("a spa", "spa"),  # the same question twice is asked once
    ]
    yes, failed = judge.ask(pairs)
    assert yes == [True, False, False, True, True]
    assert failed == [False, False, True, False, False]
    assert backend.calls == 2 and len(backend.prompts) == 4
    assert backend.prompts[0] == judge_prompt("a spa", "spa")  # the official prompt, verbatim
    assert judge.name == "llm:fake-judge"
    judge.close()
    assert backend.closed and judge.engine is None
    # a second judge on the same store asks only the question whose generation failed
    again = FakeBackend()
    judge2 = LLMJudge(lambda: again, ResponseStore(tmp_path / JUDGE_FILE), batch_size=2)
    assert judge2.ask(pairs) == ([True, False, True, True, True], [False] * 5)
    assert again.prompts == [judge_prompt("a spa, broken", "spa")]


def test_llm_judge_few_shot_prompt_goes_through_unchanged(tmp_path):
    class Recorder(FakeBackend):
        def generate(self, samples, contexts, config):
            self.prompts += [user_text(s, contexts[s.context_id].text) for s in samples]
            return [Response(s.id, self.name, "... #*# Yes", config.hash()) for s in samples]

    rec = Recorder()
    judge = LLMJudge(lambda: rec, ResponseStore(tmp_path / JUDGE_FILE), few_shot=True)
    assert judge.ask([("Floor 3: spa", "spa")]) == ([True], [False])
    assert rec.prompts == [judge_prompt_few_shot("Floor 3: spa", "spa")]


def _write(run: RunDir, responses: list[Response], tail: str = "") -> None:
    text = "".join(dumps(r) + "\n" for r in responses) + tail
    (run.path / "responses.jsonl").write_text(text, encoding="utf-8")


def _perfect(s: Sample) -> str:
    """A generation that writes every floor with its requirements (the prefix holds floor 1)."""
    descs: dict[int, list[str]] = {}
    for c in s.gold.checks:
        descs.setdefault(c.entry, []).append(c.description)
    first = " and ".join(descs.get(1, ["a lobby"]))
    return f" {first}. " + "".join(
        f"#*# Floor {f}: {' and '.join(descs.get(f, ['an office']))}. "
        for f in range(2, s.gold.number + 1)
    )


@pytest.fixture
def sky_run(tmp_path):
    run = lceval.run.build(
        "lgb",
        "longgenbench",
        {"n_per_scenario": 2, "scenarios": ["skyscraper"], "versions": ["short"]},
        root=tmp_path,
    )
    return run, lceval.run.load_samples(run)


def test_failed_then_retried_response_is_scored_as_the_success(sky_run):
    # The old reader of responses.jsonl kept the FIRST line per key and scored this sample as
    # failed; the pipeline scores the first successful response.
    run, samples = sky_run
    s = samples[0]
    _write(
        run,
        [
            Response(s.id, "m", "", "h", finish_reason="error", error="CUDA OOM"),
            Response(s.id, "m", _perfect(s), "h"),
        ],
    )
    df = lceval.run.score("lgb", root=run.path.parent, progress=False)
    assert len(df) == 1
    row = df.iloc[0]
    assert row["value"] == 1.0 and not row["explanation"].startswith("generation failed")


def test_pipeline_offline_scoring_writes_checks(sky_run):
    run, samples = sky_run
    ok = [Response(s.id, "m", _perfect(s), "h") for s in samples]
    err = Response(samples[0].id, "m2", "", "h", finish_reason="error", error="OOM")
    _write(run, [*ok, ok[0], err], tail='{"torn')  # a duplicate, a failure, a torn last line
    df = lceval.run.score("lgb", root=run.path.parent, progress=False)
    assert len(df) == 3
    assert (df[df["model"] == "m"]["value"] == 1.0).all()
    failed = df[df["model"] == "m2"]
    assert failed["value"].isna().all() and "OOM" in failed["explanation"].iloc[0]
    checks = pd.read_parquet(run.path / CHECKS_FILE)
    assert list(checks.columns) == list(CHECK_COLUMNS)
    assert set(checks["kind"]) == {"single", "range", "periodic"}
    assert checks["yes"].all() and (checks["judge"] == "offline").all()
    assert len(checks) == sum(len(s.gold.checks) for s in samples)


def test_pipeline_llm_judge_with_second_judge_and_resume(sky_run, monkeypatch):
    from lceval.models import base

    run, samples = sky_run
    texts = [_perfect(samples[0]), " a lobby #*# Floor 2: a spa"]
    _write(run, [Response(s.id, "m", t, "h") for s, t in zip(samples, texts, strict=True)])
    engines: list[FakeBackend] = []

    def fake_load(backend, model=None, **options):
        assert (backend, model, options) == ("hf", None, {"device": "cpu"})
        engines.append(FakeBackend())
        return engines[-1]

    monkeypatch.setattr(base, "load_backend", fake_load)
    opts = {"batch_size": 4, "backend_options": {"device": "cpu"}}
    df = lceval.run.score(
        "lgb", root=run.path.parent, scorer="longgenbench:llm", options=opts, progress=False
    )
    assert df["scorer"].unique().tolist() == ["longgenbench:llm"]
    assert df["value"].iloc[0] == 1.0 and "(llm:fake-judge judge)" in df["explanation"].iloc[0]
    assert len(engines) == 1 and engines[0].closed
    checks = pd.read_parquet(run.path / CHECKS_FILE)
    judged = checks[checks["judged"]]
    assert (judged["yes"] == judged["yes_2"]).all()  # the two judges agree on these outputs
    assert set(checks["judge"]) == {"llm:fake-judge"} and set(checks["judge_2"]) == {"offline"}
    assert (run.path / JUDGE_FILE).exists()
    # rescoring asks the judge nothing new
    again = lceval.run.score(
        "lgb", root=run.path.parent, scorer="longgenbench:llm", options=opts, progress=False
    )
    assert again["value"].tolist() == df["value"].tolist()
    assert engines[-1].calls == 0


@pytest.mark.parametrize(
    "options,match",
    [
        ({"few_shot": "yes"}, "few_shot"),
        ({"batch_size": 0}, "batch_size"),
        ({"backend": "nope"}, "nope"),
        ({"backend_options": {"not_an_option": 1}}, "not_an_option"),
        ({"judge": "x"}, "unknown parameter 'judge'"),
    ],
)
def test_llm_judge_options_are_checked_before_loading(sky_run, options, match):
    run, samples = sky_run
    _write(run, [Response(samples[0].id, "m", "x", "h")])
    with pytest.raises(LcevalError, match=match):
        lceval.run.score("lgb", root=run.path.parent, scorer="longgenbench:llm", options=options)


@pytest.mark.slow
def test_embedded_model_as_judge(sky_run):
    """The real embedded SmolLM2 judges a small run end to end (CPU, tens of seconds)."""
    run, samples = sky_run
    s = samples[0]
    _write(run, [Response(s.id, "m", " a lobby #*# Floor 2: a spa #*# Floor 3: a gym", "h")])
    df = lceval.run.score(
        "lgb",
        root=run.path.parent,
        scorer="longgenbench:llm",
        options={"batch_size": 8},
        progress=False,
    )
    p = df.iloc[0]
    assert 0.0 <= p["value"] <= 1.0 and "llm:" in p["explanation"]
    checks = pd.read_parquet(run.path / CHECKS_FILE)
    assert checks["judged"].sum() == len(ResponseStore(run.path / JUDGE_FILE))
    assert checks["yes_2"].notna().all()


# -- word counts ---------------------------------------------------------------------------------
UNICODE_SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _offsets(output: str) -> dict[int, int]:
    out, pos = {}, 0
    for i, b in enumerate(output.split("#*#")):
        out[i] = pos
        pos += len(b.split())
    return out


words_and_separators = st.lists(
    st.one_of(
        st.sampled_from(["#*#", "#", "*", "#*#*#", "a", "word", "é", "’", "\ud800", "😀"]),
        st.sampled_from(list(UNICODE_SPACES) + ["\u200b", "\u2019", "\u3001"]),
        st.text(max_size=6),
    ),
    max_size=80,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=words_and_separators, chunk=st.sampled_from([4, 5, 8, 13, 32_768]))
def test_word_layout_equals_str_split(text, chunk):
    old = score_module._CHUNK
    score_module._CHUNK = chunk  # small windows: words and separators cross window edges
    try:
        n_blocks = len(text.split("#*#"))
        words, offsets = word_layout(text, range(n_blocks))
        assert words == len(text.split()) == word_count(text)
        assert offsets == _offsets(text)
        last = n_blocks - 1
        assert word_layout(text, {last, last + 5}) == (words, {last: _offsets(text)[last]})
        starts = [0, *accumulate(len(b) + 3 for b in text.split("#*#")[:-1])]
        assert word_layout(text, {1, 3}, starts)[1] == {
            i: o for i, o in _offsets(text).items() if i in (1, 3)
        }
    finally:
        score_module._CHUNK = old


def test_word_layout_knows_every_whitespace_character():
    for lo in range(0, 0x110000, 0x8000):
        chars = [chr(c) for c in range(lo, min(lo + 0x8000, 0x110000))]
        text = " ".join(f"a{c}b" for c in chars) + "#*#" + "".join(chars)
        assert word_layout(text, {1}) == (len(text.split()), {1: _offsets(text)[1]}), hex(lo)


# -- robustness --------------------------------------------------------------------------------
texts = st.one_of(
    st.text(max_size=400),
    st.lists(
        st.one_of(
            st.sampled_from(["#*#", "Floor ", "Floor 3", "Floor 10:", "*** finished", "\n", " "]),
            st.integers(-5, 10**30).map(str),
            st.just("9" * 5000),
            st.text(max_size=20),
        ),
        max_size=60,
    ).map("".join),
)


@settings(max_examples=200, deadline=None)
@given(text=texts)
def test_never_raises_and_stays_in_range(text):
    sc = score_longgenbench(sample(**GOLD), Response("s", "m", text, "h"), None)
    p = sc.parts
    assert math.isnan(sc.value) or 0.0 <= sc.value <= 1.0
    assert 0.0 <= p["CR"] <= 1.0
    assert 0 <= p["n_yes"] <= p["n_judged"] <= p["n_checks"] == 8
    if p["n_judged"]:
        assert p["STIC_2"] <= p["STIC_1"] + 1e-12
    assert p["n_found"] <= 10
    assert p["words"] == len(("#*# Floor 1:" + text).split())
    assert len(sc.details) == 8


gold_values = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.dictionaries(st.text(max_size=4), st.one_of(st.text(max_size=8), st.integers()), max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(
    once=gold_values,
    number=st.one_of(st.none(), st.integers(-3, 50), st.text(max_size=3)),
    unit=st.one_of(st.none(), st.sampled_from(["Floor", "", "Week", "(", "a+"])),
    text=st.text(max_size=200),
)
def test_odd_gold_is_refused_at_load_or_scored(once, number, unit, text):
    raw = {
        "checks_once": once,
        "checks_range": {},
        "checks_periodic": {},
        "type": unit,
        "number": number,
        "prefix": "",
    }
    try:
        g = LongGenBenchGold.from_dict(raw)
    except ValueError as exc:
        assert "\n" not in str(exc)
        return
    s = Sample(id="s", benchmark="longgenbench", task="t", instruction="", gold=g)
    sc = score_longgenbench(s, Response("s", "m", text, "h"), None)
    assert math.isnan(sc.value) or 0.0 <= sc.value <= 1.0
