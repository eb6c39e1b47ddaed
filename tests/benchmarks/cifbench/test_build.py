"""CIF-Bench builder: files in the official format -> samples, contexts, variants, provenance."""

from __future__ import annotations

from pathlib import Path

import pytest

import lceval.run
from lceval.benchmarks import registry
from lceval.benchmarks.cifbench.build import build_cifbench
from lceval.benchmarks.cifbench.gold import CifGold
from lceval.benchmarks.cifbench.variants import VariantSet, write_variants
from lceval.core.errors import LcevalError
from lceval.core.io import dumps, to_dict

from .conftest import write_task


def _params(demo, **kw):
    return {
        "public_dir": str(demo["public_dir"]),
        "private_dir": str(demo["private_dir"]),
        "metadata": str(demo["metadata"]),
        **kw,
    }


def test_demo_build(demo) -> None:
    res = build_cifbench(_params(demo))
    pub = [s for s in res.samples if s.scenario == "public"]
    priv = [s for s in res.samples if s.scenario == "private"]
    assert len(pub) == 4 * 3  # 4 tasks x 3 inputs x 1 instruction
    assert len(priv) == 3 * 3 * 3 + 1 * 3  # 3 inputs x 3 instructions (story: 1 input)
    s = pub[0]
    assert s.id == "cifbench/public/900_Demo_Sentiment/official/i0/d0"
    assert s.context_id == "cifbench/public/900_Demo_Sentiment/d0"
    assert s.description.startswith("判断下面这句评论") and s.instruction == ""
    assert isinstance(s.gold, CifGold) and s.gold.gold_labels == ("正面",)
    assert s.meta["categories"] == ["Sentiment", "Classification"]
    assert s.meta["source"] == "official" and s.meta["output_type_rule"] == "closed label set"
    # the five (here three) instructions of one private input share its context
    ctx = {c.id: c for c in res.contexts}
    same = [x for x in priv if x.context_id == "cifbench/private/900_Demo_Sentiment/d0"]
    assert sorted(x.expression_id for x in same) == [0, 1, 2]
    assert ctx[same[0].context_id].text == "手机用了两天就坏了，非常失望。"
    assert all(c.n_tokens > 0 for c in res.contexts)
    types = res.sources["output_types"]
    assert types["901_Demo_Figurative_Detection"][0] == "multi-label"
    assert types["903_Demo_Story_Writing"][0] == "creative"
    assert len(res.sources["public"]["files_sha256"]) == 64
    assert res.sources["metadata"]["sha256"]


def test_deterministic(demo) -> None:
    a = build_cifbench(_params(demo))
    b = build_cifbench(_params(demo))
    assert [to_dict(s) for s in a.samples] == [to_dict(s) for s in b.samples]
    assert [to_dict(c) for c in a.contexts] == [to_dict(c) for c in b.contexts]


def test_limits_and_task_selection(demo) -> None:
    res = build_cifbench(
        _params(demo, tasks=[900, "Demo_English_Translation"], n_inputs=2, n_instructions=2)
    )
    assert {s.task for s in res.samples} == {"900_Demo_Sentiment", "902_Demo_English_Translation"}
    priv = [s for s in res.samples if s.scenario == "private"]
    assert len(priv) == 2 * 2 * 2
    assert max(s.variable_id for s in res.samples) == 1


def test_public_only_and_type_from_both_splits(tmp_path: Path) -> None:
    # 3 public inputs alone do not make a closed set; with the private ones they do
    pub, priv = tmp_path / "pub", tmp_path / "priv"
    write_task(pub, 1, "T", "public", [("i", "a", "是"), ("i", "b", "否"), ("i", "c", "是")])
    write_task(
        priv, 1, "T", "private", [("j", x, y) for x, y in [("d", "否"), ("e", "是"), ("f", "否")]]
    )
    alone = build_cifbench({"public_dir": str(pub)})
    assert alone.samples[0].gold.output_type == "similarity"
    both = build_cifbench({"public_dir": str(pub), "private_dir": str(priv)})
    assert both.samples[0].gold.output_type == "multi-class"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "give public_dir and/or private_dir"),
        ({"colour": 1}, "unknown parameter 'colour'"),
        ({"n_instructions": 6}, r"n_instructions must be <= 5, got 6 \(int\)"),
        ({"n_inputs": 0}, "n_inputs must be >= 1, got 0"),
        ({"encoding": "gpt2"}, "encoding must be one of"),
        ({"instruction_sources": ["mine"]}, "instruction_sources.0. must be one of official"),
        ({"instruction_sources": ["user"]}, "needs a variants file"),
        ({"tasks": "900"}, "tasks must be a list"),
        ({"tasks": [999]}, "not in the data"),
        ({"tasks": []}, "tasks is empty"),
        ({"instruction_sources": 5}, "instruction_sources must be"),
        ({"instruction_sources": {"official": 1}}, "instruction_sources must be"),
        ({"metadata": 7}, r"metadata must be a string, got 7 \(int\)"),
        ({"variants_files": [5]}, r"variants_files\[0\] must be a string, got 5 \(int\)"),
        ({"public_dir": ["a"]}, "public_dir must be a string"),
        (
            {"gen_max_new_tokens": 32},
            "'gen_max_new_tokens' is now spelled 'variants_max_new_tokens'",
        ),
        ({"demo_dir": "x"}, "unknown parameter 'demo_dir'"),
    ],
)
def test_bad_params(demo, params, message) -> None:
    base = {} if not params else {"public_dir": str(demo["public_dir"])}
    with pytest.raises(LcevalError, match=message):
        build_cifbench({**base, **params})


