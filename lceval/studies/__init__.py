"""Cross-paper studies: experiments that span benchmarks and runs.

- :mod:`lceval.studies.ntk`: L-Eval's NTK base sweep (retrieval against reasoning as the RoPE
  base grows), over L-Eval and RULER samples, one run per base.
- :mod:`lceval.studies.ruler_correlation`: the LongGenBench paper's correlation between RULER and
  LongGenBench scores at equal lengths.

A study reaches benchmarks through :mod:`lceval.registry` (``Benchmark.functions``,
``registry.resources``), never by module path, and sits beside them, below the run stages: it
plans runs and reads their folders, and the run wing answers them (:func:`lceval.run.run_sweep`)
and the report wing adds their pages (:func:`lceval.report.report_sweep`). The import-linter
contracts in pyproject.toml hold both rules.
"""
