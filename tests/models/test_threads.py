"""The hf engine's CPU thread count: the cores the process may use (issue 32)."""

from __future__ import annotations

import os

import pytest

from lceval.models import threads
from lceval.models.threads import cgroup_quota_cpus, choose_threads


@pytest.mark.parametrize(
    ("affinity", "quota", "load", "want"),
    [
        (8, None, 0.0, 8),  # idle, no quota: every core of the mask
        (8, 2.0, 0.0, 2),  # a cgroup quota of 2 CPUs caps it
        (8, 2.5, 0.0, 2),  # a fraction of a CPU is not a thread
        (8, 0.5, 0.0, 1),  # under one CPU: one thread
        (2, None, 1.3, 1),  # one core kept busy by others: the other one
        (2, None, 16.0, 1),  # oversubscribed: one thread, never zero
        (4, None, None, 4),  # load unknown: the cores
    ],
)
def test_choose_threads(affinity, quota, load, want):
    got = choose_threads(affinity, quota, load)
    assert got.threads == want
    assert got.record() == {
        "threads": want,
        "affinity_cpus": affinity,
        "cgroup_quota_cpus": quota,
        "load_1min": load,
    }


def test_reads_the_machine_by_default():
    got = choose_threads()
    assert 1 <= got.threads <= len(os.sched_getaffinity(0)) == got.affinity


def test_cgroup_quota_v2_and_v1(tmp_path, monkeypatch):
    monkeypatch.setattr(threads.Path, "read_text", _no_proc(threads.Path.read_text))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_quota_cpus(str(tmp_path)) is None
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_quota_cpus(str(tmp_path)) == 1.5
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_quota_cpus(str(tmp_path)) is None
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    assert cgroup_quota_cpus(str(tmp_path)) == 3.0
    assert cgroup_quota_cpus(str(tmp_path / "none")) is None


def _no_proc(read_text):
    """Path.read_text with /proc/self/cgroup hidden (the test reads only its own folder)."""

    def read(self, *a, **k):
        if str(self) == "/proc/self/cgroup":
            raise OSError("hidden")
        return read_text(self, *a, **k)

    return read


@pytest.mark.slow
def test_hf_records_its_thread_choice(tiny_model_dir):
    import torch

    from lceval.models.hf import HFBackend

    before = torch.get_num_threads()
    try:
        chosen = HFBackend(str(tiny_model_dir), device="cpu").info()
        assert chosen["num_threads"] == chosen["num_threads_chosen_from"]["threads"] >= 1
        given = HFBackend(str(tiny_model_dir), device="cpu", num_threads=1).info()
        assert given["num_threads"] == 1 and given["num_threads_chosen_from"] == "given"
    finally:
        torch.set_num_threads(before)
