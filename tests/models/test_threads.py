"""The hf engine's CPU thread count: the cores the process may use (issue 32)."""

from __future__ import annotations

import os

import pytest

from lceval.models import threads
from lceval.models.threads import cgroup_quota_cpus, choose_threads


@pytest.mark.parametrize(
    ("affinity", "quota", "busy", "want"),
    [
        (8, None, 0.0, 8),  # idle, no quota: every core of the mask
        (8, 2.0, 0.0, 2),  # a cgroup quota of 2 CPUs caps it
        (8, 2.5, 0.0, 2),  # a fraction of a CPU is not a thread
        (8, 0.5, 0.0, 1),  # under one CPU: one thread
        (2, None, 1.3, 1),  # one core kept busy by others: the other one
        (2, None, 16.0, 1),  # oversubscribed: one thread, never zero
        (4, None, None, 4),  # busy unknown: the cores
    ],
)
def test_choose_threads(affinity, quota, busy, want):
    got = choose_threads(affinity, quota, busy)
    assert got.threads == want
    assert got.record() == {
        "threads": want,
        "affinity_cpus": affinity,
        "cgroup_quota_cpus": quota,
        "busy_cpus": busy,
    }


def test_reads_the_machine_by_default_once():
    got = choose_threads()
    assert 1 <= got.threads <= len(os.sched_getaffinity(0)) == got.affinity
    assert choose_threads() is got  # decided once per process


def test_busy_cpus_counts_runnable_tasks_now_not_the_load_average(tmp_path):
    """A nearly idle machine after a busy minute: 1-minute average 1.9, one task runnable (the
    reader): no CPU busy, so both cores are used (issue 36: the average gave one thread)."""
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("1.90 0.80 0.30 1/339 17801\n")
    assert threads.busy_cpus(reads=1, path=str(loadavg)) == 0.0
    assert choose_threads(2, None, threads.busy_cpus(reads=1, path=str(loadavg))).threads == 2
    loadavg.write_text("0.10 0.80 0.30 3/339 17801\n")  # two others running now
    assert threads.busy_cpus(reads=3, interval_s=0, path=str(loadavg)) == 2.0
    loadavg.write_text("garbage\n")
    assert threads.busy_cpus(reads=1, path=str(loadavg)) is None
    assert threads.busy_cpus(reads=1, path=str(tmp_path / "none")) is None


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
