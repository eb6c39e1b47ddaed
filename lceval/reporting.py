"""Shared report helpers: figures as PNG and PDF, tidy tables as CSV, the responses table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from lceval.io import atomic_open  # noqa: E402


def save_figure(fig: Figure, folder: str | Path, name: str, *, dpi: int = 150) -> list[Path]:
    """Save ``fig`` as ``<folder>/<name>.png`` and ``.pdf`` (atomically); returns both paths."""
    paths = []
    for ext in ("png", "pdf"):
        path = Path(folder) / f"{name}.{ext}"
        with atomic_open(path, "wb") as f:
            fig.savefig(f, format=ext, dpi=dpi, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def save_table(df: pd.DataFrame, folder: str | Path, name: str, *, index: bool = True) -> Path:
    """Write ``df`` to ``<folder>/<name>.csv`` atomically; returns the path."""
    path = Path(folder) / f"{name}.csv"
    with atomic_open(path) as f:
        df.to_csv(f, index=index)
    return path


def responses_frame(run_id: str, outputs_root: str | Path | None = None) -> pd.DataFrame:
    """Tidy table of a run's responses joined with their samples' grouping fields.

    One row per stored answer, as scoring reads them (:class:`lceval.models.cache.ResponseStore`:
    per sample, model, config and sample hash the first successful response, else the last
    error, so an error a retry replaced is not counted): sample_id, model, config_hash, text,
    prompt_tokens, completion_tokens, finish_reason, truncated_tokens, latency_s, error,
    sample_hash, then benchmark, task, scenario, length.

    Like scoring (:func:`lceval.pipeline.score`), a response stamped with another ``sample_hash``
    than its sample's current one answers an earlier version of the sample (the run was rebuilt)
    and is left out, so the table and :func:`inference_summary` describe the answers that are
    scored, not a mix of old and new prompts; how many were left out is in
    ``frame.attrs["stale"]`` and one line on stderr. Responses without a hash (written before it
    existed, imported predictions) count as answering the current sample.

    Raises:
        LcevalError: the run has no samples or no responses yet, or a line of responses.jsonl
            is not a response (``lceval repair RUN`` moves such lines aside).
    """
    from dataclasses import asdict, fields

    from lceval.io import RunDir
    from lceval.records import Response, sample_hashes

    run = RunDir(run_id, outputs_root)
    raw = run.read_samples()
    hashes = sample_hashes(raw, run.read_contexts())
    keys = ["id", "benchmark", "task", "scenario", "length"]
    samples = pd.DataFrame([{k: getattr(s, k) for k in keys} for s in raw], columns=keys)
    samples = samples.rename(columns={"id": "sample_id"})
    rows = []
    stale = 0
    if not run.responses.exists():
        run.read_responses()  # raises the usual "run inference first" error
    from lceval.models.cache import ResponseStore

    # One row per stored key, as scoring reads them: the first successful answer, else the last
    # error (an error that a retry replaced is not counted again).
    for r in ResponseStore(run.responses):
        if r.answers(hashes.get(r.sample_id)):
            rows.append(asdict(r))
        else:
            stale += 1
    responses = pd.DataFrame(rows, columns=[f.name for f in fields(Response)])
    if stale:
        from lceval.models.base import log

        log(
            f"{stale} response(s) in {run.responses.name} answer an earlier version of their "
            "sample (sample hash differs: the run was rebuilt) and are left out of the responses "
            f"table; `lceval infer {run_id}` answers the current samples"
        )
    frame = responses.merge(samples, on="sample_id", how="left")
    frame.attrs["stale"] = stale
    return frame


def inference_summary(responses: pd.DataFrame) -> pd.DataFrame:
    """Per (model, task): responses, mean prompt / generated tokens, truncations, finish reasons.

    Args:
        responses: the output of :func:`responses_frame`.
    """
    g = responses.groupby(["model", "task"], dropna=False)
    out = g.agg(
        responses=("sample_id", "size"),
        prompt_tokens=("prompt_tokens", "mean"),
        completion_tokens=("completion_tokens", "mean"),
        truncated=("truncated_tokens", lambda x: int((x > 0).sum())),
        hit_budget=("finish_reason", lambda x: int((x == "length").sum())),
        errors=("finish_reason", lambda x: int((x == "error").sum())),
        seconds=("latency_s", "sum"),
    )
    return out.round({"prompt_tokens": 1, "completion_tokens": 1, "seconds": 1})


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


THIS_RUN = "this run"
"""The ``source`` of a run's own rows in tables that put published numbers beside them."""


def highlight_run_rows(df: pd.DataFrame, column: str = "source", value: str = THIS_RUN) -> Any:
    """``df`` as a pandas Styler whose rows with ``df[column] == value`` (the user's models, beside
    published rows) are shown bold on a light yellow background; the numbers are unchanged.

    Raises:
        KeyError: ``df`` has no ``column``. (pandas' Styler needs a unique index and columns.)
    """
    mine = (df[column].astype(str) == value).to_numpy()
    style = "font-weight: bold; background-color: #fff3b0"

    def rows(frame: pd.DataFrame) -> pd.DataFrame:
        cells = [[style if m else ""] * frame.shape[1] for m in mine]
        return pd.DataFrame(cells, index=frame.index, columns=frame.columns)

    return df.style.apply(rows, axis=None)


def unrank_subset_rows(
    df: pd.DataFrame, models: set[str] | frozenset[str], *, ascending: Callable[[str], bool]
) -> pd.DataFrame:
    """``df`` with the run's rows of ``models`` (a run that is not the paper's grid,
    :mod:`lceval.coverage`) taken out of every ranking: their ``<col>_rank`` and ``mean_rank``
    cells become NaN and the other rows are ranked again among themselves, so a subset run
    shown beside published numbers is never ranked among the paper's models.

    Args:
        df: a table with a ``source`` column (:data:`THIS_RUN` for the run's rows), indexed by
            model, with ``<col>_rank`` columns beside their ``<col>``.
        models: model names whose run rows are not comparable.
        ascending: per ranked column name, True when lower is better (IFS), False when higher
            is (ARS).

    Returns:
        A copy (``df`` itself when nothing changes); ranks: 1 = best, ties share the lower.
    """
    if "source" not in df.columns or not models:
        return df
    out = df.copy()
    mask = (out["source"].astype(str) == THIS_RUN) & out.index.astype(str).isin(list(models))
    if not mask.any():
        return out
    ranked = [c[: -len("_rank")] for c in out.columns if c.endswith("_rank")]
    for c in ranked:
        rank = f"{c}_rank"
        if c in out.columns:
            out[rank] = out[c].where(~mask).rank(method="min", ascending=ascending(c))
        elif c == "mean":
            parts = [f"{p}_rank" for p in ranked if p not in ("mean", "ARS", "paper", "IFS(AVG)")]
            parts = [p for p in parts if p in out.columns]
            if parts:
                out[rank] = out[parts].mean(axis=1).where(~mask)
        else:
            out.loc[mask, rank] = float("nan")
    return out
