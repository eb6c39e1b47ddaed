"""CIF-Bench data building: split files (+ instruction variants) -> contexts and samples.

Reproduces the evaluation setup of CIF-Bench (Li et al., 2024, Sec. 3 and 4): zero-shot, the
model gets "the concatenation of the task instruction and data input texts". The data is the
user's: the official public split (``dataset/public/`` of yizhilll/CIF-Bench), a private or
other held-out split in the same format, or the demo files of
:func:`lceval.benchmarks.cifbench.data.write_demo_dataset`.

Prompt layout
-------------
``Sample.description`` = the task instruction, the context = the input, ``Sample.instruction``
empty, joined by ``"\\n\\n"``: the user turn is ``instruction + "\\n\\n" + input``, formatted by the
model's chat template. (The official inference code is not released; the paper says only that
instruction and input are concatenated.)

Sample fields
-------------
- ``id`` = ``cifbench/<split>/<task>/<source>/i<k>/d<j>``: instruction ``k`` (0-based, within
  its source) on input ``j`` (0-based, in file order).
- ``context_id`` = ``cifbench/<split>/<task>/d<j>`` (one context per input, shared by its
  instructions).
- ``scenario`` = the split (``public`` / ``private``); ``expression_id`` = ``k``;
  ``variable_id`` = ``j``.
- ``gold`` = :class:`~lceval.benchmarks.cifbench.gold.CifGold` (reference, output type, labels).
- ``meta`` = ``{split, source, instruction_id, input_id, task_number, task_name, categories,
  output_type_rule, provenance, file_split}`` and ``origin`` (translated, chinese, new) when
  the metadata file gives it; ``provenance`` is ``<source>:<file name>`` (the split file, or the
  variants file; full paths and sha256 are in ``BuildResult.sources``).

Output types are decided once per task over the references of every split loaded (so one task
has one type in all splits): a user metadata file's ``output_type``, else
:func:`lceval.benchmarks.cifbench.data.infer_output_type`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from lceval import params
from lceval.benchmarks.base import BuildResult
from lceval.benchmarks.cifbench.data import (
    Inference,
    TaskFile,
    TaskMeta,
    read_metadata,
    read_split,
    resolve_tasks,
    task_inference,
    write_demo_dataset,
)
from lceval.benchmarks.cifbench.gold import (
    INSTRUCTION_SOURCES,
    MAX_INSTRUCTIONS,
    CifGold,
    normalize,
    split_labels,
)
from lceval.benchmarks.cifbench.tables import Comparison
from lceval.benchmarks.cifbench.variants import (
    Generation,
    TaskSelection,
    VariantSet,
    read_variants,
)
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample
from lceval.core.tokens import count_tokens_batch


class Config(params.Declared):
    """CIF-Bench's builder params (see :func:`build_cifbench`)."""

    demo: bool = Field(
        False, description="build lceval's demo dataset when neither split folder is given"
    )
    public_dir: Annotated[str | None, params.paths()] = Field(
        None, description="public split folder (<n>_<Task>_<split>.jsonl files)"
    )
    private_dir: Annotated[str | None, params.paths()] = Field(
        None, description="private split folder, same format"
    )
    tasks: TaskSelection = Field(
        None, description="task codes, numbers or names; null: every task found"
    )
    n_inputs: params.Positive | None = Field(
        None, description="first inputs per task and split; null: all"
    )
    n_instructions: Annotated[int, Field(ge=1, le=MAX_INSTRUCTIONS)] = Field(
        MAX_INSTRUCTIONS, description="instructions per task and source"
    )
    metadata: Annotated[str | None, params.paths()] = Field(
        None, description="a YAML/JSON file: task -> output_type, categories, labels, origin"
    )
    variants_files: Annotated[tuple[str, ...], params.texts(null=())] = Field(
        (), description="variants files (lceval.benchmarks.cifbench.variants)"
    )
    instruction_sources: Annotated[
        tuple[str, ...] | None,
        params.names(INSTRUCTION_SOURCES, null_means_all=False),
    ] = Field(
        ("official",), description="which of official, user, generated to build; null: official"
    )
    max_new_tokens: params.Positive | None = Field(512, description="answer budget in tokens")
    seed: params.NonNegative = Field(0, description="recorded (the build is deterministic)")
    encoding: params.Encoding = Field(
        "o200k_base", description="tiktoken encoding for context lengths"
    )


def _split_files(p: Config) -> dict[str, dict[str, TaskFile]]:
    splits = {}
    for split, folder in (("public", p.public_dir), ("private", p.private_dir)):
        if folder is not None:
            splits[split] = read_split(folder)
    if not splits:
        raise LcevalError(
            "cifbench: give public_dir and/or private_dir (folders of <n>_<Task>_<split>.jsonl), "
            "or -p demo=true for lceval's demo dataset (demo: true in a params file)"
        )
    return splits