def test_variants_are_a_separate_source(demo, tmp_path: Path) -> None:
    user = write_variants(
        tmp_path / "user.yaml",
        VariantSet("user", {"900": ("请判断情感。", "情感是正面还是负面？")}, "written for a test"),
    )
    gen = write_variants(
        tmp_path / "gen.yaml",
        VariantSet("generated", {"Demo_Sentiment": ("模型改写的指令。",)}, "model X"),
    )
    res = build_cifbench(
        {
            "public_dir": str(demo["public_dir"]),
            "tasks": [900],
            "variants_files": [str(user), str(gen)],
            "instruction_sources": ["official", "user", "generated"],
        }
    )
    by_source: dict[str, list] = {}
    for s in res.samples:
        by_source.setdefault(s.meta["source"], []).append(s)
    assert len(by_source["official"]) == 3
    assert len(by_source["user"]) == 2 * 3  # two instructions x three inputs
    assert len(by_source["generated"]) == 3
    assert by_source["user"][1].description == "情感是正面还是负面？"
    assert by_source["generated"][0].meta["provenance"] == "generated:gen.yaml"
    assert by_source["user"][0].id == "cifbench/public/900_Demo_Sentiment/user/i0/d0"
    # the same input shares one context across sources
    assert by_source["user"][0].context_id == by_source["official"][0].context_id
    assert {v["source"] for v in res.sources["variants"]} == {"user", "generated"}


def test_registered_and_built_by_the_pipeline(demo, tmp_path: Path) -> None:
    assert "cifbench" in registry.BENCHMARKS
    bench = registry.get("cifbench")
    assert bench.scorer().name == "cifbench" and "cifbench:judge" in bench.scorers
    run = lceval.run.build("cif", "cifbench", _params(demo, backend="hf"), root=tmp_path / "out")
    samples = lceval.run.load_samples(run)
    assert all(isinstance(s.gold, CifGold) for s in samples)
    assert run.read_meta().sources["cifbench"]["output_types"]


def test_regression_fixture_is_the_builders_output(tmp_path: Path) -> None:
    """tests/fixtures/regression/cifbench/ (scored by tests/test_scorers_hostile.py) is what
    ``make_fixture.py`` writes with the current builder; rerun that script after a builder
    change."""
    import importlib.util

    folder = Path(__file__).parents[2] / "fixtures" / "regression" / "cifbench"
    spec = importlib.util.spec_from_file_location("cif_make_fixture", folder / "make_fixture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    res = module.build_fixture(tmp_path)
    for name, records in (("samples.jsonl", res.samples), ("contexts.jsonl", res.contexts)):
        want = (folder / name).read_text(encoding="utf-8").splitlines()
        assert [dumps(r) for r in records] == want, name
    assert {s.gold.output_type for s in res.samples} == {
        "multi-class",
        "multi-label",
        "similarity",
        "creative",
    }
    assert {s.meta["source"] for s in res.samples} == {"official", "user"}


def test_demo_param_builds_without_files(demo, tmp_path: Path) -> None:
    """``demo: true`` (the smoke params file as ``lceval build cifbench --params`` reads it)."""
    import yaml

    folder = Path(__file__).parents[3] / "params" / "11_cif_bench"
    params = yaml.safe_load((folder / "smoke.yaml").read_text(encoding="utf-8"))
    res = build_cifbench(params)
    full = yaml.safe_load((folder / "full.yaml").read_text(encoding="utf-8"))
    with pytest.raises(LcevalError, match="split folder data/CIF-Bench"):
        build_cifbench(full)  # every key known; only the data is missing here
    files = build_cifbench(_params(demo, n_inputs=2, max_new_tokens=params["max_new_tokens"]))
    assert [to_dict(s) for s in res.samples] == [to_dict(s) for s in files.samples]
    assert all(c.source.startswith("lceval-demo/") for c in res.contexts)
    assert res.sources["public"]["path"] == "lceval-demo/public"
    assert "demo" in res.sources and res.samples[0].meta["categories"]
    given = build_cifbench({"demo": True, "public_dir": str(demo["public_dir"])})  # folder wins
    assert {s.scenario for s in given.samples} == {"public"}
    assert not given.samples[0].meta["categories"]  # no metadata given
    with pytest.raises(LcevalError, match="demo must be true or false"):
        build_cifbench({"demo": "yes"})
