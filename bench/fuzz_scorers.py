"""Fuzz every registered per-response scorer with hostile model outputs.

For each scorer (``lceval list``; batch judges, which need a model, are skipped) the script draws
``--n`` outputs (default 100,000) against the samples of ``tests/fixtures/regression/<key>/``,
samples taken round-robin so every task gets its share:

- ``--big`` outputs (default 100) of 1,000,000 characters, each one unit repeated (``[``, ``(``,
  ``*``, ``#*#``, ``Week 1``, a lone surrogate, a near-miss of the gold, random unicode, ...),
  spread over the samples;
- the rest short or medium, cycling through these kinds: empty, whitespace-only, random unicode
  (lone surrogates and control characters included), a lone surrogate before a near-miss, control
  characters, nested brackets around a near-miss, near-misses built from the sample's gold
  (dropped, shuffled, upper-cased, cut, repeated, bracketed and glued gold strings), regex-hostile
  repetitions (100 to 20,000 copies of one unit, up to 140,000 characters) and a JSON list of
  gold strings.

It calls the scorer directly (default options, typed gold loaded once, as the pipeline does) and
reports per scorer: exceptions (goal 0), values outside [0, 1] (goal 0; ``Judgement`` refuses
them, so they surface as its ValueError and are counted here, not as exceptions), NaN without a
reason (goal 0), the slowest 1 MB call and the slowest other call with their input kind and task
(goal < 1 s for 1 MB; CPU seconds of the process, steadier than wall time on a shared machine,
with the wall time beside), calls per second and the load average while it ran. A call running past
``--hang`` seconds dumps every thread's traceback and ends the run (a hang is a finding too).

Run from the repo root: ``python bench/fuzz_scorers.py [--n 100000] [--big 100] [--seed 0]
[--only NAME ...] [--out bench/results/fuzz_scorers.md]``; it prints and writes the table
and exits 1 when any goal is missed (a count above 0, or a 1 MB call of 1 s CPU or more).
"""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import json
import math
import os
import platform
import random
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from lceval.benchmarks import registry
from lceval.benchmarks.base import Benchmark, ScorerSpec
from lceval.core.io import read_records
from lceval.core.records import Context, Gold, Judgement, Response, Sample

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "regression"
RESULTS = Path(__file__).parent / "results" / "fuzz_scorers.md"

REPEATED = ("[", "(", ")", "*", "#*#", "Week 1 ", "\\", "{", '"', "a", " ", "\n", "0", "A.", "<")
MB = 1_000_000


def gold_strings(gold: object) -> list[str]:
    """Every non-empty string (and number as text) inside a gold record."""
    out: list[str] = []

    def walk(x: object) -> None:
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, bool | int | float):
            out.append(str(x))
        elif isinstance(x, Gold) or dataclasses.is_dataclass(x) and not isinstance(x, type):
            walk(dataclasses.asdict(x))
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list | tuple | set | frozenset):
            for v in x:
                walk(v)

    walk(gold)
    # Long gold strings (a whole context) would make every near-miss a medium output: cut them.
    return [s[:2000] for s in out if s]


def random_unicode(rng: random.Random, n: int) -> str:
    """``n`` code points from the whole range, lone surrogates and controls included."""
    pools = (
        (0, 0x7F),
        (0, 0x1F),
        (0xD800, 0xDFFF),
        (0x80, 0xFFFF),
        (0x10000, 0x10FFFF),
    )
    out = []
    for _ in range(n):
        lo, hi = pools[rng.randrange(5)]
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def near_miss(rng: random.Random, strings: list[str]) -> str:
    """Gold strings, mutated: some dropped, shuffled, case-changed, cut, repeated, glued."""
    if not strings:
        return random_unicode(rng, 20)
    picked = rng.sample(strings, k=min(len(strings), rng.randint(1, 8)))
    out = []
    for s in picked:
        op = rng.randrange(7)
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
        elif op == 5:
            s = s.swapcase()
        out.append(s)
    rng.shuffle(out)
    return rng.choice(("\n", " ", ", ", "#*#", "", "\n\n", "**")).join(out)


