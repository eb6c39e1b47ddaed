"""One folder per paper; each defines ``BENCHMARK`` (see :mod:`lceval.benchmarks.base`)."""
