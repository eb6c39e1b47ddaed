"""L-Eval building from task files the tests write in the official format."""

from __future__ import annotations

import json
import re

import pytest

import lceval.params
import lceval.run
from lceval.benchmarks.leval import data as leval_data
from lceval.benchmarks.leval import prompts
from lceval.benchmarks.leval.build import build_leval, cut_document
from lceval.benchmarks.leval.gold import OpenGold, SciFiGold, TopicGold
from lceval.core.errors import LcevalError
from lceval.models.prompts import user_text


def _by_id(result):
    return {s.id: s for s in result.samples}


def test_build_prompts_gold_and_shared_contexts(leval_data):
    r = build_leval({"data_path": str(leval_data)})
    s = _by_id(r)
    ctx = {c.id: c for c in r.contexts}
    # subset "ngram": the LLM and human documents are left out
    assert "leval/news_summ/0001/000" not in s and "leval/natural_question/0001/000" not in s
    # one document, many questions: one context
    tpo = [x for x in r.samples if x.task == "tpo"]
    assert len(tpo) == 2 and {x.context_id for x in tpo} == {"leval/tpo/0000"}
    # the official exam user turn, exactly
    doc = ctx["leval/tpo/0000"].text
    q = leval_data.parent / "LEval-data"
    first = tpo[0]
    assert first.system == prompts.SYSTEM_EXAM
    inst = "what is blue\nA. the sky\nB. the grass\nC. the sun\nD. the rose"
    assert user_text(first, doc) == (
        f"Document is as follows. {doc} Question: {inst} \nPlease directly give answer without "
        "any additional output or explanation\n Answer: "
    )
    assert first.gold.query == inst and first.gold.reference == "A" and first.max_new_tokens == 512
    # gsm and codeU: document + blank line + instruction
    gsm = s["leval/gsm100/0000/000"]
    assert gsm.system == prompts.SYSTEM_GSM and gsm.joiner == "\n\n" and gsm.description == ""
    assert s["leval/coursera/0000/000"].system == prompts.SYSTEM_COURSERA
    assert s["leval/codeU/0000/000"].system == prompts.SYSTEM_CODEU
    # TopicRet: topic position = question index
    topics = [s[f"leval/topic_retrieval_longchat/0000/{k:03d}"].gold for k in range(3)]
    assert [g.topic_index for g in topics] == [0, 1, 2] and isinstance(topics[0], TopicGold)
    assert s["leval/topic_retrieval_longchat/0000/000"].system == prompts.SYSTEM_TOPIC
    # SFiction: the document question and the world-knowledge question (no document)
    loyalty, fact = s["leval/sci_fi/0000/000/loyalty"], s["leval/sci_fi/0000/000/fact"]
    assert loyalty.context_id == "leval/sci_fi/0000" and loyalty.system == prompts.SYSTEM_SCI_FI
    assert fact.context_id is None and fact.system is None
    assert fact.instruction.endswith(prompts.FACT_SUFFIX)
    assert "based on the real-world knowledge and facts up until your last training" in (
        fact.instruction
    )
    assert isinstance(fact.gold, SciFiGold) and fact.gold.judgment == "fact"
    # open-ended with LIE (default): the reference's word count
    news = s["leval/news_summ/0000/000"]
    assert isinstance(news.gold, OpenGold) and news.gold.reference_words == 10
    assert news.instruction == (
        "Instruction: Please summarize these news articles. The suggested output length is "
        "around 10 words. Output: "
    )
    assert news.meta["lie"] is True and news.meta["retrieval"] == "full"
    assert news.gold.metric == "rouge" and s["leval/natural_question/0000/000"].gold.metric == "f1"
    assert r.sources["data"]["tpo"]["path"].endswith("tpo.jsonl") and r.encoding == "cl100k_base"
    assert q.exists()


def test_lie_both_and_off(leval_data):
    s = _by_id(
        build_leval({"data_path": str(leval_data), "tasks": ["natural_question"], "lie": "both"})
    )
    assert set(s) == {
        "leval/natural_question/0000/000",
        "leval/natural_question/0000/000/nolie",
        "leval/natural_question/0000/001",
        "leval/natural_question/0000/001/nolie",
    }
    off = s["leval/natural_question/0000/001/nolie"]
    assert off.instruction == "Instruction: how many lakes are there Output: "
    assert off.meta["lie"] is False and off.gold.reference_words == 2
    assert "around 2 words" in s["leval/natural_question/0000/001"].instruction
    only_off = build_leval({"data_path": str(leval_data), "tasks": ["news_summ"], "lie": False})
    assert [x.id for x in only_off.samples] == ["leval/news_summ/0000/000/nolie"]


