"""Run lceval's notebooks with papermill: one notebook, or a pipeline of them, on one run id.

A pipeline file (``params/pipelines/<name>.yaml``, :class:`Pipeline`)::

    run_id: lifbench-smoke            # default run id, injected into every notebook
    steps:
      - notebook: 01_build_data       # notebooks/01_build_data.ipynb
        params: params/01_build_data/smoke.yaml
      - notebook: 05_ruler_correlation  # a step may name its own run id
        run_id: ruler-corr-smoke

The executed copy goes to ``outputs/<run_id>/notebooks/<name>.ipynb``, renamed there only when
the notebook finished (a failed one is kept as ``<name>.failed.ipynb``).
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, Field, model_validator

from lceval import params as declared
from lceval.benchmarks import registry
from lceval.core.console import engine_output, terminal
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, project_root
from lceval.core.progress import Watcher, progress_path
from lceval.models import lifeline
from lceval.models.base import check_load, log
from lceval.models.specs import resolve_models
from lceval.params import (
    Declared,
    Encoding,
    Positive,
    Text,
    load_params,
    unknown_keys,
    validate,
)
from lceval.run.config import InferConfig


class Step(Declared):
    """One notebook of a pipeline."""

    notebook: Text = Field(description="a notebook name (01_build_data) or path")
    params: Text | None = Field(None, description="its params file; null: its defaults")
    run_id: Text | None = Field(None, description="its own run id; null: the pipeline's")


class Pipeline(Declared):
    """A pipeline file: notebooks run in order on one run id."""

    run_id: Text | None = Field(None, description="the run id of steps without their own")
    steps: list[Step] = Field(min_length=1, description="the notebooks, in order")

    @model_validator(mode="after")
    def _run_ids(self) -> Self:
        if self.run_id is None and not all(s.run_id for s in self.steps):
            raise ValueError("no run_id (set 'run_id' in the file or pass --run-id)")
        return self


Share = Annotated[float, Field(ge=0, le=1)]
PositiveNumber = Annotated[float, Field(gt=0)]


class Overview(Declared):
    """Notebook 00: runs compared side by side, with fixed responses scored as demo runs."""

    run_ids: list[Text] = Field(description="scored runs to compare (any benchmarks and models)")
    fixtures: Text = Field(description="folder of fixed responses scored as demo runs")
    fixture_benchmarks: list[Text] = Field(description="benchmarks of fixtures scored as demo runs")
    fixture_models: dict[str, Text] = Field(
        description="demo model name -> which fixed responses it answers with"
    )
    benchmarks: list[Text] | None = Field(
        description="benchmarks to include; null: every benchmark in the runs"
    )
    confidence: Share = Field(description="confidence level of the bootstrap intervals")
    alpha: Share = Field(description="family-wise error rate of the pairwise tests (Holm)")


class ArsIfsScoring(Declared):
    """Notebook 03: LIFBench's ARS and IFS report of one run."""

    compare_run_ids: list[Text] = Field(
        description="other runs to compare with this one (paired tests on shared samples)"
    )
    random_run_id: Text | None = Field(
        description='a run built with expressions: "random" (Fig. 3 IFS gap); null: skipped'
    )
    radar_published: Text | list[Text] = Field(
        description='published rows in the Fig. 2 radar: "reference", "all", "none" or names'
    )


class RulerCorrelation(Declared):
    """Notebook 05: LongGenBench scores against RULER's (Sec. 4.3)."""

    ruler_runs: list[Text] = Field(description="scored RULER runs (notebook 07)")
    longgenbench_runs: list[Text] = Field(description="scored LongGenBench runs (notebook 06)")
    metric: Text = Field(description='LongGenBench metric correlated with RULER ("wAvg", "CR")')
    ruler_names: dict[str, Text] = Field(
        description="LongGenBench model name -> its name in RULER's README"
    )


