"""CIF-Bench analysis: task, overall and category scores; spread across instructions; the
published public and private leaderboards.

Reproduces CIF-Bench (Li et al., 2024):

- Sec. 3.3: ``S_t^m = 1/|D_t| sum_d 1/|I| sum_i s_t^m(i, d)`` (mean over inputs of the mean over
  instructions), the overall score as the mean of the task scores, and category scores as the
  mean over the tasks of a category (Tables 3, 4 and 13; a task can be in several categories).
- Sec. 5 "Instruction Diversity for Evaluation Robustness" (Table 9): how much scores move with
  the instruction. Per task, the score under each single instruction ``S_t^(i)`` and its spread
  (std with ddof 1, range); overall, the overall score under each single instruction; and the
  percentile-bootstrap 95% CI of the overall score (inputs resampled within each task, tasks
  weighted equally) with one instruction against all (up to five).
- Sec. 5 "Data Contamination Does Exist" (Table 7): the README's two leaderboards (private split
  with five instructions, public split with one), matched model by model through
  ``resources/model_names.csv``; the public-to-private change per model, the number that drop,
  and Kendall's tau and Spearman's rho between the splits' overall scores with bootstrap CIs
  (models resampled). A run that scored both splits gets the same change per model and source
  (:func:`run_public_private`), beside the published one in the report's figure.

Tables are computed per model, split and instruction source (official, user, generated): sources
are never pooled. Scores are 0..1 as the leaderboards print them (3 decimals there); nothing is
rounded here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lceval.benchmarks.cifbench import tables as cif_tables
from lceval.benchmarks.cifbench.gold import CATEGORIES, LEADERBOARD_COLUMN
from lceval.benchmarks.cifbench.tables import (
    KEYS,
    input_means,
    model_names,
    published_leaderboard,
    rank_correlation,
    task_scores,
)
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.metrics import Estimate, bootstrap
from lceval.report.coverage import comparable, run_coverage
from lceval.report.reporting import save_figure, save_table, unrank_subset_order

CAPTIONS: dict[str, tuple[str, str]] = {
    # name (report/<name>.csv or figures/<name>.png) -> (paper item, one-line caption)
    "cifbench/overall": (
        "Headline",
        "Overall score (mean of task scores S_t, 0..1, higher is better) per model, split and "
        "instruction source with its 95% bootstrap CI (ci_low, ci_high; inputs resampled "
        "within tasks), n_tasks and n_instructions.",
    ),
    "cifbench/leaderboard": (
        "Table 3",
        "The run's scores in the README leaderboards' shape: Overall and the 20 category "
        "scores (0..1, higher is better) per model, split and source; empty: no task of that "
        "category.",
    ),
    "cifbench/leaderboard_private_published": (
        "Table 3",
        "Private split, diversified instructions (Tables 3-4): the run's official-instruction "
        "rows (source 'this run') above the README's 28 models, Overall and 20 categories "
        "(0..1, higher is better); the run's rows are not ranked.",
    ),
    "cifbench/leaderboard_public_published": (
        "Table 13",
        "Public split, single instruction: the run's official-instruction rows (source 'this "
        "run') above the README's 28 models, Overall and 20 categories (0..1, higher is "
        "better); the run's rows are not ranked.",
    ),
    "cifbench/published_private": (
        "Table 3",
        "The README's private-split leaderboard as published (Tables 3-4): Overall and 20 "
        "category scores (0..1, higher is better) of the paper's 28 models.",
    ),
    "cifbench/published_public": (
        "Table 13",
        "The README's public-split leaderboard as published: Overall and 20 category scores "
        "(0..1, higher is better) of the paper's 28 models.",
    ),
    "cifbench/table6": (
        "Table 6",
        "Public-split overall score (0..1, higher is better) of the run's models and the 28 "
        "published ones, published rows in descending score; a run that is not the paper's "
        "grid is listed first, outside that order.",
    ),
    "cifbench/table5": (
        "Table 5",
        "Public split per model: overall, English-translated and newly annotated task means "
        "(0..1, higher is better), change = new - translated (and percent of translated), "
        "task counts.",
    ),
    "cifbench/table8": (
        "Table 8",
        "Performance shift with one instruction: existing tasks public -> private (unseen "
        "instances) and existing public -> new private tasks (unseen tasks); scores 0..1, "
        "change and percent (negative = a drop), task counts.",
    ),
    "cifbench/table9": (
        "Table 9",
        "Variance over tasks of the task scores (x 1e-3; lower = more even) with one "
        "instruction (var_single, var_single_mean) against all (var_diverse); difference = "
        "diverse - single (negative: diverse instructions steady the scores).",
    ),
    "cifbench/published_change": (
        "Table 7",
        "Published overall scores (0..1) per model on the public (1 instruction) and private (5) "
        "splits, change = private - public (negative = dropped), and each split's rank among "
        "the 28 published models (1 = best); published numbers only.",
    ),
    "cifbench/published_drops": (
        "Table 7",
        "Of the 28 published models, how many dropped from public to private and the mean "
        "change (0..1 points), beside the paper's claim.",
    ),
    "cifbench/published_correlation": (
        "Table 7",
        "Rank agreement of the published public and private overall scores: Kendall tau and "
        "Spearman rho (-1..1, 1 = same order) with p-value and 95% bootstrap CI over n models.",
    ),
    "cifbench/model_names": (
        "Table 7",
        "How each published model's name on the private leaderboard was matched to the public "
        "one (match: identical, case, or explicit: different spellings matched by hand).",
    ),
    "cifbench/run_change": (
        "Table 7",
        "The run's own public-to-private change over the tasks scored on both splits: public, "
        "private (all instructions) and private_one (first instruction) overall (0..1), "
        "change = private - public (negative = dropped).",
    ),
    "cifbench/categories": (
        "Fig. 2",
        "Score per category (0..1, higher is better) per model, split and source, over "
        "n_tasks of the run beside paper_tasks (the category's task count in the paper).",
    ),
    "cifbench/task_scores": (
        "Beyond the paper",
        "Task score S_t (0..1, higher is better) per model, split, instruction source and "
        "task, over n_inputs and n_instructions; n_nan: unscorable answers.",
    ),
    "cifbench/metrics_used": (
        "Beyond the paper",
        "Which metric scored each output type (accuracy, F1, BLEURT, chrF, ROUGE-L, "
        "model-based evaluator) per model, split and source: n scores, n_nan unscorable.",
    ),
    "cifbench/spread_by_task": (
        "Table 9",
        "Per task: min, max, std and range of the task score (0..1) across its instructions "
        "(lower = less sensitive to the wording), and the task score over all.",
    ),
    "cifbench/spread_by_instruction": (
        "Table 9",
        "Overall score (0..1, higher is better) under each instruction id alone, per model, "
        "split and source, over n_tasks.",
    ),
    "cifbench/spread_summary": (
        "Table 9",
        "Mean over tasks of the task-level std and range across instructions, and the std and "
        "range of the overall score across instructions (0..1 points, lower = steadier).",
    ),
    "cifbench/ci_width": (
        "Beyond the paper",
        "Width of the overall score's 95% bootstrap CI (0..1 points, narrower is more "
        "precise) with all instructions, one instruction (mean), the first alone; ratio = "
        "width_all / width_one (below 1: all instructions narrow the CI).",
    ),
    "cifbench_categories": (
        "Fig. 2",
        "Score per category (0..1, higher is better) of the run's models.",
    ),
    "cifbench_instruction_spread": (
        "Table 9",
        "Task score (0..1, higher is better) per task: mean over instructions (bar), the "
        "lowest and highest single instruction (markers); overall per instruction in titles.",
    ),
    "cifbench_published_public_private": (
        "Table 7",
        "Published overall scores, public split (1 instruction) against private (5), one point "
        "per model (below the diagonal = dropped), the run's models (x) where it scored both.",
    ),
}
"""Paper item and caption of each table and figure this report writes (report/index.html)."""


# -- the run's scores --------------------------------------------------------------------------
def instance_frame(scores: pd.DataFrame, samples: Sequence[Sample]) -> pd.DataFrame:
    """One row per scored instance: model, split, source, task, input_id, instruction_id,
    output_type, value (0..1 or NaN).

    Raises:
        LcevalError: a score whose sample is not among ``samples``.
    """
    rows = {
        s.id: (
            s.meta.get("split", s.scenario),
            s.meta.get("source", "official"),
            s.task,
            int(s.meta.get("input_id", s.variable_id or 0)),
            int(s.meta.get("instruction_id", s.expression_id or 0)),
            getattr(s.gold, "output_type", ""),
        )
        for s in samples
        if s.benchmark == "cifbench"
    }
    cols = ["split", "source", "task", "input_id", "instruction_id", "output_type"]
    if not len(scores):
        return pd.DataFrame(columns=["sample_id", "model", *cols, "value"])
    unknown = set(scores["sample_id"]) - set(rows)
    if unknown:
        raise LcevalError(f"cifbench report: scores for unknown sample(s), e.g. {min(unknown)}")
    meta = pd.DataFrame.from_dict(rows, orient="index", columns=cols)
    df = scores[["sample_id", "model", "value"]].join(meta, on="sample_id")
    return df[["sample_id", "model", *cols, "value"]]


def _tasks_equal_ci(per_input: pd.DataFrame, n_resamples: int, seed: int) -> Estimate:
    """The bootstrap CI of the mean of task means: inputs resampled within tasks, tasks weighted
    equally."""
    equal = dict.fromkeys(per_input["task"], 1.0)
    return bootstrap(
        per_input["value"],
        groups=per_input["task"],
        weights=equal,
        n_resamples=n_resamples,
        seed=seed,
    )


def overall_scores(inst: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The overall score (mean of task scores) per model, split and source, with its 95%
    percentile-bootstrap CI (inputs resampled within each task; tasks weighted equally).

    Columns: ``overall``, ``ci_low``, ``ci_high``, ``n_tasks``, ``n_instructions`` (most per
    task).
    """
    ts = task_scores(inst)
    per_input = input_means(inst)
    rows = []
    by_key = dict(iter(per_input.groupby(KEYS, sort=True)))
    for key, part in ts.groupby(KEYS, sort=True):
        est = _tasks_equal_ci(by_key[key], n_resamples, seed)
        rows.append(
            {
                **dict(zip(KEYS, key, strict=True)),
                "overall": float(part["score"].mean()),
                "ci_low": est.low,
                "ci_high": est.high,
                "n_tasks": int(part["score"].notna().sum()),
                "n_instructions": int(part["n_instructions"].max()),
            }
        )
    cols = [*KEYS, "overall", "ci_low", "ci_high", "n_tasks", "n_instructions"]
    return pd.DataFrame(rows, columns=cols)


