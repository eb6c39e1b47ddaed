"""Two models on the same samples side by side, with the paired difference: report/compare.html
and ``lceval compare RUN_A RUN_B --samples FILE.html``, from the cells of
:func:`lceval.report.samples_page.sample_rows` paired by ``sample_id`` and scorer."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from markupsafe import Markup

from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.report.samples_page import Texts, esc, only, page, sample_rows, write_page

MAX_COMPARE_ROWS = 20_000  # rows kept on a comparison page, the largest |diff| first
_SIDE = ("model", "value", "rubric", "explanation", "answer", "answer_chars")


def compare_rows(
    run_a: RunDir,
    run_b: RunDir,
    *,
    model_a: str | None = None,
    model_b: str | None = None,
    scorer: str | None = None,
    folder: str | Path | None = None,
    empty_ok: bool = False,
) -> pd.DataFrame:
    """One row per (sample, scorer, model pair) with each model's value, rubric, explanation and
    answer and ``diff = value A - value B`` (0..1, NaN when either is), largest ``|diff|`` first;
    pairs as :func:`lceval.report.compare.compare_runs`, only ``model_a``/``model_b``/``scorer``
    when given; ``folder`` is the page's (default run_a's report). :class:`LcevalError` for
    missing scores or samples, an unknown model or scorer, no shared sample (unless
    ``empty_ok``: an empty frame)."""
    same = run_a.path == run_b.path
    store = Texts()  # both sides' texts in one block
    sides = []
    for run, model in ((run_a, model_a), (run_b, model_b)):
        scores = only(run.read_scores(), f"run {run.run_id}", model=model, scorer=scorer)
        frame = sample_rows(run, scores=scores, folder=folder or run_a.report, store=store)
        frame["pair_model"] = scores["model"].astype(str).to_numpy()
        frame["key_scorer"] = scores["scorer"].astype(str).to_numpy()
        frame["key_id"] = scores["sample_id"].astype(str).to_numpy()
        if not same:
            frame["model"] = [esc(f"{run.run_id}/{m}") for m in frame["pair_model"]]
        sides.append(frame)
    a, b = sides
    side_b = b[[*_SIDE, "pair_model", "key_id", "key_scorer"]]
    both = a.merge(side_b, on=["key_id", "key_scorer"], suffixes=(" A", " B"))
    if same:  # one run: each unordered pair of distinct models once
        both = both[both["pair_model A"] < both["pair_model B"]]
    if both.empty and not empty_ok:
        raise LcevalError(
            f"runs {run_a.run_id} and {run_b.run_id} share no scored sample of a model pair"
        )
    both["diff"] = both["value A"] - both["value B"]
    both = both.assign(_abs=both["diff"].abs()).sort_values(
        ["_abs", "key_id"], ascending=[False, True], na_position="last", kind="stable"
    )
    placed = {*_SIDE, "pair_model", "key_id", "key_scorer", "instruction", "context", "sample_id"}
    rest = [c for c in a.columns if c not in {*placed, "context_tokens", "benchmark", "task"}]
    # the two answers, their values and explanations in the first screen; then who A and B are
    cols = ["benchmark", "task", "diff", "value A", "value B", "answer A", "answer B"]
    cols += ["explanation A", "explanation B", "model A", "model B", *rest, "rubric A"]
    cols += ["rubric B", "instruction", "context", "sample_id", "answer_chars A", "answer_chars B"]
    out = both[[c for c in cols if c in both.columns]].reset_index(drop=True)
    out.attrs["texts"] = store
    return out


def write_compare_page(frame: pd.DataFrame, path: str | Path, title: str) -> Path:
    """Write a :func:`compare_rows` frame's first :data:`MAX_COMPARE_ROWS` rows as a page
    (``templates/compare.html.j2``); :class:`LcevalError` when it cannot be written."""
    pairs = frame[["model A", "model B"]].drop_duplicates() if len(frame) else frame
    one = len(pairs) == 1  # the model cells are escaped already
    text = page(
        "compare.html.j2",
        title,
        frame.head(MAX_COMPARE_ROWS),
        frame.attrs.get("texts"),
        a=Markup(pairs["model A"].iloc[0]) if one else None,
        b=Markup(pairs["model B"].iloc[0]) if one else None,
        shown=min(len(frame), MAX_COMPARE_ROWS),
        left=len(frame) - MAX_COMPARE_ROWS,
    )
    return write_page(Path(path), text)


def write_run_compare_page(run: RunDir) -> Path:
    """``<run.report>/compare.html``: every pair of the run's models side by side, or, when no
    pair shares a scored sample, what each answered; :class:`LcevalError` for missing scores
    or samples or a page that cannot be written."""
    path = Path(run.report) / "compare.html"
    frame = compare_rows(run, run, empty_ok=True)
    if len(frame):
        return write_compare_page(frame, path, "Two models")
    scores = run.read_scores()
    scored = scores[scores["value"].notna()] if "value" in scores else scores
    unpaired = [
        (
            model,
            part["sample_id"].nunique(),
            scored.loc[scored["model"].astype(str) == model, "sample_id"].nunique(),
            sorted(set(part["task"].astype(str))),
        )
        for model, part in scores.groupby(scores["model"].astype(str), sort=True)
    ]
    return write_page(path, page("compare.html.j2", "Two models", None, None, unpaired=unpaired))
