"""The core every other part of lceval reads, in its layer order (pyproject's import-linter
contract ``core``): errors <- records <- io, console <- corpora <- store, tokens, progress.
Nothing is imported here: ``import lceval.core.records`` loads the records alone."""
