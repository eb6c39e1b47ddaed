"""L-Eval's NTK base sweep (An et al., ACL 2024, Sec. "NTK Base Scaling"): retrieval against
reasoning as the RoPE base grows, on any RoPE model.

The paper raises the NTK base of Llama-2-7B from 20,000 to 160,000 and finds topic retrieval
(TopicRet) improving and GSM(16-shot) reasoning degrading: positional scaling helps a model attend
far and hurts its reasoning, and base scaling alone cannot optimise both. This module plans the
sweep (:func:`plan_sweep`: one run per base), and turns the runs into the paper's table, figure
and a computed verdict (:func:`report_sweep`); the run stages answer it
(:func:`lceval.run.sweep.run_sweep`: build, infer, score per base) and the report stage adds the
sweep's index page (:func:`lceval.report.report_sweep`), in notebook ``09_ntk_base_sweep``.
L-Eval and RULER are reached through :mod:`lceval.benchmarks.registry`.

Tasks (two families, at the same input lengths)
-----------------------------------------------
- retrieval: L-Eval TopicRet (``topic_retrieval_longchat``) when ``data_path`` names a clone's
  ``LEval-data`` (or task files); offline: RULER's needle retrieval (``niah_single_2``, a number
  hidden in essays) and key-value retrieval (``niah_multikey_3``, a UUID under a UUID key among
  distractor pairs), or the tasks given.
- reasoning: L-Eval GSM(16-shot) (``gsm100``) with ``data_path``; offline: lceval's seeded
  multi-step arithmetic in the gsm100 format (:mod:`lceval.benchmarks.leval.arithmetic`,
  ``data_path: arithmetic``), scored by L-Eval's GSM rule.

L-Eval documents are cut per length with the official word cut (``lengths`` of the L-Eval
builder), RULER builds each length natively, the arithmetic prompt holds as many whole worked
examples as fit (or at most ``arithmetic_shots``). Lengths are counted with one tiktoken
``encoding`` for all tasks (RULER's convention: prompt without chat template + answer budget
<= L); the table's ``input_tokens`` column gives the model's own prompt tokens.

One run folder per base
-----------------------
Each base (or NTK factor) is one run folder, ``<outputs>/<run_id>/bases/<point>/``, holding the
same samples (same params and seed: byte-identical, so items are paired across bases). The
response cache key would keep two bases apart inside one folder too (the RoPE settings join the
generation-config hash), but scores.parquet, the reports and run.json's ``models`` entry are keyed
by (sample, model): one folder per base keeps each base's answers, scores and recorded effective
RoPE parameters self-contained, lets ``lceval infer/score/report`` work on it unchanged, and makes
a resumed or extended sweep a matter of (re)running folders. The sweep's own folder
``<outputs>/<run_id>/`` holds run.json (the sweep params and each base's model record), the
table, the trend, the figure and the executed notebook.

Trend (the computed verdict)
----------------------------
Per family: Spearman's rho between the base and the family's accuracy at that base (pooled over
lengths), with a percentile bootstrap CI that resamples items (sample ids) within each length and
keeps every resampled item's answers under every base together (paired). The paper's direction
is +1 for retrieval and -1 for reasoning; a family "matches" when its CI excludes 0 on the
paper's side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, new_meta
from lceval.core.io import outputs_root as _outputs_root
from lceval.metrics import bootstrap

if TYPE_CHECKING:
    pass

FAMILIES: tuple[str, ...] = ("retrieval", "reasoning")
"""Task families, in plotting order."""
PAPER_DIRECTION: Mapping[str, int] = {"retrieval": 1, "reasoning": -1}
"""Sign of the paper's trend of accuracy with the base (TopicRet up, GSM down)."""
TASK_FAMILY: Mapping[str, str] = {"topic_retrieval_longchat": "retrieval", "gsm100": "reasoning"}
"""L-Eval task -> family (every RULER task of the sweep is retrieval)."""
OFFLINE_RETRIEVAL: tuple[str, ...] = ("niah_single_2", "niah_multikey_3")
"""RULER tasks of the offline retrieval family: needle retrieval and key-value retrieval."""
FIGURE = "ntk_base_sweep"
"""File stem of the figure (PNG and PDF under the sweep's report/figures/)."""
CAPTIONS: dict[str, tuple[str, str]] = {
    # name (report/<name>.csv or figures/<name>.png) -> (paper item, one-line caption)
    FIGURE: (
        "NTK base sweep",
        "Accuracy (0..1 in the table, percent in the figure; higher is better) per RoPE base, "
        "length (tokens) and task family (retrieval, reasoning) with its 95% bootstrap CI, n "
        "scored samples, mean prompt tokens and truncated prompts.",
    ),
    "ntk_trend": (
        "NTK base sweep",
        "Per family: Spearman's rho (-1..1) of accuracy with the RoPE base and its paired "
        "bootstrap CI, beside the paper's direction (retrieval up, reasoning down) and the "
        "verdict; undefined_share: resamples with no rank order.",
    ),
}
"""Paper item (L-Eval) and caption of the sweep's tables and figure (report/index.html)."""