def _variant_sets(files: Sequence[str], sources: list[str]) -> dict[str, list[VariantSet]]:
    by_source: dict[str, list[VariantSet]] = {"user": [], "generated": []}
    for f in files:
        vs = read_variants(f)
        by_source[vs.source].append(vs)
    for src in sources:
        if src != "official" and not by_source[src]:
            raise LcevalError(f"cifbench: instruction source {src!r} needs a variants file")
    return by_source


def _digest(files: Mapping[str, TaskFile]) -> str:
    h = hashlib.sha256()
    for t, tf in files.items():
        h.update(f"{t}:{tf.sha256}\n".encode())
    return h.hexdigest()


def build_cifbench(raw: Mapping[str, Any]) -> BuildResult:
    """Build CIF-Bench samples from split folders.

    Args:
        raw: the keys of :class:`Config` (the keys of notebook 11's other sections,
            :data:`lceval.params.NOTEBOOK_SECTIONS` and :class:`Generation`, are accepted and
            ignored): ``public_dir`` / ``private_dir`` (split folders; at least one), or
            ``demo: true`` with neither (lceval's demo dataset,
            :func:`write_demo_dataset`, written to a temporary folder with its metadata
            unless ``metadata`` is given; context sources
            then read ``lceval-demo/<split>/<file>``; given folders win over ``demo``, as in
            notebook 11, which writes the demo files and passes their folders), ``tasks`` (codes,
            numbers or names; None: every task found), ``n_inputs`` (first inputs per task and
            split; None: all), ``n_instructions`` (instructions per task and source, 1..5,
            default 5), ``metadata`` (a YAML/JSON file: task -> output_type, categories,
            labels), ``variants_files`` (variants files, ``lceval.benchmarks.cifbench.variants``),
            ``instruction_sources`` (which of official, user, generated to build; default
            ``["official"]``), ``max_new_tokens`` (answer budget, default 512), ``seed``
            (recorded; the build is deterministic), ``encoding`` (tiktoken encoding for
            context lengths, default o200k_base).

    Returns:
        Samples and contexts (module docstring); ``sources`` records each split folder (task
        count and a digest of the files' sha256), the metadata and variants files, and each
        task's output type with the rule that decided it.

    Raises:
        LcevalError: unknown or bad parameter, unreadable data, a task not in the data, or a
            source without a variants file.
    """
    p = params.parse(
        Config, raw, "cifbench", accept=(*params.NOTEBOOK_SECTIONS, Generation, Comparison)
    )
    if p.demo and p.public_dir is None and p.private_dir is None:
        with tempfile.TemporaryDirectory(prefix="lceval-cifbench-demo-") as tmp:
            paths = write_demo_dataset(tmp)
            if p.metadata is not None:
                paths.pop("metadata")
            res = _build(
                p.model_copy(
                    update=dict(
                        public_dir=paths["public_dir"],
                        private_dir=paths["private_dir"],
                        metadata=paths.get("metadata", p.metadata),
                        demo=False,
                    )
                )
            )
            return _demo_sources(res, Path(tmp))
    return _build(p)


def _build(p: Config) -> BuildResult:
    """The build of :func:`build_cifbench` from checked params and split folders."""
    n_inputs, n_instr, budget, encoding = p.n_inputs, p.n_instructions, p.max_new_tokens, p.encoding
    sources = list(p.instruction_sources or ("official",))
    splits = _split_files(p)
    metadata = read_metadata(p.metadata)
    variant_sets = _variant_sets(p.variants_files, sources)
    all_tasks: dict[str, None] = {}
    for files in splits.values():
        all_tasks.update(dict.fromkeys(files))
    ordered = sorted(all_tasks, key=lambda t: int(t.split("_", 1)[0]))
    tasks = resolve_tasks(p.tasks, ordered)
    if not tasks:
        raise LcevalError("cifbench: tasks is empty (None selects every task)")

    inferences: dict[str, Inference] = {}
    for t in tasks:
        refs = [o for files in splits.values() if t in files for _, o in files[t].inputs]
        first = next(files[t] for files in splits.values() if t in files)
        inferences[t] = task_inference(refs, first.instructions[0], metadata.get(t))

    samples: list[Sample] = []
    ctx_rows: list[tuple[str, str, str]] = []
    for split, files in splits.items():
        for t in tasks:
            if t not in files:
                continue
            tf = files[t]
            inputs = tf.inputs[:n_inputs] if n_inputs else tf.inputs
            input_id = {pair: j for j, pair in enumerate(inputs)}
            for j, (text, _) in enumerate(inputs):
                ctx_rows.append((f"cifbench/{split}/{t}/d{j}", text, str(tf.path)))
            for src in sources:
                for k, instruction, j, provenance in _instances(
                    src, tf, input_id, n_instr, variant_sets
                ):
                    samples.append(
                        _sample(
                            split,
                            tf,
                            src,
                            k,
                            instruction,
                            j,
                            inputs[j][1],
                            provenance,
                            inferences[t],
                            metadata.get(t),
                            budget,
                        )
                    )
    counts = count_tokens_batch([text for _, text, _ in ctx_rows], encoding)
    contexts = [
        Context(cid, text, n, encoding, source)
        for (cid, text, source), n in zip(ctx_rows, counts, strict=True)
    ]
    info: dict[str, Any] = {
        split: {
            "path": str(next(iter(files.values())).path.parent),
            "tasks": len(files),
            "files_sha256": _digest(files),
        }
        for split, files in splits.items()
    }
    if metadata.path:
        info["metadata"] = {"path": metadata.path, "sha256": metadata.sha256}
    info["variants"] = [
        {"path": vs.path, "source": vs.source, "provenance": vs.provenance, "sha256": vs.sha256}
        for sets in variant_sets.values()
        for vs in sets
    ]
    info["output_types"] = {t: [i.output_type, i.rule] for t, i in inferences.items()}
    return BuildResult(samples=samples, contexts=contexts, sources=info, encoding=encoding)


