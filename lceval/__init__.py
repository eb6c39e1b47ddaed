"""lceval: evaluate how language models follow instructions over long contexts and long outputs.

Reproduces LIFBench/LIFEval, LongGenBench (+ RULER), ManyIFEval, L-Eval and CIF-Bench.
See README.md and the documentation site (docs/, `make docs`).

The Python face, typed (each the function the ``lceval`` command's verb calls)::

    import lceval

    result = lceval.evaluate("lifbench", model="embedded", limit=4)  # lceval eval
    result.headlines, result.report                                  # the table, index.html

    run = lceval.build("my-run", "lifbench", {"lengths": ["4k"]})   # lceval build
    lceval.infer("my-run", model="embedded")                          # lceval infer
    lceval.score("my-run")                                            # lceval score
    lceval.report("my-run")                                           # lceval report
    lceval.compare("run-a", "run-b")                                  # lceval compare (paired)
    lceval.RunDir("my-run").read_scores()                             # a run folder's files

Importing lceval loads neither pandas nor an engine: they are imported when a stage runs.
"""

from typing import TYPE_CHECKING

from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Context, Response, RunMeta, Sample, Score
from lceval.report.compare import compare_runs as compare
from lceval.report.evaluation import EvalResult, evaluate
from lceval.run.building import build
from lceval.run.inference import infer
from lceval.run.scoring import score

if TYPE_CHECKING:
    from lceval.report.stage import report
else:  # the package lceval.report, callable as the stage (its notebooks' lceval.report.report)
    import lceval.report as report

__version__ = "0.1.0"
__all__ = [
    "Context",
    "EvalResult",
    "LcevalError",
    "Response",
    "RunDir",
    "RunMeta",
    "Sample",
    "Score",
    "__version__",
    "build",
    "compare",
    "evaluate",
    "infer",
    "report",
    "score",
]
