"""mkdocs hooks of the documentation site (mkdocs.yml `hooks:`): tables generated from the
repository's own data at build time, so a page never holds a stale copy.

- `<!-- reproduction: PAPER -->` becomes that paper's rows of the reproduction index
  (`lceval.report.reproduction.load_index`, the same rows as docs/reproduction.md).
- `<!-- csv: PATH -->` becomes the CSV file at PATH (relative to the repository root) as a
  Markdown table: the published numbers lceval ships.
- Sphinx roles of docstrings (``:func:`x```) are shown as the name alone.
- `docs/fidelity.md` (the fidelity table) is optional until it lands: while it is absent, its nav
  entry is dropped and links to it are shown as their text, so the build stays free of warnings.
"""

from __future__ import annotations

import csv
import logging
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
log = logging.getLogger("mkdocs.hooks.lceval")
OPTIONAL = "fidelity.md"


def _optional_present(config: Any) -> bool:
    return (Path(config["docs_dir"]) / OPTIONAL).is_file()


def _drop(nav: list[Any]) -> list[Any]:
    kept = []
    for item in nav:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if value == OPTIONAL:
                continue
            if isinstance(value, list):
                item = {title: _drop(value)}
        kept.append(item)
    return kept


def on_config(config: Any) -> Any:
    if not _optional_present(config):
        log.info("docs/%s is not there yet: its nav entry and links are left out", OPTIONAL)
        config["nav"] = _drop(config["nav"])
    return config


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def csv_table(path: str) -> str:
    """The CSV file at ``path`` (relative to the repository root) as a Markdown table."""
    with open(REPO / path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    lines = ["| " + " | ".join(map(_cell, head)) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(map(_cell, r)) + " |" for r in body]
    return "\n".join(lines) + f"\n\n<small>Source: `{path}`</small>"


def reproduction_rows(paper: str) -> str:
    """``paper``'s rows of the reproduction index (the columns of docs/reproduction.md less the
    paper and the source)."""
    from lceval.report.reproduction import load_index

    index = load_index()
    rows = index[index["paper"] == paper]
    if rows.empty:
        raise ValueError(f"no reproduction rows for paper {paper!r}")
    lines = ["| item | caption | status | where | test / why |", "|---|---|---|---|---|"]
    for r in rows.to_dict("records"):
        note = " ".join(x for x in (r["test"] and f"`{r['test']}`", r["why"]) if x)
        where = f"`{r['where']}`" if r["where"] else ""
        cells = (r["item"], r["caption"], f"{r['status']} ({r['from']})", where, note)
        lines.append("| " + " | ".join(_cell(str(c or "")) for c in cells) + " |")
    return "\n".join(lines)


SPHINX_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const):(?=<code)")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Docstrings cite with Sphinx roles (``:func:`x```); the API reference shows the name."""
    return SPHINX_ROLE.sub("", html)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = re.sub(
        r"<!-- reproduction: (.+?) -->", lambda m: reproduction_rows(m.group(1)), markdown
    )
    markdown = re.sub(r"<!-- csv: (\S+) -->", lambda m: csv_table(m.group(1)), markdown)
    if not _optional_present(config):
        link = r"\[([^\]]+)\]\((?:\.\./)?" + re.escape(OPTIONAL) + r"(?:#[^)]*)?\)"
        markdown = re.sub(link, r"\1", markdown)
    return markdown