@dataclass(frozen=True)
class SweepPoint:
    """One RoPE setting of the sweep: a base, or an NTK-aware factor."""

    name: str
    """Run id of its folder under ``<sweep>/bases/`` (``theta-20000``, ``ntk-4``)."""
    rope_theta: float | None = None
    """Base b' given directly (the paper's axis)."""
    ntk_factor: float | None = None
    """NTK-aware factor s (the engine gets ``rope_scaling: {type: ntk, factor: s}``, base
    b * s^(d/(d-2)) from the checkpoint's b)."""

    def rope_options(self) -> dict[str, Any]:
        """The backend options that set this point's RoPE (``lceval.models.rope``)."""
        if self.ntk_factor is not None:
            return {"rope_scaling": {"type": "ntk", "factor": self.ntk_factor}}
        return {"rope_theta": self.rope_theta}

    def backend_options(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``extra`` (device, window, max_model_len, ...) with this point's RoPE options.

        Raises:
            LcevalError: ``extra`` sets ``rope_theta`` or ``rope_scaling`` itself.
        """
        extra = dict(extra or {})
        clash = sorted({"rope_theta", "rope_scaling"} & set(extra))
        if clash:
            raise LcevalError(f"ntk sweep: backend_options must not set {', '.join(clash)}")
        return {**extra, **self.rope_options()}


@dataclass(frozen=True)
class Sweep:
    """A planned NTK sweep: its points, where their runs live, and what each run builds."""

    run_id: str
    """The sweep's run id (its folder holds the report)."""
    root: Path
    """Folder of the per-point run folders: ``<outputs>/<run_id>/bases``."""
    outputs: Path
    """The outputs root holding the sweep folder."""
    points: tuple[SweepPoint, ...]
    """RoPE settings, in the given order."""
    parts: Mapping[str, Mapping[str, Any]]
    """Benchmark key -> builder params (``lceval.run.build_suite``), the same for every
    point."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """The sweep's parameters as given (recorded in the sweep's run.json)."""

    @property
    def run(self) -> RunDir:
        """The sweep's own run folder."""
        return RunDir(self.run_id, self.outputs)

    def point_run(self, point: SweepPoint) -> RunDir:
        """The run folder of ``point``."""
        return RunDir(point.name, self.root)

    def report(self, *, n_resamples: int = 2000, seed: int = 0) -> SweepReport:
        """:func:`report_sweep` (the report wing's ``lceval.report.report_sweep`` calls it)."""
        return report_sweep(self, n_resamples=n_resamples, seed=seed)


def _point_name(prefix: str, value: float) -> str:
    text = f"{value:.10g}".replace("+", "")
    return f"{prefix}-{text}"


def _numbers(values: Any, key: str, minimum: float) -> list[float] | None:
    if values is None:
        return None
    if isinstance(values, int | float) and not isinstance(values, bool):
        values = [values]
    if not isinstance(values, list | tuple) or not values:
        raise LcevalError(f"ntk sweep: {key} must be a non-empty list of numbers")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > minimum:
            raise LcevalError(f"ntk sweep: {key} must be numbers > {minimum:g}, got {v!r}")
        out.append(float(v))
    if len(set(out)) != len(out):
        raise LcevalError(f"ntk sweep: {key} has duplicates")
    return out


