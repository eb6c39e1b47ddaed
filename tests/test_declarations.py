"""One setting, one place (issue 48): outside lceval/benchmarks/, ``max_new_tokens`` is declared
(a class field or a function parameter) twice, the generation config's cap
(``lceval.params.Budget``) and a sample's own budget (``Sample.max_new_tokens``), and
``temperature`` once (``lceval.params.Generation``), as are the stop strings (beside a sample's own)
and the thinking budget; every ``Field`` default of the declared
configs is a keyword, which ``dataclass_transform`` (a user's mypy, pyright) needs to see it."""

from __future__ import annotations

import ast
from pathlib import Path

import lceval

PACKAGE = Path(lceval.__file__).resolve().parent


def _declarations(name: str) -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "benchmarks":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
                out.append(where)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                a = node.args
                out += [where for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg == name]
    return out


def test_one_generation_setting_is_declared_once():
    assert [d.split(":")[0] for d in _declarations("max_new_tokens")] == [
        "core/records.py",  # Sample.max_new_tokens: the sample's own budget
        "params.py",  # Budget.max_new_tokens: the cap
    ]
    assert [d.split(":")[0] for d in _declarations("temperature")] == ["params.py"]


def test_stop_strings_and_the_thinking_budget_are_declared_once():
    """The thinking budget is the generation config's alone (no backend option, engine field or
    plan parameter); stop strings are the generation config's and the sample's own."""
    assert [d.split(":")[0] for d in _declarations("max_thinking_tokens")] == ["params.py"]
    assert [d.split(":")[0] for d in _declarations("stop")] == [
        "core/records.py",  # Sample.stop: the sample's own, what its builder wrote
        "params.py",  # Generation.stop: added to every sample's
    ]


def test_field_defaults_are_keywords():
    for name in ("params.py", "run/config.py"):
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        positional = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Field" and n.args
        ]
        assert positional == [], f"{name}: Field(default=...) at lines {positional}"


def test_verb_configs_inherit_only_shared_sections():
    """Each verb's config (a command's, or a Python call's keywords) is one class whose bases are
    shared sections (lceval.params, lceval.run.config): never another verb's config, so a reader
    finds a verb's fields one level up."""
    from pydantic import BaseModel

    from lceval.run import config

    verbs = {*config.VERBS.values(), config.InferCall, config.EvaluateCall, config.CompareCall}
    for verb in verbs:
        above = [c.__name__ for c in verb.__mro__[1:] if c in verbs]
        assert above == [], f"{verb.__name__} inherits from verb config(s) {above}"
        for base in verb.__bases__:  # one level: the bases themselves are sections
            assert issubclass(base, BaseModel) and base.__module__ in (
                "lceval.params",
                "lceval.run.config",
            ), f"{verb.__name__}: base {base.__name__} is not a shared section"


def _fields(name: str) -> list[str]:
    """Where a class outside lceval/benchmarks/ declares the setting ``name``: a field with a
    default (a record's field, as ``JudgeCalls.backend``, says what was used; a function's
    ``backend`` parameter is an engine)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "benchmarks":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                out += [
                    f"{path.relative_to(PACKAGE)}:{node.name}"
                    for x in node.body
                    if isinstance(x, ast.AnnAssign)
                    and getattr(x.target, "id", None) == name
                    and x.value is not None
                ]
    return out


def test_the_engine_choice_is_declared_once():
    """backend and backend_options are lceval.params.Engine's alone: the inference section and
    the judge's options inherit them (the judge overriding the backend's default only)."""
    from lceval.params import Engine, InferenceSection, Judge, JudgeOptions

    assert _fields("backend") == [
        "models/specs.py:ModelSpec",  # a model entry's own backend: {model, backend, options}
        "params.py:Engine",
    ]
    assert _fields("backend_options") == ["params.py:Engine"]
    assert InferenceSection().backend == "auto" and JudgeOptions().backend == "hf"
    assert Judge().judge_backend == "hf"  # a notebook's judge_backend: the judge's default
    for section in (InferenceSection, JudgeOptions):
        for key in ("backend", "backend_options"):
            got, declared = section.model_fields[key], Engine.model_fields[key]
            assert (got.description, got.metadata) == (declared.description, declared.metadata)
