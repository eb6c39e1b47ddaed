"""report/cost.csv: the API answers' provider-reported tokens priced from the price table
(issue 40), on a run folder written by hand (no server)."""

from __future__ import annotations

import math

import pandas as pd

from lceval.core.io import RunDir, new_meta, write_jsonl
from lceval.core.records import Response
from lceval.report.cost import report_cost
from lceval.report.index_page import write_index
from lceval.run.cost import load_prices


def _run(tmp_path, models: dict) -> RunDir:
    """A run whose API models answered 2 samples each (100 + 200 input, 10 + 20 output tokens;
    one error line more, with no tokens), and one local model."""
    run = RunDir("c", tmp_path).create()
    entries = {
        name: {"backend": "openai", "model": api, "options": opts}
        for name, (api, opts) in models.items()
    }
    entries["local"] = {"backend": "hf"}
    run.write_meta(new_meta("c", models=entries))
    rows = []
    for name in [*models, "local"]:
        for i, (p, c) in enumerate([(100, 10), (200, 20)]):
            rows.append(Response(f"s{i}", name, "ok", "h", prompt_tokens=p, completion_tokens=c))
        rows.append(Response("s2", name, "", "h", finish_reason="error", error="timeout"))
    write_jsonl(run.responses, rows)
    return run


def test_cost_table_prices_standard_and_batch_answers_and_names_unpriced_models(tmp_path):
    run = _run(
        tmp_path,
        {
            "std": ("gpt-4o-mini", {}),
            "bat": ("gpt-4o-mini", {"batch": True}),
            "mine": ("my-model", {}),
        },
    )
    table = report_cost(run)["cost"].set_index("model")
    on_disk = pd.read_csv(run.report / "cost.csv").set_index("model")
    assert list(table.index) == list(on_disk.index) == ["std", "bat", "mine"]  # no local model
    p = load_prices().api["gpt-4o-mini"]
    usd = (300 * p.input + 30 * p.output) / 1e6
    assert (table.loc["std", ["answers", "input_tokens", "output_tokens"]] == [2, 300, 30]).all()
    assert math.isclose(table.loc["std", "usd"], usd) and table.loc["std", "price"] == "standard"
    assert (
        math.isclose(table.loc["bat", "usd"], usd * 0.5)
        and "Batch API" in table.loc["bat", "price_source"]
    )
    assert math.isnan(on_disk.loc["mine", "usd"])
    assert on_disk.loc["mine", "price_source"] == "no price for my-model in the table"
    page = write_index(run).read_text()
    assert "no price for my-model in the table" in page and "What the API answers cost" in page


def test_a_run_without_api_answers_has_no_cost_table(tmp_path):
    run = _run(tmp_path, {})
    assert report_cost(run) == {} and not (run.report / "cost.csv").exists()
