"""ManyIFEval analysis: Eq. (1)-(2) accuracies and the curse-of-instructions law (Eq. 3)."""

from __future__ import annotations

import itertools
import json
import math

import pandas as pd
import pytest

from lceval.benchmarks.manyifeval.gold import ManyIFEvalGold
from lceval.benchmarks.manyifeval.report import (
    accuracy_by_n,
    curse_law,
    per_instruction,
    report_manyifeval,
    verdict_frame,
)
from lceval.core.io import RunDir, scores_frame
from lceval.core.records import Sample, Score

IDS = [
    "punctuation:no_comma",
    "startend:quotation",
    "detectable_format:title",
    "keywords:existence",
    "change_case:english_lowercase",
    "detectable_format:number_bullet_lists",
]


def _kleene_and(vec: tuple[float, ...]) -> float:
    if any(v == 0 for v in vec):
        return 0.0
    return math.nan if any(math.isnan(v) for v in vec) else 1.0


def _make(verdict_sets: dict[int, list[tuple[int, ...]]], model: str = "m"):
    """Samples and scores whose strict verdicts are the given 0/1 tuples per n."""
    samples, scores = [], []
    for n, vectors in verdict_sets.items():
        for i, vec in enumerate(vectors):
            sid = f"p{i}/n{n}"
            ids = [IDS[j % len(IDS)] for j in range(n)]
            samples.append(
                Sample(
                    id=sid,
                    benchmark="manyifeval",
                    task="unique",
                    instruction="x",
                    gold=ManyIFEvalGold(instruction_id_list=tuple(ids), kwargs=({},) * n),
                    meta={"n_instructions": n, "prompt_key": f"p{i}", "condition": "unique"},
                )
            )
            parts = {}
            for j, v in enumerate(vec):
                parts[f"strict:{j}:{ids[j]}"] = float(v)
                parts[f"loose:{j}:{ids[j]}"] = 1.0
            scores.append(
                Score(
                    sid,
                    model,
                    "manyifeval",
                    "unique",
                    "manyifeval.ifeval",
                    "1",
                    _kleene_and(vec),
                    parts=parts,
                )
            )
    return samples, scores_frame(scores)


def test_equations_1_and_2_by_hand() -> None:
    samples, scores = _make({2: [(1, 1), (1, 0), (0, 0)]})
    acc = accuracy_by_n(verdict_frame(scores, samples), scores)
    row = acc[acc["mode"] == "strict"].iloc[0]
    assert row["m"] == 3
    assert row["prompt_level"] == pytest.approx(1 / 3)
    assert row["inst_level"] == pytest.approx(3 / 6)
    loose = acc[acc["mode"] == "loose"].iloc[0]
    assert loose["prompt_level"] == 1.0 and loose["inst_level"] == 1.0


def test_curse_law_holds_by_construction() -> None:
    # Every 0/1 vector of length n once: I(n) = 1/2 and P(n) = 1/2^n = I(n)^n exactly.
    sets = {n: list(itertools.product((0, 1), repeat=n)) for n in range(1, 8)}
    samples, scores = _make(sets)
    acc = accuracy_by_n(verdict_frame(scores, samples), scores)
    strict = acc[acc["mode"] == "strict"]
    assert list(strict["inst_level"]) == pytest.approx([0.5] * 7)
    assert list(strict["prompt_level"]) == pytest.approx([0.5**n for n in range(1, 8)])
    per_n, fit = curse_law(strict)
    assert list(per_n["residual"]) == pytest.approx([0.0] * 7, abs=1e-12)
    f = fit.iloc[0]
    assert f["r2"] == pytest.approx(1.0) and f["mae"] == pytest.approx(0.0, abs=1e-12)
    assert f["points"] == 7


def test_curse_law_with_decreasing_inst_level() -> None:
    ns = list(range(1, 11))
    inst = [0.99 - 0.02 * n for n in ns]
    acc = pd.DataFrame(
        {
            "model": "m",
            "condition": "unique",
            "mode": "strict",
            "n": ns,
            "m": 100,
            "inst_level": inst,
            "prompt_level": [i**n for i, n in zip(inst, ns, strict=True)],
        }
    )
    _, fit = curse_law(acc)
    assert fit.iloc[0]["r2"] == pytest.approx(1.0)
    assert fit.iloc[0]["mae"] == pytest.approx(0.0, abs=1e-12)


