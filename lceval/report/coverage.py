"""What a run covers, per benchmark and model, and whether that is the paper's grid (every
sample built with the paper's params, ``params/<notebook>/full.yaml``, answered with its own
budget, no context cut); anything else is a subset, shown apart and never ranked."""

from __future__ import annotations

import json
from collections import Counter
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

CUT_FLAG = 0.05  # share of answers ended by the budget above which a model's cell is flagged
# build params that locate data or tools rather than define the grid (not compared)
_NOT_GRID_KEYS = ("path", "dir", "metadata", "encoding", "seed", "rebuild", "model", "backend")


@dataclass(frozen=True)
class Coverage:
    """One benchmark and model of a run: what was answered of what was built.

    ``lengths`` are the builder's labels (``4k``, else tokens); ``budget`` the answer cap in new
    tokens (None: each sample's own), ``capped`` the answered samples whose own budget exceeds
    it; ``truncated``/``tokens_cut`` the contexts cut and prompt tokens cut; ``cut_at_budget``
    the answers the budget ended (``finish_reason == "length"`` or ``thinking_unfinished``),
    ``cut_by_task`` per task ``[cut, answered]``; ``param_gaps`` the build params that differ
    from the paper's (``key=run (paper: value)``); ``demo``: the shipped stand-in data.
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
    cut_by_task: dict[str, list[int]]
    demo: bool
    param_gaps: tuple[str, ...]
    limit: int | None = None
    """``--limit N``: N samples per task were built and answered (run.json's ``selection``)."""
    grid: int | None = None
    """With ``limit``: the samples the build's params make, of which ``built`` were kept."""

    @property
    def cut_flag(self) -> bool:
        """More than :data:`CUT_FLAG` of the answers were ended by the budget."""
        return bool(self.answered) and self.cut_at_budget > CUT_FLAG * self.answered

    @property
    def paper_grid(self) -> bool:
        """Nothing departs from the paper's setting."""
        tasks = self.tasks_paper == 0 or len(set(self.tasks_built)) >= self.tasks_paper
        whole = self.answered == self.built and not (self.capped or self.truncated)
        whole = whole and self.limit is None
        return not self.demo and not self.param_gaps and whole and tasks

    @property
    def label(self) -> str:
        """One line: ``subset: 4 of 44 samples answered, ...; not comparable to the paper``."""
        bits = [f"{self.answered} of {self.built} samples answered"]
        if self.limit is not None:
            of = f" of {self.grid:,} built by the params" if self.grid else ""
            bits = [f"{self.limit} per task (--limit): {self.answered} samples answered{of}"]
        if self.tasks_paper:
            bits.append(f"{len(self.tasks_answered)} of {self.tasks_paper} tasks")
        if self.lengths:
            first, last = self.lengths[0], self.lengths[-1]
            bits.append(f"lengths {first}" if first == last else f"lengths {first}-{last}")
        if self.budget is None:
            bits.append("each sample's own answer budget")
        elif self.capped:
            bits.append(
                f"{self.budget}-token answers ({self.capped} sample(s) below their own budget)"
            )
        else:
            bits.append(f"answers capped at {self.budget} tokens")
        if self.cut_at_budget:
            flag = f" (over {CUT_FLAG:.0%}: scores rest on cut answers)" if self.cut_flag else ""
            bits.append(self.cut_line() + flag)
        if self.truncated:
            bits.append(f"{self.truncated} context(s) truncated ({self.tokens_cut:,} tokens cut)")
        head = "paper's grid" if self.paper_grid else "subset"
        if self.demo:
            head = "DEMO DATA (shipped stand-ins, not the paper's data; task names are the paper's)"
        text = f"{head}: {', '.join(bits)}"
        if not self.paper_grid:
            if self.param_gaps:
                text += f"; built with {', '.join(self.param_gaps)}"
            text += "; not comparable to the paper"
        return text

    def as_dict(self) -> dict[str, Any]:
        """Plain-JSON dict (tuples as lists), with ``cut_flag``, ``paper_grid`` and ``label``."""
        extra = {"cut_flag": self.cut_flag, "paper_grid": self.paper_grid, "label": self.label}
        return dict(json.loads(json.dumps({**asdict(self), **extra})))

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
    """Benchmark ``key``'s build params in the paper: of its notebooks' ``full.yaml`` params (in
    the checkout), the one sharing most keys with its builder's; None without the repository."""
    bench = registry.get(key)
    try:
        model = bench.params_schema()
    except LcevalError:  # its params model cannot be imported
        model = None
    fields = set(model.model_fields) if model is not None else set()
    root = Path(__file__).resolve().parents[2] / "params"
    paths = [root / Path(nb).stem / "full.yaml" for nb in bench.notebooks]
    found = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in paths if p.is_file()]
    found = [dict(d) for d in found if isinstance(d, Mapping)]
    return max(found, key=lambda d: len(fields & set(d)), default=None)


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


