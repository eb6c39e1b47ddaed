"""LIFBench data building: the List, MultiDoc and OneDoc scenarios and their eleven tasks.

Reproduces LIFBench (Wu et al., 2024; paper Sec. 3, Appendix B and C) and its official
MIT-licensed code (SheldonWu0327/LIFBench-2024: ``data/ConstructContext.py`` builds the inputs,
``data/PromptGenerate.py`` samples the variables, ``data/meta/tasks.json`` holds the scenario
descriptions and instruction templates, ``evaluation/EvaluateFunc.py`` scores). Facts are carried
over; the code is lceval's own.

Prompt layout
-------------
A sample's user turn is ``description + joiner + context.text + joiner + instruction`` (see
``lceval.core.records.Sample``), which rebuilds the official ``sys_instruction`` of ``tasks.json``:

- List: ``description`` ends with ``"List to be retrieved:"``, ``joiner="\\n"``, ``instruction``
  is ``"Instruction: " + I``; exactly the official prompt (without its final newline).
- MultiDoc: ``description`` ends with ``"\\n\\n Documents:"``, ``joiner="\\n"``, ``instruction`` is
  ``"\\n Instructions:" + I``; exactly the official prompt.
- OneDoc: ``description`` ends with ``"Input text:"``, ``joiner="\\n\\n"``, ``instruction`` is
  ``"Instruction: " + I`` (official: ``"Input text: {X}\\n\\nInstruction: ..."``; lceval puts a
  blank line instead of one space after ``"Input text:"`` because the joiner is shared).

``Context.text`` is the input X alone and ``Context.n_tokens`` its length in tokens of
``Context.encoding``; ``Sample.length`` is the interval limit in tokens (3072 for "4k").

Sample fields
-------------
``benchmark="lifbench"``, ``task`` (code below), ``scenario`` (``"List"``, ``"MultiDoc"``,
``"OneDoc"``), ``context_id`` (``"lifbench/<scenario>/<length>"``), ``description`` (D),
``instruction`` (I), ``max_new_tokens`` (List 100, LMI 512, MultiDoc 4096, OneDoc 512),
``length`` (interval limit, tokens), ``expression_id`` (index of the instruction expression,
0-based,
within the task), ``variable_id`` (index of the variable draw, 0-based, within task and length),
``meta`` = ``{"length_label": "4k", "official_key": "list-single_query_id",
"expression_source": "official" | "cluster" | "random" | "backend"}``.

Gold data (``Sample.gold``)
---------------------------
One frozen dataclass per task schema, documented field by field in
:mod:`lceval.benchmarks.lifbench.gold` (``GOLD``: task code -> class): ``ListItemGold`` (LSI, LOI,
LOE), ``ListBlurGold`` (LBI, LBE), ``ListMultiGold`` (LMI), ``BatchLabelGold`` (MB),
``FindDupGold`` (MF), ``RepeatGold`` (OR), ``QaGold`` (OQ), ``ExtractGold`` (OE). The JSON in
samples.jsonl is ``dataclasses.asdict`` of them (tuples as lists). Positions are 1-based, as the
prompt shows them. List elements never contain a newline, so the scorer's
``score_list.parse_list_context(context.text)`` returns them in order, exactly as the official
``parse_oredered_input_list_text``.

Params (``build_lifbench(params)``; every key optional)
--------------------------------------------------------
- ``tasks``: list of task codes (default all eleven).
- ``lengths``: list of intervals, each a label ``"4k" "8k" "16k" "32k" "64k" "128k"`` (3, 6, 13,
  28, 60, 120 x1024 tokens) or a positive int of tokens (default all six).
- ``seed``: int (default 0).
- ``encoding``: ``"o200k_base"`` (default, official) or ``"cl100k_base"`` (paper's "GPT-4").
- ``expressions``: ``"official"`` (default: the tasks.json expressions, the paper's own
  selection), ``"cluster"`` (Rewrite -> Encode -> Cluster -> Sample over lceval's rewrites,
  Appendix B) or ``"random"`` (the random-sampling baseline of Appendix B).
- ``n_expressions``: int or null (default null = the official count per task: 5; LOE, LBE 12;
  LBI 11; LOI ``loi_expressions``). With ``"official"`` it may only lower the count.
- ``embedding_model``: path to a sentence-embedding model folder (e.g. BGE-M3) or null (default:
  the shipped all-MiniLM-L6-v2); used by ``"cluster"`` only.
- ``loi_expressions``: 11 (default, paper Table 2: 396 LOI samples) or 12 (official run: 432).
- ``design``: ``"full"`` (default: every expression x variable at every length, the paper's
  grid) or ``"fractional"`` (smoke runs; see "Fractional design" below).
- ``max_samples_per_task``: int or null: keep at most this many samples per task and length, a
  seeded subset spread over expressions and variables (applied after ``design``).
- ``alpaca_path``: path to Alpaca's ``alpaca_data.json`` for the List texts (the official source);
  default null = the shipped stand-ins (IFBench prompts, MT-Bench questions, SQuAD and HotpotQA
  questions).
- ``cache_dir``: folder for the expression-selection cache (default ``$LCEVAL_CACHE`` or
  ``~/.cache/lceval``) / ``"lifbench"``.

Fractional design
-----------------
``design="fractional"`` keeps, per task, a 2^(3-1) fractional factorial (the orthogonal array L4)
of the three IFS perspectives: expressions e0, e1 and variables v0, v1 crossed with the lengths,
keeping at the i-th length (in the order given) the cells with ``e + v + i`` even: (e0, v0) and
(e1, v1) at the first length, (e1, v0) and (e0, v1) at the second, and so on; 2 samples per task
and length. With two lengths every level of each perspective occurs twice and meets each level of
the other two perspectives once, so the marginal group means that IFS (paper Eq. 5-6) compares,
computed exactly as on the full grid, contrast one perspective with the other two balanced out
(each main effect is aliased only with the interaction of the other two). Each perspective then
has two groups per task, so Table 3, IFP, every IFS perspective and IFS(AVG) are defined from 4
samples per task. It needs at least two lengths and two expressions per task.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Self, cast

from pydantic import Field, model_validator

from lceval import params
from lceval.benchmarks.base import BuildResult, Select
from lceval.benchmarks.lifbench import expressions as lexp
from lceval.benchmarks.lifbench import gold as G
from lceval.benchmarks.lifbench import inputs as inp
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Gold, Sample

LENGTHS: dict[str, int] = {
    "4k": 3 * 1024,
    "8k": 6 * 1024,
    "16k": 13 * 1024,
    "32k": 28 * 1024,
    "64k": 60 * 1024,
    "128k": 120 * 1024,
}
"""The six length intervals of X in tokens (paper Sec. 3.3; official ``TARGET_INPUT_LEN`` x1024)."""
TOLERANCE = 0.02
"""X lands within this share below the limit."""


@dataclass(frozen=True)
class TaskSpec:
    """Static facts of one LIFBench task (paper Table 2, official tasks.json)."""

    code: str
    scenario: str
    """List, MultiDoc or OneDoc (``gold.SCENARIOS``)."""
    official_key: str
    """The official task key (``gold.OFFICIAL_KEYS``)."""
    max_new_tokens: int
    """Generation budget (tokens)."""
    n_expressions: int
    """Official number of expressions (LOI: 11 for the paper's 396 samples)."""
    n_variables: int
    """Variable draws per expression and length."""


_BUDGETS: dict[str, tuple[int, int, int]] = {
    "LSI": (100, 5, 6),
    "LMI": (512, 5, 5),
    "LOI": (100, 11, 6),
    "LOE": (100, 12, 6),
    "LBI": (100, 11, 6),
    "LBE": (100, 12, 6),
    "MB": (4096, 5, 5),
    "MF": (4096, 5, 5),
    "OR": (512, 5, 5),
    "OQ": (512, 5, 6),
    "OE": (512, 5, 5),
}
"""Task -> (max_new_tokens, n_expressions, n_variables)."""

TASK_SPECS: dict[str, TaskSpec] = {
    t: TaskSpec(t, G.SCENARIOS[t], G.OFFICIAL_KEYS[t], *_BUDGETS[t]) for t in G.TASKS
}
"""The eleven tasks in the paper's order."""
SCENARIOS = ("List", "MultiDoc", "OneDoc")
_OFFICIAL_SCENARIO = {"List": "list", "MultiDoc": "multidoc", "OneDoc": "onedoc"}
_JOINER = {"List": "\n", "MultiDoc": "\n", "OneDoc": "\n\n"}


@functools.cache
def official_tasks() -> dict[str, Any]:
    """The official scenario descriptions, expressions and variable spaces, keyed by task code.

    Read from ``resources/official_tasks.json`` beside this module (a verbatim copy of the
    official ``data/meta/tasks.json``, MIT, regrouped by task code).
    """
    text = (
        resources.files(__package__)
        .joinpath("resources/official_tasks.json")
        .read_text(encoding="utf-8")
    )
    return json.loads(text)  # type: ignore[no-any-return]


def scenario_frame(scenario: str) -> tuple[str, str]:
    """(description D, instruction frame with ``{instruction}``) of a scenario.

    Splits the official ``sys_instruction`` around ``{input}`` so that ``description + joiner +
    X + joiner + frame`` rebuilds it (see the module docstring, "Prompt layout").
    """
    sys_text = official_tasks()["scenarios"][_OFFICIAL_SCENARIO[scenario]]
    pre, post = sys_text.split("{input}")
    joiner = _JOINER[scenario]
    description = pre.rstrip(" \n") if scenario == "OneDoc" else pre[: -len(joiner)]
    frame = post[len(joiner) :].rstrip("\n")
    return description, frame


def length_label(length: int) -> str:
    """``"4k"`` .. ``"128k"`` for the six intervals, else the token count as text."""
    return next((k for k, v in LENGTHS.items() if v == length), str(length))


def ordinal(n: int) -> str:
    """``1 -> "1st"``, ``12 -> "12th"``, ``23 -> "23rd"`` (official ``number_to_ordinal``)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# ------------------------------------------------------------------------------------- params
class Config(params.Declared):
    """Validated builder params (see the module docstring for each key)."""

    tasks: Annotated[tuple[str, ...], params.names(tuple(TASK_SPECS), sort=True)] = Field(
        tuple(TASK_SPECS), description="task codes, in the paper's order; null: all eleven"
    )
    lengths: Annotated[
        tuple[int, ...], params.lengths(1, LENGTHS, sort=False, default=tuple(LENGTHS.values()))
    ] = Field(
        tuple(LENGTHS.values()),
        description='lengths in tokens ("4k".."128k" or counts), in the given order; null: all six',
    )
    seed: int = Field(0, description="seed of every draw")
    encoding: params.Encoding = Field(
        "o200k_base", description="tiktoken encoding that measures lengths"
    )
    expressions: Literal["official", "cluster", "random"] = Field(
        "official", description="where instruction expressions come from"
    )
    n_expressions: params.Positive | None = Field(
        None, description="expressions per task; null: the official count"
    )
    embedding_model: params.Text | None = Field(
        None, description="sentence-embedding model of expressions: cluster"
    )
    loi_expressions: Literal[11, 12] = Field(11, description="LOI's expression count (11 or 12)")
    max_samples_per_task: params.Positive | None = Field(
        None, description="cap on samples per task; null: none"
    )
    design: Literal["full", "fractional"] = Field(
        "full", description='"full" or "fractional" (module docstring, "Fractional design")'
    )
    alpaca_path: Annotated[str | None, params.paths()] = Field(
        None, description="a local Alpaca file; null: the shipped stand-in"
    )
    cache_dir: Annotated[str | None, params.paths()] = Field(
        None, description="cache root (<cache_dir>/lifbench); null: $LCEVAL_CACHE, ~/.cache/lceval"
    )

    @model_validator(mode="after")
    def _design(self) -> Self:
        if self.design == "fractional" and len(set(self.lengths)) < 2:
            raise ValueError("design fractional needs at least two lengths")
        if self.design == "fractional" and self.n_expressions is not None:
            if self.n_expressions < 2:
                raise ValueError("design fractional needs n_expressions >= 2")
        return self

    @classmethod
    def from_params(cls, raw: Mapping[str, Any]) -> Config:
        """Validate ``raw`` (:func:`lceval.params.parse`; the notebook's inference keys,
        :data:`lceval.params.NOTEBOOK_SECTIONS`, are accepted and ignored).

        Raises:
            LcevalError: unknown key or bad value (names the field).
        """
        return params.parse(cls, raw, "lifbench", accept=params.NOTEBOOK_SECTIONS)

    def n_expr(self, task: str) -> int:
        """Expressions used for ``task``."""
        official = self.loi_expressions if task == "LOI" else TASK_SPECS[task].n_expressions
        return self.n_expressions or official

    def keeps(self, expression_id: int, variable_id: int, length: int) -> bool:
        """Whether ``design`` keeps this cell (always, for ``"full"``)."""
        if self.design == "full":
            return True
        i = self.lengths.index(length)
        return expression_id < 2 and variable_id < 2 and (expression_id + variable_id + i) % 2 == 0


def plan_counts(params: Mapping[str, Any]) -> dict[str, int]:
    """Samples per task a build with ``params`` gives, without building anything.

    Full grid: LSI 180, LMI 150, LOI 396, LOE 432, LBI 396, LBE 432, MB 150, MF 150, OR 150,
    OQ 180, OE 150 (paper Table 2; 2,766 in all). ``design="fractional"``: 2 per task and length.

    Raises:
        LcevalError: bad params.
    """
    cfg = Config.from_params(params)
    out = {}
    for t in cfg.tasks:
        per_length = cfg.n_expr(t) * TASK_SPECS[t].n_variables
        if cfg.design == "fractional":
            per_length = 2
        if cfg.max_samples_per_task is not None:
            per_length = min(per_length, cfg.max_samples_per_task)
        out[t] = per_length * len(cfg.lengths)
    return out


# ------------------------------------------------------------------------------------ building
@dataclass(frozen=True)
class Expression:
    """One instruction expression: a template with ``str.format`` fields, and its offset."""

    text: str
    bias: int = 0
    """+1 (next / after) or -1 (previous / before) for LOI, LOE, LBI, LBE; else 0."""


def _positions(k: int, rng: random.Random, length: int) -> list[int]:
    """Official ``element_sample``: 2 positions in the first ten, 2 in the middle, 2 in the
    last ten (1-based ids 2..11, 12..k-9, k-9..k-1), the same for every expression."""
    if k < 22:
        raise LcevalError(f"lifbench: a {length}-token List holds {k} elements; List tasks need 22")
    n = (
        rng.sample(range(1, 11), 2)
        + rng.sample(range(11, k - 10), 2)
        + rng.sample(range(k - 10, k - 1), 2)
    )
    return [i + 1 for i in n]


def _list_variables(
    task: str, expr: Expression, ctx: inp.ListContext, positions: list[int], lmi: list[list[int]]
) -> list[tuple[dict[str, Any], Gold]]:
    """(format fields, gold) per variable draw of a List task."""
    el = ctx.elements
    chars = (min(len(e) for e in el), max(len(e) for e in el))
    out: list[tuple[dict[str, Any], Gold]] = []
    if task == "LMI":
        for ids in lmi:
            elements = [el[i - 1] for i in ids]
            lmi_gold = G.ListMultiGold(
                id_arr=tuple(ids), elements=tuple(elements), n_items=len(el), elem_chars=chars
            )
            out.append(({"id_arr": ids, "elements": elements}, lmi_gold))
        return out
    for pid in positions:
        fields: dict[str, Any] = {
            "id": pid,
            "ordid": ordinal(pid),
            "element": el[pid - 1],
            "pre_element": el[pid - 2],
            "post_element": el[pid],
        }
        common: dict[str, Any] = {"n_items": len(el), "elem_chars": chars}
        gold: Gold
        if task in ("LSI", "LOI", "LOE"):
            target = {0: el[pid - 1], 1: el[pid], -1: el[pid - 2]}[expr.bias]
            bias = cast(Literal[-1, 0, 1], expr.bias)
            gold = G.ListItemGold(**fields, bias=bias, **common, target=target)
        else:
            blur = cast(Literal[-1, 1], expr.bias)
            gold = G.ListBlurGold(**fields, bias=blur, **common)
        out.append((fields, gold))
    return out


def _multidoc_variables(task: str, ctx: inp.MultiDocContext) -> list[tuple[dict[str, Any], Gold]]:
    """(format fields, gold) per variable setting of a MultiDoc task (official ``params``)."""
    params = official_tasks()["tasks"][task]["params"]
    n = len(ctx.docs)
    out: list[tuple[dict[str, Any], Gold]] = []
    for p in params:
        if task == "MB":
            order = {c: i for i, c in enumerate(p["rule_key"])}
            ranked = sorted(p["candidates"], key=lambda w: order[w[0]])
            doc_keys = [tuple(d.fields) for d in ctx.docs]
            labels = [ranked[2 * ("title" not in k) + ("source" not in k)] for k in doc_keys]
            mb = G.BatchLabelGold(
                candidates=tuple(p["candidates"]),
                rule_key=p["rule_key"],
                rules=p["rules"],
                doc_keys=tuple(doc_keys),
                labels=tuple(labels),
                n_items=n,
            )
            out.append(({"candidates": p["candidates"], "rules": p["rules"]}, mb))
        else:
            keys = tuple(p["info_keys"].split(" "))
            infos = tuple(
                tuple({k: ctx.docs[i - 1].fields.get(k) for k in keys} for i in group)
                for group in ctx.dup_groups
            )
            mf = G.FindDupGold(
                info_keys=keys,
                info_text=p["info_text"],
                dup_idxs=tuple(tuple(g) for g in ctx.dup_groups),
                dup_infos=infos,
                n_items=n,
            )
            out.append(({"info_text": p["info_text"], "example": p["example"]}, mf))
    return out


def _onedoc_variables(
    task: str, ctx: inp.OneDocContext, rng: random.Random
) -> list[tuple[dict[str, Any], Gold]]:
    """(format fields, gold) per variable draw of a OneDoc task (official ``combine_sample``
    and ``qa_sample``, drawn anew for each expression)."""
    params = official_tasks()["tasks"][task]["params"]
    by_tag: dict[str, list[G.KeySentence]] = {tag: [] for tag in inp.TAGS}
    for k in ctx.keys:
        by_tag[k.tag].append(k.to_gold())
    keys = {tag: tuple(items) for tag, items in by_tag.items()}
    n = len(ctx.sentences)
    out: list[tuple[dict[str, Any], Gold]] = []
    if task == "OR":
        for num, sep in rng.sample(list(itertools.product(params["num"], params["sep"])), 5):
            gold = G.RepeatGold(num=num, sep=sep, key_sentences=keys, n_items=n)
            out.append(({"num": num, "sep": sep}, gold))
    elif task == "OE":
        for typ in rng.sample(params["type"], 5):
            tag = typ[1:-1]
            oe = G.ExtractGold(
                type=typ,
                tag=tag,
                targets=tuple(k.text for k in keys[tag] if k.is_true),
                fakes=tuple(k.text for k in keys[tag] if not k.is_true),
                key_sentences=keys,
                n_items=n,
            )
            out.append(({"type": typ}, oe))
    else:  # OQ: 2 true, 2 fake, 2 untagged evidences; options cycle from a random start
        true = rng.sample([k.text for k in ctx.keys if k.is_true], 2)
        fake = rng.sample([k.text for k in ctx.keys if not k.is_true], 2)
        plain = [ctx.sentences[i] for i in rng.sample(ctx.untagged(), 2)]
        options = params["options"]
        start = rng.randint(0, len(options))
        kinds: list[Literal["true", "fake", "untagged"]] = [
            "true",
            "true",
            "fake",
            "fake",
            "untagged",
            "untagged",
        ]
        for i, (ev, kind) in enumerate(zip(true + fake + plain, kinds, strict=True)):
            opts = list(options[(i + start) % len(options)])
            oq = G.QaGold(
                evidence=ev,
                options=tuple(opts),
                evidence_kind=kind,
                is_key=kind != "untagged",
                is_true_key=kind == "true",
                answer=opts[0] if kind == "true" else opts[1],
                key_sentences=keys,
                n_items=n,
            )
            out.append(({"evidence": ev, "options": opts}, oq))
    return out


def _expressions(cfg: Config) -> tuple[dict[str, list[Expression]], str]:
    out = {}
    for t in cfg.tasks:
        chosen = lexp.expressions_for(
            t,
            cfg.n_expr(t),
            method=cfg.expressions,
            seed=cfg.seed,
            model=cfg.embedding_model,
            cache_dir=Path(cfg.cache_dir) / "lifbench" if cfg.cache_dir else None,
        )
        out[t] = [Expression(e["text"], int(e.get("bias", 0))) for e in chosen]
    return out, cfg.expressions


def _inputs(
    cfg: Config, scenarios: Sequence[str]
) -> tuple[dict[str, Any], inp.ListPool | None, inp.DocPool | None, inp.OneDocSource | None]:
    """(sources, List pool, MultiDoc pool, OneDoc source) for the scenarios built; a scenario not
    built gets None and reads nothing."""
    sources: dict[str, Any] = {}
    max_limit = max(max(cfg.lengths), LENGTHS["128k"])
    list_pool = doc_pool = onedoc = None
    if "List" in scenarios:
        texts, src = inp.list_texts(cfg.alpaca_path)
        sources.update(src)
        list_pool = inp.ListPool(texts, cfg.seed, cfg.encoding)
    if "MultiDoc" in scenarios:
        pool_size = max(inp.DOC_POOL, int(max_limit / 280))
        doc_pool = inp.DocPool(cfg.seed, cfg.encoding, pool_size)
        for name in ("squad", "hotpotqa", "paul_graham_essays"):
            sources[name] = corpora.source_info(name)
    if "OneDoc" in scenarios:
        onedoc = inp.OneDocSource(cfg.encoding, max_limit)
        sources["paul_graham_essays"] = corpora.source_info("paul_graham_essays")
        sources["nltk_punkt"] = {"name": "punkt_tab", "path": str(corpora.path("nltk_data"))}
    return sources, list_pool, doc_pool, onedoc


def _capped(cfg: Config, by_task: Mapping[str, list[Sample]]) -> list[Sample]:
    """The samples in task order, at most ``max_samples_per_task`` per task and length (a seeded
    subset, in build order)."""
    samples: list[Sample] = []
    for t, items in by_task.items():
        if cfg.max_samples_per_task is not None:
            kept = []
            for length in cfg.lengths:
                group = [s for s in items if s.length == length]
                if len(group) > cfg.max_samples_per_task:
                    rng = inp.rng_for(cfg.seed, "subset", t, length)
                    pick = set(rng.sample(range(len(group)), cfg.max_samples_per_task))
                    group = [s for i, s in enumerate(group) if i in pick]
                kept += group
            items = kept
        samples += items
    return samples


def _sample(
    t: str,
    scenario: str,
    length: int,
    e: int,
    v: int,
    instruction: str,
    description: str,
    gold: Gold,
    source: str,
) -> Sample:
    """Sample ``e``/``v`` (expression, variable setting) of task ``t`` at ``length`` tokens."""
    spec, label = TASK_SPECS[t], length_label(length)
    return Sample(
        id=f"lifbench/{t}/{label}/e{e}/v{v}",
        benchmark="lifbench",
        task=t,
        instruction=instruction,
        context_id=f"lifbench/{scenario}/{label}",
        description=description,
        joiner=_JOINER[scenario],
        max_new_tokens=spec.max_new_tokens,
        gold=gold,
        scenario=scenario,
        length=length,
        expression_id=e,
        variable_id=v,
        meta={
            "length_label": label,
            "official_key": spec.official_key,
            "expression_source": source,
        },
    )


def _outlines(cfg: Config) -> list[Sample]:
    """The samples a build of ``cfg`` writes, in its order (task, then length, expression and
    variable; ``design`` and ``max_samples_per_task`` applied), with only the fields the
    ``--limit`` draw reads (id, task, scenario, length, expression and variable ids): no context
    made. Each (expression, length) gives ``TaskSpec.n_variables`` variable draws."""
    by_task: dict[str, list[Sample]] = {t: [] for t in cfg.tasks}
    for length in cfg.lengths:
        label = length_label(length)
        for t in cfg.tasks:
            for e in range(cfg.n_expr(t)):
                for v in range(TASK_SPECS[t].n_variables):
                    if cfg.keeps(e, v, length):
                        by_task[t].append(
                            Sample(
                                id=f"lifbench/{t}/{label}/e{e}/v{v}",
                                benchmark="lifbench",
                                task=t,
                                instruction="",
                                scenario=TASK_SPECS[t].scenario,
                                length=length,
                                expression_id=e,
                                variable_id=v,
                            )
                        )
    return _capped(cfg, by_task)


def build_lifbench(params: Mapping[str, Any], *, select: Select | None = None) -> BuildResult:
    """Build LIFBench samples and contexts (paper Sec. 3; official ``ConstructContext.py`` and
    ``PromptGenerate.py``).

    Args:
        params: the builder params (keys in the module docstring; all optional).
        select: build only the samples it names of :func:`_outlines`, and only the contexts
            they read, each as the whole build makes it (every draw is seeded by scenario,
            task, length and expression; the List pool grows through the skipped lengths as
            it would); None: every sample.

    Returns:
        BuildResult with one Context per scenario and length (X, ``n_tokens`` within 2% below the
        limit) and the samples, in task order, then length, expression and variable.

    Raises:
        LcevalError: unknown task code, non-positive length, bad param, missing or corrupt corpus
            file (each named in one line).
    """
    cfg = Config.from_params(params)
    expressions, source = _expressions(cfg)
    scenarios = [s for s in SCENARIOS if any(TASK_SPECS[t].scenario == s for t in cfg.tasks)]
    sources, list_pool, doc_pool, onedoc = _inputs(cfg, scenarios)
    sources["templates"] = {"name": "official_tasks.json", "expressions": source}

    wanted = None if select is None else set(select(_outlines(cfg)))
    # the (scenario, length) cells a drawn sample reads: the only contexts made
    cells = None if wanted is None else {tuple(i.split("/")[1:3]) for i in wanted}
    contexts: list[Context] = []
    by_task: dict[str, list[Sample]] = {t: [] for t in cfg.tasks}
    for length in cfg.lengths:
        label = length_label(length)
        for scenario in scenarios:
            cid = f"lifbench/{scenario}/{label}"
            tasks = [t for t in cfg.tasks if TASK_SPECS[t].scenario == scenario]
            if cells is not None and not any((t, label) in cells for t in tasks):
                if list_pool is not None and scenario == "List":
                    list_pool.reserve(length)  # the pool grows as the whole build's
                continue
            if scenario == "List":
                assert list_pool is not None
                lctx = list_pool.context(length, TOLERANCE)
                text, n_tok = lctx.text, lctx.n_tokens
                rng = inp.rng_for(cfg.seed, "positions", length)
                positions = _positions(len(lctx.elements), rng, length)
                rng = inp.rng_for(cfg.seed, "LMI", length)
                sizes = sorted(rng.sample(range(2, 11), 5))
                lmi = [[i + 1 for i in rng.sample(range(len(lctx.elements)), n)] for n in sizes]
            elif scenario == "MultiDoc":
                assert doc_pool is not None
                mctx = doc_pool.context(length, TOLERANCE)
                text, n_tok = mctx.text, mctx.n_tokens
            else:
                assert onedoc is not None
                octx = onedoc.context(length, TOLERANCE, inp.rng_for(cfg.seed, "onedoc", length))
                text, n_tok = octx.text, octx.n_tokens
            contexts.append(Context(cid, text, n_tok, cfg.encoding, source=scenario))
            description, frame = scenario_frame(scenario)
            for t in tasks:
                for e, expr in enumerate(expressions[t]):
                    if scenario == "List":
                        draws = _list_variables(t, expr, lctx, positions, lmi)
                    elif scenario == "MultiDoc":
                        draws = _multidoc_variables(t, mctx)
                    else:
                        draws = _onedoc_variables(t, octx, inp.rng_for(cfg.seed, t, length, e))
                    for v, (fields, gold) in enumerate(draws):
                        if not cfg.keeps(e, v, length):
                            continue
                        instruction = frame.replace("{instruction}", expr.text.format(**fields))
                        by_task[t].append(
                            _sample(
                                t, scenario, length, e, v, instruction, description, gold, source
                            )
                        )
    samples = _capped(cfg, by_task)  # a drawn task's lengths are built whole: the same subset
    if wanted is not None:
        samples = [s for s in samples if s.id in wanted]
    return BuildResult(samples=samples, contexts=contexts, sources=sources, encoding=cfg.encoding)


def summary_tables(samples: Sequence[Sample], contexts: Sequence[Context]) -> dict[str, Any]:
    """Per-task sample counts by length, and the token length of every context.

    Args:
        samples: a build's samples (``RunDir.read_samples()`` or ``BuildResult.samples``).
        contexts: its contexts.

    Returns:
        ``{"counts": DataFrame (task x length label, plus "total"), "contexts": DataFrame (id,
        scenario, limit, n_tokens, share of the limit, encoding)}``.
    """
    import pandas as pd  # heavy: pandas

    labels = {s.length: s.meta.get("length_label", str(s.length)) for s in samples}
    order = [labels[k] for k in sorted(labels, key=lambda x: x or 0)]
    df = pd.DataFrame(
        {"task": [s.task for s in samples], "length": [labels[s.length] for s in samples]}
    )
    counts = pd.crosstab(df["task"], df["length"]).reindex(
        index=[t for t in TASK_SPECS if t in set(df["task"])], columns=order, fill_value=0
    )
    counts["total"] = counts.sum(axis=1)
    counts.loc["total"] = counts.sum(axis=0)
    rows = []
    for c in contexts:
        label = c.id.rsplit("/", 1)[-1]
        limit = LENGTHS.get(label) or int(label)
        rows.append(
            {
                "context": c.id,
                "scenario": c.source,
                "limit": limit,
                "n_tokens": c.n_tokens,
                "share": round(c.n_tokens / limit, 4),
                "encoding": c.encoding,
            }
        )
    return {"counts": counts, "contexts": pd.DataFrame(rows)}