def short_kinds(rng: random.Random, strings: list[str]) -> list[tuple[str, Callable[[], str]]]:
    """(kind, maker) of the short and medium outputs for one sample's gold strings."""
    return [
        ("empty", lambda: ""),
        (
            "whitespace",
            lambda: "".join(
                rng.choice((" ", "\n", "\t", "\r", "\u3000", "\u200b", "\xa0", "\u2028"))
                for _ in range(rng.randint(1, 50))
            ),
        ),
        ("unicode", lambda: random_unicode(rng, rng.randint(1, 300))),
        ("surrogate", lambda: "x" + chr(rng.randint(0xD800, 0xDFFF)) + near_miss(rng, strings)),
        ("control", lambda: "".join(chr(rng.randint(0, 31)) for _ in range(rng.randint(1, 80)))),
        (
            "brackets",
            lambda: (
                rng.choice("[({<") * rng.randint(1, 200)
                + near_miss(rng, strings)
                + rng.choice("])}>") * rng.randint(0, 200)
            ),
        ),
        ("near-miss", lambda: near_miss(rng, strings)),
        ("repeat", lambda: rng.choice(REPEATED) * rng.randint(100, 20_000)),
        (
            "json",
            lambda: json.dumps(
                rng.sample(strings, k=min(len(strings), rng.randint(0, 10))),
                ensure_ascii=rng.random() < 0.5,
            ),
        ),
    ]


def big_units(rng: random.Random, strings: list[str]) -> list[tuple[str, str]]:
    """(label, unit) pairs whose repetition to 1 MB makes the big outputs."""
    units = [(repr(u), u) for u in REPEATED]
    units.append(("lone surrogate", "\ud800"))
    units.append(("near-miss", near_miss(rng, strings) + "\n"))
    units.append(("random unicode", random_unicode(rng, 5000)))
    return units


