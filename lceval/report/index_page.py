"""``report/index.html``, laid out like a paper's results section: the headline numbers with
CIs and the published range and what the run covers (:mod:`lceval.coverage`) first, then each
paper table and figure with its caption, the checks, the reproduction index rows of the run's
benchmarks (:mod:`lceval.report.reproduction`), the provenance as tables and the executed notebooks
rendered as HTML; and the short summary ``lceval report`` prints.

Written by the report stage (``lceval.report.report``), after each notebook
(``lceval.cli.notebooks``) and by studies that write their own run folder (the NTK sweep).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from lceval.io import atomic_open

THIS_RUN = "this run"
"""The ``source`` of a run's own rows (``lceval.reporting.THIS_RUN``; not imported from there,
which loads matplotlib)."""


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1320px;padding:0 1em;"
    "line-height:1.35}"
    "table{border-collapse:collapse;font-size:13px;margin:.3em 0 .4em}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;vertical-align:top}"
    "th{background:#f3f3f3}td.l,th.l{text-align:left}td.l{white-space:nowrap}"
    "td.w{white-space:normal;min-width:24em;max-width:40em}"
    "tr.run td{font-weight:bold;background:#fff3b0}"
    ".wide{overflow-x:auto;max-width:100%}"
    "img{max-width:min(100%,900px);border:1px solid #eee;margin:.3em 0}"
    "code{background:#f6f6f6}h2{border-bottom:1px solid #ddd;margin-top:1.4em}"
    "figure{margin:0 0 1.2em}figcaption,caption{caption-side:top;text-align:left;"
    "font-size:14px;color:#333;padding:.2em 0}figcaption b,caption b{color:#000}"
    ".subset{background:#fff0e0;border-left:5px solid #e07000;padding:.5em .8em;margin:.6em 0}"
    ".grid{background:#eaf6ea;border-left:5px solid #2a8a2a;padding:.5em .8em;margin:.6em 0}"
    "table.headline{font-size:15px}table.headline td{padding:4px 8px}"
    "table.provenance td{text-align:left;max-width:900px;overflow-wrap:anywhere}"
    "table.reproduction td{max-width:22em;overflow-wrap:anywhere}"
)


def write_index(run: Any) -> Path:
    """Write ``report/index.html``, laid out like a paper's results section.

    From the top: the headline numbers (each benchmark's headline metric per model, with its 95%
    bootstrap CI, n, the published range beside it, and what the run covers,
    :mod:`lceval.coverage`: a run that is not the paper's grid is labelled "not comparable to
    the paper" in the first screen); links to samples.html, compare.html and results.json; then
    per benchmark each table and figure under its paper item (Table 3, Fig. 2, ...) with a
    one-line caption (the benchmark report module's ``CAPTIONS``: what the numbers are, unit,
    which direction is better, what is beside them), the run's rows highlighted; then the checks
    of published numbers; the reproduction index rows of the run's benchmarks
    (:mod:`lceval.report.reproduction`); the provenance as a table (generation settings, engine,
    coverage, data sources with sha256, versions); the executed notebooks rendered as HTML.

    Built from what the run folder holds (run.json, ``report/*.csv``, ``report/results.json``,
    ``report/figures/*.png``, the same under ``report/<key>-<variant>/`` for a non-default
    scorer's report, ``notebooks/*.ipynb``), so it can be rewritten after each stage.

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
    from lceval.coverage import run_coverage

    covs = run_coverage(run)
    heads = headline_rows(report, covs)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>lceval run {esc(str(run.run_id))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Results of run <code>{esc(str(run.run_id))}</code></h1>",
        _headline_html(heads, covs, _study_headline(report)),
        _page_links(report),
    ]
    # report/*.csv; report/<key>/*.csv (RULER, L-Eval, CIF-Bench write their tables there);
    # report/<key>-<variant>/ (a non-default scorer's report, lceval.report.report)
    csvs = [*sorted(report.glob("*.csv")), *sorted(report.glob("*/*.csv"))]
    figures = Path(run.figures)
    pngs = sorted(figures.glob("*.png")) if figures.exists() else []
    pngs += sorted(report.glob("*-*/figures/*.png"))
    keys = sorted({c.benchmark for c in covs} | {_bench_of(p, report) for p in [*csvs, *pngs]})
    checks: list[str] = []
    for key in keys:
        captions = _captions(key)
        title = _bench_title(key)
        mine_csv = [p for p in csvs if _bench_of(p, report) == key]
        mine_png = [p for p in pngs if _bench_of(p, report) == key]
        if not (mine_csv or mine_png):
            continue
        items: list[tuple[tuple[int, int, str], str]] = []  # (sort key, html)
        for csv in mine_csv:
            name = csv.relative_to(report).with_suffix("").as_posix()
            item, caption = captions.get(name, captions.get(csv.stem, ("", "")))
            block = _table_html(csv, name, item, caption)
            if block is None:
                continue
            if item == "Check":
                checks.append(block)
            else:
                items.append((_order(item), block))
        for png in mine_png:
            items.append(
                (
                    _order(captions.get(png.stem, ("", ""))[0]),
                    _figure_html(png, report, *captions.get(png.stem, ("", ""))),
                )
            )
        parts.append(f"<h2 id='{esc(key)}'>{esc(title)}</h2>")
        parts += [b for _, b in sorted(items, key=lambda x: x[0])]
    if checks:
        parts.append(
            "<h2 id='checks'>Checks of the published numbers</h2><p>Each paper's printed "
            "numbers recomputed from its own inputs or the official result files, before this "
            "run's numbers are put beside them: <i>exact</i> agrees at the printed precision, "
            "<i>rounding</i> differs only by the rounding of the printed inputs, <i>DIFFERS</i> "
            "is a real disagreement in the paper, explained per row.</p>"
        )
        parts += checks
    parts.append(_reproduction_section(run))
    parts.append(_provenance_html(meta, covs))
    parts.append("<h2 id='notebooks'>Executed notebooks</h2><ul>")
    for nb in _render_notebooks(run, report):
        parts.append(f"<li><a href='notebooks/{esc(nb.name)}'>{esc(nb.stem)}</a></li>")
    parts.append("</ul></body></html>")
    path = report / "index.html"
    with atomic_open(path) as f:
        f.write("\n".join(parts))
    return path


def _bench_of(path: Path, report: Path) -> str:
    """The benchmark key a report file belongs to: its folder under report/ (``ruler/`` or
    ``lifbench-strict/``), else its name's prefix (``lifbench_table3_ars`` -> ``lifbench``)."""
    rel = path.relative_to(report).parts
    if len(rel) > 1 and rel[0] not in ("figures", "notebooks", "contexts"):
        return rel[0].split("-", 1)[0]
    return path.stem.split("_", 1)[0].split("-", 1)[0]


def _bench_title(key: str) -> str:
    from lceval import registry

    try:
        return str(registry.get(key).title)
    except Exception:  # noqa: BLE001 - files of a benchmark this lceval does not know
        return key


_NOT_BENCHMARKS = {
    "ntk": "lceval.studies.ntk",
    "reasoning": "lceval.report.reasoning",
    "context": "lceval.report.context",
    "correlation": "lceval.studies.ruler_correlation",
}
"""Report files of a study or of lceval's own analyses (file prefix -> module declaring their
``CAPTIONS``): the NTK base sweep's tables, LongGenBench's RULER correlation study, the
reasoning table and figure, and the context baselines' table."""


def _captions(key: str) -> dict[str, tuple[str, str]]:
    """``CAPTIONS`` of the benchmark's report module (``name -> (paper item, caption)``)."""
    import importlib

    from lceval import registry

    try:
        if key in _NOT_BENCHMARKS:
            module = importlib.import_module(_NOT_BENCHMARKS[key])
        else:
            target = registry.get(key).report.__qualname__
            module = importlib.import_module(str(target).split(":", 1)[0])
    except Exception:  # noqa: BLE001 - no report module: no captions
        return {}
    return dict(getattr(module, "CAPTIONS", {}))


def _order(item: str) -> tuple[int, int, str]:
    """Sort key: Headline first, then Tables, Figures, sections, in their numbers' order."""
    import re

    kinds = {"Headline": 0, "Table": 1, "Fig.": 2, "Sec.": 3}
    m = re.match(r"(Headline|Table|Fig\.|Sec\.)\s*(\d*)", item)
    if not m:
        return (4, 0, item)
    return (kinds[m.group(1)], int(m.group(2) or 0), item)


def _default_caption(name: str) -> str:
    return f"{name.split('/')[-1]} (report/{name}.csv); no caption declared for this table."


def _table_html(csv: Path, name: str, item: str, caption: str) -> str | None:
    """One report CSV as a captioned HTML table: a stray pandas index (an unnamed 0..n-1 first
    column) dropped, the run's rows (``source == this run``) highlighted, text columns left."""
    import html

    try:
        df = pd.read_csv(csv)
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    if len(df.columns) and str(df.columns[0]).startswith("Unnamed"):
        first = df[df.columns[0]]
        if pd.api.types.is_integer_dtype(first) and list(first) == list(range(len(df))):
            df = df.drop(columns=df.columns[0])
        else:
            df = df.rename(columns={df.columns[0]: ""})
    esc = html.escape
    text_cols = {c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])}
    head = "".join(
        f"<th class='l'>{esc(str(c))}</th>" if c in text_cols else f"<th>{esc(str(c))}</th>"
        for c in df.columns
    )
    body = []
    run_rows = 0
    for row in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            if isinstance(v, float):
                txt = "" if v != v else f"{v:.4g}"
            else:
                txt = str(v)
            cls = (" class='l w'" if len(txt) > 60 else " class='l'") if c in text_cols else ""
            cells.append(f"<td{cls}>{esc(txt)}</td>")
        mine = "source" in df.columns and str(row[list(df.columns).index("source")]) == THIS_RUN
        run_rows += mine
        body.append(f"<tr{' class=run' if mine else ''}>{''.join(cells)}</tr>")
    label = f"<b>{esc(item)}.</b> " if item and item != "Check" else ""
    text = caption or _default_caption(name)
    cap = f"<figcaption>{label}{esc(text)} <code>{esc(name)}.csv</code></figcaption>"
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    if len(df) > 30:  # long audit tables fold away; the headline tables stay open
        table = f"<details><summary>{len(df)} rows</summary>{table}</details>"
    # a figure's caption spans the page (a <caption> would wrap to a narrow table's width)
    return f"<figure class='tbl'>{cap}<div class='wide'>{table}</div></figure>"