def _demo_sources(res: BuildResult, folder: Path) -> BuildResult:
    """A demo build's records without the temporary folder's path: context sources
    ``lceval-demo/<split>/<file>``, split and metadata paths ``lceval-demo/...``."""

    def rel(path: str) -> str:
        p = Path(path)
        return (
            f"lceval-demo/{p.relative_to(folder).as_posix()}" if p.is_relative_to(folder) else path
        )

    contexts = [dataclasses.replace(c, source=rel(c.source)) for c in res.contexts]
    sources = dict(res.sources)
    for key in ("public", "private", "metadata"):
        if isinstance(sources.get(key), Mapping):
            sources[key] = {**sources[key], "path": rel(sources[key]["path"])}
    sources["demo"] = "lceval demo dataset (lceval.benchmarks.cifbench.data.write_demo_dataset)"
    return dataclasses.replace(res, contexts=contexts, sources=sources)


def _instances(
    source: str,
    tf: TaskFile,
    input_id: Mapping[tuple[str, str], int],
    n_instr: int,
    variant_sets: Mapping[str, list[VariantSet]],
) -> list[tuple[int, str, int, str]]:
    """(instruction index, instruction, input index, provenance) of one task, split and source."""
    if source == "official":
        kept = {ins: k for k, ins in enumerate(tf.instructions[:n_instr])}
        out = []
        seen = set()
        for r in tf.rows:
            j = input_id.get((r.input, r.output))
            k = kept.get(r.instruction)
            if j is None or k is None or (k, j) in seen:
                continue
            seen.add((k, j))
            out.append((k, r.instruction, j, f"official:{tf.path.name}"))
        return sorted(out, key=lambda x: (x[2], x[0]))
    texts: tuple[str, ...] = ()
    provenance = ""
    for vs in variant_sets.get(source, []):
        texts = vs.get(tf.task)
        if texts:
            provenance = f"{source}:{Path(vs.path).name if vs.path else ''}"
            break
    return [
        (k, ins, j, provenance)
        for j in sorted(input_id.values())
        for k, ins in enumerate(texts[:n_instr])
    ]


def _sample(
    split: str,
    tf: TaskFile,
    source: str,
    k: int,
    instruction: str,
    j: int,
    reference: str,
    provenance: str,
    inference: Inference,
    task_meta: TaskMeta,
    budget: int | None,
) -> Sample:
    otype = inference.output_type
    if otype == "multi-class":
        gold_labels: tuple[str, ...] = (normalize(reference),)
    elif otype == "multi-label":
        gold_labels = split_labels(reference)
    else:
        gold_labels = ()
    return Sample(
        id=f"cifbench/{split}/{tf.task}/{source}/i{k}/d{j}",
        benchmark="cifbench",
        task=tf.task,
        instruction="",
        context_id=f"cifbench/{split}/{tf.task}/d{j}",
        description=instruction,
        joiner="\n\n",
        max_new_tokens=budget or 512,
        gold=CifGold(reference, otype, inference.labels, gold_labels),
        scenario=split,
        expression_id=k,
        variable_id=j,
        meta={
            "split": split,
            "source": source,
            "instruction_id": k,
            "input_id": j,
            "task_number": tf.number,
            "task_name": tf.name,
            "categories": list(task_meta.categories),
            "output_type_rule": inference.rule,
            "provenance": provenance,
            "file_split": tf.split,
            **({"origin": task_meta.origin} if task_meta.origin else {}),
        },
    )