def test_subsets_and_limits(leval_data):
    gpt4 = build_leval({"data_path": str(leval_data), "subset": "gpt4"})
    assert [x.id for x in gpt4.samples] == ["leval/news_summ/0001/000"]
    turbo = build_leval({"data_path": str(leval_data), "subset": "turbo"})
    assert {x.id for x in turbo.samples} == {
        "leval/news_summ/0001/000",
        "leval/natural_question/0001/000",
    }
    lim = build_leval(
        {
            "data_path": str(leval_data),
            "tasks": ["tpo", "topic_retrieval_longchat"],
            "limit_questions": 1,
        }
    )
    assert [x.id for x in lim.samples] == [
        "leval/tpo/0000/000",
        "leval/topic_retrieval_longchat/0000/000",
    ]
    with pytest.raises(LcevalError, match="no question selected"):
        build_leval({"data_path": str(leval_data), "tasks": ["tpo"], "subset": "human"})


def test_official_word_cut_keeps_the_start_and_codeu_the_end():
    doc = " ".join(f"w{i}" for i in range(1000))
    cut = cut_document(doc, 300)
    assert cut.startswith("w0 w1 ") and len(cut.split(" ")) <= 300
    # the official loop: first round keeps 300 words; here ~2 tokens a word, so more rounds
    assert len(cut.split(" ")) in (50, 300 - 250)
    left = cut_document(doc, 300, from_left=True)
    assert left.endswith("w998 w999") and left.split(" ")[0] != "w0"
    assert cut_document("short text", 300) == "short text"


def test_max_length_cuts_documents(leval_data):
    r = build_leval(
        {
            "data_path": str(leval_data),
            "tasks": ["codeU", "tpo"],
            "max_length": 812,
            "max_new_tokens": 512,
        }
    )
    ctx = {c.id: c for c in r.contexts}
    assert ctx["leval/codeU/0000"].text.endswith("print(f([5, 7, 9]))")  # codeU keeps the end
    assert 0 < ctx["leval/codeU/0000"].n_tokens <= 300
    assert ctx["leval/tpo/0000"].text.startswith("Sentence 0 ")
    assert all(s.meta["doc_cut"] for s in r.samples)


def test_same_params_same_files(tmp_path, leval_data):
    params = {"data_path": str(leval_data), "lie": "both"}
    a = lceval.run.build("a", "leval", params, root=tmp_path)
    b = lceval.run.build("b", "leval", params, root=tmp_path)
    for name in ("samples.jsonl", "contexts.jsonl"):
        assert (a.path / name).read_bytes() == (b.path / name).read_bytes()
    loaded = lceval.run.load_samples(a)
    assert isinstance(loaded[0].gold, type(build_leval(params).samples[0].gold))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"tasks": ["nope"]}, "tasks[0] must be one of tpo, quality"),
        ({"subset": "x"}, "subset must be one of"),
        ({"lie": "maybe"}, "lie must be true, false or 'both', got 'maybe'"),
        ({"limit_docs": 0}, "limit_docs must be >= 1, got 0 (int)"),
        ({"max_length": 100}, "max_length must exceed max_new_tokens"),
        ({"retrieval": "grep"}, "retrieval[0] must be one of full, bm25, dense, got 'grep'"),
        ({"retrieval_chunk_tokens": 5000}, "must not exceed retrieval_window"),
        ({"colour": 1}, "unknown parameter 'colour'"),
        ({"encoding": "gpt2"}, "encoding must be one of"),
        ({"infer_max_new_tokens": 16}, "'infer_max_new_tokens' is now spelled 'max_new_tokens'"),
        ({"subsett": "ngram"}, "unknown parameter 'subsett'; did you mean subset?"),
        ({"seed": "1"}, "seed must be an integer, got '1' (str)"),
    ],
)
def test_bad_params(leval_data, params, message):
    with pytest.raises(LcevalError, match=re.escape(message)):
        build_leval({"data_path": str(leval_data), **params})


def test_notebook_only_keys_are_ignored(leval_data):
    r = build_leval(
        {
            "data_path": str(leval_data),
            "tasks": ["tpo"],
            "backend": "hf",
            "judge_model": None,
            "baseline": "x",
        }
    )
    assert len(r.samples) == 2