def _figure_html(png: Path, report: Path, item: str, caption: str) -> str:
    import html

    esc = html.escape
    rel = png.relative_to(report).as_posix()
    pdf = png.with_suffix(".pdf")
    link = f" (<a href='{esc(pdf.relative_to(report).as_posix())}'>PDF</a>)" if pdf.exists() else ""
    label = f"<b>{esc(item)}.</b> " if item else ""
    text = caption or f"{png.stem}; no caption declared for this figure."
    return (
        f"<figure><figcaption>{label}{esc(text)}{link}</figcaption>"
        f"<img src='{esc(rel)}' alt='{esc(png.stem)}'></figure>"
    )


def headline_rows(report: Path, covs: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The headline numbers of a report folder: one row per benchmark, scorer and model from
    ``results.json`` (metric, estimate, 95% CI, n), with the published range of that metric
    (lowest and highest published row of a report table holding the metric beside a ``source``
    column) and the model's coverage (:class:`lceval.coverage.Coverage`).

    Returns:
        Dicts with benchmark, scorer, model, metric, unit, estimate, low, high, n,
        published_low, published_high, published_n, coverage (or None), comparable (bool).
    """
    import json

    try:
        doc = json.loads((report / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    by = {(c.benchmark, c.model): c for c in covs}
    out = []
    for h in doc.get("headlines", []):
        metric = str(h.get("metric", ""))
        lo, hi, n = _published_range(report, str(h.get("benchmark")), metric)
        model = str(h.get("model"))
        cov = by.get((h.get("benchmark"), model.split("@", 1)[0]))
        out.append(
            {
                **h,
                "published_low": lo,
                "published_high": hi,
                "published_n": n,
                "coverage": cov,
                "comparable": bool(cov.paper_grid) if cov is not None else True,
            }
        )
    return out


def _published_range(report: Path, key: str, metric: str) -> tuple[float | None, float | None, int]:
    """Lowest and highest published value of ``metric`` (its name before `` (``) in a report
    table of ``key`` with a ``source`` column), and how many published rows hold it."""
    column = metric.split(" (", 1)[0]
    for csv in sorted(report.glob(f"{key}_*.csv")):
        try:
            df = pd.read_csv(csv)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        if "source" not in df.columns or column not in df.columns:
            continue
        pub = pd.to_numeric(
            df.loc[df["source"].astype(str).str.startswith("published"), column], errors="coerce"
        ).dropna()
        if len(pub):
            return float(pub.min()), float(pub.max()), int(len(pub))
    return None, None, 0


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):.3f}"


_UNRANKED = ". Its rows sit beside the published ones unranked."


def _scorer_note(h: Mapping[str, Any]) -> str:
    """``, scorer KEY:VARIANT`` for a headline of a non-default scorer; else empty."""
    scorer = str(h.get("scorer") or "")
    return "" if scorer in ("", str(h.get("benchmark"))) else f", scorer {scorer}"


def _cut_note(h: Mapping[str, Any], cov: Any) -> str:
    """``; 25 of 44 answers cut at 64 tokens (over 5%: flagged); over the 19 finished: 0.41``
    for a headline row whose answers the budget ended; empty otherwise."""
    if cov is None or not getattr(cov, "cut_at_budget", 0):
        return ""
    text = f"; {cov.cut_line()}"
    if cov.cut_flag:
        text += " (over 5%: FLAGGED)"
    if h.get("n_finished"):
        text += f"; over the {h['n_finished']} finished: {_fmt(h.get('estimate_finished'))}"
    elif h.get("n_cut"):
        text += "; none finished"
    return text


def _study_headline(report: Path) -> str:
    """A study run's headline (``report/<study>/headline.csv``, e.g. the RULER-LongGenBench
    correlation with its CI) as the first screen's table; empty when the run has none."""
    for key in _NOT_BENCHMARKS:
        csv = report / key / "headline.csv"
        if csv.is_file():
            caption = _captions(key).get(f"{key}/headline", ("Headline", ""))[1]
            return _table_html(csv, "headline", f"{key}/headline", caption) or ""
    return ""


