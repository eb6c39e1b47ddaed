"""The run wing: the stages that make a run folder's data (``building``: build, ``inference``:
infer, ``scoring``: score, ``sweep``: a study's grid), ``plan`` and ``cost`` (a run's size, GPU
time and dollars) and ``config`` (every verb's declared config), called by the CLI verbs and the
notebooks alike. The report stage is :func:`lceval.report.write_report`. Pandas and the engines load
inside the functions that need them: ``import lceval.run`` stays light (the CLI's startup).
"""

from lceval.run.building import build, build_suite
from lceval.run.config import InferConfig
from lceval.run.inference import infer, run_infer, select_samples
from lceval.run.scoring import load_samples, score, score_files
from lceval.run.sweep import run_sweep

__all__ = [
    "InferConfig",
    "build",
    "build_suite",
    "infer",
    "load_samples",
    "run_infer",
    "run_sweep",
    "score",
    "score_files",
    "select_samples",
]
