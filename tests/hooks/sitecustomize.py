"""Test hook for ``tests/test_docs.py``: every inference answers at most ``$LCEVAL_TEST_LIMIT``
samples, so the quickstart's commands (docs/quickstart.md) run verbatim in CI without a
test-only branch in lceval.

The docs test puts this folder first on ``PYTHONPATH`` for its subprocesses (``lceval ...`` and
the notebook kernels ``lceval run`` starts); Python's ``site`` imports ``sitecustomize`` at
start-up, which installs an import hook: when ``lceval.run.inference`` is executed, its
``run_infer`` (the one inference path behind ``lceval infer``, ``lceval.infer`` and the notebooks)
is wrapped so that its config's ``limit`` (per task) is capped, and the samples it selects are cut
to the first ``$LCEVAL_TEST_LIMIT`` in all. Nothing else is imported here.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import sys
from types import ModuleType
from typing import Any

TARGET = "lceval.run.inference"
ENV = "LCEVAL_TEST_LIMIT"


def _cap(limit: int | None, most: int) -> int:
    return most if limit is None else min(limit, most)


def _wrap(module: ModuleType, most: int) -> None:
    run_infer = module.run_infer  # every entry point's path (lceval.run.infer calls it)

    @functools.wraps(run_infer)
    def capped(config: Any, *args: Any, **kwargs: Any) -> Any:
        config = config.model_copy(update={"limit": _cap(config.limit, most)})
        return run_infer(config, *args, **kwargs)

    vars(module)["run_infer"] = capped  # what lceval.run.infer and the CLI call
    select = module.select_samples

    @functools.wraps(select)
    def first(*args: Any, **kwargs: Any) -> Any:  # limit is per task: the first `most` in all
        return select(*args, **kwargs)[:most]

    vars(module)["select_samples"] = first  # what run_infer calls


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, most: int) -> None:
        self.inner, self.most = inner, most

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _wrap(module, self.most)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, most: int) -> None:
        self.most = most

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self.most)
        return spec


def install() -> None:
    """Install the hook when ``$LCEVAL_TEST_LIMIT`` holds a positive integer (else stop: a
    typo must not run the whole benchmark)."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return
    if not raw.isdigit() or int(raw) < 1:
        sys.exit(f"{ENV} must be a positive integer, got {raw!r}")
    sys.meta_path.insert(0, _Finder(int(raw)))


install()