def plan_sweep(
    run_id: str,
    *,
    bases: Sequence[float] | None = None,
    ntk_factors: Sequence[float] | None = None,
    lengths: Sequence[int],
    samples: int,
    seed: int = 0,
    data_path: str | Sequence[str] | None = None,
    retrieval_tasks: Sequence[str] | None = None,
    encoding: str = "cl100k_base",
    reasoning_max_new_tokens: int = 512,
    arithmetic_shots: int | None = None,
    arithmetic_steps: int = 3,
    outputs_root: str | Path | None = None,
) -> Sweep:
    """Plan the sweep: its points and the builder params every point's run gets.

    Args:
        run_id: the sweep's run id.
        bases: RoPE bases b' (e.g. the paper's 20,000-160,000).
        ntk_factors: NTK-aware factors s instead (exactly one of ``bases`` / ``ntk_factors``).
        lengths: input lengths L in tokens of ``encoding`` (RULER needs L >= 256).
        samples: per (family task, length): RULER samples per task; arithmetic questions; with
            ``data_path`` the first ``samples`` L-Eval documents per task (TopicRet asks three
            questions per document, GSM one).
        seed: the builders' seed.
        data_path: a clone's ``LEval-data`` folder or task files (TopicRet and GSM); None: the
            offline tasks.
        retrieval_tasks: RULER tasks of the offline retrieval family (default
            :data:`OFFLINE_RETRIEVAL`).
        encoding: tiktoken encoding that measures lengths for every task.
        reasoning_max_new_tokens: answer budget of the L-Eval samples (official: 512); RULER
            keeps its official budgets. Both count within L.
        arithmetic_shots: worked examples in the offline reasoning prompt (None: as many as fit
            each length; 16: the paper's GSM(16-shot), fewer where they do not fit).
        arithmetic_steps: operations per arithmetic problem.
        outputs_root: outputs folder (None: ``$LCEVAL_OUTPUTS`` or ``<repo>/outputs``).

    Raises:
        LcevalError: neither or both of bases / factors, bad numbers or lengths.
    """
    base_list = _numbers(bases, "bases", 1.0)
    factor_list = _numbers(ntk_factors, "ntk_factors", 0.0)
    if (base_list is None) == (factor_list is None):
        raise LcevalError("ntk sweep: give either bases or ntk_factors (one list)")
    if base_list is not None:
        points = tuple(SweepPoint(_point_name("theta", b), rope_theta=b) for b in base_list)
    else:
        assert factor_list is not None
        points = tuple(SweepPoint(_point_name("ntk", f), ntk_factor=f) for f in factor_list)
    if isinstance(lengths, int):
        lengths = [lengths]
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) for n in lengths):
        raise LcevalError("ntk sweep: lengths must be a non-empty list of token counts")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise LcevalError(f"ntk sweep: samples must be an integer >= 1, got {samples!r}")
    lengths = sorted(set(lengths))
    leval: dict[str, Any] = {
        "lengths": lengths,
        "encoding": encoding,
        "max_new_tokens": reasoning_max_new_tokens,
        "seed": seed,
    }
    parts: dict[str, dict[str, Any]] = {}
    if data_path is None:
        parts["ruler"] = {
            "tasks": list(retrieval_tasks or OFFLINE_RETRIEVAL),
            "lengths": lengths,
            "num_samples": samples,
            "seed": seed,
            "encoding": encoding,
        }
        leval.update(
            data_path="arithmetic",
            tasks=["gsm100"],
            arithmetic_questions=samples,
            arithmetic_shots=arithmetic_shots,
            arithmetic_steps=arithmetic_steps,
        )
    else:
        if retrieval_tasks:
            raise LcevalError(
                "ntk sweep: retrieval_tasks are the offline tasks; with data_path retrieval is "
                "L-Eval TopicRet"
            )
        leval.update(
            data_path=data_path, tasks=["topic_retrieval_longchat", "gsm100"], limit_docs=samples
        )
    parts["leval"] = leval
    params = {
        "bases": base_list,
        "ntk_factors": factor_list,
        "lengths": lengths,
        "samples": samples,
        "seed": seed,
        "data_path": data_path,
        "parts": parts,
    }
    top = _outputs_root(outputs_root)
    return Sweep(run_id, top / run_id / "bases", top, points, parts, params)


