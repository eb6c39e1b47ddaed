"""``report/index.html``: one page per run folder with links to the per-sample pages and
results.json, the run's provenance, every table and figure, the reproduction index rows of its
benchmarks (:mod:`lceval.reproduction`) and the executed notebooks rendered as HTML.

Written by the report stage (``lceval.pipeline.report``), after each notebook
(``lceval.notebooks``) and by studies that write their own run folder (the NTK sweep).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from lceval.io import atomic_open


def write_index(run: Any) -> Path:
    """Write ``report/index.html``: links to samples.html, compare.html and results.json (when
    the report holds them), the run's provenance, every table and figure, the reproduction index
    rows of the run's benchmarks (:mod:`lceval.reproduction`), and the executed notebooks rendered
    as HTML (nbconvert), so a person can open one file.

    Built from what the run folder holds (run.json, ``report/*.csv``, ``report/figures/*.png``,
    the same under ``report/<key>-<variant>/`` for a non-default scorer's report,
    ``notebooks/*.ipynb``), so it can be rewritten after each stage. Images are linked relative to
    the report folder; notebooks are rendered to ``report/notebooks/<name>.html``.

    Args:
        run: a ``lceval.io.RunDir``.

    Returns:
        The path of index.html.
    """
    import html
    import json

    report = Path(run.report)
    report.mkdir(parents=True, exist_ok=True)
    esc = html.escape
    try:
        meta = json.loads(Path(run.run_json).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>lceval run {esc(str(run.run_id))}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}"
        "table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee;margin:.5em 0}"
        "code{background:#f6f6f6}h2{border-bottom:1px solid #ddd}</style></head><body>",
        f"<h1>lceval run <code>{esc(str(run.run_id))}</code></h1>",
        _page_links(report),
        "<h2 id='provenance'>Provenance</h2><table class='provenance'>",
    ]
    rows = [
        ("created", meta.get("created")),
        ("git commit", meta.get("git_commit")),
        ("seed", meta.get("seed")),
        ("encoding", meta.get("encoding")),
    ]
    for name, info in (meta.get("models") or {}).items():
        info = info or {}
        engine = info.get("backend", "?")
        extra = ", ".join(
            f"{k}={info[k]}" for k in ("dtype", "device", "prompt_format", "window") if k in info
        )
        rows.append((f"model {name}", f"{engine} ({extra})" if extra else engine))
    for bench, srcs in (meta.get("sources") or {}).items():
        rows.append((f"data {bench}", json.dumps(srcs, ensure_ascii=False)[:600]))
    for pkg, ver in (meta.get("versions") or {}).items():
        rows.append((f"version {pkg}", ver))
    parts += [f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in rows]
    parts.append("</table>")
    parts.append("<h2 id='tables'>Tables</h2>")
    # report/<key>-<variant>/: a non-default scorer's report (lceval.pipeline.report)
    for csv in [*sorted(report.glob("*.csv")), *sorted(report.glob("*-*/*.csv"))]:
        try:
            df = pd.read_csv(csv)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        if len(df.columns) and str(df.columns[0]).startswith("Unnamed"):
            df = df.rename(columns={df.columns[0]: ""})
        table = df.to_html(index=False, na_rep="NaN", float_format=lambda x: f"{x:.4g}")
        if len(df) > 30:  # long audit tables fold away; the headline tables stay open
            table = f"<details><summary>{len(df)} rows</summary>{table}</details>"
        name = csv.relative_to(report).with_suffix("").as_posix()
        parts.append(f"<h3>{esc(name)}</h3>{table}")
    parts.append("<h2 id='figures'>Figures</h2>")
    figures = Path(run.figures)
    pngs = sorted(figures.glob("*.png")) if figures.exists() else []
    for png in [*pngs, *sorted(report.glob("*-*/figures/*.png"))]:
        rel = png.relative_to(report).as_posix()
        pdf = png.with_suffix(".pdf")
        link = (
            f" (<a href='{esc(pdf.relative_to(report).as_posix())}'>PDF</a>)"
            if pdf.exists()
            else ""
        )
        parts.append(f"<h3>{esc(png.stem)}{link}</h3><img src='{esc(rel)}' alt='{esc(png.stem)}'>")
    parts.append(_reproduction_section(run))
    parts.append("<h2 id='notebooks'>Executed notebooks</h2><ul>")
    for nb in _render_notebooks(run, report):
        parts.append(f"<li><a href='notebooks/{esc(nb.name)}'>{esc(nb.stem)}</a></li>")
    parts.append("</ul></body></html>")
    path = report / "index.html"
    with atomic_open(path) as f:
        f.write("\n".join(parts))
    return path


_PAGES = (
    ("samples.html", "Every answer: one row per (sample, model, scorer), searchable"),
    ("compare.html", "Two models side by side, with the paired difference"),
    ("results.json", "Headline numbers with CIs and the provenance, as JSON (results.schema.json)"),
)


def _page_links(report: Path) -> str:
    """Links to the per-sample pages and results.json that the report folder holds."""
    items = [
        f"<li><a href='{name}'>{name}</a>: {what}</li>"
        for name, what in _PAGES
        if (report / name).exists()
    ]
    return f"<ul class='pages'>{''.join(items)}</ul>" if items else ""


def _reproduction_section(run: Any) -> str:
    """The reproduction index rows of the run's benchmarks (:mod:`lceval.reproduction`) as HTML;
    empty when the run has no samples or its benchmarks list no items."""
    from lceval.errors import LcevalError
    from lceval.reproduction import load_index, to_html

    try:
        keys = sorted({s.benchmark for s in run.read_samples()})
        rows = load_index(keys)
    except LcevalError:
        return ""
    return to_html(rows) if len(rows) else ""


def _render_notebooks(run: Any, report: Path) -> list[Path]:
    """Executed notebooks of the run as HTML under ``report/notebooks/`` (nbconvert)."""
    folder = Path(run.notebooks)
    out: list[Path] = []
    if not folder.exists():
        return out
    sources = [p for p in sorted(folder.glob("*.ipynb")) if not p.name.startswith(".")]
    if not sources:
        return out
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter()
    for src in sources:
        dst = report / "notebooks" / f"{src.stem}.html"
        if dst.exists() and dst.stat().st_mtime >= src.stat().st_mtime:
            out.append(dst)
            continue
        try:
            body, _ = exporter.from_notebook_node(nbformat.read(src, as_version=4))
        except Exception:  # noqa: BLE001 - a notebook that cannot render is left out, not fatal
            continue
        with atomic_open(dst) as f:
            f.write(body)
        out.append(dst)
    return out
