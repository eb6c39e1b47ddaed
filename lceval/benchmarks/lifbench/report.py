"""LIFBench's report: the figures (IFP radar, ARS by length, Table 3 bars) and the report files of
a run, from the tidy tables of ``tables.py`` (Sec. 4: Eq. 3-6, Tables 3-4, Fig. 2) beside the
published numbers of ``published.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lceval.benchmarks.lifbench.published import (
    ifp_with_published,
    official_check,
    paper_check,
    radar_reference,
    summary_table,
    table3_with_published,
)
from lceval.benchmarks.lifbench.tables import (
    THIS_RUN,
    ars_by_length,
    ars_ci,
    ifp,
    ifp_ci,
    ifs_table,
    item_means,
    score_table,
    task_ars,
    task_ars_ci,
)
from lceval.errors import LcevalError
from lceval.io import RunDir
from lceval.records import Sample
from lceval.reporting import save_figure, save_table

# --------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------


def plot_ifp_radar(
    cap: pd.DataFrame,
    title: str = "IFP per capability (Fig. 2)",
    reference: pd.DataFrame | None = None,
) -> plt.Figure:
    """Radar chart of IFP (0..1): the run's models as solid lines labelled "(this run)", the
    ``reference`` models (e.g. :func:`radar_reference`) as dashed grey lines.

    Args:
        cap: the run's models x capabilities (a ``source`` column is ignored).
        title: figure title.
        reference: published models x capabilities, indexed by legend label; None draws none.
    """
    cap = cap.drop(columns=["source"], errors="ignore")
    labels = list(cap.columns)
    angles = np.linspace(0, 2 * np.pi, len(labels), endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(6, 6), subplot_kw={"polar": True})
    if reference is not None:
        greys = ["0.2", "0.45", "0.65", "0.8"]
        styles = ["--", "-.", ":", "--"]
        for i, (name, row) in enumerate(reference[labels].iterrows()):
            vals = row.to_numpy(dtype=float).tolist()
            ax.plot(
                angles + angles[:1],
                vals + vals[:1],
                label=str(name),
                color=greys[i % len(greys)],
                linestyle=styles[i % len(styles)],
                linewidth=1.2,
            )
    for model, row in cap.iterrows():
        vals = row.to_numpy(dtype=float).tolist()
        ax.plot(angles + angles[:1], vals + vals[:1], label=f"{model} (this run)", linewidth=2)
    ax.set_xticks(angles)
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.05, 1.05), fontsize=7)
    return fig


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
    import seaborn as sns

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
        run's models), ``ifp`` (:func:`ifp_with_published`), ``summary``
        (:func:`summary_table`), ``ars_by_length``, ``ars_ci`` (overall ARS with ``low``,
        ``high``, ``n``), ``task_ars_ci`` and ``ifp_ci`` (the same per task and per capability).
    """
    t3 = task_ars(table)
    t4 = ifs_table(table, ars=t3["Overall"])
    return {
        "table3_ars": table3_with_published(t3),
        "table4_ifs": t4,
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
    cap = tables["ifp"]
    mine = cap[cap["source"] == THIS_RUN] if "source" in cap else cap
    if not mine.empty:
        fig = plot_ifp_radar(
            mine,
            "IFP per capability (Fig. 2): this run beside published models",
            reference=radar_reference(),
        )
        save_figure(fig, figures, "lifbench_ifp_radar")
    if not tables["ars_by_length"].empty:
        save_figure(plot_ars_by_length(tables["ars_by_length"]), figures, "lifbench_ars_by_length")


def report_lifbench(
    run: RunDir, scores: pd.DataFrame, samples: Sequence[Sample]
) -> dict[str, pd.DataFrame]:
    """Write LIFEval's tables (CSV) and figures (PNG + PDF) of a run; return the tables.

    Tables: ``table3_ars`` (task ARS + Overall, Table 3, beside the paper's rows), ``table4_ifs``
    (IFS with ranks, Table 4), ``ifp`` (Fig. 2's numbers, beside the official ones), ``summary``
    (ARS and IFS(AVG) beside the paper's), ``ars_by_length`` (columns ``"4k"``..),
    ``ars_ci``, ``task_ars_ci``, ``ifp_ci`` (bootstrap CIs: ``low``, ``high``, ``n``),
    ``paper_check`` and ``official_check`` (the
    published numbers recomputed); published rows are marked in a ``source`` column.
    Figures: Table 3 heat map and the IFP radar (this run beside published models), ARS by
    length.
    Files: ``report/lifbench_<name>.csv`` and ``report/figures/lifbench_*.{png,pdf}``.

    Args:
        run: the run folder.
        scores: the run's LIFBench scores (``lceval.io.scores_frame`` layout).
        samples: the run's LIFBench samples.

    Raises:
        LcevalError: no score joins a sample.
    """
    table = score_table(scores, samples)
    if table.empty:
        raise LcevalError(f"{run.scores}: no LIFBench score matches a sample of the run")
    tables = lifbench_tables(table)
    tables["paper_check"] = paper_check()
    tables["official_check"] = official_check()
    _write(tables, run.report, run.figures)
    return tables
