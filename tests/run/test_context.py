"""Issue 40 item 1: is the long context needed? ``lceval infer -o context=full,none,bm25:K``
answers each sample with, without and with a retrieved slice of its context; every benchmark
declares which modes make sense; the report pairs the modes per task with a bootstrap CI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lceval.benchmarks import registry
from lceval.cli import main
from lceval.contexts.modes import CONTEXT_KINDS, ContextMode, split_variant, variant_name, view
from lceval.core.errors import LcevalError
from lceval.core.records import Context, Sample
from lceval.report.context import context_baselines
from lceval.run.inference import context_plans


@pytest.mark.parametrize("key", sorted(registry.BENCHMARKS))
def test_every_benchmark_declares_its_context_modes(key):
    bench = registry.get(key)
    declared = bench.context
    assert declared is not None, f"{key} declares no context modes (Benchmark.context)"
    assert declared.how.strip()
    assert set(declared.refused) <= set(CONTEXT_KINDS) - {"full"}
    for kind, tasks in declared.refused_tasks.items():
        assert kind in CONTEXT_KINDS and kind != "full"
        assert set(tasks) <= set(bench.tasks), f"{key}: {kind} refuses unknown tasks"
        assert all(why.strip() for why in tasks.values())
    for task in bench.tasks:  # full always works; every refusal says why
        assert declared.why_not("full", task) is None
        for kind in ("none", "bm25", "dense"):
            why = declared.why_not(kind, task)
            assert why is None or why.strip()


def test_the_declarations_say_what_the_papers_need():
    ruler, lif = registry.get("ruler").context, registry.get("lifbench").context
    assert "needle" in ruler.why_not("none", "niah_single_1")
    assert ruler.why_not("none", "qa_1") is None  # closed-book QA is a real baseline
    assert ruler.why_not("bm25", "niah_single_1") is None
    assert ruler.why_not("bm25", "cwe") is not None  # counting over the whole context
    assert all(
        lif.why_not(k, t) is None for k in CONTEXT_KINDS for t in registry.get("lifbench").tasks
    )
    for key in ("longgenbench", "manyifeval", "cifbench"):
        assert registry.get(key).context.why_not("none", registry.get(key).tasks[0])


@pytest.mark.parametrize(
    ("text", "modes"),
    [
        ("full", ("full",)),
        ("full,none", ("full", "none")),
        (" FULL , none,full", ("full", "none")),
        ("bm25", ("bm25:4",)),
        ("bm25:2,dense:1", ("bm25:2", "dense:1")),
        (["none", "bm25:3"], ("none", "bm25:3")),
    ],
)
def test_context_option_values(text, modes):
    assert tuple(str(m) for m in ContextMode.parse_list(text)) == modes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("half", "is not a context mode"),
        ("none:2", "is not a context mode"),
        ("bm25:0", "K must be an integer >= 1"),
        ("dense:x", "K must be an integer >= 1"),
        ([], "-o context must be a non-empty list"),
        (3, "-o context must be a list, got 3"),
        (None, "-o context needs a value after '='"),  # `-o context=`
        ([3], "is not a context mode"),
    ],
)
def test_bad_context_option_is_one_line(text, message):
    with pytest.raises(LcevalError, match=message) as exc:
        ContextMode.parse_list(text)
    assert "\n" not in str(exc.value)


def test_names_carry_the_mode():
    assert variant_name("m", ContextMode("full")) == "m"
    assert variant_name("m", ContextMode("bm25", 2)) == "m@context=bm25:2"
    assert split_variant("org/m@context=none") == ("org/m", "none")
    assert split_variant("m@3fa2c1d0") == ("m@3fa2c1d0", "full")


def _doc():
    topics = ["apples grow on trees", "the harbour holds ships", "violins have four strings"]
    text = " ".join(f"Paragraph {i}: {topics[i % 3]}." for i in range(900))
    text += " The secret code is 7341 and only this sentence says so."
    return Context("c0", text, 0, "o200k_base")


def test_view_drops_or_retrieves_the_context_and_keeps_ids():
    ctx = _doc()
    samples = [
        Sample("s0", "lifbench", "LSI", "What is the secret code?", context_id="c0"),
        Sample("s1", "lifbench", "LSI", "Say hi.", context_id=None),
    ]
    same, same_ctx = view(ContextMode("full"), samples, {"c0": ctx})
    assert same == samples and same_ctx == {"c0": ctx}
    bare, bare_ctx = view(ContextMode("none"), samples, {"c0": ctx})
    assert [s.id for s in bare] == ["s0", "s1"] and bare[0].context_id is None and not bare_ctx
    got, got_ctx = view(ContextMode("bm25", 1), samples, {"c0": ctx})
    assert [s.id for s in got] == ["s0", "s1"] and got[1].context_id is None
    slice_ = got_ctx[got[0].context_id]
    assert "secret code is 7341" in slice_.text  # BM25 found the chunk the question is about
    assert 0 < slice_.n_tokens <= 1024 < len(ctx.text.split())


def test_a_needle_search_without_its_haystack_is_refused_in_one_line(capsys):
    niah = Sample("r0", "ruler", "niah_single_1", "What is the number?", context_id="c")
    qa = Sample("r1", "ruler", "qa_1", "Who wrote it?", context_id="c")
    with pytest.raises(LcevalError, match="context=none makes no sense on ruler niah_single_1"):
        context_plans([ContextMode("none")], [niah])
    plans = context_plans([ContextMode("full"), ContextMode("none")], [niah, qa])
    assert [[s.id for s in kept] for _, kept in plans] == [["r0", "r1"], ["r1"]]
    assert "its 1 sample(s) are not answered" in capsys.readouterr().err


def _scores(full, other, mode="none"):
    rows = []
    for model, values in (("m", full), (f"m@context={mode}", other)):
        for i, v in enumerate(values):
            rows.append(
                {
                    "sample_id": f"s{i}",
                    "model": model,
                    "benchmark": "lifbench",
                    "task": "LSI" if i % 2 else "OR",
                    "scorer": "lifbench",
                    "value": v,
                }
            )
    return pd.DataFrame(rows)


def test_paired_difference_per_task_says_where_the_context_is_not_needed():
    rng = np.random.default_rng(0)
    full = rng.uniform(0.6, 1.0, 40)
    table = context_baselines(_scores(full, full - 0.5), n_resamples=500)
    assert set(table["task"]) == {"LSI", "OR", "all"}
    row = table[table["task"] == "all"].iloc[0]
    assert row["mode"] == "none" and row["n"] == 40
    assert math.isclose(row["diff"], 0.5) and row["low"] <= 0.5 <= row["high"]
    assert (table["needs_context"] == "yes").all()
    same = context_baselines(_scores(full, full[::-1].copy()), n_resamples=500)
    assert (same.loc[same["task"] == "all", "needs_context"] == "no").all()
    assert context_baselines(_scores(full, full)[lambda d: d["model"] == "m"]).empty


@pytest.mark.slow
def test_one_command_answers_with_and_without_context_and_the_report_pairs_them(
    tmp_path, capsys, tiny_long_model_dir
):
    """The LIFBench smoke set: one `lceval infer -o context=full,none` answers each sample
    both ways with one engine; score and report give full - none with its CI per task."""
    root = ["--outputs", str(tmp_path)]
    smoke = ["--params", "params/01_build_data/smoke.yaml", "-p", "tasks=[LSI, LMI]"]
    assert main([*root, "build", "lifbench", *smoke, "--run-id", "r"]) == 0
    argv = [*root, "infer", "r", "--backend", "hf", "--model", str(tiny_long_model_dir)]
    argv += ["--max-new-tokens", "4"]
    assert main([*argv, "-o", "context=full,none", "-o", "device=cpu"]) == 0
    assert main([*root, "score", "r"]) == 0
    assert main([*root, "report", "r"]) == 0
    capsys.readouterr()
    table = pd.read_csv(tmp_path / "r" / "report" / "context_baselines.csv")
    name = str(tiny_long_model_dir)
    assert set(table["mode"]) == {"none"} and set(table["model"]) == {name}
    assert set(table["task"]) == {"LSI", "LMI", "all"}
    assert table.loc[table["task"] == "all", "n"].item() == 8
    assert table[["diff", "low", "high"]].notna().all().all()
    assert (table["low"] <= table["diff"]).all() and (table["diff"] <= table["high"]).all()
    index = (tmp_path / "r" / "report" / "index.html").read_text()
    assert "context_baselines" in index
    # run.json records each mode under its own name and config hash
    from lceval.core.io import RunDir

    models = RunDir("r", tmp_path).read_meta().models
    assert models[f"{name}@context=none"]["context"] == "none"
    assert models[f"{name}@context=none"]["config_hash"] != models[name]["config_hash"]


def test_a_missing_retriever_is_named_before_any_engine(monkeypatch):
    import importlib.util

    from lceval.contexts.modes import check_retrievers

    check_retrievers(ContextMode.parse_list("full,none,bm25:2,dense:1"))  # shipped: no error
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "bm25s" else real(n)
    )
    with pytest.raises(LcevalError, match=r"context=bm25 needs `pip install bm25s`"):
        check_retrievers(ContextMode.parse_list("none,bm25:2"))
    check_retrievers(ContextMode.parse_list("full,none"))  # nothing to retrieve: nothing needed
