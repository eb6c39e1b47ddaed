"""LIFEval aggregates, tables and figures: task ARS, overall ARS, IFP, IFS, and the paper check.

Reproduces LIFBench (Wu et al., 2024) Sec. 4: overall ARS (Eq. 3), IFP per capability (Eq. 4),
IFS per perspective (Eq. 5-6), and the paper's Table 3 (per-task ARS), Table 4 (IFS with ranks),
Fig. 2 (IFP radar) and ARS against length. Checked against the official result files of
SheldonWu0327/LIFBench-2024 (``data/results/ifs1120.xlsx``, ``full_results_IFP.xlsx``), whose
per-sample scores (``data/scores/*.csv``) are shipped condensed to group means in
``lceval/benchmarks/lifbench/resources/official_group_means.csv``.

Definitions (all values 0..1 unless said otherwise):

- Task ARS = mean over the task's samples of ``Score.value`` (NaN scores skipped).
- Overall ARS (Eq. 3) = sum_t R_t * ARS_t / sum_t R_t with R_t the task points (99 in all).
- IFP_c (Eq. 4) = sum over items s mapped to c of mean item score (points) / sum of their points;
  an item mapped to two capabilities counts fully in each (``CAPABILITY_MAP``).
- IFS_t^p (Eq. 5-6) = std (ddof=1) / mean of the group means of task t's sample scores grouped by
  perspective p (expression id, variable id, length interval). IFS^p = mean over tasks (tasks
  where it is undefined, e.g. one group only, are skipped and counted in ``n_tasks``);
  IFS(AVG) = mean of the three perspectives. Lower is steadier. On the full grid the groups are
  the official ones; on the smoke set's fractional design (``build.py``, "Fractional design")
  the same marginal group means are balanced over the other two perspectives, two per perspective.

Length intervals are labelled as the paper labels them (``"4k"`` .. ``"128k"``, the builder's
``Sample.meta["length_label"]``), never by their token limit (3072 for 4k).

Published numbers beside the run: Table 3 (``table3_ars``) and the summary carry the paper's
Table 3 rows, IFP (``ifp``) the official ``full_results_IFP.xlsx`` rows, each marked in a
``source`` column (:data:`THIS_RUN`, :data:`PUBLISHED_T3`, :data:`PUBLISHED_IFP`); the IFP radar
draws the run's models over the published best, median and worst model by Table 3 ARS.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lceval.benchmarks.lifbench.build import length_label
from lceval.benchmarks.lifbench.gold import CAPABILITIES, CAPABILITY_MAP, RUBRIC, TASK_POINTS
from lceval.errors import LcevalError
from lceval.io import RunDir
from lceval.metrics import (
    Headline,
    SumStatistic,
    bootstrap,
    bootstrap_sums,
    coefficient_of_variation,
    mean_statistic,
)
from lceval.records import Sample
from lceval.reporting import save_figure, save_table

TABLE3_ORDER: tuple[str, ...] = (
    "OR",
    "OQ",
    "OE",
    "LSI",
    "LMI",
    "LOI",
    "LOE",
    "LBI",
    "LBE",
    "MB",
    "MF",
)
"""Task columns in the order of the paper's Table 3."""

PERSPECTIVES: dict[str, str] = {
    "Expression": "expression_id",
    "Variable": "variable_id",
    "Length": "length",
}
"""IFS perspective (paper's name) -> the Sample field grouping it."""

THIS_RUN = "this run"
"""``source`` of the rows computed from the run's scores."""
PUBLISHED_T3 = "published (paper Table 3)"
"""``source`` of the paper's Table 3 rows (``resources/paper_table3.csv``)."""
PUBLISHED_T34 = "published (paper Tables 3-4)"
"""``source`` of the published rows of the summary (ARS of Table 3, IFS(AVG) of Table 4)."""
PUBLISHED_IFP = "published (official IFP)"
"""``source`` of the official IFP rows (``full_results_IFP.xlsx``, ``official_results.csv``)."""

_RES = "lceval.benchmarks.lifbench.resources"


# --------------------------------------------------------------------------------------------
# tidy tables
# --------------------------------------------------------------------------------------------


