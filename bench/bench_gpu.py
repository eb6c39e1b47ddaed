"""Long contexts on one GPU: lceval's hf engine against plain ``model.generate`` and the floor.

Run from the repo root after ``make setup``:

    .venv/bin/python bench/bench_gpu.py --tiny                # CPU: 2-layer model, 4k/8k
    python3 bench/bench_gpu.py --lengths 8k,32k,128k          # a GPU: the 8B shape

For each length, LIFBench samples are built (``design: full``, ``max_samples_per_task`` 4: 44
samples over the List / MultiDoc / OneDoc contexts) and answered with ``--new-tokens`` tokens
each, by (1) ``lceval.run.infer`` on the hf engine, the batch sized by the engine, and (2)
plain transformers ``generate`` on the same rendered prompts, left-padded in batches of
``--stock-batch`` (each row prefills its own copy of the context). Each measurement runs in a
child process (peak memory is per process): wall time of answering (model load excluded),
answered / errors, new tokens per second, and the peak memory (``torch.cuda.max_memory_allocated``
on a GPU, the process's peak RSS, VmHWM, on the CPU).

The model: on a GPU a randomly initialised model of the exact Llama-3-8B shape with the embedded
SmolLM2 tokenizer (49,152 tokens; docs/guides/gpu.md), built on the machine and
saved under ``--model-dir``; ``--tiny`` a 2-layer random Llama (hidden 64) with the same
vocabulary, on the CPU. Random weights rarely emit EOS, so every answer runs to its budget.

The floor (:func:`floor`) is the work no engine can skip: the prefill of the prompts' unique
tokens (the token trie of all prompts: a context once) at ``--tflops`` (dense matmul plus
causal attention FLOPs), then the decoding steps, each reading the weights and the shared
context's keys/values once at ``--bandwidth``, with all rows of a context in one batch. On a GPU
the defaults are an H100 SXM's (800 TFLOP/s bf16, 3,000 GB/s); with ``--tiny`` both rates are
measured on this machine (best float32 matmul, a large tensor copy). Tables only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lceval.run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

EIGHT_B = dict(  # Llama-3-8B's shape with the embedded tokenizer's vocabulary
    hidden_size=4096,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    intermediate_size=14336,
    max_position_embeddings=262144,
    rope_theta=500000.0,
    tie_word_embeddings=False,
    vocab_size=49152,
)
TINY = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=256,
    max_position_embeddings=262144,
    tie_word_embeddings=False,
    vocab_size=49152,
)


def make_model(out: Path, shape: dict, device: str) -> Path:
    """A random Llama of ``shape`` with the embedded tokenizer, saved to ``out`` (once)."""
    if (out / "config.json").exists():
        return out
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from lceval.models.embedded import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model(None).path)
    cfg = LlamaConfig(
        **shape,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
    if device != "cpu":
        model = model.to(torch.bfloat16)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def build_run(root: Path, length: str, per_task: int) -> str:
    """LIFBench samples at one length (``design: full``) in ``root/<run id>``."""
    import yaml

    params = yaml.safe_load((ROOT / "params/01_build_data/smoke.yaml").read_text())
    params.update(lengths=[length], design="full", max_samples_per_task=per_task)
    run_id = f"gpu-{length}"
    if not (root / run_id / "samples.jsonl").exists():
        lceval.run.build(run_id, "lifbench", params, root=root)
    return run_id


def _peak(device: str) -> int:
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.max_memory_allocated())
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM"))


def child_lceval(root: Path, run_id: str, model: Path, new_tokens: int, device: str) -> dict:
    """Answer the run with lceval's hf engine (model load excluded from the time)."""

    os.environ["LCEVAL_BENCH"] = "1"
    t0 = time.perf_counter()
    out = lceval.run.infer(
        run_id,
        "hf",
        str(model),
        root=root,
        max_new_tokens=new_tokens,
        backend_options={"device": device},
        progress=False,
    )
    wall = time.perf_counter() - t0
    run = json.loads((root / run_id / "run.json").read_text())
    timing = next(iter(run["models"].values())).get("timing", {})
    answered = [r for r in out if r.error is None]
    return {
        "s": float(timing.get("generate_s") or wall),
        "answered": len(answered),
        "n": len(out),
        "errors": sorted({(r.error or "")[:120] for r in out if r.error})[:3],
        "new_tokens": sum(r.completion_tokens or 0 for r in answered),
        "peak": _peak(device),
    }


