"""CIF-Bench data: split files, output-type inference, user metadata, and a small demo dataset.

File format (official repository yizhilll/CIF-Bench, ``dataset/public/``; facts only, no data is
shipped): one JSONL file per task named ``<n>_<Task_Name>_<split>.jsonl`` (``_public`` for the
public split), one object per line with the string fields ``Instruction``, ``Input`` and
``Output``. The public split has one instruction per task and 50 inputs; a private or other
held-out split in the same format may give up to five instructions per task (each input repeated
under each instruction, or any subset).

Output types (paper Sec. 3.3)
-----------------------------
The paper assigns each task one of four output types (Tables 10-12, which are images). lceval
infers it from the task's references with :func:`infer_output_type`; a user metadata file
(:func:`read_metadata`) overrides the inference task by task. The rules, in order, over the
task's references normalized by :func:`lceval.benchmarks.cifbench.gold.normalize`:

1. ``multi-label`` when references split on enumeration separators (``、，,;；/|`` and newlines)
   into *atoms* that recombine: some reference has two or more atoms, there are fewer distinct
   atoms than distinct references, and the atoms form a closed set (rule 3's size tests).
2. ``multi-class`` when the distinct references form a closed set.
3. Closed set: 2 to ``max_classes`` (20) distinct values, each used on average at least
   ``min_repeat`` (2) times, none longer than ``max_label_chars`` (20) characters.
4. ``creative`` when the instruction names a creative task (:data:`CREATIVE_WORDS`, and none of
   :data:`NOT_CREATIVE_WORDS`) and the median reference has at least ``creative_min_chars`` (50)
   characters.
5. ``similarity`` otherwise.

Every inference records the rule that fired (``Inference.rule``), kept in each sample's meta.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lceval.benchmarks.cifbench.gold import (
    ORIGINS,
    OUTPUT_TYPES,
    OutputType,
    category,
    normalize,
    split_labels,
)
from lceval.core.corpora import read_jsonl_file
from lceval.core.errors import LcevalError

FILE_NAME = re.compile(r"^(?P<number>\d+)_(?P<name>.+)_(?P<split>[A-Za-z]+)\.jsonl$")
"""``<n>_<Task_Name>_<split>.jsonl`` (official ``dataset/public/`` naming)."""

FIELDS = ("Instruction", "Input", "Output")
"""The fields of every line."""

CREATIVE_WORDS = (
    "创作",
    "创造",
    "创意",
    "想象",
    "诗",
    "故事",
    "笑话",
    "广告",
    "文案",
    "食谱",
    "菜谱",
    "评论",
    "续写",
)
"""Words of an instruction that ask for creative writing (rule 4)."""

NOT_CREATIVE_WORDS = ("翻译", "解释", "判断", "识别", "分类", "检索")
"""Words that mark a task as not creative even with a creative word (translate, explain, judge,
recognise, classify, retrieve): ``110_Joke_Explanation`` mentions jokes but explains them."""


@dataclass(frozen=True)
class Row:
    """One line of a split file."""

    instruction: str
    input: str
    output: str


@dataclass(frozen=True)
class TaskFile:
    """One task's file of one split."""

    task: str
    """Task code ``<n>_<Task_Name>`` (the file name without the split suffix)."""
    number: int
    name: str
    split: str
    """The file name's split suffix (``public``, ``private``, ...)."""
    path: Path
    rows: tuple[Row, ...]
    sha256: str

    @property
    def instructions(self) -> tuple[str, ...]:
        """Distinct instructions in order of first appearance."""
        return tuple(dict.fromkeys(r.instruction for r in self.rows))

    @property
    def inputs(self) -> tuple[tuple[str, str], ...]:
        """Distinct (input, output) pairs in order of first appearance: the data samples D_t."""
        return tuple(dict.fromkeys((r.input, r.output) for r in self.rows))


