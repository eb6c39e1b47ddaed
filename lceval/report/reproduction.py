"""The reproduction index: every numbered table and figure of the papers, where lceval makes it,
from what, the test that checks it, or why it cannot be reproduced offline; read from each
``lceval/benchmarks/<key>/reproduction.yaml`` (checked against :data:`SCHEMA`), shown in
docs/reproduction.md (``python -m lceval.report.reproduction`` rewrites it) and each report's
index.html (``templates/reproduction.html.j2``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError, one_line
from lceval.core.io import atomic_open

REPRODUCTION_COLUMNS = ("paper", "item", "caption", "status", "from", "where", "test", "why")
COLUMNS = ("benchmark", *REPRODUCTION_COLUMNS)  # benchmark: the folder the item was read from

README_START = "<!-- reproduction-index:start -->"
README_END = "<!-- reproduction-index:end -->"

SCHEMA: dict[str, Any] = json.loads(  # of one item
    resources.files("lceval").joinpath("schemas/reproduction.schema.json").read_text("utf-8")
)
STATUSES = tuple(SCHEMA["properties"]["status"]["enum"])

_BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def schema_error(schema: dict[str, Any], doc: Any, *, top: str) -> tuple[str, str] | None:
    """The most relevant way ``doc`` breaks the JSON Schema ``schema`` (draft 2020-12,
    jsonschema's ``best_match``) as ``(where, why)``: the failing field's path joined with "/"
    (``top`` for the document itself) and the reason on one line; None when ``doc`` is valid.
    The one form of a schema error in lceval's messages (results.json, reproduction.yaml)."""
    import jsonschema  # heavy: its format checkers compile grammars (seconds); reports only

    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is None:
        return None
    return "/".join(str(p) for p in error.absolute_path) or top, one_line(error.message)


def read_file(path: str | Path) -> list[dict[str, Any]]:
    """Items of one ``reproduction.yaml``, each checked against :data:`SCHEMA`;
    :class:`LcevalError` when unreadable, not a YAML list, or an item breaks the schema."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LcevalError(f"{path}: cannot read the reproduction index: {reason}") from None
    if not isinstance(data, list):
        raise LcevalError(f"{path}: the reproduction index must be a YAML list of items")
    for i, entry in enumerate(data):
        error = schema_error(SCHEMA, entry, top="item")
        if error is not None:
            name = f"item {i + 1}"
            if isinstance(entry, dict) and entry.get("item"):
                name += f" ({entry.get('paper', '?')} {entry['item']})"
            raise LcevalError(f"{path}: {name}: {error[0]}: {error[1]}")
    return [dict(e) for e in data]


def item_order(item: str) -> tuple[int, int, str]:
    """Sort key of a paper item ("Headline", "Table 3", "Fig. 3b", "Sec. 4", else a heading):
    Headline first, then Tables, Figures, sections by number, then the rest by name; the one
    order of the reproduction index and of each report's index.html."""
    m = re.match(r"(Headline|Table|Fig\.|Sec\.)\s*(\d*)", item)
    if not m:
        return (4, 0, item)
    return (_KINDS[m.group(1)], int(m.group(2) or 0), item)


_KINDS = {"Headline": 0, "Table": 1, "Fig.": 2, "Sec.": 3}


def load_index(keys: Iterable[str] | None = None) -> pd.DataFrame:
    """Every item of the reproduction indexes of ``keys`` (default: every benchmark), one row
    each (:data:`COLUMNS`), by paper, then :func:`item_order`; :class:`LcevalError`
    for an item breaking :data:`SCHEMA` or a (paper, item) listed twice."""
    paths = [
        _BENCHMARKS / k / "reproduction.yaml"
        for k in (registry.BENCHMARKS if keys is None else keys)
    ]
    rows = [{"benchmark": p.parent.name, **e} for p in paths if p.is_file() for e in read_file(p)]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    seen = frame.duplicated(["paper", "item"], keep="first")
    if seen.any():
        row = frame[seen].iloc[0]
        raise LcevalError(
            f"{_BENCHMARKS / row['benchmark'] / 'reproduction.yaml'}: "
            f"{row['paper']} {row['item']} is listed twice in the reproduction index"
        )
    frame = frame.astype(object).where(frame.notna(), None)
    key = frame["item"].map(item_order)
    frame = frame.assign(_k=key).sort_values(["paper", "_k"], kind="stable").drop(columns="_k")
    return frame.reset_index(drop=True)


def _cell(value: Any) -> str:
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def to_markdown(frame: pd.DataFrame) -> str:
    """The index as one GitHub Markdown table (test and why in one column)."""
    head = ["paper", "item", "caption", "status", "from", "where", "test / why"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in frame.to_dict("records"):
        note = " ".join(x for x in (r["test"] and f"`{r['test']}`", r["why"]) if x)
        where = f"`{r['where']}`" if r["where"] else ""
        cells = [r["paper"], r["item"], r["caption"], r["status"], r["from"], where, note]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def readme_section(readme: str, frame: pd.DataFrame | None = None) -> str:
    """``readme`` with :func:`to_markdown` of ``frame`` (default :func:`load_index`) between
    :data:`README_START` and :data:`README_END`; :class:`LcevalError` without the markers."""
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        raise LcevalError(f"README has no {README_START} ... {README_END} markers")
    table = to_markdown(load_index() if frame is None else frame)
    return readme[: start + len(README_START)] + "\n" + table + "\n" + readme[end:]


def write_readme(path: str | Path | None = None) -> Path:
    """Rewrite the index table of a Markdown page in place (default: the repository's
    docs/reproduction.md, the documentation site's reproduction index) and return its path."""
    root = Path(__file__).resolve().parents[2]
    path = Path(path) if path is not None else root / "docs" / "reproduction.md"
    text = readme_section(path.read_text(encoding="utf-8"))
    with atomic_open(path) as f:
        f.write(text)
    return path


if __name__ == "__main__":  # pragma: no cover - `python -m lceval.report.reproduction`
    print(write_readme())
