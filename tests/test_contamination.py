"""Contamination: 13-gram overlap (CJK and Latin), membership signals by hand, AUROC, and known
cases on the real hf engine (a tiny model fine-tuned here; the embedded model shown the text)."""

from __future__ import annotations

import json
import math
import random
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lceval import contamination as C
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Context, Sample

ESSAY = (
    "The most important thing about startups is that they grow fast and the founders learn "
    "from their users every single week while building something people actually want to use"
)
ZH = "床前明月光疑是地上霜举头望明月低头思故乡白日依山尽黄河入海流欲穷千里目更上一层楼"


def test_text_units() -> None:
    assert C.text_units("Hello, 世界 2024!") == ["hello", "世", "界", "2024"]
    assert C.text_units("a_b") == ["a", "b"]
    assert C.text_units("") == []


def test_overlap_latin_and_chinese(tmp_path: Path) -> None:
    index = C.NgramIndex().add([ESSAY, ZH], "test")
    assert len(index) > 0 and index.sources[0]["texts"] == 2
    full = C.overlap(ESSAY, index)
    assert full.share == 1.0 and full.n_ngrams == len(C.text_units(ESSAY)) - 12
    # punctuation and case do not matter; a 13-gram window inside the text is found
    quoted = C.overlap(
        "THE MOST IMPORTANT thing, about startups: is that they grow fast and THE", index
    )
    assert quoted.share == 1.0
    assert C.overlap("completely different words " * 10, index).n_hits == 0
    assert (
        C.overlap("床前明月光疑是地上霜举头望明月。今天天气很好我们去公园散步吧", index).n_hits >= 1
    )
    assert math.isnan(C.overlap("too short", index).share)
    # half copied, half new
    mixed = " ".join(ESSAY.split()[:20]) + " " + " ".join(f"new{i}" for i in range(20))
    ov = C.overlap(mixed, index)
    assert 0 < ov.share < 1


