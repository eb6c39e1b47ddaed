"""CIF-Bench's comparison tables (paper Sec. 5, Tables 5, 6, 8, 9) and the published leaderboards
beside a run's models.

Reproduces, from a run, CIF-Bench (Li et al., 2024, arXiv:2402.13109):

- Table 5 ("English-translated vs newly annotated Chinese tasks in the Public split"): per model,
  the mean task score ``S_t`` over the translated tasks and over the new tasks of the public
  split, and their difference (the paper: new tasks 2.2% lower on average).
- Table 6 ("Public split and other leaderboards"): the overall public score beside other
  leaderboards' scores for the same models (a CSV the user gives: the paper's Open LLM
  Leaderboard and OpenCompass columns are printed only as an image), rows in descending public
  score, with Kendall's tau between the columns.
- Table 8 ("unseen data instances and unseen tasks"), single instruction: Existing tasks on the
  public split (existing instances) against the same tasks on the private split (newly annotated
  instances, same instruction), and against the New tasks on the private split (new instances
  and new tasks). The paper: -11.0% and -2.5% on average.
- Table 9 ("variance of task-level scores from single to diverse instruction sets", x 1e-3):
  per model, the variance over tasks of ``S_t`` with one instruction (the first) and with all
  (up to five), times 1000, and their difference.

Task origins (translated, chinese, new) come from the user's metadata file (``origin``; the
paper's task-source Tables 10-12 are images), carried in ``Sample.meta["origin"]``; tasks
without one are left out of Tables 5 and 8. Scores are 0..1 as the leaderboards print them
(3 decimals), changes also in percent of the first score; Table 9 in units of 1e-3. The printed
numbers of Tables 5, 6 (its other leaderboards), 8 and 9 are images in the paper and are not
shipped, so these tables are computed from runs only; Table 6's CIF-Bench column of the 28
published models is the README's public leaderboard (:func:`published_table6`).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import Field

from lceval import params
from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.report.reporting import THIS_RUN

PUBLISHED_PUBLIC = "published (README, public split)"
PUBLISHED_PRIVATE = "published (README, private split)"
VARIANCE_SCALE = 1e3
"""Table 9 prints variances in units of 1e-3."""


KEYS = ["model", "split", "source"]
"""What every run table is computed per."""


def input_means(inst: pd.DataFrame) -> pd.DataFrame:
    """Per model, split, source, task and input: the mean over instructions (NaN skipped) and the
    number of instructions scored."""
    g = inst.groupby([*KEYS, "task", "input_id"], sort=True)["value"]
    return g.agg(value="mean", n_instructions="count").reset_index()


def task_scores(inst: pd.DataFrame) -> pd.DataFrame:
    """``S_t^m`` (paper Sec. 3.3) per model, split, source and task.

    Columns: ``score`` (0..1: mean over inputs of the mean over instructions), ``n_inputs``
    (inputs with a score), ``n_instructions`` (distinct instructions), ``n_nan`` (unscorable
    instances), ``output_type``.
    """
    per_input = input_means(inst)
    g = per_input.groupby([*KEYS, "task"], sort=True)
    out = g.agg(score=("value", "mean"), n_inputs=("value", "count")).reset_index()
    extra = (
        inst.groupby([*KEYS, "task"], sort=True)
        .agg(
            n_instructions=("instruction_id", "nunique"),
            n_nan=("value", lambda x: int(x.isna().sum())),
            output_type=("output_type", "first"),
        )
        .reset_index()
    )
    return out.merge(extra, on=[*KEYS, "task"])


def _resource_csv(name: str) -> list[dict[str, str]]:
    path = resources.files("lceval.benchmarks.cifbench").joinpath("resources").joinpath(name)
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def model_names() -> pd.DataFrame:
    """How models are matched across the README's tables (``resources/model_names.csv``).

    Columns: ``model`` (the name used here: the private table's), ``private``, ``public`` (the
    names as each table prints them) and ``match``: ``identical``, ``case`` (the names differ
    only in letter case) or ``explicit`` (different spellings matched by hand:
    Chatglm-6B-Sft = ChatGLM-6B, Gpt-3.5-Turbo-Sft = gpt-3.5-Public-SFT,
    Belle-13B-Sft = Belle-SFT-Public).
    """
    return pd.DataFrame(_resource_csv("model_names.csv"))


def published_leaderboard(split: str) -> pd.DataFrame:
    """A README leaderboard (0..1): ``private`` (five instructions) or ``public`` (one), indexed
    by the matched model name (:func:`model_names`), Overall + the 20 category columns.

    Raises:
        LcevalError: another split name, or a model without a match.
    """
    if split not in ("private", "public"):
        raise LcevalError(f"cifbench: published split must be private or public, got {split!r}")
    df = pd.DataFrame(_resource_csv(f"leaderboard_{split}.csv"))
    names = model_names()
    to_model = dict(zip(names[split], names["model"], strict=True))
    missing = set(df["model"]) - set(to_model)
    if missing:
        raise LcevalError(f"cifbench: no name match for {sorted(missing)}")
    df["model"] = df["model"].map(to_model)
    df = df.set_index("model")
    return df.astype(float)


def rank_correlation(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Kendall's tau (b) and Spearman's rho between paired scores, with p-values
    (``scipy.stats``) and percentile-bootstrap CIs over resampled pairs.

    Returns:
        One row per statistic: ``statistic``, ``estimate``, ``p_value``, ``ci_low``,
        ``ci_high``, ``n``.

    Raises:
        ValueError: lengths differ or fewer than 3 pairs.
    """
    from scipy import stats  # heavy: scipy

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.size < 3:
        raise ValueError("rank_correlation needs two equally long score lists of >= 3 items")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(n_resamples, a.size))
    alpha = (1 - confidence) / 2
    rows = []
    for name, fn in (("kendall_tau", stats.kendalltau), ("spearman_rho", stats.spearmanr)):
        res = fn(a, b)
        boot = np.array([fn(a[i], b[i])[0] for i in idx], dtype=float)
        boot = boot[~np.isnan(boot)]
        lo, hi = np.quantile(boot, [alpha, 1 - alpha]) if boot.size else (np.nan, np.nan)
        rows.append(
            {
                "statistic": name,
                "estimate": float(res[0]),
                "p_value": float(res[1]),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "n": int(a.size),
            }
        )
    return pd.DataFrame(rows)


