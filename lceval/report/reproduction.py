"""The reproduction index: every numbered table and figure of the five papers, where lceval
produces it (notebook, function), from what (a user's run, the paper's published outputs),
which test checks it, or why it cannot be reproduced offline.

Each benchmark folder holds ``lceval/benchmarks/<key>/reproduction.yaml``, a list of items::

    - paper: LIFBench              # short title of the paper
      item: Table 3                # as numbered in the paper ("Fig. 2", "Table 4")
      caption: ARS per task        # short
      status: reproduced           # reproduced | recomputed | partial | not_reproducible
      from: run+published          # run | published | run+published | none
      where: 03_ars_ifs_scoring.ipynb; lceval.benchmarks.lifbench.tables.task_ars
      test: tests/benchmarks/lifbench/test_report.py::test_paper_check   # or null
      why: null                    # required for partial and not_reproducible

``reproduced``: produced from a user's run in the paper's layout; ``recomputed``: also computed
from the paper's published outputs and checked against the printed numbers; ``partial``: some
of its numbers or panels only (``why`` says which); ``not_reproducible``: cannot be produced
offline (``why``: data not public, human ratings, closed judge).

:func:`load_index` reads and checks every file; :func:`to_markdown` renders the table that
README.md holds between the :data:`README_START` / :data:`README_END` markers
(``python -m lceval.report.reproduction`` rewrites it); :func:`to_html` is the section each report's
index.html shows for the run's benchmarks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import yaml

from lceval import registry
from lceval.core.errors import LcevalError
from lceval.core.io import atomic_open
from lceval.report.samples_page import render

STATUSES = ("reproduced", "recomputed", "partial", "not_reproducible")
"""Allowed ``status`` values."""

SOURCES = ("run", "published", "run+published", "none")
"""Allowed ``from`` values."""

COLUMNS = ("benchmark", "paper", "item", "caption", "status", "from", "where", "test", "why")
"""Columns of :func:`load_index` (``benchmark`` is the folder the item was read from)."""

README_START = "<!-- reproduction-index:start -->"
README_END = "<!-- reproduction-index:end -->"

_TEXT = {"type": "string", "minLength": 1}
_ITEM = r"^(Table|Fig\.) \d+[a-z]?$|^(?!Tab|Fig)[A-Z][\w .,()/+-]+$"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["paper", "item", "caption", "status", "from", "where", "test"],
    "properties": {
        "paper": _TEXT,
        # "Table 3", "Fig. 3b"; an unnumbered item by its heading (not "Figure 3", "Tab. 3")
        "item": {"type": "string", "pattern": _ITEM},
        "caption": _TEXT,
        "status": {"enum": list(STATUSES)},
        "from": {"enum": list(SOURCES)},
        "where": {"type": ["string", "null"]},
        "test": {"type": ["string", "null"], "pattern": r"^tests/[\w/.-]+\.py::\w+"},
        "why": {"type": ["string", "null"]},
    },
    "if": {"properties": {"status": {"enum": ["partial", "not_reproducible"]}}},
    "then": {"required": ["why"], "properties": {"why": _TEXT}},
}
"""JSON schema of one item (:mod:`jsonschema`)."""

_BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def index_files(keys: Iterable[str] | None = None) -> list[Path]:
    """The ``reproduction.yaml`` files of the benchmarks ``keys`` (default: every registered
    benchmark), those that exist, in registry order."""
    wanted = list(registry.BENCHMARKS) if keys is None else list(keys)
    return [p for k in wanted if (p := _BENCHMARKS / k / "reproduction.yaml").is_file()]


def _item_name(entry: Any, i: int) -> str:
    if isinstance(entry, dict) and entry.get("item"):
        return f"item {i + 1} ({entry.get('paper', '?')} {entry['item']})"
    return f"item {i + 1}"


def read_file(path: str | Path) -> list[dict[str, Any]]:
    """Items of one ``reproduction.yaml``, each checked against :data:`SCHEMA`.

    Raises:
        LcevalError: unreadable file, not a YAML list, or an item that breaks the schema (the
            message names the file, the item and the field).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LcevalError(f"{path}: cannot read the reproduction index: {reason}") from None
    if not isinstance(data, list):
        raise LcevalError(f"{path}: the reproduction index must be a YAML list of items")
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for i, entry in enumerate(data):
        error = jsonschema.exceptions.best_match(validator.iter_errors(entry))
        if error is not None:
            field = ".".join(str(p) for p in error.absolute_path) or "item"
            message = error.message.splitlines()[0][:200]
            raise LcevalError(f"{path}: {_item_name(entry, i)}: {field}: {message}")
    return [dict(e) for e in data]


