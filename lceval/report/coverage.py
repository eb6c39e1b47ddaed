"""What a run covers, per benchmark and model, and whether that is the paper's grid: every
sample built with the paper's build params (``params/<notebook>/full.yaml``), every one answered
with its own answer budget and no context cut. Anything else is a subset, shown beside the
published numbers under :attr:`Coverage.label` and never ranked among them (``lceval score``,
results.json, report/index.html, the papers' reports).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from lceval.benchmarks import registry
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir, read_json_object
from lceval.core.records import Sample

CUT_FLAG = 0.05
"""Share of answers ended by the budget above which a model's cell is flagged."""

_NOT_GRID_KEYS = ("path", "dir", "metadata", "encoding", "seed", "rebuild", "model", "backend")
"""Build params that locate data or tools rather than define the grid (not compared)."""


@dataclass(frozen=True)
class Coverage:
    """One benchmark and model of a run: what was answered of what was built.

    Attributes:
        built, answered: samples the run holds; those with a current, error-free answer.
        tasks_built, tasks_answered, tasks_paper: task codes held, answered; how many the
            benchmark defines.
        lengths: context lengths answered (the builder's labels, e.g. ``4k``; else tokens).
        budget: the answer budget cap in new tokens; None = each sample's own.
        capped: answered samples whose own budget exceeds ``budget``.
        truncated, tokens_cut: answered samples whose context was cut; prompt tokens cut.
        cut_at_budget: answers the budget ended (``finish_reason == "length"`` or thinking that
            never ended: ``thinking_unfinished``); ``cut_flag`` above :data:`CUT_FLAG` of them;
            ``cut_by_task``: per task ``[cut, answered]``.
        demo: the data are the shipped demo stand-ins (never comparable).
        param_gaps: build params that differ from the paper's (``key=run (paper: value)``).
        paper_grid: nothing above departs from the paper's setting; ``label``: one line.
    """

    benchmark: str
    model: str
    built: int
    answered: int
    tasks_built: tuple[str, ...]
    tasks_answered: tuple[str, ...]
    tasks_paper: int
    lengths: tuple[str, ...]
    budget: int | None
    capped: int
    truncated: int
    tokens_cut: int
    cut_at_budget: int
    thinking_unfinished: int
    cut_flag: bool
    cut_by_task: dict[str, list[int]]
    demo: bool
    param_gaps: tuple[str, ...]
    paper_grid: bool
    label: str

    def as_dict(self) -> dict[str, Any]:
        """Plain-JSON dict (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def cut_line(self) -> str:
        """``25 of 44 answers cut at 64 tokens`` (empty when none was cut)."""
        if not self.cut_at_budget:
            return ""
        at = f"at {self.budget} tokens" if self.budget is not None else "at their own budget"
        text = f"{self.cut_at_budget} of {self.answered} answers cut {at}"
        if self.thinking_unfinished:
            text += f" ({self.thinking_unfinished} inside the thinking: no answer)"
        return text

    def line(self) -> str:
        """One terminal line: ``lifbench SmolLM2: 4 of 44 samples answered, ...``."""
        return f"{self.benchmark} {self.model}: {self.label}"


def paper_params(key: str) -> dict[str, Any] | None:
    """The paper's build params of benchmark ``key``: of its notebooks'
    ``params/<notebook>/full.yaml`` (in the checkout), the one sharing most keys with its
    builder ``Config``; None without the repository."""
    bench = registry.get(key)
    try:
        model = bench.params_schema()
    except (ImportError, AttributeError, LcevalError):
        model = None
    fields = set(model.model_fields) if model is not None else set()
    root = Path(__file__).resolve().parents[2] / "params"
    best: tuple[int, dict[str, Any]] | None = None
    for nb in bench.notebooks:
        path = root / Path(nb).stem / "full.yaml"
        if not path.is_file():
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(data, Mapping):
            continue
        shared = len(fields & set(data)) if fields else 0
        if best is None or shared > best[0]:
            best = (shared, dict(data))
    return None if best is None else best[1]


def _short(v: Any) -> str:
    if isinstance(v, list | tuple):
        return "[" + ", ".join(map(str, v[:6])) + (", ..." if len(v) > 6 else "") + "]"
    return str(v)


def _param_gaps(built: Mapping[str, Any], paper: Mapping[str, Any] | None) -> tuple[str, ...]:
    if paper is None:
        return ("paper's params unknown (params/*/full.yaml not found)",)
    gaps = []
    for k, v in built.items():
        if k not in paper or any(part in k for part in _NOT_GRID_KEYS):
            continue
        p = paper[k]
        if (list(v) if isinstance(v, tuple) else v) != p:
            gaps.append(f"{k}={_short(v)} (paper: {_short(p)})")
    return tuple(gaps)


def _length_label(s: Sample) -> str | None:
    label = s.meta.get("length_label") if isinstance(s.meta, Mapping) else None
    if label:
        return str(label)
    return None if s.length is None else str(s.length)


def _span(labels: Sequence[str]) -> str:
    return labels[0] if len(labels) == 1 else f"{labels[0]}-{labels[-1]}"


def coverage(
    samples: Sequence[Sample], responses: pd.DataFrame, meta: Mapping[str, Any]
) -> list[Coverage]:
    """One :class:`Coverage` per benchmark and model with answers, sorted, from the run's
    ``samples``, its :func:`lceval.report.reporting.responses_frame` and run.json (``meta``)."""
    out: list[Coverage] = []
    models_meta = meta.get("models") or {}
    params = meta.get("params") or {}
    by_bench: dict[str, list[Sample]] = {}
    for s in samples:
        by_bench.setdefault(s.benchmark, []).append(s)
    for key in sorted(by_bench):
        mine = by_bench[key]
        ids = {s.id: s for s in mine}
        try:
            bench = registry.get(key)
            n_paper_tasks = len(bench.tasks)
            paper = paper_params(key)
        except Exception:  # noqa: BLE001 - a benchmark registered elsewhere: no paper grid
            n_paper_tasks, paper = 0, None
        built_params = params.get(key) or {}
        gaps = _param_gaps(built_params, paper)
        demo = built_params.get("data_path") == "demo" or built_params.get("demo") is True
        rows = responses[responses["sample_id"].isin(ids)] if len(responses) else responses
        for model in sorted(set(rows["model"].astype(str))) if len(rows) else []:
            r = rows[rows["model"].astype(str) == model]
            ok = r[r["error"].isna() & (r["finish_reason"].astype(str) != "error")]
            answered = [ids[i] for i in dict.fromkeys(ok["sample_id"])]
            gen = (models_meta.get(model) or {}).get("generation") or {}
            cap = gen.get("max_new_tokens")
            capped = sum(1 for s in answered if cap is not None and s.max_new_tokens > cap)
            cut = pd.to_numeric(ok["truncated_tokens"], errors="coerce").fillna(0)
            order = {lab: s.length or 0 for s in mine if (lab := _length_label(s))}
            lengths = tuple(
                sorted(
                    {lab for s in answered if (lab := _length_label(s))},
                    key=lambda lab: order.get(lab, 0),
                )
            )
            tasks_built = tuple(dict.fromkeys(s.task for s in mine))
            tasks_answered = tuple(t for t in tasks_built if any(s.task == t for s in answered))
            first = ok.drop_duplicates("sample_id")
            cut_ids = {i for i, _ in cut_answers(first)}
            n_cut = len(cut_ids)
            unfinished = first.get("thinking_unfinished", pd.Series(dtype=bool))
            by_task = {
                t: [
                    sum(1 for s in answered if s.task == t and s.id in cut_ids),
                    sum(1 for s in answered if s.task == t),
                ]
                for t in tasks_answered
            }
            grid = (
                not demo
                and not gaps
                and len(answered) == len(mine)
                and capped == 0
                and int((cut > 0).sum()) == 0
                and (n_paper_tasks == 0 or len(set(tasks_built)) >= n_paper_tasks)
            )
            cov = Coverage(
                benchmark=key,
                model=model,
                built=len(mine),
                answered=len(answered),
                tasks_built=tasks_built,
                tasks_answered=tasks_answered,
                tasks_paper=n_paper_tasks,
                lengths=lengths,
                budget=cap,
                capped=capped,
                truncated=int((cut > 0).sum()),
                tokens_cut=int(cut.sum()),
                cut_at_budget=n_cut,
                thinking_unfinished=int(unfinished.fillna(False).astype(bool).sum()),
                cut_flag=bool(answered) and n_cut > CUT_FLAG * len(answered),
                cut_by_task=by_task,
                demo=demo,
                param_gaps=gaps,
                paper_grid=grid,
                label="",
            )
            out.append(_labelled(cov))
    return out


def _labelled(c: Coverage) -> Coverage:
    bits = [f"{c.answered} of {c.built} samples answered"]
    if c.tasks_paper:
        bits.append(f"{len(c.tasks_answered)} of {c.tasks_paper} tasks")
    if c.lengths:
        bits.append(f"lengths {_span(c.lengths)}")
    if c.budget is not None:
        bits.append(
            f"{c.budget}-token answers ({c.capped} sample(s) below their own budget)"
            if c.capped
            else f"answers capped at {c.budget} tokens"
        )
    else:
        bits.append("each sample's own answer budget")
    if c.cut_at_budget:
        flag = f" (over {CUT_FLAG:.0%}: scores rest on cut answers)" if c.cut_flag else ""
        bits.append(c.cut_line() + flag)
    if c.truncated:
        bits.append(f"{c.truncated} context(s) truncated ({c.tokens_cut:,} tokens cut)")
    head = "paper's grid" if c.paper_grid else "subset"
    if c.demo:
        head = "DEMO DATA (shipped stand-ins, not the paper's data; task names are the paper's)"
    text = f"{head}: {', '.join(bits)}"
    if not c.paper_grid:
        if c.param_gaps:
            text += f"; built with {', '.join(c.param_gaps)}"
        text += "; not comparable to the paper"
    return Coverage(**{**asdict(c), "label": text})


def run_coverage(run: Any) -> list[Coverage]:
    """:func:`coverage` of a run folder (``lceval.core.io.RunDir``); empty without responses."""
    from lceval.report.reporting import responses_frame

    try:
        samples = run.read_samples()
        frame = responses_frame(run.run_id, Path(run.path).parent)
    except LcevalError:
        return []
    return coverage(samples, frame, read_json_object(run.run_json))


def cut_answers(responses: pd.DataFrame) -> set[tuple[str, str]]:
    """``(sample_id, model)`` of responses (``responses_frame`` rows) the budget ended:
    ``finish_reason == "length"`` or thinking that never ended."""
    if not len(responses):
        return set()
    cut = responses["finish_reason"].astype(str) == "length"
    if "thinking_unfinished" in responses:
        cut |= responses["thinking_unfinished"].fillna(False).astype(bool)
    part = responses[cut]
    return set(zip(part["sample_id"].astype(str), part["model"].astype(str), strict=True))


def run_cut_answers(run: Any) -> set[tuple[str, str]]:
    """:func:`cut_answers` of a run folder; empty without responses."""
    from lceval.report.reporting import responses_frame

    try:
        return cut_answers(responses_frame(run.run_id, Path(run.path).parent))
    except LcevalError:
        return set()


def variant_of(sample: Sample) -> str:
    """The baseline a sample answers under (L-Eval's ``retrieval=dense``, ``no LIE``); empty
    for the model's own setting, the only one a headline reads."""
    meta = sample.meta if isinstance(sample.meta, Mapping) else {}
    bits = []
    if meta.get("retrieval") not in (None, "full"):
        bits.append(f"retrieval={meta['retrieval']}")
    if meta.get("lie") is False:
        bits.append("no LIE")
    return ", ".join(bits)


def with_finished(
    scores: pd.DataFrame, cut: set[tuple[str, str]], variants: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Per (model, benchmark, task[, variant]) of score rows: ``mean`` (0..1), ``n``, ``cut``
    (answers the budget ended) and ``mean_finished`` (NaN when none finished); ``variants``
    (sample id -> :func:`variant_of`) splits baselines off (the model's own setting as ``-``)."""
    keys = list(zip(scores["sample_id"].astype(str), scores["model"].astype(str), strict=True))
    frame = scores.assign(
        value=pd.to_numeric(scores["value"], errors="coerce"), _cut=[k in cut for k in keys]
    )
    frame["_fin"] = frame["value"].where(~frame["_cut"])
    by = ["model", "benchmark", "task"]
    if variants and any(variants.values()):
        frame["variant"] = [variants.get(str(i)) or "-" for i in frame["sample_id"]]
        by.append("variant")
    g = frame.groupby(by)
    return pd.DataFrame(
        {
            "mean": g["value"].mean(),
            "n": g.size(),
            "cut": g["_cut"].sum().astype(int),
            "mean_finished": g["_fin"].mean(),
        }
    )


def comparability_note(run_id: str, root: str | Path | None, benchmark: str) -> str:
    """What a notebook prints above published numbers: one line per model of ``benchmark`` in
    run ``run_id`` saying whether its rows may be read among the paper's."""
    covs = [c for c in run_coverage(RunDir(run_id, root)) if c.benchmark == benchmark]
    if not covs:
        return f"{benchmark}: no answers in run {run_id}: nothing here is comparable to the paper"
    return "\n".join(
        f"{c.line()}" + ("" if c.paper_grid else ": its rows are listed apart, never ranked")
        for c in covs
    )


def comparable(covs: Sequence[Coverage], benchmark: str) -> dict[str, bool]:
    """Per model of ``benchmark``: whether its numbers may be ranked among the paper's."""
    return {c.model: c.paper_grid for c in covs if c.benchmark == benchmark}