def test_curse_law_detects_violation() -> None:
    # All-or-nothing responses: P(n) = I(n) = 1/2, far from I(n)^n.
    sets = {n: [(1,) * n, (0,) * n] for n in range(1, 8)}
    samples, scores = _make(sets)
    acc = accuracy_by_n(verdict_frame(scores, samples), scores)
    _, fit = curse_law(acc[acc["mode"] == "strict"])
    assert math.isnan(fit.iloc[0]["r2"])  # P(n) constant: R^2 undefined
    assert fit.iloc[0]["mae"] > 0.3


def test_nan_scores_are_left_out_and_counted() -> None:
    samples, scores = _make({1: [(1,), (0,)]})
    extra = Sample(
        id="bad",
        benchmark="manyifeval",
        task="unique",
        instruction="x",
        gold=ManyIFEvalGold(instruction_id_list=(IDS[0],), kwargs=({},)),
        meta={"n_instructions": 1, "condition": "unique"},
    )
    nan = scores_frame(
        [
            Score(
                "bad",
                "m",
                "manyifeval",
                "unique",
                "manyifeval.error",
                "0",
                math.nan,
                explanation="generation failed",
            )
        ]
    )
    scores = pd.concat([scores, nan], ignore_index=True)
    acc = accuracy_by_n(verdict_frame(scores, [*samples, extra]), scores)
    row = acc[acc["mode"] == "strict"].iloc[0]
    assert row["m"] == 2 and row["prompt_level"] == 0.5 and row["n_nan"] == 1


def test_report_writes_tables_and_figures(tmp_path) -> None:
    sets = {n: list(itertools.product((0, 1), repeat=n)) for n in range(1, 5)}
    samples, scores = _make(sets)
    run = RunDir("r1", tmp_path).create()
    tables = report_manyifeval(run, scores, samples)
    assert {"accuracy_by_n", "curse_law", "curse_fit", "per_instruction", "summary"} <= set(tables)
    assert tables["summary"].loc["m", "P(2)"] == pytest.approx(0.25)
    for name in ("manyifeval_fig1_accuracy", "manyifeval_fig4_curse", "manyifeval_fig9_confusion"):
        assert (run.figures / f"{name}.png").stat().st_size > 0
        assert (run.figures / f"{name}.pdf").stat().st_size > 0
    assert (run.report / "manyifeval_curse_fit.csv").exists()
    inst = per_instruction(verdict_frame(scores, samples))
    assert inst.loc[("m", "punctuation:no_comma", "No Commas"), "all"] == pytest.approx(0.5)
    assert json.loads(scores.iloc[0]["parts"])  # parts kept as JSON strings
    t4 = tables["table4_with_published"]
    assert len(t4) == 15 and t4.index[0] == ("keywords:existence", "Include Keywords")
    assert t4.loc[("keywords:letter_frequency", "Letter Frequency"), t4.columns[-1]] == 0.62
    assert t4.loc[("punctuation:no_comma", "No Commas"), "m (this run, all n)"] == 0.5


def test_undecided_instructions_follow_kleene_and() -> None:
    # p0: followed + undecided -> value NaN, left out and counted; p1: failed + undecided -> 0;
    # p2: both followed -> 1. Inst-level over the decided verdicts of p1 and p2: 2 / 3.
    samples, scores = _make({2: [(1, math.nan), (0, math.nan), (1, 1)]})
    acc = accuracy_by_n(verdict_frame(scores, samples), scores)
    row = acc[acc["mode"] == "strict"].iloc[0]
    assert (row["m"], row["n_nan"]) == (2, 1)
    assert row["prompt_level"] == pytest.approx(1 / 2)
    assert row["inst_level"] == pytest.approx(2 / 3)


