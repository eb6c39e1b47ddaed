"""Run lceval's notebooks with papermill: one notebook, or a pipeline of them, on one run id.

A pipeline file (``params/pipelines/<name>.yaml``) lists notebooks with their params files::

    run_id: lifbench-smoke            # default run id, injected into every notebook
    steps:
      - notebook: 01_build_data       # notebooks/01_build_data.ipynb
        params: params/01_build_data/smoke.yaml
      - notebook: 02_inference
        params: params/02_inference/smoke.yaml
      - notebook: 05_ruler_correlation  # a step may name its own run id
        run_id: ruler-corr-smoke

A params file is a flat mapping of the notebook's parameters (papermill's own convention). The
executed copy of each notebook is written to ``outputs/<run_id>/notebooks/<name>.ipynb``: first
under a temporary name, renamed when the notebook has finished, so a failed or killed run never
leaves a copy that looks complete (a failed one is kept as ``<name>.failed.ipynb`` for debugging).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lceval import pipeline
from lceval.console import engine_output, terminal
from lceval.errors import LcevalError
from lceval.io import RunDir, new_meta, project_root, read_records, write_jsonl
from lceval.pipeline import load_params
from lceval.records import Context, Response, Sample


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
    stem = p.name if p.suffix == ".ipynb" else p.name + ".ipynb"
    candidate = notebooks_dir() / stem
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(q.stem for q in notebooks_dir().glob("*.ipynb")))
    raise LcevalError(f"unknown notebook {str(name)!r}; known: {known}")


def run_notebook(
    notebook: str | os.PathLike[str],
    run_id: str,
    params: Mapping[str, Any] | None = None,
    *,
    outputs_root: str | os.PathLike[str] | None = None,
    kernel_name: str | None = None,
    progress: bool = True,
) -> Path:
    """Execute one notebook with papermill; returns the path of the executed copy.

    Args:
        notebook: notebook name or path.
        run_id: injected as the ``run_id`` parameter; names the run folder.
        params: further parameters to inject (a params file's contents).
        outputs_root: folder of run folders (default: ``lceval.io.outputs_root()``).
        kernel_name: Jupyter kernel (default ``python3``, which jupyter_client starts with this
            process's Python, so ``lceval run`` uses the lceval it was started from; the
            notebooks' own kernelspec, ``lceval``, is for JupyterLab and may be missing or
            point at another environment).
        progress: show papermill's cell progress bar.

    Raises:
        LcevalError: unknown notebook, or a cell failed (names the notebook and the error).
    """
    import papermill as pm

    src = find_notebook(notebook)
    run = RunDir(run_id, outputs_root).create()
    final = run.notebooks / src.name
    tmp = run.notebooks / f".{src.stem}.running.ipynb"
    failed = run.notebooks / f"{src.stem}.failed.ipynb"
    parameters = {**dict(params or {}), "run_id": run_id}
    if outputs_root is not None:
        parameters["outputs_root"] = str(Path(outputs_root).resolve())
    # The kernel's and its engines' logs go to the run's logs/lceval.log; papermill's progress
    # bar stays on the terminal (lceval -v or LCEVAL_VERBOSE=1: everything on the terminal).
    from lceval.models import lifeline

    # the kernel and the engines it starts die with this process (lceval.models.lifeline)
    with engine_output(run.path, f"notebook {src.stem}"), lifeline.guard(run.path):
        bar: bool | dict[str, Any] = (
            {"unit": "cell", "desc": "Executing", "file": terminal()} if progress else False
        )
        try:
            pm.execute_notebook(
                str(src),
                str(tmp),
                parameters=parameters,
                cwd=str(src.parent),
                kernel_name=kernel_name or "python3",
                progress_bar=bar,
            )
        except pm.PapermillExecutionError as exc:
            os.replace(tmp, failed)
            raise LcevalError(
                f"notebook {src.name} failed in cell {exc.exec_count}: {exc.ename}: "
                f"{exc.evalue} (executed copy: {failed})"
            ) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    os.replace(tmp, final)
    failed.unlink(missing_ok=True)
    if run.report.exists():  # keep report/index.html's list of executed notebooks current
        from lceval.index_page import write_index

        write_index(run)
    return final


def run_pipeline(
    pipeline: str | os.PathLike[str] | Mapping[str, Any],
    run_id: str | None = None,
    *,
    outputs_root: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> list[Path]:
    """Execute a pipeline's notebooks in order on one run id.

    Args:
        pipeline: path to a pipeline YAML, or its parsed mapping.
        run_id: overrides the pipeline's ``run_id``.
        outputs_root: folder of run folders.
        overrides: parameters injected into every notebook (after each step's params file).
        progress: show papermill's progress bars.

    Returns:
        The executed copies, in order.

    Raises:
        LcevalError: malformed pipeline (names the field), unknown notebook, or a failed cell.
    """
    where = "pipeline"
    if not isinstance(pipeline, Mapping):
        where = str(pipeline)
        pipeline = load_params(pipeline)
    steps = pipeline.get("steps")
    if not isinstance(steps, list) or not steps:
        raise LcevalError(f"{where}: 'steps' must be a non-empty list of {{notebook, params}}")
    run_id = run_id or pipeline.get("run_id")
    if not all(isinstance(s, Mapping) and s.get("run_id") for s in steps) and (
        not isinstance(run_id, str) or not run_id
    ):
        raise LcevalError(f"{where}: no run_id (set 'run_id' in the file or pass --run-id)")
    resolved = []
    for i, step in enumerate(steps):
        if not isinstance(step, Mapping) or "notebook" not in step:
            raise LcevalError(f"{where}: steps[{i}] must be a mapping with a 'notebook' key")
        unknown = set(step) - {"notebook", "params", "run_id"}
        if unknown:
            raise LcevalError(
                f"{where}: steps[{i}] has unknown key(s) {', '.join(sorted(unknown))}"
            )
        nb = find_notebook(step["notebook"])  # fail before running anything
        params = load_params(step["params"]) if step.get("params") else {}
        resolved.append((nb, str(step.get("run_id") or run_id), with_overrides(params, overrides)))
    return [
        run_notebook(nb, rid, params, outputs_root=outputs_root, progress=progress)
        for nb, rid, params in resolved
    ]


def with_overrides(
    params: Mapping[str, Any], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``params`` with ``overrides`` on top (``lceval run PIPELINE -p KEY=VALUE``), keeping each
    model's own options: a bare hub id in an overriding ``models`` list that the params file
    lists as a mapping (``{model: ID, options: {max_model_len: 32768}}``) takes that mapping, so
    ``-p 'models=[Qwen/Qwen2.5-7B-Instruct]'`` keeps that model's ``max_model_len`` instead of
    inheriting ``backend_options``'. A bare id the file does not list gets the file's
    ``backend_options``, said in one line: give it ``{model: ID, options: {...}}`` for its own.
    """
    from lceval.models.base import log

    out = {**params, **dict(overrides or {})}
    models = (overrides or {}).get("models")
    if not isinstance(models, list):
        return out
    own = {
        str(m["model"]): m
        for m in params.get("models") or []
        if isinstance(m, Mapping) and m.get("model") is not None
    }
    merged = []
    for m in models:
        if isinstance(m, str) and m in own:
            merged.append(dict(own[m]))
        else:
            if isinstance(m, str) and own and params.get("backend_options"):
                log(
                    f"models: {m} is not in this params file's list; it runs with its "
                    f"backend_options {dict(params['backend_options'])} (give it its own: "
                    f"'{{model: {m}, options: {{max_model_len: N}}}}')"
                )
            merged.append(m)
    out["models"] = merged
    return out


def show_samples(
    run: str | RunDir,
    *,
    task: str | None = None,
    worst: int | None = 20,
    model: str | None = None,
    scorer: str | None = None,
    outputs_root: str | Path | None = None,
) -> Any:
    """The per-sample table of report/samples.html in a notebook cell: one row per (sample,
    model, scorer) with the grouping fields, instruction, answer, value, rubric items and
    explanation, and the context's head and tail (the full-text links of the report page are
    left out: a notebook cell cannot open the run's files). itables' offline DataTables bundle:
    it renders with no network, searchable and sortable (:mod:`lceval.samples_page`).

    Args:
        run: a run id or ``lceval.io.RunDir`` (scored).
        task, model, scorer: only these rows (task code, model name, scorer name).
        worst: the ``worst`` lowest-valued rows (NaN last); None: every row.
        outputs_root: folder of run folders (with a run id).

    Returns:
        An ``IPython.display.HTML`` object (shown when it ends a cell).

    Raises:
        LcevalError: the run has no scores; an unknown task, model or scorer; ``worst`` not a
            whole number >= 1 (``"3"`` included) or None.
    """
    from IPython.display import HTML

    from lceval import samples_page

    if worst is not None and (isinstance(worst, bool) or not isinstance(worst, int)):
        raise LcevalError(f"worst must be a whole number >= 1 or None, got {worst!r}")
    for name, value in (("task", task), ("model", model), ("scorer", scorer)):
        if value is not None and not isinstance(value, str):
            raise LcevalError(f"{name} must be text or None, got {value!r}")
    folder = run if isinstance(run, RunDir) else RunDir(str(run), outputs_root)
    rows = samples_page.worst(folder.read_scores(), task=task, model=model, scorer=scorer, n=worst)
    frame = samples_page.sample_rows(folder, scores=rows, links=False)
    if frame.empty:
        raise LcevalError(f"run {folder.run_id} has no scores to show")
    return HTML(samples_page.table_html(frame, frame.attrs["texts"], page_length=25))


def score_files(
    run_id: str,
    folder: str | Path,
    *,
    root: str | Path | None = None,
    rename: Mapping[str, str] | None = None,
    scorer: str | None = None,
) -> str:
    """A scored run from a folder of ``samples.jsonl``, ``contexts.jsonl`` and
    ``responses.jsonl`` (e.g. ``tests/fixtures/regression/<key>``): the run folder is made
    afresh, the responses copied (models renamed by ``rename``) and scored by
    ``lceval.pipeline.score`` with the benchmark's real scorer (the overview notebook's demo
    runs; ``tests/test_compare.py``'s scored runs).

    Returns:
        ``run_id``.

    Raises:
        LcevalError: a file is missing or the scorer fails.
    """
    src = Path(folder)
    for name in ("samples.jsonl", "responses.jsonl"):
        if not (src / name).exists():
            raise LcevalError(f"{src / name} does not exist")
    run = RunDir(run_id, root)
    if run.path.exists():
        shutil.rmtree(run.path)
    run.create()
    samples = read_records(src / "samples.jsonl", Sample)
    contexts = (
        read_records(src / "contexts.jsonl", Context) if (src / "contexts.jsonl").exists() else []
    )
    run.write_samples(samples, contexts)
    names = dict(rename or {})
    responses = [
        dataclasses.replace(r, model=names[r.model]) if r.model in names else r
        for r in read_records(src / "responses.jsonl", Response)
    ]
    write_jsonl(run.responses, responses)
    run.write_meta(new_meta(run_id, params={"source": str(src)}))
    pipeline.score(run_id, root=root, scorer=scorer, progress=False)
    return run_id
