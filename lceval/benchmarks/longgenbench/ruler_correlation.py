"""Correlation between RULER (long input) and LongGenBench (long output) at equal lengths.

A cross-paper study: RULER and LongGenBench are reached through
:mod:`lceval.benchmarks.registry` (their declared ``functions`` and resources), never by module
path.

Reproduces the LongGenBench paper (Wu et al., ICLR 2025), Sec. 3.5 and Fig. 3b: Pearson
correlation, over models, between a model's RULER score and its LongGenBench score at the same
length: 0.51 at 16K and 0.66 at 32K. lceval adds Spearman's rank correlation and p-values
(``scipy.stats.pearsonr`` / ``spearmanr``).

Published data (``lceval/benchmarks/longgenbench/resources/ruler_correlation/``, typed in, see
its README):

- ``fig3b_official.csv``: the five models and numbers of the official plotting notebook
  (mozhu621/LongGenBench ``Draw/paper.ipynb``): RULER from the RULER README, LongGenBench from an
  evaluation earlier than the paper's Table 3. They give r = 0.512 (16K) and 0.667 (32K): the
  paper's 0.51 and 0.66 (0.667 printed truncated).
- ``table3.csv``: the paper's Table 3 with the matching RULER README row per model
  (``../ruler/leaderboard.csv``). With Table 3's final wAvg the same five models give r = 0.94
  (16K) and 0.89 (32K), and all seven models that RULER published give 0.64 and 0.43: the
  published 0.51 / 0.66 do not follow from the published Table 3, because Fig. 3b used the earlier
  scores. See :func:`published_pairs`.

Measured data: RULER per-model scores at each length from lceval RULER runs
(RULER's ``tables`` function) and LongGenBench per-model summaries from lceval LongGenBench
runs (LongGenBench's ``summary`` function), joined on model
and length (LongGenBench 16K = 16384 tokens, 32K = 32768 tokens). A correlation over fewer than
3 models is NaN with the reason in the ``note`` column.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta
from lceval.report.reporting import THIS_RUN, save_figure

PAPER_PEARSON = {16384: 0.51, 32768: 0.66}
"""The LongGenBench paper's Pearson correlations (Sec. 3.5, Fig. 3b), by length in tokens."""

LGB_LENGTHS = {"16K": 16384, "32K": 32768, "short": 16384, "long": 32768}
"""LongGenBench version / length label -> length in tokens (paper Table 2: short 16K, long 32K)."""

METRICS = ("wAvg", "CR", "STIC_1", "STIC_2")
_RULER_COL = {16384: "16K", 32768: "32K", 4096: "4K", 8192: "8K", 65536: "64K", 131072: "128K"}


def _resource(*parts: str) -> pd.DataFrame:
    path = registry.resources("longgenbench").joinpath("ruler_correlation", *parts[1:])
    try:
        with resources.as_file(path) as p:
            return pd.read_csv(p)
    except (OSError, pd.errors.ParserError) as exc:
        raise LcevalError(f"cannot read lceval resource {'/'.join(parts)}: {exc}") from None


def ruler_leaderboard() -> pd.DataFrame:
    """The RULER README leaderboard (0..100 per length; see ``resources/ruler/README.md``).

    Rows are keyed in ``table3.csv``'s ``ruler_model`` as ``"<model> (<size>)"`` (e.g.
    ``"Llama3.1 (8B)"``), or ``"<model>"`` when the README gives no size.
    """
    leaderboard: pd.DataFrame = registry.get("ruler").function("leaderboard")()
    return leaderboard


def longgenbench_table3() -> pd.DataFrame:
    """LongGenBench paper Table 3 (percent, 0..100) with the matching RULER model name."""
    return _resource("longgenbench_ruler", "table3.csv")


