"""How many CPU threads a torch engine should use: the cores this process may use.

torch's default is one OpenMP thread per core it sees, whatever else runs there. On a loaded
2-core machine the hf engine with the default threads took 299.7 s to answer what it answered in
13.9 s with one thread (issue 32): oversubscribed OpenMP threads spin and wait on each other. The
count here is the cores the process may run on (``os.sched_getaffinity``), capped by the cgroup's
CPU quota (``cpu.max`` of cgroup v2, ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` of v1), less
the cores other processes keep busy now (the runnable tasks of ``/proc/loadavg``, not the
1-minute average: that still counts lceval's own previous run, and gave one thread on a nearly idle
2-core machine: 287 s for the 44 smoke samples against 182.5 s with two, issue 36), at least 1.
Decided once per process. Measured in ``bench/bench_threads.py``
(README, "CPU threads").
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


def busy_cpus(
    reads: int = 5, interval_s: float = 0.02, path: str = "/proc/loadavg"
) -> float | None:
    """CPUs other processes keep busy now, None where unknown.

    The runnable tasks of the 4th field of ``/proc/loadavg`` (``running/total``), less the one
    reading it, the median of ``reads`` reads ``interval_s`` apart (one read catches bursts). A
    process that has ended no longer counts, unlike in the load averages.
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
    """The threads a torch engine should use (arguments: measured when left out).

    With no arguments the machine is read once per process and that choice kept: a later
    engine of the same process (a refinement round, a judge) would see the first one's threads
    as other processes' load.

    ``min(affinity, floor(quota))`` cores may be used; of those, the ones other processes keep
    busy are left to them (``cores - floor(busy)``), at least 1. Read before the engine starts,
    so it counts other processes only.

    Args:
        affinity: CPUs in the affinity mask.
        quota: CPUs of the cgroup quota (None: no quota; -1: read it).
        busy: CPUs other processes keep busy (None: unknown; -1: read it, :func:`busy_cpus`).
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
