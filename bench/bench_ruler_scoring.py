"""Speed of RULER's per-sample scorer, against the official RULER metric functions if given.

Samples are built with lceval's RULER builder (13 tasks, ``--num-samples`` per task at 4,096
tokens); each sample gets four synthetic responses: the answer as RULER's prompts ask for it, the
answer followed by filler up to the task's answer budget (about 4 characters per token), filler
alone of that size, and an empty output. lceval's time is :func:`score_ruler` per response, typed
gold already loaded (as ``lceval.run.score`` calls it). The official time is RULER's own
evaluation of the same pairs: ``postprocess_pred`` per prediction (``scripts/eval/evaluate.py``)
and the task's metric over the task's lists (``scripts/eval/synthetic/constants.py``). Both are
imported from a checkout of NVIDIA/RULER (``--official PATH``, nothing is copied; evaluate.py
parses arguments and imports NeMo at import time, so its ``postprocess_pred`` is compiled alone
from the file's syntax tree). Each side is timed ``--repeat`` times, interleaved, in CPU seconds
of this process (``time.process_time``: steadier than wall time on a shared machine); the table
keeps the fastest run. Scores are checked equal first (official per-pair score, 0..100 rounded to
two decimals, against lceval's value x 100).

Run from the repo root: ``python bench/bench_ruler_scoring.py [--official PATH]
[--num-samples 20] [--repeat 30] [--out bench/results/ruler_scoring.md]``.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import platform
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lceval.benchmarks.registry import load_samples
from lceval.benchmarks.ruler.build import build_ruler
from lceval.benchmarks.ruler.gold import TASKS, VARIANTS
from lceval.benchmarks.ruler.score import score_ruler
from lceval.core.records import Response, Sample

FILLER = (
    "The answer to the question is given above and I have read the whole text carefully so "
    "that Nothing was Missed in it; here are my NOTES on the special magic numbers and words"
).split()


def official_functions(path: Path) -> tuple[Callable[[str, dict], str], dict[str, Any]]:
    """RULER's ``postprocess_pred`` and metric table (family -> metric_fn) from a checkout."""
    spec = importlib.util.spec_from_file_location(
        "ruler_eval_constants", path / "scripts/eval/synthetic/constants.py"
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"no scripts/eval/synthetic/constants.py under {path}")
    constants = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(constants)
    source = path / "scripts/eval/evaluate.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    node = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "postprocess_pred"
    )
    namespace: dict[str, Any] = {"re": re}
    exec(compile(ast.Module([node], []), str(source), "exec"), namespace)  # noqa: S102
    return namespace["postprocess_pred"], constants.TASKS


def responses(samples: list[Sample], seed: int = 0) -> list[tuple[Sample, Response]]:
    """Four responses per sample: answer, answer + filler, filler, empty."""
    rng = random.Random(seed)
    pairs = []
    for s in samples:
        refs = list(s.gold.outputs)
        budget_chars = 4 * s.max_new_tokens

        def filler(n_chars: int) -> str:
            words: list[str] = []
            while sum(len(w) + 1 for w in words) < n_chars:
                words.append(rng.choice(FILLER))
            return " ".join(words)

        answer = " " + ", ".join(refs[: max(1, len(refs) - rng.randrange(2))]) + "."
        texts = [
            answer,
            answer + "\n" + filler(budget_chars - len(answer)),
            filler(budget_chars),
            "",
        ]
        pairs += [(s, Response(s.id, f"m{k}", t, "h")) for k, t in enumerate(texts)]
    return pairs


Official = tuple[Callable[[str, dict], str], dict[str, Any]]
Times = dict[str, list[float]]


def check_equal(pairs: list[tuple[Sample, Response]], official: Official) -> None:
    """Assert lceval's value x 100 equals the official per-pair score (0..100, 2 decimals)."""
    post, table = official
    for s, r in pairs:
        metric_fn = table[VARIANTS[s.task].family]["metric_fn"]
        want = metric_fn([post(r.text, {})], [list(s.gold.outputs)])
        got = score_ruler(s, r, None).value
        assert round(got * 100, 2) == want, (s.id, r.text, got, want)