def published_pairs(source: str = "fig3b", metric: str = "wAvg") -> pd.DataFrame:
    """Published (RULER, LongGenBench) score pairs per model and length.

    Args:
        source: ``"fig3b"`` (the numbers behind the paper's Fig. 3b, official notebook) or
            ``"table3"`` (the paper's Table 3 joined with the RULER README; only models RULER
            published).
        metric: the LongGenBench column for ``"table3"``: wAvg (default), CR, STIC_1 or STIC_2.

    Returns:
        Columns ``model, length (tokens), ruler (0..100), longgenbench (0..100), source``.

    Raises:
        LcevalError: unknown source or metric.
    """
    if source == "fig3b":
        df = _resource("longgenbench_ruler", "fig3b_official.csv")
        df["source"] = "fig3b"
        return df[["model", "length", "ruler", "longgenbench", "source"]]
    if source != "table3":
        raise LcevalError(f"unknown source {source!r}; choose fig3b or table3")
    if metric not in METRICS:
        raise LcevalError(f"unknown LongGenBench metric {metric!r}; choose {', '.join(METRICS)}")
    t3 = longgenbench_table3().dropna(subset=["ruler_model"])
    lb = _keyed_leaderboard()
    rows = []
    for r in t3.itertuples(index=False):
        col = _RULER_COL[int(r.length)]
        rows.append(
            {
                "model": r.model,
                "length": int(r.length),
                "ruler": float(lb.loc[r.ruler_model, col]),
                "longgenbench": float(getattr(r, metric)),
                "source": f"table3:{metric}",
            }
        )
    return pd.DataFrame(rows, columns=["model", "length", "ruler", "longgenbench", "source"])


