"""RULER's published leaderboard, and a run's models beside it.

The published numbers are the results table of the NVIDIA/RULER README
(``resources/leaderboard.csv``, see its README): per model, the mean over the 13 tasks at each
length 4K..128K (0..100), ``Avg`` over the six lengths, ``wAvg_inc`` / ``wAvg_dec`` (linear
weights increasing / decreasing with length) and the effective length (threshold 85.6). The
LongGenBench paper's Fig. 3b reads its RULER scores from this table
(:mod:`lceval.benchmarks.longgenbench.ruler_correlation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

import numpy as np
import pandas as pd

from lceval.core.errors import LcevalError
from lceval.report.reporting import THIS_RUN

PUBLISHED = "published (RULER README)"
LENGTH_COLUMNS: dict[int, str] = {
    4096: "4K",
    8192: "8K",
    16384: "16K",
    32768: "32K",
    65536: "64K",
    131072: "128K",
}
"""Length in tokens -> the README's column."""
COLUMNS = [
    "source",
    "model",
    "size",
    "claimed_length",
    "effective_length",
    *LENGTH_COLUMNS.values(),
    "Avg",
    "wAvg_inc",
    "wAvg_dec",
]


def leaderboard() -> pd.DataFrame:
    """The RULER README leaderboard as shipped (scores 0..100; ``size`` and ``effective_length``
    as printed, e.g. ``"8B"``, ``">128K"``; rows marked ``*`` were reported by the models'
    authors).

    Raises:
        LcevalError: the resource cannot be read.
    """
    path = resources.files("lceval.benchmarks.ruler").joinpath("resources", "leaderboard.csv")
    try:
        with resources.as_file(path) as p:
            return pd.read_csv(p)
    except (OSError, pd.errors.ParserError) as exc:
        raise LcevalError(f"cannot read lceval resource ruler/leaderboard.csv: {exc}") from None


def _label(tokens: float) -> str:
    if pd.isna(tokens):
        return "<4K"
    return LENGTH_COLUMNS.get(int(tokens), f"{int(tokens) // 1024}K")


def run_rows(summary: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """A run's models in the leaderboard's layout.

    Args:
        summary: :func:`~lceval.benchmarks.ruler.report.ruler_tables` ``summary`` (model, length,
            score 0..100).
        models: its ``models`` table (Avg, effective_length in tokens, wAvg_inc, wAvg_dec).

    Returns:
        :data:`COLUMNS`; a length the run did not build is NaN. ``Avg`` and the weighted
        averages are over the lengths the run has (the README's cover all six), and the
        effective length is the README's label (``"32K"``; ``"<4K"`` when none passes).
    """
    if summary.empty:
        return pd.DataFrame(columns=COLUMNS)
    wide = summary.pivot_table(index="model", columns="length", values="score")
    wide = wide.rename(columns=lambda n: LENGTH_COLUMNS.get(int(n), f"{int(n)}"))
    m = models.set_index("model")
    out = pd.DataFrame(index=wide.index)
    out["source"] = THIS_RUN
    out["size"] = ""
    out["claimed_length"] = ""
    out["effective_length"] = m["effective_length"].reindex(out.index).map(_label)
    for col in LENGTH_COLUMNS.values():
        out[col] = wide[col] if col in wide else np.nan
    for col in ("Avg", "wAvg_inc", "wAvg_dec"):
        out[col] = m[col].reindex(out.index)
    return out.reset_index()[COLUMNS]


def with_published(
    summary: pd.DataFrame, models: pd.DataFrame, published: Sequence[str] | None = None
) -> pd.DataFrame:
    """The run's models (:func:`run_rows`) above the README's rows, marked by ``source``.

    Args:
        summary: the run's ``summary`` table.
        models: the run's ``models`` table.
        published: README models to keep, by name as printed (``"Llama3.1"``, ``"GPT-4-1106-
            preview"``; a name with several sizes keeps all of them); None: all.

    Raises:
        LcevalError: a name the README does not have.
    """
    lb = leaderboard()
    if published is not None:
        known = list(dict.fromkeys(lb["model"]))
        unknown = [m for m in published if m not in known]
        if unknown:
            raise LcevalError(
                f"RULER README has no model {unknown[0]!r}; choose from {', '.join(known)}"
            )
        lb = lb[lb["model"].isin(list(published))]
    lb = lb.assign(source=PUBLISHED)
    for col in ("size", "claimed_length", "effective_length"):
        lb[col] = lb[col].fillna("")
    return pd.concat([run_rows(summary, models), lb[COLUMNS]], ignore_index=True)
