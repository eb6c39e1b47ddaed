"""How many CPU threads a torch engine should use: the cores this process may use.

torch's default is one OpenMP thread per core it sees, whatever else runs there. On a loaded
2-core machine the hf engine with the default threads took 299.7 s to answer what it answered in
13.9 s with one thread (issue 32): oversubscribed OpenMP threads spin and wait on each other. The
count here is the cores the process may run on (``os.sched_getaffinity``), capped by the cgroup's
CPU quota (``cpu.max`` of cgroup v2, ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` of v1), less
the cores other processes keep busy (the 1-minute load average), at least 1. Measured in
``bench/bench_threads.py`` (README, "CPU threads").
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count chosen and what it was chosen from (recorded in run.json)."""

    threads: int
    """Threads to use (>= 1)."""
    affinity: int
    """CPUs in this process's affinity mask."""
    quota: float | None
    """CPUs the cgroup quota allows (None: no quota)."""
    load: float | None
    """1-minute load average when chosen (None: not available)."""

    def record(self) -> dict[str, object]:
        """The choice as run.json records it."""
        return {
            "threads": self.threads,
            "affinity_cpus": self.affinity,
            "cgroup_quota_cpus": self.quota,
            "load_1min": self.load,
        }


def affinity_cpus() -> int:
    """CPUs this process may run on (its affinity mask; ``os.cpu_count`` where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def cgroup_quota_cpus(root: str = "/sys/fs/cgroup") -> float | None:
    """CPUs the cgroup's CPU quota allows (quota / period), or None when there is no quota.

    Reads cgroup v2 ``cpu.max`` (``"max 100000"``: none; ``"200000 100000"``: 2 CPUs) of the
    process's own cgroup, then of the mount root; else cgroup v1 ``cpu/cpu.cfs_quota_us``
    (-1: none) over ``cpu.cfs_period_us``.
    """
    base = Path(root)
    candidates = []
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3 and parts[0] == "0":  # v2 unified hierarchy
                candidates.append(base / parts[2].lstrip("/") / "cpu.max")
    except OSError:
        pass
    candidates.append(base / "cpu.max")
    for path in candidates:
        try:
            quota, period = path.read_text().split()[:2]
        except (OSError, ValueError):
            continue
        if quota == "max":
            return None
        try:
            return max(float(quota) / float(period), 0.01)
        except (ValueError, ZeroDivisionError):
            return None
    try:
        quota_us = int((base / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((base / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return quota_us / period_us


def load_average() -> float | None:
    """The 1-minute load average (runnable and waiting processes), None where unknown."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return None


def choose_threads(
    affinity: int | None = None, quota: float | None = -1.0, load: float | None = -1.0
) -> ThreadChoice:
    """The threads a torch engine should use now (arguments: measured when left out).

    ``min(affinity, floor(quota))`` cores may be used; of those, the ones the load average says
    other processes keep busy are left to them (``cores - floor(load)``), at least 1. The load is
    read before the engine starts, so it counts other processes only.

    Args:
        affinity: CPUs in the affinity mask.
        quota: CPUs of the cgroup quota (None: no quota; -1: read it).
        load: the 1-minute load average (None: unknown; -1: read it).
    """
    affinity = affinity_cpus() if affinity is None else affinity
    quota = cgroup_quota_cpus() if quota == -1.0 else quota
    load = load_average() if load == -1.0 else load
    cores = affinity if quota is None else min(affinity, max(1, math.floor(quota)))
    free = cores if load is None else cores - math.floor(load)
    return ThreadChoice(max(1, min(cores, free)), affinity, quota, load)
