"""Issue 25, fail fast: every bad ``lceval infer`` command line is answered with one stderr line
and exit status 2 before any engine is imported or constructed."""

from __future__ import annotations

import subprocess
import sys

import pytest

import lceval.run.inference
from lceval.cli import main
from lceval.core.io import RunDir, new_meta
from lceval.core.records import Context, Sample
from lceval.models import base


@pytest.fixture
def no_engine(monkeypatch):
    """Every registered backend's constructor fails the test: the checks must answer before
    any engine is constructed (``auto`` is decided without importing one)."""
    import importlib
    import types

    def refuse(*args, **kwargs):
        pytest.fail("an engine was constructed before the command line was checked")

    for spec in base.BACKENDS.values():
        module, _, name = spec.engine.partition(":")
        if module == "lceval.models.hf":  # importing it imports torch: a stand-in module
            fake = types.ModuleType(module)
            fake.__spec__ = importlib.util.find_spec(module)
            setattr(fake, name, _RefusedHF)
            monkeypatch.setitem(sys.modules, module, fake)
            continue
        mod = importlib.import_module(module)
        cls = getattr(mod, name)
        monkeypatch.setattr(mod, name, type(name, (cls,), {"__new__": refuse}))
    monkeypatch.setattr(base, "load_backend", refuse)
    monkeypatch.setattr(lceval.run.inference, "load_backend", refuse)


class _RefusedHF:
    """Stands in for HFBackend in :func:`no_engine` (its options are declared in
    ``lceval.models.backends``); constructing it fails the test."""

    def __new__(cls, *args, **kwargs):
        pytest.fail("the hf engine was constructed before the command line was checked")


def _run(tmp_path, rid="r"):
    run = RunDir(rid, tmp_path).create()
    run.write_meta(new_meta(rid))
    ctx = Context(id="c", text="some context", n_tokens=2, encoding="o200k_base")
    samples = [
        Sample(id="a", benchmark="echo", task="T", instruction="x", context_id="c"),
        Sample(id="b", benchmark="echo", task="U", instruction="y"),
    ]
    run.write_samples(samples, [ctx])
    return run


