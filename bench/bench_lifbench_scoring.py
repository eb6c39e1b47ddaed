"""Speed of LIFEval ARS scoring on the full grid: 2,766 samples x 20 models = 55,320 responses.

Samples and contexts are synthesized at the paper's sizes (List elements and MultiDoc documents per
length interval as in the official build; prompts framed as the builder frames them; typed gold of
``lceval.benchmarks.lifbench.gold``); responses cycle through perfect, partial and garbage answers.
Writes a markdown table to ``bench/results/lifbench_scoring.md``.

With ``--official PATH`` (a checkout of SheldonWu0327/LIFBench-2024), the official
``evaluation/EvaluateFunc.py`` (imported from that checkout, never copied) judges the same
(sample, output) pairs of the first ``--official-models`` models, and a second table gives per
task the CPU time per pair of both (``time.process_time`` over one loop per task, fastest of
``--repeat`` rounds, so other processes on a shared machine do not count), the speed-up, and the
share of pairs where both give the same total score. Only the judges are timed: lceval's
``score_lifbench`` returning its Judgement; the official judge on an ``output_dict`` prepared
beforehand.

Run: ``python bench/bench_lifbench_scoring.py [--models 20] [--official PATH]``
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import math
import os
import platform
import random
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from lceval.benchmarks.lifbench.build import plan_counts, scenario_frame
from lceval.benchmarks.lifbench.gold import GOLD, ONEDOC_TAGS
from lceval.benchmarks.lifbench.score import score_lifbench
from lceval.core.records import Context, Response, Sample

# The full grid's per-task counts (paper Table 2), as the builder plans them.
COUNTS = plan_counts({"lengths": ["4k", "8k", "16k", "32k", "64k", "128k"]})
LENGTHS = (3072, 6144, 13312, 28672, 61440, 122880)
N_ELEMENTS = dict(zip(LENGTHS, (130, 260, 560, 1200, 2600, 5200), strict=True))
N_DOCS = dict(zip(LENGTHS, (10, 20, 45, 98, 215, 433), strict=True))
JOINER = {"List": "\n", "MultiDoc": "\n", "OneDoc": "\n\n"}
INSTRUCTION = {"List": "Instruction: ...", "MultiDoc": "\n Instructions:...", "OneDoc": "..."}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def build(seed: int = 0) -> tuple[list[Sample], dict[str, Context]]:
    """Synthetic samples (typed gold) and contexts of the full grid."""
    rng = random.Random(seed)
    words = "the of model list long context follow instruction answer sea poem data".split()
    contexts: dict[str, Context] = {}
    elems: dict[int, list[str]] = {}
    docs: dict[int, list[dict[str, str]]] = {}
    for n in LENGTHS:
        el = [
            uuid.UUID(int=rng.getrandbits(128)).hex
            if rng.random() < 0.5
            else " ".join(rng.choice(words) for _ in range(rng.randint(5, 40)))
            for _ in range(N_ELEMENTS[n])
        ]
        elems[n] = el
        contexts[f"List/{n}"] = Context(
            f"List/{n}", "\n".join(f"{i}. {e}" for i, e in enumerate(el, 1)), n, "o200k_base"
        )
        dd = []
        for i in range(N_DOCS[n]):
            d = {"id": uuid.UUID(int=rng.getrandbits(128)).hex[:22]}
            if rng.random() < 0.75:
                d["title"] = f"t{i}"
            d["text"] = " ".join(rng.choice(words) for _ in range(300))
            if rng.random() < 0.85:
                d["source"] = rng.choice(("news", "paper", "meeting"))
            dd.append(d)
        docs[n] = dd
        text = "".join(
            f"******************** doc-{i} ********************\n"
            + "".join(f"{k}: {v}\n" for k, v in d.items())
            + "\n\n"
            for i, d in enumerate(dd, 1)
        )
        contexts[f"MultiDoc/{n}"] = Context(f"MultiDoc/{n}", text, n, "o200k_base")
        contexts[f"OneDoc/{n}"] = Context(f"OneDoc/{n}", "essay " * n, n, "o200k_base")
    key_sentences = {
        t: [
            {
                "text": f"Key sentence {t} {j} " + " ".join(rng.choice(words) for _ in range(15)),
                "order": 4 * k + j,
                "sentence_index": 10 * (4 * k + j),
                "is_true": j < 3,
                "head": f"<{t}-{j}>",
                "tail": f"<{t}>" if j < 3 else "<#Topic#>",
            }
            for j in range(4 if t != "|Summary|" else 0)
        ]
        for k, t in enumerate(ONEDOC_TAGS)
    }
    all_keys = [x for v in key_sentences.values() for x in v]
    frames = {s: scenario_frame(s)[0] for s in JOINER}
    samples = []
    for task, count in COUNTS.items():
        for k in range(count):
            n = LENGTHS[k % 6]
            el, dd = elems[n], docs[n]
            pos = rng.randint(2, len(el) - 1)
            chars = [min(map(len, el)), max(map(len, el))]
            around = {
                "id": pos,
                "ordid": _ordinal(pos),
                "element": el[pos - 1],
                "pre_element": el[pos - 2],
                "post_element": el[pos],
            }
            common = {"n_items": len(el), "elem_chars": chars}
            gold: dict[str, Any]
            if task in ("LSI", "LOI", "LOE"):
                bias = 0 if task == "LSI" else rng.choice((1, -1))
                target = el[pos - 1 + bias]
                gold, scen = {**around, "bias": bias, **common, "target": target}, "List"
            elif task in ("LBI", "LBE"):
                gold, scen = {**around, "bias": rng.choice((1, -1)), **common}, "List"
            elif task == "LMI":
                ids = rng.sample(range(1, len(el) + 1), rng.randint(2, 10))
                gold = {"id_arr": ids, "elements": [el[i - 1] for i in ids], **common}
                scen = "List"
            elif task == "MB":
                cands = ["apple", "banana", "cherry", "date"]
                rule_key = "".join(rng.sample("abcd", 4))
                ranked = sorted(cands, key=lambda w: rule_key.index(w[0]))
                doc_keys = [list(d) for d in dd]
                labels = [ranked[2 * ("title" not in k) + ("source" not in k)] for k in doc_keys]
                gold = {
                    "candidates": cands,
                    "rule_key": rule_key,
                    "rules": "...",
                    "doc_keys": doc_keys,
                    "labels": labels,
                    "n_items": len(dd),
                }
                scen = "MultiDoc"
            elif task == "MF":
                groups = [[i + 1, i + 2] for i in range(0, min(len(dd), 10), 2)]
                keys = ["id", "title"]
                gold = {
                    "info_keys": keys,
                    "info_text": "id and title",
                    "dup_idxs": groups,
                    "dup_infos": [[{k: dd[i - 1].get(k) for k in keys} for i in g] for g in groups],
                    "n_items": len(dd),
                }
                scen = "MultiDoc"
            elif task == "OR":
                num = rng.choice((1, 2, 4, 6, 8))
                gold = {"num": num, "sep": "###", "key_sentences": key_sentences, "n_items": 300}
                scen = "OneDoc"
            elif task == "OQ":
                ev: dict[str, Any] = rng.choice([*all_keys, {"text": "Untagged.", "is_true": None}])
                kind = {True: "true", False: "fake", None: "untagged"}[ev["is_true"]]
                options = ["True", "False"]
                gold = {
                    "evidence": ev["text"],
                    "options": options,
                    "evidence_kind": kind,
                    "is_key": kind != "untagged",
                    "is_true_key": kind == "true",
                    "answer": options[0] if kind == "true" else options[1],
                    "key_sentences": key_sentences,
                    "n_items": 300,
                }
                scen = "OneDoc"
            else:
                tag = rng.choice(ONEDOC_TAGS)
                ks = key_sentences[tag]
                gold = {
                    "type": f"<{tag}>",
                    "tag": tag,
                    "targets": [s["text"] for s in ks if s["is_true"]],
                    "fakes": [s["text"] for s in ks if not s["is_true"]],
                    "key_sentences": key_sentences,
                    "n_items": 300,
                }
                scen = "OneDoc"
            samples.append(
                Sample(
                    id=f"{task}-{k}",
                    benchmark="lifbench",
                    task=task,
                    instruction=INSTRUCTION[scen],
                    description=frames[scen],
                    joiner=JOINER[scen],
                    context_id=f"{scen}/{n}",
                    gold=GOLD[task].from_dict(gold),
                    length=n,
                )
            )
    return samples, contexts


def answer(s: Sample, variant: int) -> str:
    """A perfect (0), partial (1) or garbage (2) answer to ``s``."""
    g = s.gold
    if variant == 2:
        return 'I am sorry, I cannot find that in the provided text. {"x": [1, 2'
    if s.task in ("LSI", "LOI", "LOE"):
        return g.target if variant == 0 else f"The answer is {g.target}."
    if s.task in ("LBI", "LBE"):
        side = g.post_element if g.bias == 1 else g.pre_element
        return g.element if variant else side
    if s.task == "LMI":
        return json.dumps(list(g.elements) if variant == 0 else list(g.elements[::-1][:-1]))
    if s.task == "MB":
        return json.dumps({f"doc{i}": lab for i, lab in enumerate(g.labels, 1)})
    if s.task == "MF":
        return "\n".join(
            json.dumps([[d["id"], d.get("title")] for d in grp]) for grp in g.dup_infos
        )
    ks = [x for v in g.key_sentences.values() for x in v]
    if s.task == "OR":
        return "\n".join(f"{x.text} ### #Topic#" for x in ks[: g.num + variant])
    if s.task == "OQ":
        return "True" if variant == 0 else "The answer is False."
    return json.dumps(list(g.targets) if variant == 0 else [x.text for x in ks[:5]])


# ------------------------------------------------------------------------------ official code
def load_official(path: str) -> ModuleType:
    """``evaluation/EvaluateFunc.py`` of an official checkout (imported from there, not copied)."""
    folder = Path(path) / "evaluation"
    if not (folder / "EvaluateFunc.py").is_file():
        raise SystemExit(f"{folder}/EvaluateFunc.py not found: pass a LIFBench-2024 checkout")
    sys.path.insert(0, str(folder))
    return importlib.import_module("EvaluateFunc")


def _label(gold: Any) -> dict[str, list[list[Any]]]:
    """The official ``label``: {tag: [[text, order, sentence_index, is_true], ...]}."""
    return {
        tag: [[k.text, k.order, k.sentence_index, k.is_true] for k in ks]
        for tag, ks in gold.key_sentences.items()
    }


def official_call(
    of: ModuleType, s: Sample, ctx: Context, output: str
) -> tuple[Callable[[dict[str, Any]], dict[str, float]], dict[str, Any]]:
    """The official judge of ``s.task`` and its ``output_dict`` for ``output``."""
    g = s.gold
    prompt = s.joiner.join([s.description, ctx.text, s.instruction])
    d: dict[str, Any] = {"output": output, "prompt": prompt}
    if s.task in ("LSI", "LOI", "LOE"):
        d["param"] = {
            "element": g.element,
            "pre_element": g.pre_element,
            "post_element": g.post_element,
            "bias": g.bias,
        }
        return of.judge_label_equal_output, d
    if s.task == "LMI":
        d["param"] = {"elements": list(g.elements)}
        return of.judge_labels_equal_outputs, d
    if s.task in ("LBI", "LBE"):
        d["param"] = {"id": g.id, "bias": g.bias}
        return of.judge_list_input_blur_offset_query, d
    if s.task == "MB":
        d["param"] = {
            "candidates": list(g.candidates),
            "rule_key": g.rule_key,
            "doc_keys": [list(k) for k in g.doc_keys],
        }
        d["label"] = g.n_items
        return of.judge_multidoc_batch_label, d
    if s.task == "MF":
        d["param"] = {
            "info_keys": " ".join(g.info_keys),
            "dup_infos": [[dict(x) for x in grp] for grp in g.dup_infos],
        }
        return of.judge_multidoc_find_dup_text, d
    d["label"] = _label(g)
    if s.task == "OR":
        d["param"] = {"num": g.num, "sep": g.sep}
        return of.judge_onedoc_repeat, d
    if s.task == "OQ":
        d["param"] = {"options": list(g.options), "evidence": g.evidence}
        return of.judge_onedoc_qa, d
    d["param"] = {"type": g.type}
    return of.judge_onedoc_extract, d


def compare(
    of: ModuleType,
    samples: list[Sample],
    contexts: dict[str, Context],
    n_models: int,
    repeat: int,
) -> list[str]:
    """Markdown rows: per task, lceval against the official judges on the same pairs.

    Each side runs the task's pairs in one loop; the CPU time (``time.process_time``, so other
    processes on the machine do not count) of the fastest of ``repeat`` rounds is kept. The
    official ``output_dict``s are prepared outside the timed loop.
    """
    rows = []
    for task in COUNTS:
        pairs = []
        for m in range(n_models):
            for i, s in enumerate(samples):
                if s.task == task:
                    ctx = contexts[s.context_id or ""]
                    r = Response(s.id, f"model-{m}", answer(s, (i + m) % 3), "h")
                    pairs.append((s, r, ctx, *official_call(of, s, ctx, r.text)))
        ours = [score_lifbench(s, r, ctx).value for s, r, ctx, _, _ in pairs]
        theirs: list[float | None] = []
        for _, _, _, judge, d in pairs:
            try:
                theirs.append(judge(copy.deepcopy(d))["total_score"])
            except Exception:  # noqa: BLE001 - the official code raises on some outputs
                theirs.append(None)
        same = sum(t is not None and abs(t - v) < 1e-9 for v, t in zip(ours, theirs, strict=True))
        raised = theirs.count(None)
        rounds = 1 if task in SLOW_OFFICIAL else repeat
        t_ours = t_off = math.inf
        for _ in range(rounds):
            t0 = time.process_time()
            for s, r, ctx, _, _ in pairs:
                score_lifbench(s, r, ctx)
            t_ours = min(t_ours, time.process_time() - t0)
            t0 = time.process_time()
            for _, _, _, judge, d in pairs:
                try:
                    judge(d)
                except Exception:  # noqa: BLE001 - counted above
                    pass
            t_off = min(t_off, time.process_time() - t0)
        k = len(pairs)
        rows.append(
            f"| {task} | {k} | {t_ours / k * 1e6:,.1f} | {t_off / k * 1e6:,.1f} | "
            f"{t_off / t_ours:.1f}x | {same / k:.0%} | {raised} |"
        )
    return rows


SLOW_OFFICIAL = frozenset({"LSI", "LMI", "LOI", "LOE", "LBI", "LBE", "OR"})
"""Tasks whose official judge takes milliseconds per pair (parsing the whole List prompt, or the
quadratic edit distance of OR): timed in one round."""


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--official", metavar="PATH", help="a LIFBench-2024 checkout to compare with")
    ap.add_argument(
        "--official-models",
        type=int,
        default=3,
        help="models whose responses the official code also judges (default 3)",
    )
    ap.add_argument(
        "--repeat", type=int, default=7, help="rounds of the comparison; the fastest is kept"
    )
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "lifbench_scoring.md"))
    args = ap.parse_args()
    of = load_official(args.official) if args.official else None
    samples, contexts = build()
    by_task: dict[str, list[tuple[Sample, Response, Context]]] = defaultdict(list)
    for m in range(args.models):
        for i, s in enumerate(samples):
            r = Response(s.id, f"model-{m}", answer(s, (i + m) % 3), "h")
            by_task[s.task].append((s, r, contexts[s.context_id or ""]))
    cpu: dict[str, float] = {}
    wall = time.perf_counter()
    for task, items in by_task.items():
        t0 = time.process_time()
        for s, r, ctx in items:
            sc = score_lifbench(s, r, ctx)
            assert sc.value == sc.value, sc.explanation  # synthetic gold is complete: no NaN
        cpu[task] = time.process_time() - t0
    wall = time.perf_counter() - wall
    n = sum(len(v) for v in by_task.values())
    lines = [
        "# LIFEval ARS scoring speed",
        "",
        f"Full grid: {len(samples)} samples x {args.models} models = {n} synthetic responses "
        f"(perfect / partial / garbage in turn), contexts at the paper's sizes (4k-128k).",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, one process; CPU seconds (``time.process_time``) of one "
        "loop per task over its responses.",
        "",
        "| task | responses | CPU seconds | responses/s |",
        "| --- | ---: | ---: | ---: |",
    ]
    for t in COUNTS:
        k = len(by_task[t])
        lines.append(f"| {t} | {k} | {cpu[t]:.2f} | {k / cpu[t]:,.0f} |")
    total = sum(cpu.values())
    lines.append(f"| **all** | {n} | {total:.1f} | {n / total:,.0f} |")
    lines += ["", f"Wall-clock for all: {wall:.1f} s."]
    if of is not None:
        lines += [
            "",
            f"## lceval vs the official code (the responses of {args.official_models} models)",
            "",
            "Official: SheldonWu0327/LIFBench-2024 `evaluation/EvaluateFunc.py`, imported from "
            "the checkout given. CPU microseconds per pair, fastest of "
            f"{args.repeat} rounds (one round for {', '.join(sorted(SLOW_OFFICIAL))}). Same score: "
            "share of pairs with equal totals (official total = rubric sum / task points).",
            "",
            "| task | pairs | lceval µs | official µs | speed-up | same score | official raised |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            *compare(of, samples, contexts, args.official_models, args.repeat),
        ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
