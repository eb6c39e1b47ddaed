"""``report/index.html``, laid out like a paper's results section (``templates/index.html.j2``),
and the summary ``lceval report`` prints."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.core.io import atomic_open, read_json_object
from lceval.report.coverage import run_coverage
from lceval.report.reproduction import REPRODUCTION_COLUMNS, item_order, load_index
from lceval.report.samples_page import render, write_page

THIS_RUN = "this run"
"""``lceval.report.reporting.THIS_RUN`` (that module loads matplotlib)."""


def write_index(run: Any) -> Path:
    """Write ``report/index.html`` from what ``run`` (a ``RunDir``) holds now; returns its path.
    From the top: headlines (95% CI, n, published range, coverage), links, per benchmark its
    tables and figures under their paper items (the report module's ``CAPTIONS``), the checks,
    the reproduction index, the provenance and the executed notebooks."""
    report = Path(run.report)
    covs = run_coverage(run)
    # report/*.csv; report/<key>/*.csv (RULER, L-Eval, CIF-Bench write their tables there);
    # report/<key>-<variant>/ (a non-default scorer's report, lceval.report.write_report)
    csvs = [*sorted(report.glob("*.csv")), *sorted(report.glob("*/*.csv"))]
    pngs = [*sorted(Path(run.figures).glob("*.png")), *sorted(report.glob("*-*/figures/*.png"))]
    by_key: dict[str, list[Path]] = {}
    for p in [*csvs, *pngs]:
        by_key.setdefault(_bench_of(p, report), []).append(p)
    sections: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    study = _study_headline(report)
    for key, files in sorted(by_key.items()):
        captions = _captions(key)
        items: list[tuple[tuple[int, int, str], dict[str, Any]]] = []  # (sort key, block)
        for p in files:
            name = p.relative_to(report).with_suffix("").as_posix()
            if study is not None and name == study["name"]:
                continue  # a study's headline table leads the page, shown once
            item, caption = captions.get(name, captions.get(p.stem, ("", "")))
            if p.suffix == ".png":
                figure = {"label": item, "text": caption, "name": name, "alt": p.stem}
                items.append((item_order(item), {**figure, "pdf": p.with_suffix(".pdf").exists()}))
            elif (block := _table(p, name, item, caption)) is not None and item == "Check":
                checks.append(block)
            elif block is not None:
                items.append((item_order(item), block))
        blocks = [b for _, b in sorted(items, key=lambda x: x[0])]
        sections.append({"key": key, "title": _bench_title(key), "blocks": blocks})
    page = render(
        "index.html.j2",
        run_id=str(run.run_id),
        covs=covs,
        heads=headline_rows(report, covs),
        study=study,
        pages=[(name, what) for name, what in _PAGES if (report / name).exists()],
        sections=sections,
        checks=checks,
        reproduction=_reproduction_rows(run),
        columns=REPRODUCTION_COLUMNS,
        meta=(meta := read_json_object(run.run_json)),
        sources=_sources(meta),
        notebooks=_render_notebooks(run, report),
    )
    return write_page(report / "index.html", page)


def _bench_of(path: Path, report: Path) -> str:
    """A report file's benchmark: its folder (``lifbench-strict/``), else its name's prefix."""
    rel = path.relative_to(report).parts
    if len(rel) > 1 and rel[0] not in ("figures", "notebooks", "contexts"):
        return rel[0].split("-", 1)[0]
    return path.stem.split("_", 1)[0].split("-", 1)[0]


def _bench_title(key: str) -> str:
    try:
        return str(registry.get(key).title)
    except Exception:  # noqa: BLE001 - files of a benchmark this lceval does not know
        return key


def _studies() -> dict[str, str]:
    """Report file prefix -> module of its ``CAPTIONS``: lceval's analyses, Benchmark.studies."""
    out = {k: f"lceval.report.{k}" for k in ("reasoning", "context", "cost")}
    for bench in registry.all_benchmarks():
        out.update(bench.studies)
    return out


def _captions(key: str) -> dict[str, tuple[str, str]]:
    """``CAPTIONS`` (``name -> (paper item, caption)``) of the report module of ``key``."""
    try:  # a study's module, else the module of the benchmark's report ("module:function")
        name = _studies().get(key) or str(registry.get(key).report.__qualname__).split(":")[0]
        module = importlib.import_module(name)
    except Exception:  # noqa: BLE001 - no report module: no captions
        return {}
    return dict(getattr(module, "CAPTIONS", {}))


def _table(csv: Path, name: str, item: str, caption: str) -> dict[str, Any] | None:
    """One report CSV for the template (run's rows marked); None when it cannot be read."""
    df = _read_csv(csv)
    if df is None:
        return None
    if len(df.columns) and str(df.columns[0]).startswith("Unnamed"):
        first = df[df.columns[0]]
        if pd.api.types.is_integer_dtype(first) and list(first) == list(range(len(df))):
            df = df.drop(columns=df.columns[0])
        else:
            df = df.rename(columns={df.columns[0]: ""})
    mine = df["source"].astype(str) == THIS_RUN if "source" in df.columns else [False] * len(df)
    return {
        "label": item if item != "Check" else "",
        "text": caption
        or f"{name.split('/')[-1]} (report/{name}.csv); no caption declared for this table.",
        "name": name,
        "head": [(str(c), not pd.api.types.is_numeric_dtype(df[c])) for c in df.columns],
        "rows": list(zip(mine, df.itertuples(index=False), strict=True)),
        "fold": len(df) > 30,  # long audit tables fold away; the headline tables stay open
    }


def headline_rows(report: Path, covs: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """One dict per headline of ``report/results.json`` (benchmark, scorer, model, metric, unit,
    estimate, low, high, n) with ``published_low``/``_high``/``_n`` (the metric's published rows
    in the report tables), ``coverage`` (or None), ``comparable`` and the page's text cells."""
    doc = read_json_object(report / "results.json")  # {} when missing or unreadable
    by = {(c.benchmark, c.model): c for c in covs}
    out = []
    for h in doc.get("headlines", []):
        metric = str(h.get("metric", ""))
        lo, hi, n = _published_range(report, str(h.get("benchmark")), metric)
        cov = by.get((h.get("benchmark"), str(h.get("model")).split("@", 1)[0]))
        out.append(
            {
                "unit": "",
                **h,
                "published_low": lo,
                "published_high": hi,
                "published_n": n,
                "coverage": cov,
                "comparable": bool(cov.paper_grid) if cov is not None else True,
                "ci": f"{_fmt(h.get('estimate'))} [{_fmt(h.get('low'))}, {_fmt(h.get('high'))}]",
                "pub": f"{_fmt(lo)}-{_fmt(hi)} ({n} models)" if n else "",
            }
        )
    return out


def _published_range(report: Path, key: str, metric: str) -> tuple[float | None, float | None, int]:
    """Lowest and highest published value of ``metric`` in ``key``'s report tables, how many."""
    column = metric.split(" (", 1)[0]
    for csv in sorted(report.glob(f"{key}_*.csv")):
        df = _read_csv(csv)
        if df is None or "source" not in df.columns or column not in df.columns:
            continue
        pub = pd.to_numeric(
            df.loc[df["source"].astype(str).str.startswith("published"), column], errors="coerce"
        ).dropna()
        if len(pub):
            return float(pub.min()), float(pub.max()), int(len(pub))
    return None, None, 0


def _read_csv(path: Path) -> pd.DataFrame | None:  # None when it cannot be read
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        return None


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):.3f}"