def score_table(scores: pd.DataFrame, samples: Iterable[Sample]) -> pd.DataFrame:
    """Scores joined with the samples' grouping fields, item scores as ``item:<name>`` columns.

    Args:
        scores: ``lceval.io.scores_frame`` rows (``parts`` as JSON strings or dicts).
        samples: the run's samples (joined by ``sample_id``).

    Returns:
        One row per score: ``sample_id, model, task, value, expression_id, variable_id, length``
        (tokens), ``length_label`` (``"4k"``..; the sample's ``meta["length_label"]``) and
        ``item:<item>`` (points). Rows of samples not given are dropped.
    """
    cols = ["sample_id", "expression_id", "variable_id", "length", "length_label"]
    meta = pd.DataFrame(
        [
            {
                "sample_id": s.id,
                "expression_id": s.expression_id,
                "variable_id": s.variable_id,
                "length": s.length,
                "length_label": (s.meta or {}).get("length_label")
                or (length_label(s.length) if s.length is not None else None),
            }
            for s in samples
        ],
        columns=cols,
    )
    base = scores[["sample_id", "model", "task", "value"]].reset_index(drop=True)
    parts = [json.loads(p) if isinstance(p, str) else dict(p or {}) for p in scores["parts"]]
    items = pd.DataFrame(parts).add_prefix("item:")
    return pd.concat([base, items], axis=1).merge(meta, on="sample_id", how="inner")


def task_ars(table: pd.DataFrame) -> pd.DataFrame:
    """Table 3: task ARS per model (rows) and task (columns, paper order), plus ``Overall``.

    Args:
        table: :func:`score_table` output (``model``, ``task``, ``value``).

    Returns:
        DataFrame indexed by model; columns the tasks present and ``Overall`` (Eq. 3).
    """
    wide = table.pivot_table(index="model", columns="task", values="value", aggfunc="mean")
    wide = wide[[t for t in TABLE3_ORDER if t in wide.columns]]
    wide["Overall"] = overall_ars(wide)
    wide.columns.name = None
    return wide


def overall_ars(per_task: pd.DataFrame, points: Mapping[str, float] = TASK_POINTS) -> pd.Series:
    """Eq. 3: task ARS weighted by task points, over the tasks each model has a value for.

    Args:
        per_task: models x task codes of task ARS (other columns are ignored).
        points: task -> points (default the official rubric totals, 99 in all).

    Returns:
        Series of overall ARS per model (NaN when a model has no task value).
    """
    cols = [c for c in per_task.columns if c in points]
    values = per_task[cols].to_numpy(dtype=float)
    w = np.array([points[c] for c in cols], dtype=float)
    mask = ~np.isnan(values)
    num = np.where(mask, values, 0.0) @ w
    den = mask.astype(float) @ w
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.Series(
            np.where(den > 0, num / np.where(den > 0, den, 1), np.nan),
            index=per_task.index,
            name="Overall",
        )


def item_means(table: pd.DataFrame) -> pd.DataFrame:
    """Mean score (points) of every rubric item per model and task, long format.

    Returns:
        Columns ``model, task, item, mean`` (NaN-valued scores are skipped).
    """
    rows = []
    for (model, task), grp in table[table["value"].notna()].groupby(["model", "task"]):
        for item in RUBRIC.get(str(task), {}):
            col = f"item:{item}"
            if col in grp:
                rows.append({"model": model, "task": task, "item": item, "mean": grp[col].mean()})
    return pd.DataFrame(rows, columns=["model", "task", "item", "mean"])


def ifp(items: pd.DataFrame) -> pd.DataFrame:
    """Eq. 4: Instruction Following Performance per capability (Fig. 2).

    Args:
        items: :func:`item_means` output (``model, task, item, mean`` in points).

    Returns:
        Models x capabilities (Fmt, Logit, Num, Ori, Recog, Spat), 0..1.
    """
    num: dict[tuple[str, str], float] = {}
    den: dict[tuple[str, str], float] = {}
    for row in items.itertuples(index=False):
        for cap in CAPABILITY_MAP.get(row.task, {}).get(row.item, ()):
            key = (row.model, cap)
            num[key] = num.get(key, 0.0) + float(row.mean)
            den[key] = den.get(key, 0.0) + RUBRIC[row.task][row.item]
    models = sorted({m for m, _ in num})
    out = pd.DataFrame(
        [
            [
                num.get((m, c), np.nan) / den[(m, c)] if (m, c) in den else np.nan
                for c in CAPABILITIES
            ]
            for m in models
        ],
        index=pd.Index(models, name="model"),
        columns=list(CAPABILITIES),
    )
    return out