def coverage(
    samples: Sequence[Sample], responses: pd.DataFrame, meta: Mapping[str, Any]
) -> list[Coverage]:
    """One :class:`Coverage` per benchmark and model with answers, sorted, from the run's
    ``samples``, its ``responses_frame`` and run.json (``meta``)."""
    out: list[Coverage] = []
    models_meta = meta.get("models") or {}
    params = meta.get("params") or {}
    selection = meta.get("selection") or {}
    limit = selection.get("limit") if isinstance(selection.get("limit"), int) else None
    grid = selection.get("grid") if isinstance(selection.get("grid"), int) else None
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
        rows = responses[responses["sample_id"].isin(ids)]
        for model in sorted(set(rows["model"].astype(str))):
            r = rows[rows["model"].astype(str) == model]
            ok = r[r["error"].isna() & (r["finish_reason"].astype(str) != "error")]
            answered = [ids[i] for i in dict.fromkeys(ok["sample_id"])]
            gen = (models_meta.get(model) or {}).get("generation") or {}
            cap = gen.get("max_new_tokens")
            capped = sum(1 for s in answered if cap is not None and s.max_new_tokens > cap)
            cut = pd.to_numeric(ok["truncated_tokens"], errors="coerce").fillna(0)
            order = {lab: s.length or 0 for s in mine if (lab := _length_label(s))}
            labels = {lab for s in answered if (lab := _length_label(s))}
            lengths = tuple(sorted(labels, key=lambda lab: order.get(lab, 0)))
            first = ok.drop_duplicates("sample_id")
            cut_ids = {i for i, _ in cut_answers(first)}
            unfinished = first.get("thinking_unfinished", pd.Series(dtype=bool))
            n_task = Counter(s.task for s in answered)
            n_task_cut = Counter(s.task for s in answered if s.id in cut_ids)
            tasks_built = tuple(dict.fromkeys(s.task for s in mine))
            tasks_answered = tuple(t for t in tasks_built if n_task[t])
            out.append(
                Coverage(
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
                    cut_at_budget=len(cut_ids),
                    thinking_unfinished=int(unfinished.fillna(False).astype(bool).sum()),
                    cut_by_task={t: [n_task_cut[t], n_task[t]] for t in tasks_answered},
                    demo=demo,
                    param_gaps=gaps,
                    limit=limit,
                    grid=grid,
                )
            )
    return out


def _responses(run: Any) -> pd.DataFrame | None:  # None without samples or responses
    from lceval.report.reporting import responses_frame  # pulls matplotlib

    try:
        return responses_frame(run.run_id, Path(run.path).parent)
    except LcevalError:
        return None


def run_coverage(run: Any) -> list[Coverage]:
    """:func:`coverage` of a run folder (``lceval.core.io.RunDir``); empty without responses."""
    frame = _responses(run)
    return (
        [] if frame is None else coverage(run.read_samples(), frame, read_json_object(run.run_json))
    )


def cut_answers(responses: pd.DataFrame) -> set[tuple[str, str]]:
    """``(sample_id, model)`` of ``responses_frame`` rows the budget ended (``finish_reason ==
    "length"`` or thinking that never ended)."""
    cut = responses["finish_reason"].astype(str) == "length"
    if "thinking_unfinished" in responses:
        cut |= responses["thinking_unfinished"].fillna(False).astype(bool)
    part = responses[cut]
    return set(zip(part["sample_id"].astype(str), part["model"].astype(str), strict=True))


def run_cut_answers(run: Any) -> set[tuple[str, str]]:
    """:func:`cut_answers` of a run folder; empty without responses."""
    frame = _responses(run)
    return set() if frame is None else cut_answers(frame)


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
    """Per (model, benchmark, task[, variant]) of score rows: ``mean`` (0..1), ``n`` rows,
    ``n_nan`` (value NaN), ``cut`` (answers the budget ended), ``mean_finished`` (NaN when none
    finished); ``variants`` (sample
    id -> :func:`variant_of`) splits baselines off (the model's own setting as ``-``)."""
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
            "n_nan": g["value"].size() - g["value"].count(),
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