def test_prompt_level_is_kleene_and_of_the_verdicts() -> None:
    rows = [  # (sample, loose verdict): s0 followed + undecided, s1 failed + undecided, s2 ok
        ("s0", 1.0),
        ("s0", math.nan),
        ("s1", 0.0),
        ("s1", math.nan),
        ("s2", 1.0),
        ("s2", 1.0),
    ]
    v = pd.DataFrame(
        [
            {
                "model": "m",
                "sample_id": sid,
                "prompt_key": sid,
                "condition": "unique",
                "n": 2,
                "index": i % 2,
                "instruction_id": IDS[i % 2],
                "strict": 0.0,
                "loose": x,
            }
            for i, (sid, x) in enumerate(rows)
        ]
    )
    loose = accuracy_by_n(v).query("mode == 'loose'").iloc[0]
    assert loose["prompt_level"] == pytest.approx(1 / 2)  # s0 undecided: left out
    assert loose["inst_level"] == pytest.approx(3 / 4)


def test_accuracy_cis_and_set_stability_by_hand() -> None:
    from lceval.benchmarks.manyifeval.report import headline, set_stability
    from lceval.metrics import headline_estimates

    samples, scores = _make({2: [(1, 1), (1, 0), (0, 0), (1, 1)]})
    acc = accuracy_by_n(verdict_frame(scores, samples), scores)
    row = acc[(acc["mode"] == "strict") & (acc["n"] == 2)].iloc[0]
    assert row["prompt_level_low"] <= row["prompt_level"] == 0.5 <= row["prompt_level_high"]
    assert row["inst_level_low"] <= row["inst_level"] == 5 / 8 <= row["inst_level_high"]
    # instruction sets of the four prompts followed 2/2, 1/2, 0/2, 2/2: CV of 1, .5, 0, 1
    st = set_stability(verdict_frame(scores, samples))
    got = st[(st["mode"] == "strict") & (st["n"] == 2)].iloc[0]
    want = pd.Series([1.0, 0.5, 0.0, 1.0])
    assert got["CV"] == pytest.approx(want.std(ddof=1) / want.mean()) and got["n_sets"] == 4
    # the headline: P(n) averaged over n, one unit per task prompt (its samples at every n)
    samples, scores = _make({1: [(1,), (0,), (1,)], 2: [(1, 1), (1, 0), (0, 0)]})
    est = headline_estimates(headline(scores, samples), n_resamples=200).iloc[0]
    assert est["estimate"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert est["n"] == 6 and est["n_units"] == 3


def test_published_points_beside_the_run_in_fig1_and_fig4() -> None:
    from lceval.benchmarks.manyifeval.published import accuracy_with_published, published_points
    from lceval.benchmarks.manyifeval.report import plot_accuracy, plot_curse

    sets = {n: list(itertools.product((0, 1), repeat=n)) for n in range(1, 4)}
    samples, scores = _make(sets)
    acc = accuracy_by_n(verdict_frame(scores, samples), scores)
    beside = accuracy_with_published(acc)
    pub = beside[beside["source"] != "this run"].set_index("model")
    assert pub["prompt_level"].to_dict() == {
        "gpt-4o-2024-05-13": 0.15,
        "claude-3-5-sonnet-20240620": 0.44,
        "Meta-Llama-3.1-8B-Instruct": 0.04,
    }
    assert (pub["n"] == 10).all() and pub["inst_level"].isna().all()
    assert len(beside[beside["source"] == "this run"]) == 3
    assert set(published_points()["figure"]) == {"Fig. 1", "Fig. 6", "Table 2", "Table 5"}
    labels = plot_accuracy(acc, published=beside).axes[1].get_legend_handles_labels()[1]
    assert "gpt-4o-2024-05-13 (published)" in labels and "m" in labels
    per_n, fit = curse_law(acc)
    fig = plot_curse(per_n, fit, published=beside)
    assert len(fig.axes) == 2 and "published" in fig.axes[1].get_title()


def test_fig8_draws_unique_against_repeated() -> None:
    from lceval.benchmarks.manyifeval.report import plot_repeated

    samples, scores = _make({n: list(itertools.product((0, 1), repeat=n)) for n in (1, 2)})
    acc = accuracy_by_n(verdict_frame(scores, samples), scores)
    both = pd.concat([acc, acc.assign(condition="repeated", inst_level=1.0)], ignore_index=True)
    ax = plot_repeated(both).axes[0]
    ys = sorted(tuple(line.get_ydata()) for line in ax.get_lines() if len(line.get_ydata()) == 2)
    assert ys == [(0.5, 0.5), (1.0, 1.0)]