class Comparison(params.Declared):
    """Notebook 11's section for the comparison with other leaderboards (Table 6)."""

    other_leaderboards: Annotated[str | None, params.paths()] = Field(
        None,
        description="CSV with a model column (the run's or the README's model names) and one "
        "numeric column per other leaderboard (e.g. Open LLM Leaderboard, OpenCompass); null: none",
    )


def origins(samples: Sequence[Sample]) -> dict[str, str]:
    """Task -> origin (translated | chinese | new) from the samples' ``meta["origin"]``."""
    out: dict[str, str] = {}
    for s in samples:
        o = (s.meta or {}).get("origin")
        if s.benchmark == "cifbench" and o and s.task not in out:
            out[s.task] = str(o)
    return out


def _single(inst: pd.DataFrame) -> pd.DataFrame:
    """Instances under the first instruction of each model, split, source and task."""
    keys = ["model", "split", "source", "task"]
    first = inst.groupby(keys)["instruction_id"].transform("min")
    return inst[inst["instruction_id"] == first]


def _official_task_scores(inst: pd.DataFrame, task_origin: dict[str, str]) -> pd.DataFrame:
    ts = task_scores(inst[inst["source"] == "official"]) if len(inst) else pd.DataFrame()
    if ts.empty:
        return pd.DataFrame(columns=["model", "split", "task", "score", "origin"])
    ts = ts.assign(origin=ts["task"].map(task_origin))
    return ts[["model", "split", "task", "score", "origin"]]


def table5(inst: pd.DataFrame, task_origin: dict[str, str]) -> pd.DataFrame:
    """Table 5 from a run: translated against new tasks on the public split (official
    instruction source), per model.

    Args:
        inst: :func:`lceval.benchmarks.cifbench.report.instance_frame`.
        task_origin: :func:`origins`.

    Returns:
        One row per model, in descending public overall score: ``public_overall`` (all public
        tasks), ``English-translated`` and ``Newly annotated`` (mean ``S_t``, 0..1), ``change``
        (new - translated), ``change_pct`` (percent of the translated score), ``n_translated``,
        ``n_new`` (tasks). Empty without public scores.
    """
    ts = _official_task_scores(inst, task_origin)
    ts = ts[ts["split"] == "public"]
    cols = ["model", "public_overall", "English-translated", "Newly annotated", "change"]
    cols += ["change_pct", "n_translated", "n_new"]
    if ts.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for model, g in ts.groupby("model", sort=True):
        tr = g.loc[g["origin"] == "translated", "score"].dropna()
        new = g.loc[g["origin"] == "new", "score"].dropna()
        a, b = (tr.mean() if len(tr) else np.nan), (new.mean() if len(new) else np.nan)
        rows.append(
            {
                "model": model,
                "public_overall": g["score"].mean(),
                "English-translated": a,
                "Newly annotated": b,
                "change": b - a,
                "change_pct": 100 * (b - a) / a if a else np.nan,
                "n_translated": len(tr),
                "n_new": len(new),
            }
        )
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values("public_overall", ascending=False, kind="stable").reset_index(drop=True)


