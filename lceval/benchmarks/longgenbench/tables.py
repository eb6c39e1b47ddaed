"""LongGenBench tables in the paper's layout, and the published numbers beside the run's models.

Reproduces, from a run's per-sample frame (:func:`lceval.benchmarks.longgenbench.report.
sample_frame`), the LongGenBench paper's (Wu et al., ICLR 2025):

- Table 7 (Appendix G, "Model comparison with different prompt formats"): per prompt format and
  model, CR, STIC-2, Length (words), wAvg (CR x STIC-2) and Rank (1 = best wAvg within the
  format). A run holds both formats when built with ``prompt_formats: [p1, p2]``
  (:mod:`lceval.benchmarks.longgenbench.prompts`).
- Table 3 beside the published rows (``resources/ruler_correlation/table3.csv``).

Numbers stay unrounded in the tables (percent 0..100, Len in words); :func:`paper_style` renders
them with the paper's rounding for display.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

import numpy as np
import pandas as pd

from lceval.benchmarks.longgenbench.prompts import FORMAT_LABEL
from lceval.core.errors import LcevalError
from lceval.report.reporting import THIS_RUN

PUBLISHED_T3 = "published (paper Table 3)"
PUBLISHED_T7 = "published (paper Table 7)"
TABLE7_COLUMNS = ["version", "prompt_format", "model", "CR", "STIC_2", "Len", "wAvg", "Rank"]
TABLE3_COLUMNS = ["source", "model", "version", "CR", "STIC_1", "STIC_2", "Len", "wAvg"]
_VERSION_OF_LENGTH = {16384: "short", 32768: "long"}


def pooled_checks(g: pd.DataFrame, suffix: str = "") -> dict[str, float]:
    """STIC-1 and STIC-2 (percent, 0..100) from the check counts pooled over the scored rows of
    ``g`` (``n_yes``, ``n_judged``, ``n_checks``, each with ``suffix``), and those counts
    (official ``static.ipynb`` pools counts, not per-sample rates)."""
    ok = g[g["value"].notna()] if "value" in g else g
    yes = float(ok.get(f"n_yes{suffix}", pd.Series(dtype=float)).sum())
    judged = float(ok.get(f"n_judged{suffix}", pd.Series(dtype=float)).sum())
    checks = float(ok.get(f"n_checks{suffix}", pd.Series(dtype=float)).sum())
    return {
        "STIC_1": 100 * yes / judged if judged else np.nan,
        "STIC_2": 100 * yes / checks if checks else np.nan,
        "n_checks": checks,
        "n_judged": judged,
        "n_yes": yes,
    }


def metrics_of(frame: pd.DataFrame) -> dict[str, float]:
    """CR, STIC-1, STIC-2, wAvg (percent, 0..100) and Len (words) of a group of samples.

    Source: official ``static.ipynb`` (pooled STIC; Len filter > 40 blocks and > 2,000 words) and
    paper Table 3 (wAvg = CR x STIC-2).
    """
    ok = frame[frame["value"].notna()] if "value" in frame else frame
    cr = 100 * float(ok["CR"].mean()) if "CR" in ok and len(ok) else np.nan
    pooled = pooled_checks(ok)
    if "len_eligible" in ok and len(ok):
        elig = ok[ok["len_eligible"] > 0]
        length = float(elig["words"].mean()) if len(elig) else np.nan
    else:
        length = np.nan
    return {
        "CR": cr,
        "STIC_1": pooled["STIC_1"],
        "STIC_2": pooled["STIC_2"],
        "wAvg": cr * pooled["STIC_2"] / 100,
        "Len": length,
        "n_samples": float(len(ok)),
        "n_errors": float(len(frame) - len(ok)),
    }


def _resource_csv(*parts: str) -> pd.DataFrame:
    path = resources.files("lceval.benchmarks.longgenbench").joinpath("resources", *parts)
    try:
        with resources.as_file(path) as p:
            return pd.read_csv(p)
    except (OSError, pd.errors.ParserError) as exc:
        raise LcevalError(f"cannot read lceval resource {'/'.join(parts)}: {exc}") from None


def prompt_format_of(frame: pd.DataFrame) -> pd.Series:
    """Each row's prompt format (``p1`` where the frame has no ``prompt_format`` column)."""
    if "prompt_format" not in frame:
        return pd.Series("p1", index=frame.index)
    return frame["prompt_format"].fillna("p1").astype(str)