def category_scores(ts: pd.DataFrame, categories: dict[str, list[str]]) -> pd.DataFrame:
    """Category scores (mean of the task scores of each category) per model, split and source.

    Args:
        ts: :func:`task_scores`.
        categories: task -> its categories (tasks without one are left out).

    Returns:
        Long table: ``category``, ``score``, ``n_tasks`` (scored tasks of the category in the
        run) and ``paper_tasks`` (the category's size in Appendix A.2).
    """
    rows = [
        {**r, "category": c}
        for r in ts.to_dict("records")
        for c in categories.get(str(r["task"]), [])
    ]
    if not rows:
        return pd.DataFrame(columns=[*KEYS, "category", "score", "n_tasks", "paper_tasks"])
    df = pd.DataFrame(rows)
    out = (
        df.groupby([*KEYS, "category"], sort=True)
        .agg(score=("score", "mean"), n_tasks=("score", "count"))
        .reset_index()
    )
    out["paper_tasks"] = out["category"].map(CATEGORIES)
    return out


def leaderboard_table(overall: pd.DataFrame, cats: pd.DataFrame) -> pd.DataFrame:
    """The run's scores in the README leaderboards' shape: one row per model, split and source;
    ``Overall`` then the 20 category columns (README names; NaN where the run has no task)."""
    wide = overall.set_index(KEYS)[["overall"]].rename(columns={"overall": "Overall"})
    if len(cats):
        c = cats.pivot_table(index=KEYS, columns="category", values="score")
        wide = wide.join(c)
    for name in CATEGORIES:
        if name not in wide.columns:
            wide[name] = np.nan
    wide = wide[["Overall", *CATEGORIES]]
    return wide.rename(columns=dict(LEADERBOARD_COLUMN))


