"""vLLM facts read without importing vLLM (importing ``vllm.engine.arg_utils`` took 18 s on this
2-core machine under load; ~9 s idle)."""

from __future__ import annotations

import ast
import importlib.util
import os


def engine_arg_names() -> list[str]:
    """vLLM's ``EngineArgs`` fields in source order (empty without vLLM), read with :mod:`ast`
    from ``vllm/engine/arg_utils.py`` in ~25 ms; ``tests/cli/test_fail_fast.py`` checks it gives
    exactly ``dataclasses.fields(EngineArgs)``.

    Waits for: a list of engine arguments vLLM publishes without importing torch (the public
    equivalent, ``dataclasses.fields(vllm.EngineArgs)``, costs the whole import).
    """
    spec = importlib.util.find_spec("vllm")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            with open(os.path.join(folder, "engine", "arg_utils.py"), encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "EngineArgs":
                return [
                    s.target.id
                    for s in node.body
                    if isinstance(s, ast.AnnAssign)
                    and isinstance(s.target, ast.Name)
                    and "ClassVar" not in ast.unparse(s.annotation)
                ]
    return []