def _headline_html(heads: Sequence[Mapping[str, Any]], covs: Sequence[Any], study: str = "") -> str:
    """The first screen: headline table and the coverage of each benchmark and model; for a
    study run without scores, the study's own headline table (``study``, HTML)."""
    import html

    esc = html.escape
    parts = ["<h2 id='headline'>Headline</h2>"]
    for c in covs:
        cls = "grid" if c.paper_grid else "subset"
        lead = "Paper's grid" if c.paper_grid else "Not comparable to the paper"
        if c.demo:
            lead = "Demo data, not comparable to the paper"
        parts.append(
            f"<div class='{cls}'><b>{esc(lead)}</b> ({esc(c.benchmark)}, {esc(c.model)}): "
            f"{esc(c.label)}{'' if c.paper_grid else _UNRANKED}</div>"
        )
    if not heads and study:
        parts.append(study)
        return "\n".join(parts)
    if not heads:
        parts.append("<p>No headline yet: score the run (<code>lceval score RUN</code>).</p>")
        return "\n".join(parts)
    rows = [
        "<figure class='tbl'><figcaption>Each benchmark's headline metric per model with its "
        "95% bootstrap CI and n scored samples, beside the range the paper publishes for its "
        "models.</figcaption><div class='wide'><table class='headline'><thead><tr>"
        "<th class='l'>benchmark</th><th class='l'>model</th>"
        "<th class='l'>metric</th><th>estimate [95% CI]</th><th>n</th>"
        "<th>published range</th><th class='l'>coverage</th></tr></thead><tbody>"
    ]
    for h in heads:
        ci = f"{_fmt(h['estimate'])} [{_fmt(h.get('low'))}, {_fmt(h.get('high'))}]"
        pub = (
            f"{_fmt(h['published_low'])}-{_fmt(h['published_high'])} ({h['published_n']} models)"
            if h.get("published_n")
            else "none in the report"
        )
        cov = h.get("coverage")
        what = (
            "paper's grid"
            if cov is not None and cov.paper_grid
            else (
                f"{'demo data' if cov.demo else 'subset'} ({cov.answered} of {cov.built} "
                "answered): not comparable"
                if cov is not None
                else "unknown"
            )
        )
        what += _cut_note(h, cov)
        rows.append(
            f"<tr><td class='l'>{esc(str(h['benchmark']))}</td><td class='l'>"
            f"{esc(str(h['model']))}</td><td class='l'>{esc(str(h['metric']))} "
            f"({esc(str(h.get('unit', '')))}){esc(_scorer_note(h))}</td>"
            f"<td>{esc(ci)}</td><td>{h.get('n')}</td>"
            f"<td>{esc(pub)}</td><td class='l'>{esc(what)}</td></tr>"
        )
    rows.append("</tbody></table></div></figure>")
    return "\n".join(parts + rows)


