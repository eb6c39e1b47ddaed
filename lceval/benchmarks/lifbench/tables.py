"""LIFEval aggregates as tidy tables: task ARS, overall ARS, IFP, IFS, with bootstrap CIs.

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

The published numbers and the checks against them are ``published.py``; the report (figures,
files) is ``report.py``.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from lceval.benchmarks.lifbench.build import length_label
from lceval.benchmarks.lifbench.gold import CAPABILITIES, CAPABILITY_MAP, RUBRIC, TASK_POINTS
from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.metrics import (
    Headline,
    SumStatistic,
    bootstrap,
    bootstrap_sums,
    coefficient_of_variation,
    mean_statistic,
)

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
PUBLISHED_T4 = "published (paper Table 4)"
"""``source`` of the paper's Table 4 rows (``resources/paper_table4.csv``)."""

_RES = "lceval.benchmarks.lifbench.resources"


# --------------------------------------------------------------------------------------------
# tidy tables
# --------------------------------------------------------------------------------------------


def score_table(scores: pd.DataFrame, samples: Iterable[Sample]) -> pd.DataFrame:
    """Scores joined with the samples' grouping fields, item scores as ``item:<name>`` columns.

    Args:
        scores: ``lceval.core.io.scores_frame`` rows (``parts`` as JSON strings or dicts).
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


def ifs_gap(extension: pd.DataFrame, random: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3 (Appendix B): the IFS gap per perspective, expression extension minus random
    sampling, per model and its mean over the models.

    Args:
        extension: :func:`ifs_table` of a run built with the expression extension
            (``expressions: cluster`` or ``official``, the paper's clustered selection).
        random: :func:`ifs_table` of the same models on a run built with
            ``expressions: random`` (Appendix B's random-sampling baseline).

    Returns:
        Indexed by model (the models both runs hold, in ``extension``'s order) then ``MEAN``
        (the mean gap over those models, as the figure's last x position): ``Expression``,
        ``Variable``, ``Length`` (IFS differences, positive = higher IFS with expression
        extension). ``attrs["share_positive"]``: per perspective the share (0..1) of models with
        a positive gap (the paper: 0.75, 0.375, 0.625 over its sixteen models).

    Raises:
        LcevalError: the two tables share no model.
    """
    models = [m for m in extension.index if m in random.index]
    if not models:
        raise LcevalError(
            "the expression-extension and random-sampling runs share no model; answer both "
            "with the same models"
        )
    cols = list(PERSPECTIVES)
    gap = extension.loc[models, cols].astype(float) - random.loc[models, cols].astype(float)
    share = (gap > 0).sum() / gap.notna().sum().replace(0, np.nan)
    out = pd.concat([gap, gap.mean().to_frame("MEAN").T])
    out.index.name = "model"
    out.attrs["share_positive"] = share.to_dict()
    return out


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
