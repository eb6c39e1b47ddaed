"""Instruction variants: up to five instructions per task, from the data, a user, or a model.

CIF-Bench's private split gives every task five instructions with the same meaning (paper Sec. 3
and Sec. 5, "Instruction Diversity for Evaluation Robustness"); only the public split's single
instruction is released. lceval keeps three sources apart and never pools them:

- ``official``: the distinct ``Instruction`` values of the split's own files;
- ``user``: a variants file a person wrote;
- ``generated``: paraphrases a model proposed (:func:`propose_variants`), cached in a
  ResponseStore (re-running asks nothing twice) and written to a variants file whose
  ``provenance`` names the model, the engine settings and the prompt version.

Variants file (YAML or JSON)::

    source: user              # user | generated
    provenance: "written by ..., 2024-05-01"
    tasks:
      0_Negotiation_Strategy_Detection:   # task code, number or name
        - "..."                           # up to five instructions

The builder crosses every variant instruction with every input of the task
(``lceval.benchmarks.cifbench.build``); samples carry ``meta["source"]`` and the reporter
computes every table per source.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field

from lceval import params
from lceval.benchmarks.cifbench.data import read_split, resolve_tasks
from lceval.benchmarks.cifbench.gold import MAX_INSTRUCTIONS, InstructionSource
from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.core.store import ResponseStore
from lceval.models.base import Backend, GenerationConfig, load_backend
from lceval.models.generate import engine_config, generate

PROMPT_VERSION = "cifbench-paraphrase-v1"
"""Version of :data:`PARAPHRASE_PROMPT`; part of a generated set's provenance."""

PARAPHRASE_PROMPT = (
    "下面是一条任务指令。请写出它的第{k}种改写：意思完全相同，措辞不同，"
    "不要增加或删去任何要求。只输出改写后的指令，不要解释。\n\n指令：{instruction}"
)
"""The paraphrase request (Chinese, as the tasks): rewrite the instruction with the same meaning
and different wording, output only the rewrite; ``{k}`` numbers the variant so the prompts
differ."""


@dataclass(frozen=True)
class VariantSet:
    """Instruction variants of one source for some tasks."""

    source: InstructionSource
    """``user`` or ``generated`` (``official`` instructions come from the split files)."""
    tasks: Mapping[str, tuple[str, ...]]
    """Task key (code, number or name) -> up to five instructions."""
    provenance: str = ""
    """Who or what wrote them (free text; for generated sets: model, engine, config, prompt)."""
    path: str | None = None
    sha256: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    """Machine-readable provenance of generated sets (model, backend info, config hash)."""

    def get(self, task: str) -> tuple[str, ...]:
        """The variants for task code ``task`` (looked up by code, number, then name)."""
        number, _, name = task.partition("_")
        for key in (task, number, name):
            if key in self.tasks:
                return self.tasks[key]
        return ()


def read_variants(path: str | Path) -> VariantSet:
    """Read a variants file (format in the module docstring).

    Raises:
        LcevalError: unreadable or malformed file, a source other than user / generated, more
            than five instructions for a task, an empty or non-string instruction.
    """
    if not isinstance(path, str | Path):
        raise LcevalError(f"a variants file must be a path, got {type(path).__name__} {path!r:.60}")
    p = Path(path)
    try:
        raw = p.read_bytes()
        data = yaml.safe_load(raw.decode("utf-8"))
    except OSError as exc:
        raise LcevalError(f"cannot read variants file {p}: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError):
        raise LcevalError(f"variants file {p} is not valid YAML or JSON") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), Mapping):
        raise LcevalError(f"variants file {p}: expected keys source, provenance and tasks")
    source = data.get("source", "user")
    if source not in ("user", "generated"):
        raise LcevalError(f"variants file {p}: source must be user or generated, got {source!r}")
    tasks: dict[str, tuple[str, ...]] = {}
    for key, items in data["tasks"].items():
        where = f"variants file {p}: task {key!r}"
        if not isinstance(items, list) or not items:
            raise LcevalError(f"{where}: expected a non-empty list of instructions")
        if len(items) > MAX_INSTRUCTIONS:
            raise LcevalError(f"{where}: {len(items)} instructions; at most {MAX_INSTRUCTIONS}")
        if not all(isinstance(x, str) and x.strip() for x in items):
            raise LcevalError(f"{where}: every instruction must be a non-empty string")
        tasks[str(key)] = tuple(items)
    details = data.get("details") if isinstance(data.get("details"), Mapping) else {}
    return VariantSet(
        source,
        tasks,
        str(data.get("provenance", "")),
        str(p),
        hashlib.sha256(raw).hexdigest(),
        details or {},
    )


