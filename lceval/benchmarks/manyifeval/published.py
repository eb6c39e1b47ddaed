"""ManyIFEval's published numbers beside a run: the accuracies the paper's text states
(``resources/published.csv``: P(10) of Sec. 5.1 for Fig. 1 / 4 / 10 and Fig. 6, the pooled
zero-shot rows of Tables 2 and 5) and Fig. 9's confusion matrices of self-feedback
(``resources/fig9_confusion.csv``, Appendix E), and the run's own Fig. 9 from the feedback counts
of ``refine.feedback_performance``.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

from lceval.benchmarks.manyifeval.gold import PAPER_NAMES, TABLE4

THIS_RUN = "this run"
"""``source`` of rows computed from the run."""
PUBLISHED = "published (paper text)"
"""``source`` of the paper's numbers."""

LABELS = ("following", "not following")
"""Fig. 9's row (checker label) and column (self-feedback prediction) order."""


def _csv(name: str) -> pd.DataFrame:
    with (resources.files(__package__) / "resources" / name).open("r", encoding="utf-8") as f:
        return pd.read_csv(f)


def published_points() -> pd.DataFrame:
    """The accuracies the paper's text states (0..1).

    Returns:
        Columns: figure (the item they belong to), model, strategy, n (NaN: pooled over
        n = 1..10), metric (``prompt_level`` or ``inst_level``), value, where (the sentence or
        table), source (:data:`PUBLISHED`).
    """
    return _csv("published.csv").assign(source=PUBLISHED)


def accuracy_with_published(acc: pd.DataFrame, mode: str = "strict") -> pd.DataFrame:
    """Fig. 1's numbers of the run (unique instructions, ``mode``) beside the paper's points.

    Args:
        acc: ``report.accuracy_by_n`` output.
        mode: ``strict`` (the paper's) or ``loose``.

    Returns:
        Columns: source, model, n, prompt_level, inst_level (0..1), where; the run's rows then
        the published zero-shot points at n = 10 (inst_level NaN: the text gives none).
    """
    run = acc[(acc["mode"] == mode) & (acc["condition"] == "unique")]
    run = run[["model", "n", "prompt_level", "inst_level"]].assign(source=THIS_RUN, where="")
    pub = published_points()
    pub = pub[(pub["figure"] == "Fig. 1") & (pub["metric"] == "prompt_level")]
    pub = pub.rename(columns={"value": "prompt_level"}).assign(inst_level=float("nan"))
    cols = ["source", "model", "n", "prompt_level", "inst_level", "where"]
    return pd.concat([run[cols], pub[cols]], ignore_index=True)


def published_confusion() -> pd.DataFrame:
    """Fig. 9 as printed: ``method`` (the paper's), ``strategy`` (lceval's, NaN when it has
    none), ``label``, ``prediction``, ``percent`` (of the label row, 0..100), ``count`` (NaN:
    not printed), ``model`` (``"paper (model not named)"``), ``source``."""
    out = _csv("fig9_confusion.csv")
    return out.assign(count=float("nan"), model="paper (model not named)", source=PUBLISHED)


def feedback_confusion(performance: pd.DataFrame) -> pd.DataFrame:
    """Fig. 9 of the run: per model and strategy with feedback, the confusion matrix of the
    feedback's verdicts against the checkers' (Appendix E), beside the paper's two matrices.

    Args:
        performance: ``refine.feedback_performance`` output (tp, fp, fn, tn per model and
            strategy; positive = the instruction is followed). Strategies whose feedback was
            never compared (all four counts 0) are left out.

    Returns:
        Long table: source, model, strategy, method (the paper's name), label (the checkers'
        verdict: ``following`` / ``not following``), prediction (the feedback's), count,
        percent (of the label row, 0..100; NaN for an empty row); the run's rows first.
    """
    rows = []
    for r in performance.itertuples(index=False):
        cells = {
            ("following", "following"): r.tp,
            ("following", "not following"): r.fn,
            ("not following", "following"): r.fp,
            ("not following", "not following"): r.tn,
        }
        if sum(cells.values()) == 0:
            continue
        for label in LABELS:
            total = cells[(label, "following")] + cells[(label, "not following")]
            for pred in LABELS:
                count = cells[(label, pred)]
                rows.append(
                    {
                        "source": THIS_RUN,
                        "model": r.model,
                        "strategy": r.strategy,
                        "method": PAPER_NAMES.get(r.strategy, r.strategy),
                        "label": label,
                        "prediction": pred,
                        "count": count,
                        "percent": 100.0 * count / total if total else float("nan"),
                    }
                )
    cols = ["source", "model", "strategy", "method", "label", "prediction", "count", "percent"]
    run = pd.DataFrame(rows, columns=cols)
    out = pd.concat([run, published_confusion()[cols]], ignore_index=True)
    return out.astype({"count": float, "percent": float})


def table4_with_published(per_instruction: pd.DataFrame) -> pd.DataFrame:
    """Table 4's last column beside the run: inst-level accuracy of each instruction.

    Args:
        per_instruction: ``report.per_instruction`` output (index model, instruction_id, name;
            columns n = 1.. and ``all``).

    Returns:
        Indexed by (instruction_id, name) in Table 4's order: per run model ``<model> (this
        run, n=1)`` and ``<model> (this run, all n)``, then ``gpt-4o-2024-05-13 (published)``
        (0..1; whole percents as printed).
    """
    index = pd.MultiIndex.from_tuples(
        [(t[0], t[2]) for t in TABLE4], names=["instruction_id", "name"]
    )
    out = pd.DataFrame(index=index)
    if not per_instruction.empty:
        flat = per_instruction.reset_index()
        for model, g in flat.groupby("model", sort=True):
            g = g.set_index(["instruction_id", "name"])
            if 1 in g.columns:
                out[f"{model} (this run, n=1)"] = g[1].reindex(index)
            out[f"{model} (this run, all n)"] = g["all"].reindex(index)
    pub = _csv("table4_gpt4o.csv").set_index("instruction_id")["inst_level"]
    out["gpt-4o-2024-05-13 (published)"] = [pub.get(i) for i, _ in index]
    return out
