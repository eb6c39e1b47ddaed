"""LIFBench's published numbers beside a run, and the checks that lceval's aggregates reproduce
them: the paper's Tables 3-4 (``resources/paper_table3.csv``, ``paper_table4.csv``), the official
result files of SheldonWu0327/LIFBench-2024 (``full_results_IFP.xlsx``, ``ifs1120.xlsx``, kept as
``official_results.csv``) and their per-sample scores condensed to group means
(``official_group_means.csv``).

Published numbers beside the run: Table 3 (``table3_ars``) and the summary carry the paper's
Table 3 rows, IFP (``ifp``) the official ``full_results_IFP.xlsx`` rows, each marked in a
``source`` column (``THIS_RUN``, ``PUBLISHED_T3``, ``PUBLISHED_IFP`` of ``tables.py``); the IFP
radar draws the run's models over the published best, median and worst model by Table 3 ARS.
:func:`paper_check` and :func:`official_check` recompute the published tables from the shipped
data with lceval's own aggregates (``tables.py``) and flag each difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

import numpy as np
import pandas as pd

from lceval.benchmarks.lifbench.gold import CAPABILITIES
from lceval.benchmarks.lifbench.tables import (
    _RES,
    PERSPECTIVES,
    PUBLISHED_IFP,
    PUBLISHED_T3,
    PUBLISHED_T4,
    PUBLISHED_T34,
    TABLE3_ORDER,
    THIS_RUN,
    ifp,
    ifs_table,
    overall_ars,
)
from lceval.core.errors import LcevalError

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


def table4_with_published(t4: pd.DataFrame) -> pd.DataFrame:
    """The run's Table 4 beside the paper's Table 4 rows, every perspective, ranks over all rows.

    Args:
        t4: :func:`ifs_table` output of the run (models x perspectives, IFS(AVG), ARS).

    Returns:
        Indexed by model: ``source`` (:data:`THIS_RUN` or :data:`PUBLISHED_T4`),
        ``Expression, Variable, Length, IFS(AVG)`` (IFS, lower is steadier; published: printed
        at 3 decimals), ``ARS`` (Table 4's, = Table 3 Overall), each ``<col>_rank`` re-ranked
        over all rows (1 = best; IFS ascending, ARS descending), ``paper_rank`` (the paper's
        row order by mean perspective rank; NaN for the run); rows ordered by the mean of the
        three perspective ranks, as the paper orders them.
    """
    cols = [*PERSPECTIVES, "IFS(AVG)", "ARS"]
    paper = paper_table4()
    pub = paper[cols].assign(paper_rank=paper["row"].astype(float))
    run = t4[cols].assign(paper_rank=np.nan)
    out = pd.concat([_marked(run, THIS_RUN), _marked(pub, PUBLISHED_T4, t4.index)])
    for c in cols:
        out[f"{c}_rank"] = out[c].rank(method="min", ascending=c != "ARS")
    out["mean_rank"] = out[[f"{p}_rank" for p in PERSPECTIVES]].mean(axis=1)
    out = out[["source", *[x for c in cols for x in (c, f"{c}_rank")], "paper_rank", "mean_rank"]]
    out.index.name = "model"
    return out.sort_values(["mean_rank", "IFS(AVG)"], kind="stable", na_position="last")


def radar_published(which: str | Iterable[str] = "reference") -> pd.DataFrame:
    """Published IFP rows for the radar (Fig. 2): models x capabilities (0..1).

    Args:
        which: ``"reference"`` (:func:`radar_reference`: best, median and worst by ARS),
            ``"all"`` (the 20 models of the official IFP file, in its order), ``"none"``, or
            model names of :func:`published_ifp` (in the order given).

    Returns:
        Indexed by legend label (``"<model> (published)"``, with the ARS for ``"reference"``).

    Raises:
        LcevalError: an unknown choice or model name (the message lists the published models).
    """
    pub = published_ifp()
    if isinstance(which, str):
        if which == "reference":
            return radar_reference()
        if which in ("all", "none"):
            rows = pub if which == "all" else pub.iloc[:0]
            return rows.rename(index=lambda m: f"{m} (published)")
        which = [which]
    names = [str(m) for m in which]
    unknown = [m for m in names if m not in pub.index]
    if unknown:
        raise LcevalError(
            f"no published IFP for {', '.join(map(repr, unknown))}; choose 'reference', 'all', "
            f"'none' or models of: {', '.join(map(str, pub.index))}"
        )
    return pub.loc[names].rename(index=lambda m: f"{m} (published)")


PAPER_FIG3_SHARE = {"Expression": 0.75, "Variable": 0.375, "Length": 0.625}
"""Fig. 3 (Appendix B text): share of the paper's sixteen models whose IFS is higher with the
expression extension than with random sampling, per perspective."""


def fig3_share_with_published(gap: pd.DataFrame) -> pd.DataFrame:
    """Share of models with a positive IFS gap per perspective (:func:`ifs_gap`'s
    ``attrs["share_positive"]``), the run's beside the paper's (Appendix B text).

    Returns:
        Indexed by ``source`` (:data:`THIS_RUN`, ``"published (paper Appendix B)"``):
        ``Expression, Variable, Length`` (0..1) and ``models`` (models with a defined gap).
    """
    n = int(gap.drop(index="MEAN", errors="ignore").notna().any(axis=1).sum())
    run = {**gap.attrs.get("share_positive", {}), "models": n}
    pub = {**PAPER_FIG3_SHARE, "models": 16}
    out = pd.DataFrame([run, pub], index=[THIS_RUN, "published (paper Appendix B)"])
    out.index.name = "source"
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
