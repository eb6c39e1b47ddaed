"""How many CPU threads a torch engine should use: the cores this process may use (affinity, capped
by the cgroup quota) less those other processes keep busy now (runnable tasks, not the load
average, which still counts lceval's own previous run), at least 1; decided once per process.
Oversubscribed OpenMP threads spin on each other (299.7 s against 13.9 s on a loaded 2-core
machine); measured in ``bench/bench_threads.py`` (README, "CPU threads").
"""

from __future__ import annotations

import math
import os
import statistics
import time
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
    busy: float | None
    """CPUs other processes kept busy when chosen (None: not available)."""

    def record(self) -> dict[str, object]:
        """The choice as run.json records it."""
        return {
            "threads": self.threads,
            "affinity_cpus": self.affinity,
            "cgroup_quota_cpus": self.quota,
            "busy_cpus": self.busy,
        }


def affinity_cpus() -> int:
    """CPUs this process may run on (its affinity mask; ``os.cpu_count`` where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def cgroup_quota_cpus(root: str = "/sys/fs/cgroup") -> float | None:
    """CPUs the cgroup quota allows (cgroup v2 ``cpu.max`` of this process's cgroup, then the
    root; else v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``), None without a quota.
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


def busy_cpus(
    reads: int = 5, interval_s: float = 0.02, path: str = "/proc/loadavg"
) -> float | None:
    """CPUs other processes keep busy now (runnable tasks of ``/proc/loadavg`` less this reader,
    median of ``reads`` reads ``interval_s`` apart), None where unknown.
    """
    counts = []
    for k in range(reads):
        if k:
            time.sleep(interval_s)
        try:
            running = Path(path).read_text().split()[3].split("/")[0]
            counts.append(max(int(running) - 1, 0))
        except (OSError, IndexError, ValueError):
            return None
    return float(statistics.median(counts))


_CHOSEN: ThreadChoice | None = None


def choose_threads(
    affinity: int | None = None, quota: float | None = -1.0, busy: float | None = -1.0
) -> ThreadChoice:
    """The threads a torch engine should use: ``min(affinity, floor(quota))`` cores less
    ``floor(busy)``, at least 1. Measured once per process when no argument is given (a later
    engine of the process would count the first one's threads as load).

    Args:
        affinity: CPUs in the affinity mask (None: read it).
        quota: CPUs of the cgroup quota (None: no quota; -1: read it).
        busy: CPUs other processes keep busy (None: unknown; -1: read it).
    """
    global _CHOSEN
    measured = affinity is None and quota == -1.0 and busy == -1.0
    if measured and _CHOSEN is not None:
        return _CHOSEN
    affinity = affinity_cpus() if affinity is None else affinity
    quota = cgroup_quota_cpus() if quota == -1.0 else quota
    busy = busy_cpus() if busy == -1.0 else busy
    cores = affinity if quota is None else min(affinity, max(1, math.floor(quota)))
    free = cores if busy is None else cores - math.floor(busy)
    choice = ThreadChoice(max(1, min(cores, free)), affinity, quota, busy)
    if measured:
        _CHOSEN = choice
    return choice
