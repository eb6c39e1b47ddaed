"""The run stages over a study's grid: every point of L-Eval's NTK base sweep
(:mod:`lceval.benchmarks.leval.ntk`) built, answered and scored, one run folder per RoPE base."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lceval.run.building import build_suite
from lceval.run.config import InferConfig
from lceval.run.inference import run_infer
from lceval.run.scoring import score

if TYPE_CHECKING:
    from lceval.benchmarks.leval.ntk import Sweep
    from lceval.models.specs import ModelSpec


def run_sweep(
    sweep: Sweep, spec: ModelSpec, config: InferConfig | None = None, *, progress: bool = False
) -> None:
    """Build, answer and score every point of the sweep, one run folder per base: the same
    samples at every point (a rebuild that changes nothing keeps earlier answers), pending samples
    answered by ``spec`` with the point's RoPE options
    (:meth:`lceval.benchmarks.leval.ntk.SweepPoint.backend_options`) and ``config``'s settings
    (batch size, ``max_new_tokens``, ...; its model and run id are the sweep's), scores from the
    benchmarks' default scorers. Rerunning resumes.

    Raises:
        LcevalError: a point's build, inference or scoring fails (the message names it).
    """
    given = config.model_dump(exclude_unset=True) if config is not None else {}
    for point in sweep.points:
        build_suite(point.name, sweep.parts, root=sweep.root)
        models = [spec.with_options(point.backend_options(spec.options))]
        cfg = InferConfig.model_validate(
            {**given, "run_id": point.name, "model": None, "models": models}
        )
        run_infer(cfg, root=sweep.root, progress=progress)
        score(point.name, root=sweep.root, progress=progress)
