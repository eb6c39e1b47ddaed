"""ManyIFEval builder: task prompts with 1 to 10 verifiable instructions (Harada et al., Sec. 3.1).

For each task prompt the builder makes one sample per instruction count n = 1..``max_instructions``
(ten by default, as the paper does), so counts are balanced: every n has one sample per prompt.
Instructions are the paper's 15 (Table 4; ``lceval.benchmarks.manyifeval.gold.TABLE4``) with
kwargs drawn from IFEval's own ranges (``resources/instructions.json`` beside this module). Per
prompt the builder picks one variant of each conflict group (Length Constraints and Change Cases,
Sec. 3.1: "we select one variant each"), which leaves a pool of 11 non-conflicting instructions,
draws their kwargs (keywords of one prompt are distinct words, so include / frequency / forbidden
never contradict) and shuffles the pool. With ``nested: true`` (default) the sample with n
instructions takes the first n of that order, so it holds the (n-1)-sample's instructions plus
one; with ``nested: false`` each n draws its own subset. Everything is seeded by ``seed``.

The prompt is the task prompt followed by the instruction texts as the paper's examples show them
(Appendix G, Tables 6 and 7)::

    <task prompt>

    Your response should follow the instructions below:
    - <instruction 1>
    - <instruction 2>

The instruction texts are IFEval's (the checker's ``build_description``). IFEval's
``INSTRUCTION_CONFLICTS`` marks quotation and title as conflicting, but the paper's own
10-instruction example (Table 6) combines them, so they are allowed together here.

Task prompts. The paper curated 216 IFEval prompts (100 test); IFEval's input_data.jsonl is not
shipped offline. Default source: MT-Bench first-turn questions (``lceval.core.corpora``, 80
questions)
of the open-ended categories writing, roleplay, stem and humanities (40 prompts); math, coding,
reasoning and extraction questions have short or fixed-form answers where extra format
instructions stop being feasible, which the paper's curation excluded. IFBench test prompts are
not used: their own constraints are written into the prompt text (e.g. "Include keyword
kaleidoscope once ...") and cannot be cut out reliably without IFBench's instruction module (which
needs spaCy). A file in the ManyIFEval / IFEval format (JSONL with ``key``, ``prompt``,
``instruction_id_list``, ``kwargs``; e.g. the official ManyIFEval test set or IFEval's
input_data.jsonl) is loaded as-is with ``path``: its prompts already hold their instructions.

Appendix C control (``repeated_control: true``): for every prompt and n, one more sample whose
prompt repeats the n = 1 sample's single instruction as many times as makes the prompt closest in
tokens (``encoding``) to the prompt with n unique instructions. It is scored on that one
instruction.

Samples: ``task`` is ``"unique"`` (or ``"repeated"`` for the control), no context.
``meta``: ``n_instructions`` (n, the x-axis of Fig. 1 and 4; for the control the n whose length it
matches), ``n_unique`` (distinct instructions), ``n_repeats``, ``prompt_key``, ``source``,
``condition`` (``"unique"`` / ``"repeated"``), ``prompt_tokens`` (prompt length in ``encoding``).
``gold``: a :class:`~lceval.benchmarks.manyifeval.gold.ManyIFEvalGold` (``key``, ``prompt``, the
full prompt as sent, for prompt-dependent checkers; ``task_prompt``, without instructions, "" for
files; ``instruction_id_list``; ``kwargs``, one dict per instruction, only the keys the checker
takes).

Params (all optional): ``seed`` (0), ``path`` (IFEval-format JSONL; default: MT-Bench),
``mtbench_categories`` (list), ``n_prompts`` (first n prompts after a seeded shuffle; default
all), ``max_instructions`` (10; at most 11), ``instructions`` (subset of the 15 ids),
``nested`` (true), ``repeated_control`` (false), ``max_new_tokens`` (1024), ``encoding``
(o200k_base): :class:`Config`. The notebook's other sections (inference,
:data:`lceval.params.NOTEBOOK_SECTIONS`; refinement, :class:`Refinement`) are accepted and
ignored, so ``params/04_curse_of_instructions/*.yaml`` build as they are.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, Field, model_validator

from lceval import params
from lceval.benchmarks.base import BuildResult
from lceval.benchmarks.manyifeval.checkers import describe, ensure_checkers
from lceval.benchmarks.manyifeval.gold import (
    INSTRUCTION_IDS,
    STRATEGIES,
    ManyIFEvalGold,
    strategy_key,
)
from lceval.core import corpora
from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.core.tokens import count_tokens

BENCH = "manyifeval"
MTBENCH_CATEGORIES = ("writing", "roleplay", "stem", "humanities")


@cache
def instruction_spec() -> dict[str, Any]:
    """The shipped instruction spec (header, conflict groups, kwargs spaces)."""
    text = (resources.files(__package__) / "resources" / "instructions.json").read_text(
        encoding="utf-8"
    )
    spec: dict[str, Any] = json.loads(text)
    return spec


def format_prompt(task_prompt: str, descriptions: Sequence[str]) -> str:
    """The task prompt with its instructions appended as a list (paper Appendix G, Table 6).

    Args:
        task_prompt: the free-form task ("Write a blog post about a trip to Japan.").
        descriptions: instruction texts in order.
    """
    spec = instruction_spec()
    lines = [spec["bullet"] + d for d in descriptions]
    return f"{task_prompt.strip()}\n\n{spec['header']}\n" + "\n".join(lines)


def draw_kwargs(instruction_id: str, rng: random.Random, used_words: set[str]) -> dict[str, Any]:
    """Draw one instruction's kwargs from its space; words drawn are added to ``used_words``.

    Args:
        instruction_id: one of the 15 ids.
        rng: the seeded random generator.
        used_words: keywords already used in this prompt (excluded, then extended).

    Raises:
        LcevalError: the id has no kwargs space.
    """
    ensure_checkers()  # lm-eval's import needs the NLTK data first (else it tries to download)
    from lm_eval.tasks.ifeval.instructions_util import WORD_LIST  # heavy: lm_eval

    space = instruction_spec()["kwargs_space"].get(instruction_id)
    if space is None:
        raise LcevalError(f"manyifeval: no kwargs space for instruction {instruction_id!r}")
    out: dict[str, Any] = {}
    for name, s in space.items():
        if "int" in s:
            lo, hi = s["int"]
            out[name] = rng.randint(lo, hi)
        elif "choice" in s:
            out[name] = rng.choice(s["choice"])
        elif "words" in s or "word" in s:
            k = int(s.get("words", 1))
            pool = [w for w in WORD_LIST if w not in used_words]
            words = sorted(rng.sample(pool, k))
            used_words.update(words)
            out[name] = words if "words" in s else words[0]
        else:
            raise LcevalError(f"manyifeval: bad kwargs space for {instruction_id}.{name}: {s}")
    return out


def _pool(allowed: Sequence[str], rng: random.Random) -> list[str]:
    """One variant per conflict group plus every other allowed instruction, in Table 4 order."""
    groups = instruction_spec()["conflict_groups"]
    grouped = {i for ids in groups.values() for i in ids}
    pool = [i for i in INSTRUCTION_IDS if i in allowed and i not in grouped]
    for ids in groups.values():
        options = [i for i in ids if i in allowed]
        if options:
            pool.append(rng.choice(options))
    return sorted(pool, key=INSTRUCTION_IDS.index)


class Config(params.Declared):
    """ManyIFEval's builder params (see the module docstring)."""

    seed: params.NonNegative = Field(0, description="seed of the instruction and kwargs draws")
    path: Annotated[str | None, params.paths()] = Field(
        None,
        description="a ManyIFEval-format file to load instead of drawing; null: draw from MT-Bench",
    )
    mtbench_categories: Annotated[tuple[str, ...], params.texts()] = Field(
        MTBENCH_CATEGORIES, description="MT-Bench categories whose first-turn prompts are used"
    )
    n_prompts: params.Positive | None = Field(None, description="first prompts used; null: all")
    max_instructions: params.NonNegative = Field(
        10,
        description="largest n (instructions per prompt); 1..the non-conflicting instructions "
        "available",
    )
    instructions: Annotated[tuple[str, ...], params.names(INSTRUCTION_IDS)] = Field(
        INSTRUCTION_IDS, description="instruction ids drawn from (Table 4)"
    )
    nested: bool = Field(True, description="each prompt's n instructions extend its n - 1 ones")
    repeated_control: bool = Field(False, description="also build the repeated-instruction control")
    max_new_tokens: params.Positive = Field(1024, description="answer budget in tokens")
    encoding: params.Encoding = Field(
        "o200k_base", description="tiktoken encoding that counts prompt tokens"
    )

    @model_validator(mode="after")
    def _pool_size(self) -> Self:
        if self.path is None:
            pool_size = len(_pool(self.instructions, random.Random(0)))
            if not 1 <= self.max_instructions <= pool_size:
                raise ValueError(
                    f"max_instructions must be in 1..{pool_size} (non-conflicting "
                    f"instructions available), got {self.max_instructions}"
                )
        return self