def _text(value: Any, where: str, key: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise LcevalError(f"{where}: field {key!r} is {value}, not a string")
        return str(value)  # a few references are numbers in some dumps
    raise LcevalError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")


def as_path(value: Any, what: str) -> Path:
    """``value`` as a Path.

    Raises:
        LcevalError: ``value`` is not a string or path (names ``what``).
    """
    if isinstance(value, str | Path):
        return Path(value)
    raise LcevalError(f"{what} must be a path, got {type(value).__name__} {value!r:.60}")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """:func:`lceval.core.corpora.read_jsonl_file`, with absurdly nested JSON (which overflows the
    parser's recursion) reported as a corrupt file.

    Raises:
        LcevalError: unreadable file, a line that is not a JSON object, nesting too deep.
    """
    try:
        return read_jsonl_file(path)
    except RecursionError:
        raise LcevalError(f"{path} is corrupt: JSON nested too deeply") from None


def read_task_file(path: str | Path) -> TaskFile:
    """Read one split file.

    Raises:
        LcevalError: a file name not in the official pattern, a line that is not a JSON object,
            a missing field, or an empty file (the message names file and line).
    """
    p = as_path(path, "CIF-Bench task file")
    m = FILE_NAME.match(p.name)
    if m is None:
        raise LcevalError(f"{p}: file name is not <n>_<Task_Name>_<split>.jsonl")
    rows = []
    for i, obj in enumerate(read_jsonl(p), 1):
        missing = [k for k in FIELDS if k not in obj]
        if missing:
            raise LcevalError(f"{p} line {i}: missing field(s) {', '.join(missing)}")
        where = f"{p} line {i}"
        rows.append(Row(*(_text(obj[k], where, k) for k in FIELDS)))
    if not rows:
        raise LcevalError(f"{p}: no lines")
    number = int(m.group("number"))
    return TaskFile(
        task=f"{number}_{m.group('name')}",
        number=number,
        name=m.group("name"),
        split=m.group("split"),
        path=p,
        rows=tuple(rows),
        sha256=hashlib.sha256(p.read_bytes()).hexdigest(),
    )


def read_split(folder: str | Path) -> dict[str, TaskFile]:
    """Every task file of a split folder, by task code, in numeric task order.

    ``folder`` may hold the files directly or a ``public/`` subfolder (the official
    ``dataset/`` layout).

    Raises:
        LcevalError: the folder does not exist, holds no ``*.jsonl`` file, or holds two files of
            one task.
    """
    p = as_path(folder, "CIF-Bench split folder")
    if not p.is_dir():
        raise LcevalError(f"CIF-Bench split folder {p} does not exist")
    files = sorted(p.glob("*.jsonl"))
    if not files and (p / "public").is_dir():
        files = sorted((p / "public").glob("*.jsonl"))
    if not files:
        raise LcevalError(f"{p} holds no <n>_<Task_Name>_<split>.jsonl files")
    out: dict[str, TaskFile] = {}
    for f in files:
        tf = read_task_file(f)
        if tf.task in out:
            raise LcevalError(f"{p}: two files for task {tf.task}")
        out[tf.task] = tf
    return dict(sorted(out.items(), key=lambda kv: kv[1].number))


def resolve_tasks(wanted: Sequence[str | int] | None, available: Iterable[str]) -> list[str]:
    """Task codes selected by ``wanted`` (codes, numbers or names), in ``available`` order.

    Raises:
        LcevalError: a wanted task that is not available.
    """
    avail = list(available)
    if wanted is None:
        return avail
    by_key: dict[str, str] = {}
    for t in avail:
        number, _, name = t.partition("_")
        by_key.update({t: t, number: t, name: t, name.casefold(): t})
    chosen = set()
    for w in wanted:
        key = str(w)
        hit = by_key.get(key) or by_key.get(key.casefold())
        if hit is None:
            raise LcevalError(f"cifbench: task {w!r} is not in the data; known: {', '.join(avail)}")
        chosen.add(hit)
    return [t for t in avail if t in chosen]


# -- output types ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inference:
    """A task's output type, its label set and why."""

    output_type: OutputType
    labels: tuple[str, ...] = ()
    """Closed label set, normalized (classes or multi-label atoms); empty for generation."""
    rule: str = ""
    """Which rule decided (``metadata`` when a user file named the type)."""


def _closed(counts: Mapping[str, int], n: int, max_classes: int, min_repeat: float, chars: int):
    k = len(counts)
    return 2 <= k <= max_classes and n / k >= min_repeat and max(map(len, counts)) <= chars


def infer_output_type(
    references: Sequence[str],
    instruction: str = "",
    *,
    max_classes: int = 20,
    min_repeat: float = 2.0,
    max_label_chars: int = 20,
    creative_min_chars: int = 50,
) -> Inference:
    """The output type of a task from its references (rules in the module docstring).

    Args:
        references: the task's reference outputs (one per input).
        instruction: the task's (first) instruction, for the creative rule.
        max_classes: most distinct labels of a closed set.
        min_repeat: least mean uses per label of a closed set.
        max_label_chars: longest label of a closed set, in characters.
        creative_min_chars: least median reference length of a creative task, in characters.

    Returns:
        The type, the label set (normalized, sorted) and the rule that fired.
    """
    norm = [normalize(r) for r in references]
    n = len(norm)
    counts: dict[str, int] = {}
    for r in norm:
        counts[r] = counts.get(r, 0) + 1
    counts.pop("", None)
    atoms: dict[str, int] = {}
    multi = 0
    for r in references:
        parts = split_labels(r)
        multi += len(parts) >= 2
        for a in parts:
            atoms[a] = atoms.get(a, 0) + 1
    n_atoms = sum(atoms.values())
    if (
        multi
        and atoms
        and len(atoms) < len(counts)
        and _closed(atoms, n_atoms, max_classes, min_repeat, max_label_chars)
    ):
        return Inference("multi-label", tuple(sorted(atoms)), "recombining closed label set")
    if counts and _closed(counts, n, max_classes, min_repeat, max_label_chars):
        return Inference("multi-class", tuple(sorted(counts)), "closed label set")
    median = statistics.median(len(r) for r in references) if references else 0
    creative = any(w in instruction for w in CREATIVE_WORDS)
    if creative and not any(w in instruction for w in NOT_CREATIVE_WORDS):
        if median >= creative_min_chars:
            return Inference("creative", (), "creative instruction, long references")
    return Inference("similarity", (), "open output")


# -- user metadata --------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskMeta:
    """What a user metadata file says about one task (None: not said)."""

    output_type: OutputType | None = None
    categories: tuple[str, ...] = ()
    labels: tuple[str, ...] | None = None
    """Closed label set (normalized), overriding the inferred one."""
    origin: str | None = None
    """Where the task comes from (:data:`~lceval.benchmarks.cifbench.gold.ORIGINS`; Tables 5,
    8)."""


@dataclass(frozen=True)
class Metadata:
    """A user metadata file: task key (code, number or name) -> TaskMeta."""

    tasks: Mapping[str, TaskMeta] = field(default_factory=dict)
    path: str | None = None
    sha256: str | None = None

    def get(self, task: str) -> TaskMeta:
        """The entry for task code ``task`` (looked up by code, number, then name)."""
        number, _, name = task.partition("_")
        for key in (task, number, name, name.casefold()):
            if key in self.tasks:
                return self.tasks[key]
        return TaskMeta()


def read_metadata(path: str | Path | None) -> Metadata:
    """Read a metadata file (YAML or JSON): ``{task: {output_type, categories, labels,
    origin}}``.

    Task keys are codes (``0_Negotiation_Strategy_Detection``), numbers or names; every field is
    optional. ``output_type`` is one of multi-class, multi-label, similarity, creative;
    ``categories`` a list of the 20 category names (or a string with ``;`` between names);
    ``labels`` the closed label set; ``origin`` one of translated, chinese, new (the paper's
    Tables 10-12 give each task's source; Tables 5 and 8 group tasks by it).

    Raises:
        LcevalError: unreadable file, not a mapping, an unknown output type or category.
    """
    if path is None:
        return Metadata()
    p = as_path(path, "CIF-Bench metadata")
    try:
        raw = p.read_bytes()
        data = yaml.safe_load(raw.decode("utf-8"))
    except OSError as exc:
        raise LcevalError(f"cannot read CIF-Bench metadata {p}: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError):
        raise LcevalError(f"CIF-Bench metadata {p} is not valid YAML or JSON") from None
    if not isinstance(data, Mapping):
        raise LcevalError(f"CIF-Bench metadata {p} must map tasks to their fields")
    tasks: dict[str, TaskMeta] = {}
    for key, entry in data.items():
        where = f"CIF-Bench metadata {p}: task {key!r}"
        if not isinstance(entry, Mapping):
            raise LcevalError(f"{where}: expected a mapping")
        unknown = set(entry) - {"output_type", "categories", "labels", "origin"}
        if unknown:
            raise LcevalError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
        otype = entry.get("output_type")
        if otype is not None and otype not in OUTPUT_TYPES:
            raise LcevalError(f"{where}: output_type must be one of {', '.join(OUTPUT_TYPES)}")
        cats = entry.get("categories") or ()
        if isinstance(cats, str):
            cats = [c for c in cats.split(";") if c.strip()]
        if not isinstance(cats, list | tuple) or not all(isinstance(c, str) for c in cats):
            raise LcevalError(f"{where}: categories must be a list of category names")
        try:
            cats = tuple(category(c) for c in cats)
        except ValueError as exc:
            raise LcevalError(f"{where}: {exc}") from None
        labels = entry.get("labels")
        if labels is not None:
            if not isinstance(labels, list) or not labels:
                raise LcevalError(f"{where}: labels must be a non-empty list")
            if not all(isinstance(x, str | int | float) for x in labels) or any(
                isinstance(x, bool) for x in labels
            ):
                raise LcevalError(f"{where}: every label must be a string or number")
            labels = tuple(dict.fromkeys(normalize(str(x)) for x in labels))
        origin = entry.get("origin")
        if origin is not None and origin not in ORIGINS:
            raise LcevalError(f"{where}: origin must be one of {', '.join(ORIGINS)}")
        tasks[str(key)] = TaskMeta(otype, cats, labels, origin)
    return Metadata(tasks, str(p), hashlib.sha256(raw).hexdigest())


def task_inference(
    references: Sequence[str], instruction: str, meta: TaskMeta, **rules: Any
) -> Inference:
    """The output type and labels of a task: the metadata's where given, else inferred.

    Args:
        references: the task's reference outputs (every split the run loads, so that one task
            has one type in all splits).
        instruction: the task's first official instruction.
        meta: the user's entry for the task (empty when there is none).
        **rules: thresholds of :func:`infer_output_type`.
    """
    inferred = infer_output_type(references, instruction, **rules)
    otype = meta.output_type or inferred.output_type
    rule = "metadata" if meta.output_type else inferred.rule
    if otype not in ("multi-class", "multi-label"):
        return Inference(otype, (), rule)
    if meta.labels is not None:
        return Inference(otype, meta.labels, f"{rule}; labels from metadata")
    if otype == inferred.output_type:
        return Inference(otype, inferred.labels, rule)
    if otype == "multi-class":
        found = {normalize(r) for r in references}
    else:
        found = {a for r in references for a in split_labels(r)}
    return Inference(otype, tuple(sorted(found - {""})), rule)


# -- a demo dataset written by lceval (the real data is never shipped) -----------------------------
_DEMO_TASKS: tuple[dict[str, Any], ...] = (
    {
        "name": "Demo_Sentiment",
        "instructions": (
            "判断下面这句评论的情感倾向，只输出“正面”或“负面”。",
            "请阅读评论并给出情感：正面或负面。只写一个词。",
            "这条评论是正面还是负面的？直接回答“正面”或“负面”。",
        ),
        "items": (
            ("这家餐厅的菜非常好吃，服务也很周到。", "正面"),
            ("快递太慢了，包装还破了。", "负面"),
            ("电影情节紧凑，演员表演出色。", "正面"),
            ("手机用了两天就坏了，非常失望。", "负面"),
            ("酒店干净整洁，下次还会再来。", "正面"),
            ("客服态度恶劣，问题一直没有解决。", "负面"),
        ),
    },
    {
        "name": "Demo_Figurative_Detection",
        "instructions": (
            "识别句子中使用的修辞手法，可选：比喻、排比、夸张、拟人。有多个时用顿号分开。",
            "这句话用了哪些修辞手法？从比喻、排比、夸张、拟人中选择，多个用顿号隔开。",
            "请指出句子的修辞手法（比喻、排比、夸张、拟人），多个手法之间用“、”连接。",
        ),
        "items": (
            ("月亮像一个大玉盘挂在天上。", "比喻"),
            ("春风抚摸着大地，花儿笑弯了腰。", "拟人"),
            ("他的声音大得能把屋顶掀翻。", "夸张"),
            ("笑容像花一样，在风中跳舞，多得数不清，多得像星星。", "比喻、拟人、夸张"),
            ("我们爱山，我们爱水，我们爱这片土地。", "排比"),
            ("白发三千丈，像瀑布一样垂下。", "夸张、比喻"),
        ),
    },
    {
        "name": "Demo_English_Translation",
        "instructions": (
            "请把下面的中文句子翻译成英文。",
            "将输入的句子译为英语。",
            "把这句话翻译成英文，只输出译文。",
        ),
        "items": (
            ("今天天气很好。", "The weather is nice today."),
            ("我每天早上喝一杯咖啡。", "I drink a cup of coffee every morning."),
            ("这本书非常有趣。", "This book is very interesting."),
            ("我们明天去公园散步吧。", "Let's go for a walk in the park tomorrow."),
            ("他在图书馆学习。", "He is studying in the library."),
            ("请把门关上。", "Please close the door."),
        ),
    },
    {
        "name": "Demo_Story_Writing",
        "instructions": (
            "根据给定的主题创作一个简短的故事，不超过一百字。",
            "请围绕下面的主题写一个有想象力的小故事。",
            "以输入为题，创作一篇简短的故事。",
        ),
        "items": (
            (
                "会说话的猫",
                "小镇上有一只会说话的猫，每天早上它都会提醒面包师不要忘记放糖。"
                "有一天面包师生病了，猫独自守着店门，用它的声音招呼客人，帮主人度过了难关。",
            ),
            (
                "月亮上的图书馆",
                "在月亮的背面藏着一座图书馆，书架上放着地球上所有孩子的梦想。"
                "每到满月，管理员就会把一本书送回地球，让一个孩子重新记起自己的梦。",
            ),
            (
                "迷路的风筝",
                "一只红色的风筝挣脱了线，飞过山川和河流。它看见了大海和沙漠，"
                "最后落在一个小女孩的窗前，成了她最珍贵的朋友，陪她度过了整个夏天。",
            ),
            (
                "雨天的约定",
                "两个孩子在雨天约定，长大后要一起去看彩虹。许多年后，他们在同一座城市重逢，"
                "那天雨停了，天边正好挂着一道彩虹，仿佛在为他们的约定作证。",
            ),
        ),
    },
)
"""Four small demo tasks (one per output type) in CIF-Bench's format, written by lceval."""

DEMO_METADATA: Mapping[str, Mapping[str, Any]] = {
    "900_Demo_Sentiment": {"categories": ["Sentiment", "Classification"], "origin": "translated"},
    "901_Demo_Figurative_Detection": {
        "categories": ["Linguistic", "Chinese Culture"],
        "origin": "new",
    },
    "902_Demo_English_Translation": {"categories": ["Translation"], "origin": "translated"},
    "903_Demo_Story_Writing": {"categories": ["Creative NLG"], "origin": "new"},
}
"""Categories and origins of the demo tasks (a metadata file in the format of
:func:`read_metadata`; the origins are made up for the demo)."""


def write_demo_dataset(folder: str | Path, *, public_inputs: int = 3) -> dict[str, str]:
    """Write a small dataset in CIF-Bench's format: public split, private split, metadata.

    The demo has four tasks numbered 900-903 (one per output type). The public split takes the
    first ``public_inputs`` inputs of each task under its first instruction; the private split
    takes the other inputs under every instruction (three per task), as a held-out split in the
    same format. The texts are lceval's own, not CIF-Bench's.

    Args:
        folder: created if missing; gets ``public/``, ``private/`` and ``metadata.yaml``.
        public_inputs: inputs per task in the public split (the rest go to the private split).

    Returns:
        ``{"public_dir", "private_dir", "metadata"}`` paths (strings, as builder params).
    """
    root = Path(folder)
    pub, priv = root / "public", root / "private"
    pub.mkdir(parents=True, exist_ok=True)
    priv.mkdir(parents=True, exist_ok=True)
    for k, task in enumerate(_DEMO_TASKS):
        stem = f"{900 + k}_{task['name']}"
        items = task["items"]
        public = [
            {"Instruction": task["instructions"][0], "Input": i, "Output": o}
            for i, o in items[:public_inputs]
        ]
        private = [
            {"Instruction": ins, "Input": i, "Output": o}
            for i, o in items[public_inputs:]
            for ins in task["instructions"]
        ]
        for path, rows in (
            (pub / f"{stem}_public.jsonl", public),
            (priv / f"{stem}_private.jsonl", private),
        ):
            path.write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
    meta = root / "metadata.yaml"
    meta.write_text(
        yaml.safe_dump(
            {k: dict(v) for k, v in DEMO_METADATA.items()}, allow_unicode=True, sort_keys=True
        ),
        encoding="utf-8",
    )
    return {"public_dir": str(pub), "private_dir": str(priv), "metadata": str(meta)}