def table8(inst: pd.DataFrame, task_origin: dict[str, str]) -> pd.DataFrame:
    """Table 8 from a run: unseen instances (Existing tasks, public -> private) and unseen
    tasks (Existing tasks on the public split -> New tasks on the private split), with one
    instruction (the first) on both splits, official instructions only.

    Returns:
        One row per model: ``existing_public``, ``existing_private``, ``existing_change``
        (private - public), ``existing_change_pct``, ``new_private``, ``new_change`` (new
        private - existing public), ``new_change_pct`` (percent of ``existing_public``),
        ``n_existing``, ``n_new`` (tasks). Empty unless a model scored both splits.
    """
    ts = _official_task_scores(_single(inst) if len(inst) else inst, task_origin)
    ts = ts[ts["origin"].notna()]
    cols = ["model", "existing_public", "existing_private", "existing_change"]
    cols += ["existing_change_pct", "new_private", "new_change", "new_change_pct"]
    cols += ["n_existing", "n_new"]
    rows = []
    for model, g in ts.groupby("model", sort=True):
        old = g[g["origin"] != "new"]
        pub = old[old["split"] == "public"].set_index("task")["score"].dropna()
        priv = old[old["split"] == "private"].set_index("task")["score"].dropna()
        common = sorted(set(pub.index) & set(priv.index))
        new = g[(g["origin"] == "new") & (g["split"] == "private")]["score"].dropna()
        if not common and not (len(pub) and len(new)):
            continue
        a = pub.loc[common].mean() if common else pub.mean()
        b = priv.loc[common].mean() if common else np.nan
        c = new.mean() if len(new) else np.nan
        rows.append(
            {
                "model": model,
                "existing_public": a,
                "existing_private": b,
                "existing_change": b - a,
                "existing_change_pct": 100 * (b - a) / a if a else np.nan,
                "new_private": c,
                "new_change": c - a,
                "new_change_pct": 100 * (c - a) / a if a else np.nan,
                "n_existing": len(common),
                "n_new": len(new),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def table9(inst: pd.DataFrame) -> pd.DataFrame:
    """Table 9 from a run: variance over tasks of the task scores, one instruction against all.

    Per model, split and source with at least two instructions on some task:
    ``var_single`` (variance over tasks of ``S_t`` under the first instruction alone),
    ``var_single_mean`` (the mean of that variance over each single instruction),
    ``var_diverse`` (``S_t`` averaged over all instructions, Sec. 3.3), ``difference`` =
    ``var_diverse - var_single``, all in units of 1e-3 (scores 0..1; population variance,
    ddof 0); ``n_tasks``, ``n_instructions`` (most per task). The paper's setting is the private
    split with five instructions; it reports lower variance with five for every model.
    """
    cols = ["model", "split", "source", "var_single", "var_single_mean", "var_diverse"]
    cols += ["difference", "n_tasks", "n_instructions"]
    if inst.empty:
        return pd.DataFrame(columns=cols)
    per = inst.groupby(["model", "split", "source", "task", "instruction_id"])["value"].mean()
    per = per.reset_index()
    # S_t = mean over inputs of the mean over instructions (Sec. 3.3)
    diverse_all = (
        inst.groupby(["model", "split", "source", "task", "input_id"])["value"]
        .mean()
        .groupby(["model", "split", "source", "task"])
        .mean()
    )
    rows = []
    for key, g in per.groupby(["model", "split", "source"], sort=True):
        n_instr = int(g.groupby("task")["instruction_id"].nunique().max())
        if n_instr < 2:
            continue
        first = g[g["instruction_id"] == g.groupby("task")["instruction_id"].transform("min")]
        single = first.set_index("task")["value"].dropna()
        by_instr = [
            np.var(part["value"].dropna().to_numpy(), ddof=0)
            for _, part in g.groupby("instruction_id")
            if part["value"].notna().sum() >= 2
        ]
        diverse = diverse_all.loc[key].dropna()
        rows.append(
            {
                **dict(zip(["model", "split", "source"], key, strict=True)),
                "var_single": VARIANCE_SCALE * np.var(single.to_numpy(), ddof=0),
                "var_single_mean": VARIANCE_SCALE * float(np.mean(by_instr))
                if by_instr
                else np.nan,
                "var_diverse": VARIANCE_SCALE * np.var(diverse.to_numpy(), ddof=0),
                "n_tasks": len(diverse),
                "n_instructions": n_instr,
            }
        )
    out = pd.DataFrame(rows, columns=cols)
    out["difference"] = out["var_diverse"] - out["var_single"]
    return out


def read_other_leaderboards(path: str | Path) -> pd.DataFrame:
    """The user's CSV of other leaderboards' scores: ``model`` and numeric columns.

    Raises:
        LcevalError: unreadable, no ``model`` column, no other column, or a non-numeric value.
    """
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise LcevalError(f"cannot read other leaderboards {path}: {exc}") from None
    if "model" not in df or len(df.columns) < 2:
        raise LcevalError(f"other leaderboards {path}: need a 'model' column and score columns")
    for c in df.columns.drop("model"):
        try:
            df[c] = pd.to_numeric(df[c])
        except (ValueError, TypeError):
            raise LcevalError(f"other leaderboards {path}: column {c!r} is not numeric") from None
    return df.drop_duplicates("model").set_index("model")


def published_table6() -> pd.DataFrame:
    """Table 6's CIF-Bench column for the 28 published models: the README's public-split
    overall score (the same numbers as the paper's Table 13), descending, with ``rank``."""
    pub = published_leaderboard("public")["Overall"].sort_values(ascending=False, kind="stable")
    out = pd.DataFrame({"CIF-Bench (public)": pub})
    out["rank"] = out["CIF-Bench (public)"].rank(ascending=False, method="min").astype(int)
    return out


def table6(
    overall: pd.DataFrame,
    other: pd.DataFrame | None = None,
    models: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 6: the public overall score of the run's models and the published ones, beside
    other leaderboards' scores, in descending public score.

    Args:
        overall: :func:`lceval.benchmarks.cifbench.report.overall_scores` of the run (its
            public split, official instructions, is used).
        other: :func:`read_other_leaderboards` (None: no other column).
        models: published models to keep (None: all 28).

    Returns:
        ``table`` (index model: ``source``, ``CIF-Bench (public)``, the other columns) and
        ``agreement`` (Kendall's tau and Spearman's rho of the CIF-Bench column with each other
        column over the models that have both; empty with fewer than 3).
    """
    mine = overall[(overall["split"] == "public") & (overall["source"] == "official")]
    run = pd.DataFrame(
        {"source": THIS_RUN, "CIF-Bench (public)": mine.set_index("model")["overall"]}
    )
    pub = published_table6().drop(columns="rank")
    if models is not None:
        unknown = [m for m in models if m not in pub.index]
        if unknown:
            raise LcevalError(f"CIF-Bench README has no model {unknown[0]!r}")
        pub = pub.loc[list(models)]
    pub.insert(0, "source", PUBLISHED_PUBLIC)
    table = pd.concat([run, _renamed(pub, run.index)])
    if other is not None:
        table = table.join(other, how="left")
    table = table.sort_values("CIF-Bench (public)", ascending=False, kind="stable")
    table.index.name = "model"
    rows = []
    for col in table.columns.drop(["source", "CIF-Bench (public)"]):
        both = table[["CIF-Bench (public)", col]].dropna()
        if len(both) >= 3:
            rc = rank_correlation(both.iloc[:, 0], both.iloc[:, 1], n_resamples=500)
            rows.append(rc.assign(leaderboard=col))
    agreement = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    return table, agreement


def _renamed(published: pd.DataFrame, taken: pd.Index) -> pd.DataFrame:
    """Published rows named like one of the run's models become ``<model> (published)``, so no
    model appears twice in a table."""
    names = {str(m) for m in taken}
    return published.rename(index=lambda m: f"{m} (published)" if str(m) in names else m)


def leaderboard_with_published(
    leaderboard: pd.DataFrame, split: str, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """The run's rows of one split (official instructions) above the README's leaderboard of
    that split (Overall + 20 categories, 0..1), marked by ``source``.

    Args:
        leaderboard: :func:`lceval.benchmarks.cifbench.report.leaderboard_table` of the run.
        split: ``public`` (Table 13) or ``private`` (Tables 3-4).
        models: published models to keep (None: all 28).

    Raises:
        LcevalError: another split, or a model the README does not have.
    """
    pub = published_leaderboard(split)
    if models is not None:
        unknown = [m for m in models if m not in pub.index]
        if unknown:
            raise LcevalError(f"CIF-Bench README has no model {unknown[0]!r}")
        pub = pub.loc[list(models)]
    pub.insert(0, "source", PUBLISHED_PUBLIC if split == "public" else PUBLISHED_PRIVATE)
    run = leaderboard.reset_index()
    run = run[(run["split"] == split) & (run["source"] == "official")]
    run = run.drop(columns=["split", "source"]).set_index("model")
    run.insert(0, "source", THIS_RUN)
    out = pd.concat([run, _renamed(pub, run.index)])
    out.index.name = "model"
    return out