def _table2_keys(value: Any) -> Any:
    """Table 2's strategy names as their keys (:func:`strategy_key`); anything else as given."""
    if isinstance(value, list | tuple):
        return [_table2_keys(x) for x in value]
    return (strategy_key(value) or value) if isinstance(value, str) else value


class Refinement(params.Declared):
    """Notebook 04's self-refinement section (read by the notebook, passed to
    :func:`lceval.benchmarks.manyifeval.refine.run_strategies`)."""

    refine_strategies: Annotated[
        tuple[str, ...], params.names(STRATEGIES, sort=True), BeforeValidator(_table2_keys)
    ] = Field(
        STRATEGIES,
        description="the Sec. 5 strategies compared in Table 2, each a row (keys or Table 2's "
        "names); null: all seven",
    )
    refine_rounds: params.NonNegative = Field(1, description="refinement rounds")
    refine_n_instructions: Annotated[tuple[int, ...] | None, params.lengths()] = Field(
        None, description="the n whose samples are refined; null: all"
    )
    refine_n_prompts: params.Positive | None = Field(
        None, description="prompts refined per n; null: all"
    )


def _mtbench_prompts(categories: Sequence[str]) -> list[tuple[str, str]]:
    rows = corpora.mtbench_questions()
    known = sorted({r.get("category", "") for r in rows})
    bad = [c for c in categories if c not in known]
    if bad:
        raise LcevalError(
            f"{BENCH}: mtbench_categories: {bad[0]!r} is not an MT-Bench category; known: "
            + ", ".join(known)
        )
    return [
        (f"mtbench-{r['question_id']}", str(r["turns"][0]))
        for r in rows
        if r.get("category") in categories
    ]


