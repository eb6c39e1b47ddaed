"""What a model reads in place of a sample's long context: the ``-o context`` modes
(:mod:`lceval.contexts.modes`: ``full``, ``none``, ``bm25:K``, ``dense:K``, each mode's view of
the samples) and the chunk retrieval they and L-Eval's retrieval baselines use
(:mod:`lceval.contexts.retrieval`: BM25 and dense ranking). It builds contexts and never meets a
model, so it sits beside models and metrics, on the core alone."""
