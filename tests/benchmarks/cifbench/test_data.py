"""CIF-Bench data: official file format, output-type inference rules, metadata, categories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lceval.benchmarks.cifbench.data import (
    infer_output_type,
    read_metadata,
    read_split,
    read_task_file,
    resolve_tasks,
    task_inference,
)
from lceval.benchmarks.cifbench.gold import (
    CATEGORIES,
    LEADERBOARD_COLUMN,
    OFFICIAL_TASKS,
    category,
    normalize,
    split_labels,
)
from lceval.core.errors import LcevalError

from .conftest import write_task


def test_categories_of_appendix_a2() -> None:
    assert len(CATEGORIES) == 20
    assert CATEGORIES["Commonsense"] == 36 and CATEGORIES["Role Playing"] == 2
    assert CATEGORIES["NLI"] == 30 and CATEGORIES["Reasoning"] == 29
    assert CATEGORIES["Chinese Culture"] == 18 and CATEGORIES["Toxicity"] == 3
    assert sum(CATEGORIES.values()) == 303  # multi-label: 150 tasks, 303 memberships
    assert LEADERBOARD_COLUMN["Toxicity"] == "Toxic"
    assert category("toxic") == "Toxicity" and category("Question Answering (QA)") == "QA"
    with pytest.raises(ValueError, match="unknown category"):
        category("Poetry")


def test_official_task_codes() -> None:
    assert len(OFFICIAL_TASKS) == 150
    assert OFFICIAL_TASKS[0] == "0_Negotiation_Strategy_Detection"
    assert OFFICIAL_TASKS[-1] == "151_Gujarati_translation"
    numbers = {int(t.split("_")[0]) for t in OFFICIAL_TASKS}
    assert numbers == set(range(152)) - {84, 95}


def test_normalize_and_split_labels() -> None:
    assert normalize("０。") == "0"
    assert normalize(" 反刻板印象。 ") == "反刻板印象"
    assert normalize("Small-Talk") == "small-talk"
    assert split_labels("存在傲慢，表达权威、含沙射影。") == ("存在傲慢", "表达权威", "含沙射影")
    assert split_labels("a\nb\na") == ("a", "b")


def test_read_task_file(tmp_path: Path) -> None:
    p = write_task(tmp_path, 7, "Dialogue_Act_Recognition", "public", [("I", "x", "信息")])
    tf = read_task_file(p)
    assert (tf.task, tf.number, tf.name, tf.split) == (
        "7_Dialogue_Act_Recognition",
        7,
        "Dialogue_Act_Recognition",
        "public",
    )
    assert tf.rows[0].output == "信息" and len(tf.sha256) == 64
    # numbers as outputs (some dumps) become text
    q = write_task(tmp_path, 8, "N", "public", [("I", "x", 3)])
    assert read_task_file(q).rows[0].output == "3"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("task.jsonl", '{"Instruction": "i", "Input": "x", "Output": "y"}\n', "file name"),
        ("1_T_public.jsonl", '{"Instruction": "i", "Input": "x"}\n', "line 1: missing field"),
        ("1_T_public.jsonl", "not json\n", "line 1 is not valid JSON"),
        ("1_T_public.jsonl", "\n", "no lines"),
        ("1_T_public.jsonl", '{"Instruction": [], "Input": "x", "Output": "y"}\n', "string"),
        ("1_T_public.jsonl", '{"Instruction": "i", "Input": "x", "Output": null}\n', "string"),
        ("1_T_public.jsonl", '{"Instruction": "i", "Input": "x", "Output": NaN}\n', "is nan"),
        ("1_T_public.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
        ("1_T_public.jsonl", '{"Instruction": "i", "Input": "x", "Output": "y"}\n{"I', "line 2"),
    ],
)
def test_bad_files(tmp_path: Path, name: str, content: str, message: str) -> None:
    p = tmp_path / name
    p.write_text(content, encoding="utf-8")
    with pytest.raises(LcevalError, match=message):
        read_task_file(p)


def test_read_split_official_layout(tmp_path: Path) -> None:
    write_task(tmp_path / "public", 10, "B", "public", [("i", "x", "1")])
    write_task(tmp_path / "public", 2, "A", "public", [("i", "x", "1")])
    split = read_split(tmp_path)  # the dataset/ folder holding public/
    assert list(split) == ["2_A", "10_B"]  # numeric order
    assert resolve_tasks([10, "A"], split) == ["2_A", "10_B"]
    with pytest.raises(LcevalError, match="not in the data"):
        resolve_tasks(["Z"], split)
    with pytest.raises(LcevalError, match="does not exist"):
        read_split(tmp_path / "missing")
    with pytest.raises(LcevalError, match="holds no"):
        (tmp_path / "empty").mkdir()
        read_split(tmp_path / "empty")
    write_task(tmp_path / "public", 2, "A", "private", [("i", "x", "1")])
    with pytest.raises(LcevalError, match="two files for task 2_A"):
        read_split(tmp_path / "public")


R = "重复"


@pytest.mark.parametrize(
    ("refs", "instruction", "otype", "labels"),
    [
        # closed label set, each label used at least twice on average -> multi-class
        (["是", "否", "是", "否。"], "", "multi-class", ("否", "是")),
        # full-width digits are the same label
        (["0", "1", "０", "1"], "", "multi-class", ("0", "1")),
        # separators whose atoms recombine -> multi-label
        (
            ["比喻", "排比、比喻", "夸张", "排比", "夸张、比喻", "比喻"],
            "",
            "multi-label",
            ("夸张", "排比", "比喻"),
        ),
        (["a\nb", "b", "a", "c", "b\nc", "a"], "", "multi-label", ("a", "b", "c")),
        # long fixed sentences with commas do not recombine -> not labels
        (
            ["相似性级别为1，两个句子不相等，但是谈的是同一个话题。"] * 2
            + ["相似性级别为0，两个句子完全不同。"] * 2,
            "",
            "similarity",
            (),
        ),
        # too many distinct labels for the data (each used < 2 times) -> open output
        ([f"民族{i}" for i in range(28)] + ["民族1"] * 22, "", "multi-class", None),
        ([f"民族{i}" for i in range(30)], "", "similarity", ()),
        # creative words and long references -> creative
        ([R * 30, R * 40, R * 30], "请根据题目创作一首诗。", "creative", ()),
        # ... but explanation tasks are not creative
        ([R * 30, R * 40, R * 30], "请解释这个笑话。", "similarity", ()),
        # creative words with short references -> similarity
        (["短", "句子", "短句"], "写一个故事的标题", "similarity", ()),
        ([], "", "similarity", ()),
    ],
)
def test_infer_output_type(refs, instruction, otype, labels) -> None:
    got = infer_output_type(refs, instruction)
    if labels is None:  # 28 classes: more than max_classes (20)
        assert got.output_type == "similarity"
        return
    assert got.output_type == otype
    assert got.labels == labels
    assert got.rule


def test_inference_thresholds() -> None:
    refs = ["甲", "乙", "丙", "甲", "乙", "丙"]
    assert infer_output_type(refs).output_type == "multi-class"
    assert infer_output_type(refs, max_classes=2).output_type == "similarity"
    assert infer_output_type(refs, min_repeat=3).output_type == "similarity"
    assert infer_output_type(["长标签" * 3] * 4 + ["短"] * 4, max_label_chars=5).output_type == (
        "similarity"
    )


def test_metadata_overrides(tmp_path: Path) -> None:
    meta = tmp_path / "meta.yaml"
    meta.write_text(
        "0_Negotiation_Strategy_Detection: {output_type: multi-label, categories: [NER, toxic]}\n"
        "'5': {labels: [甲, 乙]}\n"
        "Poem: {output_type: creative, categories: 'Creative NLG;Chinese Culture'}\n",
        encoding="utf-8",
    )
    md = read_metadata(meta)
    e = md.get("0_Negotiation_Strategy_Detection")
    assert e.output_type == "multi-label" and e.categories == ("NER", "Toxicity")
    assert md.get("5_Anything").labels == ("甲", "乙")
    assert md.get("17_Poem").categories == ("Creative NLG", "Chinese Culture")
    assert md.get("99_None").output_type is None
    refs = ["甲", "乙", "甲、乙", "甲"]
    # metadata type wins, labels taken from the data for the new type
    inf = task_inference(refs, "", e)
    assert inf.output_type == "multi-label" and inf.rule == "metadata"
    assert inf.labels == ("乙", "甲")
    inf2 = task_inference(["甲", "丙"] * 3, "", md.get("5_X"))
    assert inf2.output_type == "multi-class" and inf2.labels == ("甲", "乙")
    assert "labels from metadata" in inf2.rule
    assert task_inference(["长文本" * 20] * 3, "", md.get("17_Poem")).output_type == "creative"
    assert read_metadata(None).tasks == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("t: {output_type: essay}\n", "output_type must be one of"),
        ("t: {categories: [Poetry]}\n", "unknown category"),
        ("t: {colour: red}\n", "unknown field"),
        ("t: {labels: []}\n", "non-empty list"),
        ("[1, 2]\n", "must map tasks"),
        ("t: [\n", "not valid YAML"),
        ("t: {categories: 5}\n", "categories must be a list"),
        ("t: {labels: [{a: 1}]}\n", "every label must be a string"),
        ("!!python/object/apply:os.system [echo]\n", "not valid YAML"),
    ],
)
def test_bad_metadata(tmp_path: Path, content: str, message: str) -> None:
    p = tmp_path / "m.yaml"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(LcevalError, match=message):
        read_metadata(p)


def test_json_metadata(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"3": {"output_type": "similarity"}}), encoding="utf-8")
    assert read_metadata(p).get("3_X").output_type == "similarity"


def test_demo_dataset_is_official_format(demo) -> None:
    pub = read_split(demo["public_dir"])
    priv = read_split(demo["private_dir"])
    assert (
        list(pub)
        == list(priv)
        == [
            "900_Demo_Sentiment",
            "901_Demo_Figurative_Detection",
            "902_Demo_English_Translation",
            "903_Demo_Story_Writing",
        ]
    )
    assert all(len(tf.instructions) == 1 for tf in pub.values())
    assert all(len(tf.instructions) == 3 for tf in priv.values())
    kinds = []
    for t in pub:
        refs = [o for _, o in pub[t].inputs] + [o for _, o in priv[t].inputs]
        kinds.append(infer_output_type(refs, pub[t].instructions[0]).output_type)
    assert kinds == ["multi-class", "multi-label", "similarity", "creative"]


def test_paths_of_the_wrong_type_are_one_line_errors() -> None:
    with pytest.raises(LcevalError, match="split folder must be a path, got int"):
        read_split(5)  # type: ignore[arg-type]
    with pytest.raises(LcevalError, match="metadata must be a path, got list"):
        read_metadata(["m.yaml"])  # type: ignore[arg-type]
    with pytest.raises(LcevalError, match="task file must be a path"):
        read_task_file(None)  # type: ignore[arg-type]


def test_lone_surrogates_and_a_megabyte_line_load(tmp_path: Path) -> None:
    p = tmp_path / "1_T_public.jsonl"
    big = "长" * 1_000_000
    line = json.dumps({"Instruction": "i\ud800", "Input": big, "Output": "y\udfff"})
    p.write_text(line + "\n", encoding="utf-8")  # ASCII JSON: the surrogates as escapes
    tf = read_task_file(p)
    # every reader of JSON lines turns a lone surrogate into U+FFFD (io.json_line): pandas' pyarrow
    # strings and UTF-8 writers refuse surrogates downstream
    assert tf.rows[0].instruction == "i\ufffd" and len(tf.rows[0].input) == 1_000_000
