"""``lceval build``: a benchmark's samples built into a run folder (:func:`lceval.run.build`)."""

from __future__ import annotations

import lceval.run
from lceval.cli.common import next_steps
from lceval.params import load_params
from lceval.run.config import BuildConfig


def handle(cfg: BuildConfig, outputs: str | None) -> int:
    """Build with the params file and ``-p`` overrides over it; print the sample count and the
    next steps (plan, infer).

    Raises:
        LcevalError: an unknown benchmark, a bad params file or override, a run that has
            responses (without ``--force``).
    """
    params = load_params(cfg.params) if cfg.params else {}
    params.update(cfg.param)
    run = lceval.run.build(
        cfg.run_id, cfg.benchmark, params, root=outputs, seed=cfg.seed, force=cfg.force
    )
    n = sum(1 for _ in open(run.samples, encoding="utf-8"))
    print(f"built {n} samples into {run.path}")
    print(
        next_steps(cfg.run_id, outputs, "plan", "its size and GPU estimate", "infer", "answer it")
    )
    return 0
