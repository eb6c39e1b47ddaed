"""What a model reads in place of a sample's long context: the ``-o context`` modes
(:mod:`~lceval.contexts.modes`) and the BM25 / dense chunk retrieval they and L-Eval's retrieval
baselines use (:mod:`~lceval.contexts.retrieval`); on the core alone, beside models and metrics."""