def write_variants(path: str | Path, variants: VariantSet) -> Path:
    """Write ``variants`` as a variants file (readable by :func:`read_variants`)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "source": variants.source,
        "provenance": variants.provenance,
        "tasks": {k: list(v) for k, v in variants.tasks.items()},
    }
    if variants.details:
        data["details"] = dict(variants.details)
    p.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return p


_LEAD = re.compile(r"^\s*(?:改写(?:后的指令)?|指令|第.{1,3}种改写|paraphrase)\s*[:：]\s*", re.I)


def clean_paraphrase(text: str) -> str:
    """The instruction in a model's answer: its first non-empty line, without a leading
    ``改写：`` / ``指令：`` label and surrounding quotes; ``""`` when nothing is left."""
    for line in str(text).splitlines():
        s = _LEAD.sub("", line).strip().strip("\"'“”「」").strip()
        if s:
            return s
    return ""


def propose_variants(
    backend: Backend,
    instructions: Mapping[str, str],
    n: int = 4,
    *,
    store: str | Path,
    temperature: float = 0.7,
    seed: int = 0,
    max_new_tokens: int = 160,
    batch_size: int = 8,
    progress: bool = False,
) -> VariantSet:
    """Ask ``backend`` for ``n`` paraphrases of each task's instruction (source ``generated``).

    Requests go through :func:`lceval.models.generate.generate` with a ResponseStore at
    ``store``, so a second call with the same backend and settings asks nothing again. Answers
    are cleaned (:func:`clean_paraphrase`); empty ones, copies of the original and duplicates
    are dropped, so a task may get fewer than ``n``.

    Args:
        backend: any lceval backend (its chat template formats the request).
        instructions: task code -> the instruction to paraphrase (the official one).
        n: paraphrases per task, 1..4 (with the original: at most five instructions).
        store: JSONL file caching the answers.
        temperature: sampling temperature (0: greedy; the prompts differ by variant number).
        seed: sampling seed.
        max_new_tokens: answer budget in tokens.
        batch_size: requests per engine call.
        progress: show a progress bar.

    Returns:
        A VariantSet of source ``generated`` whose provenance names model, engine settings,
        config hash and :data:`PROMPT_VERSION`.

    Raises:
        LcevalError: ``n`` outside 1..4.
    """
    if not isinstance(n, int) or not 1 <= n <= MAX_INSTRUCTIONS - 1:
        raise LcevalError(f"propose_variants: n must be 1..{MAX_INSTRUCTIONS - 1}, got {n!r}")
    config = GenerationConfig(temperature=temperature, seed=seed, max_new_tokens=max_new_tokens)
    samples = []
    for task, text in instructions.items():
        for k in range(1, n + 1):
            prompt = PARAPHRASE_PROMPT.format(k=k, instruction=text)
            digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            samples.append(
                Sample(
                    id=f"cifbench-paraphrase/{task}/{k}/{digest}",
                    benchmark="cifbench",
                    task=task,
                    instruction=prompt,
                    max_new_tokens=max_new_tokens,
                    meta={"variant": k},
                )
            )
    answers = generate(
        backend,
        samples,
        {},
        config,
        store=ResponseStore(store),
        batch_size=batch_size,
        progress=progress,
        desc="paraphrase cifbench",
    )
    got: dict[str, list[str]] = {t: [] for t in instructions}
    for s, r in zip(samples, answers, strict=True):
        if r.finish_reason == "error":
            continue
        text = clean_paraphrase(r.text)
        original = instructions[s.task]
        if text and text != original.strip() and text not in got[s.task]:
            got[s.task].append(text)
    keyed = engine_config(backend, config)
    info = backend.info()
    details = {
        "model": backend.name,
        "backend": info.get("backend"),
        "config_hash": keyed.hash(),
        "generation": {"temperature": temperature, "seed": seed, "max_new_tokens": max_new_tokens},
        "prompt_version": PROMPT_VERSION,
        "store": str(store),
    }
    provenance = (
        f"paraphrases proposed by {backend.name} ({info.get('backend')}, config "
        f"{keyed.hash()}, {PROMPT_VERSION}); machine-generated, not CIF-Bench's instructions"
    )
    return VariantSet(
        "generated", {t: tuple(v) for t, v in got.items() if v}, provenance, details=details
    )


def generate_variants_file(
    split_dir: str | Path,
    path: str | Path,
    *,
    backend: str = "hf",
    model: str | None = None,
    n: int = 4,
    tasks: list[str | int] | None = None,
    backend_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Path:
    """Load a backend, propose paraphrases of each task's first official instruction, write
    them as a variants file of source ``generated``, and close the backend.

    Answers are cached beside the file (``<path stem>.responses.jsonl``), so a rerun asks
    nothing twice.

    Args:
        split_dir: a split folder (``lceval.benchmarks.cifbench.data.read_split``).
        path: the variants file to write.
        backend: lceval backend name (``hf``, ``vllm``, ``openai``).
        model: model for the backend (None: the embedded SmolLM2).
        n: paraphrases per task (1..4).
        tasks: task codes, numbers or names (None: all of the split).
        backend_options: the backend's options.
        **options: further arguments of :func:`propose_variants`.

    Returns:
        The variants file's path.

    Raises:
        LcevalError: unreadable split, unknown task, backend or option.
    """
    split = read_split(split_dir)
    chosen = resolve_tasks(tasks, split)
    instructions = {t: split[t].instructions[0] for t in chosen}
    out = Path(path)
    store = out.with_name(f"{out.stem}.responses.jsonl")
    engine = load_backend(backend, model, **dict(backend_options or {}))
    try:
        variants = propose_variants(engine, instructions, n, store=store, **options)
    finally:
        engine.close()
    return write_variants(out, variants)


TaskSelection = list[int | str] | None
"""Task codes, numbers or names (checked against the data when it is read), or null."""


class Generation(params.Declared):
    """Notebook 11's section for model-proposed instruction variants (and its demo rebuild)."""

    rebuild: bool = Field(True, description="rewrite the demo files and rebuild the run")
    n_generated_variants: params.NonNegative = Field(
        0, description="variants the model proposes per task (0: none, the official only)"
    )
    generated_variants_tasks: TaskSelection = Field(
        None, description="tasks that get generated variants; null: all"
    )
    variants_max_new_tokens: params.Positive = Field(
        160, description="budget in tokens of the model that proposes the variants (its own role)"
    )
