"""L-Eval tables and figures: the exam table, n-gram metrics per task, the length gap of LIE,
full-context vs retrieval, and the pairwise judge's win rates; published numbers beside.

Aggregation follows the official code (OpenLMLab/LEval ``Evaluation/auto_eval.py``): a task's
score is the mean over its questions x 100; TopicRet is the mean of its three topic positions'
means; SFiction the mean of its loyalty and fact means; the L-Eval ROUGE score of a task is the
geometric mean of its mean ROUGE-1, ROUGE-2 and ROUGE-L (``LEval_score``); the exam Avg is the
mean of the paper's six exam columns (Coursera, GSM, QuALITY, TOEFL, CodeU, SFiction) when all are
present. Win rate = (wins + 0.5 ties) / (wins + ties + losses) x 100 over all games
(``llm_eval.py``). The length gap (paper: delta L) is the mean over open-ended answers of
(answer words - reference words); ``abs_delta_L`` the mean absolute gap. Numbers are not rounded
here (the paper shows two decimals, truncated).

Groups: ``model``, ``retrieval`` (full, bm25, dense; ``Sample.meta["retrieval"]``) and, for
open-ended tasks, ``lie`` (True / False; None for imported predictions).

Uncertainty: task scores carry a 95% bootstrap CI (``low``, ``high``) in which the document is
the unit: the questions on one long document share it and are resampled together
(:func:`document_of`; imported predictions name no document, so each question is its own unit).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from importlib import resources
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lceval.benchmarks.leval.agreement import lie_kendall, metric_kendall, model_metrics
from lceval.benchmarks.leval.gold import (
    CLOSED_TASKS,
    EXAM_COLUMNS,
    OPEN_TASKS,
    PAPER_NAMES,
    OpenGold,
)
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.metrics import (
    Estimate,
    Headline,
    bootstrap,
    bootstrap_sums,
    group_stability,
    mean_statistic,
)
from lceval.report.reporting import save_figure, save_table

CAPTIONS: dict[str, tuple[str, str]] = {
    # name (report/<name>.csv or figures/<name>.png) -> (paper item, one-line caption)
    "leval/exam_table": (
        "Closed-ended table",
        "Exam score per task (0..100, higher is better) in the paper's layout: rows model x "
        "retrieval mode, columns Coursera, GSM, QuALITY, TOEFL, CodeU, SFiction, TopicRet, Avg "
        "(mean of the paper's six; empty when one is missing).",
    ),
    "leval/exam": (
        "Closed-ended table",
        "Exam score per model, retrieval mode and task (0..100, higher is better) with its 95% "
        "bootstrap CI over documents (low, high), n scored and n_nan unscorable answers.",
    ),
    "leval/exam_vs_published": (
        "Closed-ended table",
        "The run's exam scores beside the paper's for models with a published row: run, "
        "published and diff = run - published (0..100 points); no rank.",
    ),
    "leval/published_exam": (
        "Closed-ended table",
        "The paper's closed-ended table as printed: exam score per task and Avg (0..100, higher "
        "is better) per model with its context window (tokens); published numbers only.",
    ),
    "leval/published_judge": (
        "Open-ended table",
        "The paper's open-ended table as printed: win rate against Turbo-16k by the GPT-4 and "
        "GPT-3.5 judges (percent 0..100, ties half, higher is better); published only.",
    ),
    "leval/judge": (
        "Open-ended table",
        "Win rate of the run's answers in the judge's pairwise games (percent 0..100, ties "
        "half, higher is better) "
        "with wins, draws, losses, errors per model, retrieval, LIE setting and task; "
        "task all pools the games.",
    ),
    "leval/judge_lie": (
        "LIE NQ example",
        "Answer length with and without the length-instruction-enhanced prompt (LIE), judged "
        "answers: mean words, reference words, delta_L and |delta_L| (words, closer to 0 is "
        "better) and the mean judge value.",
    ),
    "leval/ngram": (
        "Open-ended table",
        "ROUGE-1/2/L, F1 and the L-Eval score (0..100, higher is better) per model, retrieval, "
        "LIE setting and open-ended task with a 95% bootstrap CI (low, high), n, and the length "
        "gap delta_L (words).",
    ),
    "leval/lie": (
        "LIE NQ example",
        "Answer length with and without LIE: mean words, reference words, delta_L and "
        "|delta_L| (words, closer to 0 is better) and the scorer's mean value (0..100) per "
        "model, retrieval and LIE setting.",
    ),
    "leval/lie_stability": (
        "Beyond the paper",
        "Coefficient of variation (CV, lower is steadier) of each open-ended task's mean score "
        "with against without LIE (LIFBench's IFS applied to L-Eval); task all: the mean over "
        "tasks.",
    ),
    "leval/metric_by_model": (
        "LIE Kendall-tau table",
        "ROUGE-L, F-1, L-Eval score and the judge's win rate (0..100, higher is better) per "
        "model and LIE setting: the model rankings the Kendall-tau tables compare.",
    ),
    "leval/lie_kendall": (
        "LIE Kendall-tau table",
        "Kendall tau (-1..1, higher = ranks models as the reference does) of each metric "
        "against the judge with LIE (human ratings are not public), without and with LIE, "
        "beside the paper's taus against humans (published_ columns).",
    ),
    "leval/metric_kendall": (
        "LIE Kendall-tau table",
        "Kendall tau-b (-1..1, 1 = the same model ranking) between every pair of metrics per "
        "LIE setting, over n_models models.",
    ),
    "leval/retrieval": (
        "Retrieval vs full-context",
        "Task score (0..100, higher is better) per model and task side by side per retrieval "
        "mode (full context, BM25, dense): exam score for closed-ended tasks, L-Eval score "
        "with LIE for open-ended ones.",
    ),
    "leval_scores": (
        "Closed-ended table",
        "Score per task (0..100, higher is better): exam score for closed-ended tasks, L-Eval "
        "score for open-ended ones, one bar per model, retrieval mode and LIE setting.",
    ),
}
"""Paper item and caption of each table and figure this report writes (report/index.html)."""

ALIASES = {
    "gpt4-x": "GPT-4-32k",
    "gpt4-32k": "GPT-4-32k",
    "claude-1.3": "Claude-100k",
    "claude-100k": "Claude-100k",
    "Claude-instant-100k": "Claude-100k",
    "turbo-16k-0613": "Turbo-16k",
}
"""Model names of the official prediction files -> the paper's names (published tables)."""