def _provenance_html(meta: Mapping[str, Any], covs: Sequence[Any]) -> str:
    """Provenance as readable tables: run, generation settings per model, coverage, data
    sources (name, package or path, sha256), versions."""
    import html

    esc = html.escape

    def table(caption: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
        head = "".join(f"<th class='l'>{esc(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{esc('' if v is None else str(v))}</td>" for v in r) + "</tr>"
            for r in rows
        )
        return (
            f"<figure class='tbl'><figcaption>{esc(caption)}</figcaption><div class='wide'>"
            f"<table class='provenance'><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div></figure>"
        )

    out = ["<h2 id='provenance'>Provenance</h2>"]
    out.append(
        table(
            "The run: when and from which code it was made.",
            ("field", "value"),
            [
                ("created", meta.get("created")),
                ("git commit", meta.get("git_commit")),
                ("seed", meta.get("seed")),
                ("tokenizer for data lengths", meta.get("encoding")),
            ],
        )
    )
    models = []
    for name, info in (meta.get("models") or {}).items():
        info = info or {}
        gen = info.get("generation") or {}
        models.append(
            (
                name,
                info.get("backend"),
                info.get("dtype"),
                info.get("device"),
                info.get("window"),
                info.get("prompt_format"),
                gen.get("max_new_tokens") or "each sample's own",
                gen.get("temperature"),
                gen.get("seed"),
                info.get("config_hash"),
            )
        )
    if models:
        out.append(
            table(
                "Generation settings per model: engine, dtype, device, window (tokens), prompt "
                "format, answer budget cap (new tokens), temperature, seed, config hash.",
                (
                    "model",
                    "engine",
                    "dtype",
                    "device",
                    "window",
                    "prompt format",
                    "max new tokens",
                    "temperature",
                    "seed",
                    "config hash",
                ),
                models,
            )
        )
    if covs:
        out.append(
            table(
                "Coverage: samples answered of built, tasks, lengths, truncation (contexts cut to "
                "the window, tokens cut) and whether that is the paper's grid.",
                (
                    "benchmark",
                    "model",
                    "answered",
                    "tasks",
                    "lengths",
                    "budget cap",
                    "truncated (tokens cut)",
                    "paper's grid",
                ),
                [
                    (
                        c.benchmark,
                        c.model,
                        f"{c.answered} of {c.built}",
                        f"{len(c.tasks_answered)} of {c.tasks_paper or len(c.tasks_built)}",
                        ", ".join(c.lengths),
                        c.budget or "each sample's own",
                        f"{c.truncated} ({c.tokens_cut:,})",
                        "yes" if c.paper_grid else "no: " + "; ".join(c.param_gaps or ("subset",)),
                    )
                    for c in covs
                ],
            )
        )
    sources = []
    for bench, srcs in (meta.get("sources") or {}).items():
        for name, src in (srcs or {}).items() if isinstance(srcs, Mapping) else []:
            src = src if isinstance(src, Mapping) else {"value": src}
            where = (
                f"{src['package']} {src.get('version', '')}".strip()
                if src.get("package")
                else src.get("path") or src.get("name") or ""
            )
            extra = {
                k: v
                for k, v in src.items()
                if k not in ("name", "path", "package", "version", "sha256")
            }
            sources.append(
                (
                    bench,
                    name,
                    where,
                    src.get("sha256", ""),
                    ", ".join(f"{k}={v}" for k, v in extra.items()),
                )
            )
    if sources:
        out.append(
            table(
                "Data sources: what each benchmark's samples were built from, with the file's "
                "sha256 where it is a file.",
                ("benchmark", "source", "package or path", "sha256", "details"),
                sources,
            )
        )
    versions = list((meta.get("versions") or {}).items())
    if versions:
        out.append(
            table("Versions of lceval and its key libraries.", ("package", "version"), versions)
        )
    return "\n".join(out)


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
    """The reproduction index rows of the run's benchmarks (:mod:`lceval.report.reproduction`) as
    HTML;
    empty when the run has no samples or its benchmarks list no items."""
    from lceval.errors import LcevalError
    from lceval.report.reproduction import load_index, to_html

    try:
        keys = sorted({s.benchmark for s in run.read_samples()})
        rows = load_index(keys)
    except LcevalError:
        return ""
    if not len(rows):
        return ""
    caption = (
        "<figcaption>Every numbered table and figure of the run's papers: status (reproduced, "
        "recomputed, partial, not_reproducible), what it comes from, where lceval makes it, the "
        "test that checks it, or why it cannot be reproduced.</figcaption>"
    )
    page = to_html(rows).replace(
        "<table class='reproduction'>",
        f"<figure class='tbl'>{caption}<div class='wide'><table class='reproduction'>",
    )
    return page.replace("</table>", "</table></div></figure>")


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


