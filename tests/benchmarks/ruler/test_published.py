"""RULER's README leaderboard beside a run's models."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lceval.benchmarks.ruler.published import PUBLISHED, leaderboard, run_rows, with_published
from lceval.benchmarks.ruler.report import ruler_tables
from lceval.core.errors import LcevalError
from lceval.core.records import Sample
from lceval.report.reporting import THIS_RUN


def _run_tables() -> dict[str, pd.DataFrame]:
    cells = {("a", 4096): 1.0, ("b", 4096): 0.8, ("a", 8192): 0.6, ("b", 8192): 0.4}
    samples = [
        Sample(id=f"{t}{n}", benchmark="ruler", task=t, instruction="", length=n) for t, n in cells
    ]
    rows = [
        {"sample_id": f"{t}{n}", "model": "mine", "task": t, "value": v}
        for (t, n), v in cells.items()
    ]
    return ruler_tables(pd.DataFrame(rows), samples)


def test_run_rows_in_the_readme_layout():
    t = _run_tables()
    row = run_rows(t["summary"], t["models"]).iloc[0]
    assert row["source"] == THIS_RUN and row["model"] == "mine"
    assert row["4K"] == pytest.approx(90.0) and row["8K"] == pytest.approx(50.0)
    assert math.isnan(row["16K"]) and math.isnan(row["128K"])
    assert row["Avg"] == pytest.approx(70.0)
    assert row["wAvg_inc"] == pytest.approx((90 + 2 * 50) / 3)
    assert row["effective_length"] == "4K"  # 90 > 85.6, 50 is not


def test_with_published_picks_rows_and_keeps_all_by_default():
    t = _run_tables()
    everything = with_published(t["summary"], t["models"])
    assert len(everything) == 1 + len(leaderboard())
    assert (everything["source"].iloc[1:] == PUBLISHED).all()
    some = with_published(t["summary"], t["models"], ["Llama3.1", "Mistral"])
    assert set(some["model"]) == {"mine", "Llama3.1", "Mistral"} and len(some) == 4  # 8B + 70B
    llama8 = some[(some["model"] == "Llama3.1") & (some["size"] == "8B")].iloc[0]
    assert (llama8["16K"], llama8["32K"], llama8["effective_length"]) == (91.6, 87.4, "32K")
    with pytest.raises(LcevalError, match="no model 'Llama4'"):
        with_published(t["summary"], t["models"], ["Llama4"])
