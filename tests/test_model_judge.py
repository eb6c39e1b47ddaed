"""lceval.models.judge.ModelJudge (the model behind the LLM judges) and JudgeModel (their shared
options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lceval.core.errors import LcevalError
from lceval.core.records import Context, Response, Sample
from lceval.core.store import ResponseStore
from lceval.models.base import Backend, GenerationConfig
from lceval.models.judge import JudgeModel, ModelJudge


class Scripted(Backend):
    """A backend answering ``echo: <instruction>``, recording what it saw and its closes."""

    name = "scripted-judge"

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.configs: list = []
        self.contexts: list = []
        self.closed = 0

    def generate(self, samples, contexts, config):
        self.seen.extend(s.id for s in samples)
        self.configs.append(config)
        self.contexts.append(dict(contexts))
        return [
            Response(
                sample_id=s.id,
                model=self.name,
                text=f"echo: {s.instruction}",
                config_hash=config.hash(),
            )
            for s in samples
        ]

    def info(self):
        return {"backend": "scripted"}

    def close(self):
        self.closed += 1


class Loader:
    """A ``load`` that counts its calls and hands out one Scripted backend."""

    def __init__(self) -> None:
        self.backend = Scripted()
        self.calls = 0

    def __call__(self) -> Scripted:
        self.calls += 1
        return self.backend


def _questions(*ids: str) -> list[Sample]:
    return [
        Sample(id=i, benchmark="test", task="judge", instruction=f"judge {i}", max_new_tokens=16)
        for i in ids
    ]


def _judge(path: Path, load: Loader, *args, **kwargs) -> ModelJudge:
    return ModelJudge(load, ResponseStore(path / "judge.jsonl"), *args, **kwargs)


def test_engine_loads_once_at_the_first_question(tmp_path: Path) -> None:
    load = Loader()
    judge = _judge(tmp_path, load, label="my-judge")
    assert judge.engine is None and judge.name == "my-judge" and load.calls == 0
    assert judge.ask([], "judge test") == {}  # nothing to ask: nothing loads
    assert load.calls == 0 and judge.engine is None
    judge.ask(_questions("a", "b"), "judge test")
    judge.ask(_questions("c"), "judge test")
    assert load.calls == 1 and judge.engine is load.backend
    assert judge.name == "scripted-judge"
    assert load.backend.seen == ["a", "b", "c"]


def test_answers_are_keyed_by_sample_id(tmp_path: Path) -> None:
    load = Loader()
    judge = _judge(tmp_path, load, batch_size=2)
    got = judge.ask(_questions("z", "a", "m"), "judge test")
    assert set(got) == {"z", "a", "m"}
    assert all(r.sample_id == k and r.text == f"echo: judge {k}" for k, r in got.items())


def test_generation_settings_and_contexts_reach_the_backend(tmp_path: Path) -> None:
    load = Loader()
    judge = _judge(tmp_path, load, GenerationConfig(max_new_tokens=7, temperature=0.5))
    ctx = Context("c1", "a block", 2, "o200k_base")
    q = Sample(id="q", benchmark="test", task="judge", instruction="?", context_id="c1")
    judge.ask([q], "judge test", {"c1": ctx})
    (config,) = load.backend.configs
    assert config.max_new_tokens == 7 and config.temperature == 0.5
    assert load.backend.contexts == [{"c1": ctx}]


def test_close_is_idempotent(tmp_path: Path) -> None:
    load = Loader()
    judge = _judge(tmp_path, load)
    judge.close()  # never loaded: nothing to close
    assert load.calls == 0
    judge.ask(_questions("a"), "judge test")
    judge.close()
    judge.close()
    assert load.backend.closed == 1 and judge.engine is None


def test_resume_skips_answered_questions(tmp_path: Path) -> None:
    first = Loader()
    judge = _judge(tmp_path, first)
    before = judge.ask(_questions("a", "b"), "judge test")
    judge.close()
    again = Loader()
    judge2 = _judge(tmp_path, again)  # a fresh store on the same file, as after a restart
    got = judge2.ask(_questions("a", "b", "c"), "judge test")
    assert again.backend.seen == ["c"]
    assert set(got) == {"a", "b", "c"}
    assert got["a"].text == before["a"].text and got["b"].text == before["b"].text


@pytest.mark.parametrize(
    ("options", "want"),
    [
        ({"batch_size": 0}, "batch_size must be >= 1, got 0 (int)"),
        ({"batch_size": True}, "batch_size must be an integer, got True (bool)"),
        ({"batch_size": "3"}, "batch_size must be an integer, got '3' (str)"),
        ({"model": 3}, "model must be a string, got 3 (int)"),
        ({"model": ""}, "model must not be empty, got '' (str)"),
        ({"max_new_tokens": -5}, "max_new_tokens must be >= 1, got -5 (int)"),
        ({"backend_options": [1]}, "backend_options must be a mapping, got [1] (list)"),
        (
            {"backend": "tgi"},
            "backend: unknown backend 'tgi'; choose one of hf, vllm, openai or auto",
        ),
        ({"colour": 1}, "unknown parameter 'colour'"),
    ],
)
def test_judge_model_names_scorer_and_option(options, want) -> None:
    with pytest.raises(LcevalError) as err:
        JudgeModel.parse("demo:judge", options)
    assert str(err.value).startswith("scorer demo:judge: ") and want in str(err.value)
    assert "\n" not in str(err.value)


def test_judge_model_is_shared_by_the_three_llm_judges() -> None:
    """One declared section: each judge's options subclass JudgeModel, and the scorer's option
    docs (``lceval list``) and checks come from that type."""
    from lceval.benchmarks import registry

    for name in ("longgenbench:llm", "leval:judge", "cifbench:judge"):
        _, spec = registry.find_scorer(name)
        assert spec.option_type is not None and issubclass(spec.option_type, JudgeModel)
        assert {"backend", "model", "backend_options", "max_new_tokens", "batch_size"} <= set(
            spec.options
        )
        assert "(default {})" in spec.options["backend_options"]
        with pytest.raises(LcevalError, match=f"scorer {name}: batch_size must be >= 1, got 0"):
            spec.check_options({"batch_size": 0})
        spec.check_options({"model": "org/m", "batch_size": 2})
    opts = JudgeModel.parse("demo:judge", {"model": "org/m", "backend_options": {"device": "cpu"}})
    assert opts.label == "org/m" and opts.batch_size == 8 and opts.backend == "hf"


def test_loader_checks_backend_options_before_loading() -> None:
    with pytest.raises(LcevalError, match="no option 'colour'"):
        ModelJudge.loader("hf", None, {"colour": 1})
    assert callable(ModelJudge.loader("hf", None, {"device": "cpu"}))  # nothing loads yet


def test_judge_options_fill_a_judge_scorer_from_the_judge_params() -> None:
    from lceval.benchmarks.registry import judge_options

    judge = {
        "judge_backend": "openai",
        "judge_model": "served-judge",
        "judge_backend_options": {"base_url": "http://localhost:8000/v1"},
        "judge_max_new_tokens": None,
    }
    got = judge_options("longgenbench:llm", {"few_shot": True}, **judge)
    assert got == {
        "few_shot": True,
        "backend": "openai",
        "model": "served-judge",
        "backend_options": {"base_url": "http://localhost:8000/v1"},
    }
    # the offline scorer has no judge: its options stay as they are
    assert judge_options("longgenbench", {}, **judge) == {}
    assert judge_options(None, {"x": 1}, **judge) == {"x": 1}
    leval = judge_options("leval:judge", {"baseline": None}, judge_max_new_tokens=8)
    assert leval == {"baseline": None, "max_new_tokens": 8}
    same = judge_options("cifbench:judge", {"model": "m"}, judge_model="m")
    assert same == {"model": "m"}
    with pytest.raises(LcevalError, match="judge_model .* and scorer_options.model .* disagree"):
        judge_options("cifbench:judge", {"model": "a"}, judge_model="b")
    with pytest.raises(LcevalError, match="judge: unknown parameter 'judge_modle'; did you mean"):
        judge_options("cifbench:judge", {}, judge_modle="b")
    with pytest.raises(LcevalError, match="unknown scorer"):
        judge_options("nope:judge", {}, judge_model="b")


def test_longgenbench_judge_takes_its_budget(tmp_path: Path) -> None:
    from lceval.benchmarks.longgenbench.judge import llm_judge
    from lceval.core.io import RunDir

    run = RunDir("r", tmp_path).create()
    judge = llm_judge(run, backend="hf", max_new_tokens=3)
    assert judge.asker.config.max_new_tokens == 3
    assert llm_judge(run, backend="hf", few_shot=True).asker.config.max_new_tokens == 160
    with pytest.raises(LcevalError, match="max_new_tokens"):
        llm_judge(run, backend="hf", max_new_tokens=0)


@pytest.mark.parametrize(
    ("module", "scorer_options"),
    [
        ("lceval.benchmarks.longgenbench.judge:llm_judge", {}),
        ("lceval.benchmarks.cifbench.judge:model_judge", {}),
    ],
)
def test_a_judges_stop_strings_and_thinking_budget_reach_its_engine(
    tmp_path: Path, module: str, scorer_options: dict
) -> None:
    """Issue 48: a judge scorer's options take the generation config (``stop``,
    ``max_thinking_tokens``, ``temperature``): the config its engine receives for each question
    holds them, beside the judge's own answer budget."""
    import importlib

    from lceval.core.io import RunDir

    path, _, name = module.partition(":")
    make = getattr(importlib.import_module(path), name)
    run = RunDir("r", tmp_path).create()
    options = {"stop": ["\n\n", "###"], "max_thinking_tokens": 64, "temperature": 0.5}
    judge = make(run, **scorer_options, **options, max_new_tokens=7)
    load = Loader()
    judge.asker.load = load  # the scripted engine in place of the hf model
    judge.asker.ask(_questions("a"), "judge test")
    (config,) = load.backend.configs
    assert (config.stop, config.max_thinking_tokens) == (["\n\n", "###"], 64)
    assert (config.temperature, config.max_new_tokens) == (0.5, 7)
    assert config.stops(_questions("a")[0])[-2:] == ("\n\n", "###")
    # unset, the judge asks as before: its stored answers keep their config hash
    plain = make(run, **scorer_options, max_new_tokens=7).asker.config
    assert plain.hash() == GenerationConfig(max_new_tokens=7).hash()