# -- results --------------------------------------------------------------------------------------
def family_of(benchmark: str, task: str) -> str | None:
    """The sweep family of a sample (None: not part of the sweep)."""
    if benchmark == "ruler":
        return "retrieval"
    if benchmark == "leval":
        return TASK_FAMILY.get(task)
    return None


def _model_record(run: RunDir) -> tuple[str | None, Mapping[str, Any]]:
    meta = run.read_meta()
    if not meta.models:
        return None, {}
    name, entry = list(meta.models.items())[-1]
    return name, entry if isinstance(entry, Mapping) else {}


def item_scores(sweep: Sweep) -> pd.DataFrame:
    """One row per (point, scored sample): point, base, factor, model, family, length,
    sample_id, value (0..1), prompt_tokens, truncated_tokens.

    ``base`` is the effective RoPE base the backend recorded in the point's run.json (after
    NTK-aware scaling), else the base asked for.

    Raises:
        LcevalError: a point's run has no scores yet.
    """
    frames = []
    for point in sweep.points:
        run = sweep.point_run(point)
        every = run.read_scores()  # each benchmark's default scorer's rows (leval, ruler)
        benches = (registry.get("leval"), registry.get("ruler"))  # through the registry
        scores = pd.concat([b.scores_for(every)[0] for b in benches]).sort_index()
        samples = pd.DataFrame(
            [
                {"sample_id": s.id, "benchmark": s.benchmark, "task": s.task, "length": s.length}
                for s in run.read_samples()
            ]
        )
        name, entry = _model_record(run)
        rope = entry.get("rope") or {}
        base = rope.get("rope_theta") or point.rope_theta
        responses = pd.DataFrame(
            [
                {
                    "sample_id": r.sample_id,
                    "model": r.model,
                    "prompt_tokens": r.prompt_tokens,
                    "truncated_tokens": r.truncated_tokens,
                }
                for r in run.read_responses()
                if r.finish_reason != "error"
            ]
        ).drop_duplicates(["sample_id", "model"], keep="last")
        df = scores[["sample_id", "model", "value"]].merge(samples, on="sample_id", how="left")
        if len(responses):
            df = df.merge(responses, on=["sample_id", "model"], how="left")
        else:
            df["prompt_tokens"] = np.nan
            df["truncated_tokens"] = np.nan
        df["family"] = [family_of(b, t) for b, t in zip(df["benchmark"], df["task"], strict=True)]
        df = df[df["family"].notna()]
        df.insert(0, "point", point.name)
        df.insert(1, "base", float(base) if base is not None else math.nan)
        df.insert(2, "factor", point.ntk_factor if point.ntk_factor is not None else math.nan)
        frames.append(df)
    cols = [
        "point",
        "base",
        "factor",
        "model",
        "family",
        "task",
        "length",
        "sample_id",
        "value",
        "prompt_tokens",
        "truncated_tokens",
    ]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def answer_changes(sweep: Sweep, reference: str | None = None) -> pd.DataFrame:
    """How many answers each point changes against a reference point: the override at work.

    Args:
        sweep: the sweep (its runs answered).
        reference: a point name (default: the point whose base is the checkpoint's, else the
            first point).

    Returns:
        One row per point: point, base, reference, n (samples answered at both), changed
        (answers whose text differs), share (0..1).
    """
    texts: dict[str, dict[str, str]] = {}
    bases: dict[str, float] = {}
    ref = reference
    for point in sweep.points:
        run = sweep.point_run(point)
        texts[point.name] = {
            r.sample_id: r.text for r in run.read_responses() if r.finish_reason != "error"
        }
        rope = _model_record(run)[1].get("rope") or {}
        bases[point.name] = float(rope.get("rope_theta") or point.rope_theta or math.nan)
        if ref is None and rope and not rope.get("changed", True):
            ref = point.name
    ref = ref or sweep.points[0].name
    if ref not in texts:
        raise LcevalError(f"ntk sweep: no point named {ref!r}")
    rows = []
    for name, answers in texts.items():
        shared = sorted(set(answers) & set(texts[ref]))
        changed = sum(answers[i] != texts[ref][i] for i in shared)
        rows.append(
            {
                "point": name,
                "base": bases[name],
                "reference": ref,
                "n": len(shared),
                "changed": changed,
                "share": changed / len(shared) if shared else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=["point", "base", "reference", "n", "changed", "share"])


def sweep_table(items: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """The tidy table: one row per (base, length, family) with accuracy (0..1), its percentile
    bootstrap 95% CI (``lceval.metrics.bootstrap``), n (scored samples), the mean prompt
    tokens the model saw and how many prompts the window truncated.

    Args:
        items: :func:`item_scores`.
        seed: bootstrap seed.
    """
    rows = []
    keys = ["base", "factor", "point", "model", "length", "family"]
    for key, part in items.groupby(keys, sort=True, dropna=False):
        values = part["value"].to_numpy(float)
        est = bootstrap(values, n_resamples=1000, seed=seed)
        low, high = est.low, est.high
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "accuracy": float(np.nanmean(values)) if np.isfinite(values).any() else math.nan,
                "ci_low": low,
                "ci_high": high,
                "n": int(np.isfinite(values).sum()),
                "input_tokens": float(part["prompt_tokens"].mean()),
                "truncated": int((part["truncated_tokens"].fillna(0) > 0).sum()),
            }
        )
    cols = [*keys, "accuracy", "ci_low", "ci_high", "n", "input_tokens", "truncated"]
    out = pd.DataFrame(rows, columns=cols)
    if out["factor"].isna().all():
        out = out.drop(columns="factor")
    return out