def child_stock(
    root: Path, run_id: str, model: Path, new_tokens: int, device: str, batch: int
) -> dict:
    """Plain transformers ``generate`` on the prompts lceval renders, left-padded batches."""
    import torch
    from transformers import AutoModelForCausalLM

    from lceval.core.records import Context, Sample, from_dict
    from lceval.models.base import GenerationConfig
    from lceval.models.hf import HFBackend

    engine = HFBackend(str(model), device=device)  # only its tokenizer and renderer
    engine.close()
    lm = AutoModelForCausalLM.from_pretrained(model, dtype=engine.dtype).to(device).eval()
    run = root / run_id
    samples = [from_dict(Sample, json.loads(x)) for x in (run / "samples.jsonl").open()]
    ctx = [from_dict(Context, json.loads(x)) for x in (run / "contexts.jsonl").open()]
    contexts = {c.id: c for c in ctx}
    config = GenerationConfig(max_new_tokens=new_tokens)
    prompts = [
        engine.tokenizer(engine.render(s, contexts, config).text)["input_ids"] for s in samples
    ]
    done = new = 0
    errors: set[str] = set()
    t0 = time.perf_counter()
    for k in range(0, len(prompts), batch):
        rows = prompts[k : k + batch]
        width = max(map(len, rows))
        ids = torch.tensor([[engine.pad_id] * (width - len(r)) + r for r in rows], device=device)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
        try:
            with torch.inference_mode():
                out = lm.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    max_new_tokens=new_tokens,
                    do_sample=False,
                    pad_token_id=engine.pad_id,
                )
            done += len(rows)
            new += int((out[:, width:] != engine.pad_id).sum())
        except torch.OutOfMemoryError as exc:
            errors.add(str(exc).splitlines()[0][:120])
            del ids, mask
            torch.cuda.empty_cache()
    return {
        "s": time.perf_counter() - t0,
        "answered": done,
        "n": len(prompts),
        "errors": sorted(errors)[:3],
        "new_tokens": new,
        "peak": _peak(device),
    }


def machine_rates(device: str) -> tuple[float, float]:
    """(best matmul FLOP/s, copy bytes/s) measured on this machine."""
    import torch

    n = 1024
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    best = 0.0
    for _ in range(5):
        t = time.perf_counter()
        a @ b
        best = max(best, 2 * n**3 / (time.perf_counter() - t))
    x = torch.empty(64 << 20, dtype=torch.float32, device=device)
    bw = 0.0
    for _ in range(3):
        t = time.perf_counter()
        x.clone()
        bw = max(bw, 2 * x.numel() * 4 / (time.perf_counter() - t))
    return best, bw


