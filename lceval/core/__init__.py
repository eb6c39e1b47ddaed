"""The core every other part of lceval reads, in its layer order (bottom up; pyproject's
import-linter contract ``core`` checks it):

- :mod:`~lceval.core.errors`: LcevalError and one-line messages;
- :mod:`~lceval.core.records`: Context, Sample, Gold, Response, Judgement, Score, RunMeta;
- :mod:`~lceval.core.io` (run folders, atomic writes, JSONL, scores.parquet) and
  :mod:`~lceval.core.console` (log, verbose, engine output to logs/);
- :mod:`~lceval.core.corpora`: shipped text sources with provenance;
- :mod:`~lceval.core.store` (responses.jsonl, resumed by key), :mod:`~lceval.core.tokens`
  (offline tiktoken encodings) and :mod:`~lceval.core.progress` (bars and logs/progress.jsonl).

Nothing is imported here: ``import lceval.core.records`` loads the records alone.
"""
