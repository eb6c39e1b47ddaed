"""Fuzz every registered per-response scorer with hostile model outputs.

For each scorer (``lceval list``; batch judges, which need a model, are skipped) the script draws
``--n`` outputs (default 100,000) against the samples of ``tests/fixtures/regression/<key>/``:
random unicode with lone surrogates and control characters, empty and whitespace-only text,
nested brackets, near-misses built from the sample's gold (dropped, swapped, upper-cased and
repeated gold strings), regex-hostile repetitions (``[``, ``(``, ``*``, ``#*#``, ``Week 1``), and
a few outputs of up to 1 MB. It calls the scorer directly and reports, per scorer:

- exceptions (goal 0), values outside [0, 1] (goal 0), NaN without a reason (goal 0);
- the slowest single call and what kind of output it was (goal < 1 s for a 1 MB output);
- calls per second.

Run: ``python benchmarks/fuzz_scorers.py [--n 100000] [--big 20] [--seed 0]``; writes
``benchmarks/results/fuzz_scorers.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from lceval import registry
from lceval.io import read_records
from lceval.records import Context, Gold, Response, Sample

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "regression"
RESULTS = Path(__file__).parent / "results" / "fuzz_scorers.md"

REPEATED = ("[", "(", ")", "*", "#*#", "Week 1 ", "\\", "{", '"', "a", " ", "\n", "0", "A.", "<")


def gold_strings(gold: object) -> list[str]:
    """Every string (and number as text) inside a gold record."""
    out: list[str] = []

    def walk(x: object) -> None:
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, bool):
            out.append(str(x))
        elif isinstance(x, int | float):
            out.append(str(x))
        elif isinstance(x, Gold):
            walk(dataclasses.asdict(x))
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    walk(gold)
    return [s for s in out if s]


def random_unicode(rng: random.Random, n: int) -> str:
    """``n`` code points from the whole range, lone surrogates and controls included."""
    pools = (
        lambda: rng.randint(0, 0x7F),
        lambda: rng.randint(0, 0x1F),
        lambda: rng.randint(0xD800, 0xDFFF),
        lambda: rng.randint(0x80, 0xFFFF),
        lambda: rng.randint(0x10000, 0x10FFFF),
    )
    return "".join(chr(rng.choice(pools)()) for _ in range(n))


def near_miss(rng: random.Random, strings: list[str]) -> str:
    """Gold strings, mutated: some dropped, shuffled, case-changed, cut, repeated, glued."""
    if not strings:
        return random_unicode(rng, 20)
    picked = rng.sample(strings, k=min(len(strings), rng.randint(1, 8)))
    out = []
    for s in picked:
        op = rng.randrange(6)
        if op == 0:
            s = s.upper()
        elif op == 1:
            s = s[: max(1, len(s) // 2)]
        elif op == 2:
            s = s * rng.randint(2, 5)
        elif op == 3:
            s = s.replace(" ", "")
        elif op == 4:
            s = f"[{s}]"
        out.append(s)
    rng.shuffle(out)
    return rng.choice(("\n", " ", ", ", "#*#", "")).join(out)


def outputs(rng: random.Random, sample: Sample, n: int, big: int) -> Iterator[tuple[str, str]]:
    """``n`` (kind, text) hostile outputs for ``sample``, ``big`` of them up to 1 MB."""
    strings = gold_strings(sample.gold)
    kinds: list[tuple[str, Callable[[], str]]] = [
        ("empty", lambda: ""),
        (
            "whitespace",
            lambda: rng.choice((" ", "\n", "\t", "\u3000", "\u200b")) * rng.randint(1, 50),
        ),
        ("unicode", lambda: random_unicode(rng, rng.randint(1, 300))),
        ("surrogate", lambda: "x" + chr(rng.randint(0xD800, 0xDFFF)) + near_miss(rng, strings)),
        ("control", lambda: "".join(chr(rng.randint(0, 31)) for _ in range(rng.randint(1, 80)))),
        (
            "brackets",
            lambda: "[" * rng.randint(1, 200) + near_miss(rng, strings) + "]" * rng.randint(0, 200),
        ),
        ("near-miss", lambda: near_miss(rng, strings)),
        ("repeat", lambda: rng.choice(REPEATED) * rng.randint(100, 20_000)),
        (
            "json",
            lambda: json.dumps(strings[: rng.randint(0, 10)], ensure_ascii=rng.random() < 0.5),
        ),
    ]
    for i in range(n):
        if i < big:
            unit = rng.choice((*REPEATED, near_miss(rng, strings) + "\n"))
            yield "1MB", (unit * (1_000_000 // max(1, len(unit)) + 1))[:1_000_000]
        else:
            kind, make = kinds[i % len(kinds)]
            yield kind, make()


def fuzz_scorer(key: str, spec, samples, contexts, n: int, big: int, seed: int) -> dict:
    rng = random.Random(seed)
    stats: dict = {"calls": 0, "exceptions": 0, "out_of_range": 0, "nan_no_reason": 0}
    slowest = (0.0, "", "")
    examples: list[str] = []
    kinds: Counter[str] = Counter()
    per_sample = max(1, n // len(samples))
    t0 = time.perf_counter()
    for j, s in enumerate(samples):
        ctx = contexts.get(s.context_id) if s.context_id else None
        m = per_sample if j < len(samples) - 1 else n - per_sample * (len(samples) - 1)
        for kind, text in outputs(rng, s, m, big if j == 0 else 0):
            r = Response(sample_id=s.id, model="fuzz", text=text, config_hash="fuzz")
            t = time.perf_counter()
            try:
                j_ = spec.score(s, r, ctx)
            except Exception:  # noqa: BLE001 - counting them is the point
                stats["exceptions"] += 1
                if len(examples) < 3:
                    examples.append(
                        f"{s.task}/{kind}: {traceback.format_exc(limit=2).splitlines()[-1]}"
                    )
                continue
            finally:
                dt = time.perf_counter() - t
                stats["calls"] += 1
                kinds[kind] += 1
                if dt > slowest[0]:
                    slowest = (dt, kind, s.task)
            v = j_.value
            if math.isnan(v):
                if not j_.explanation:
                    stats["nan_no_reason"] += 1
            elif not 0.0 <= v <= 1.0:
                stats["out_of_range"] += 1
    stats["seconds"] = time.perf_counter() - t0
    stats["slowest_s"], stats["slowest_kind"], stats["slowest_task"] = slowest
    stats["examples"] = examples
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="outputs per scorer")
    ap.add_argument("--big", type=int, default=20, help="1 MB outputs per scorer")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=None, help="scorer names")
    args = ap.parse_args(argv)
    rows = []
    for bench in registry.all_benchmarks():
        folder = FIXTURES / bench.key
        samples = registry.load_samples(read_records(folder / "samples.jsonl", Sample))
        contexts = {c.id: c for c in read_records(folder / "contexts.jsonl", Context)}
        for spec in bench.scorers.values():
            if spec.score is None or (args.only and spec.name not in args.only):
                continue
            st = fuzz_scorer(bench.key, spec, samples, contexts, args.n, args.big, args.seed)
            rows.append((spec.name, st))
            print(
                f"{spec.name}: {st['calls']:,} calls in {st['seconds']:.1f} s; exceptions "
                f"{st['exceptions']}, out of range {st['out_of_range']}, NaN without reason "
                f"{st['nan_no_reason']}; slowest {st['slowest_s']:.3f} s ({st['slowest_kind']}, "
                f"{st['slowest_task']})",
                flush=True,
            )
            for e in st["examples"]:
                print(f"  {e}")
    lines = [
        f"# Scorer fuzzing ({args.n:,} outputs per scorer, {args.big} of them 1 MB; "
        f"seed {args.seed})",
        "",
        "| scorer | calls | exceptions | outside [0, 1] | NaN without reason | slowest call "
        "| calls/s |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for name, st in rows:
        lines.append(
            f"| `{name}` | {st['calls']:,} | {st['exceptions']} | {st['out_of_range']} | "
            f"{st['nan_no_reason']} | {st['slowest_s']:.3f} s ({st['slowest_kind']}, "
            f"{st['slowest_task']}) | {st['calls'] / st['seconds']:,.0f} |"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    bad = sum(st["exceptions"] + st["out_of_range"] + st["nan_no_reason"] for _, st in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
