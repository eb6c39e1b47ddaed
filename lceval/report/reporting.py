"""Shared report helpers: figures as PNG and PDF, tidy tables as CSV, the responses table."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import matplotlib

from lceval.core.console import log
from lceval.core.io import RunDir, atomic_open
from lceval.core.records import Response, sample_hashes
from lceval.core.store import ResponseStore

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def save_figure(fig: Figure, folder: str | Path, name: str, *, dpi: int = 150) -> list[Path]:
    """Save ``fig`` as ``<folder>/<name>.png`` and ``.pdf`` (atomically); returns both paths."""
    paths = []
    for ext in ("png", "pdf"):
        path = Path(folder) / f"{name}.{ext}"
        with atomic_open(path, "wb") as f:
            fig.savefig(f, format=ext, dpi=dpi, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def save_table(df: pd.DataFrame, folder: str | Path, name: str, *, index: bool = True) -> Path:
    """Write ``df`` to ``<folder>/<name>.csv`` atomically; returns the path."""
    path = Path(folder) / f"{name}.csv"
    with atomic_open(path) as f:
        df.to_csv(f, index=index)
    return path


def responses_frame(run_id: str, outputs_root: str | Path | None = None) -> pd.DataFrame:
    """A run's responses as scoring reads them, one row each with the ``Response`` fields and
    the sample's benchmark, task, scenario, length; answers to an earlier build of a sample are
    left out, counted in ``frame.attrs["stale"]`` and logged. :class:`LcevalError` without
    samples or responses, or for a line of responses.jsonl that is not a response."""
    run = RunDir(run_id, outputs_root)
    raw = run.read_samples()
    hashes = sample_hashes(raw, run.read_contexts())
    keys = ["id", "benchmark", "task", "scenario", "length"]
    samples = pd.DataFrame([{k: getattr(s, k) for k in keys} for s in raw], columns=keys)
    samples = samples.rename(columns={"id": "sample_id"})
    rows = []
    stale = 0
    if not run.responses.exists():
        run.read_responses()  # raises the usual "run inference first" error
    for r in ResponseStore(run.responses):
        if r.answers(hashes.get(r.sample_id)):
            rows.append(asdict(r))
        else:
            stale += 1
    responses = pd.DataFrame(rows, columns=[f.name for f in fields(Response)])
    if stale:
        log(
            f"{stale} response(s) in {run.responses.name} answer an earlier version of their "
            "sample (sample hash differs: the run was rebuilt) and are left out of the responses "
            f"table; `lceval infer {run_id}` answers the current samples"
        )
    frame = responses.merge(samples, on="sample_id", how="left")
    frame.attrs["stale"] = stale
    return frame


def inference_summary(responses: pd.DataFrame) -> pd.DataFrame:
    """Per (model, task) of :func:`responses_frame`'s rows: responses, mean prompt / generated
    tokens, truncations, finish reasons, seconds."""
    g = responses.groupby(["model", "task"], dropna=False)
    out = g.agg(
        responses=("sample_id", "size"),
        prompt_tokens=("prompt_tokens", "mean"),
        completion_tokens=("completion_tokens", "mean"),
        truncated=("truncated_tokens", lambda x: int((x > 0).sum())),
        hit_budget=("finish_reason", lambda x: int((x == "length").sum())),
        errors=("finish_reason", lambda x: int((x == "error").sum())),
        seconds=("latency_s", "sum"),
    )
    return out.round({"prompt_tokens": 1, "completion_tokens": 1, "seconds": 1})


THIS_RUN = "this run"  # the ``source`` of a run's rows beside published numbers


def highlight_run_rows(df: pd.DataFrame, column: str = "source", value: str = THIS_RUN) -> Any:
    """``df`` as a pandas Styler, its rows with ``df[column] == value`` (the run's, beside
    published ones) bold on light yellow; ``KeyError`` without ``column``."""
    mine = (df[column].astype(str) == value).to_numpy()
    style = "font-weight: bold; background-color: #fff3b0"
    cells = [[style if m else ""] * df.shape[1] for m in mine]
    return df.style.apply(
        lambda f: pd.DataFrame(cells, index=f.index, columns=f.columns), axis=None
    )


def unrank_subset_order(df: pd.DataFrame, models: set[str] | frozenset[str]) -> pd.DataFrame:
    """``df`` (row order a ranking; indexed by model, a ``source`` column) with the run's rows of
    ``models`` (off the paper's grid) moved to the top, outside the order; a reordered copy, or
    ``df`` itself when nothing moves."""
    if "source" not in df.columns or not models:
        return df
    mask = (df["source"].astype(str) == THIS_RUN) & df.index.astype(str).isin(list(models))
    if not mask.any():
        return df
    return pd.concat([df[mask.to_numpy()], df[~mask.to_numpy()]])