class NtkBaseSweep(Declared):
    """Notebook 09: retrieval and reasoning accuracy across RoPE bases (the NTK sweep)."""

    bases: list[PositiveNumber] | None = Field(
        min_length=1, description="RoPE bases to sweep (or use ntk_factors)"
    )
    ntk_factors: list[PositiveNumber] | None = Field(
        min_length=1, description="NTK-aware scaling factors instead of bases; null: use bases"
    )
    lengths: list[Positive] = Field(min_length=1, description="input lengths in tokens")
    samples: Positive = Field(description="questions per task family and length")
    data_path: Text | None = Field(
        description="a clone's LEval-data/ (TopicRet, GSM); null: offline stand-ins"
    )
    retrieval_tasks: list[Text] | None = Field(
        description="RULER retrieval tasks used without data_path"
    )
    encoding: Encoding = Field(description="tiktoken encoding that counts context lengths")
    reasoning_max_new_tokens: Positive = Field(
        description="budget of the reasoning answers in tokens"
    )
    arithmetic_shots: Positive | None = Field(
        description="worked examples in the offline reasoning prompt; null: as many as fit"
    )
    arithmetic_steps: Positive = Field(description="steps per offline arithmetic question")


class Contamination(Declared):
    """Notebook 10: n-gram overlap and membership signals on a run."""

    build_demo: bool = Field(description="build a CIF-Bench demo run under run_id first")
    corpus: list[Text] = Field(
        min_length=1, description="reference corpora: shipped names, files or folders"
    )
    part: Literal["prompt", "context", "reference"] = Field(description="text checked")
    threshold: Share = Field(description="a sample is flagged when its overlap exceeds this")
    seen: list[Text] = Field(
        min_length=3, max_length=3, description="the AUROC's split: [field, seen, unseen value]"
    )
    k: Share = Field(description="Min-K% share of lowest-probability tokens")


SECTIONS: dict[str, type[BaseModel]] = {
    "00_overview": Overview,
    "03_ars_ifs_scoring": ArsIfsScoring,
    "05_ruler_correlation": RulerCorrelation,
    "09_ntk_base_sweep": NtkBaseSweep,
    "10_contamination": Contamination,
}
"""Notebook stem -> its own section: the own parameters of the notebooks that build no
benchmark, which ``lceval run`` checks and ``lceval schema`` writes (:func:`sections`)."""


def notebooks_dir() -> Path:
    """The checkout's notebooks/ folder.

    Raises:
        LcevalError: not inside an lceval checkout.
    """
    top = project_root()
    if top is None or not (top / "notebooks").is_dir():
        raise LcevalError("notebooks/ not found: run lceval from inside the lceval checkout")
    return top / "notebooks"


def find_notebook(name: str | os.PathLike[str]) -> Path:
    """Resolve ``01_build_data``, ``01_build_data.ipynb`` or a path to an existing notebook.

    Raises:
        LcevalError: no such notebook.
    """
    p = Path(name)
    if p.suffix == ".ipynb" and p.exists():
        return p.resolve()
    candidate = notebooks_dir() / (p.name if p.suffix == ".ipynb" else f"{p.name}.ipynb")
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(q.stem for q in notebooks_dir().glob("*.ipynb")))
    raise LcevalError(f"unknown notebook {str(name)!r}; known: {known}")