def correlate(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pearson and Spearman correlation over models, per length.

    Args:
        pairs: columns ``model, length, ruler, longgenbench`` (one row per model and length).

    Returns:
        One row per length: ``length, n_models, pearson_r, pearson_p, spearman_rho, spearman_p,
        paper_pearson`` (the paper's value at that length or NaN), ``note``. With fewer than 3
        models, or a constant column, the coefficients are NaN and ``note`` says why.

    Raises:
        LcevalError: a required column is missing.

    Source: LongGenBench paper Sec. 3.5 / Fig. 3b (Pearson); Spearman added by lceval.
    """
    need = {"model", "length", "ruler", "longgenbench"}
    if not need <= set(pairs.columns):
        raise LcevalError(
            f"correlation pairs need columns {sorted(need)}, got {list(pairs.columns)}"
        )
    rows = []
    for length, part in pairs.dropna(subset=["ruler", "longgenbench"]).groupby("length", sort=True):
        x, y = part["ruler"].to_numpy(float), part["longgenbench"].to_numpy(float)
        row = {
            "length": int(length),
            "n_models": len(part),
            "pearson_r": math.nan,
            "pearson_p": math.nan,
            "spearman_rho": math.nan,
            "spearman_p": math.nan,
            "paper_pearson": PAPER_PEARSON.get(int(length), math.nan),
            "note": "",
        }
        if len(part) < 3:
            row["note"] = f"{len(part)} model(s): a correlation needs at least 3"
        elif np.ptp(x) == 0 or np.ptp(y) == 0:
            row["note"] = "a score column is constant: correlation undefined"
        else:
            pr = stats.pearsonr(x, y)
            sr = stats.spearmanr(x, y)
            row.update(
                pearson_r=float(pr.statistic),
                pearson_p=float(pr.pvalue),
                spearman_rho=float(sr.statistic),
                spearman_p=float(sr.pvalue),
            )
        rows.append(row)
    return pd.DataFrame(
        rows,
        columns=[
            "length",
            "n_models",
            "pearson_r",
            "pearson_p",
            "spearman_rho",
            "spearman_p",
            "paper_pearson",
            "note",
        ],
    )


def measured_pairs(
    ruler_runs: Sequence[str],
    longgenbench_runs: Sequence[str],
    *,
    metric: str = "wAvg",
    root: str | Path | None = None,
) -> pd.DataFrame:
    """(RULER, LongGenBench) pairs per model and length from scored lceval run folders.

    Args:
        ruler_runs: run ids holding scored RULER samples.
        longgenbench_runs: run ids holding scored LongGenBench samples.
        metric: LongGenBench column (wAvg, CR, STIC_1, STIC_2; percent).
        root: the outputs folder (None: ``lceval.core.io.outputs_root()``).

    Returns:
        Columns ``model, length, ruler, longgenbench, source`` (``source="measured"``); only
        models and lengths present in both (RULER length in tokens == LongGenBench 16K / 32K).

    Raises:
        LcevalError: a run is missing or unscored, or the metric is unknown.
    """
    ruler = registry.get("ruler")
    ruler_tables = ruler.function("tables")
    load_summary = registry.get("longgenbench").function("summary")

    if metric not in METRICS:
        raise LcevalError(f"unknown LongGenBench metric {metric!r}; choose {', '.join(METRICS)}")
    rs = []
    for rid in ruler_runs:
        run = RunDir(rid, root)
        samples = [s for s in run.read_samples() if s.benchmark == "ruler"]
        sc = ruler.scores_for(run.read_scores())[0]  # the default scorer's rows
        rs.append(ruler_tables(sc, samples)["summary"])
    ls = []
    for rid in longgenbench_runs:
        summ = load_summary(rid, root)
        label = summ["length_label"].where(summ["length_label"].isin(LGB_LENGTHS), summ["version"])
        summ = summ.assign(length=label.map(LGB_LENGTHS))
        ls.append(summ[["model", "length", metric]].rename(columns={metric: "longgenbench"}))
    cols = ["model", "length", "ruler", "longgenbench", "source"]
    if not rs or not ls:
        return pd.DataFrame(columns=cols)
    r = pd.concat(rs).groupby(["model", "length"], as_index=False)["score"].mean()
    r = r.rename(columns={"score": "ruler"})
    lg = pd.concat(ls).dropna(subset=["length"]).astype({"length": int})
    lg = lg.groupby(["model", "length"], as_index=False)["longgenbench"].mean()
    out = r.merge(lg, on=["model", "length"], how="inner")
    out["source"] = "measured"
    return out[cols]


def with_runs(published: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Published pairs and the user's run pairs in one table, ``source`` marking each row
    (``published: <source>`` or ``this run``); the CSV behind the Fig. 3b scatter."""
    pub = published.assign(source="published: " + published["source"].astype(str))
    mine = runs.assign(source=THIS_RUN)
    cols = ["source", "model", "length", "ruler", "longgenbench"]
    return pd.concat([mine[cols], pub[cols]], ignore_index=True)


def readme_pairs(
    longgenbench_runs: Sequence[str],
    ruler_names: Mapping[str, str],
    *,
    metric: str = "wAvg",
    root: str | Path | None = None,
) -> pd.DataFrame:
    """The run's LongGenBench scores paired with the RULER README's score of the same model.

    For a model the user ran on LongGenBench but not on RULER, when the README published it (the
    paper's Fig. 3b takes its RULER scores from the README too).

    Args:
        longgenbench_runs: scored LongGenBench run ids.
        ruler_names: run model name -> its README row as ``table3.csv`` names them
            (``"Llama3.1 (8B)"``, ``"<model> (<size>)"``, or the bare name without a size).
        metric: LongGenBench column (wAvg, CR, STIC_1, STIC_2; percent).
        root: the outputs folder.

    Returns:
        Columns ``model, length, ruler, longgenbench, source`` (``source="run + README"``); only
        the models named in ``ruler_names``.

    Raises:
        LcevalError: an unknown metric or README row, or a missing run.
    """
    load_summary = registry.get("longgenbench").function("summary")
    if metric not in METRICS:
        raise LcevalError(f"unknown LongGenBench metric {metric!r}; choose {', '.join(METRICS)}")
    lb = _keyed_leaderboard()
    unknown = [v for v in ruler_names.values() if v not in lb.index]
    if unknown:
        raise LcevalError(f"RULER README has no row {unknown[0]!r}; e.g. {', '.join(lb.index[:3])}")
    rows = []
    for rid in longgenbench_runs:
        summ = load_summary(rid, root)
        for r in summ.itertuples(index=False):
            length = LGB_LENGTHS.get(str(r.length_label), LGB_LENGTHS.get(str(r.version)))
            if r.model not in ruler_names or length is None:
                continue
            ruler = lb.loc[ruler_names[r.model], _RULER_COL[length]]
            rows.append(
                {
                    "model": r.model,
                    "length": length,
                    "ruler": float(ruler),
                    "longgenbench": float(getattr(r, metric)),
                    "source": "run + README",
                }
            )
    return pd.DataFrame(rows, columns=["model", "length", "ruler", "longgenbench", "source"])


def _keyed_leaderboard() -> pd.DataFrame:
    """The README leaderboard indexed as ``table3.csv``'s ``ruler_model`` names rows."""
    lb = ruler_leaderboard()
    lb.index = [
        f"{m} ({z})" if isinstance(z, str) and z else m
        for m, z in zip(lb["model"], lb["size"], strict=True)
    ]
    return lb


def correlation_figure(
    pairs: pd.DataFrame,
    folder: str | Path,
    name: str = "ruler_correlation",
    title: str = "",
    *,
    runs: pd.DataFrame | None = None,
    models: Sequence[str] | None = None,
) -> list[Path]:
    """Scatter of LongGenBench against RULER with a least-squares line per length (PNG + PDF).

    Args:
        pairs: the published (or reference) pairs: columns ``model, length, ruler,
            longgenbench``; the line and r are computed over all of them.
        folder: where to write ``<name>.png`` and ``<name>.pdf``.
        name: file stem.
        title: figure title.
        runs: the user's pairs (:func:`measured_pairs`), drawn on top as red stars labelled
            ``<model> (this run)``; they do not enter the line or r.
        models: the models of ``pairs`` to draw (None: all); the rest still count in r.

    Returns:
        The two written paths.
    """
    runs = runs if runs is not None else pairs.iloc[0:0]
    lengths = sorted(set(pairs["length"]) | set(runs["length"]))
    fig, axes = plt.subplots(
        1, max(1, len(lengths)), figsize=(4.5 * max(1, len(lengths)), 4), squeeze=False
    )
    for ax, length in zip(axes[0], lengths, strict=False):
        part = pairs[pairs["length"] == length]
        drawn = part if models is None else part[part["model"].isin(list(models))]
        ax.scatter(drawn["ruler"], drawn["longgenbench"], color="tab:blue", label="published")
        mine = runs[runs["length"] == length]
        if len(mine):
            ax.scatter(
                mine["ruler"],
                mine["longgenbench"],
                color="tab:red",
                marker="*",
                s=120,
                label=THIS_RUN,
                zorder=3,
            )
            for r in mine.itertuples(index=False):
                ax.annotate(
                    f"{r.model} ({THIS_RUN})",
                    (r.ruler, r.longgenbench),
                    fontsize=7,
                    color="tab:red",
                    fontweight="bold",
                    xytext=(3, -9),
                    textcoords="offset points",
                )
            ax.legend(fontsize=6, loc="lower right")
        for r in drawn.itertuples(index=False):
            ax.annotate(
                str(r.model),
                (r.ruler, r.longgenbench),
                fontsize=6,
                xytext=(3, 3),
                textcoords="offset points",
            )
        c = correlate(part)
        if len(part) >= 2 and np.ptp(part["ruler"].to_numpy(float)) > 0:
            slope, icpt = np.polyfit(
                part["ruler"].to_numpy(float), part["longgenbench"].to_numpy(float), 1
            )
            xs = np.linspace(part["ruler"].min(), part["ruler"].max(), 50)
            ax.plot(xs, slope * xs + icpt, color="grey", lw=1)
        r_txt = (
            f"r = {c['pearson_r'].iloc[0]:.2f}"
            if len(c) and not math.isnan(c["pearson_r"].iloc[0])
            else "r undefined"
        )
        paper = PAPER_PEARSON.get(int(length))
        ax.set_title(
            f"{_RULER_COL.get(int(length), length)}: {r_txt}"
            + (f" (paper {paper:.2f})" if paper else ""),
            fontsize=9,
        )
        ax.set_xlabel("RULER (0..100)")
        ax.set_ylabel("LongGenBench (0..100)")
    if not lengths:
        axes[0][0].text(0.5, 0.5, "no pairs", ha="center", va="center")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, folder, name)


def correlation_summary(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Stack named correlation tables into one (column ``data`` = the name)."""
    parts = [t.assign(data=k) for k, t in tables.items() if len(t)]
    if not parts:
        return pd.DataFrame(columns=["data", "length", "n_models", "pearson_r", "paper_pearson"])
    out = pd.concat(parts, ignore_index=True)
    return out[["data"] + [c for c in out.columns if c != "data"]]


def scored_runs(run_ids: Sequence[str], root: str | Path | None = None) -> list[str]:
    """The run ids among ``run_ids`` whose folder holds a scores.parquet (others are skipped).

    Lets the correlation notebook default to the demo runs of the RULER and LongGenBench
    notebooks when they exist and fall back to the published data alone otherwise.
    """
    return [r for r in run_ids if RunDir(r, root).scores.exists()]


def headline(summary: pd.DataFrame) -> pd.DataFrame:
    """The study's headline: each correlation of :func:`correlation_summary` with a 95% CI.

    Args:
        summary: :func:`correlation_summary`'s table (``data, length, n_models, pearson_r,
            paper_pearson``, ...).

    Returns:
        One row per (data, length): ``data, length, n_models, pearson_r, low, high,
        paper_pearson, note``; ``low``/``high`` is the 95% interval of Pearson's r by Fisher's z
        (``tanh(atanh(r) +- 1.96 / sqrt(n - 3))``, NaN with fewer than 4 models), ``note`` says
        why a row has no coefficient.

    Source: LongGenBench Sec. 3.5 / Fig. 3b (Pearson r over models per length); the interval
    is lceval's (the paper prints none).
    """
    cols = ["data", "length", "n_models", "pearson_r", "low", "high", "paper_pearson", "note"]
    rows = []
    for r in summary.itertuples(index=False):
        rho, n = float(r.pearson_r), int(r.n_models)
        low = high = math.nan
        if n > 3 and abs(rho) < 1:
            z, half = math.atanh(rho), 1.96 / math.sqrt(n - 3)
            low, high = math.tanh(z - half), math.tanh(z + half)
        note = str(getattr(r, "note", "") or "")
        if not note and n <= 3:
            note = f"{n} models: no interval below 4"
        rows.append([r.data, int(r.length), n, rho, low, high, r.paper_pearson, note])
    return pd.DataFrame(rows, columns=cols)


def missing_pairs(
    ruler_runs: Sequence[str],
    longgenbench_runs: Sequence[str],
    measured: pd.DataFrame,
    runs_pairs: pd.DataFrame,
    *,
    metric: str = "wAvg",
    root: str | Path | None = None,
) -> pd.DataFrame:
    """Why ``pairs_measured`` holds what it holds and why "Fig. 3b with this run's models" adds
    nothing, as one row per finding (``table, finding``).

    A measured pair needs one model scored on RULER and on LongGenBench at the same length (in
    tokens: LongGenBench's 16K / 32K, RULER's 16384 / 32768); the run pairs of the Fig. 3b
    figure are those pairs plus :func:`readme_pairs` (``ruler_names``). This names the models
    and lengths each side has, so an empty table says which side is missing.
    """
    ruler = registry.get("ruler")
    ruler_tables = ruler.function("tables")
    load_summary = registry.get("longgenbench").function("summary")
    have_r: set[tuple[str, int]] = set()
    for rid in ruler_runs:
        run = RunDir(rid, root)
        samples = [s for s in run.read_samples() if s.benchmark == "ruler"]
        summary = ruler_tables(ruler.scores_for(run.read_scores())[0], samples)["summary"]
        have_r |= {
            (str(m), int(n)) for m, n in zip(summary["model"], summary["length"], strict=True)
        }
    have_l: set[tuple[str, int]] = set()
    for rid in longgenbench_runs:
        summ = load_summary(rid, root)
        for m, label, version in zip(
            summ["model"], summ["length_label"], summ["version"], strict=True
        ):
            n = LGB_LENGTHS.get(str(label), LGB_LENGTHS.get(str(version)))
            have_l |= {(str(m), int(n))} if n is not None else set()

    def names(pairs: set[tuple[str, int]]) -> str:
        return "; ".join(f"{m} at {n:,}" for m, n in sorted(pairs)) or "none"

    rows = [
        [
            "pairs_measured",
            f"scored RULER runs ({', '.join(ruler_runs) or 'none'}): {names(have_r)}",
        ],
        [
            "pairs_measured",
            f"scored LongGenBench runs ({', '.join(longgenbench_runs) or 'none'}): {names(have_l)}",
        ],
        [
            "pairs_measured",
            f"{len(measured)} (model, length) pair(s) in both"
            + (
                ""
                if len(measured)
                else ": none, so no measured correlation (score one model on both at 16K or 32K)"
            ),
        ],
        [
            "Fig. 3b with this run's models",
            f"{len(runs_pairs)} run pair(s) added to the published points"
            + (
                ""
                if len(runs_pairs)
                else ": none, so the figure equals the published Fig. 3b (add measured pairs, "
                "or map a LongGenBench model to its RULER README row with ruler_names)"
            ),
        ],
    ]
    return pd.DataFrame(rows, columns=["table", "finding"])


STUDY = "correlation"
"""Where the study's files go: tables under ``report/correlation/``, figures named
``correlation_*`` (the report page's section of the study, :data:`CAPTIONS`)."""

CAPTIONS: dict[str, tuple[str, str]] = {
    "correlation/headline": (
        "Headline",
        "Pearson r between RULER and LongGenBench scores over models, per length, with its 95% "
        "CI (Fisher z; lceval's, the paper prints none) beside the paper's r (0.51 at 16K, "
        "0.66 at 32K); data: fig3b = the official notebook's numbers, table3 = Table 3 vs "
        "RULER's README, measured = this run's pairs.",
    ),
    "correlation/summary": (
        "Fig. 3b",
        "Pearson and Spearman correlation (r, p) per data set and length, n models, the "
        "paper's r beside it; a note where a coefficient is undefined.",
    ),
    "correlation/pairs_fig3b": (
        "Fig. 3b",
        "The (RULER, LongGenBench) score pairs of Fig. 3b as the official notebook holds them "
        "(percent, per model and length).",
    ),
    "correlation/pairs_table3": (
        "Table 3",
        "LongGenBench Table 3's metric paired with RULER's README score of the same model "
        "(percent, per model and length).",
    ),
    "correlation/pairs_measured": (
        "Sec. 3.5",
        "This run's pairs: models scored on both RULER and LongGenBench at the same length "
        "(percent); empty when no model was scored on both (see correlation/pairs_missing).",
    ),
    "correlation/pairs_fig3b_with_runs": (
        "Fig. 3b",
        "Fig. 3b's published pairs with this run's pairs (measured and README-paired) marked "
        "'this run' (percent).",
    ),
    "correlation/pairs_missing": (
        "Sec. 3.5",
        "Why the measured pairs hold what they hold: the models and lengths each side's runs "
        "scored, and whether the Fig. 3b figure with this run's models adds any point.",
    ),
    "correlation_fig3b": (
        "Fig. 3b",
        "RULER score (x, percent) against LongGenBench score (y, percent) per model, one panel "
        "per length, from the official notebook's numbers; r in each panel.",
    ),
    "correlation_table3": (
        "Table 3",
        "Table 3's LongGenBench metric (y, percent) against RULER's README score (x, percent) "
        "per model and length; r in each panel.",
    ),
    "correlation_fig3b_runs": (
        "Fig. 3b",
        "Fig. 3b with this run's pairs drawn over the published points; identical to Fig. 3b "
        "when the run adds no pair (correlation/pairs_missing says why).",
    ),
}
"""Captions of the study's report files (``name -> (paper item, caption)``, as a benchmark's
report module declares them for ``report/index.html``)."""


def study_meta(
    run_id: str,
    ruler_runs: Sequence[str],
    longgenbench_runs: Sequence[str],
    *,
    metric: str = "wAvg",
) -> Any:
    """The study run's ``run.json`` (a :class:`lceval.core.records.RunMeta`): its parameters, and as
    sources the published files it reads (path under lceval, sha256) and the run folders it
    paired, so the page's provenance says what the correlation rests on."""
    files = {}
    for name in ("fig3b_official.csv", "table3.csv"):
        path = registry.resources("longgenbench").joinpath("ruler_correlation", name)
        with resources.as_file(path) as p:
            files[name] = {
                "path": f"lceval/benchmarks/longgenbench/resources/ruler_correlation/{name}",
                "sha256": hashlib.sha256(Path(p).read_bytes()).hexdigest(),
            }
    runs = {
        "RULER runs": {"name": ", ".join(ruler_runs) or "none scored"},
        "LongGenBench runs": {"name": ", ".join(longgenbench_runs) or "none scored"},
    }
    params = {
        "ruler_runs": list(ruler_runs),
        "longgenbench_runs": list(longgenbench_runs),
        "metric": metric,
    }
    return new_meta(run_id, params=params, sources={STUDY: {**files, **runs}})
