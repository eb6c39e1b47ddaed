"""What the run's API answers cost: ``report/cost.csv`` from the provider-reported tokens per API
model, priced at ``lceval/run/prices.yaml``'s $ per million tokens (batch price for ``-o
batch=true``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.report.reporting import save_table
from lceval.run.cost import load_prices

CAPTIONS: dict[str, tuple[str, str]] = {
    "cost": (
        "Beyond the paper",
        "What the API answers cost: per API model the answers stored, the input and output "
        "tokens the provider reported (thinking included) and their dollars at the price "
        "table's $ per million tokens (lceval/run/prices.yaml: list prices to edit), at the "
        "batch price when answered through the Batch API; price_source says which, or that "
        "the table has no price for the model.",
    )
}

COLUMNS = ("model", "answers", "input_tokens", "output_tokens", "usd", "price", "price_source")


def _batch(entry: Mapping[str, Any]) -> bool:
    value = (entry.get("options") or {}).get("batch")
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def cost_table(run: RunDir, prices: Any = None) -> pd.DataFrame:
    """One row per API model of ``run`` (:data:`COLUMNS`; ``usd`` NaN without a price in
    ``prices``, default the shipped table); empty without API answers."""
    models = {
        str(name): entry
        for name, entry in (run.read_meta().models or {}).items()
        if isinstance(entry, Mapping) and entry.get("backend") == "openai"
    }
    if not models or not run.responses.exists():
        return pd.DataFrame(columns=list(COLUMNS))
    prices = load_prices() if prices is None else prices
    responses = run.read_responses()
    rows = []
    for name, entry in models.items():
        mine = [r for r in responses if r.model == name]
        answers = sum(r.finish_reason != "error" for r in mine)
        inp, out = sum(r.prompt_tokens for r in mine), sum(r.completion_tokens for r in mine)
        if not answers and not inp and not out:
            continue
        api = str(entry.get("model") or name)
        batch = _batch(entry)
        p = prices.api.get(api)
        usd, source = float("nan"), f"no price for {api} in the table"
        if p is not None:
            cut = prices.batch_discount if p.batch_discount is None else p.batch_discount
            usd = (inp * p.input + out * p.output) / 1e6 * ((1 - cut) if batch else 1)
            source = (
                f"{api}: ${p.input:g} in, ${p.output:g} out per M tokens"
                + (f", {cut:.0%} off (Batch API)" if batch else "")
                + f" (price table of {prices.date})"
            )
        rows.append(
            {
                "model": name,
                "answers": answers,
                "input_tokens": inp,
                "output_tokens": out,
                "usd": usd,
                "price": "batch" if batch else "standard",
                "price_source": source,
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def report_cost(run: RunDir) -> dict[str, pd.DataFrame]:
    """Write ``report/cost.csv`` when the run has API answers, else {}; an unreadable price
    table is one line in ``price_source``, never a failed report."""
    try:
        table = cost_table(run)
    except LcevalError as exc:  # an unreadable shipped table: say so in the report
        table = pd.DataFrame([{"model": "?", "price_source": str(exc)}], columns=list(COLUMNS))
    if table.empty:
        return {}
    run.report.mkdir(parents=True, exist_ok=True)
    save_table(table, run.report, "cost", index=False)
    return {"cost": table}