def one_megabyte(unit: str) -> str:
    return (unit * (MB // max(1, len(unit)) + 1))[:MB]


def plan(
    rng: random.Random, samples: list[Sample], n: int, big: int
) -> Iterator[tuple[Sample, str, str]]:
    """``n`` (sample, kind, text): ``big`` 1 MB outputs first, then short ones, samples taken in
    turn and each sample cycling through the short kinds."""
    strings = [gold_strings(s.gold) for s in samples]
    kinds = [short_kinds(rng, g) for g in strings]
    units = [big_units(rng, g) for g in strings]
    m = len(samples)
    for i in range(n):
        j = i % m
        if i < big:
            label, unit = units[j][(i // m + j) % len(units[j])]
            yield samples[j], f"1MB {label}", one_megabyte(unit)
        else:
            kind, make = kinds[j][(i // m) % len(kinds[j])]
            yield samples[j], kind, make()


def load_fixture(bench: Benchmark) -> tuple[list[Sample], dict[str, Context], str]:
    """Samples (typed gold), contexts by id and where they came from."""
    folder = FIXTURES / bench.key
    if (folder / "samples.jsonl").exists():
        samples = registry.load_samples(read_records(folder / "samples.jsonl", Sample))
        contexts = {c.id: c for c in read_records(folder / "contexts.jsonl", Context)}
        return samples, contexts, str(folder.relative_to(ROOT))
    raise SystemExit(f"{bench.key}: no regression fixture under {folder}")


@dataclasses.dataclass
class Stats:
    calls: int = 0
    exceptions: int = 0
    out_of_range: int = 0
    nan_no_reason: int = 0
    nan: int = 0
    seconds: float = 0.0
    # (CPU seconds, wall seconds, input kind, task) of the call with the most CPU time
    slowest_big: tuple[float, float, str, str] = (0.0, 0.0, "", "")
    slowest_small: tuple[float, float, str, str] = (0.0, 0.0, "", "")
    max_wall: float = 0.0
    big_over_1s: int = 0
    load: tuple[float, float] = (0.0, 0.0)
    examples: list[str] = dataclasses.field(default_factory=list)
    kind_seconds: dict[str, float] = dataclasses.field(default_factory=dict)

    def note(self, s: Sample, kind: str, text: str, what: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(
                f"{s.id} ({s.task}), {kind}, {len(text):,} chars {text[:60]!r}: {what}"
            )


def check(
    st: Stats, score: Callable[..., Judgement], s: Sample, ctx: Context | None, kind: str, text: str
):
    """Score one output and count what is wrong with the result."""
    r = Response(sample_id=s.id, model="fuzz", text=text, config_hash="fuzz")
    try:
        j = score(s, r, ctx)
    except ValueError as exc:
        # Judgement refuses a value outside [0, 1] with this message
        if str(exc).startswith("Judgement.value must be in [0, 1]"):
            st.out_of_range += 1
            st.note(s, kind, text, str(exc))
        else:
            st.exceptions += 1
            st.note(s, kind, text, _where(exc))
        return
    except Exception as exc:  # noqa: BLE001 - counting them is the point
        st.exceptions += 1
        st.note(s, kind, text, _where(exc))
        return
    v = j.value
    if not isinstance(v, int | float) or isinstance(v, bool):
        st.out_of_range += 1
        st.note(s, kind, text, f"value {v!r}")
    elif math.isnan(v):
        st.nan += 1
        if not (isinstance(j.explanation, str) and j.explanation.strip()):
            st.nan_no_reason += 1
            st.note(s, kind, text, "NaN without a reason")
    elif not 0.0 <= v <= 1.0:  # a Judgement subclass or stand-in that skips the check
        st.out_of_range += 1
        st.note(s, kind, text, f"value {v!r}")


def fuzz_scorer(
    spec: ScorerSpec,
    samples: list[Sample],
    contexts: dict[str, Context],
    n: int,
    big: int,
    seed: int,
    hang: float,
) -> Stats:
    assert spec.score is not None
    score = spec.score
    rng = random.Random(f"{seed}/{spec.name}")
    st = Stats()
    # Warm-up, not counted: the first call of a scorer may import its checkers or metrics.
    for s in samples:
        r = Response(sample_id=s.id, model="fuzz", text="warm-up", config_hash="fuzz")
        try:
            score(s, r, contexts.get(s.context_id) if s.context_id else None)
        except Exception:  # noqa: BLE001, S110 - the timed loop counts failures
            pass
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    for s, kind, text in plan(rng, samples, n, big):
        ctx = contexts.get(s.context_id) if s.context_id else None
        faulthandler.dump_traceback_later(hang, exit=True)
        w, c = time.perf_counter(), time.process_time()
        check(st, score, s, ctx, kind, text)
        cpu, wall = time.process_time() - c, time.perf_counter() - w
        faulthandler.cancel_dump_traceback_later()
        st.calls += 1
        is_big = kind.startswith("1MB")
        k = "1MB" if is_big else kind
        st.kind_seconds[k] = st.kind_seconds.get(k, 0.0) + cpu
        st.max_wall = max(st.max_wall, wall)
        if is_big:
            st.big_over_1s += int(cpu >= 1.0)
            if cpu > st.slowest_big[0]:
                st.slowest_big = (cpu, wall, kind, s.task)
        elif cpu > st.slowest_small[0]:
            st.slowest_small = (cpu, wall, f"{kind}, {len(text):,} chars", s.task)
    st.seconds = time.perf_counter() - t0
    st.load = (load0, os.getloadavg()[0])
    return st


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    at = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {str(exc)[:200]}{at}"


def _slow(x: tuple[float, float, str, str]) -> str:
    cpu, wall, kind, task = x
    return f"{cpu:.3f} s ({wall:.3f} s wall; {kind}, {task})" if kind else "-"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="outputs per scorer")
    ap.add_argument("--big", type=int, default=100, help="1 MB outputs per scorer (of --n)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=None, help="scorer names")
    ap.add_argument("--hang", type=float, default=300.0, help="seconds before a call is a hang")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    niceness = os.nice(0)
    given = shlex.join(sys.argv[1:] if argv is None else argv)
    command = (f"nice -n {niceness} " if niceness else "") + (
        f"python bench/fuzz_scorers.py {given}".strip()
    )
    rows: list[tuple[str, str, Stats]] = []
    for bench in registry.all_benchmarks():
        specs = [
            spec
            for spec in bench.scorers.values()
            if spec.score is not None and (not args.only or spec.name in args.only)
        ]
        if not specs:
            continue
        samples, contexts, source = load_fixture(bench)
        for spec in specs:
            st = fuzz_scorer(spec, samples, contexts, args.n, args.big, args.seed, args.hang)
            rows.append((spec.name, f"{len(samples)} samples, {source}", st))
            print(
                f"{spec.name}: {st.calls:,} calls in {st.seconds:.1f} s; exceptions "
                f"{st.exceptions}, out of range {st.out_of_range}, NaN without reason "
                f"{st.nan_no_reason} (NaN {st.nan}); slowest 1 MB {_slow(st.slowest_big)}, "
                f"1 MB calls >= 1 s CPU {st.big_over_1s}, slowest other "
                f"{_slow(st.slowest_small)}, longest wall {st.max_wall:.3f} s; "
                f"load {st.load[0]:.2f} -> {st.load[1]:.2f}",
                flush=True,
            )
            print(
                "  seconds by kind: "
                + ", ".join(
                    f"{k} {v:.1f}" for k, v in sorted(st.kind_seconds.items(), key=lambda x: -x[1])
                ),
                flush=True,
            )
            for e in st.examples:
                print(f"  {e}", flush=True)
    lines = [
        "# Scorer fuzzing: hostile model outputs",
        "",
        f"`{command}` from the repo root (seed {args.seed}; {args.n:,} outputs per scorer, "
        f"{args.big} of them 1,000,000 characters). Machine: {_cpu()}, {os.cpu_count()} CPUs "
        f"shared with other work, Python {platform.python_version()}; the load average (1 min) "
        "at the start and end of each scorer is in the last column. Call times are CPU seconds "
        "of this process (steadier than wall time on a shared machine), wall time in brackets; "
        "the slowest call is the one with the most CPU time. Default scorer options; batch "
        "judges (they need a model) are not fuzzed. Goals: 0 exceptions, 0 values outside "
        "[0, 1], 0 NaN without a reason, under 1 s for a 1 MB output.",
        "",
        "| scorer | samples | outputs | exceptions | outside [0, 1] | NaN without reason "
        "| NaN (with reason) | slowest 1 MB call | 1 MB calls >= 1 s | slowest other call "
        "| wall s | calls/s | load |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | --- |",
    ]
    for name, source, st in rows:
        b, o = st.slowest_big, st.slowest_small
        lines.append(
            f"| `{name}` | {source} | {st.calls:,} | {st.exceptions} | {st.out_of_range} | "
            f"{st.nan_no_reason} | {st.nan - st.nan_no_reason:,} | "
            f"{_slow(b)} | {st.big_over_1s} | {_slow(o)} | {st.seconds:,.0f} | "
            f"{st.calls / st.seconds:,.0f} | {st.load[0]:.2f} -> {st.load[1]:.2f} |"
        )
    found = [(name, e) for name, _, st in rows for e in st.examples]
    if found:
        lines += ["", "Findings (first five per scorer):", ""]
        lines += [f"- `{name}`: {e}" for name, e in found]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    bad = sum(
        st.exceptions + st.out_of_range + st.nan_no_reason + st.big_over_1s for _, _, st in rows
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
