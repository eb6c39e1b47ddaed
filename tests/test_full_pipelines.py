"""The papers' full pipelines (``params/pipelines/*_full.yaml``) can never rot.

Quick checks: each paper has its full pipeline, every step names a full params file, and every
full params file that answers samples names its models (never the embedded stand-in).

The wiring test (slow) runs every full pipeline end to end on the CPU exactly as a user would,
``lceval run params/pipelines/<paper>_full.yaml -p KEY=VALUE ...``, with ``-p`` overrides that
keep each step tiny (one sample or document per task, the shortest length, a few new tokens),
swap the papers' models for a 2-layer random Llama with SmolLM2's tokenizer (two of them, under
two names, where the notebooks take several) on the hf engine, and point the data paths at small
files written here in the official formats. Every other key comes from the full params files
themselves, so a renamed or removed parameter, a notebook that no longer takes ``models``, or a
params file a builder refuses fails here. It checks wiring, not scores.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lceval.benchmarks import registry
from lceval.cli import main
from lceval.core.io import RunDir
from lceval.models.embedded import EMBEDDED_ALIASES, EMBEDDED_HUB_ID
from lceval.models.specs import resolve_models
from tests import papers

REPO = Path(__file__).resolve().parents[1]
PIPELINES = REPO / "params" / "pipelines"
PAPERS = tuple(sorted({p for k in registry.BENCHMARKS if (p := papers.of(k).pipeline)}))
"""Full pipelines (``params/pipelines/<paper>_full.yaml``), as the benchmarks declare them
(``tests/papers.py``)."""
INFERS = tuple(
    sorted(
        p.parent.name
        for p in (REPO / "params").glob("[0-9][0-9]_*/full.yaml")
        if {"backend", "model", "models"} <= set(yaml.safe_load(p.read_text(encoding="utf-8")))
    )
)
"""Notebooks with an inference section (``backend``, ``model``, ``models``)."""


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("paper", PAPERS)
def test_each_paper_has_a_full_pipeline_of_full_params(paper):
    pipeline = _load(PIPELINES / f"{paper}_full.yaml")
    for step in pipeline["steps"]:
        assert step["params"] == f"params/{step['notebook']}/full.yaml", step
        assert (REPO / step["params"]).is_file()


@pytest.mark.parametrize("notebook", INFERS)
def test_full_params_name_their_models_and_never_the_stand_in(notebook):
    p = _load(REPO / "params" / notebook / "full.yaml")
    specs = resolve_models(p["model"], p["models"], p["backend"], p.get("backend_options"))
    for spec in specs:
        assert spec.model.strip().lower() not in EMBEDDED_ALIASES, (notebook, spec)
        assert spec.model != EMBEDDED_HUB_ID, (notebook, spec)
    # and with no model at all the run stops before inference (tests/run/test_models_per_run.py)
    with pytest.raises(Exception, match="no model named"):
        resolve_models(None, None, p["backend"])


# ----------------------------------------------------------------------------- the wiring test
def _models(model: Path, n: int) -> list[dict[str, Any]]:
    opts = {"device": "cpu", "num_threads": 1}
    names = ["tiny-a", "tiny-b"][:n]
    return [{"model": str(model), "backend": "hf", "options": opts, "name": x} for x in names]


def _data(tmp: Path) -> dict[str, Any]:
    """Small files in the official formats (lceval's own texts), one folder per paper."""
    from lceval.benchmarks.cifbench import data as cif_data
    from lceval.benchmarks.leval import data as leval_data
    from lceval.benchmarks.longgenbench.build import generate_record
    from lceval.benchmarks.longgenbench.gold import SCENARIOS

    lgb = tmp / "LongGenBench" / "Dataset_short.json"
    lgb.parent.mkdir(parents=True)
    lgb.write_text(json.dumps([generate_record(s, "short", 0) for s in SCENARIOS]))
    many = tmp / "manyifeval.jsonl"
    rows = [
        {
            "key": 1,
            "prompt": "Write a poem. Answer with at least 5 words and no commas.",
            "instruction_id_list": ["length_constraints:number_words", "punctuation:no_comma"],
            "kwargs": [{"num_words": 5, "relation": "at least"}, {}],
        },
        {
            "key": 2,
            "prompt": "Write a note. Wrap your entire response with double quotation marks.",
            "instruction_id_list": ["startend:quotation"],
            "kwargs": [{}],
        },
    ]
    many.write_text("".join(json.dumps(r) + "\n" for r in rows))
    leval = tmp / "LEval-data"
    leval_data.write_demo_data(leval, doc_words=120)
    topics = " ".join(
        f"USER: I would like to discuss the topic of {t}. ASSISTANT: Sure, {t} it is."
        for t in ("space travel", "art history", "deep sea fish", "jazz")
    )
    leval_data.write_task_file(
        leval / "topic_retrieval_longchat.jsonl",
        [
            {
                "input": topics,
                "instructions": [
                    "What is the first topic we discussed? Only give me the topic name."
                ],
                "outputs": ["space travel"],
                "source": "longchat",
                "evaluation": "exam",
            }
        ],
    )
    leval_data.write_task_file(
        leval / "gsm100.jsonl",
        [
            {
                "input": "Question: What is 1 + 1?\nLet's think step by step\n"
                "1 + 1 = 2.\nThe answer is 2",
                "instructions": ["Question: What is 2 + 3?\nLet's think step by step\n"],
                "outputs": ["5"],
                "source": "",
                "evaluation": "exam",
            }
        ],
    )
    cif = cif_data.write_demo_dataset(tmp / "CIF-Bench")
    return {"longgenbench": [str(lgb)], "manyifeval": str(many), "leval": str(leval), "cif": cif}


def _overrides(paper: str, model: Path, data: dict[str, Any]) -> dict[str, Any]:
    """``-p`` overrides for one pipeline (applied to every step, as ``lceval run -p`` does)."""
    tiny = {"backend": "hf", "backend_options": {}, "model": None, "max_new_tokens": 4}
    if paper == "lifbench":
        return {**tiny, "models": _models(model, 2), "lengths": ["4k"], "max_samples_per_task": 1}
    if paper == "longgenbench_ruler":
        return {
            **tiny,
            "models": _models(model, 2),
            "path": data["longgenbench"],
            "versions": ["short"],
            "n_per_scenario": 1,
            "lengths": [4096],
            "num_samples": 1,
            "tasks": ["niah_single_1", "vt", "qa_1"],
            "batch_size": 4,
            # the paper's Llama-3.1-8B judge on vLLM, replaced by the tiny model on hf
            "judge_backend": "hf",
            "judge_model": str(model),
            "judge_backend_options": {},
            "judge_max_new_tokens": 4,
        }
    if paper == "manyifeval":
        return {
            **tiny,
            "models": _models(model, 2),
            "path": data["manyifeval"],
            "refine_rounds": 1,
            "refine_n_prompts": 1,
            "refine_n_instructions": [1, 2],
            "batch_size": 4,
        }
    if paper == "leval":
        # one model: the NTK sweep overrides one model's RoPE base
        return {
            **tiny,
            "models": _models(model, 1),
            "data_path": data["leval"],
            "tasks": None,
            "limit_docs": 1,
            "judge_backend": "hf",
            "judge_model": str(model),
            "judge_max_new_tokens": 4,
            "bases": [20000, 160000],
            "lengths": [256],
            "samples": 1,
            "reasoning_max_new_tokens": 4,
            "arithmetic_shots": 1,
            "batch_size": 4,
        }
    cif = data["cif"]
    # one model: the contamination notebook measures one model under test
    return {
        **tiny,
        "models": _models(model, 1),
        **cif,
        "n_inputs": 1,
        "batch_size": 4,
        "scorer_options": {"types": "creative"},
        # the evaluator (a 72B model on vLLM in the full params) replaced by the tiny model on hf
        "judge_backend": "hf",
        "judge_model": str(model),
        "judge_backend_options": {"device": "cpu"},
        "judge_max_new_tokens": 4,
        "corpus": [cif["public_dir"]],
        "limit": 4,
        "n_resamples": 50,
    }


RUNS = {
    paper: [
        rid
        for k in registry.BENCHMARKS
        if papers.of(k).pipeline == paper
        for rid in papers.of(k).full_runs
    ]
    for paper in PAPERS
}
"""Per pipeline, the run folders whose responses and scores the test checks."""


@pytest.fixture(scope="module")
def official_format_data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """:func:`_data`, written once for the five pipelines (they only read it)."""
    return _data(tmp_path_factory.mktemp("data"))


@pytest.mark.notebook
@pytest.mark.parametrize("paper", PAPERS)
def test_full_pipeline_runs_end_to_end_on_a_tiny_model(
    paper, tmp_path, tiny_long_model_dir, official_format_data
):
    data = official_format_data
    overrides = _overrides(paper, tiny_long_model_dir, data)
    argv = ["--outputs", str(tmp_path / "out"), "run", str(PIPELINES / f"{paper}_full.yaml")]
    for key, value in overrides.items():
        argv += ["-p", f"{key}={json.dumps(value)}"]
    assert main(argv) == 0
    names = {m["name"] for m in overrides["models"]}
    for rid in RUNS[paper]:
        run = RunDir(rid, tmp_path / "out")
        answered = {json.loads(line)["model"] for line in run.responses.open(encoding="utf-8")}
        assert answered == names, (rid, answered)
        assert set(run.read_scores()["model"]) == names
        assert (run.report / "index.html").is_file()
