"""Speed of ManyIFEval checking: (response, instruction) pairs per second, strict + loose.

Run from the repo root: ``python bench/bench_manyifeval_checking.py [--pairs 100000]
[--baseline-pairs 5000] [--out bench/results/manyifeval_checking.md]``.

Builds the ManyIFEval samples (40 MT-Bench prompts x n = 1..10), then makes distinct synthetic
responses of 30 to 400 words from Paul Graham essay passages, each dressed at random in the
formats the instructions ask for (a <<title>>, bullets, *** dividers, double quotes, upper or
lower case, commas removed, a chatty first line), and pairs each with one sample's instruction
list until ``--pairs`` (response, instruction) pairs are reached. It then times
``lceval.benchmarks.manyifeval.score.check_many`` (strict and loose verdicts of every pair) over
all of them in one process and in ``--processes`` worker processes (default: all cores), and, on
the first ``--baseline-pairs`` pairs, lm-eval's own ``test_instruction_following_strict`` +
``_loose`` (utils.py) for comparison. It also times hostile responses (``--hostile-chars``
characters of one pattern: ``[``, ``<<``, newlines) against the quadratic checkers, which the work
budget (``checkers.CHECK_BUDGET``) leaves undecided instead of running for hours. Tables only, no
assertions (DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from collections import Counter
from pathlib import Path


def make_responses(n_pairs: int, seed: int = 0) -> list[tuple[list[str], list[dict], str, str]]:
    from lceval.benchmarks.manyifeval.build import build_manyifeval
    from lceval.core import corpora

    samples = build_manyifeval({"seed": seed}).samples
    words = corpora.paul_graham_essays().split()
    rng = random.Random(seed)
    jobs = []
    total = 0
    while total < n_pairs:
        s = rng.choice(samples)
        ids = list(s.gold.instruction_id_list)
        kws = [dict(k) for k in s.gold.kwargs]
        start = rng.randrange(len(words) - 400)
        text = " ".join(words[start : start + rng.randint(30, 400)])
        parts = text.split(". ")
        if rng.random() < 0.3:
            k = rng.randint(1, 5)
            parts = parts[:-k] + ["* " + p for p in parts[-k:]]
            text = ".\n".join(parts)
        if rng.random() < 0.3:
            text = text.replace(". ", ".\n***\n", rng.randint(1, 3))
        if rng.random() < 0.3:
            text = text.replace(",", "")
        if rng.random() < 0.2:
            text = text.upper()
        elif rng.random() < 0.2:
            text = text.lower()
        if rng.random() < 0.4:
            text = "<<A Title>>\n" + text
        if rng.random() < 0.3:
            text = f'"{text}"'
        if rng.random() < 0.2:
            text = "Sure, here is my answer:\n" + text
        jobs.append((ids, kws, text, s.instruction))
        total += len(ids)
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--baseline-pairs", type=int, default=5_000)
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--hostile-chars", type=int, default=1_000_000)
    ap.add_argument("--out", default="bench/results/manyifeval_checking.md")
    args = ap.parse_args()

    from lceval.benchmarks.manyifeval.checkers import CHECK_BUDGET, ensure_checkers
    from lceval.benchmarks.manyifeval.score import check_many, check_response

    ensure_checkers()
    from lm_eval.tasks.ifeval import utils

    t0 = time.perf_counter()
    jobs = make_responses(args.pairs)
    t_make = time.perf_counter() - t0
    n_pairs = sum(len(j[0]) for j in jobs)

    timings = []
    for processes in sorted({1, args.processes}):
        t0 = time.perf_counter()
        followed = Counter()
        for verdicts in check_many(jobs, processes=processes):
            for v in verdicts:
                followed["strict"] += v.strict is True
                followed["loose"] += v.loose is True
                followed["undecided"] += v.strict is None
        timings.append((processes, time.perf_counter() - t0))

    base_jobs, n_base = [], 0
    for j in jobs:
        if n_base >= args.baseline_pairs:
            break
        base_jobs.append(j)
        n_base += len(j[0])
    t0 = time.perf_counter()
    for ids, kws, text, prompt in base_jobs:
        inp = utils.InputExample(key=0, instruction_id_list=ids, prompt=prompt, kwargs=kws)
        try:
            utils.test_instruction_following_strict(inp, text)
            utils.test_instruction_following_loose(inp, text)
        except Exception:  # lm-eval's own loop may raise; ours never does
            pass
    t_base = time.perf_counter() - t0

    hostile = []
    n = args.hostile_chars
    for iid, kwargs, unit, text in (
        ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[", "[" * n),
        ("detectable_format:title", {}, "<<", "<" * n),
        ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "\n", "x" + "\n" * n + "x"),
    ):
        t0 = time.perf_counter()
        (v,) = check_response([iid], [kwargs], text)
        verdict = "undecided" if v.strict is None else str(v.strict)
        hostile.append((iid, unit, verdict, time.perf_counter() - t0))

    rows = [
        (f"lceval check_many, {p} process{'es' if p > 1 else ''} (strict + loose)", n_pairs, t)
        for p, t in timings
    ]
    rows += [
        ("lm-eval utils strict + loose (baseline)", n_base, t_base),
    ]
    lines = [
        "# ManyIFEval checking speed",
        "",
        f"`python bench/bench_manyifeval_checking.py --pairs {args.pairs}` on "
        f"{platform.machine()}, {os.cpu_count()} CPU cores (shared), Python "
        f"{platform.python_version()}; {len(jobs):,} distinct synthetic responses (30-400 words), "
        f"{n_pairs:,} (response, instruction) pairs; building them took {t_make:.1f} s.",
        "",
        "| checker | pairs | seconds | pairs / s |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {name} | {n:,} | {t:.1f} | {n / t:,.0f} |" for name, n, t in rows]
    lines += [
        "",
        f"Followed: strict {followed['strict'] / n_pairs:.3f}, loose "
        f"{followed['loose'] / n_pairs:.3f} of pairs; undecided (strict): "
        f"{followed['undecided']}.",
        "Target (issue 6): 100,000 pairs in at most 60 s.",
        "",
        f"Hostile responses of {args.hostile_chars:,} characters (work budget {CHECK_BUDGET:.0e} "
        "regex steps per check; lm-eval's own check takes hours on these):",
        "",
        "| instruction | pattern | strict verdict | seconds |",
        "| --- | --- | --- | ---: |",
    ]
    lines += [f"| {iid} | `{unit!r}` | {v} | {t:.2f} |" for iid, unit, v, t in hostile]
    lines += [""]
    text = "\n".join(lines)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