def _study_headline(report: Path) -> dict[str, Any] | None:
    """A study run's ``report/<study>/headline.csv`` as the first screen's table, or None."""
    for key in _studies():
        csv = report / key / "headline.csv"
        if csv.is_file():
            item, caption = _captions(key).get(f"{key}/headline", ("Headline", ""))
            return _table(csv, f"{key}/headline", item or "Headline", caption)
    return None


def _sources(meta: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The data sources table's rows: benchmark, source, package or path, sha256, the rest."""
    sources = []
    for bench, srcs in (meta.get("sources") or {}).items():
        for name, src in (srcs or {}).items() if isinstance(srcs, Mapping) else []:
            src = src if isinstance(src, Mapping) else {"value": src}
            where = src.get("path") or src.get("name") or ""
            if src.get("package"):
                where = f"{src['package']} {src.get('version', '')}".strip()
            skip = ("name", "path", "package", "version", "sha256")
            extra = ", ".join(f"{k}={v}" for k, v in src.items() if k not in skip)
            sources.append((bench, name, where, src.get("sha256", ""), extra))
    return sources


_PAGES = (
    ("samples.html", "Every answer: one row per (sample, model, scorer), searchable"),
    ("compare.html", "Two models side by side, with the paired difference"),
    ("results.json", "Headline numbers with CIs and the provenance, as JSON (results.schema.json)"),
)


def _reproduction_rows(run: Any) -> list[dict[str, Any]]:
    """The reproduction index rows of the run's benchmarks (none without samples)."""
    try:
        return load_index(sorted({s.benchmark for s in run.read_samples()})).to_dict("records")
    except LcevalError:
        return []


def _render_notebooks(run: Any, report: Path) -> list[Path]:
    """Executed notebooks of the run as HTML under ``report/notebooks/`` (nbconvert)."""
    sources = sorted(p for p in Path(run.notebooks).glob("*.ipynb") if not p.name.startswith("."))
    out: list[Path] = []
    if not sources:
        return out
    import nbformat  # heavy: nbformat, only for a run with notebooks
    from nbconvert import HTMLExporter  # heavy: nbconvert

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
    """What ``lceval report RUN`` prints: each headline with its CI, n and published range, what
    the run covers, how many ``tables`` (``lceval.report.write_report``'s) and figures, the page."""
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
        pub = f"; published {h['pub']}" if h["pub"] else ""
        flag = "" if h["comparable"] else " [subset: not comparable, not ranked]"
        scorer = "" if h.get("scorer") == h["benchmark"] else f" ({h.get('scorer')})"
        lines.append(
            f"{h['benchmark']}{scorer} {h['model']}: {h['metric']} ({h['unit']}) {h['ci']} "
            f"n={h.get('n')}{pub}{flag}"
        )
    if len(heads) > 12:
        lines.append(f"... {len(heads) - 12} more headline rows in {report / 'results.json'}")
    for c in covs[:8]:
        if not c.paper_grid or c.cut_flag:
            lines.append(f"  coverage {c.line()}")
    n_fig = len(list(Path(run.figures).glob("*.png")))
    lines.append(f"{len(tables)} tables (report/*.csv), {n_fig} figures (report/figures/)")
    lines.append(f"report: {report / 'index.html'}")
    return "\n".join(lines)