def _sample(
    key: str,
    n: int,
    task_prompt: str,
    ids: list[str],
    kwargs: list[dict[str, Any]],
    prompt: str,
    p: Config,
    source: str,
    *,
    condition: str = "unique",
    n_repeats: int = 1,
    prompt_tokens: int | None = None,
) -> Sample:
    suffix = "" if condition == "unique" else f"/{condition}"
    return Sample(
        id=f"{BENCH}/{key}/n{n:02d}{suffix}",
        benchmark=BENCH,
        task=condition,
        instruction=prompt,
        max_new_tokens=p.max_new_tokens,
        gold=ManyIFEvalGold(
            key=key,
            prompt=prompt,
            task_prompt=task_prompt,
            instruction_id_list=tuple(ids),
            kwargs=tuple(kwargs),
        ),
        meta={
            "n_instructions": n,
            "n_unique": len(ids),
            "n_repeats": n_repeats,
            "prompt_key": key,
            "source": source,
            "condition": condition,
            "prompt_tokens": (
                prompt_tokens if prompt_tokens is not None else count_tokens(prompt, p.encoding)
            ),
        },
    )


def _repeated(unique_n: Sample, single: Sample, p: Config) -> Sample:
    """The Appendix C control: ``single``'s instruction repeated to match ``unique_n``'s length."""
    enc = p.encoding
    gold: ManyIFEvalGold = single.gold
    task_prompt = gold.task_prompt
    desc = describe(gold.instruction_id_list[0], gold.kwargs[0])
    target = int(unique_n.meta["prompt_tokens"])
    n = int(unique_n.meta["n_instructions"])
    best: tuple[int, int, str] | None = None
    k = 1
    while True:
        prompt = format_prompt(task_prompt, [desc] * k)
        t = count_tokens(prompt, enc)
        if best is None or abs(t - target) < abs(best[1] - target):
            best = (k, t, prompt)
        if t >= target or k >= 50 * max(n, 1):
            break
        k += 1
    k, t, prompt = best
    return _sample(
        gold.key,
        n,
        task_prompt,
        list(gold.instruction_id_list),
        [dict(kw) for kw in gold.kwargs],
        prompt,
        p,
        str(single.meta["source"]),
        condition="repeated",
        n_repeats=k,
        prompt_tokens=t,
    )


