"""L-Eval's metric agreement: how automatic metrics rank models with and without the length
instruction (LIE), the paper's Kendall-tau table (Sec. "Length-Instruction-Enhanced evaluation":
ROUGE-L, F-1, GPT-3.5 and GPT-4 judges against the average human rating of an 85-question
subset, tau without LIE about 0.5 / 0.7 / 0.7 / 0.8, with LIE about 0.8 / 0.8 / 0.8 / 1.0).

The human ratings are not public (OpenLMLab/LEval's ``Predictions/human_eval/jsons`` held one
rated document until commit 921932f deleted the folder), so lceval cannot put humans in the
reference column. What it computes instead, from a run's open-ended answers (or the published
predictions loaded by ``lceval import leval``):

- :func:`lie_kendall`: the paper's layout with the pairwise judge's win rate with LIE as the
  reference ranking (the paper found GPT-4 with LIE to rank models as humans do, tau 1.0), and
  each metric's ranking without LIE against its own ranking with LIE; the published approximate
  taus beside.
- :func:`metric_kendall`: Kendall's tau-b between every pair of metrics' model rankings, per LIE
  setting (``lie`` None: imported predictions, which do not say).

Metrics per model (open-ended questions, full context): ``ROUGE-L`` and ``F-1`` (means of the
``leval`` scorer's parts, 0..100, over every open-ended question), ``L-Eval score`` (mean task
score: ROUGE geometric mean or F1, :func:`lceval.benchmarks.leval.report.ngram_table`), and
``judge`` (win rate against the baseline, ties half, scorer ``leval:judge``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from lceval.benchmarks.leval.gold import OPEN_TASKS
from lceval.metrics import kendall_tau_b

PUBLISHED_TAU = {
    "ROUGE-L": (0.5, 0.8),
    "F-1": (0.7, 0.8),
    "GPT-3.5 judge": (0.7, 0.8),
    "GPT-4 judge": (0.8, 1.0),
}
"""The paper's Kendall tau against human ratings, (without LIE, with LIE), as summarised
(a summary of the paper's agreement section: "~0.5", "~0.8", ...; GPT-4 with LIE 1.0)."""

METRICS = ("ROUGE-L", "F-1", "L-Eval score", "judge")
"""The metrics lceval ranks models by (see the module docstring)."""


def _lie_key(value: object) -> str:
    """``"True"`` / ``"False"``, or ``"None"`` for an unknown setting (None or NaN)."""
    return str(value) if isinstance(value, bool | np.bool_) else "None"


def model_metrics(frame: pd.DataFrame, ngram: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model and LIE setting, each metric of :data:`METRICS` (0..100; NaN when the run has
    no such scores).

    Args:
        frame: the report's joined frame (``report._frame``: scores of ``leval`` and
            ``leval:judge`` with ``task``, ``retrieval``, ``lie``, ``p_<part>`` columns).
        ngram: ``report.ngram_table`` output (for the L-Eval score), or None.

    Returns:
        Indexed by (model, lie) with ``lie`` as the string ``"True"``, ``"False"`` or
        ``"None"``: the metric columns and ``n`` (open-ended answers scored by ``leval``).
    """
    cols = ["model", "lie", *METRICS, "n"]
    if not len(frame) or "task" not in frame:
        return pd.DataFrame(columns=cols).set_index(["model", "lie"])
    open_ = frame[frame["task"].isin(OPEN_TASKS) & (frame["retrieval"] == "full")]
    open_ = open_.assign(lie=open_["lie"].map(_lie_key))
    rows: dict[tuple[str, str], dict[str, float]] = {}
    ngram_rows = open_[open_["scorer"] == "leval"]
    for (model, lie), g in ngram_rows.groupby(["model", "lie"]):
        rows[(model, lie)] = {
            "ROUGE-L": 100 * g["p_rougeL"].mean() if "p_rougeL" in g else math.nan,
            "F-1": 100 * g["p_f1"].mean() if "p_f1" in g else math.nan,
            "n": float(len(g)),
        }
    if ngram is not None and len(ngram):
        ng = ngram[ngram["retrieval"] == "full"].assign(lie=lambda d: d["lie"].map(_lie_key))
        for (model, lie), g in ng.groupby(["model", "lie"]):
            rows.setdefault((model, lie), {})["L-Eval score"] = float(g["score"].mean())
    judged = open_[(open_["scorer"] == "leval:judge")]
    if len(judged) and "p_wins" in judged:
        for (model, lie), g in judged.groupby(["model", "lie"]):
            w, t, lo = (float(g[c].sum()) for c in ("p_wins", "p_ties", "p_losses"))
            rate = 100 * (w + 0.5 * t) / (w + t + lo) if w + t + lo else math.nan
            rows.setdefault((model, lie), {})["judge"] = rate
    out = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=[*METRICS, "n"])
    out.index = pd.MultiIndex.from_tuples(list(rows), names=["model", "lie"])
    return out.sort_index()


def _tau(a: pd.Series, b: pd.Series) -> tuple[float, int]:
    both = pd.concat([a, b], axis=1).dropna()
    if len(both) < 2:
        return math.nan, len(both)
    return float(kendall_tau_b(both.iloc[:, 0].to_numpy(), both.iloc[:, 1].to_numpy())), len(both)


def _setting(metrics: pd.DataFrame, lie: str, metric: str) -> pd.Series:
    if lie not in metrics.index.get_level_values("lie"):
        return pd.Series(dtype=float)
    return metrics.xs(lie, level="lie")[metric]


def lie_kendall(metrics: pd.DataFrame) -> pd.DataFrame:
    """The Kendall-tau table of LIE in the paper's layout, with the judge in place of humans.

    Args:
        metrics: :func:`model_metrics` output.

    Returns:
        One row per metric (``ROUGE-L``, ``F-1``, ``L-Eval score``, ``judge``): ``reference``
        (what the ranking is compared with: ``judge with LIE``), ``tau_without_LIE`` and
        ``tau_with_LIE`` (Kendall's tau-b of the metric's model ranking, without and with LIE,
        against the reference; NaN with fewer than two models or no judge scores),
        ``n_models``, ``tau_LIE_vs_no_LIE`` (the metric's ranking without LIE against its
        ranking with LIE), then the published ``published_without_LIE``,
        ``published_with_LIE`` (against human ratings; the paper's GPT-4 judge row beside
        ``judge``) and ``published_metric``.
    """
    reference = _setting(metrics, "True", "judge")
    rows = []
    published = {"ROUGE-L": "ROUGE-L", "F-1": "F-1", "judge": "GPT-4 judge"}
    for metric in METRICS:
        without, n0 = _tau(_setting(metrics, "False", metric), reference)
        with_, n1 = _tau(_setting(metrics, "True", metric), reference)
        shift, _ = _tau(_setting(metrics, "False", metric), _setting(metrics, "True", metric))
        name = published.get(metric)
        pub = PUBLISHED_TAU.get(name or "", (math.nan, math.nan))
        rows.append(
            {
                "metric": metric,
                "reference": "judge with LIE (human ratings are not public)",
                "tau_without_LIE": without,
                "tau_with_LIE": with_,
                "n_models": max(n0, n1),
                "tau_LIE_vs_no_LIE": shift,
                "published_without_LIE": pub[0],
                "published_with_LIE": pub[1],
                "published_metric": name or "",
            }
        )
    return pd.DataFrame(rows)


def metric_kendall(metrics: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b between the model rankings of every pair of metrics, per LIE setting.

    Args:
        metrics: :func:`model_metrics` output.

    Returns:
        Columns ``lie`` (``"True"``, ``"False"``, ``"None"``: imported predictions),
        ``metric_a``, ``metric_b``, ``tau``, ``n_models`` (models with both metrics); pairs
        where either metric is missing for every model are left out.
    """
    rows = []
    for lie in sorted(set(metrics.index.get_level_values("lie"))):
        part = metrics.xs(lie, level="lie")
        present = [m for m in METRICS if part[m].notna().any()]
        for a, b in itertools.combinations(present, 2):
            tau, n = _tau(part[a], part[b])
            rows.append({"lie": lie, "metric_a": a, "metric_b": b, "tau": tau, "n_models": n})
    return pd.DataFrame(rows, columns=["lie", "metric_a", "metric_b", "tau", "n_models"])
