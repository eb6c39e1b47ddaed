"""Instruction variants: files, cleaning, model-proposed paraphrases (cached, with provenance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lceval.benchmarks.cifbench.variants import (
    PROMPT_VERSION,
    VariantSet,
    clean_paraphrase,
    generate_variants_file,
    propose_variants,
    read_variants,
    write_variants,
)
from lceval.core.errors import LcevalError
from lceval.core.records import Response
from lceval.models.base import Backend


class Paraphraser(Backend):
    """Answers request k of a task with a scripted paraphrase; counts requests."""

    name = "scripted"

    def __init__(self, answers: list[str]) -> None:
        self.answers, self.calls = answers, 0

    def generate(self, samples, contexts, config):
        out = []
        for s in samples:
            self.calls += 1
            k = s.meta["variant"]
            out.append(Response(s.id, self.name, self.answers[k - 1], config.hash()))
        return out

    def info(self):
        return {"backend": "scripted"}

    def close(self):
        pass


def test_roundtrip(tmp_path: Path) -> None:
    vs = VariantSet("user", {"1_T": ("甲", "乙")}, "me")
    back = read_variants(write_variants(tmp_path / "v.yaml", vs))
    assert (back.source, back.tasks, back.provenance) == ("user", {"1_T": ("甲", "乙")}, "me")
    assert back.get("1_T") == ("甲", "乙") and back.get("2_X") == ()
    by_number = VariantSet("user", {"1": ("甲",), "Other": ("乙",)})
    assert by_number.get("1_T") == ("甲",) and by_number.get("7_Other") == ("乙",)
    assert back.sha256 and back.path == str(tmp_path / "v.yaml")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("tasks: {t: [a, b, c, d, e, f]}\n", "at most 5"),
        ("source: official\ntasks: {t: [a]}\n", "source must be user or generated"),
        ("tasks: {t: []}\n", "non-empty list"),
        ("tasks: {t: ['', a]}\n", "non-empty string"),
        ("source: user\n", "expected keys"),
        ("tasks: [\n", "not valid YAML"),
    ],
)
def test_bad_variants_files(tmp_path: Path, content: str, message: str) -> None:
    p = tmp_path / "v.yaml"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(LcevalError, match=message):
        read_variants(p)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("改写：请判断情感。", "请判断情感。"),
        ("\n\n“请判断情感。”\n解释：...", "请判断情感。"),
        ("第2种改写: 判断情感", "判断情感"),
        ("   ", ""),
    ],
)
def test_clean_paraphrase(text: str, want: str) -> None:
    assert clean_paraphrase(text) == want


def test_propose_variants_cached_and_marked(tmp_path: Path) -> None:
    backend = Paraphraser(["改写：判断评论的情感。", "判断这条评论的情感。", "原指令", "判断情感"])
    answers = ["改写：判断评论的情感。", "判断评论的情感。", "原指令", "判断这条评论的情感"]
    backend.answers = answers
    store = tmp_path / "cache.jsonl"
    vs = propose_variants(backend, {"1_T": "原指令"}, 4, store=store)
    # duplicate (2nd) and copy of the original (3rd) are dropped
    assert vs.tasks == {"1_T": ("判断评论的情感。", "判断这条评论的情感")}
    assert vs.source == "generated" and "machine-generated" in vs.provenance
    assert vs.details["model"] == "scripted" and vs.details["prompt_version"] == PROMPT_VERSION
    assert backend.calls == 4
    again = propose_variants(backend, {"1_T": "原指令"}, 4, store=store)
    assert again.tasks == vs.tasks and backend.calls == 4  # answered from the cache
    with pytest.raises(LcevalError, match="n must be 1..4"):
        propose_variants(backend, {"1_T": "x"}, 5, store=store)


def test_generate_variants_file_with_the_hf_engine(demo, tmp_path: Path, tiny_model_dir) -> None:
    """The real hf engine (tiny random model: gibberish paraphrases, but the whole path runs)."""
    out = generate_variants_file(
        demo["public_dir"],
        tmp_path / "generated.yaml",
        backend="hf",
        model=str(tiny_model_dir),
        n=2,
        tasks=[900],
        backend_options={"device": "cpu"},
        max_new_tokens=8,
    )
    vs = read_variants(out)
    assert vs.source == "generated"
    assert set(vs.tasks) <= {"900_Demo_Sentiment"}
    assert all(len(v) <= 2 for v in vs.tasks.values())
    assert (tmp_path / "generated.responses.jsonl").exists()
    assert "hf" in vs.provenance
