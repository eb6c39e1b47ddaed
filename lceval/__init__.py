"""lceval: evaluate how language models follow instructions over long contexts and long outputs.

Reproduces LIFBench/LIFEval, LongGenBench (+ RULER), ManyIFEval, L-Eval and CIF-Bench.
See README.md and the documentation site (docs/, `make docs`).

The Python face (:mod:`lceval.api`), typed for any type checker (each the function the
``lceval`` command's verb calls)::

    import lceval

    result = lceval.evaluate("lifbench", model="embedded", limit=4)  # lceval eval
    result.headlines, result.report                                  # the table, index.html

    run = lceval.build("my-run", "lifbench", {"lengths": ["4k"]})   # lceval build
    lceval.infer("my-run", model="embedded")                          # lceval infer
    lceval.score("my-run")                                            # lceval score
    lceval.write_report("my-run")                                     # lceval report
    lceval.compare("run-a", "run-b")                                  # lceval compare (paired)
    lceval.RunDir("my-run").read_scores()                             # a run folder's files

Importing lceval loads neither pandas nor an engine: they are imported when a stage runs.
"""

# first: a Ctrl-C while the lceval command imports the rest is one line (lceval.core.interrupt)
from lceval.core import interrupt as _interrupt  # noqa: F401

# isort: split
from lceval.api import EvalResult, build, compare, evaluate, infer, score, write_report
from lceval.core.errors import LcevalError
from lceval.core.io import RunDir
from lceval.core.records import Context, Response, RunMeta, Sample, Score

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
    "score",
    "write_report",
]
