"""CPU threads for a torch engine: the cores this process may use (affinity, capped by the cgroup
quota) less those other processes keep busy now (runnable tasks, not the load average, which still
counts lceval's own previous run), at least 1; decided once per process. Measured in
``bench/bench_threads.py`` (bench/results/README.md, "CPU threads").
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count chosen (>= 1) from the CPUs of the affinity mask, of the cgroup quota
    (None: no quota) and kept busy by other processes (None: unknown)."""

    threads: int
    affinity: int
    quota: float | None
    busy: float | None

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


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def cgroup_quota_cpus(root: str = "/sys/fs/cgroup") -> float | None:
    """CPUs the cgroup quota allows (v2 ``cpu.max`` of this process's cgroup, then the root's; else
    v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``), None without a quota."""
    base = Path(root)
    own = [line.split(":", 2) for line in _read(Path("/proc/self/cgroup")).splitlines()]
    v2 = [base / p[2].lstrip("/") / "cpu.max" for p in own if len(p) == 3 and p[0] == "0"]
    for path in [*v2, base / "cpu.max"]:
        if len(got := _read(path).split()) >= 2:
            quota, period = got[:2]
            break
    else:
        quota, period = (_read(base / "cpu" / f"cpu.cfs_{n}_us") for n in ("quota", "period"))
    try:
        cpus = float(quota) / float(period)
    except (ValueError, ZeroDivisionError):  # "max": no quota
        return None
    return max(cpus, 0.01) if cpus > 0 else None


def busy_cpus(
    reads: int = 5, interval_s: float = 0.02, path: str = "/proc/loadavg"
) -> float | None:
    """CPUs other processes keep busy now: runnable tasks of ``/proc/loadavg`` less this reader,
    median of ``reads`` reads ``interval_s`` apart; None where unknown."""
    counts = []
    for k in range(reads):
        time.sleep(interval_s if k else 0)
        try:
            counts.append(max(int(Path(path).read_text().split()[3].split("/")[0]) - 1, 0))
        except (OSError, IndexError, ValueError):
            return None
    return float(statistics.median(counts))


def choose_threads(
    affinity: int | None = None, quota: float | None = -1.0, busy: float | None = -1.0
) -> ThreadChoice:
    """``min(affinity, floor(quota))`` cores less ``floor(busy)``, at least 1; measured once per
    process when no argument is given (a later engine would count the first one's threads).

    Args:
        affinity: CPUs in the affinity mask (None: read it).
        quota: CPUs of the cgroup quota (None: no quota; -1: read it).
        busy: CPUs other processes keep busy (None: unknown; -1: read it).
    """
    if affinity is None and quota == -1.0 and busy == -1.0:
        return _measured()
    affinity = affinity_cpus() if affinity is None else affinity
    quota = cgroup_quota_cpus() if quota == -1.0 else quota
    busy = busy_cpus() if busy == -1.0 else busy
    cores = affinity if quota is None else min(affinity, max(1, math.floor(quota)))
    return ThreadChoice(max(1, cores - math.floor(busy or 0)), affinity, quota, busy)


@functools.cache
def _measured() -> ThreadChoice:
    return choose_threads(affinity_cpus(), cgroup_quota_cpus(), busy_cpus())
