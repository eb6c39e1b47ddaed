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
write. The stage functions are imported here (typed: mypy checks their calls); their modules import
pandas and the engines inside the functions that need them, so ``import lceval.run`` stays light
(the CLI's startup).
"""

from lceval.run.building import build, build_suite
from lceval.run.inference import infer, select_samples
from lceval.run.scoring import load_samples, score, score_files
from lceval.run.sweep import run_sweep

__all__ = [
    "build",
    "build_suite",
    "infer",
    "load_samples",
    "run_sweep",
    "score",
    "score_files",
    "select_samples",
]