def published(name: str) -> pd.DataFrame:
    """A published table from ``resources/`` (``exam``, ``judge`` or ``lie``)."""
    text = resources.files("lceval.benchmarks.leval").joinpath(f"resources/{name}.csv")
    with resources.as_file(text) as p:
        return pd.read_csv(Path(p))


_DOC = re.compile(r"^(leval/[^/]+/\d+)/")


def document_of(sample: Sample) -> str:
    """The document a question is asked about (the resampling unit of the CIs): the builder's
    ``leval/<task>/<doc>`` id prefix, shared by every question, LIE setting, retrieval mode
    and length of that document; the sample id itself when there is none (imported
    predictions)."""
    m = _DOC.match(sample.id)
    return m.group(1) if m else sample.id


def _frame(scores: pd.DataFrame, samples: Sequence[Sample]) -> pd.DataFrame:
    """Scores joined with the samples' grouping fields; parts parsed into columns."""
    info = {
        s.id: {
            "doc": document_of(s),
            "retrieval": s.meta.get("retrieval", "full"),
            "lie": s.meta.get("lie") if isinstance(s.gold, OpenGold) else None,
            "topic_index": getattr(s.gold, "topic_index", None),
            "metric": getattr(s.gold, "metric", None),
        }
        for s in samples
    }
    if not len(scores):
        return pd.DataFrame(columns=["sample_id", "model", "task", "scorer", "value"])
    missing = set(scores["sample_id"]) - set(info)
    if missing:
        raise LcevalError(f"leval report: scores for unknown sample(s), e.g. {sorted(missing)[0]}")
    df = scores.copy()
    for key in ("doc", "retrieval", "lie", "topic_index", "metric"):
        df[key] = [info[i][key] for i in df["sample_id"]]
    parts = [json.loads(p) if isinstance(p, str) else dict(p or {}) for p in df["parts"]]
    names = sorted({k for p in parts for k in p})
    for k in names:
        df[f"p_{k}"] = [p.get(k, math.nan) for p in parts]
    return df


def _mean(x: pd.Series) -> float:
    x = x.dropna()
    return float(x.mean()) if len(x) else math.nan