def _sources(notebook: Path, tag: str | None = None) -> list[str]:
    """The code cells' sources (only those tagged ``tag``), read as JSON: nbformat's schema
    validator takes seconds to import."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c.get("cell_type") == "code"
        and (tag is None or tag in c.get("metadata", {}).get("tags", []))
    ]


def declared_params(notebook: Path) -> dict[str, Any]:
    """The names and literal defaults of a notebook's cell tagged ``parameters`` (papermill's
    convention), read without starting a kernel.

    Raises:
        LcevalError: no such cell, or one that is not plain ``name = literal`` lines.
    """
    cells = _sources(notebook, "parameters")
    if len(cells) != 1:
        raise LcevalError(f"{notebook.name}: expected one cell tagged 'parameters'")
    try:
        return {
            node.targets[0].id: ast.literal_eval(node.value)
            for node in ast.parse(cells[0]).body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        }
    except (SyntaxError, ValueError) as exc:
        raise LcevalError(f"{notebook.name}: parameters cell is not literals: {exc}") from None


def builds(notebook: Path) -> set[str]:
    """The benchmarks whose builder a notebook calls with its parameters
    (``lceval.run.build(run_id, "KEY", ...)``, the params-file contract of DEVELOPING.md)."""
    code = "\n".join(_sources(notebook))
    return set(re.findall(r"lceval\.run\.build\(\s*run_id,\s*\"(\w+)\"", code))


def sections(notebook: Path) -> list[type[BaseModel]]:
    """The declared sections that read ``notebook``'s parameters, the first declaring a key
    reading it: :class:`lceval.params.Notebook`, the notebook's own section
    (:data:`SECTIONS`) or the sections of the benchmark it builds, then
    :class:`lceval.run.config.InferConfig`, :class:`lceval.params.Judge` and
    :class:`lceval.params.Scoring`."""
    out: list[type[BaseModel]] = [declared.Notebook]
    out += [SECTIONS[notebook.stem]] if notebook.stem in SECTIONS else []
    for bench in registry.all_benchmarks():
        if bench.key in builds(notebook) and notebook.name in bench.notebooks:
            out += bench.notebook_sections()
    return [*out, InferConfig, declared.Judge, declared.Scoring]


def check_params(notebook: Path, params: Mapping[str, Any], where: str) -> None:
    """Check ``params`` (from ``where``: a params file, ``-p``) before anything runs: every key
    one of the notebook's parameters, every value by the section that reads it (:func:`sections`).

    Raises:
        LcevalError: one line naming the key.
    """
    defaults = declared_params(notebook)
    unknown_keys(list(params), list(defaults), f"{where} ({notebook.stem})")
    given = dict(params)
    for section in sections(notebook):
        part = {k: given.pop(k) for k in list(given) if k in section.model_fields}
        # a section without defaults of its own (SECTIONS) takes the notebook's
        need = {
            k: defaults[k]
            for k, f in section.model_fields.items()
            if f.is_required() and k in defaults
        }
        validate(section, {**need, **part}, "params", where)


def check_models(notebook: Path, params: Mapping[str, Any], where: str) -> None:
    """Every model a notebook's params name, checked as :func:`lceval.run.infer` checks them
    before an engine starts (:func:`lceval.models.base.check_load`).

    Raises:
        LcevalError: one line naming the model or option.
    """
    names = declared_params(notebook)
    if "model" not in names and "models" not in names:
        return
    merged = {**names, **params}
    given = {k: v for k, v in merged.items() if k in InferConfig.model_fields}
    cfg = validate(InferConfig, given, "params", where)
    one, many = (None, cfg.model) if isinstance(cfg.model, list) else (cfg.model, cfg.models)
    if one is None and many is None:
        return
    try:
        for spec in resolve_models(one, many, cfg.backend, cfg.backend_options, where=where):
            check_load(spec.backend, spec.model, dict(spec.options))
    except LcevalError as exc:
        raise LcevalError(f"{notebook.stem}: {exc}") from None


def notebook_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of every notebook's params files (``params/<notebook>/*.yaml``): exactly
    its declared parameters, each typed by the section that reads it, with the notebook's
    default; and under ``pipeline`` that of the pipeline files (:class:`Pipeline`).

    Returns:
        notebook stem (or ``pipeline``) -> JSON Schema.
    """
    out: dict[str, dict[str, Any]] = {}
    for nb in sorted(notebooks_dir().glob("[0-9][0-9]_*.ipynb")):
        typed: dict[str, Any] = {}
        defs: dict[str, Any] = {}
        for section in sections(nb):
            js = section.model_json_schema(mode="validation")
            defs.update(js.get("$defs", {}))
            for key, prop in js.get("properties", {}).items():
                typed.setdefault(key, prop)
        props = {k: {**typed.get(k, {}), "default": v} for k, v in declared_params(nb).items()}
        out[nb.stem] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"lceval:params/{nb.stem}",
            "title": f"params/{nb.stem}/*.yaml",
            "type": "object",
            "properties": props,
            "additionalProperties": False,
            **({"$defs": defs} if defs else {}),
        }
    out["pipeline"] = Pipeline.model_json_schema(mode="validation")
    return out


