"""Small L-Eval task files written by the tests, in the official format (no L-Eval data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lceval.core.records import Response
from lceval.models.base import Backend


def _doc(topic: str, n: int) -> str:
    """A document of ``n`` sentences about ``topic`` (plain words, deterministic)."""
    return " ".join(f"Sentence {i} tells that the {topic} number {i} is blue." for i in range(n))


DOCS: dict[str, list[dict]] = {
    "tpo": [
        {
            "instructions": [
                "what is blue\nA. the sky\nB. the grass\nC. the sun\nD. the rose",
                "what is red\nA. the sky\nB. the grass\nC. the rose\nD. the sea",
            ],
            "outputs": ["A", "C"],
            "input": _doc("lecture", 40),
            "source": "toefl_tpo",
            "evaluation": "exam",
        }
    ],
    "coursera": [
        {
            "instructions": ["Question 1. Which are colors?\nA. red\nB. blue\nC. dog\nD. cat"],
            "outputs": ["AB"],
            "input": _doc("course", 30),
            "source": "coursera",
            "evaluation": "exam",
        }
    ],
    "sci_fi": [
        {
            "instructions": [
                "1.\tThe ship flies faster than light, True or False? Answer this question based "
                "on the world described in the document."
            ],
            "outputs": ["True [fact: False]"],
            "input": _doc("starship", 30),
            "source": "SFGram",
            "evaluation": "exam",
        }
    ],
    "gsm100": [
        {
            "instructions": ["Question: What is 2 + 3?\nLet's think step by step\n"],
            "outputs": ["5"],
            "input": (
                "Question: What is 1 + 1?\nLet's think step by step\n1 + 1 = 2.\nThe answer is 2"
            ),
            "evaluation": "exam",
        }
    ],
    "codeU": [
        {
            "instructions": ["What is the final output of the code?"],
            "outputs": ["[5 7 9]"],
            "input": "def f(a):\n    return a\n" + _doc("function", 200) + " print(f([5, 7, 9]))",
            "source": "numpy",
            "evaluation": "exam",
        }
    ],
    "topic_retrieval_longchat": [
        {
            "instructions": [
                f"What is the {k} topic we discussed? Only give me the topic name."
                for k in ("first", "second", "third")
            ],
            "outputs": ["Space travel", "Art history", "Deep sea fish"],
            "input": _doc("conversation", 30),
            "source": "longchat",
            "evaluation": "exam",
        }
    ],
    "news_summ": [
        {
            "instructions": ["Please summarize these news articles."],
            "outputs": ["The river is blue and the city is quiet today."],
            "input": _doc("river", 60),
            "source": "multi_news",
            "evaluation": "rouge",
        },
        {
            "instructions": ["Summarize the article in one sentence."],
            "outputs": ["A short summary of the mountain story."],
            "input": _doc("mountain", 20),
            "source": "multi_news",
            "evaluation": "LLM",
        },
    ],
    "natural_question": [
        {
            "instructions": ["what color is the lake", "how many lakes are there"],
            "outputs": ["blue", "twelve lakes"],
            "input": _doc("lake", 30),
            "source": "natural_question",
            "evaluation": "f1",
        },
        {
            "instructions": ["who named the hill"],
            "outputs": ["the old mayor"],
            "input": _doc("hill", 10),
            "source": "natural_question",
            "evaluation": "human",
        },
    ],
}
"""Official-format records per task (one JSON object per line of ``<task>.jsonl``)."""

CLOSED = {"tpo", "coursera", "sci_fi", "gsm100", "codeU", "topic_retrieval_longchat"}


def write_task_files(root: Path, docs: dict[str, list[dict]] | None = None) -> Path:
    """``root/LEval-data/{Closed,Open}-ended-tasks/<task>.jsonl``; returns the LEval-data folder."""
    base = root / "LEval-data"
    for task, records in (docs or DOCS).items():
        group = "Closed-ended-tasks" if task in CLOSED else "Open-ended-tasks"
        path = base / group / f"{task}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return base


@pytest.fixture
def leval_data(tmp_path: Path) -> Path:
    """A LEval-data folder with every task of :data:`DOCS`."""
    return write_task_files(tmp_path)


class ScriptedJudge(Backend):
    """A judge backend that prefers the answer equal to the reference ([[C]] when both or
    neither are), or answers ``fixed`` when given."""

    name = "scripted-judge"

    def __init__(self, fixed: str | None = None) -> None:
        self.fixed = fixed
        self.prompts: list[str] = []
        self.calls = 0
        self.closed = False

    def generate(self, samples, contexts, config):
        self.calls += 1
        out = []
        for s in samples:
            self.prompts.append(s.instruction)
            text = self.fixed
            if text is None:
                ref = s.instruction.split("[The Start of Reference Answer]\n")[1].split("\n[")[0]
                a = s.instruction.split("[The Start of Assistant A's Answer]\n")[1].split("\n[")[0]
                b = s.instruction.split("[The Start of Assistant B's Answer]\n")[1].split("\n[")[0]
                if (a == ref) == (b == ref):
                    text = "Both alike. [[C]]"
                else:
                    text = "A is right. [[A]]" if a == ref else "B is right. [[B]]"
            out.append(Response(s.id, self.name, text, config.hash()))
        return out

    def info(self):
        return {}

    def close(self):
        self.closed = True


@pytest.fixture
def scripted_judge() -> type[ScriptedJudge]:
    """The :class:`ScriptedJudge` class (conftest modules are not importable by tests)."""
    return ScriptedJudge


@pytest.fixture
def leval_docs() -> dict[str, list[dict]]:
    """:data:`DOCS`, the official-format records of the test files."""
    return DOCS