def _ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank)."""
    from scipy.stats import rankdata  # heavy: scipy

    return np.asarray(rankdata(a, axis=-1), dtype=float)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of ``x`` (1-D, k levels) with each row of ``y`` (..., k); NaN where a row
    is constant or holds a NaN."""
    rx = _ranks(x)
    rx = rx - rx.mean()
    bad = np.isnan(y).any(axis=-1)
    ry = _ranks(np.where(np.isnan(y), 0.0, y))
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx**2).sum() * (ry**2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (ry * rx).sum(axis=-1) / den
    return np.where(bad | (den == 0), np.nan, rho)


def trend_table(
    items: pd.DataFrame, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Per family: Spearman's rho of accuracy with the base, a paired bootstrap CI, the paper's
    direction and a verdict (module docstring).

    Items (sample ids; each id belongs to one length) are resampled with replacement within
    their length; a resample's accuracy at a base is the mean of its items' scores there
    (items unscored at a base are left out of that base's mean). A resample in which every base
    is equally accurate has no rank order (Spearman's rho is undefined): it counts as rho = 0,
    no trend, rather than being dropped, which would make a trend carried by one item look
    certain; ``undefined_share`` says how many there were.

    Returns:
        Columns family, rho, ci_low, ci_high, n_items, n_bases, undefined_share, paper, verdict.
    """
    rows = []
    rng = np.random.default_rng(seed)
    for family in FAMILIES:
        part = items[items["family"] == family]
        if part.empty:
            continue
        wide = part.pivot_table(index="sample_id", columns="base", values="value", aggfunc="mean")
        bases = np.asarray(wide.columns, dtype=float)
        lengths = part.drop_duplicates("sample_id").set_index("sample_id")["length"]
        strata = lengths.reindex(wide.index).fillna(-1).to_numpy()
        values = wide.to_numpy(float)
        scored = np.isfinite(values)
        filled = np.where(scored, values, 0.0)
        rho = float(spearman_rows(bases, _means(filled, scored)[None, :])[0])
        draws = []  # item indices per resample, drawn within each length
        for stratum in np.unique(strata):
            members = np.flatnonzero(strata == stratum)
            draws.append(members[rng.integers(0, len(members), (n_resamples, len(members)))])
        idx = np.concatenate(draws, axis=1)
        sums = filled[idx].sum(axis=1)
        counts = scored[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums / counts
            boot = spearman_rows(bases, means)
        flat = ~np.isfinite(boot) & np.isfinite(means).all(axis=1)
        undefined = float(flat.mean())
        boot = np.where(flat, 0.0, boot)  # equal accuracy at every base: no trend
        ok = boot[np.isfinite(boot)]
        alpha = (1 - confidence) / 2
        low, high = (
            (float(np.quantile(ok, alpha)), float(np.quantile(ok, 1 - alpha)))
            if ok.size and len(bases) > 2
            else (math.nan, math.nan)
        )
        rows.append(
            {
                "family": family,
                "rho": rho,
                "ci_low": low,
                "ci_high": high,
                "n_items": len(wide),
                "n_bases": len(bases),
                "undefined_share": undefined,
                "paper": "rises" if PAPER_DIRECTION[family] > 0 else "falls",
                "verdict": verdict(rho, low, high, PAPER_DIRECTION[family]),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "family",
            "rho",
            "ci_low",
            "ci_high",
            "n_items",
            "n_bases",
            "undefined_share",
            "paper",
            "verdict",
        ],
    )


def _means(sums: np.ndarray, scored: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(sums.sum(axis=0) / scored.sum(axis=0), dtype=float)


def verdict(rho: float, low: float, high: float, direction: int) -> str:
    """How a family's measured trend compares with the paper's ``direction`` (+1 / -1).

    ``matches`` (the CI excludes 0 on the paper's side), ``same direction, not significant``,
    ``no trend`` (rho = 0), ``opposite, not significant``, ``opposite`` (CI excludes 0 on the
    other side), ``flat`` (accuracy equal at every base: rho undefined).
    """
    if not math.isfinite(rho):
        return "flat"
    if rho == 0:
        return "no trend"
    significant = math.isfinite(low) and math.isfinite(high) and (low > 0 or high < 0)
    if (rho > 0) == (direction > 0):
        return "matches" if significant else "same direction, not significant"
    return "opposite" if significant else "opposite, not significant"


def trend_sentence(trend: pd.DataFrame, table: pd.DataFrame) -> str:
    """The notebook's conclusion, computed from :func:`trend_table` (never written by hand)."""
    if trend.empty:
        return "No scored samples: the trend cannot be computed."
    bases = sorted(table["base"].dropna().unique())
    lengths = sorted(table["length"].dropna().unique())
    parts = []
    for r in trend.itertuples(index=False):
        if math.isfinite(r.rho):
            ci = (
                f"95% CI {r.ci_low:+.2f} to {r.ci_high:+.2f}"
                if math.isfinite(r.ci_low)
                else "no CI"
            )
            parts.append(
                f"{r.family} accuracy vs base: Spearman rho = {r.rho:+.2f} ({ci}, "
                f"{r.n_items} items x {r.n_bases} bases; paper: {r.paper}) -> {r.verdict}"
            )
        else:
            parts.append(
                f"{r.family}: rho undefined (accuracy equal at every base, {r.n_items} items) "
                f"-> {r.verdict}"
            )
    by = dict(zip(trend["family"], trend["verdict"], strict=True))
    good = [f for f in FAMILIES if by.get(f) == "matches"]
    same = [f for f in FAMILIES if str(by.get(f, "")).startswith("same")]
    if len(good) == len(FAMILIES):
        overall = "The measured trend matches the paper's: retrieval rises and reasoning falls."
    elif len(good) + len(same) == len(FAMILIES):
        sig = " and ".join(good) or "neither family"
        overall = f"The measured trend goes the paper's way, but its CI excludes 0 for {sig} only."
    elif good:
        overall = f"The measured trend matches the paper's for {' and '.join(good)} only."
    else:
        overall = (
            "The measured trend does not match the paper's: no family shows the paper's "
            "direction with a CI excluding 0."
        )
    span = (
        f"Bases {bases[0]:,.0f} to {bases[-1]:,.0f}, lengths "
        + ", ".join(f"{int(n):,}" for n in lengths)
        + " tokens. "
        if bases and lengths
        else ""
    )
    return span + "; ".join(parts) + ". " + overall


def sweep_figure(
    table: pd.DataFrame,
    folder: str | Path,
    *,
    title: str = "",
    checkpoint_base: float | None = None,
) -> list[Path]:
    """The paper's figure: accuracy (0..100) against the base (log axis), retrieval and
    reasoning on one plot with their bootstrap CIs, one panel per length; the checkpoint's own
    base as a dotted line when given; PNG and PDF (``ntk_base_sweep``) under ``folder``."""
    import matplotlib.pyplot as plt  # heavy: matplotlib

    from lceval.report.reporting import save_figure  # pulls matplotlib

    lengths = sorted(table["length"].dropna().unique())
    fig, axes = plt.subplots(
        1,
        max(1, len(lengths)),
        figsize=(3.6 * max(1, len(lengths)), 3.2),
        sharey=True,
        squeeze=False,
    )
    colors = {"retrieval": "tab:blue", "reasoning": "tab:red"}
    for ax, length in zip(axes[0], lengths, strict=False):
        for family in FAMILIES:
            d = table[(table["length"] == length) & (table["family"] == family)].sort_values("base")
            if d.empty:
                continue
            acc = 100 * d["accuracy"].to_numpy(float)
            ax.plot(d["base"], acc, marker="o", color=colors[family], label=family)
            ax.fill_between(
                d["base"],
                100 * d["ci_low"].to_numpy(float),
                100 * d["ci_high"].to_numpy(float),
                color=colors[family],
                alpha=0.15,
                linewidth=0,
            )
        if checkpoint_base is not None and math.isfinite(checkpoint_base):
            ax.axvline(checkpoint_base, color="grey", linestyle=":", label="checkpoint base")
        ax.set_xscale("log")
        ax.set_title(f"{int(length):,} tokens")
        ax.set_xlabel("RoPE base")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("accuracy (%)")
    axes[0][0].set_ylim(-3, 103)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return save_figure(fig, folder, FIGURE)


@dataclass(frozen=True)
class SweepReport:
    """What :func:`report_sweep` wrote and returns."""

    table: pd.DataFrame
    """:func:`sweep_table`."""
    trend: pd.DataFrame
    """:func:`trend_table`."""
    sentence: str
    """:func:`trend_sentence`."""
    figures: tuple[Path, ...]
    """The figure's PNG and PDF."""


def report_sweep(sweep: Sweep, *, n_resamples: int = 2000, seed: int = 0) -> SweepReport:
    """Write the sweep's report under ``<outputs>/<run_id>/``: run.json (sweep params and each
    point's model record, RoPE included), ``report/ntk_base_sweep.csv`` (the table),
    ``report/ntk_trend.csv``, ``report/ntk_verdict.txt`` and the figure (PNG, PDF);
    ``report/index.html`` is the report stage's (:func:`lceval.report.report_sweep`).

    Raises:
        LcevalError: a point's run has no scores.
    """
    from lceval.report.reporting import save_table  # pulls matplotlib

    items = item_scores(sweep)
    table = sweep_table(items, seed=seed)
    trend = trend_table(items, n_resamples=n_resamples, seed=seed)
    sentence = trend_sentence(trend, table)
    run = sweep.run.create()
    models = {p.name: _model_record(sweep.point_run(p))[1] for p in sweep.points}
    if run.run_json.exists():
        run.update_meta(params={"ntk_sweep": dict(sweep.params)}, models=models)
    else:
        run.write_meta(
            new_meta(
                sweep.run_id,
                params={"ntk_sweep": dict(sweep.params)},
                seed=int(sweep.params.get("seed", 0)),
                models=models,
            )
        )
    save_table(table, run.report, FIGURE, index=False)
    save_table(trend, run.report, "ntk_trend", index=False)
    (run.report / "ntk_verdict.txt").write_text(sentence + "\n", encoding="utf-8")
    model = ", ".join(sorted(items["model"].dropna().unique()))
    checkpoint = {
        (entry.get("rope") or {}).get("checkpoint", {}).get("rope_theta")
        for entry in models.values()
    } - {None}
    figures = sweep_figure(
        table,
        run.figures,
        title=f"{model}: accuracy vs RoPE base",
        checkpoint_base=checkpoint.pop() if len(checkpoint) == 1 else None,
    )
    return SweepReport(table, trend, sentence, tuple(figures))