def test_reference_index_from_files_and_shipped(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(ESSAY, encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": ZH, "n": 1}) + "\n", encoding="utf-8")
    (tmp_path / "c.json").write_text(json.dumps({"docs": [[ESSAY.upper()]]}), encoding="utf-8")
    idx = C.reference_index([tmp_path])
    assert [s["texts"] for s in idx.sources] == [1, 1, 1]
    assert C.overlap(ZH, idx).share == 1.0
    with pytest.raises(LcevalError, match="neither a shipped corpus"):
        C.reference_index(["no_such_corpus"])
    shipped = C.reference_index(["mtbench_questions"])
    question = C.shipped_texts("mtbench_questions")[0]
    assert C.overlap(question, shipped).share == 1.0


def _run(tmp_path: Path) -> RunDir:
    run = RunDir("c", tmp_path).create()
    contexts = [
        Context("x0", ESSAY, 0, "o200k_base"),
        Context("x1", " ".join(f"fresh{i}" for i in range(30)), 0, "o200k_base"),
    ]
    samples = [
        Sample(
            id=f"s{i}",
            benchmark="b",
            task=f"T{i % 2}",
            instruction="Summarize.",
            context_id=f"x{i % 2}",
            scenario="public" if i % 2 == 0 else "private",
        )
        for i in range(4)
    ]
    run.write_samples(samples, contexts)
    return run


def test_run_overlap_per_sample_and_task(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(ESSAY, encoding="utf-8")
    _run(tmp_path)
    out = C.run_overlap("c", [corpus], root=tmp_path)
    per = out["per_sample"].set_index("sample_id")
    assert per.loc["s0", "flagged"] and not per.loc["s1", "flagged"]
    assert per.loc["s0", "overlap"] > 0.8  # the essay, plus "Summarize." at the end
    task = out["per_task"].set_index("task")
    assert task.loc["T0", "flagged"] == 2 and task.loc["T0", "flagged_share"] == 1.0
    assert task.loc["T1", "flagged"] == 0
    strict = C.run_overlap("c", [corpus], root=tmp_path, threshold=0.95)["per_sample"]
    assert not strict["flagged"].any()
    ctx_only = C.run_overlap("c", [corpus], root=tmp_path, part="context")["per_sample"]
    assert ctx_only.set_index("sample_id").loc["s0", "overlap"] == 1.0


def test_signals_by_hand() -> None:
    lp = np.array([-1.0, -5.0, -2.0, -0.5, -3.0])
    assert C.min_k_prob(lp, 0.2) == -5.0  # lowest 1 of 5
    assert C.min_k_prob(lp, 0.4) == -4.0  # mean of -5, -3
    assert C.min_k_prob(lp, 1.0) == pytest.approx(lp.mean())
    mu, sd = np.full(5, -2.0), np.array([1.0, 1.0, 1.0, 0.0, 2.0])
    # z = 1, -3, 0, (dropped: sd 0), -0.5 -> int(0.2 * 4) = 0: the guard's lowest 1: -3
    assert C.min_k_plus_plus(lp, mu, sd, 0.2) == -3.0
    assert math.isnan(C.min_k_plus_plus(lp, None, None))
    text = "hello hello hello"
    assert C.zlib_ratio(lp, text) == pytest.approx(lp.mean() / len(zlib.compress(text.encode())))
    with pytest.raises(ValueError):
        C.min_k_prob(lp, 0)


def test_min_k_counts_int_k_n_as_the_official_code() -> None:
    """Min-K% and Min-K%++ average the lowest int(k * n) scores (mink-plus-plus run.py lines
    104-105 and 111-112; detect-pretrain-code src/run.py 108-109), not ceil(k * n); the lowest
    one only where int(k * n) is 0 (the official code averages an empty slice there)."""
    # a 12-token text: k = 0.2 -> int(2.4) = 2 tokens (ceil would take 3)
    lp = np.array([-0.1, -6.0, -0.2, -3.0, -0.3, -0.4, -2.0, -0.5, -0.6, -0.7, -0.8, -0.9])
    assert C.min_k_prob(lp, 0.2) == -4.5  # mean of -6, -3
    assert C.min_k_prob(lp, 0.1) == -6.0  # int(1.2) = 1
    assert C.min_k_prob(lp, 0.5) == pytest.approx(np.sort(lp)[:6].mean())
    zeros, ones = np.zeros(12), np.ones(12)
    assert C.min_k_plus_plus(lp, zeros, ones, 0.2) == -4.5  # z = lp
    # float truncation as the official code: 0.3 * 10 = 3.0000000000000004 -> 3, 0.7 * 10 -> 7
    ten = lp[:10]
    assert C.min_k_prob(ten, 0.3) == pytest.approx(np.sort(ten)[:3].mean())
    assert C.min_k_prob(ten, 0.7) == pytest.approx(np.sort(ten)[:7].mean())
    # int(0.1 * 9) = 0: the official slice is empty; lceval takes the lowest one
    assert C.min_k_prob(lp[:9], 0.1) == -6.0
    for n in range(1, 40):
        v = -np.arange(1.0, n + 1)
        for k in (0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0):
            m = int(k * n)
            want = np.sort(v)[:m].mean() if m else v.min()
            assert C.min_k_prob(v, k) == pytest.approx(want), (n, k)


def test_auroc() -> None:
    assert C.auroc([3, 4], [1, 2]) == 1.0
    assert C.auroc([1, 2], [3, 4]) == 0.0
    assert C.auroc([1, 1], [1, 1]) == 0.5
    assert math.isnan(C.auroc([], [1]))
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    a, b = rng.normal(1, 1, 40), rng.normal(0, 1, 50)
    want = roc_auc_score([1] * 40 + [0] * 50, np.concatenate([a, b]))
    assert C.auroc(a, b) == pytest.approx(want)
    est, lo, hi = C.auroc_ci(a, b, n_resamples=300)
    assert lo <= est <= hi and est == pytest.approx(want)


WORDS = (
    "river stone lamp cloud paper orange violin market winter garden ladder silver candle "
    "forest mirror"
).split()


def _random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(n)]


def test_known_case_tiny_model_fine_tuned_on_the_seen_texts(tiny_model_dir: Path) -> None:
    """Real hf engine: fine-tune the tiny random Llama on 8 texts (15 steps); the signals tell
    them from 8 unseen texts of the same words."""
    import torch

    from lceval.models.hf import HFBackend

    backend = HFBackend(str(tiny_model_dir), device="cpu")
    try:
        texts = _random_texts(16, 0)
        seen = texts[:8]
        torch.manual_seed(0)
        model = backend.model.train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        enc = backend.tokenizer(seen, add_special_tokens=False, padding=True, return_tensors="pt")
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        for _ in range(15):
            loss = model(**enc, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        scores = C.membership_scores(backend, texts)
        scores["seen"] = [True] * 8 + [False] * 8
        table = C.auroc_table(scores, n_resamples=300).set_index("signal")
    finally:
        backend.close()
    for signal in ("min_k", "min_k_pp", "zlib"):
        assert table.loc[signal, "auroc"] > 0.85, table
        assert table.loc[signal, "ci_low"] > 0.5


def test_run_membership_mechanics(tmp_path: Path, tiny_model_dir: Path) -> None:
    from lceval.models.hf import HFBackend

    _run(tmp_path)
    backend = HFBackend(str(tiny_model_dir), device="cpu")
    try:
        out = C.run_membership(
            "c", backend, ("scenario", "public", "private"), root=tmp_path, n_resamples=50
        )
        with pytest.raises(LcevalError, match="seen and unseen"):
            C.run_membership("c", backend, lambda s: True, root=tmp_path)
    finally:
        backend.close()
    per = out["per_sample"]
    assert len(per) == 2  # four samples, two distinct texts
    assert per["seen"].tolist() == [True, False]
    assert set(out["auroc"]["signal"]) == set(C.SIGNALS)


@pytest.mark.slow
def test_known_case_embedded_model_shown_the_text() -> None:
    """Real hf engine, embedded SmolLM2: a text read earlier in the same prompt is far likelier
    than after another text (in-context copying)."""
    from lceval.models.base import load_backend

    texts = [
        f"The {w} committee met on day {i} and voted to postpone budget item {i * 7}."
        for i, w in enumerate("red green blue amber violet silver".split())
    ]
    backend = load_backend("hf", None, device="cpu")
    try:
        out = C.in_prompt_control(backend, texts, n_resamples=300)
    finally:
        backend.close()
    table = out["auroc"].set_index("signal")
    assert table.loc["min_k", "auroc"] > 0.8 and table.loc["min_k", "ci_low"] > 0.5
    assert table.loc["min_k_pp", "auroc"] > 0.8
    with pytest.raises(LcevalError, match="at least two"):
        C.in_prompt_control(None, ["one"])


def test_hostile_corpus_and_parameters(tmp_path: Path) -> None:
    with pytest.raises(LcevalError, match="reference_index: corpus must be a list, got 'squad'"):
        C.reference_index("squad")  # type: ignore[arg-type]
    with pytest.raises(LcevalError, match=r"corpus\[0\] must be a string, got 5 \(int\)"):
        C.reference_index([5])  # type: ignore[list-item]
    with pytest.raises(LcevalError, match="reference_index: n must be >= 1, got 0"):
        C.reference_index([], n=0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n", encoding="utf-8")
    with pytest.raises(LcevalError, match="line 1 is not valid JSON"):
        C.reference_index([bad])
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(LcevalError, match="not valid JSON"):
        C.reference_index([deep])
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\xd8\x00" + ESSAY.encode())
    assert len(C.reference_index([binary])) > 0  # undecodable bytes replaced, text still indexed
    assert C.overlap("\ud800 " * 40 + ESSAY, C.reference_index([binary])).n_hits > 0
    with pytest.raises(LcevalError, match="no 'seen' column"):
        C.auroc_table(pd.DataFrame({"min_k": [1.0]}))
    with pytest.raises(LcevalError, match="auroc_ci: confidence must be < 1.0, got 1"):
        C.auroc_ci([1.0], [0.0], confidence=1)
    with pytest.raises(LcevalError, match="auroc_table: n_resamples must be >= 1, got 0"):
        C.auroc_table(pd.DataFrame({"min_k": [1.0], "seen": [True]}), n_resamples=0)
    with pytest.raises(LcevalError, match=r"membership_scores: k must be > 0\.0, got 0"):
        C.membership_scores(None, ["a b c"], k=0)


def test_report_parts_tables_and_figures(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(ESSAY, encoding="utf-8")
    _run(tmp_path)
    overlap = C.run_overlap("c", [corpus], root=tmp_path)
    per = pd.DataFrame(
        {
            "seen": [True, True, True, False, False, False],
            "min_k": [-1.0, -1.2, -0.9, -3.0, -2.5, -2.8],
            "min_k_pp": [np.nan] * 6,  # as on vLLM: no distribution
            "zlib": [-0.01, -0.02, -0.01, -0.03, -0.02, -0.04],
            "mean_logprob": [-1.0] * 6,
        }
    )
    fake = {"per_text": per, "auroc": C.auroc_table(per, n_resamples=50)}
    tables, figures = C.report_parts(overlap, control=fake, run=fake)
    summary = tables["membership_auroc_summary"]
    assert set(summary["case"]) == {"control", "run"}
    row = summary.set_index(["case", "signal"]).loc[("run", "min_k")]
    assert row["auroc"] == 1.0
    assert np.isnan(summary.set_index(["case", "signal"]).loc[("run", "min_k_pp"), "auroc"])
    assert {"overlap_per_task", "membership_control", "membership_run_auroc"} <= set(tables)
    assert set(figures) == {"contamination_overlap", "contamination_membership"}
    assert len(figures["contamination_membership"].axes) == 2 * 3  # two cases, three signals
