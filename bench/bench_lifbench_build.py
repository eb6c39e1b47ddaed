"""Time, peak memory and size on disk of the full LIFBench grid build (2,766 samples, 4k..128k).

Run: ``python3 bench/bench_lifbench_build.py`` (prints a markdown table and writes it to
bench/results/lifbench_build.md). Peak memory is the process's max RSS
(``resource.getrusage``) and the Python-heap peak during the build (``tracemalloc``).
"""

from __future__ import annotations

import platform
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

import lceval.run
from lceval.benchmarks.lifbench.build import build_lifbench


def main() -> None:
    rows = []
    t0 = time.perf_counter()
    build_lifbench({"lengths": ["4k"], "tasks": ["LSI", "MB", "OE"]})  # warm corpora + nltk
    rows.append(("warm-up (load corpora, 4k, 3 tasks)", time.perf_counter() - t0, None, None))

    tracemalloc.start()
    t0 = time.perf_counter()
    result = build_lifbench({})
    dt = time.perf_counter() - t0
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(("full grid, build_lifbench (tracemalloc on)", dt, heap_peak, None))

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = lceval.run.build("bench", "lifbench", {}, root=tmp)
        dt = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in Path(run.path).iterdir() if p.is_file())
        rows.append(("full grid, lceval.run.build (writes run folder)", dt, None, size))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    lines = [
        f"LIFBench full-grid build: {len(result.samples)} samples, {len(result.contexts)} contexts "
        f"(each stored once), {platform.processor() or platform.machine()}, "
        f"{__import__('os').cpu_count()} CPUs.",
        "",
        "| step | seconds | Python heap peak (MB) | run folder (MB) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, sec, heap, disk in rows:
        h = f"{heap / 2**20:.0f}" if heap else ""
        d = f"{disk / 2**20:.1f}" if disk else ""
        lines.append(f"| {name} | {sec:.1f} | {h} | {d} |")
    lines += ["", f"Process peak RSS: {rss / 2**20:.0f} MB."]
    text = "\n".join(lines)
    print(text)
    out = Path(__file__).parent / "results" / "lifbench_build.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