def _order(item: str) -> tuple[int, float, str]:
    """Tables before figures, then by number; named (unnumbered) items last."""
    m = re.match(r"^(Table|Fig\.) (\d+)(\S*)$", item)
    if m is None:
        return (2, 0.0, item)
    return (0 if m.group(1) == "Table" else 1, float(m.group(2)), m.group(3))


def load_index(keys: Iterable[str] | None = None) -> pd.DataFrame:
    """Every item of the benchmarks' reproduction indexes, one row each (:data:`COLUMNS`),
    sorted by paper, then tables before figures by number.

    Args:
        keys: benchmark keys (a run's); default every registered benchmark.

    Raises:
        LcevalError: a file or an item that breaks :data:`SCHEMA`, or the same (paper, item)
            listed twice.
    """
    rows = []
    for path in index_files(keys):
        for entry in read_file(path):
            rows.append({"benchmark": path.parent.name, **entry})
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    seen = frame.duplicated(["paper", "item"], keep="first")
    if seen.any():
        row = frame[seen].iloc[0]
        raise LcevalError(
            f"{_BENCHMARKS / row['benchmark'] / 'reproduction.yaml'}: "
            f"{row['paper']} {row['item']} is listed twice in the reproduction index"
        )
    frame = frame.astype(object).where(frame.notna(), None)
    key = frame["item"].map(_order)
    frame = frame.assign(_k=key).sort_values(["paper", "_k"], kind="stable").drop(columns="_k")
    return frame.reset_index(drop=True)


def _cell(value: Any) -> str:
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def to_markdown(frame: pd.DataFrame) -> str:
    """The index as one GitHub Markdown table: paper, item, caption, status, from, where, test
    (or why, for items that are partial or not reproducible)."""
    head = ["paper", "item", "caption", "status", "from", "where", "test / why"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in frame.to_dict("records"):
        note = " ".join(x for x in (r["test"] and f"`{r['test']}`", r["why"]) if x)
        where = f"`{r['where']}`" if r["where"] else ""
        cells = [r["paper"], r["item"], r["caption"], r["status"], r["from"], where, note]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


REPRODUCTION_COLUMNS = ("paper", "item", "caption", "status", "from", "where", "test", "why")
"""The columns of the index's HTML table, in order."""


def rows_of(frame: pd.DataFrame) -> list[list[str]]:
    """The index's rows as text cells in :data:`REPRODUCTION_COLUMNS` order."""
    return [[_cell(r[h]) for h in REPRODUCTION_COLUMNS] for r in frame.to_dict("records")]


def to_html(frame: pd.DataFrame) -> str:
    """The index as an HTML section (``<h2 id='reproduction'>``; ``templates/reproduction.html.j2``,
    autoescaped), the section a report's index.html includes."""
    return render("reproduction.html.j2", reproduction=rows_of(frame), columns=REPRODUCTION_COLUMNS)


def readme_section(readme: str, frame: pd.DataFrame | None = None) -> str:
    """``readme`` with the text between :data:`README_START` and :data:`README_END` replaced by
    :func:`to_markdown` of ``frame`` (default :func:`load_index`).

    Raises:
        LcevalError: the markers are missing or out of order.
    """
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        raise LcevalError(f"README has no {README_START} ... {README_END} markers")
    table = to_markdown(load_index() if frame is None else frame)
    return readme[: start + len(README_START)] + "\n" + table + "\n" + readme[end:]


def write_readme(path: str | Path | None = None) -> Path:
    """Rewrite the index table in README.md (default: the repository's) in place."""
    path = Path(path) if path is not None else Path(__file__).resolve().parents[2] / "README.md"
    text = readme_section(path.read_text(encoding="utf-8"))
    with atomic_open(path) as f:
        f.write(text)
    return path


if __name__ == "__main__":  # pragma: no cover - `python -m lceval.report.reproduction`
    print(write_readme())