def run_notebook(
    notebook: str | os.PathLike[str],
    run_id: str,
    params: Mapping[str, Any] | None = None,
    *,
    outputs_root: str | os.PathLike[str] | None = None,
    kernel_name: str | None = None,
    progress: bool = True,
    check: bool = False,
) -> Path:
    """Execute one notebook (a name or path) with papermill, ``run_id`` and ``params`` injected;
    returns the path of the executed copy. ``kernel_name`` defaults to ``python3`` (this
    process's Python); ``check``: :func:`check_params` and :func:`check_models` first, before
    the run folder is touched.

    Raises:
        LcevalError: unknown notebook, a bad parameter (with ``check``), or a cell failed
            (names the notebook and the error).
    """
    # here, not at the top: loads jsonschema, nbformat, numpy
    import papermill as pm  # heavy: papermill

    src = find_notebook(notebook)
    if check:
        check_params(src, dict(params or {}), "params")
        check_models(src, dict(params or {}), "params")
    run = RunDir(run_id, outputs_root).create()
    final = run.notebooks / src.name
    tmp = run.notebooks / f".{src.stem}.running.ipynb"
    failed = run.notebooks / f"{src.stem}.failed.ipynb"
    parameters = {**dict(params or {}), "run_id": run_id}
    if outputs_root is not None:
        parameters["outputs_root"] = str(Path(outputs_root).resolve())
    # kernel and engine logs go to logs/lceval.log; they die with this process (lifeline)
    with engine_output(run.path, f"notebook {src.stem}"), lifeline.guard(run.path):
        log(f"executing notebook {src.name} for run {run_id} (papermill; {final} when done)")
        bar: bool | dict[str, Any] = (
            {"unit": "cell", "desc": f"{src.stem} cells", "file": terminal()} if progress else False
        )
        watch = Watcher(progress_path(run.path), terminal()) if progress else nullcontext()
        try:
            with watch:  # the kernel's inference progress (logs/progress.jsonl), on the terminal
                pm.execute_notebook(
                    str(src),
                    str(tmp),
                    parameters=parameters,
                    cwd=str(src.parent),
                    kernel_name=kernel_name or "python3",
                    progress_bar=bar,
                )
        except pm.PapermillExecutionError as exc:
            strip_test_markers(tmp)
            os.replace(tmp, failed)
            raise LcevalError(
                f"notebook {src.name} failed in cell {exc.exec_count}: {exc.ename}: "
                f"{exc.evalue} (executed copy: {failed})"
            ) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    strip_test_markers(tmp)
    os.replace(tmp, final)
    failed.unlink(missing_ok=True)
    if run.report.exists():  # keep report/index.html's list of executed notebooks current
        from lceval.report.index_page import write_index  # pulls pandas, jinja2

        write_index(run)
    return final


NBVAL_MARKER = re.compile(r"^[ \t]*# ?NBVAL_[A-Z_]+[ \t]*\n?", re.MULTILINE)
"""nbval's cell markers (``# NBVAL_IGNORE_OUTPUT``, ``# NBVAL_SKIP``, ...): for the tests of the
shipped notebooks, not for the executed copies a user reads."""


