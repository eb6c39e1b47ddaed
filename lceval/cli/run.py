"""``lceval run``: notebooks executed with papermill, a pipeline YAML (its steps in order, every
step's params and ``-p`` overrides checked before the first runs) or one notebook
(:mod:`lceval.cli.notebooks`)."""

from __future__ import annotations

import os

from lceval.cli import notebooks
from lceval.core.errors import LcevalError
from lceval.models.replicas import RAY_ADDRESS_ENV, check_address
from lceval.params import load_params
from lceval.run.config import RunConfig


def handle(cfg: RunConfig, outputs: str | None) -> int:
    """Run the pipeline or notebook; print each executed notebook's path, then the
    report/index.html of every run folder where one was written (a pipeline's steps may write
    several runs).

    Raises:
        LcevalError: ``--ray-address`` where no Ray cluster answers, ``--params`` with a
            pipeline, a notebook without ``--run-id``, a bad override or params file (before
            any notebook runs), a failed notebook.
    """
    if cfg.ray_address:  # the notebooks' lceval.run.infer calls read it
        check_address(cfg.ray_address)  # a dead address: one line now, not after step 01
        os.environ[RAY_ADDRESS_ENV] = cfg.ray_address
    target = cfg.target
    if str(target).endswith((".yaml", ".yml")):
        if cfg.params:
            raise LcevalError("--params is for a single notebook; a pipeline names its own")
        paths = notebooks.run_pipeline(
            target, cfg.run_id, outputs_root=outputs, overrides=cfg.param
        )
    else:
        if not cfg.run_id:
            raise LcevalError("lceval run NOTEBOOK needs --run-id")
        params = load_params(cfg.params) if cfg.params else {}
        paths = [
            notebooks.run_notebook(
                target, cfg.run_id, {**params, **cfg.param}, outputs_root=outputs, check=True
            )
        ]
    for p in paths:
        print(f"executed {p}")
    # every run folder the notebooks wrote a report in (a pipeline's steps may name several)
    for run in dict.fromkeys(p.parent.parent for p in paths):
        index = run / "report" / "index.html"
        if index.exists():
            print(f"report: {index}")
    return 0