def _exam_score(task: str, part: pd.DataFrame) -> float:
    """A closed-ended task's score (0..100) from its rows (official aggregation)."""
    if task == "topic_retrieval_longchat" and "topic_index" in part:
        means = [_mean(g["value"]) for _, g in part.groupby("topic_index")]
        return 100 * float(np.mean(means)) if means else math.nan
    if task == "sci_fi":
        means = [_mean(part[c]) for c in ("p_loyalty", "p_fact") if c in part]
        means = [m for m in means if not math.isnan(m)]
        return 100 * float(np.mean(means)) if means else math.nan
    return 100 * _mean(part["value"])


def _exam_ci(task: str, part: pd.DataFrame) -> Estimate:
    """:func:`_exam_score` (0..1) with its bootstrap CI, documents resampled."""
    docs = part["doc"].tolist() if "doc" in part else None
    if task == "topic_retrieval_longchat" and "topic_index" in part:
        ok = part[part["value"].notna()]
        return bootstrap(
            ok["value"].to_numpy(float),
            groups=ok["topic_index"].tolist(),
            weights=dict.fromkeys(ok["topic_index"], 1.0),
            clusters=ok["doc"].tolist() if "doc" in ok else None,
        )
    if task == "sci_fi":
        cols: dict[str, np.ndarray] = {}
        names = [c for c in ("p_loyalty", "p_fact") if c in part and part[c].notna().any()]
        for c in names:
            x = part[c].to_numpy(float)
            cols[c], cols[f"n{c}"] = np.nan_to_num(x), (~np.isnan(x)).astype(float)
        if not names:
            nan = float("nan")
            return Estimate(nan, nan, nan, 0, 0)

        def stat(sums: Mapping[str, np.ndarray], groups: Sequence[Hashable]) -> np.ndarray:
            means = [sums[c].sum(axis=-1) / sums[f"n{c}"].sum(axis=-1) for c in names]
            return np.mean(means, axis=0)

        return bootstrap_sums(cols, stat, clusters=docs)
    return bootstrap(part["value"].to_numpy(float), clusters=docs)