def _from_file(p: Config) -> tuple[list[Sample], dict[str, Any]]:
    path = Path(p.path or "")
    if not path.is_file():
        raise LcevalError(f"{BENCH}: path {path} does not exist")
    rows = corpora.read_jsonl_file(path)
    registry = ensure_checkers()
    samples = []
    for i, row in enumerate(rows):
        where = f"{path}: row {i + 1}"
        for name in ("prompt", "instruction_id_list", "kwargs"):
            if name not in row:
                raise LcevalError(f"{where}: missing field {name!r}")
        ids, kws, prompt = row["instruction_id_list"], row["kwargs"], row["prompt"]
        if not isinstance(prompt, str) or not isinstance(ids, list) or not isinstance(kws, list):
            raise LcevalError(
                f"{where}: prompt must be a string, instruction_id_list and kwargs lists"
            )
        if not ids or len(ids) != len(kws):
            raise LcevalError(
                f"{where}: needs one kwargs entry per instruction id (got {len(ids)}"
                f" ids, {len(kws)} kwargs)"
            )
        bad = [x for x in ids if x not in registry.INSTRUCTION_DICT]
        if bad:
            raise LcevalError(f"{where}: unknown IFEval instruction id {bad[0]!r}")
        if not all(kw is None or isinstance(kw, dict) for kw in kws):
            raise LcevalError(f"{where}: each kwargs entry must be an object or null")
        kwargs = [{str(k): v for k, v in (kw or {}).items() if v is not None} for kw in kws]
        key = str(row.get("key", i))
        samples.append(
            _sample(key, len(ids), "", [str(x) for x in ids], kwargs, prompt, p, path.name)
        )
    if p.n_prompts is not None:
        samples = samples[: p.n_prompts]
    seen: set[str] = set()
    for s in samples:
        if s.id in seen:
            raise LcevalError(f"{path}: duplicate key {s.gold.key!r}")
        seen.add(s.id)
    return samples, corpora.source_info(path)


def build_manyifeval(raw: Mapping[str, Any]) -> BuildResult:
    """Build ManyIFEval samples (see the module docstring for layout, params and gold keys).

    Args:
        raw: the keys of :class:`Config` (all optional); the keys of notebook 04's other
            sections (:data:`lceval.params.NOTEBOOK_SECTIONS`, :class:`Refinement`) are accepted
            and ignored.

    Returns:
        Samples in prompt order, n = 1..max_instructions within each prompt (then the repeated
        controls); no contexts.

    Raises:
        LcevalError: an unknown or bad parameter, a missing or malformed prompt file, an unknown
            MT-Bench category.
    """
    p = params.parse(Config, raw, BENCH, accept=(*params.NOTEBOOK_SECTIONS, Refinement))
    ensure_checkers()
    if p.path is not None:
        loaded, info = _from_file(p)
        return BuildResult(loaded, [], {"prompts": info}, p.encoding)

    prompts = _mtbench_prompts(p.mtbench_categories)
    rng = random.Random(p.seed)
    rng.shuffle(prompts)
    if p.n_prompts is not None:
        if p.n_prompts > len(prompts):
            raise LcevalError(
                f"{BENCH}: n_prompts={p.n_prompts} but only {len(prompts)} prompts are available"
            )
        prompts = prompts[: p.n_prompts]
    samples: list[Sample] = []
    controls: list[Sample] = []
    n_max = p.max_instructions
    for key, task_prompt in prompts:
        prng = random.Random(f"{p.seed}/{key}")
        pool = _pool(p.instructions, prng)
        used: set[str] = set()
        kwargs = {i: draw_kwargs(i, prng, used) for i in pool}
        order = list(pool)
        prng.shuffle(order)
        per_prompt = []
        for n in range(1, n_max + 1):
            chosen = order[:n] if p.nested else prng.sample(order, n)
            kws = [kwargs[i] for i in chosen]
            prompt = format_prompt(
                task_prompt, [describe(i, kw) for i, kw in zip(chosen, kws, strict=True)]
            )
            per_prompt.append(_sample(key, n, task_prompt, chosen, kws, prompt, p, "mtbench"))
        samples.extend(per_prompt)
        if p.repeated_control:
            controls.extend(_repeated(s, per_prompt[0], p) for s in per_prompt)
    sources = {
        "prompts": corpora.source_info("mtbench_questions"),
        "mtbench_categories": list(p.mtbench_categories),
        "instructions": "lceval/benchmarks/manyifeval/resources/instructions.json",
    }
    return BuildResult(samples + controls, [], sources, p.encoding)