def report_summary(run: Any, tables: Mapping[str, pd.DataFrame]) -> str:
    """What ``lceval report RUN`` prints: the headline per benchmark and model (estimate, 95%
    CI, n, published range), what the run covers, how many tables and figures were written, and
    the path of index.html; under 30 lines for up to a handful of models.

    Args:
        run: a ``lceval.io.RunDir`` whose report was just written.
        tables: the tables ``lceval.report.report`` returned (counted, not printed).
    """
    from lceval.coverage import run_coverage

    report = Path(run.report)
    covs = run_coverage(run)
    read = getattr(tables, "scorers", None)  # the scorers this report read, per benchmark
    heads = [
        h
        for h in headline_rows(report, covs)
        if not read or h.get("scorer") in read.get(h.get("benchmark"), (h.get("scorer"),))
    ]
    lines = []
    for h in heads[:12]:
        pub = (
            f"; published {_fmt(h['published_low'])}-{_fmt(h['published_high'])} "
            f"({h['published_n']} models)"
            if h.get("published_n")
            else ""
        )
        flag = "" if h["comparable"] else " [subset: not comparable, not ranked]"
        scorer = "" if h.get("scorer") == h["benchmark"] else f" ({h.get('scorer')})"
        lines.append(
            f"{h['benchmark']}{scorer} {h['model']}: {h['metric']} {_fmt(h['estimate'])} "
            f"[{_fmt(h.get('low'))}, {_fmt(h.get('high'))}] n={h.get('n')}{pub}{flag}"
        )
    if len(heads) > 12:
        lines.append(f"... {len(heads) - 12} more headline rows in {report / 'results.json'}")
    for c in covs[:8]:
        if not c.paper_grid or c.cut_flag:
            lines.append(f"  coverage {c.line()}")
    figures = Path(run.figures)
    n_fig = len(list(figures.glob("*.png"))) if figures.exists() else 0
    lines.append(f"{len(tables)} tables (report/*.csv), {n_fig} figures (report/figures/)")
    lines.append(f"report: {report / 'index.html'}")
    return "\n".join(lines)