def instruction_spread(inst: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """How scores move with the instruction (paper Sec. 5, Table 9).

    Returns:
        ``per_task``: per model, split, source and task: ``n_instructions``, the task score under
        each single instruction (``min``, ``max``, ``range``, ``std`` with ddof 1, NaN for one
        instruction) and ``score`` (the mean over instructions). ``overall``: per model, split,
        source and instruction: the overall score with that instruction alone (mean over the
        tasks that have it) and ``n_tasks``.
    """
    single = (
        inst.groupby([*KEYS, "task", "instruction_id"], sort=True)["value"].mean().reset_index()
    )
    g = single.groupby([*KEYS, "task"], sort=True)["value"]
    per_task = g.agg(
        n_instructions="count", min="min", max="max", std=lambda x: x.std(ddof=1), score="mean"
    ).reset_index()
    per_task["range"] = per_task["max"] - per_task["min"]
    overall = (
        single.groupby([*KEYS, "instruction_id"], sort=True)["value"]
        .agg(overall="mean", n_tasks="count")
        .reset_index()
    )
    return per_task, overall


def spread_summary(per_task: pd.DataFrame, overall_by_instruction: pd.DataFrame) -> pd.DataFrame:
    """Per model, split and source: the mean over tasks of the task-level std and range across
    instructions, and the std and range of the overall score across instructions."""
    t = per_task.groupby(KEYS, sort=True).agg(
        task_std=("std", "mean"), task_range=("range", "mean"), n_tasks=("task", "count")
    )
    o = overall_by_instruction.groupby(KEYS, sort=True)["overall"].agg(
        overall_std=lambda x: x.std(ddof=1),
        overall_range=lambda x: x.max() - x.min(),
        n_instructions="count",
    )
    return t.join(o).reset_index()


def ci_widths(inst: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Bootstrap 95% CI width of the overall score with one instruction against all.

    Per model, split and source with at least two instructions: ``width_all`` (inputs scored by
    the mean over all their instructions), ``width_one`` (the mean width over single
    instructions, each alone) and ``width_first`` (instruction 0 alone, the public split's
    setting); ``ratio`` = width_all / width_one. Inputs are resampled within tasks; tasks are
    weighted equally.
    """
    rows = []
    for key, part in inst.groupby(KEYS, sort=True):
        n_instr = int(part["instruction_id"].nunique())
        if n_instr < 2:
            continue

        def width(frame: pd.DataFrame) -> float:
            per_input = frame.groupby(["task", "input_id"])["value"].mean().reset_index()
            est = _tasks_equal_ci(per_input, n_resamples, seed)
            return est.high - est.low

        singles = {
            k: width(part[part["instruction_id"] == k])
            for k in sorted(part["instruction_id"].unique())
        }
        w_all = width(part)
        finite = [w for w in singles.values() if np.isfinite(w)]
        w_one = float(np.mean(finite)) if finite else np.nan
        rows.append(
            {
                **dict(zip(KEYS, key, strict=True)),
                "n_instructions": n_instr,
                "width_all": w_all,
                "width_one": w_one,
                "width_first": singles[min(singles)],
                "ratio": w_all / w_one if w_one > 0 else np.nan,
            }
        )
    cols = [*KEYS, "n_instructions", "width_all", "width_one", "width_first", "ratio"]
    return pd.DataFrame(rows, columns=cols)


def run_public_private(inst: pd.DataFrame) -> pd.DataFrame:
    """The run's own public-to-private change, where it scored both splits (paper Sec. 5).

    Per model and source, over the tasks scored in both splits (so both means cover the same
    tasks): ``public`` (overall score on the public split, all its instructions: one in the
    official data), ``private`` (all instructions, up to five: the README leaderboards'
    setting), ``private_one`` (the private split under its first instruction alone: Table 7's
    single-instruction setting), ``change`` = private - public, ``change_one`` = private_one -
    public, ``dropped`` (change < 0), ``n_tasks``. Empty when no model has both splits.
    """
    cols = ["model", "source", "n_tasks", "public", "private", "private_one", "change"]
    cols += ["change_one", "dropped"]
    if not len(inst):
        return pd.DataFrame(columns=cols)
    ts = task_scores(inst)
    first = inst[
        inst["instruction_id"] == inst.groupby([*KEYS, "task"])["instruction_id"].transform("min")
    ]
    ts_one = task_scores(first)
    rows = []
    for (model, source), part in ts.groupby(["model", "source"], sort=True):
        by_split = {sp: g.set_index("task")["score"].dropna() for sp, g in part.groupby("split")}
        if "public" not in by_split or "private" not in by_split:
            continue
        common = sorted(set(by_split["public"].index) & set(by_split["private"].index))
        if not common:
            continue
        one = ts_one[
            (ts_one["model"] == model)
            & (ts_one["source"] == source)
            & (ts_one["split"] == "private")
        ].set_index("task")["score"]
        pub = float(by_split["public"].loc[common].mean())
        priv = float(by_split["private"].loc[common].mean())
        priv_one = float(one.reindex(common).mean())
        rows.append(
            {
                "model": model,
                "source": source,
                "n_tasks": len(common),
                "public": pub,
                "private": priv,
                "private_one": priv_one,
                "change": priv - pub,
                "change_one": priv_one - pub,
                "dropped": priv < pub,
            }
        )
    return pd.DataFrame(rows, columns=cols)


# -- the published leaderboards -----------------------------------------------------------------


def published_change() -> pd.DataFrame:
    """Per model: ``public``, ``private`` (README overall scores), ``change`` = private - public,
    ``dropped`` (change < 0), ``rank_public``, ``rank_private`` (1 = best), sorted by change."""
    pub = published_leaderboard("public")["Overall"]
    priv = published_leaderboard("private")["Overall"]
    df = pd.DataFrame({"public": pub, "private": priv.reindex(pub.index)})
    df["change"] = df["private"] - df["public"]
    df["dropped"] = df["change"] < 0
    df["rank_public"] = df["public"].rank(ascending=False, method="min").astype(int)
    df["rank_private"] = df["private"].rank(ascending=False, method="min").astype(int)
    df.index.name = "model"
    return df.sort_values("change")


def published_tables(*, n_resamples: int = 2000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The published comparison: ``published_private``, ``published_public`` (README tables,
    matched names), ``model_names``, ``published_change`` (per model), ``published_drops`` (one
    row: models, dropped, mean change), ``published_correlation`` (Kendall / Spearman between the
    splits' overall scores with bootstrap CIs).

    Computed once per process and arguments (shipped numbers only; the bootstrap costs 1-3 s of
    each report on 2 cores); each call returns copies, which the caller may change."""
    return {k: v.copy() for k, v in _published_tables(n_resamples, seed).items()}


@functools.cache
def _published_tables(n_resamples: int, seed: int) -> dict[str, pd.DataFrame]:
    change = published_change()
    drops = pd.DataFrame(
        [
            {
                "models": len(change),
                "dropped": int(change["dropped"].sum()),
                "mean_change": float(change["change"].mean()),
                "paper_claim": "25/28 drop (Table 7, single instruction on both splits)",
            }
        ]
    )
    corr = rank_correlation(change["public"], change["private"], n_resamples=n_resamples, seed=seed)
    return {
        "published_private": published_leaderboard("private"),
        "published_public": published_leaderboard("public"),
        "model_names": model_names(),
        "published_change": change,
        "published_drops": drops,
        "published_correlation": corr,
    }


def _categories_by_task(samples: Sequence[Sample]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in samples:
        cats = s.meta.get("categories") or []
        if cats and s.task not in out:
            out[s.task] = list(cats)
    return out


def cifbench_tables(
    scores: pd.DataFrame,
    samples: Sequence[Sample],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """Every run table (module docstring): ``task_scores``, ``overall``, ``categories``,
    ``leaderboard``, ``spread_by_task``, ``spread_by_instruction``, ``spread_summary``,
    ``ci_width``, ``run_change`` (:func:`run_public_private`), ``metrics_used`` (per model,
    split, source and output type: how many scores, NaNs, and which metric the scorer's
    explanations name), and Tables 5, 8 and 9 (``table5``, ``table8``, ``table9``:
    :mod:`lceval.benchmarks.cifbench.tables`)."""
    inst = instance_frame(scores, samples)
    ts = task_scores(inst)
    overall = overall_scores(inst, n_resamples=n_resamples, seed=seed)
    cats = category_scores(ts, _categories_by_task(samples))
    per_task, by_instr = instruction_spread(inst)
    used = scores[["sample_id", "explanation"]].merge(inst, on="sample_id") if len(scores) else None
    if used is not None and len(used):
        used["metric"] = used["explanation"].str.extract(
            r"(accuracy|F1|BLEURT|chrF|ROUGE-L|model-based evaluator|generation failed"
            r"|judge .* failed|gave no score)",
            expand=False,
        )
        metrics = (
            used.groupby([*KEYS, "output_type", "metric"], dropna=False, sort=True)
            .agg(n=("value", "size"), n_nan=("value", lambda x: int(x.isna().sum())))
            .reset_index()
        )
    else:
        metrics = pd.DataFrame(columns=[*KEYS, "output_type", "metric", "n", "n_nan"])
    return {
        "task_scores": ts,
        "overall": overall,
        "categories": cats,
        "leaderboard": leaderboard_table(overall, cats),
        "spread_by_task": per_task,
        "spread_by_instruction": by_instr,
        "spread_summary": spread_summary(per_task, by_instr),
        "ci_width": ci_widths(inst, n_resamples=n_resamples, seed=seed),
        "run_change": run_public_private(inst),
        "metrics_used": metrics,
        "table5": cif_tables.table5(inst, cif_tables.origins(samples)),
        "table8": cif_tables.table8(inst, cif_tables.origins(samples)),
        "table9": cif_tables.table9(inst),
    }


def report_cifbench(
    run: RunDir, scores: pd.DataFrame, samples: Sequence[Sample]
) -> dict[str, pd.DataFrame]:
    """Write CIF-Bench tables (CSV) and figures (PNG, PDF) under the run's report/.

    Returns:
        :func:`cifbench_tables` plus :func:`published_tables` (published numbers, marked
        ``published_``), ``table6`` (the run's public overall beside the 28 published ones, in
        descending
        score; a run that is not the paper's grid, :mod:`lceval.report.coverage`, listed first,
        outside that order) and
        ``leaderboard_{public,private}_published`` (the run's leaderboard rows above the
        README's, ``source`` marking them).

    Raises:
        LcevalError: scores for unknown samples.
    """
    tables: dict[str, Any] = cifbench_tables(scores, samples)
    tables.update(published_tables())
    # Table 6 orders models by score: a run that is not the paper's grid (lceval.report.coverage) is
    # listed above the published rows, not placed among them.
    subset = {m for m, ok in comparable(run_coverage(run), "cifbench").items() if not ok}
    tables["table6"] = unrank_subset_order(cif_tables.table6(tables["overall"])[0], subset)
    for split in ("public", "private"):
        tables[f"leaderboard_{split}_published"] = cif_tables.leaderboard_with_published(
            tables["leaderboard"], split
        )
    folder = run.report / "cifbench"
    indexed = {"leaderboard", "published_private", "published_public", "published_change"}
    indexed |= {"table6", "leaderboard_public_published", "leaderboard_private_published"}
    for name, df in tables.items():
        save_table(df, folder, name, index=name in indexed)
    cats = tables["categories"]
    if len(cats):
        wide = cats.pivot_table(index="category", columns=KEYS, values="score")
        fig, ax = plt.subplots(figsize=(8, 4))
        wide.plot.bar(ax=ax, width=0.8)
        ax.set_ylabel("score (0..1)")
        ax.set_ylim(0, 1)
        ax.set_title("CIF-Bench category scores")
        ax.legend(fontsize=6, loc="best")
        fig.tight_layout()
        save_figure(fig, run.figures, "cifbench_categories")
    spread = tables["spread_by_task"]
    spread = spread[spread["n_instructions"] >= 2]
    if len(spread):
        _spread_figure(run, tables["spread_by_instruction"], spread)
    change = tables["published_change"]
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(change["public"], change["private"], s=14, label="published (README)")
    for model, row in change.iterrows():
        ax.annotate(str(model), (row["public"], row["private"]), fontsize=5)
    mine = tables["run_change"]
    if len(mine):
        ax.scatter(mine["public"], mine["private"], s=30, marker="x", color="C3", label="this run")
        for _, row in mine.iterrows():
            ax.annotate(
                f"{row['model']} ({row['source']})",
                (row["public"], row["private"]),
                fontsize=5,
                color="C3",
            )
    lo = float(np.nanmin([0.2, *mine["public"], *mine["private"]])) if len(mine) else 0.2
    hi = float(np.nanmax([0.62, *mine["public"], *mine["private"]])) if len(mine) else 0.62
    ax.plot([lo, hi], [lo, hi], ls="--", color="grey", lw=1)
    ax.set_xlabel("public split, 1 instruction")
    ax.set_ylabel("private split, 5 instructions")
    ax.set_title(f"published overall: {int(change['dropped'].sum())}/{len(change)} drop")
    ax.legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    save_figure(fig, run.figures, "cifbench_published_public_private")
    return tables


def _spread_figure(run: RunDir, by_instruction: pd.DataFrame, per_task: pd.DataFrame) -> None:
    """Task scores under each single instruction (dots) and their mean (bar), per model, split
    and source with at least two instructions; the overall score per instruction in the title."""
    groups = list(per_task.groupby(KEYS, sort=True))
    fig, axes = plt.subplots(
        len(groups), 1, figsize=(7, 2.6 * len(groups)), squeeze=False, sharey=True
    )
    for ax, (key, part) in zip(axes[:, 0], groups, strict=True):
        x = np.arange(len(part))
        ax.bar(x, part["score"], color="lightgrey", label="mean over instructions")
        ax.vlines(x, part["min"], part["max"], color="C0", lw=2, label="range across instructions")
        ax.plot(x, part["min"], "v", color="C0", ms=4)
        ax.plot(x, part["max"], "^", color="C0", ms=4)
        ax.set_xticks(x, [str(t) for t in part["task"]], rotation=30, ha="right", fontsize=6)
        ax.set_ylim(0, 1)
        ax.set_ylabel("task score (0..1)")
        overall = (
            by_instruction.set_index(KEYS).loc[[key], "overall"] if len(by_instruction) else []
        )
        ax.set_title(
            f"{' / '.join(map(str, key))}: overall per instruction "
            + ", ".join(f"{v:.2f}" for v in overall),
            fontsize=7,
        )
    axes[0, 0].legend(fontsize=6, loc="upper right")
    fig.suptitle("CIF-Bench: spread of task scores across instructions (Sec. 5)", fontsize=8)
    fig.tight_layout()
    save_figure(fig, run.figures, "cifbench_instruction_spread")
