"""A reasoning model's thinking beside its scores (runs with thinking only; thinking is never
scored): tokens per task and model, answers missing within the thinking budget, score against
thinking length."""

from __future__ import annotations

from typing import Any

import pandas as pd

from lceval.core.io import RunDir
from lceval.core.store import ResponseStore

CAPTIONS: dict[str, tuple[str, str]] = {
    # name (report/<name>.csv or figures/<name>.png) -> (paper item, one-line caption)
    "reasoning_by_task": (
        "Beyond the paper",
        "A reasoning model's thinking per benchmark, scorer, model and task: responses, mean "
        "and median thinking tokens, no_answer (no answer within the thinking budget; lower is "
        "better) and the mean score (0..1, higher is better).",
    ),
    "reasoning_score_vs_thinking": (
        "Beyond the paper",
        "Mean score (0..1, higher is better) against thinking tokens (bin medians) per model; "
        "the legend counts samples with no answer within the thinking budget.",
    ),
}

COLUMNS = ("sample_id", "model", "reasoning_tokens", "thinking_unfinished")


def reasoning_frame(run: RunDir) -> pd.DataFrame:
    """Per stored response with thinking: sample_id, model (both as named and as scoring's
    ``<model>@<config hash[:8]>``), reasoning_tokens, thinking_unfinished; may be empty."""
    if not run.responses.exists():
        return pd.DataFrame(columns=list(COLUMNS))
    rows = [
        (r.sample_id, model, int(r.reasoning_tokens), bool(r.thinking_unfinished))
        for r in ResponseStore(run.responses)
        if r.reasoning is not None or r.thinking_unfinished
        for model in (r.model, f"{r.model}@{r.config_hash[:8]}")
    ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def with_reasoning(scores: pd.DataFrame, reasoning: pd.DataFrame) -> pd.DataFrame:
    """``scores`` with reasoning_tokens and thinking_unfinished joined (0 / False without)."""
    if reasoning.empty:
        return scores.assign(reasoning_tokens=0, thinking_unfinished=False)
    out = scores.merge(reasoning, on=["sample_id", "model"], how="left")
    out["reasoning_tokens"] = out["reasoning_tokens"].fillna(0).astype(int)
    out["thinking_unfinished"] = out["thinking_unfinished"].fillna(False).astype(bool)
    return out


def reasoning_by_task(scores: pd.DataFrame, reasoning: pd.DataFrame) -> pd.DataFrame:
    """Per (benchmark, scorer, model, task) of score rows: responses, mean and median thinking
    tokens, ``no_answer`` (no answer within the thinking budget), mean score (0..1)."""
    cols = ["benchmark", "scorer", "model", "task", "responses"]
    cols += ["reasoning_tokens_mean", "reasoning_tokens_median", "no_answer", "score_mean"]
    if reasoning.empty or scores.empty:
        return pd.DataFrame(columns=cols)
    df = with_reasoning(scores, reasoning)
    g = df.groupby(["benchmark", "scorer", "model", "task"], sort=True)
    out = g.agg(
        responses=("sample_id", "size"),
        reasoning_tokens_mean=("reasoning_tokens", "mean"),
        reasoning_tokens_median=("reasoning_tokens", "median"),
        no_answer=("thinking_unfinished", "sum"),
        score_mean=("value", "mean"),
    ).reset_index()
    out["no_answer"] = out["no_answer"].astype(int)
    return out[cols]


def plot_score_vs_thinking(scores: pd.DataFrame, reasoning: pd.DataFrame) -> Any:
    """Figure: mean score (0..1) against thinking length (tokens, quantile bins) per model;
    samples with no answer (NaN) are left out of the means and counted in the legend."""
    import matplotlib.pyplot as plt  # here, not at the top: loads matplotlib

    df = with_reasoning(scores, reasoning)
    fig, ax = plt.subplots(figsize=(6, 4))
    for model, part in df.groupby("model", sort=True):
        scored = part[part["value"].notna()]
        if scored.empty:
            continue
        n_bins = int(min(8, max(1, scored["reasoning_tokens"].nunique())))
        bins = pd.qcut(scored["reasoning_tokens"], n_bins, duplicates="drop")
        agg = scored.groupby(bins, observed=True).agg(
            x=("reasoning_tokens", "median"), y=("value", "mean")
        )
        na = int(part["thinking_unfinished"].sum())
        ax.plot(agg["x"], agg["y"], marker="o", label=f"{model} (no answer: {na})")
    ax.set(
        xlabel="Thinking tokens (bin median)",
        ylabel="Mean score",
        ylim=(-0.02, 1.02),
        title="Score against thinking length",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def report_reasoning(run: RunDir, scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Write ``report/reasoning_by_task.csv`` and the figure ``reasoning_score_vs_thinking``
    (PNG + PDF) when the run has reasoning; {} otherwise."""
    from lceval.report.reporting import save_figure, save_table  # pulls matplotlib (Agg)

    reasoning = reasoning_frame(run)
    if reasoning.empty or scores.empty:
        return {}
    table = reasoning_by_task(scores, reasoning)
    run.report.mkdir(parents=True, exist_ok=True)
    save_table(table, run.report, "reasoning_by_task", index=False)
    fig = plot_score_vs_thinking(scores, reasoning)
    save_figure(fig, run.figures, "reasoning_score_vs_thinking")
    return {"reasoning_by_task": table}


def task_reasoning(rows: pd.DataFrame, reasoning: pd.DataFrame) -> dict[tuple[str, str], Any]:
    """(model, task) -> (mean thinking tokens, no-answer count) of one benchmark and scorer's
    score rows (results.json's task rows)."""
    table = reasoning_by_task(rows, reasoning).itertuples(index=False)
    return {
        (str(r.model), str(r.task)): (float(r.reasoning_tokens_mean), int(r.no_answer))
        for r in table
    }
