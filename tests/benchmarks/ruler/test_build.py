"""RULER builder: every answer is recoverable from its context; lengths; params; determinism;
variants as data; typed gold that round-trips through the run folder; wonderwords word lists."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path

import pytest

import lceval.params
from lceval.benchmarks.registry import load_samples
from lceval.benchmarks.ruler import BENCHMARK
from lceval.benchmarks.ruler import aggregation as ruler_aggregation
from lceval.benchmarks.ruler import build as ruler_build
from lceval.benchmarks.ruler import common as ruler_common
from lceval.benchmarks.ruler.build import build_ruler
from lceval.benchmarks.ruler.common import _cwe_words, _key_words, family_args, qa_documents
from lceval.benchmarks.ruler.gold import FAMILIES, GOLD, TASKS, VARIANTS, Variant
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.tokens import DEFAULT_ENCODING, count_tokens
from lceval.models.prompts import user_text

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def built():
    r = build_ruler({"lengths": [2048, 4096], "num_samples": 3, "seed": 7})
    return r, {c.id: c for c in r.contexts}


def _of(built, task):
    r, ctx = built
    return [(s, ctx[s.context_id]) for s in r.samples if s.task == task]


@pytest.fixture(scope="module")
def built_exact():
    r = build_ruler({"lengths": [2048, 4096], "num_samples": 3, "seed": 7, "fill": "exact"})
    return r, {c.id: c for c in r.contexts}


@pytest.mark.parametrize("fill", ["official", "exact"])
def test_all_tasks_lengths_and_budgets(fill, built, built_exact):
    r, ctx = built if fill == "official" else built_exact
    assert {s.task for s in r.samples} == set(TASKS)
    assert len(r.samples) == 13 * 2 * 3 == len(r.contexts)
    # exact: filled to within 10%; official: within one back-off step of the probe's size
    # (500 essay words are about 650 tokens, a third of 2K); a qa sample that backs off is
    # drawn anew, as the official script's (200 official qa_1 samples at 4K: down to 0.50 L)
    floor = 0.9 if fill == "exact" else 0.6
    budgets = {
        "niah": 128,
        "variable_tracking": 30,
        "common_words_extraction": 120,
        "freq_words_extraction": 50,
        "qa": 32,
    }
    for s in r.samples:
        c = ctx[s.context_id]
        assert s.max_new_tokens == budgets[s.scenario]
        exact = count_tokens(user_text(s, c.text) + s.assistant_prefix)
        # RULER: input tokens + answer budget <= target length
        assert exact + s.max_new_tokens <= s.length, s.id
        low = 0.45 if fill == "official" and s.scenario == "qa" else floor
        assert exact + s.max_new_tokens >= low * s.length, s.id
        assert abs(s.meta["input_tokens"] - exact) <= 0.01 * s.length + 5, s.id


def test_niah_needles_in_context(built):
    adjectives, nouns = _key_words()
    for task in TASKS:
        if VARIANTS[task].family != "niah":
            continue
        args = family_args(task)
        for s, c in _of(built, task):
            needles = re.findall(r"One of the special magic \w+ for (.+?) is: (\S+)\.", c.text)
            for key in s.gold.keys:
                assert key in s.instruction and key in s.assistant_prefix
                if args.type_needle_k == "words":  # wonderwords adjective-noun (official)
                    assert any(
                        key.startswith(a + "-") and key[len(a) + 1 :] in nouns for a in adjectives
                    ), key
            # every answer value is stated in the context, under one of the queried keys
            found = [v for k, v in needles if k in s.gold.keys]
            assert sorted(found) == sorted(s.gold.outputs), (s.id, needles)
            n_expected = args.num_needle_v * args.num_needle_q
            assert len(s.gold.outputs) == n_expected
            if n_expected == 1:
                assert s.description.startswith("A special magic")
                assert s.assistant_prefix.endswith("mentioned in the provided text is")


def test_vt_chain_resolves(built):
    for s, c in _of(built, "vt"):
        assigned: dict[str, str] = {}
        for a, b in re.findall(r"^VAR (\w+) = (VAR \w+|\d+)", c.text, flags=re.M):
            assigned[a] = b
        value = s.gold.value

        def resolve(v: str, assigned: dict[str, str] = assigned) -> str:
            while v in assigned:
                v = assigned[v].removeprefix("VAR ")
            return v

        holders = sorted(v for v in assigned if resolve(v) == value)
        assert holders == sorted(s.gold.outputs) and len(holders) == 5
        assert value in s.instruction and value in s.assistant_prefix


def test_cwe_answers_are_most_common(built):
    vocab = set(_cwe_words(False))
    for s, c in _of(built, "cwe"):
        words = re.split(r"(?:^| )\d+\. ", c.text)[1:]  # wonderwords has "contact lens"
        counts = Counter(words)
        top = {w for w, _ in counts.most_common(10)}
        assert top == set(s.gold.outputs)
        assert set(words) <= vocab  # nouns, adjectives and verbs of wonderwords (official)
        tenth = counts.most_common(10)[-1][1]
        assert all(n < tenth for w, n in counts.items() if w not in top)


def test_fwe_answers_are_most_frequent(built):
    for s, c in _of(built, "fwe"):
        counts = Counter(c.text.split())
        ranked = [w for w, _ in counts.most_common() if w != "..."]
        assert tuple(ranked[:3]) == s.gold.outputs
        assert counts[ranked[2]] > counts[ranked[3]]
        assert counts.most_common(1)[0][0] == "..."


def test_qa_gold_paragraphs_present(built):
    for task in ("qa_1", "qa_2"):
        for s, c in _of(built, task):
            docs, _ = qa_documents(s.gold.dataset)
            for d in s.gold.doc_ids:
                assert docs[d] in c.text
            if s.gold.dataset == "squad":
                assert any(a in docs[s.gold.doc_ids[0]] for a in s.gold.outputs)


def test_deterministic_and_seed_sensitive():
    p = {"tasks": ["niah_multikey_2", "cwe", "qa_2"], "lengths": [2048], "num_samples": 2}
    a, b = build_ruler(p), build_ruler(p)
    assert a.samples == b.samples and a.contexts == b.contexts
    c = build_ruler({**p, "seed": 1})
    assert [x.text for x in c.contexts] != [x.text for x in a.contexts]


def test_128k_length_fills_context():
    r = build_ruler(
        {"tasks": ["niah_single_2", "cwe", "fwe"], "lengths": [131072], "num_samples": 1}
    )
    for s in r.samples:
        assert 0.95 * 131072 <= s.meta["input_tokens"] + s.max_new_tokens <= 131072


def test_cwe_list_longer_than_wonderwords_uses_the_larger_list(monkeypatch):
    small = _cwe_words(False)[:300]
    counts = ruler_common._cwe_word_counts
    monkeypatch.setattr(
        ruler_aggregation, "_cwe_words", lambda large: _cwe_words(True) if large else small
    )
    monkeypatch.setattr(
        ruler_aggregation,
        "_cwe_word_counts",
        lambda tok, large: counts(tok, True) if large else counts(tok, False)[:300],
    )
    r = build_ruler({"tasks": ["cwe"], "lengths": [8192, 16384], "num_samples": 1})
    for s, c in zip(r.samples, r.contexts, strict=True):
        words = set(re.split(r"(?:^| )\d+\. ", c.text)[1:])
        assert len(words) > 300 and not words <= set(small)
        assert 0.9 * s.length <= s.meta["input_tokens"] + s.max_new_tokens <= s.length
    assert "english_words.json" in r.sources["word_lists"]["cwe_long_lists"]
    assert "paul_graham_essays" in r.sources


@pytest.mark.parametrize(
    "params, field",
    [
        ({"tasks": ["nope"]}, "tasks.0. must be one of niah_single_1"),
        ({"lengths": [100]}, "lengths"),
        ({"lengths": ["4k"]}, "lengths"),
        ({"num_samples": 0}, "num_samples"),
        ({"seed": -1}, "seed"),
        ({"encoding": "gpt2-nonexistent"}, "encoding"),
        ({"tokenizer": "o200k_base"}, "'tokenizer' is now spelled 'encoding'"),
        ({"num_sample": 1}, "did you mean num_samples"),
        (
            {"remove_newline_tab": "yes"},
            r"remove_newline_tab must be true or false, got 'yes' \(str\)",
        ),
        ({"colour": 1}, "unknown parameter"),
        ({"fill": "nope"}, r"fill must be one of official, binary, exact, got 'nope'"),
    ],
)
def test_bad_params(params, field):
    with pytest.raises(LcevalError, match=field):
        build_ruler({"num_samples": 1, **params})


def test_remove_newline_tab():
    r = build_ruler(
        {"tasks": ["vt"], "lengths": [2048], "num_samples": 1, "remove_newline_tab": True}
    )
    assert "\n" not in r.contexts[0].text and "\n" not in r.samples[0].description


def test_variants_are_the_official_tasks():
    assert TASKS == (
        *("niah_single_1", "niah_single_2", "niah_single_3"),
        *("niah_multikey_1", "niah_multikey_2", "niah_multikey_3"),
        *("niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe", "qa_1", "qa_2"),
    )
    assert BENCHMARK.tasks == TASKS and set(GOLD) == set(TASKS)
    hays = [family_args(t).type_haystack for t in TASKS[:8]]
    assert hays == ["noise", "essay", "essay", "essay", "needle", "needle", "essay", "essay"]
    assert family_args("niah_multikey_3").type_needle_k == "uuids"
    assert dataclasses.asdict(family_args("cwe")) == {"freq_cw": 30, "freq_ucw": 3, "num_cw": 10}
    assert family_args("fwe").alpha == 2.0 and family_args("fwe").coded_wordlen == 6
    assert family_args("vt").num_hops == 4 and family_args("qa_2").dataset == "hotpotqa"
    assert {t: FAMILIES[VARIANTS[t].family].tokens_to_generate for t in ("vt", "qa_1")} == {
        "vt": 30,
        "qa_1": 32,
    }


@pytest.mark.parametrize(
    "args, match",
    [
        ({"colour": 1}, "unknown argument 'colour'"),
        ({"num_needle_k": 0}, "num_needle_k"),
        ({"type_haystack": "ocean"}, "type_haystack"),
        ({"num_needle_q": True}, "num_needle_q"),
    ],
)
def test_bad_variant_arguments(monkeypatch, args, match):
    variants = {**VARIANTS, "niah_single_1": Variant("niah", args)}
    monkeypatch.setattr(ruler_build, "VARIANTS", variants)
    monkeypatch.setattr(ruler_common, "VARIANTS", variants)
    with pytest.raises(LcevalError, match=match):
        build_ruler({"tasks": ["niah_single_1"], "lengths": [2048], "num_samples": 1})


def test_gold_round_trips_through_the_run_folder(built, tmp_path):
    r, _ = built
    run = RunDir("rt", tmp_path).create()
    run.write_samples(r.samples, r.contexts)
    raw = [json.loads(line) for line in run.samples.read_text().splitlines()]
    for s, d in zip(r.samples, raw, strict=True):
        names = [f.name for f in dataclasses.fields(GOLD[s.task])]
        assert list(d["gold"]) == names, s.task  # the JSON keys are the Gold fields, in order
    assert load_samples(run.read_samples()) == r.samples


def test_run_folders_of_the_old_builder_still_load():
    run = RunDir("ruler", REPO / "tests/fixtures/regression")  # built before the Gold classes
    raw = [json.loads(line) for line in run.samples.read_text().splitlines()]
    samples = load_samples(run.read_samples())
    assert {s.task for s in samples} == set(TASKS)
    for s, d in zip(samples, raw, strict=True):
        assert isinstance(s.gold, GOLD[s.task])
        assert dataclasses.asdict(s.gold) == {
            k: tuple(v) if isinstance(v, list) else v for k, v in d["gold"].items()
        }


@pytest.mark.parametrize("name", ["smoke", "full"])
def test_notebook_params_files_are_accepted(name, monkeypatch):
    params = lceval.params.load_params(REPO / f"params/07_ruler/{name}.yaml")
    assert params["tasks"] is None and "backend" in params and "max_new_tokens" in params
    seen = {}

    def fake_builder(*args):  # stop after validation: check what the builder would build
        seen["args"] = args
        raise StopIteration

    monkeypatch.setattr(ruler_build, "_Builder", fake_builder)
    with pytest.raises(StopIteration):
        build_ruler(params)
    assert seen["args"] == ("o200k_base", 42, max(params["lengths"]))


def test_smoke_params_build_all_tasks():
    params = lceval.params.load_params(REPO / "params/07_ruler/smoke.yaml")
    r = build_ruler(params)
    assert [s.task for s in r.samples] == list(TASKS)
    assert r.sources["word_lists"]["package"] == "wonderwords"
    assert "cwe_long_lists" not in r.sources["word_lists"]


def test_official_fill_below_one_step_fills_to_the_budget():
    # 500 essay words never fit 256 tokens (the official loop would not end): filled as exact
    r = build_ruler(
        {"tasks": ["niah_single_2", "niah_single_1"], "lengths": [256], "num_samples": 2}
    )
    ctx = {c.id: c.text for c in r.contexts}
    for s in r.samples:
        exact = count_tokens(user_text(s, ctx[s.context_id]) + s.assistant_prefix)
        assert 0.6 * s.length <= exact + s.max_new_tokens <= s.length, s.id


def test_official_back_off_draws_the_sample_anew(monkeypatch):
    """fill official: a sample that does not fit is drawn anew at the smaller size, as the pinned
    scripts call ``generate_input_output`` again (qa: other random documents, not the first
    draw's first ones, which ran 377 tokens long at 50 documents, qa_2@8K); fwe backs off within
    its one vocabulary, as its script."""
    too_many = {"qa_2": 40, "fwe": 2 * 4096}  # neither fits 4K: every sample backs off
    monkeypatch.setattr(ruler_build, "pinned_units", lambda m, c, task, a, n: too_many[task])
    raw = {"lengths": [4096], "num_samples": 3, "seed": 7}  # the default encoding: cached counts
    r = build_ruler({**raw, "tasks": ["qa_2", "fwe"]})
    ctx = {c.id: c.text for c in r.contexts}
    b = ruler_build._Builder(DEFAULT_ENCODING, 7, 4096)
    makers = {"qa_2": b.qa, "fwe": b.fwe}
    documents = re.compile(r"(?:\n\n)?Document \d+:\n")
    for s in r.samples:
        i = int(s.id.rsplit("/", 1)[1])
        first = makers[s.task](s.task, family_args(s.task), 4096, i, too_many[s.task])
        if s.task == "qa_2":
            docs = set(documents.split(ctx[s.context_id])[1:])
            assert len(docs) < 40, s.id
            assert not docs <= set(documents.split(first.context)[1:]), s.id
        else:
            assert list(s.gold.outputs) == first.outputs, s.id  # the same vocabulary
            assert len(ctx[s.context_id].split()) < len(first.context.split()), s.id


def test_a_limited_build_makes_only_the_drawn_samples_as_the_grid_has_them(built):
    """``--limit``: the builder outlines its grid, generates only the drawn samples' haystacks,
    each byte for byte the whole build's (the per-task draw, and one sample of a later length
    alone: the probe runs for that task and length only)."""
    from lceval.run.selection import per_task
    from tests.run.test_selection import selected_matches_grid

    params = {"lengths": [2048, 4096], "num_samples": 3, "seed": 7}
    full = built[0]
    drawn = selected_matches_grid(
        "ruler",
        params,
        full,
        lambda outlines: {s.id for s in per_task(outlines, 1, strata={"ruler": BENCHMARK.strata})},
    )
    assert Counter(s.task for s in drawn.samples) == dict.fromkeys(TASKS, 1)
    one = selected_matches_grid("ruler", params, full, lambda _: {"ruler/cwe/4096/2"})
    assert [c.id for c in one.contexts] == ["ruler/cwe/4096/2"]


STORED = (
    ruler_common._essay_sentences,
    ruler_common._essay_counts,
    ruler_common._essay_word_ends,
    ruler_common.qa_documents,
    ruler_common._doc_counts,
)
"""The in-process caches of the corpus preparation that ``$LCEVAL_CACHE/ruler`` keeps on disk."""


@pytest.fixture
def small_corpora(monkeypatch, tmp_path):
    """Small essays and SQuAD rows in place of the shipped ones, an empty ``$LCEVAL_CACHE`` and
    empty in-process caches (a fresh process); the caches emptied again after."""
    from lceval.core import corpora

    words = ["river", "mill", "bridge", "market", "school", "garden", "harbor", "tower"]
    essays = "\n\n".join(
        f"Essay part {i} tells of the {words[i % 8]} and the {words[(3 * i) % 8]}. Dr. Smith "
        f"saw it in {1800 + i}."
        for i in range(200)
    )
    rows = [
        {
            "title": f"Article {i // 3}",
            "context": f"Record {i} says the {words[i % 8]} stands north of the old tower.",
            "question": f"Where does record {i} stand?",
            "id": str(i),
            "answers": ["north"],
            "is_impossible": False,
        }
        for i in range(90)
    ]
    monkeypatch.setattr(corpora, "paul_graham_essays", lambda: essays)
    monkeypatch.setattr(corpora, "squad", lambda: rows)
    monkeypatch.setenv("LCEVAL_CACHE", str(tmp_path))
    for f in STORED:
        f.cache_clear()
    yield tmp_path / "ruler"
    for f in STORED:
        f.cache_clear()


def test_corpus_preparation_is_kept_on_disk_for_the_next_build(monkeypatch, small_corpora):
    """The essays' sentence split (NLTK's Punkt) and the token counts of the sentences and QA
    documents are kept under ``$LCEVAL_CACHE/ruler`` by the digest of their inputs: the next
    build in a fresh process splits and counts none of them (10-20 s of each RULER build on 2
    loaded cores) and builds the same samples; a corrupt entry is computed again."""
    from nltk.tokenize import punkt

    params = {"tasks": ["niah_single_2", "qa_1"], "lengths": [1024], "num_samples": 2}
    first = build_ruler(params)
    assert sorted(p.name.split("-", 1)[0] for p in small_corpora.glob("*.npy")) == [
        "essay",
        "sentences",
        "squad",
    ]
    for f in STORED:  # a fresh process: only the disk remembers
        f.cache_clear()

    def refused(*args, **kwargs):
        raise AssertionError("the essays were split again")

    counts = ruler_common._Counter.counts

    def needles_only(self, texts):  # needles and headers are counted; the corpus is not
        assert not any(("Essay part" in t or "Record " in t) for t in texts), "counted again"
        return counts(self, texts)

    with monkeypatch.context() as m:
        m.setattr(punkt.PunktSentenceTokenizer, "span_tokenize", refused)
        m.setattr(ruler_common._Counter, "counts", needles_only)
        again = build_ruler(params)
    assert (again.samples, again.contexts) == (first.samples, first.contexts)
    for path in small_corpora.glob("*.npy"):
        path.write_bytes(b"\x93NUMPY not an array")
    for f in STORED:
        f.cache_clear()
    fixed = build_ruler(params)
    assert (fixed.samples, fixed.contexts) == (first.samples, first.contexts)
