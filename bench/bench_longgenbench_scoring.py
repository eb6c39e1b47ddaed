"""Speed and memory of scoring LongGenBench outputs (offline judge), against the official parsing.

Run from the repo root: ``python bench/bench_longgenbench_scoring.py [--official PATH]
[--n-outputs 800] [--tokens 32768] [--repeat 7]
[--out bench/results/longgenbench_scoring.md]``.

Builds the full LongGenBench set (100 prompts x 4 scenarios x 2 versions = 800 samples), writes
one synthetic output of about ``--tokens`` o200k tokens per sample (every entry of the scenario
with filler prose, the requirements written on their entries, so the judge has real work; every
tenth output also carries typographic non-ASCII text: curly quotes, dashes, accents, a no-break
space), and measures:

1. Parsing, in this process, typed gold already loaded: lceval's
   :func:`lceval.benchmarks.longgenbench.score.prepare` (blocks, entries, CR, word count, the word
   offset of each judged block, the (block, description) pairs) against the official evaluation
   of the same outputs (mozhu621/LongGenBench): ``process_output`` of ``Evalution/inference.py``
   (split on ``#*#``, word count) then, from ``Evalution/eval.py``, ``parse_blocks``,
   ``create_prompts`` for the three check types and ``calculate_completion_rate``. The official
   functions are imported from a checkout (``--official PATH``; nothing is copied): both files
   parse arguments and import vLLM at import time, so each function is compiled alone from the
   file's syntax tree. Each side is timed ``--repeat`` times, interleaved; the fastest run counts.
   Times are CPU seconds of the process (``time.process_time``), steadier than wall time on a
   shared machine. Results are checked equal first (CR, words, blocks, judged checks per type,
   and every official judge prompt against lceval's prompt for the same pair).
2. lceval's per-response scorer ``score_longgenbench`` (parsing + offline judge + per-check rows).
3. ``lceval.run.score`` (streams responses.jsonl, scores, writes scores.parquet and the
   per-check file) and ``lceval.report.write_report``, each in a fresh child process: wall
   seconds and the child's peak resident memory.

Tables only, no assertions (DEVELOPING.md: no timed tests).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lceval.report
import lceval.run
from lceval.benchmarks.longgenbench.gold import GOLD_KEYS, KINDS

CHILD = """
import json, sys, time
t0 = time.perf_counter()
stage, run_id, root = sys.argv[1], sys.argv[2], sys.argv[3]
if stage == "score":
    n = len(lceval.run.score(run_id, root=root, progress=False))
else:
    n = len(lceval.report.write_report(run_id, root=root))
dt = time.perf_counter() - t0
# VmHWM: this process's peak resident memory (ru_maxrss would include the parent's at fork)
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps({"s": dt, "rss_mb": hwm / 1024, "n": n}))
"""

WORDS = (
    "the floor offers bright open space with tall windows warm wood and quiet corners where "
    "visitors gather staff work and the design keeps light air and movement in balance while "
    "materials stay simple durable and local so the building feels calm welcoming and practical"
).split()
TYPOGRAPHIC = "visitors’ café — “bright” naïve\u00a0rooms".split(" ")


def synthetic_output(sample: Any, n_words: int, rng: random.Random, fancy: bool = False) -> str:
    """Every entry of the sample with filler words; each requirement written on its entry."""
    g = sample.gold
    descs: dict[int, list[str]] = {}
    for c in g.checks:
        descs.setdefault(c.entry, []).append(c.description)
    per_entry = max(5, n_words // g.number)
    pool = WORDS + TYPOGRAPHIC if fancy else WORDS
    parts = []
    for e in range(1, g.number + 1):
        filler = " ".join(rng.choices(pool, k=per_entry))
        extra = (" It features " + " and ".join(descs[e]) + ".") if e in descs else ""
        head = "" if e == 1 else f"#*# {g.type} {e}:"
        parts.append(f"{head} {filler}.{extra}\n")
    return "".join(parts)


def official_functions(path: Path) -> dict[str, Callable[..., Any]]:
    """The official parsing functions, each compiled alone from its file's syntax tree."""
    wanted = {
        "Evalution/inference.py": ("process_output",),
        "Evalution/eval.py": ("parse_blocks", "create_prompts", "calculate_completion_rate"),
    }
    namespace: dict[str, Any] = {"re": re}
    for rel, names in wanted.items():
        source = path / rel
        if not source.exists():
            raise SystemExit(f"no {rel} under {path}")
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in names:
                module = ast.Module(body=[node], type_ignores=[])
                exec(compile(module, str(source), "exec"), namespace)  # noqa: S102
    missing = [n for names in wanted.values() for n in names if n not in namespace]
    if missing:
        raise SystemExit(f"official functions not found: {missing}")
    return namespace


def official_parse(fns: dict[str, Callable[..., Any]], gold: Any, text: str) -> dict[str, Any]:
    """The official evaluation of one output up to the judge (no model): what ``eval.py`` does."""
    result = fns["process_output"](gold.prefix + text)
    blocks = fns["parse_blocks"](result["blocks"], gold.type)
    prompts = {}
    for kind, key in GOLD_KEYS.items():
        prompts[kind] = fns["create_prompts"](getattr(gold, key), blocks)[0]
    return {
        "cr": fns["calculate_completion_rate"](blocks, gold.number),
        "words": result["word_count"],
        "n_blocks": len(result["blocks"]),
        "prompts": prompts,
    }


