"""The run stages over a study's grid: every point of L-Eval's NTK base sweep
(:mod:`lceval.benchmarks.leval.ntk`) built, answered and scored, one run folder per RoPE base."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lceval.run.building import build_suite
from lceval.run.inference import infer
from lceval.run.scoring import score

if TYPE_CHECKING:
    from lceval.benchmarks.leval.ntk import Sweep
    from lceval.models.specs import ModelSpec


def run_sweep(
    sweep: Sweep,
    spec: ModelSpec,
    *,
    batch_size: int | None = None,
    max_new_tokens: int | None = None,
    progress: bool = False,
) -> None:
    """Build, answer and score every point of the sweep, one run folder per base: the same
    samples at every point (a rebuild that changes nothing keeps earlier answers), pending samples
    answered by ``spec`` with the point's RoPE options
    (:meth:`lceval.benchmarks.leval.ntk.SweepPoint.backend_options`),
    scores from the benchmarks' default scorers. Rerunning resumes.

    Args:
        sweep: :func:`lceval.benchmarks.leval.ntk.plan_sweep`'s plan.
        spec: the one model of the sweep.
        batch_size, max_new_tokens: as :func:`lceval.run.infer` takes them.

    Raises:
        LcevalError: a point's build, inference or scoring fails (the message names it).
    """
    for point in sweep.points:
        build_suite(point.name, sweep.parts, root=sweep.root)
        infer(
            point.name,
            models=[spec.with_options(point.backend_options(spec.options))],
            root=sweep.root,
            batch_size=batch_size,
            max_new_tokens=max_new_tokens,
            progress=progress,
        )
        score(point.name, root=sweep.root, progress=progress)