def floor(
    root: Path, run_id: str, model: Path, new_tokens: int, flops: float, bandwidth: float
) -> dict:
    """Seconds no engine can go under (see the module docstring), and its parts."""
    from transformers import AutoConfig

    from lceval.core.records import Context, Sample, from_dict
    from lceval.models.base import GenerationConfig
    from lceval.models.hf import HFBackend
    from lceval.run.plan import unique_prefix_positions

    cfg = AutoConfig.from_pretrained(model)
    engine = HFBackend(str(model), device="cpu", dtype="float32")
    run = root / run_id
    samples = [from_dict(Sample, json.loads(x)) for x in (run / "samples.jsonl").open()]
    contexts = {
        c.id: c
        for c in (from_dict(Context, json.loads(x)) for x in (run / "contexts.jsonl").open())
    }
    gen = GenerationConfig(max_new_tokens=new_tokens)
    ids = [engine.tokenizer(engine.render(s, contexts, gen).text)["input_ids"] for s in samples]
    engine.close()
    d_model, layers = cfg.hidden_size, cfg.num_hidden_layers
    kv_heads, head_dim = cfg.num_key_value_heads, getattr(cfg, "head_dim", None) or 128
    inter, vocab = cfg.intermediate_size, cfg.vocab_size
    params = layers * (2 * d_model * d_model + 2 * d_model * kv_heads * head_dim)
    params += layers * 3 * d_model * inter + vocab * d_model
    positions = unique_prefix_positions(ids)
    attn = sum(4 * layers * d_model * (p + 1) for p in positions)
    prefill = (2 * params * len(positions) + attn) / flops
    elem = 2 if flops > 1e14 else 4  # bf16 weights on a GPU, float32 on the CPU
    kv = 2 * layers * kv_heads * head_dim * elem  # keys and values of one token, all layers
    by_context: dict[str | None, list[int]] = {}
    for s, x in zip(samples, ids, strict=True):
        by_context.setdefault(s.context_id, []).append(len(x))
    decode = sum(
        new_tokens * (params * elem + kv * (max(lens) + new_tokens)) / bandwidth
        for lens in by_context.values()
    )
    return {
        "s": prefill + decode,
        "prefill_s": prefill,
        "decode_s": decode,
        "unique_tokens": len(positions),
        "prompt_tokens": sum(map(len, ids)),
        "samples": len(ids),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="2-layer model on the CPU")
    ap.add_argument("--lengths", default=None, help="LIFBench lengths (default 8k,32k,128k)")
    ap.add_argument("--samples-per-task", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--stock-batch", type=int, default=4)
    ap.add_argument("--skip-stock", action="store_true")
    ap.add_argument("--tflops", type=float, default=800.0)
    ap.add_argument("--bandwidth", type=float, default=3000.0, help="GB/s")
    ap.add_argument("--work", default=None, help="folder for runs and the model")
    ap.add_argument("--out", default=None, help="also write the table here (markdown)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    device = "cpu" if args.tiny else "cuda"
    work = Path(args.work or tempfile.mkdtemp(prefix="lceval-gpu-"))
    model_dir = work / ("tiny" if args.tiny else "rand8b")
    if args.child:
        kind, run_id = args.child
        if kind == "lceval":
            res = child_lceval(work, run_id, model_dir, args.new_tokens, device)
        else:
            res = child_stock(work, run_id, model_dir, args.new_tokens, device, args.stock_batch)
        print("RESULT " + json.dumps(res))
        return
    lengths = (args.lengths or ("4k,8k" if args.tiny else "8k,32k,128k")).split(",")
    make_model(model_dir, TINY if args.tiny else EIGHT_B, device)
    if args.tiny:
        flops, bandwidth = machine_rates("cpu")
    else:
        flops, bandwidth = args.tflops * 1e12, args.bandwidth * 1e9
    rows = []
    for length in lengths:
        run_id = build_run(work, length, args.samples_per_task)
        fl = floor(work, run_id, model_dir, args.new_tokens, flops, bandwidth)
        res = {}
        for kind in ("lceval", "stock"):
            if kind == "stock" and args.skip_stock:
                continue
            cmd = [sys.executable, __file__, "--child", kind, run_id, "--work", str(work)]
            cmd += ["--new-tokens", str(args.new_tokens), "--stock-batch", str(args.stock_batch)]
            cmd += ["--tiny"] if args.tiny else []
            p = subprocess.run(cmd, capture_output=True, text=True)
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            res[kind] = (
                json.loads(line[-1][7:])
                if line
                else {"s": float("nan"), "errors": [p.stderr.strip()[-200:]]}
            )
        rows.append((length, fl, res))
    unit = "GB" if not args.tiny else "MB"
    scale = 1e9 if not args.tiny else 1e6
    out = [
        f"device: {device}; rates: {flops / 1e12:.2f} TFLOP/s, {bandwidth / 1e9:.0f} GB/s; "
        f"{args.new_tokens} new tokens per sample",
        "",
        "| length | samples | prompt tokens (unique) | floor s | lceval s | x floor "
        f"| new tok/s | peak {unit} | answered | stock generate s | stock peak {unit} "
        "| stock answered |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for length, fl, res in rows:
        lc, st = res["lceval"], res.get("stock", {})
        tps = lc.get("new_tokens", 0) / lc["s"] if lc.get("s") else float("nan")
        out.append(
            f"| {length} | {fl['samples']} | {fl['prompt_tokens']:,} ({fl['unique_tokens']:,}) "
            f"| {fl['s']:.1f} | {lc['s']:.1f} | {lc['s'] / fl['s']:.1f} | {tps:.0f} "
            f"| {lc.get('peak', 0) / scale:.2f} | {lc.get('answered', 0)}/{lc.get('n', '?')} "
            f"| {st.get('s', float('nan')):.1f} | {st.get('peak', 0) / scale:.2f} "
            f"| {st.get('answered', '-')}/{st.get('n', '-')} |"
        )
        for kind, r in res.items():
            for e in r.get("errors", []):
                out.append(f"\n{length} {kind} error: {e}")
    text = "\n".join(out)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