def main_format(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the main prompt format (Prompt-1), which Table 3, Fig. 2 and Fig. 3a use; all
    rows when the run has no Prompt-1 sample (a run built with ``prompt_formats: [p2]``)."""
    fmt = prompt_format_of(frame)
    return frame[fmt == "p1"] if (fmt == "p1").any() else frame


def table7(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 7 from a run: per version, prompt format and model (paper Appendix G).

    Args:
        frame: :func:`~lceval.benchmarks.longgenbench.report.sample_frame` of the run (all
            prompt formats).

    Returns:
        Columns :data:`TABLE7_COLUMNS` plus ``n_samples``: ``CR``, ``STIC_2``, ``wAvg`` in
        percent (0..100; pooled as Table 3), ``Len`` in words (Table 3's filter), ``Rank`` by
        wAvg within version and format (1 = best; ties share the best rank; NaN wAvg: no rank).
        ``prompt_format`` is the paper's label (``Prompt - 1`` / ``Prompt - 2``). Empty when the
        frame is.
    """
    if frame.empty:
        return pd.DataFrame(columns=[*TABLE7_COLUMNS, "n_samples"])
    frame = frame.assign(prompt_format=prompt_format_of(frame))
    rows = []
    for (version, fmt, model), g in frame.groupby(["version", "prompt_format", "model"]):
        m = metrics_of(g)
        rows.append(
            {
                "version": version,
                "prompt_format": FORMAT_LABEL.get(str(fmt), str(fmt)),
                "model": model,
                **{k: m[k] for k in ("CR", "STIC_2", "Len", "wAvg", "n_samples")},
            }
        )
    out = pd.DataFrame(rows)
    out["Rank"] = out.groupby(["version", "prompt_format"])["wAvg"].rank(
        ascending=False, method="min"
    )
    order = {"short": 0, "long": 1}
    out = out.sort_values(
        ["version", "prompt_format", "Rank"],
        key=lambda c: c.map(order) if c.name == "version" else c,
    )
    return out[[*TABLE7_COLUMNS, "n_samples"]].reset_index(drop=True)


def published_table7() -> pd.DataFrame:
    """The paper's Table 7 as printed (``resources/table7.csv``; see its README): columns
    ``prompt_format`` (paper label), ``model``, ``CR``, ``STIC_2`` (percent), ``Len`` (words),
    ``wAvg`` (percent), ``Rank``; the short version (16K)."""
    t = _resource_csv("table7.csv")
    t["prompt_format"] = t["prompt_format"].map(FORMAT_LABEL)
    t.insert(0, "version", "short")
    return t


def table7_with_published(t7: pd.DataFrame, models: Sequence[str] | None = None) -> pd.DataFrame:
    """The run's Table 7 rows beside the published ones (``source`` column first).

    Args:
        t7: :func:`table7` of the run.
        models: published models to keep (None: all three).

    Raises:
        LcevalError: a name in ``models`` that Table 7 does not have.
    """
    pub = _pick(published_table7(), models, "Table 7")
    mine = t7.drop(columns=["n_samples"], errors="ignore")
    out = pd.concat(
        [mine.assign(source=THIS_RUN), pub.assign(source=PUBLISHED_T7)], ignore_index=True
    )
    return out[["source", *TABLE7_COLUMNS]]


def _pick(published: pd.DataFrame, models: Sequence[str] | None, what: str) -> pd.DataFrame:
    if models is None:
        return published
    known = list(dict.fromkeys(published["model"]))
    unknown = [m for m in models if m not in known]
    if unknown:
        raise LcevalError(f"{what} has no model {unknown[0]!r}; choose from {', '.join(known)}")
    return published[published["model"].isin(list(models))]


def published_table3() -> pd.DataFrame:
    """The paper's Table 3 as printed (percent; Len in words), one row per model and version
    (short = 16K, long = 32K), with ``params`` (7-10B, >20B, closed) and ``claimed_length``."""
    t3 = _resource_csv("ruler_correlation", "table3.csv")
    t3.insert(2, "version", t3.pop("length").map(_VERSION_OF_LENGTH))
    return t3.drop(columns=["ruler_model"])


def table3_with_published(t3: pd.DataFrame, models: Sequence[str] | None = None) -> pd.DataFrame:
    """The run's Table 3 beside the paper's rows, marked by ``source``.

    Args:
        t3: the run's Table 3 (``report`` table ``table3``: ``model``, ``version``, ``CR``,
            ``STIC_1``, ``STIC_2``, ``Len``, ``wAvg``).
        models: published models to draw (None: all 13); the CSV the report writes keeps all.

    Returns:
        Columns :data:`TABLE3_COLUMNS` plus ``params`` and ``claimed_length`` (published rows
        only): the run's rows first, then the published ones per version in the paper's order.

    Raises:
        LcevalError: a name in ``models`` that Table 3 does not have.
    """
    pub = _pick(published_table3(), models, "Table 3").assign(source=PUBLISHED_T3)
    mine = t3.assign(source=THIS_RUN)
    out = pd.concat([mine, pub], ignore_index=True)
    return out[[*TABLE3_COLUMNS, "params", "claimed_length"]]


def _pct(x: float, decimals: int) -> str:
    return "" if pd.isna(x) else f"{x:.{decimals}f}%"


def _num(x: float, decimals: int) -> str:
    return "" if pd.isna(x) else f"{x:.{decimals}f}"


def paper_style(table: pd.DataFrame, which: str) -> pd.DataFrame:
    """A Table 3 or Table 7 frame as the paper prints it (strings; NaN as empty).

    Table 3: CR, STIC-1, STIC-2, wAvg as ``93.5%`` (1 decimal), Len as an integer. Table 7: CR
    as ``46.0`` (no %), STIC-2 as ``9.83%`` (2 decimals), Len and Rank as integers, wAvg as
    ``4.5``.

    Raises:
        LcevalError: ``which`` is not ``table3`` or ``table7``.
    """
    out = table.copy()
    if which == "table3":
        for c in ("CR", "STIC_1", "STIC_2", "wAvg"):
            out[c] = out[c].map(lambda x: _pct(x, 1))
        out["Len"] = out["Len"].map(lambda x: _num(x, 0))
    elif which == "table7":
        out["CR"] = out["CR"].map(lambda x: _num(x, 1))
        out["STIC_2"] = out["STIC_2"].map(lambda x: _pct(x, 2))
        out["wAvg"] = out["wAvg"].map(lambda x: _num(x, 1))
        for c in ("Len", "Rank"):
            out[c] = out[c].map(lambda x: _num(x, 0))
    else:
        raise LcevalError(f"paper_style: unknown table {which!r}; choose table3 or table7")
    return out.rename(columns={"STIC_1": "STIC-1", "STIC_2": "STIC-2", "Len": "Length (word)"})


def recompute_wavg(table: pd.DataFrame) -> pd.Series:
    """wAvg recomputed from a table's printed CR and STIC-2 (both percent): CR x STIC-2 / 100
    (paper Table 3 caption); for checking the printed wAvg within rounding."""
    return table["CR"].astype(float) * table["STIC_2"].astype(float) / 100.0


def rank_of(table: pd.DataFrame, by: Sequence[str] = ("version", "prompt_format")) -> np.ndarray:
    """Rank by wAvg within ``by`` (1 = best), as Table 7 ranks models."""
    ranks = table.groupby(list(by))["wAvg"].rank(ascending=False, method="min")
    return ranks.to_numpy()
