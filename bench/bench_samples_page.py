"""How fast report/samples.html opens: a 10,000-row run in headless Chromium.

Run from the repo root: ``python bench/bench_samples_page.py [--rows 10000] [--models 4]
[--loads 3] [--out bench/results/samples_page.md]``.

Workload: a synthetic LIFBench-shaped run folder (samples over LIFBench's 11 task codes and six
lengths, 60 shared contexts of about 40,000 characters, answers of 20 to 6,000 characters, 3-5
rubric items per score, one scorer), ``--rows`` score rows in all (``--models`` models answering
``rows / models`` samples). The page is written by
:func:`lceval.report.samples_page.write_samples_page`
(the code ``lceval report`` runs), then opened ``--loads`` times in a fresh headless Chromium
(Debian's chromium + chromedriver through selenium): the time from navigation to the table's
first page drawn (DataTables' info line present), and the time for a task-code search to redraw.
Tables only, no assertions (DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lceval.core.io import RunDir, new_meta, write_jsonl  # noqa: E402
from lceval.core.records import Context, Response, Sample, Score  # noqa: E402

TASKS = ("LSI", "LMI", "LBI", "LOI", "LBE", "LOE", "MB", "MF", "OE", "OQ", "OR")
LENGTHS = (3072, 6144, 12288, 24576, 49152, 98304)
WORDS = "the model answers each list entry with a short line of text and sometimes more".split()


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    n = 0
    while n < chars:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:chars]


def make_run(root: Path, rows: int, models: int, seed: int = 0) -> RunDir:
    """The synthetic scored run folder (see the module docstring)."""
    rng = random.Random(seed)
    run = RunDir("page-bench", root).create()
    contexts = [
        Context(f"ctx{i}", _text(rng, 40_000), 9_000, "o200k_base", "synthetic") for i in range(60)
    ]
    n_samples = rows // models
    samples = []
    for i in range(n_samples):
        task = TASKS[i % len(TASKS)]
        samples.append(
            Sample(
                id=f"lifbench/{task}/{i}",
                benchmark="lifbench",
                task=task,
                instruction=_text(rng, rng.randint(60, 600)),
                context_id=f"ctx{i % len(contexts)}",
                scenario="List",
                length=LENGTHS[i % len(LENGTHS)],
                expression_id=i % 5,
                variable_id=i % 7,
                meta={"length_label": f"{LENGTHS[i % len(LENGTHS)] // 1024}k"},
            )
        )
    run.write_samples(samples, contexts)
    responses, scores = [], []
    for m in range(models):
        for s in samples:
            text = _text(rng, int(rng.choice((20, 80, 300, 1200, 6000))))
            responses.append(Response(s.id, f"model-{m}", text, "c0", completion_tokens=99))
            items = {f"item{k}": float(rng.randint(0, 2)) for k in range(rng.randint(3, 5))}
            value = sum(items.values()) / (2 * len(items))
            scores.append(
                Score(
                    s.id,
                    f"model-{m}",
                    "lifbench",
                    s.task,
                    "lifbench",
                    "1",
                    value,
                    items,
                    dict.fromkeys(items, 2.0),
                    f"{sum(items.values()):g} of {2 * len(items)} points; " + _text(rng, 80),
                )
            )
    write_jsonl(run.responses, responses)
    run.write_scores(scores)
    run.write_meta(new_meta("page-bench"))
    return run


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid``'s children (the browser's processes)."""
    import psutil  # ipykernel's dependency

    total = 0.0
    for p in psutil.Process(pid).children(recursive=True):
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def _open(page: Path, task: str) -> tuple[float, float, float, str]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    js = "const e = document.querySelector('.dt-info'); return e && e.textContent;"
    try:
        driver.get("about:blank")
        pid = driver.service.process.pid
        c0 = _cpu(pid)
        t0 = time.perf_counter()
        driver.get(page.as_uri())
        while not driver.execute_script(js):
            time.sleep(0.02)
        opened = time.perf_counter() - t0
        cpu = _cpu(pid) - c0
        before = driver.execute_script(js)
        t0 = time.perf_counter()
        driver.find_element("css selector", ".dt-search input").send_keys(task)
        while driver.execute_script(js) == before:
            time.sleep(0.02)
        searched = time.perf_counter() - t0
        info = str(driver.execute_script(js))
    finally:
        driver.quit()
    return opened, cpu, searched, info


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--models", type=int, default=4)
    p.add_argument("--loads", type=int, default=3)
    p.add_argument("--out", default="bench/results/samples_page.md")
    args = p.parse_args()
    if shutil.which("chromedriver") is None:
        raise SystemExit("chromedriver not found (apt install chromium chromium-driver)")
    from lceval.report.samples_page import write_samples_page

    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp), args.rows, args.models)
        t0 = time.perf_counter()
        page = write_samples_page(run)
        build = time.perf_counter() - t0
        assert page is not None
        size = page.stat().st_size
        runs = [_open(page, "OR") for _ in range(args.loads)]
    opened = [r[0] for r in runs]
    cpu = [r[1] for r in runs]
    searched = [r[2] for r in runs]
    load = os.getloadavg()[0]
    lines = [
        "# samples.html: opening a large run in headless Chromium",
        "",
        f"Machine: {platform.machine()}, {platform.system()}, Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d')}. Command: `python bench/bench_samples_page.py "
        f"--rows {args.rows} --models {args.models} --loads {args.loads}`.",
        "",
        "| rows | page MB | write s | open s (median) | open s (each) | browser CPU s (median) "
        "| task search s (median) | load average |",
        "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
        f"| {args.rows:,} | {size / 1e6:.1f} | {build:.1f} | {statistics.median(opened):.2f} "
        f"| {', '.join(f'{x:.2f}' for x in opened)} | {statistics.median(cpu):.2f} "
        f"| {statistics.median(searched):.2f} | {load:.1f} |",
        "",
        f"After typing `OR`: {runs[-1][3]}",
        "",
        "Open: navigation to the first page of the table drawn (DataTables' info line present), "
        "in a fresh browser each time (wall seconds); browser CPU: user + system seconds of all "
        "the browser's processes over the same span (what the page costs, whatever else the "
        "machine runs); search: typing a task code to the redraw. Load average: the machine's "
        "1-minute load when the script ended (2 cores).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