def time_pairs(
    pairs: list[tuple[Sample, Response]], official: Official | None, repeat: int
) -> Times:
    """Seconds per run over ``pairs``: lceval's scorer per pair; the official eval per family."""
    by_family: dict[str, tuple[list[str], list[list[str]]]] = {}
    for s, r in pairs:
        texts, refs = by_family.setdefault(VARIANTS[s.task].family, ([], []))
        texts.append(r.text)
        refs.append(list(s.gold.outputs))

    def run_lceval() -> list[float]:
        return [score_ruler(s, r, None).value for s, r in pairs]

    def run_official(post: Callable[[str, dict], str], table: dict[str, Any]) -> list[float]:
        return [
            table[family]["metric_fn"]([post(p, {}) for p in texts], refs)
            for family, (texts, refs) in by_family.items()
        ]

    times: Times = {"lceval": [], "official": []}
    for _ in range(repeat):
        t = time.process_time()
        run_lceval()
        times["lceval"].append(time.process_time() - t)
        if official is not None:
            t = time.process_time()
            run_official(*official)
            times["official"].append(time.process_time() - t)
    return times


def totals(rows: list[tuple[str, int, Times]]) -> tuple[float, float | None]:
    """Sum over rows of the fastest lceval and official times (seconds)."""
    lceval = sum(min(t["lceval"]) for _, _, t in rows)
    official = sum(min(t["official"]) for _, _, t in rows) if rows[0][2]["official"] else None
    return lceval, official


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--official", type=Path, help="a checkout of github.com/NVIDIA/RULER")
    ap.add_argument("--num-samples", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", default="bench/results/ruler_scoring.md")
    args = ap.parse_args()

    built = build_ruler({"lengths": [4096], "num_samples": args.num_samples})
    samples = load_samples(built.samples)
    pairs = responses(samples)
    official = official_functions(args.official) if args.official else None
    if official is not None:
        check_equal(pairs, official)  # also warms the typed gold's caches, as a run's first pass
    kinds = ("answer", "answer + filler", "filler", "empty")
    groups = [(task, [p for p in pairs if p[0].task == task]) for task in TASKS]
    groups += [(kind, [p for p in pairs if p[1].model == f"m{k}"]) for k, kind in enumerate(kinds)]
    rows = []
    for name, mine in groups:
        times = time_pairs(mine, official, args.repeat)
        rows.append((name, len(mine), times))
        print(name, {k: f"{min(v) / len(mine) * 1e6:.2f} us" for k, v in times.items() if v})

    head = "| pairs | n | lceval (us/pair) |"
    sep = "| --- | ---: | ---: |"
    if official is not None:
        head += " official (us/pair) | lceval speed-up |"
        sep += " ---: | ---: |"
    lines = [
        f"# RULER scoring: lceval's per-sample scorer{' vs the official eval' if official else ''}",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared), "
        f"Python {platform.python_version()}. {len(samples)} samples at 4,096 tokens x 4 "
        "responses (answer, answer + filler to the answer budget, filler, empty); CPU time, "
        f"fastest of {args.repeat} interleaved runs."
        + (" Scores equal the official per-pair scores." if official else ""),
        "",
        head,
        sep,
    ]

    def line(name: str, n: int, lceval_s: float, official_s: float | None) -> str:
        out = f"| {name} | {n} | {lceval_s / n * 1e6:.2f} |"
        if official_s is not None:
            out += f" {official_s / n * 1e6:.2f} | {official_s / lceval_s:.2f}x |"
        return out

    for name, n, times in rows:
        if name == kinds[0]:
            lines.append(line("**all tasks**", len(pairs), *totals(rows[: len(TASKS)])))
            lines += ["", "By response:", "", head, sep]
        best = {k: min(v) for k, v in times.items() if v}
        lines.append(line(name, n, best["lceval"], best.get("official")))
    lines.append("")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