def exam_tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``exam`` (one row per model, retrieval, task: score 0..100 with ``low``/``high``, its 95%
    bootstrap CI over documents, n) and ``exam_table`` (paper layout: rows model x retrieval,
    columns the paper's task names, TopicRet, Avg)."""
    rows = []
    closed = df[df["task"].isin(CLOSED_TASKS)]
    for (model, mode, task), part in closed.groupby(["model", "retrieval", "task"]):
        ci = _exam_ci(str(task), part)
        rows.append(
            {
                "model": model,
                "retrieval": mode,
                "task": task,
                "name": PAPER_NAMES[task],
                "score": _exam_score(task, part),
                "low": 100 * ci.low,
                "high": 100 * ci.high,
                "n": int(part["value"].notna().sum()),
                "n_nan": int(part["value"].isna().sum()),
            }
        )
    cols = ["model", "retrieval", "task", "name", "score", "low", "high", "n", "n_nan"]
    long = pd.DataFrame(rows, columns=cols)
    if not len(long):
        return {"exam": long}
    wide = long.pivot_table(index=["model", "retrieval"], columns="name", values="score")
    order = [PAPER_NAMES[t] for t in EXAM_COLUMNS] + ["TopicRet"]
    wide = wide[[c for c in order if c in wide.columns]]
    six = [PAPER_NAMES[t] for t in EXAM_COLUMNS]
    wide["Avg"] = wide[six].mean(axis=1) if all(c in wide for c in six) else math.nan
    return {"exam": long, "exam_table": wide}


def exam_vs_published(table: pd.DataFrame) -> pd.DataFrame:
    """Run vs published exam scores for models with a published row (:data:`ALIASES`): one row
    per model and task with ``run``, ``published`` and ``diff`` (0..100)."""
    pub = published("exam").set_index("model")
    rows = []
    for (model, mode), row in table.iterrows():
        name = ALIASES.get(str(model), str(model))
        if name not in pub.index or mode != "full":
            continue
        for col in row.index:
            if col in pub.columns and not math.isnan(row[col]) and not pd.isna(pub.at[name, col]):
                value = float(pub.at[name, col])
                rows.append(
                    {
                        "model": model,
                        "published_as": name,
                        "task": col,
                        "run": float(row[col]),
                        "published": value,
                        "diff": float(row[col]) - value,
                    }
                )
    return pd.DataFrame(rows, columns=["model", "published_as", "task", "run", "published", "diff"])


def _ngram_ci(part: pd.DataFrame, metric: str) -> Estimate:
    """The L-Eval score of a group (0..100; geometric mean of mean ROUGE-1/2/L, or mean F1)
    with its bootstrap CI, documents resampled."""
    names = ("p_rouge1", "p_rouge2", "p_rougeL") if metric == "rouge" else ("p_f1",)
    cols = {c: np.nan_to_num(part[c].to_numpy(float)) for c in names}
    counts = {f"n{c}": (~part[c].isna()).to_numpy(float) for c in names}

    def stat(sums: Mapping[str, np.ndarray], groups: Sequence[Hashable]) -> np.ndarray:
        means = [100 * sums[c].sum(axis=-1) / sums[f"n{c}"].sum(axis=-1) for c in names]
        if len(means) == 1:
            return means[0]
        prod = means[0] * means[1] * means[2]
        return np.where(
            np.minimum(np.minimum(means[0], means[1]), means[2]) >= 0, np.cbrt(prod), np.nan
        )

    return bootstrap_sums({**cols, **counts}, stat, clusters=part["doc"].tolist())


def ngram_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per model, retrieval, LIE setting and open-ended task: ROUGE-1/2/L and F1 means
    (0..100), the L-Eval score (geometric mean of ROUGE-1/2/L for rouge tasks, F1 for f1
    tasks), answer and reference words, delta_L and abs_delta_L (words)."""
    rows = []
    open_ = df[df["task"].isin(OPEN_TASKS)]
    cols = ["p_rouge1", "p_rouge2", "p_rougeL", "p_f1"]
    if not len(open_) or not all(c in open_ for c in cols):
        return pd.DataFrame()
    for (model, mode, lie, task), part in open_.groupby(
        ["model", "retrieval", "lie", "task"], dropna=False
    ):
        r1, r2, rl, f1 = (100 * _mean(part[c]) for c in cols)
        metric = part["metric"].iloc[0]
        geo = (r1 * r2 * rl) ** (1 / 3) if min(r1, r2, rl) >= 0 else math.nan
        gap = part["p_words"] - part["p_reference_words"]
        ci = _ngram_ci(part, str(metric))
        rows.append(
            {
                "model": model,
                "retrieval": mode,
                "lie": lie,
                "task": task,
                "name": PAPER_NAMES[task],
                "metric": metric,
                "rouge1": r1,
                "rouge2": r2,
                "rougeL": rl,
                "f1": f1,
                "score": geo if metric == "rouge" else f1,
                "low": ci.low,
                "high": ci.high,
                "n": len(part),
                "words": _mean(part["p_words"]),
                "reference_words": _mean(part["p_reference_words"]),
                "delta_L": _mean(gap),
                "abs_delta_L": _mean(gap.abs()),
            }
        )
    return pd.DataFrame(rows)


def lie_table(df: pd.DataFrame) -> pd.DataFrame:
    """The length gap with and without LIE: one row per model, retrieval and LIE setting with
    answers ``n``, mean ``words``, ``reference_words``, ``delta_L``, ``abs_delta_L`` (words) and
    the mean ``value`` (0..100) of the scorer that produced the scores."""
    open_ = df[df["task"].isin(OPEN_TASKS)]
    if not len(open_) or "p_words" not in open_ or "p_reference_words" not in open_:
        return pd.DataFrame()
    rows = []
    for (model, mode, lie), part in open_.groupby(["model", "retrieval", "lie"], dropna=False):
        gap = part["p_words"] - part["p_reference_words"]
        rows.append(
            {
                "model": model,
                "retrieval": mode,
                "lie": lie,
                "n": len(part),
                "words": _mean(part["p_words"]),
                "reference_words": _mean(part["p_reference_words"]),
                "delta_L": _mean(gap),
                "abs_delta_L": _mean(gap.abs()),
                "value": 100 * _mean(part["value"]),
            }
        )
    return pd.DataFrame(rows)


def lie_stability(df: pd.DataFrame) -> pd.DataFrame:
    """IFS-style stability of open-ended tasks with and without LIE (LIFBench Eq. 6 applied to
    L-Eval): per model, retrieval mode and task, the coefficient of variation (ddof=1) of the
    two settings' mean scorer value (0..1), i.e. |a - b| / (sqrt(2) * mean(a, b)); the length
    instruction should not change what is scored. A row ``task = "all"`` per model and mode is
    the mean over its tasks (as IFS^p over tasks). Only tasks with both settings count.

    Returns:
        Columns ``model, retrieval, task, CV, n_groups, mean, n``; empty without both settings.
    """
    cols = ["model", "retrieval", "task", "CV", "n_groups", "mean", "n"]
    open_ = df[df["task"].isin(OPEN_TASKS) & df["lie"].notna()] if len(df) else df
    if not len(open_) or open_["lie"].nunique() < 2:
        return pd.DataFrame(columns=cols)
    st = group_stability(
        open_.assign(lie=open_["lie"].astype(str)), "lie", ["model", "retrieval", "task"]
    )
    st = st[st["n_groups"] == 2]
    if not len(st):
        return pd.DataFrame(columns=cols)
    overall = (
        st.groupby(["model", "retrieval"], sort=True)
        .agg(CV=("CV", "mean"), n_groups=("n_groups", "min"), mean=("mean", "mean"), n=("n", "sum"))
        .reset_index()
        .assign(task="all")
    )
    return pd.concat([st, overall], ignore_index=True)[cols]


def retrieval_table(exam: pd.DataFrame, ngram: pd.DataFrame) -> pd.DataFrame:
    """Task scores (0..100) side by side per retrieval mode: rows model x task, columns modes
    (exam score for closed-ended tasks, the L-Eval score for open-ended ones, with LIE where
    both settings exist)."""
    parts = []
    if len(exam):
        parts.append(exam[["model", "retrieval", "name", "score"]])
    if len(ngram):
        ng = ngram[ngram["lie"].isin([True]) | ngram["lie"].isna()]
        parts.append(ng[["model", "retrieval", "name", "score"]])
    if not parts:
        return pd.DataFrame()
    both = pd.concat(parts, ignore_index=True)
    return both.pivot_table(index=["model", "name"], columns="retrieval", values="score")


def judge_table(df: pd.DataFrame) -> pd.DataFrame:
    """Win rate (0..100, ties half) with n_wins, n_draws, n_losses, n_errors (games), per
    model, retrieval, LIE setting and task, plus an ``all`` row per group (official
    ``calculate_win_rate`` pools games)."""
    if "p_wins" not in df:
        return pd.DataFrame()
    judged = df[df["p_wins"].notna()]
    if not len(judged):
        return pd.DataFrame()
    rows = []
    keys = ["model", "retrieval", "lie"]
    for group, part in judged.groupby(keys, dropna=False):
        for task, sub in [*part.groupby("task"), ("all", part)]:
            w, t, lo, e = (
                float(sub[c].sum()) for c in ("p_wins", "p_ties", "p_losses", "p_errors")
            )
            total = w + t + lo
            rows.append(
                {
                    **dict(zip(keys, group, strict=True)),
                    "task": task,
                    "n_wins": w,
                    "n_draws": t,
                    "n_losses": lo,
                    "n_errors": e,
                    "win_rate": 100 * (w + 0.5 * t) / total if total else math.nan,
                }
            )
    return pd.DataFrame(rows)


def leval_tables(scores: pd.DataFrame, samples: Sequence[Sample]) -> dict[str, pd.DataFrame]:
    """Every L-Eval table of a scores frame (any mix of the ``leval`` and ``leval:judge``
    scorers), keyed by name; empty tables are left out.

    Raises:
        LcevalError: a score row whose sample is not among ``samples``.
    """
    df = _frame(scores, samples)
    out: dict[str, pd.DataFrame] = {}
    n_gram = df[df["scorer"] == "leval"] if len(df) else df
    judged = df[df["scorer"] == "leval:judge"] if len(df) else df
    if len(n_gram):
        out.update(exam_tables(n_gram))
        if "exam_table" in out:
            out["exam_vs_published"] = exam_vs_published(out["exam_table"])
        out["ngram"] = ngram_table(n_gram)
        out["lie"] = lie_table(n_gram)
        out["lie_stability"] = lie_stability(n_gram)
        if n_gram["retrieval"].nunique() > 1:
            out["retrieval"] = retrieval_table(out.get("exam", pd.DataFrame()), out["ngram"])
    if len(judged):
        out["judge"] = judge_table(judged)
        out["judge_lie"] = lie_table(judged)
    metrics = model_metrics(df, out.get("ngram"))
    if len(metrics):  # open-ended answers: the LIE Kendall-tau table (agreement.py)
        out["metric_by_model"] = metrics.reset_index()
        out["lie_kendall"] = lie_kendall(metrics)
        out["metric_kendall"] = metric_kendall(metrics)
    return {k: v for k, v in out.items() if len(v)}


def headline(scores: pd.DataFrame, samples: Sequence[Sample]) -> Headline:
    """L-Eval's headline for leaderboards and paired tests: the mean over tasks of the task's
    mean scorer value (exact match for exam tasks, ROUGE-L or F1 for open-ended ones; 0..100),
    scorer ``leval``, full-context questions (every question when the run has no full-context
    ones) with LIE; the document is the unit (:func:`document_of`)."""
    df = _frame(scores[scores["scorer"] == "leval"] if len(scores) else scores, samples)
    if len(df):
        df = df[df["value"].notna() & (df["lie"].isna() | df["lie"].isin([True]))]
        if (df["retrieval"] == "full").any():
            df = df[df["retrieval"] == "full"]
    frame = pd.DataFrame(
        {
            "model": df["model"].astype(str).to_numpy() if len(df) else [],
            "sample_id": df["sample_id"].to_numpy() if len(df) else [],
            "group": df["task"].astype(str).to_numpy() if len(df) else [],
            "cluster": df["doc"].to_numpy() if len(df) else [],
            "value": 100 * df["value"].to_numpy(float) if len(df) else [],
            "count": 1.0,
        }
    )

    def stat(sums: Mapping[str, np.ndarray], groups: Sequence[Hashable]) -> np.ndarray:
        return mean_statistic(dict.fromkeys(groups, 1.0))(sums, groups)

    return Headline("leval", "mean task score", "0..100", frame, ("value", "count"), stat)


def report_leval(
    run: RunDir, scores: pd.DataFrame, samples: Sequence[Sample]
) -> dict[str, pd.DataFrame]:
    """Write the L-Eval tables (CSV under ``report/leval/``) and a score figure (PNG, PDF).

    Tables (when the run's scores allow): ``exam``, ``exam_table``, ``exam_vs_published``,
    ``ngram``, ``lie``, ``lie_stability``, ``retrieval`` (scorer ``leval``); ``judge``,
    ``judge_lie`` (scorer ``leval:judge``); ``metric_by_model``, ``lie_kendall`` (the paper's
    LIE Kendall-tau table, the judge in place of human ratings) and ``metric_kendall``
    (:mod:`lceval.benchmarks.leval.agreement`) when the run has open-ended answers;
    ``published_exam`` and ``published_judge`` always.
    Tables of the other scorer written earlier stay in the folder.

    Raises:
        LcevalError: scores for unknown samples.
    """
    tables = leval_tables(scores, samples)
    tables["published_exam"] = published("exam")
    tables["published_judge"] = published("judge")
    folder = run.report / "leval"
    for name, df in tables.items():
        save_table(df, folder, name, index=name in ("exam_table", "retrieval"))
    _figure(run, tables)
    return tables


def _figure(run: RunDir, tables: dict[str, pd.DataFrame]) -> None:
    parts = []
    if "exam" in tables:
        parts.append(tables["exam"][["model", "retrieval", "name", "score"]].assign(lie=None))
    if "ngram" in tables:
        parts.append(tables["ngram"][["model", "retrieval", "name", "score", "lie"]])
    if not parts:
        return
    df = pd.concat(parts, ignore_index=True)
    df["setting"] = [
        f"{m} {r}" + ("" if lie is None or pd.isna(lie) else (" LIE" if lie else " no-LIE"))
        for m, r, lie in zip(df["model"], df["retrieval"], df["lie"], strict=True)
    ]
    wide = df.pivot_table(index="name", columns="setting", values="score")
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(wide) + 2), 4))
    wide.plot.bar(ax=ax, width=0.8)
    ax.set_ylabel("score (0..100)")
    ax.set_xlabel("")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=6, loc="best")
    ax.set_title("L-Eval score per task")
    save_figure(fig, run.figures, "leval_scores")
