"""LIFBench's report: the figures (IFP radar, ARS by length, Table 3 bars) and the report files of
a run, from the tidy tables of ``tables.py`` (Sec. 4: Eq. 3-6, Tables 3-4, Fig. 2) beside the
published numbers of ``published.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lceval.benchmarks.lifbench import BENCHMARK
from lceval.benchmarks.lifbench.published import (
    fig3_share_with_published,
    ifp_with_published,
    official_check,
    paper_check,
    radar_published,
    summary_table,
    table3_with_published,
    table4_with_published,
)
from lceval.benchmarks.lifbench.tables import (
    PERSPECTIVES,
    THIS_RUN,
    ars_by_length,
    ars_ci,
    ifp,
    ifp_ci,
    ifs_gap,
    ifs_table,
    item_means,
    score_table,
    task_ars,
    task_ars_ci,
)
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.report.coverage import comparable, run_coverage
from lceval.report.reporting import save_figure, save_table

# --------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------


CAPTIONS: dict[str, tuple[str, str]] = {
    # name (report/<name>.csv or figures/<name>.png) -> (paper item, one-line caption)
    "lifbench_summary": (
        "Headline",
        "Overall ARS (Eq. 3, 0..1, higher is better) and IFS(AVG) (Eq. 6, lower is better) of "
        "the run's models (highlighted) beside the paper's 20 models (Tables 3-4; source column). "
        "ARS_rank: 1 = best; a run that is not the paper's grid is not ranked.",
    ),
    "lifbench_ars_ci": (
        "Headline",
        "Overall ARS (0..1, higher is better) per model with its 95% bootstrap CI (low, high) "
        "over n scored samples.",
    ),
    "lifbench_table3_ars": (
        "Table 3",
        "ARS per task and Overall (0..1, higher is better): the run's models (highlighted) beside "
        "the paper's rows (source column); empty cells: tasks the run did not answer.",
    ),
    "lifbench_task_ars_ci": (
        "Table 3",
        "ARS per task (0..1, higher is better) with 95% bootstrap CIs (low, high) and n samples.",
    ),
    "lifbench_table4_ifs": (
        "Table 4",
        "IFS per perspective (Expression, Variable, Length) and IFS(AVG) (Eq. 5-6, 0 = stable, "
        "lower is better) with ranks among the run's models, and overall ARS.",
    ),
    "lifbench_table4_with_published": (
        "Table 4",
        "IFS per perspective (lower is better) and ARS (higher is better) beside the paper's "
        "Table 4 (source column); ranks over all ranked rows; paper_rank: the paper's row order.",
    ),
    "lifbench_ifp": (
        "Fig. 2",
        "IFP per capability (Fmt, Logit, Num, Ori, Recog, Spat; 0..1, higher is better): the "
        "run's models beside the official IFP of the paper's models (source column).",
    ),
    "lifbench_ifp_ci": (
        "Fig. 2",
        "IFP per capability (0..1, higher is better) with 95% bootstrap CIs (low, high), n items.",
    ),
    "lifbench_ars_by_length": (
        "Beyond the paper",
        "ARS (0..1, higher is better) per context length (columns, the builder's length labels) "
        "of the run's models; no numbered item of the paper, the lengths behind IFS's Length.",
    ),
    "lifbench_paper_check": (
        "Check",
        "The paper's printed numbers recomputed from its own printed inputs (Eq. 3-6): paper, "
        "recomputed, diff; flag exact, rounding (inputs printed at 3 decimals) or DIFFERS, why.",
    ),
    "lifbench_official_check": (
        "Check",
        "The official repository's result files recomputed with lceval's aggregation: published, "
        "recomputed, diff; flag exact, rounding or DIFFERS, with the reason.",
    ),
    "lifbench_fig3_ifs_gap": (
        "Fig. 3",
        "IFS gap per perspective (Expression, Variable, Length; MEAN): expression extension "
        "minus random sampling; positive = the extension raised IFS (IFS: lower is better).",
    ),
    "lifbench_fig3_share_positive": (
        "Fig. 3",
        "Share of models whose IFS rose with expression extension, per perspective, beside the "
        "paper's shares (source column).",
    ),
    "lifbench_ifp_radar": (
        "Fig. 2",
        "IFP per capability (0..1, outward is better): the run's models (bold) beside published "
        "reference models.",
    ),
}
"""Paper item and caption of each table and figure this report writes (report/index.html)."""


MAX_RADAR_LINES = 6
"""Published models the radar draws as lines of their own (each its colour and dash); more are
drawn as one band of their range."""


def plot_ifp_radar(
    cap: pd.DataFrame,
    title: str = "IFP per capability (Fig. 2)",
    reference: pd.DataFrame | None = None,
) -> plt.Figure:
    """Radar chart of IFP (0..1): the run's models highlighted (thick coloured lines with
    markers, labelled "(this run)" in bold), the ``reference`` models (:func:`radar_published`)
    as thin lines behind them, each its own colour and dash; more than
    :data:`MAX_RADAR_LINES` of them as one grey band of their range (min..max per capability),
    so the legend stays short. The legend sits outside the plot.

    Args:
        cap: the run's models x capabilities (a ``source`` column is ignored).
        title: figure title.
        reference: published models x capabilities, indexed by legend label; None draws none.
    """
    cap = cap.drop(columns=["source"], errors="ignore")
    labels = list(cap.columns)
    angles = np.linspace(0, 2 * np.pi, len(labels), endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(7, 7), subplot_kw={"polar": True})
    n_ref = 0 if reference is None else len(reference)
    closed = angles + angles[:1]
    if reference is not None and n_ref > MAX_RADAR_LINES:
        # many published models: their range as one band (the legend stays one entry; every
        # model's numbers are in report/lifbench_ifp.csv)
        lo = reference[labels].min().to_numpy(dtype=float).tolist()
        hi = reference[labels].max().to_numpy(dtype=float).tolist()
        ax.fill_between(
            closed,
            lo + lo[:1],
            hi + hi[:1],
            color="0.6",
            alpha=0.3,
            label=f"{n_ref} published models (range)",
        )
    elif reference is not None and n_ref:
        colors = plt.get_cmap("Dark2")
        styles = ("--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)))
        for i, (name, row) in enumerate(reference[labels].iterrows()):
            vals = row.to_numpy(dtype=float).tolist()
            ax.plot(
                closed,
                vals + vals[:1],
                label=str(name),
                color=colors(i % 8),
                linestyle=styles[i % len(styles)],
                linewidth=0.9,
                alpha=0.85,
            )
    for i, (model, row) in enumerate(cap.iterrows()):
        vals = row.to_numpy(dtype=float).tolist()
        ax.plot(
            angles + angles[:1],
            vals + vals[:1],
            label=f"{model} (this run)",
            color=plt.get_cmap("Set1")(i % 9),
            linewidth=2.6,
            marker="o",
            zorder=5,
        )
    ax.set_xticks(angles)
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    legend = ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.05), fontsize=7, ncol=1)
    for text in legend.get_texts():
        if text.get_text().endswith("(this run)"):
            text.set_fontweight("bold")
    return fig


def write_ifp_radar(
    ifp_table: pd.DataFrame, figures: str | Path, published: str | Sequence[str] = "reference"
) -> list[Path]:
    """Draw the IFP radar (Fig. 2) of a run beside published models and save it as
    ``lifbench_ifp_radar.{png,pdf}`` under ``figures``.

    Args:
        ifp_table: the report's ``ifp`` table (:func:`ifp_with_published`: all 20 published
            models are in it and in its CSV; only ``published`` are drawn).
        figures: the run's figures folder.
        published: which published rows to draw (:func:`radar_published`): ``"reference"``
            (best, median, worst by ARS), ``"all"``, ``"none"`` or model names.

    Returns:
        The PNG and PDF paths; none when the table has no row of the run.

    Raises:
        LcevalError: an unknown published model name.
    """
    reference = radar_published(published)
    mine = ifp_table[ifp_table["source"] == THIS_RUN] if "source" in ifp_table else ifp_table
    if mine.empty:
        return []
    shown = "" if reference.empty else ": this run beside published models"
    fig = plot_ifp_radar(mine, f"IFP per capability (Fig. 2){shown}", reference=reference)
    return save_figure(fig, figures, "lifbench_ifp_radar")


def plot_ifs_gap(gap: pd.DataFrame) -> plt.Figure:
    """Fig. 3 in the paper's layout: grouped bars of the IFS gap (expression extension minus
    random sampling) per model and perspective, the models then ``MEAN`` on the x axis, a zero
    line; positive = higher IFS with expression extension.

    Args:
        gap: :func:`ifs_gap` output (models and ``MEAN`` x Expression, Variable, Length).
    """
    cols = list(PERSPECTIVES)
    xs = np.arange(len(gap))
    width = 0.8 / len(cols)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(gap) + 2), 4))
    for i, c in enumerate(cols):
        ax.bar(xs + (i - 1) * width, gap[c].to_numpy(dtype=float), width, label=c)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(m) for m in gap.index], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("IFS gap (extension - random)")
    ax.set_title("IFS gap: expression extension vs random sampling (Fig. 3)")
    ax.legend(fontsize=8)
    return fig


def run_ifs_table(run_id: str, root: str | Path | None = None) -> tuple[pd.DataFrame, str]:
    """Table 4 (:func:`ifs_table`) of a run's LIFBench scores and the ``expressions`` param it
    was built with (run.json).

    Raises:
        LcevalError: the run has no LIFBench scores or samples.
    """
    run = RunDir(run_id, root)
    samples = BENCHMARK.load_samples([s for s in run.read_samples() if s.benchmark == "lifbench"])
    scores, _ = BENCHMARK.scores_for(run.read_scores())
    table = score_table(scores, samples)
    if table.empty:
        raise LcevalError(f"run {run_id}: no LIFBench score matches a sample; score it first")
    params = dict(run.read_meta().params or {}).get("lifbench") or {}
    return ifs_table(table), str(params.get("expressions", "official"))


def report_ifs_gap(
    run_id: str, random_run_id: str, *, root: str | Path | None = None
) -> dict[str, pd.DataFrame]:
    """Fig. 3 (Appendix B) from two scored runs of the same models: ``run_id`` built with the
    expression extension (``expressions: cluster`` or ``official``) and ``random_run_id`` with
    ``expressions: random``. Writes ``report/lifbench_fig3_ifs_gap.csv``,
    ``lifbench_fig3_share_positive.csv`` (beside the paper's shares) and
    ``report/figures/lifbench_fig3_ifs_gap.{png,pdf}`` in ``run_id``'s folder.

    Returns:
        ``{"fig3_ifs_gap": ifs_gap(...), "fig3_share_positive": fig3_share_with_published(...)}``.

    Raises:
        LcevalError: a run is missing or unscored, ``random_run_id`` was not built with
            ``expressions: random`` or ``run_id`` was, or the runs share no model.
    """
    extension, kind = run_ifs_table(run_id, root)
    random, random_kind = run_ifs_table(random_run_id, root)
    if random_kind != "random" or kind == "random":
        raise LcevalError(
            f"Fig. 3 compares expression extension (run {run_id}: expressions={kind}) with "
            f"random sampling (run {random_run_id}: expressions={random_kind}); build the "
            "second with expressions: random and the first with cluster or official"
        )
    gap = ifs_gap(extension, random)
    out = {"fig3_ifs_gap": gap, "fig3_share_positive": fig3_share_with_published(gap)}
    run = RunDir(run_id, root)
    for name, df in out.items():
        save_table(df, run.report, f"lifbench_{name}")
    save_figure(plot_ifs_gap(gap), run.figures, "lifbench_fig3_ifs_gap")
    return out


def plot_ars_by_length(by_len: pd.DataFrame) -> plt.Figure:
    """Overall ARS against the length interval, one line per model.

    Args:
        by_len: :func:`ars_by_length` output (columns labelled as the paper, ``"4k"``..,
            in length order; drawn equally spaced, as the intervals roughly double).
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    labels = [str(c) for c in by_len.columns]
    xs = np.arange(len(labels))
    for model, row in by_len.iterrows():
        ax.plot(xs, row.to_numpy(dtype=float), marker="o", label=str(model))
    ax.set_xticks(xs)
    ax.set_xticklabels(labels)
    ax.set_xlabel("length interval of the input X")
    ax.set_ylabel("overall ARS (Eq. 3)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    return fig


def plot_task_ars(t3: pd.DataFrame) -> plt.Figure:
    """Heat map of Table 3 (models x tasks and Overall, ARS 0..1), rows in the table's order.

    Args:
        t3: :func:`task_ars` or :func:`table3_with_published` output; with a ``source`` column
            the run's rows are labelled "(this run)" in bold red and the others "(published)".
    """
    import seaborn as sns  # heavy: seaborn

    source = t3["source"] if "source" in t3 else pd.Series(THIS_RUN, index=t3.index)
    values = t3.drop(columns=["source"], errors="ignore").astype(float)
    mine = (source == THIS_RUN).to_numpy()
    names = [
        f"{m} (this run)" if r else f"{m} (published)"
        for m, r in zip(values.index, mine, strict=True)
    ]
    fig, ax = plt.subplots(figsize=(1 + 0.7 * values.shape[1], 1 + 0.4 * max(1, values.shape[0])))
    sns.heatmap(
        values.set_axis(names),
        annot=True,
        fmt=".3f",
        vmin=0,
        vmax=1,
        cmap="viridis",
        ax=ax,
        yticklabels=True,
        annot_kws={"fontsize": 7},
        cbar_kws={"label": "ARS"},
    )
    for tick, r in zip(ax.get_yticklabels(), mine, strict=True):
        if r:
            tick.set_fontweight("bold")
            tick.set_color("tab:red")
    ax.set_ylabel("")
    published = "" if mine.all() else ": this run beside the paper's published rows"
    ax.set_title(f"ARS per task (Table 3){published}")
    return fig


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def lifbench_tables(table: pd.DataFrame, *, seed: int = 0) -> dict[str, pd.DataFrame]:
    """All LIFEval tables of a score table (several models side by side).

    Returns:
        ``table3_ars`` (:func:`table3_with_published`), ``table4_ifs`` (:func:`ifs_table`, the
        run's models), ``table4_with_published`` (every perspective beside the paper's rows),
        ``ifp`` (:func:`ifp_with_published`), ``summary`` (:func:`summary_table`),
        ``ars_by_length``, ``ars_ci`` (overall ARS with ``low``,
        ``high``, ``n``), ``task_ars_ci`` and ``ifp_ci`` (the same per task and per capability).
    """
    t3 = task_ars(table)
    t4 = ifs_table(table, ars=t3["Overall"])
    return {
        "table3_ars": table3_with_published(t3),
        "table4_ifs": t4,
        "table4_with_published": table4_with_published(t4),
        "ifp": ifp_with_published(ifp(item_means(table))),
        "summary": summary_table(t3, t4),
        "ars_by_length": ars_by_length(table),
        "ars_ci": ars_ci(table, seed=seed),
        "task_ars_ci": task_ars_ci(table, seed=seed),
        "ifp_ci": ifp_ci(table, seed=seed),
    }


def _write(tables: Mapping[str, pd.DataFrame], report: Path, figures: Path) -> None:
    for name, df in tables.items():
        save_table(df, report, f"lifbench_{name}")
    if not tables["table3_ars"].empty:
        save_figure(plot_task_ars(tables["table3_ars"]), figures, "lifbench_table3_ars")
    write_ifp_radar(tables["ifp"], figures, "reference")
    if not tables["ars_by_length"].empty:
        save_figure(plot_ars_by_length(tables["ars_by_length"]), figures, "lifbench_ars_by_length")


def report_lifbench(
    run: RunDir, scores: pd.DataFrame, samples: Sequence[Sample]
) -> dict[str, pd.DataFrame]:
    """Write LIFEval's tables (CSV) and figures (PNG + PDF) of a run; return the tables.

    Tables: ``table3_ars`` (task ARS + Overall, Table 3, beside the paper's rows), ``table4_ifs``
    (IFS with ranks, Table 4), ``table4_with_published`` (Table 4 beside the paper's rows),
    ``ifp`` (Fig. 2's numbers, beside the official ones), ``summary``
    (ARS and IFS(AVG) beside the paper's), ``ars_by_length`` (columns ``"4k"``..),
    ``ars_ci``, ``task_ars_ci``, ``ifp_ci`` (bootstrap CIs: ``low``, ``high``, ``n``),
    ``paper_check`` and ``official_check`` (the
    published numbers recomputed); published rows are marked in a ``source`` column.
    Figures: Table 3 heat map and the IFP radar (this run beside published models), ARS by
    length.
    Files: ``report/lifbench_<name>.csv`` and ``report/figures/lifbench_*.{png,pdf}``.

    Args:
        run: the run folder.
        scores: the run's LIFBench scores (``lceval.core.io.scores_frame`` layout).
        samples: the run's LIFBench samples.

    Raises:
        LcevalError: no score joins a sample.
    """
    table = score_table(scores, samples)
    if table.empty:
        raise LcevalError(f"{run.scores}: no LIFBench score matches a sample of the run")
    tables = lifbench_tables(table)
    # A run that is not the paper's grid (lceval.report.coverage) sits beside the paper's rows
    # unranked.
    subset = {m for m, ok in comparable(run_coverage(run), "lifbench").items() if not ok}
    for name in ("summary", "table4_with_published"):
        tables[name] = _unrank_subset_rows(
            tables[name], subset, ascending=lambda c: c not in ("ARS", "paper")
        )
    # Table 3 is ordered by Overall: a subset run's rows go above the paper's, not among them.
    t3 = tables["table3_ars"]
    if subset and "source" in t3.columns:
        apart = (t3["source"].astype(str) == THIS_RUN) & t3.index.astype(str).isin(list(subset))
        tables["table3_ars"] = pd.concat([t3[apart], t3[~apart]])
    tables["paper_check"] = paper_check()
    tables["official_check"] = official_check()
    _write(tables, run.report, run.figures)
    return tables


def _unrank_subset_rows(
    df: pd.DataFrame, models: set[str] | frozenset[str], *, ascending: Callable[[str], bool]
) -> pd.DataFrame:
    """``df`` (indexed by model, a ``source`` column, ``<col>_rank`` beside ``<col>``) with the
    run's rows of ``models`` (off the paper's grid) out of every ranking: their ranks NaN, the
    others ranked again (1 = best, ties share the lower; ``ascending(col)``: lower is better).
    A copy, or ``df`` itself when nothing changes."""
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