def test_bad_files(tmp_path):
    base = tmp_path / "d"
    base.mkdir()
    (base / "tpo.jsonl").write_text(
        json.dumps({"input": "x", "instructions": ["a"], "outputs": [], "evaluation": "exam"})
        + "\n"
    )
    with pytest.raises(LcevalError, match="1 instructions but 0 outputs"):
        build_leval({"data_path": str(base)})
    (base / "tpo.jsonl").write_text(
        json.dumps({"input": "x", "instructions": ["a"], "outputs": ["A"], "evaluation": "bad"})
        + "\n"
    )
    with pytest.raises(LcevalError, match="evaluation 'bad' is not one of"):
        build_leval({"data_path": str(base)})
    (base / "tpo.jsonl").write_text("{not json\n")
    with pytest.raises(LcevalError, match="line 1 is not valid JSON"):
        build_leval({"data_path": str(base / "tpo.jsonl")})
    with pytest.raises(LcevalError, match="does not exist"):
        build_leval({"data_path": str(tmp_path / "missing")})
    with pytest.raises(LcevalError, match="no data file for task"):
        build_leval({"data_path": str(base), "tasks": ["quality"]})
    (tmp_path / "other.jsonl").write_text("")
    with pytest.raises(LcevalError, match="file name is not <task>.jsonl"):
        build_leval({"data_path": str(tmp_path / "other.jsonl")})


def test_hub_failure_is_one_line(monkeypatch):
    datasets = pytest.importorskip("datasets")
    # the hub's answer to "does it exist" (asked before datasets loads): yes
    monkeypatch.setattr("lceval.benchmarks.leval.data.hub_unreachable", lambda *a, **k: None)

    def fail(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'L4NLP/LEval' on the Hub\n(offline)")

    monkeypatch.setattr(datasets, "load_dataset", fail)
    with pytest.raises(LcevalError) as err:
        build_leval({"tasks": ["tpo"]})
    msg = str(err.value)
    assert "\n" not in msg and "L4NLP/LEval/tpo" in msg and "data_path" in msg


def test_hub_rows_are_read_like_files(monkeypatch, leval_docs, leval_data):
    datasets = pytest.importorskip("datasets")
    # the hub's answer to "does it exist" (asked before datasets loads): yes
    monkeypatch.setattr("lceval.benchmarks.leval.data.hub_unreachable", lambda *a, **k: None)
    calls = []

    def load(name, task, split):
        calls.append((name, task, split))
        return datasets.Dataset.from_list(leval_docs[task])

    monkeypatch.setattr(datasets, "load_dataset", load)
    hub = build_leval({"tasks": ["tpo", "news_summ"], "subset": "all"})
    local = build_leval(
        {"data_path": str(leval_data), "tasks": ["tpo", "news_summ"], "subset": "all"}
    )
    assert calls == [("L4NLP/LEval", "tpo", "test"), ("L4NLP/LEval", "news_summ", "test")]
    assert hub.samples == local.samples and hub.contexts == local.contexts
    assert hub.sources["data"]["tpo"]["hub"] == "L4NLP/LEval"


def test_demo_files_are_official_and_build(tmp_path):
    files = leval_data.write_demo_data(tmp_path / "demo", doc_words=120)
    assert set(files) == {"tpo", "news_summ", "natural_question"}
    for task, path in files.items():
        docs = leval_data.read_task_file(path)
        assert docs and docs[0].task == task
    r = build_leval({"data_path": str(tmp_path / "demo")})
    tpo = [s for s in r.samples if s.task == "tpo"]
    assert len(tpo) == 2 and tpo[0].gold.reference in "ABCD"
    assert len({c.id for c in r.contexts}) == 3


def test_bm25_retrieval_contexts(leval_data):
    pytest.importorskip("bm25s")
    r = build_leval(
        {
            "data_path": str(leval_data),
            "tasks": ["natural_question"],
            "retrieval": ["full", "bm25"],
            "retrieval_chunk_tokens": 40,
            "retrieval_top_k": 2,
            "retrieval_window": 100,
        }
    )
    s = _by_id(r)
    ctx = {c.id: c for c in r.contexts}
    full, bm = s["leval/natural_question/0000/000"], s["leval/natural_question/0000/000/bm25"]
    assert full.context_id == "leval/natural_question/0000"
    assert (
        bm.context_id == "leval/natural_question/0000/000/bm25" and bm.meta["retrieval"] == "bm25"
    )
    assert bm.instruction == full.instruction and bm.system == full.system
    text = ctx[bm.context_id].text
    assert 0 < ctx[bm.context_id].n_tokens <= 100 and text.count("\n\n") <= 1
    assert text in ctx[full.context_id].text or "\n\n" in text


@pytest.mark.slow
def test_smoke_params_build_with_dense_retrieval(tmp_path):
    """params/08_leval/smoke.yaml builds as it is (demo data, the shipped MiniLM retriever)."""
    params = lceval.params.load_params("params/08_leval/smoke.yaml")
    run = lceval.run.build("smoke", "leval", params, root=tmp_path)
    samples = lceval.run.load_samples(run)
    modes = {s.meta["retrieval"] for s in samples}
    assert modes == {"full", "dense"}
    ctx = run.read_contexts()
    dense = [c for c in ctx.values() if c.id.endswith("/dense")]
    assert dense and all(0 < c.n_tokens <= params["retrieval_window"] for c in dense)
    assert all("dense chunks" in c.source for c in dense)