def group_means(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """Eq. 5: the ARS of each group of a task's samples (group = value of ``column``).

    Returns:
        Columns ``model, task, group, n, value``.
    """
    t = table[table["value"].notna() & table[column].notna()]
    g = t.groupby(["model", "task", column])["value"].agg(["size", "mean"]).reset_index()
    return g.rename(columns={column: "group", "size": "n", "mean": "value"})


def ifs_by_task(means: pd.DataFrame) -> pd.DataFrame:
    """Eq. 6 per task: std (ddof=1) / mean of the group means.

    Args:
        means: :func:`group_means` output for one perspective.

    Returns:
        Models x tasks (NaN where fewer than two groups or a zero mean).
    """
    s = means.groupby(["model", "task"])["value"].agg(coefficient_of_variation)
    wide = s.unstack("task")
    wide = wide[[t for t in TABLE3_ORDER if t in wide.columns]]
    wide.columns.name = None
    return wide


def ifs_table(
    table: pd.DataFrame | None = None,
    *,
    means: Mapping[str, pd.DataFrame] | None = None,
    ars: pd.Series | None = None,
) -> pd.DataFrame:
    """Table 4: IFS per perspective, IFS(AVG), overall ARS, with ranks; rows in the paper's order.

    Args:
        table: :func:`score_table` output (or give ``means`` and ``ars`` instead).
        means: perspective -> :func:`group_means` output (default: computed from ``table``).
        ars: overall ARS per model (default: computed from ``table``).

    Returns:
        Indexed by model: ``Expression, Variable, Length, IFS(AVG), ARS``, each with a
        ``<col>_rank`` (1 = best; IFS ascending, ARS descending; ties share the lower rank),
        ``n_tasks`` (tasks with a defined IFS per perspective, minimum), and ``mean_rank`` (mean of
        the three perspective ranks, which orders the rows as in the paper).

    Raises:
        LcevalError: neither ``table`` nor both ``means`` and ``ars`` are given.
    """
    if means is None or ars is None:
        if table is None:
            raise LcevalError("ifs_table needs a score table or group means and ARS")
        means = means or {p: group_means(table, c) for p, c in PERSPECTIVES.items()}
        ars = ars if ars is not None else task_ars(table)["Overall"]
    cols: dict[str, pd.Series] = {}
    n_tasks = None
    for p in PERSPECTIVES:
        per_task = ifs_by_task(means[p])
        cols[p] = per_task.mean(axis=1, skipna=True)
        counts = per_task.notna().sum(axis=1)
        n_tasks = counts if n_tasks is None else np.minimum(n_tasks, counts)
    out = pd.DataFrame(cols)
    out["IFS(AVG)"] = out[list(PERSPECTIVES)].mean(axis=1, skipna=False)
    out["ARS"] = ars.reindex(out.index)
    for c in [*PERSPECTIVES, "IFS(AVG)"]:
        out[f"{c}_rank"] = out[c].rank(method="min", ascending=True)
    out["ARS_rank"] = out["ARS"].rank(method="min", ascending=False)
    out["n_tasks"] = n_tasks
    out["mean_rank"] = out[[f"{p}_rank" for p in PERSPECTIVES]].mean(axis=1)
    order = [*PERSPECTIVES, "IFS(AVG)", "ARS"]
    out = out[[x for c in order for x in (c, f"{c}_rank")] + ["n_tasks", "mean_rank"]]
    out.index.name = "model"
    return out.sort_values(["mean_rank", "IFS(AVG)"], kind="stable")


def ars_by_length(table: pd.DataFrame) -> pd.DataFrame:
    """Overall ARS (Eq. 3 over the tasks present) per model and length interval.

    Args:
        table: :func:`score_table` output (``length`` in tokens; ``length_label`` optional).

    Returns:
        Models x length interval of overall ARS; columns are the paper's labels (``"4k"``,
        ``"8k"``, ...: the sample's ``length_label``, else ``build.length_label`` of the token
        limit), ordered by length.
    """
    t = table[table["length"].notna()]
    out = {}
    for length, grp in t.groupby("length"):
        per_task = grp.pivot_table(index="model", columns="task", values="value", aggfunc="mean")
        labels = grp["length_label"].dropna() if "length_label" in grp else pd.Series([])
        label = str(labels.iloc[0]) if len(labels) else length_label(int(length))
        out[label] = overall_ars(per_task)
    frame = pd.DataFrame(out)
    frame.columns.name = "length"
    return frame


def ars_ci(
    table: pd.DataFrame, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Overall ARS (Eq. 3) with a stratified percentile bootstrap CI (:func:`lceval.metrics.
    bootstrap`: samples resampled within tasks, task ARS weighted by task points).

    Samples are the unit: LIFBench's contexts are fixed design factors (one input X per scenario
    and length interval, shared by every task), not draws from a population of documents, so
    they are not resampled.

    Returns:
        Indexed by model: ``ARS, low, high, n`` (n = scored samples).
    """
    rows = []
    for model, grp in table.groupby("model"):
        est = bootstrap(
            grp["value"].to_numpy(float),
            groups=grp["task"].astype(str).tolist(),
            weights=TASK_POINTS,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
        rows.append({"model": model, "ARS": est.mean, "low": est.low, "high": est.high, "n": est.n})
    return pd.DataFrame(rows, columns=["model", "ARS", "low", "high", "n"]).set_index("model")


def task_ars_ci(
    table: pd.DataFrame, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Table 3 in long form with CIs: task ARS per model and task (tasks in the paper's order).

    Returns:
        Columns ``model, task, ARS, low, high, n`` (0..1; n = scored samples of the task).
    """
    rows = []
    for (model, task), grp in table.groupby(["model", "task"]):
        est = bootstrap(
            grp["value"].to_numpy(float), n_resamples=n_resamples, confidence=confidence, seed=seed
        )
        rows.append(
            {
                "model": model,
                "task": task,
                "ARS": est.mean,
                "low": est.low,
                "high": est.high,
                "n": est.n,
            }
        )
    out = pd.DataFrame(rows, columns=["model", "task", "ARS", "low", "high", "n"])
    order = {t: i for i, t in enumerate(TABLE3_ORDER)}
    key = out["task"].map(order).fillna(len(order))
    return out.assign(_o=key).sort_values(["model", "_o"]).drop(columns="_o").reset_index(drop=True)


def ifp_ci(
    table: pd.DataFrame, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """IFP per capability (Eq. 4) with a bootstrap CI: samples resampled within tasks, the item
    means and Eq. 4 recomputed on each resample (:func:`lceval.metrics.bootstrap_sums`).

    Returns:
        Columns ``model, capability, IFP, low, high, n`` (0..1; n = scored samples of the tasks
        that feed the capability); the point estimate equals :func:`ifp`'s.
    """
    rows = []
    for model, grp in table[table["value"].notna()].groupby("model"):
        tasks = sorted(set(grp["task"].astype(str)))
        for cap in CAPABILITIES:
            feeds = [
                (t, item)
                for t in tasks
                for item, caps in CAPABILITY_MAP.get(t, {}).items()
                if cap in caps and f"item:{item}" in grp
            ]
            if not feeds:
                continue
            part = grp[grp["task"].astype(str).isin({t for t, _ in feeds})]
            cols: dict[str, np.ndarray] = {}
            for _, item in feeds:
                x = part[f"item:{item}"].to_numpy(float)
                cols[f"s:{item}"] = np.nan_to_num(x)
                cols[f"c:{item}"] = (~np.isnan(x)).astype(float)
            est = bootstrap_sums(
                cols,
                _ifp_statistic(feeds),
                groups=part["task"].astype(str).tolist(),
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
            )
            rows.append(
                {
                    "model": model,
                    "capability": cap,
                    "IFP": est.mean,
                    "low": est.low,
                    "high": est.high,
                    "n": est.n,
                }
            )
    return pd.DataFrame(rows, columns=["model", "capability", "IFP", "low", "high", "n"])


def _ifp_statistic(feeds: Sequence[tuple[str, str]]) -> SumStatistic:
    """Eq. 4 from item sums per task: sum of the fed items' means / sum of their points."""
    points = sum(RUBRIC[t][item] for t, item in feeds)

    def stat(sums: Mapping[str, np.ndarray], groups: Sequence[Hashable]) -> np.ndarray:
        pos = {g: i for i, g in enumerate(groups)}
        total = sum(
            sums[f"s:{item}"][..., pos[t]] / sums[f"c:{item}"][..., pos[t]] for t, item in feeds
        )
        return np.asarray(total) / points

    return stat


def headline(scores: pd.DataFrame, samples: Iterable[Sample]) -> Headline:
    """LIFBench's headline for leaderboards and paired tests: overall ARS (Eq. 3; task ARS
    weighted by task points, samples as the unit, see :func:`ars_ci`), 0..1."""
    table = score_table(scores, samples)
    table = table[table["value"].notna()]
    frame = pd.DataFrame(
        {
            "model": table["model"].astype(str),
            "sample_id": table["sample_id"],
            "group": table["task"].astype(str),
            "cluster": table["sample_id"],
            "value": table["value"].astype(float),
            "count": 1.0,
        }
    )
    return Headline(
        "lifbench", "ARS (Eq. 3)", "0..1", frame, ("value", "count"), mean_statistic(TASK_POINTS)
    )


# --------------------------------------------------------------------------------------------
# published numbers and the paper check
# --------------------------------------------------------------------------------------------


def _resource_csv(name: str, **kwargs: object) -> pd.DataFrame:
    with resources.files(_RES).joinpath(name).open("r", encoding="utf-8") as f:
        return pd.read_csv(f, **kwargs)  # type: ignore[arg-type]


def paper_table3() -> pd.DataFrame:
    """The paper's Table 3 as printed (task ARS, 3 decimals), indexed by model key."""
    return _resource_csv("paper_table3.csv").set_index("model")


def paper_table4() -> pd.DataFrame:
    """The paper's Table 4 as printed (IFS with ranks, ARS with rank), in the paper's row order."""
    return _resource_csv("paper_table4.csv").set_index("model")


def official_results() -> pd.DataFrame:
    """The official result files' numbers: ``ifs1120.xlsx`` (IFS, ranks, ARS as wavg) and
    ``full_results_IFP.xlsx`` (IFP); the ``standard`` row is the gold answers themselves."""
    return _resource_csv("official_results.csv").set_index("model")


def official_group_means() -> pd.DataFrame:
    """The official per-sample scores (``data/scores/*.csv``) condensed: per model and task, the
    mean total (``value``, 0..1) and item means (``item:<name>``, points) over all samples
    (``perspective == "all"``) and the mean total per expression / variable / length group."""
    return _resource_csv("official_group_means.csv")


# --------------------------------------------------------------------------------------------
# the run beside the published models
# --------------------------------------------------------------------------------------------


def _marked(frame: pd.DataFrame, source: str, taken: Iterable[object] = ()) -> pd.DataFrame:
    """``frame`` with a leading ``source`` column; rows named like one in ``taken`` (a run's
    model) are renamed ``<model> (published)`` so that no model name appears twice."""
    names = {str(m) for m in taken}
    out = frame.rename(index=lambda m: f"{m} (published)" if str(m) in names else m)
    out.insert(0, "source", source)
    return out


def published_ifp() -> pd.DataFrame:
    """The official IFP per capability (``full_results_IFP.xlsx``): models x Fmt..Spat, 0..1,
    without the ``standard`` row (the gold answers scored as a model)."""
    return official_results().drop(index="standard", errors="ignore")[list(CAPABILITIES)]


def table3_with_published(t3: pd.DataFrame) -> pd.DataFrame:
    """The run's Table 3 beside the paper's Table 3 rows, ordered by overall ARS.

    The published rows are the paper's numbers as printed (3 decimals, over all six length
    intervals; their ``Overall`` is the paper's, see :func:`paper_check`); a smoke run's rows
    cover only its own lengths and samples, so read its place among them as a rough one.

    Args:
        t3: :func:`task_ars` output (models x tasks and ``Overall``).

    Returns:
        Indexed by model: ``source`` (:data:`THIS_RUN` or :data:`PUBLISHED_T3`), the tasks in
        the paper's order, ``Overall``; sorted by ``Overall``, best first (NaN last).
    """
    paper = paper_table3()[[*TABLE3_ORDER, "Overall"]]
    out = pd.concat([_marked(t3, THIS_RUN), _marked(paper, PUBLISHED_T3, t3.index)])
    out = out[["source", *[t for t in TABLE3_ORDER if t in out.columns], "Overall"]]
    out.index.name = "model"
    return out.sort_values("Overall", ascending=False, kind="stable", na_position="last")


def ifp_with_published(cap: pd.DataFrame) -> pd.DataFrame:
    """The run's IFP (Eq. 4) beside the official IFP of the 20 published models.

    Args:
        cap: :func:`ifp` output (models x capabilities, 0..1).

    Returns:
        Indexed by model: ``source`` (:data:`THIS_RUN` or :data:`PUBLISHED_IFP`) and the six
        capabilities; the run's rows first, then the published ones in the official file's order.
    """
    out = pd.concat([_marked(cap, THIS_RUN), _marked(published_ifp(), PUBLISHED_IFP, cap.index)])
    out.index.name = "model"
    return out


def reference_models() -> dict[str, str]:
    """The published models the IFP radar draws: best, median and worst by the paper's Table 3
    ``Overall`` among the models with official IFP numbers (median: the lower middle one,
    10th of 20; ties keep the paper's row order).

    Returns:
        ``{"best": model, "median": model, "worst": model}``.
    """
    ars = paper_table3()["Overall"].reindex(published_ifp().index).dropna()
    ranked = ars.sort_values(ascending=False, kind="stable").index
    return {
        "best": str(ranked[0]),
        "median": str(ranked[(len(ranked) - 1) // 2]),
        "worst": str(ranked[-1]),
    }


def radar_reference() -> pd.DataFrame:
    """Official IFP of :func:`reference_models`, indexed by their legend labels
    (``"<model> (published; best ARS 0.764)"``)."""
    pub, ars = published_ifp(), paper_table3()["Overall"]
    rows = {
        f"{m} (published; {which} ARS {ars[m]:.3f})": pub.loc[m]
        for which, m in reference_models().items()
    }
    return pd.DataFrame(rows).T[list(CAPABILITIES)]


def summary_table(t3: pd.DataFrame, t4: pd.DataFrame) -> pd.DataFrame:
    """Overall ARS and IFS(AVG) of the run's models beside the paper's 20 models.

    Args:
        t3: :func:`task_ars` output of the run.
        t4: :func:`ifs_table` output of the run.

    Returns:
        Indexed by model: ``source`` (:data:`THIS_RUN` or :data:`PUBLISHED_T34`), ``ARS`` (Eq. 3;
        published: Table 3 ``Overall``), ``IFS(AVG)`` (published: Table 4), ``ARS_rank`` (1 =
        best among all rows); sorted by ARS, best first.
    """
    run = pd.DataFrame(
        {"ARS": t3["Overall"], "IFS(AVG)": t4["IFS(AVG)"].reindex(t3.index)}, index=t3.index
    )
    p3, p4 = paper_table3(), paper_table4()
    pub = pd.DataFrame({"ARS": p3["Overall"], "IFS(AVG)": p4["IFS(AVG)"].reindex(p3.index)})
    out = pd.concat([_marked(run, THIS_RUN), _marked(pub, PUBLISHED_T34, run.index)])
    out["ARS_rank"] = out["ARS"].rank(method="min", ascending=False)
    out.index.name = "model"
    return out.sort_values("ARS", ascending=False, kind="stable", na_position="last")


_PAPER_T3 = (
    "the paper's Overall is not Eq. 3 of its own printed task ARS (nor a plain or sample-weighted"
    " mean); the columns seem to come from different runs"
)
_STALE = (
    "ifs1120.xlsx was computed from an earlier state of the per-sample scores than the released"
    " data/scores/*.csv (IFP from those files matches to 6 decimals for every model)"
)


def _printed(x: float, decimals: int = 3) -> float:
    return float(np.round(x, decimals)) if np.isfinite(x) else float("nan")


def _check_row(
    table: str,
    model: str,
    quantity: str,
    paper: float,
    recomputed: float,
    tol: float,
    why: str,
    differs: str = "beyond the rounding of printed inputs",
) -> dict[str, object]:
    diff = recomputed - paper
    if not np.isfinite(recomputed):
        flag, expl = "missing", "not recomputable"
    elif abs(_printed(recomputed) - paper) < 1e-9:
        flag, expl = "exact", ""
    elif abs(diff) <= tol + 1e-9:
        flag, expl = "rounding", why
    else:
        flag, expl = "DIFFERS", differs
    return {
        "table": table,
        "model": model,
        "quantity": quantity,
        "paper": paper,
        "recomputed": recomputed,
        "recomputed_printed": _printed(recomputed),
        "diff": diff,
        "flag": flag,
        "explanation": expl,
    }


def paper_check() -> pd.DataFrame:
    """Recompute the paper's derived numbers from its own printed inputs.

    - Table 3 ``Overall`` from the 11 printed task ARS by Eq. 3.
    - Table 4 ``IFS(AVG)`` as the mean of the three printed perspectives.
    - Table 4 ranks (each perspective and IFS(AVG): ascending; ARS: descending, recomputed Eq. 3
      values break printed ties) and Table 4 ``ARS`` against Table 3 ``Overall``.

    Printed inputs carry up to 0.0005 rounding error each, so a derived value may differ from the
    printed one by up to 0.001 (flag ``rounding``); ``exact`` means equal at 3 decimals.

    Returns:
        Columns ``table, model, quantity, paper, recomputed, recomputed_printed, diff, flag,
        explanation``; flag is ``exact``, ``rounding``, ``DIFFERS`` or ``missing``.
    """
    t3, t4 = paper_table3(), paper_table4()
    rows = []
    eq3 = overall_ars(t3[list(TABLE3_ORDER)])
    for m in t3.index:
        rows.append(
            _check_row(
                "Table 3",
                m,
                "Overall (Eq. 3)",
                float(t3.at[m, "Overall"]),
                float(eq3[m]),
                0.001,
                "inputs printed at 3 decimals",
                _PAPER_T3,
            )
        )
    avg = t4[list(PERSPECTIVES)].mean(axis=1)
    for m in t4.index:
        rows.append(
            _check_row(
                "Table 4",
                m,
                "IFS(AVG)",
                float(t4.at[m, "IFS(AVG)"]),
                float(avg[m]),
                0.001,
                "mean of values printed at 3 decimals",
            )
        )
        rows.append(
            _check_row(
                "Table 4",
                m,
                "ARS = Table 3 Overall",
                float(t4.at[m, "ARS"]),
                float(t3.at[m, "Overall"]) if m in t3.index else np.nan,
                0.0,
                "",
            )
        )
    ranks = {c: t4[c].rank(method="min") for c in [*PERSPECTIVES, "IFS(AVG)"]}
    ranks["ARS"] = (t4["ARS"] + 1e-6 * eq3.reindex(t4.index).fillna(0)).rank(
        method="min", ascending=False
    )
    for c, r in ranks.items():
        for m in t4.index:
            p, q = int(t4.at[m, f"{c}_rank"]), int(r[m])
            rows.append(
                {
                    "table": "Table 4",
                    "model": m,
                    "quantity": f"{c} rank",
                    "paper": p,
                    "recomputed": q,
                    "recomputed_printed": q,
                    "diff": q - p,
                    "flag": "exact" if p == q else "DIFFERS",
                    "explanation": "" if p == q else "rank from printed values differs",
                }
            )
    order = t4[[f"{p}_rank" for p in PERSPECTIVES]].mean(axis=1)
    same = list(order.sort_values(kind="stable").index) == list(t4.index)
    rows.append(
        {
            "table": "Table 4",
            "model": "(all)",
            "quantity": "row order = mean rank",
            "paper": 1.0,
            "recomputed": float(same),
            "recomputed_printed": float(same),
            "diff": float(same) - 1.0,
            "flag": "exact" if same else "DIFFERS",
            "explanation": "" if same else "rows not ordered by the mean of the 3 ranks",
        }
    )
    return pd.DataFrame(rows)


def official_check() -> pd.DataFrame:
    """Recompute the official result files from the official per-sample scores with lceval's
    aggregation: overall ARS (Eq. 3; official ``wavg``), IFS per perspective and IFS(AVG)
    (Eq. 6, ddof=1; ``ifs1120.xlsx``, 3 decimals, with ranks) and IFP (Eq. 4;
    ``full_results_IFP.xlsx``, compared at 6 decimals).

    Returns:
        The same columns as :func:`paper_check` (table = the official file).
    """
    gm = official_group_means()
    ref = official_results()
    allrows = gm[gm["perspective"] == "all"]
    per_task = allrows.pivot_table(index="model", columns="task", values="value")
    ars = overall_ars(per_task)
    items = allrows.melt(
        id_vars=["model", "task"],
        value_vars=[c for c in gm if c.startswith("item:")],
        var_name="item",
        value_name="mean",
    ).dropna(subset=["mean"])
    items["item"] = items["item"].str.removeprefix("item:")
    cap = ifp(items)
    means = {
        p: gm[gm["perspective"] == p.lower()][["model", "task", "group", "n", "value"]]
        for p in PERSPECTIVES
    }
    t4 = ifs_table(means=means, ars=ars).drop(index="standard", errors="ignore")
    t4[[f"{c}_rank" for c in [*PERSPECTIVES, "IFS(AVG)", "ARS"]]] = (
        t4[[*PERSPECTIVES, "IFS(AVG)"]]
        .rank(method="min")
        .join(t4["ARS"].rank(method="min", ascending=False).rename("ARS"))
        .to_numpy()
    )
    rows = []
    for m in ref.index:
        rows.append(
            _check_row(
                "ifs1120.xlsx",
                m,
                "ARS (wavg, Eq. 3)",
                float(ref.at[m, "ARS"]),
                float(ars.get(m, np.nan)),
                0.0,
                "",
                _STALE,
            )
        )
        if m == "standard":
            continue
        for c in [*PERSPECTIVES, "IFS(AVG)"]:
            rows.append(
                _check_row(
                    "ifs1120.xlsx",
                    m,
                    f"IFS {c}",
                    float(ref.at[m, c]),
                    float(t4.at[m, c]) if m in t4.index else np.nan,
                    0.0,
                    "",
                    _STALE,
                )
            )
            p, q = int(ref.at[m, f"{c}_rank"]), int(t4.at[m, f"{c}_rank"])
            rows.append(
                {
                    "table": "ifs1120.xlsx",
                    "model": m,
                    "quantity": f"{c} rank",
                    "paper": p,
                    "recomputed": q,
                    "recomputed_printed": q,
                    "diff": q - p,
                    "flag": "exact" if p == q else "DIFFERS",
                    "explanation": "" if p == q else _STALE,
                }
            )
    for m in ref.index:
        for c in CAPABILITIES:
            r = _check_row(
                "full_results_IFP.xlsx",
                m,
                f"IFP {c}",
                float(ref.at[m, c]),
                float(cap.at[m, c]) if m in cap.index else np.nan,
                0.0,
                "",
            )
            got, want = float(r["recomputed"]), float(r["paper"])  # type: ignore[arg-type]
            r["recomputed_printed"] = round(got, 6)
            r["flag"] = "exact" if abs(got - want) < 5e-7 else "DIFFERS"
            r["explanation"] = "" if r["flag"] == "exact" else "beyond 6-decimal rounding"
            rows.append(r)
    return pd.DataFrame(rows)


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
