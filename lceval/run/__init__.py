"""The run wing: the stages that make a run folder's data, one module per stage, called by the CLI
verbs and the notebooks alike.

- :mod:`lceval.run.building`: ``build``, ``build_suite`` (samples.jsonl, contexts.jsonl, run.json);
- :mod:`lceval.run.inference`: ``infer`` (responses.jsonl, in-process or on Ray replicas);
- :mod:`lceval.run.scoring`: ``score``, ``load_samples``, ``score_files`` (scores.parquet);
- :mod:`lceval.run.sweep`: ``run_sweep`` (a study's grid: one run per point, L-Eval's NTK sweep);
- :mod:`lceval.run.plan`: ``lceval plan`` (sizes, prefix sharing, GPU-hour estimates);
- :mod:`lceval.run.config`: the declared config of every verb (CLI flags, params files, JSON
  Schemas).

The report stage is the report wing's (:func:`lceval.report.report`), which reads what these
write. ``lceval.run.infer(...)`` and the other stage functions are imported on first use, so
``import lceval.run`` stays light (the CLI's startup).
"""

from __future__ import annotations

import importlib
from typing import Any

_STAGES = {
    "build": "building",
    "build_suite": "building",
    "infer": "inference",
    "select_samples": "inference",
    "score": "scoring",
    "load_samples": "scoring",
    "score_files": "scoring",
    "run_sweep": "sweep",
}

__all__ = sorted(_STAGES)


def __getattr__(name: str) -> Any:
    """The stage functions, imported from their module on first use (PEP 562)."""
    if name in _STAGES:
        return getattr(importlib.import_module(f"lceval.run.{_STAGES[name]}"), name)
    raise AttributeError(f"module 'lceval.run' has no attribute {name!r}")
