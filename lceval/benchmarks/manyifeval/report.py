"""ManyIFEval analysis: accuracy against the instruction count and the curse of instructions.

Source: Harada et al., "Curse of Instructions" (ManyIFEval). Sec. 3.2 Eq. (1) prompt-level
accuracy P(n) = 1/m sum_i prod_j s_i^j and Eq. (2) instruction-level accuracy
I(n) = 1/(mn) sum_i sum_j s_i^j; Sec. 4.3 Eq. (3), the curse of instructions P(n) = I(n)^n;
Fig. 1 (I(n) left, P(n) right, against n), Fig. 4 (measured P(n) against I(n)^n), Appendix C /
Fig. 8 (unique against repeated instructions of matched prompt length).

All accuracies are fractions in 0..1. Responses whose score is NaN (generation failed, or no
instruction failed but one could not be checked) are left out of the means and counted in
``n_nan``. An undecided instruction of a scored response (NaN part) is left out of the
instruction-level mean; the prompt-level verdict combines the instructions with Kleene's "and"
(0 if one is not followed, NaN if one is undecided and none failed, else 1), NaN left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lceval.benchmarks.manyifeval import refine
from lceval.benchmarks.manyifeval.gold import INSTRUCTION_NAME, MODES, parse_part_key
from lceval.benchmarks.manyifeval.published import (
    LABELS,
    THIS_RUN,
    accuracy_with_published,
    feedback_confusion,
    table4_with_published,
)
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Sample
from lceval.metrics import Headline, bootstrap, bootstrap_sums, group_stability, mean_statistic
from lceval.report.reporting import save_figure, save_table

CAPTIONS: dict[str, tuple[str, str]] = {
    # name (report/<name>.csv or figures/<name>.png) -> (paper item, one-line caption)
    "manyifeval_summary": (
        "Headline",
        "Per model: strict prompt-level accuracy P(n) for n = 1..10 instructions, the curse-law "
        "fit (r2, higher = closer; mae) and IFEval's four pooled accuracies (all 0..1, higher "
        "is better).",
    ),
    "manyifeval_ifeval_pooled": (
        "Headline",
        "IFEval's prompt- and instruction-level accuracies, strict and loose (0..1, higher is "
        "better), pooled over all n, with 95% bootstrap CIs (low, high) over n prompts.",
    ),
    "manyifeval_fig1_with_published": (
        "Fig. 1",
        "Strict prompt- and inst-level accuracy (0..1, higher is better) against n, the run's "
        "rows (source 'this run') then the paper's stated zero-shot points at n = 10 (where: "
        "the sentence); no rank.",
    ),
    "manyifeval_fig1_accuracy": (
        "Fig. 1",
        "Inst-level and prompt-level accuracy (0..1, higher is better) against the number of "
        "instructions n, the run's models beside the paper's stated P(10) points (marked).",
    ),
    "manyifeval_accuracy_by_n": (
        "Fig. 1",
        "Prompt- and inst-level accuracy (0..1, higher is better) per model, condition "
        "(unique, repeated), mode (strict, loose) and n, with 95% bootstrap CIs (_low, _high) "
        "over m prompts; n_nan: verdicts the checkers could not decide.",
    ),
    "manyifeval_curse_law": (
        "Fig. 4",
        "Measured prompt-level accuracy P(n) (0..1) beside the curse-of-instructions "
        "prediction I(n)^n (Eq. 3; predicted) and residual = measured - predicted (0 = the "
        "law holds), per model, mode and n.",
    ),
    "manyifeval_curse_fit": (
        "Fig. 4",
        "How well P(n) = I(n)^n fits per model and mode: r2 (higher is better, 1 = exact) and "
        "mae (0..1, lower is better) over the points (n values).",
    ),
    "manyifeval_fig4_curse": (
        "Fig. 4",
        "Measured prompt-level accuracy P(n) and the prediction I(n)^n (0..1; curves together "
        "= the law holds) against n, one panel per model, and a panel of the paper's P(10).",
    ),
    "manyifeval_per_instruction": (
        "Table 4",
        "Strict instruction-level accuracy (0..1, higher is better) per instruction and model, "
        "per instruction count n (columns 1-10) and over all n (all); empty: not asked at n.",
    ),
    "manyifeval_table4_with_published": (
        "Table 4",
        "Inst-level accuracy per instruction (0..1, higher is better): the run's models at "
        "n = 1 and over all n beside the paper's GPT-4o column; no rank.",
    ),
    "manyifeval_set_stability": (
        "Beyond the paper",
        "Coefficient of variation (CV, lower is steadier) of inst-level accuracy over the "
        "instruction sets of equal size n (LIFBench's IFS applied to ManyIFEval), n_sets, mean "
        "(0..1).",
    ),
    "manyifeval_fig8_repeated": (
        "Fig. 8",
        "Prompt-level accuracy (0..1, higher is better) against n with unique against "
        "repeated instructions of matched prompt length (Appendix C).",
    ),
    "manyifeval_fig9_confusion": (
        "Fig. 9",
        "Confusion of the model's self-feedback (prediction) against the checkers (label): "
        "count and percent of each row's label (0..100; high on the diagonal is better), the "
        "run's self-refinement beside the paper's two matrices (source column).",
    ),
    "manyifeval_refinement_table2": (
        "Table 2",
        "Self-refinement per model and method: final-round prompt- and inst-level accuracy "
        "(0..1, higher is better), rounds, samples, and the feedback's precision, recall and F1 "
        "(0..1, higher is better; unparsed: feedback not read).",
    ),
    "manyifeval_refinement_by_round": (
        "Table 2",
        "Mean prompt- and inst-level accuracy (0..1, higher is better) and the share of "
        "rewritten answers (0..1) per model, strategy and refinement round (0 = zero-shot).",
    ),
    "manyifeval_fig6_refinement": (
        "Fig. 6",
        "Prompt-level accuracy (0..1, higher is better) against n: zero-shot and each "
        "refinement method's last round.",
    ),
}
"""Paper item and caption of each table and figure this report writes (report/index.html)."""


def verdict_frame(scores: pd.DataFrame, samples: Sequence[Sample]) -> pd.DataFrame:
    """One row per (model, sample, instruction) with its strict and loose verdicts.

    Args:
        scores: the run's scores (``lceval.core.io.scores_frame`` layout; ``parts`` as JSON strings
        or
            mappings), ManyIFEval rows.
        samples: the run's samples with typed gold (for ``n_instructions``, ``condition``,
            ``prompt_key``).

    Returns:
        Columns: model, sample_id, prompt_key, condition, n, index, instruction_id, strict, loose
        (0.0 / 1.0, NaN undecided). NaN-scored responses have no rows.

    Raises:
        LcevalError: a score refers to a sample that is not given.
    """
    by_id = {s.id: s for s in samples}
    rows: list[dict[str, Any]] = []
    for rec in scores.itertuples(index=False):
        s = by_id.get(rec.sample_id)
        if s is None:
            raise LcevalError(f"score for unknown sample {rec.sample_id!r}")
        if isinstance(rec.value, float) and math.isnan(rec.value):
            continue
        parts = json.loads(rec.parts) if isinstance(rec.parts, str) else dict(rec.parts)
        found: dict[tuple[int, str], dict[str, float]] = {}
        for k, v in parts.items():
            parsed = parse_part_key(k)
            if parsed is not None:
                mode, idx, iid = parsed
                found.setdefault((idx, iid), {})[mode] = float(v)
        prompt_key = s.meta.get("prompt_key") or s.gold.key or s.id
        n = int(s.meta.get("n_instructions") or len(s.gold.instruction_id_list))
        for (idx, iid), d in sorted(found.items()):
            rows.append(
                {
                    "model": rec.model,
                    "sample_id": rec.sample_id,
                    "prompt_key": prompt_key,
                    "condition": s.meta.get("condition", s.task),
                    "n": n,
                    "index": idx,
                    "instruction_id": iid,
                    "strict": d.get("strict", math.nan),
                    "loose": d.get("loose", math.nan),
                }
            )
    cols = ["model", "sample_id", "prompt_key", "condition", "n", "index", "instruction_id"]
    return pd.DataFrame(rows, columns=[*cols, "strict", "loose"])


CI_COLUMNS: tuple[str, ...] = (
    "prompt_level_low",
    "prompt_level_high",
    "inst_level_low",
    "inst_level_high",
)
"""The CI columns :func:`accuracy_by_n` adds."""


def _accuracy_ci(per_prompt: pd.DataFrame) -> tuple[float, float, float, float]:
    """Bootstrap CIs of P(n) (mean of the prompts' verdicts, undecided left out) and I(n)
    (followed / decided instructions, pooled), one prompt = one unit."""
    p = bootstrap(per_prompt["all_followed"].to_numpy(float))
    i = bootstrap_sums(
        {
            "followed": per_prompt["followed"].to_numpy(float),
            "count": per_prompt["count"].to_numpy(float),
        },
        mean_statistic(None, value="followed"),
    )
    return (p.low, p.high, i.low, i.high)


def accuracy_by_n(verdicts: pd.DataFrame, scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Prompt-level (Eq. 1) and instruction-level (Eq. 2) accuracy per model, condition, mode, n.

    Args:
        verdicts: :func:`verdict_frame` output.
        scores: the scores, only to count each model's NaN-scored responses in ``n_nan``.

    Returns:
        Columns: model, condition, mode, n, m (prompts), prompt_level, inst_level (0..1), their
        95% bootstrap CIs ``prompt_level_low``, ``prompt_level_high``, ``inst_level_low``,
        ``inst_level_high`` (prompts resampled: a prompt's instructions move together; ``m``
        is the n behind them), n_nan.
    """
    out = []
    if verdicts.empty:
        return pd.DataFrame(
            columns=[
                "model",
                "condition",
                "mode",
                "n",
                "m",
                "prompt_level",
                "inst_level",
                *CI_COLUMNS,
                "n_nan",
            ]
        )
    for mode in MODES:
        v = verdicts.assign(_failed=verdicts[mode] == 0.0, _undecided=verdicts[mode].isna())
        per_prompt = v.groupby(["model", "condition", "n", "sample_id"]).agg(
            failed=("_failed", "max"),
            undecided=("_undecided", "max"),
            followed=(mode, "sum"),
            count=(mode, "count"),
        )
        per_prompt["all_followed"] = np.where(
            per_prompt["failed"], 0.0, np.where(per_prompt["undecided"], np.nan, 1.0)
        )
        g = per_prompt.groupby(level=["model", "condition", "n"])
        ci = {key: _accuracy_ci(part) for key, part in g}
        agg = pd.DataFrame(
            {
                "m": g.size(),
                "prompt_level": g["all_followed"].mean(),
                "inst_level": g["followed"].sum() / g["count"].sum(),
            }
        ).reset_index()
        keys = list(zip(agg["model"], agg["condition"], agg["n"], strict=True))
        for j, col in enumerate(CI_COLUMNS):
            agg[col] = [ci[k][j] for k in keys]
        agg.insert(2, "mode", mode)
        out.append(agg)
    res = pd.concat(out, ignore_index=True)
    res["n_nan"] = 0
    if scores is not None and len(scores):
        nan = scores[scores["value"].isna()]
        if len(nan):
            res = res.drop(columns="n_nan")
            counts = nan.groupby("model").size().rename("n_nan").reset_index()
            res = res.merge(counts, on="model", how="left").fillna({"n_nan": 0})
    return res.sort_values(["model", "condition", "mode", "n"]).reset_index(drop=True)


POOLED_METRICS: tuple[tuple[str, str, str], ...] = (
    ("prompt-level strict accuracy", "strict", "prompt"),
    ("instruction-level strict accuracy", "strict", "inst"),
    ("prompt-level loose accuracy", "loose", "prompt"),
    ("instruction-level loose accuracy", "loose", "inst"),
)
"""IFEval's four numbers: (metric name, mode, level)."""


def pooled_accuracies(verdicts: pd.DataFrame) -> pd.DataFrame:
    """IFEval's four accuracies per model, pooled over every prompt (not averaged over n).

    Prompt-level: the share of prompts whose every instruction is followed; instruction-level:
    followed instructions over all instructions, pooled over prompts (IFEval, Zhou et al. 2023,
    Sec. 3; ``lm_eval/tasks/ifeval/utils.py`` ``agg_inst_level_acc``); strict and loose. These
    are the numbers IFEval publishes (GPT-4: 76.89 prompt-level strict), while ManyIFEval's
    headline is the mean over instruction counts n of P(n). Undecided verdicts are left out
    (Kleene "and" for the prompt, as :func:`accuracy_by_n`). Condition ``unique`` only.

    Args:
        verdicts: :func:`verdict_frame` output.

    Returns:
        Columns: model, metric, mode, level, estimate (0..1), low, high (95% bootstrap CI over
        prompts), n (prompts with a decided verdict).
    """
    cols = ["model", "metric", "mode", "level", "estimate", "low", "high", "n"]
    v = verdicts[verdicts["condition"] == "unique"] if len(verdicts) else verdicts
    if v.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for metric, mode, level in POOLED_METRICS:
        w = v.assign(_failed=v[mode] == 0.0, _undecided=v[mode].isna())
        per_prompt = w.groupby(["model", "sample_id"], sort=True).agg(
            failed=("_failed", "max"),
            undecided=("_undecided", "max"),
            followed=(mode, "sum"),
            count=(mode, "count"),
        )
        per_prompt["all_followed"] = np.where(
            per_prompt["failed"], 0.0, np.where(per_prompt["undecided"], np.nan, 1.0)
        )
        for model, part in per_prompt.groupby(level="model", sort=True):
            if level == "prompt":
                e = bootstrap(part["all_followed"].to_numpy(float))
                est, n = e.mean, int(part["all_followed"].notna().sum())
            else:
                e = bootstrap_sums(
                    {
                        "followed": part["followed"].to_numpy(float),
                        "count": part["count"].to_numpy(float),
                    },
                    mean_statistic(None, value="followed"),
                )
                total = float(part["count"].sum())
                est = float(part["followed"].sum()) / total if total else math.nan
                n = int((part["count"] > 0).sum())
            rows.append([model, metric, mode, level, est, e.low, e.high, n])
    return pd.DataFrame(rows, columns=cols)


def extra_metrics(scores: pd.DataFrame, samples: Sequence[Sample]) -> pd.DataFrame:
    """The metrics results.json and ``lceval score`` show beside the headline: IFEval's four
    pooled accuracies (:func:`pooled_accuracies`), unit 0..1."""
    return pooled_accuracies(verdict_frame(scores, samples)).assign(unit="0..1")


def curse_law(acc: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compare measured P(n) with I(n)^n (Eq. 3) per model, condition and mode.

    Args:
        acc: :func:`accuracy_by_n` output.

    Returns:
        ``(per_n, fit)``: ``per_n`` adds ``predicted`` = inst_level ** n and ``residual`` =
        prompt_level - predicted to ``acc``; ``fit`` has one row per (model, condition, mode) with
        ``r2`` (coefficient of determination of the prediction: 1 - SS_res / SS_tot, NaN when
        P(n) is constant), ``mae`` (mean absolute error, 0..1) and ``points`` (number of n).
        Eq. (3) has no free parameter, so nothing is fitted: the law is scored as it stands.
    """
    per_n = acc.copy()
    per_n["predicted"] = per_n["inst_level"] ** per_n["n"]
    per_n["residual"] = per_n["prompt_level"] - per_n["predicted"]
    rows = []
    for (model, cond, mode), g in per_n.groupby(["model", "condition", "mode"], sort=True):
        y = g["prompt_level"].to_numpy(float)
        yhat = g["predicted"].to_numpy(float)
        ss_res = float(np.sum((y - yhat) ** 2))
        ss_tot = float(np.sum((y - y.mean()) ** 2))
        rows.append(
            {
                "model": model,
                "condition": cond,
                "mode": mode,
                "points": len(g),
                "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan,
                "mae": float(np.mean(np.abs(y - yhat))),
            }
        )
    return per_n, pd.DataFrame(rows, columns=["model", "condition", "mode", "points", "r2", "mae"])


def per_instruction(verdicts: pd.DataFrame, mode: str = "strict") -> pd.DataFrame:
    """Instruction-level accuracy of each instruction at each n (Table 4's last column: n = 1).

    Returns:
        Index (model, instruction_id, name); columns n = 1.. and ``all`` (over every n); 0..1.

    Raises:
        LcevalError: unknown mode.
    """
    if mode not in MODES:
        raise LcevalError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    v = verdicts[verdicts["condition"] == "unique"] if "condition" in verdicts else verdicts
    if v.empty:
        return pd.DataFrame()
    tab = v.pivot_table(index=["model", "instruction_id"], columns="n", values=mode, aggfunc="mean")
    tab["all"] = v.groupby(["model", "instruction_id"])[mode].mean()
    tab = tab.reset_index()
    tab.insert(2, "name", tab["instruction_id"].map(INSTRUCTION_NAME).fillna(""))
    return tab.set_index(["model", "instruction_id", "name"])


def set_stability(verdicts: pd.DataFrame) -> pd.DataFrame:
    """IFS-style stability over instruction sets (LIFBench Eq. 6 applied to ManyIFEval).

    At a fixed count n every task prompt carries its own instruction set; sets of equal size are
    the benchmark's equal-load variants. Per model, condition, mode and n, each set's
    instruction-level accuracy (followed / decided instructions of that prompt; Eq. 2 on one
    prompt) is a group mean, and the stability is their coefficient of variation (ddof=1;
    :func:`lceval.metrics.group_stability`); ``CV`` over n = 1 mixes set difficulty with the
    single 0/1 verdict each set has. Lower is steadier.

    Returns:
        Columns ``model, condition, mode, n`` (instruction count), ``CV``, ``n_sets``
        (instruction sets with a decided instruction) and ``mean`` (mean over sets, 0..1).
    """
    cols = ["model", "condition", "mode", "n", "CV", "n_sets", "mean"]
    if verdicts.empty:
        return pd.DataFrame(columns=cols)
    parts = []
    for mode in MODES:
        per = (
            verdicts.groupby(["model", "condition", "n", "prompt_key"])[mode]
            .agg(["sum", "count"])
            .reset_index()
        )
        per = per[per["count"] > 0].assign(
            value=lambda d: d["sum"] / d["count"], mode=mode, count_n=lambda d: d["n"]
        )
        st = group_stability(per, "prompt_key", ["model", "condition", "mode", "count_n"])
        st = st.drop(columns="n").rename(columns={"count_n": "n", "n_groups": "n_sets"})
        parts.append(st[cols])
    return pd.concat(parts, ignore_index=True).sort_values(["model", "condition", "mode", "n"])


def headline(scores: pd.DataFrame, samples: Sequence[Sample]) -> Headline:
    """ManyIFEval's headline for leaderboards and paired tests: prompt-level accuracy (strict,
    Eq. 1; the scorer's value), the mean over the instruction counts n of P(n), unique
    condition. The unit is the task prompt: a prompt's samples at every n (nested instruction
    sets) are resampled and flipped together."""
    by_id = {s.id: s for s in samples}
    df = scores[scores["sample_id"].isin(by_id) & scores["value"].notna()]
    meta = [by_id[i].meta for i in df["sample_id"]]
    keep = np.array([m.get("condition", "unique") == "unique" for m in meta], dtype=bool)
    df = df[keep]
    meta = [m for m, k in zip(meta, keep, strict=True) if k]
    frame = pd.DataFrame(
        {
            "model": df["model"].astype(str).to_numpy(),
            "sample_id": df["sample_id"].to_numpy(),
            "group": [int(m.get("n_instructions") or 0) for m in meta],
            "cluster": [
                str(m.get("prompt_key") or sid)
                for m, sid in zip(meta, df["sample_id"], strict=True)
            ],
            "value": df["value"].to_numpy(float),
            "count": 1.0,
        }
    )

    def stat(sums: Mapping[str, np.ndarray], groups: Sequence[Hashable]) -> np.ndarray:
        return mean_statistic(dict.fromkeys(groups, 1.0))(sums, groups)

    return Headline(
        "manyifeval", "prompt-level accuracy (mean over n)", "0..1", frame, ("value", "count"), stat
    )


def _published_n10(published: pd.DataFrame | None) -> pd.DataFrame:
    if published is None or published.empty:
        return pd.DataFrame(columns=["model", "n", "prompt_level"])
    return published[published["source"] != THIS_RUN].dropna(subset=["n", "prompt_level"])


def plot_accuracy(
    acc: pd.DataFrame, mode: str = "strict", published: pd.DataFrame | None = None
) -> Any:
    """Fig. 1 style: instruction-level (left) and prompt-level (right) accuracy against n; the
    published points (:func:`accuracy_with_published` rows not of the run) as black crosses
    labelled "(published)", the run's models as lines.
    """
    import seaborn as sns  # heavy: seaborn

    d = acc[(acc["mode"] == mode) & (acc["condition"] == "unique")]
    pub = _published_n10(published)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, col, title in (
        (axes[0], "inst_level", "Inst-level accuracy"),
        (axes[1], "prompt_level", "Prompt-level accuracy"),
    ):
        sns.lineplot(data=d, x="n", y=col, hue="model", marker="o", ax=ax, linewidth=2.2)
        for marker, (_, r) in zip("XPD*", pub.dropna(subset=[col]).iterrows(), strict=False):
            ax.plot(r["n"], r[col], marker, color="black", label=f"{r['model']} (published)")
        ax.set(xlabel="Number of instructions", ylabel=title, ylim=(-0.02, 1.02), title=title)
        ax.set_xticks(sorted({*d["n"].unique(), *pub["n"].astype(int)}))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"ManyIFEval ({mode}); crosses: the paper's published points")
    fig.tight_layout()
    return fig


def plot_curse(
    per_n: pd.DataFrame,
    fit: pd.DataFrame,
    mode: str = "strict",
    published: pd.DataFrame | None = None,
) -> Any:
    """Fig. 4 / Fig. 10 style: measured prompt-level accuracy and I(n)^n against n, one panel
    per model, and a last panel with the paper's published P(10) points (``published``, as in
    :func:`plot_accuracy`; the text states no I(n), so no law is drawn for them).
    """
    d = per_n[(per_n["mode"] == mode) & (per_n["condition"] == "unique")]
    models = sorted(d["model"].unique())
    pub = _published_n10(published)
    panels = len(models) + (1 if len(pub) else 0)
    fig, axes = plt.subplots(1, max(panels, 1), figsize=(4.5 * max(panels, 1), 4), squeeze=False)
    for ax, model in zip(axes[0], models, strict=False):
        g = d[d["model"] == model].sort_values("n")
        ax.plot(g["n"], g["prompt_level"], "o-", label="Prompt-level accuracy (measured)")
        ax.plot(g["n"], g["predicted"], "s--", label="(Inst-level accuracy)$^n$")
        f = fit[(fit["model"] == model) & (fit["mode"] == mode) & (fit["condition"] == "unique")]
        if len(f):
            r = f.iloc[0]
            ax.text(
                0.97,
                0.97,
                f"$R^2$ = {r['r2']:.3f}\nMAE = {r['mae']:.3f}",
                transform=ax.transAxes,
                ha="right",
                va="top",
            )
        ax.set(
            xlabel="Number of instructions",
            ylabel="Prompt-level accuracy",
            ylim=(-0.02, 1.02),
            title=f"{str(model).split('/')[-1]} (this run)",
        )
        ax.legend(loc="center right", fontsize=8)
    if len(pub):
        ax = axes[0][-1]
        for marker, (_, r) in zip("XPD*", pub.iterrows(), strict=False):
            ax.plot(r["n"], r["prompt_level"], marker, color="black", label=str(r["model"]))
        ax.set(
            xlabel="Number of instructions",
            ylabel="Prompt-level accuracy",
            xlim=(0.5, 10.5),
            ylim=(-0.02, 1.02),
            title="published P(10), paper Sec. 5.1",
        )
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_feedback_confusion(confusion: pd.DataFrame) -> Any:
    """Fig. 9 (Appendix E): one annotated heat map per (source, model, strategy) of
    :func:`feedback_confusion` output; rows the checkers' label, columns the feedback's
    prediction ("following" / "not following"), cells percent of the row (and counts for the
    run). The paper's matrices are titled "(published)".
    """
    import seaborn as sns  # heavy: seaborn

    cols = zip(confusion["source"], confusion["model"], confusion["method"], strict=True)
    keys = list(dict.fromkeys(cols))
    fig, axes = plt.subplots(1, len(keys), figsize=(3.4 * len(keys), 3.2), squeeze=False)
    for ax, (source, model, method) in zip(axes[0], keys, strict=True):
        g = confusion[
            (confusion["source"] == source)
            & (confusion["model"] == model)
            & (confusion["method"] == method)
        ]
        pct = g.pivot(index="label", columns="prediction", values="percent")
        pct = pct.reindex(index=list(LABELS), columns=list(LABELS))
        cnt = g.pivot(index="label", columns="prediction", values="count")
        cnt = cnt.reindex(index=list(LABELS), columns=list(LABELS))
        annot = pct.map(lambda x: f"{x:.0f}%") + cnt.map(
            lambda c: "" if pd.isna(c) else f"\n({int(c)})"
        )
        sns.heatmap(pct, annot=annot, fmt="", vmin=0, vmax=100, cmap="Blues", cbar=False, ax=ax)
        who = "published" if source != THIS_RUN else "this run"
        ax.set_title(f"{method}\n{str(model).split('/')[-1]} ({who})", fontsize=8)
        ax.set(xlabel="Prediction (self-feedback)", ylabel="Label (checkers)")
    fig.tight_layout()
    return fig


def plot_repeated(acc: pd.DataFrame, mode: str = "strict") -> Any:
    """Fig. 8 style: inst-level accuracy of unique against repeated instructions, against n."""
    import seaborn as sns  # heavy: seaborn

    d = acc[acc["mode"] == mode]
    fig, ax = plt.subplots(figsize=(5, 4))
    sns.lineplot(data=d, x="n", y="inst_level", hue="model", style="condition", marker="o", ax=ax)
    ax.set(
        xlabel="Number of instructions (prompt length matched)",
        ylabel="Inst-level accuracy",
        ylim=(-0.02, 1.02),
    )
    fig.tight_layout()
    return fig


def report_manyifeval(
    run: RunDir, scores: pd.DataFrame, samples: Sequence[Sample]
) -> dict[str, pd.DataFrame]:
    """Tables and figures of a ManyIFEval run (Fig. 1, Fig. 4, Appendix C, and Sec. 5 if run).

    Writes under ``run.report``: ``manyifeval_accuracy_by_n.csv`` (with bootstrap CIs),
    ``manyifeval_curse_law.csv`` (per n), ``manyifeval_curse_fit.csv`` (R^2, MAE),
    ``manyifeval_per_instruction.csv``, ``manyifeval_ifeval_pooled.csv`` (IFEval's four pooled
    accuracies with CIs, :func:`pooled_accuracies`; also columns of ``manyifeval_summary.csv``),
    ``manyifeval_set_stability.csv`` (CV over instruction
    sets, :func:`set_stability`), and
    ``manyifeval_fig1_with_published.csv`` (the run's accuracies beside the paper's stated
    points), ``manyifeval_table4_with_published.csv`` (per instruction, beside Table 4's GPT-4o
    column), ``manyifeval_fig9_confusion.csv``, and figures ``manyifeval_fig1_accuracy``,
    ``manyifeval_fig4_curse`` (both with the published points, marked),
    ``manyifeval_fig9_confusion`` (the feedback's confusion matrices of the run's
    self-refinement beside the paper's two; the
    paper's alone when the run has none) (and ``manyifeval_fig8_repeated`` when the run has the
    repeated control) as PNG and PDF. When the run has self-refinement results
    (``lceval.benchmarks.manyifeval.refine``) their Table 2 layout is added.

    Returns:
        The tables by name: accuracy_by_n, curse_law, curse_fit, per_instruction,
        set_stability, summary, ifeval_pooled, fig1_with_published, table4_with_published,
        fig9_confusion (+ refinement tables when present).

    Raises:
        LcevalError: no ManyIFEval scores, or a score for an unknown sample.
    """
    if scores.empty:
        raise LcevalError(f"run {run.run_id} has no ManyIFEval scores to report")
    verdicts = verdict_frame(scores, samples)
    acc = accuracy_by_n(verdicts, scores)
    per_n, fit = curse_law(acc[acc["condition"] == "unique"])
    inst = per_instruction(verdicts)
    stability = set_stability(verdicts)
    run.report.mkdir(parents=True, exist_ok=True)
    save_table(stability, run.report, "manyifeval_set_stability", index=False)
    save_table(acc, run.report, "manyifeval_accuracy_by_n", index=False)
    save_table(per_n, run.report, "manyifeval_curse_law", index=False)
    save_table(fit, run.report, "manyifeval_curse_fit", index=False)
    save_table(inst, run.report, "manyifeval_per_instruction")
    tables = {
        "accuracy_by_n": acc,
        "curse_law": per_n,
        "curse_fit": fit,
        "per_instruction": inst,
        "set_stability": stability,
    }
    table4 = table4_with_published(inst)
    tables["table4_with_published"] = table4
    save_table(table4, run.report, "manyifeval_table4_with_published")
    beside = accuracy_with_published(acc)
    tables["fig1_with_published"] = beside
    save_table(beside, run.report, "manyifeval_fig1_with_published", index=False)
    if len(per_n):
        save_figure(plot_accuracy(acc, published=beside), run.figures, "manyifeval_fig1_accuracy")
        save_figure(plot_curse(per_n, fit, published=beside), run.figures, "manyifeval_fig4_curse")
    if (acc["condition"] == "repeated").any():
        save_figure(plot_repeated(acc), run.figures, "manyifeval_fig8_repeated")
    strict = acc[(acc["mode"] == "strict") & (acc["condition"] == "unique")]
    summary = strict.pivot_table(index="model", columns="n", values="prompt_level")
    summary.columns = [f"P({c})" for c in summary.columns]
    f = fit[(fit["mode"] == "strict") & (fit["condition"] == "unique")].set_index("model")
    summary = summary.join(f[["r2", "mae"]])
    pooled = pooled_accuracies(verdicts)
    if len(pooled):
        wide = pooled.pivot_table(index="model", columns="metric", values="estimate")
        summary = summary.join(wide[[m for m, _, _ in POOLED_METRICS]], how="outer")
    tables["summary"] = summary
    tables["ifeval_pooled"] = pooled
    save_table(summary, run.report, "manyifeval_summary")
    save_table(pooled, run.report, "manyifeval_ifeval_pooled", index=False)

    if refine.has_results(run):
        tables.update(refine.report_refinement(run, samples))
    performance = tables.get("refinement_feedback")
    if performance is None:
        performance = pd.DataFrame(columns=["model", "strategy", "tp", "fp", "fn", "tn"])
    confusion = feedback_confusion(performance)
    tables["fig9_confusion"] = confusion
    save_table(confusion, run.report, "manyifeval_fig9_confusion", index=False)
    save_figure(plot_feedback_confusion(confusion), run.figures, "manyifeval_fig9_confusion")
    return tables
