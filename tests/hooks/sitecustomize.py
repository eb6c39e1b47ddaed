"""Test hook for ``tests/test_docs.py``: every inference answers at most ``$LCEVAL_TEST_LIMIT``
samples, so the quickstart's commands (docs/quickstart.md) run verbatim in CI without a
test-only branch in lceval.

The docs test puts this folder first on ``PYTHONPATH`` for its subprocesses (``lceval ...`` and
the notebook kernels ``lceval run`` starts); Python's ``site`` imports ``sitecustomize`` at
start-up, which installs an import hook: when ``lceval.run.inference`` is executed, its ``infer``
(the one inference entry behind ``lceval infer``, ``lceval.infer`` and the notebooks) is wrapped
so that ``limit`` (a keyword or a ``config``'s field) is capped. Nothing else is imported here.
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
    infer = module.infer

    @functools.wraps(infer)
    def capped(*args: Any, config: Any = None, limit: int | None = None, **kwargs: Any) -> Any:
        if config is not None:
            config = config.model_copy(update={"limit": _cap(config.limit, most)})
        else:
            limit = _cap(limit, most)
        return infer(*args, config=config, limit=limit, **kwargs)

    vars(module)["infer"] = capped  # what lceval.run (and lceval) import from it


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