def check_equal(fns: dict[str, Callable[..., Any]], samples: list[Any], texts: list[str]) -> None:
    """Stop when lceval's parsing differs from the official one on any output."""
    from lceval.benchmarks.longgenbench.judge import judge_prompt
    from lceval.benchmarks.longgenbench.score import prepare

    for s, text in zip(samples, texts, strict=True):
        off = official_parse(fns, s.gold, text)
        p = prepare(s, text)
        mine = {k: [judge_prompt(b, d) for (b, d), c in _judged(p) if c.kind == k] for k in KINDS}
        same = (
            abs(off["cr"] - 100 * p.cr) < 1e-9
            and off["words"] == p.words
            and off["n_blocks"] == p.n_blocks
            and off["prompts"] == mine
        )
        if not same:
            raise SystemExit(f"lceval and the official parsing differ on {s.id}")


def _judged(p: Any) -> list[tuple[tuple[str, str], Any]]:
    checks = [c for c, i in zip(p.checks, p.check_blocks, strict=True) if i is not None]
    return list(zip(p.pairs, checks, strict=True))


def cpu_seconds(fn: Callable[[], Any]) -> float:
    """CPU seconds of this process spent in ``fn()`` (steadier than wall time on a shared
    machine)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official", type=Path, help="a checkout of mozhu621/LongGenBench")
    ap.add_argument("--n-outputs", type=int, default=800)
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default="bench/results/longgenbench_scoring.md")
    args = ap.parse_args()

    from lceval.benchmarks.longgenbench.score import prepare, score_longgenbench
    from lceval.core.io import dumps
    from lceval.core.records import Response
    from lceval.core.tokens import count_tokens

    root = Path(tempfile.mkdtemp(prefix="lgb-bench-"))
    run = lceval.run.build("bench", "longgenbench", {"n_per_scenario": 100}, root=root)
    samples = lceval.run.load_samples(run)[: args.n_outputs]
    rng = random.Random(0)
    probe = synthetic_output(samples[0], 10_000, rng)
    n_words = int(args.tokens * len(probe.split()) / count_tokens(probe))
    texts = [synthetic_output(s, n_words, rng, fancy=i % 10 == 0) for i, s in enumerate(samples)]
    responses = [
        Response(s.id, "synthetic", t, "bench") for s, t in zip(samples, texts, strict=True)
    ]
    with open(run.responses, "w", encoding="utf-8") as f:
        f.writelines(dumps(r) + "\n" for r in responses)
    probes = texts[1::100]  # plain-text outputs (every tenth, from 0, is typographic)
    mean_tok = sum(map(count_tokens, probes)) / len(probes)
    size_mb = run.responses.stat().st_size / 2**20
    total_chars = sum(map(len, texts))

    pairs = list(zip(samples, texts, strict=True))
    sides: dict[str, Callable[[], Any]] = {
        "lceval prepare": lambda: [prepare(s, t) for s, t in pairs],
        "lceval score_longgenbench (+ offline judge)": lambda: [
            score_longgenbench(s, r, None) for s, r in zip(samples, responses, strict=True)
        ],
    }
    if args.official is not None:
        fns = official_functions(args.official)
        check_equal(fns, samples, texts)
        print("lceval and the official parsing agree on every output", flush=True)
        sides["official process_output + parse_blocks + create_prompts + CR"] = lambda: [
            official_parse(fns, s.gold, t) for s, t in pairs
        ]
    times: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(args.repeat):  # interleaved
        for name, fn in sides.items():
            times[name].append(cpu_seconds(fn))
    best = {k: min(v) for k, v in times.items()}
    for k, v in best.items():
        print(f"{k}: {v:.3f} s", flush=True)

    stages = []
    for stage in ("score", "report"):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, stage, "bench", str(root)],
            capture_output=True,
            text=True,
            check=True,
        )
        stages.append((stage, json.loads(out.stdout.strip().splitlines()[-1])))
        print(stage, stages[-1][1], flush=True)
    shutil.rmtree(root, ignore_errors=True)

    n = len(samples)
    lines = [
        f"# LongGenBench scoring: {n} outputs of about {args.tokens} tokens",
        "",
        "`python bench/bench_longgenbench_scoring.py"
        f"{' --official PATH' if args.official else ''} --n-outputs {n} --tokens {args.tokens} "
        f"--repeat {args.repeat}` on "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared with other "
        f"jobs), Python {platform.python_version()}.",
        f"responses.jsonl: {size_mb:.0f} MiB, {total_chars / 1e6:.1f} M characters, mean "
        f"{mean_tok:.0f} o200k tokens per plain output (every 100th measured); every tenth output "
        "has typographic non-ASCII text.",
        "",
        "## Parsing (same outputs, typed gold loaded; CPU s, fastest of the interleaved runs)",
        "",
        "| what | s | outputs / s | MB / s |",
        "| --- | ---: | ---: | ---: |",
    ]
    for k, v in best.items():
        lines.append(f"| {k} | {v:.3f} | {n / v:,.0f} | {total_chars / 1e6 / v:,.0f} |")
    off_key = next((k for k in best if k.startswith("official")), None)
    if off_key:
        ratio = best[off_key] / best["lceval prepare"]
        lines += [
            "",
            f"lceval `prepare` is {ratio:.1f}x the speed of the official parsing; results are "
            "equal on every output (CR, words, blocks, judged checks and each judge prompt).",
        ]
    lines += [
        "",
        "## Pipeline stages (fresh child process each)",
        "",
        "| stage | what | wall s | peak RSS MiB |",
        "| --- | --- | ---: | ---: |",
    ]
    what = {
        "score": "lceval.run.score: stream responses, parse, offline judge, write scores + checks",
        "report": "lceval.report.write_report: Table 3, by scenario/type/position, figures",
    }
    for stage, r in stages:
        lines.append(f"| {stage} | {what[stage]} | {r['s']:.1f} | {r['rss_mb']:.0f} |")
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