def _one_line(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lceval: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tasks", "ZZZ"], "task(s) ZZZ not in run r; it holds T, U"),
        (["--tasks", "T", "ZZZ"], "task(s) ZZZ not in run r"),
        (["--model", "/nonexistent/path"], "model path /nonexistent/path does not exist"),
        (["--model", "/etc/hostname"], "model /etc/hostname is a file"),
        (["--model", "not a hub id!"], "does not exist"),
        (["--model", "NoOrg/not-cached"], "nor in the local Hugging Face cache"),  # offline
        (["-o", "bogus=1"], "has no option 'bogus'; all "),
        (["--backend", "vllm", "-o", "bogus=1"], "backend vllm has no option 'bogus'; all "),
        (["--backend", "hf", "-o", "bogus=1"], "backend hf has no option 'bogus'; all "),
        (
            ["--backend", "hf", "-o", "prefill_chunk=x"],
            "backend hf option prefill_chunk must be an integer",
        ),
        (["--backend", "hf", "-o", "prefill_chunk=8"], "prefill_chunk must be >= 16, got 8"),
        (["--backend", "hf", "-o", "batch_size=4"], "option batch_size is now max_batch_rows"),
        (["--backend", "vllm", "-o", "tensor_parallel_size=2.5"], "must be an integer"),
        (["--backend", "vllm", "-o", "max_model_len=1"], "max_model_len must be >= 2"),
        (["--backend", "openai", "-o", "concurency=2", "--model", "m"], "did you mean concurrency"),
        (["--backend", "openai"], "the openai backend needs --model"),
        (["--backend", "tgi"], "unknown backend 'tgi'"),
        (["--limit", "0"], "--limit must be >= 1, got 0"),
        (["--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
        (["--batch-size", "0"], "--batch-size must be >= 1, got 0"),
        (["--temperature", "-1"], "--temperature must be >= 0.0, got -1"),
        (["-o", "novalue"], "--option expects KEY=VALUE"),
    ],
)
def test_bad_infer_line_is_one_line_before_any_engine(capsys, tmp_path, no_engine, extra, message):
    _run(tmp_path)
    line = _one_line(capsys, ["--outputs", str(tmp_path), "infer", "r", *extra])
    assert message in line
    assert len(line) < 300


def test_unknown_option_names_the_closest_and_the_listing(capsys, tmp_path, no_engine):
    _run(tmp_path)
    argv = ["--outputs", str(tmp_path), "infer", "r", "--backend", "vllm"]
    line = _one_line(capsys, [*argv, "-o", "tensor_paralel_size=2"])
    assert "(did you mean tensor_parallel_size, " in line
    assert "lceval infer --list-options vllm" in line and len(line) < 300
    line = _one_line(capsys, [*argv, "-o", "x" * 5000 + "=1"])
    assert len(line) < 300


@pytest.mark.parametrize(
    ("break_run", "message"),
    [
        (lambda run: run.samples.unlink(), "samples.jsonl does not exist"),
        (lambda run: run.run_json.unlink(), "run.json does not exist"),
        (lambda run: run.samples.write_text("{not json\n"), "samples.jsonl: line 1 is not valid"),
        (lambda run: run.contexts.write_text(""), "references unknown context 'c'"),
        (lambda run: run.responses.write_bytes(b"\xff\xfe\n{}\n"), "responses.jsonl"),
    ],
)
def test_broken_run_files_are_one_line_before_any_engine(
    capsys, tmp_path, no_engine, break_run, message
):
    break_run(_run(tmp_path))
    line = _one_line(capsys, ["--outputs", str(tmp_path), "infer", "r"])
    assert message in line


def test_model_folder_without_config_and_bad_run_id(capsys, tmp_path, no_engine):
    _run(tmp_path)
    folder = tmp_path / "model"
    folder.mkdir()
    line = _one_line(capsys, ["--outputs", str(tmp_path), "infer", "r", "--model", str(folder)])
    assert "has no config.json" in line
    line = _one_line(capsys, ["--outputs", str(tmp_path), "infer", "bad id"])
    assert "run_id 'bad id' is not valid" in line
    line = _one_line(capsys, ["--outputs", str(tmp_path), "infer"])
    assert "infer needs a run id" in line


def test_checks_import_no_engine(tmp_path):
    """The whole table answered in a fresh process without importing torch, transformers or vLLM
    (importing vLLM alone takes ~4 s, its EngineArgs ~9 s, lceval.models.hf ~7 s)."""
    _run(tmp_path)
    heavy = ("torch", "transformers", "vllm", "lceval.models.hf")
    lines = [
        ["--tasks", "ZZZ"],
        ["--model", "/nonexistent/path"],
        ["--model", "/etc/hostname"],
        ["-o", "bogus=1"],
        ["--backend", "hf", "-o", "bogus=1"],
        ["--backend", "vllm", "-o", "dtype=1"],
    ]
    code = (
        "import sys\n"
        "from lceval.cli import main\n"
        f"codes = [main(['--outputs', {str(tmp_path)!r}, 'infer', 'r', *a]) for a in {lines!r}]\n"
        f"print(codes, [m for m in {heavy!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == f"{[2] * len(lines)} []", out.stderr
    assert len(out.stderr.splitlines()) == len(lines)


def test_list_options(capsys):
    assert main(["infer", "--list-options", "hf"]) == 0
    out = capsys.readouterr().out
    assert '  device: string; default "auto": auto (CUDA when available' in out
    assert "\n  prefill_chunk: integer | null >= 16; default null: " in out
    assert main(["infer", "--list-options", "openai"]) == 0
    assert "  concurrency: integer >= 1; default 8: " in capsys.readouterr().out
    pytest.importorskip("vllm")
    assert main(["infer", "--list-options", "vllm"]) == 0
    out = capsys.readouterr().out
    assert "  tensor_parallel_size: integer >= 1; default 1: " in out
    assert "  gpu_memory_utilization  (vLLM engine argument" in out
    assert "\n  model " not in out  # lceval passes the model itself
    assert main(["infer", "--list-options", "tgi"]) == 2
    assert "unknown backend 'tgi'" in capsys.readouterr().err


def test_engine_args_read_from_source_match_the_dataclass():
    """The ast read of vLLM's EngineArgs (25 ms) gives exactly its dataclass fields."""
    pytest.importorskip("vllm")
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    from lceval.models.backends import engine_arg_names

    assert engine_arg_names() == [f.name for f in dataclasses.fields(EngineArgs)]


def test_a_vllm_only_option_under_auto_follows_the_auto_decision(
    capsys, tmp_path, no_engine, monkeypatch
):
    """auto decides once (lceval.models.backends.choose_backend) and the option check uses that
    decision: on a CPU without native bfloat16 auto is hf, so a vLLM engine argument is refused
    in one line before any engine starts, also for the second model of a run."""
    import importlib.util

    from lceval.models import backends

    real = importlib.util.find_spec
    spec = real("vllm") or type("S", (), {"submodule_search_locations": []})()
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: spec if n == "vllm" else real(n, *a)
    )
    monkeypatch.setattr(backends, "cuda_available", lambda: False)
    monkeypatch.setattr(backends, "cpu_has_bf16", lambda: False)
    _run(tmp_path)
    argv = ["--outputs", str(tmp_path), "infer", "r"]
    line = _one_line(capsys, [*argv, "-o", "gpu_memory_utilization=0.5"])
    # which engine auto chose, and the engine that has the option (issue 49 item 4)
    assert "backend auto chose hf (this CPU has no AVX512-BF16/AMX" in line
    assert "which has no option 'gpu_memory_utilization'" in line
    assert "vllm has gpu_memory_utilization (--backend vllm)" in line
    second = "{model: embedded, name: two, options: {enforce_eager: true}}"
    line = _one_line(capsys, [*argv, "--model", "embedded", "--model", second])
    assert "which has no option 'enforce_eager'" in line
    line = _one_line(capsys, [*argv, "-o", "prefill_chunk=8"])
    assert line == "lceval: backend hf option prefill_chunk must be >= 16, got 8 (int)"