def strip_test_markers(path: Path) -> None:
    """Take nbval's markers (:data:`NBVAL_MARKER` lines, ``nbval-*`` cell tags) out of the
    executed notebook at ``path``, in place; a notebook that does not parse is left as it is."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source")
        text = "".join(src) if isinstance(src, list) else src
        if isinstance(text, str) and "NBVAL_" in text:
            cell["source"] = NBVAL_MARKER.sub("", text).splitlines(keepends=True)
        tags = (cell.get("metadata") or {}).get("tags")
        if isinstance(tags, list) and any(str(t).startswith("nbval-") for t in tags):
            cell["metadata"]["tags"] = [t for t in tags if not str(t).startswith("nbval-")]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def run_pipeline(
    pipeline: str | os.PathLike[str] | Mapping[str, Any],
    run_id: str | None = None,
    *,
    outputs_root: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> list[Path]:
    """Execute a pipeline's notebooks (a YAML path or its mapping, :class:`Pipeline`) in order;
    returns the executed copies. ``run_id`` overrides the file's; where steps name their own, it
    is a prefix (``X-<its run id>``, and params values naming another step's run follow).
    ``overrides`` reach every step that declares them, after its params file.

    Raises:
        LcevalError: a malformed pipeline, params file or override (one line naming the key),
            an unknown notebook, or a failed cell; every step is checked before the first runs.
    """
    where = "pipeline"
    if not isinstance(pipeline, Mapping):
        where = str(pipeline)
        pipeline = load_params(pipeline)
    given = {**pipeline, "run_id": run_id} if run_id else pipeline
    plan = validate(Pipeline, given, "params", where)
    # --run-id: a prefix of the steps' own run ids
    own = {s.run_id: f"{run_id}-{s.run_id}" for s in plan.steps if run_id and s.run_id}
    overrides = dict(overrides or {})
    resolved = []
    known: set[str] = set()
    for step in plan.steps:
        nb = find_notebook(step.notebook)  # fail before running anything
        params = load_params(step.params) if step.params else {}
        params = {k: _renamed(v, own) for k, v in params.items()}
        check_params(nb, params, step.params or where)
        names = declared_params(nb)
        known.update(names)
        # an override reaches the steps that declare it, checked by each step's declared types
        mine = {k: v for k, v in overrides.items() if k in names}
        check_params(nb, mine, "-p")
        merged = with_overrides(params, mine)
        check_models(nb, merged, where)
        rid = str(step.run_id or plan.run_id)
        resolved.append((nb, own.get(rid, rid), merged))
    unknown_keys(list(overrides), sorted(known), f"-p (no step of {where} declares it)")
    return [
        run_notebook(nb, rid, params, outputs_root=outputs_root, progress=progress)
        for nb, rid, params in resolved
    ]


def _renamed(value: Any, runs: Mapping[str, str]) -> Any:
    """``value`` with each run id of ``runs`` (a string, or an item of a list) renamed."""
    if isinstance(value, list):
        return [runs.get(v, v) if isinstance(v, str) else v for v in value]
    return runs.get(value, value) if isinstance(value, str) else value


def with_overrides(
    params: Mapping[str, Any], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``params`` with ``overrides`` on top (``-p KEY=VALUE``), keeping each model's own
    options: a bare id in an overriding ``models`` list takes the params file's mapping for it;
    one the file does not list gets its ``backend_options``, said in one line."""
    out = {**params, **dict(overrides or {})}
    if not isinstance(out.get("models"), list) or "models" not in (overrides or {}):
        return out
    own = {
        str(m["model"]): dict(m)
        for m in params.get("models") or []
        if isinstance(m, Mapping) and m.get("model") is not None
    }
    for m in out["models"]:
        if isinstance(m, str) and m not in own and own and params.get("backend_options"):
            log(
                f"models: {m} is not in this params file's list; it runs with its "
                f"backend_options {dict(params['backend_options'])} (give it its own: "
                f"'{{model: {m}, options: {{max_model_len: N}}}}')"
            )
    out["models"] = [own.get(m, m) if isinstance(m, str) else m for m in out["models"]]
    return out
