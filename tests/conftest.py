"""Session fixtures shared by the test suite: the embedded model folder, a tiny random model and
one headless Chromium."""

from __future__ import annotations

import os
import shutil
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lceval import params as declared
from lceval.benchmarks.base import Benchmark, BuildResult, ScorerSpec
from lceval.core.records import Context, Gold, Judgement, Sample
from lceval.models.backends import choose_backend

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never download


@pytest.fixture(autouse=True)
def _auto_decided_afresh():
    """``auto`` is decided once per process; tests that patch what it reads decide it afresh."""
    choose_backend.cache_clear()
    yield
    choose_backend.cache_clear()


@pytest.fixture(scope="session")
def embedded_model_dir() -> Path:
    """The embedded SmolLM2-135M-Instruct as a Hugging Face folder (converted once per machine)."""
    from lceval.models.embedded import resolve_model

    return Path(resolve_model(None).path)


def build_tiny_llama(out: Path, tokenizer_dir: Path, window: int) -> Path:
    """Save a random 2-layer Llama (fp32, ~16 MB) with the tokenizer of ``tokenizer_dir`` and a
    window of ``window`` tokens (``max_position_embeddings``) into ``out``."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=window,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
        initializer_range=0.3,  # the default 0.02 repeats one token; 0.3 gives varied greedy text
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, embedded_model_dir: Path) -> Path:
    """A random 2-layer Llama (fp32, ~16 MB) with SmolLM2's tokenizer and chat template.

    Loads and generates in about 0.1 s; its text is gibberish, but it is deterministic, so tests
    compare batched against one-by-one outputs, budgets, stop strings and truncation.
    Window: 1,024 tokens (``max_position_embeddings``).
    """
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), embedded_model_dir, 1024)


@pytest.fixture(scope="session")
def tiny_long_model_dir(tmp_path_factory: pytest.TempPathFactory, embedded_model_dir: Path) -> Path:
    """The tiny random Llama with a 16,384-token window (prompts of 4K-token grids fit)."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama-16k"), embedded_model_dir, 16384)


@pytest.fixture(scope="session")
def tiny_base_model_dir(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    """The tiny random Llama with its chat template removed: a base model (plain prompts)."""
    import json
    import shutil

    out = tmp_path_factory.mktemp("tiny-base")
    for f in tiny_model_dir.iterdir():
        shutil.copy(f, out / f.name)
    cfg = out / "tokenizer_config.json"
    data = json.loads(cfg.read_text())
    data.pop("chat_template", None)
    cfg.write_text(json.dumps(data))
    (out / "chat_template.jinja").unlink(missing_ok=True)
    (out / "chat_template.json").unlink(missing_ok=True)
    return out


@pytest.fixture(scope="session")
def _chromium_session() -> Iterator[Any]:
    """One headless Chromium (Debian's chromium through chromedriver and selenium) for the
    session's browser tests: a start costs about 2 s on 2 cores, so it starts once."""
    chromedriver = shutil.which("chromedriver")
    if chromedriver is None:
        pytest.skip("chromedriver not installed (.ci/run installs Debian's chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromedriver), options=opts)
    yield driver
    driver.quit()


@pytest.fixture
def chromium(_chromium_session: Any) -> Iterator[Any]:
    """The session's headless Chromium (a selenium WebDriver), its window 1,400 x 1,000 px (a
    test may resize it); afterwards its page storage is cleared and a blank page shown."""
    from selenium.common.exceptions import WebDriverException

    driver = _chromium_session
    driver.set_window_size(1400, 1000)
    yield driver
    try:
        driver.execute_script("localStorage.clear(); sessionStorage.clear();")
    except WebDriverException:  # a page without storage (about:blank, a data: URL)
        pass
    driver.delete_all_cookies()
    driver.get("about:blank")


@pytest.fixture
def keep_artifact(tmp_path: Path) -> Callable[[Path, str], None]:
    """``keep_artifact(file, name)`` copies a test's screenshot to ``$LCEVAL_TEST_ARTIFACTS``
    (default ``outputs/test-artifacts`` of the checkout) as ``name``, for CI to upload."""
    from lceval.core.io import project_root

    def keep(file: Path, name: str) -> None:
        folder = Path(
            os.environ.get("LCEVAL_TEST_ARTIFACTS")
            or (project_root() or tmp_path) / "outputs" / "test-artifacts"
        )
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(file, folder / name)

    return keep


REGRESSION = Path(__file__).parent / "fixtures" / "regression"
"""The regression fixtures: per benchmark, samples, contexts and one model's responses."""


@pytest.fixture(scope="session")
def regression_report(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """``regression_report(key)``: the run of benchmark ``key``'s regression fixture (its samples,
    contexts and responses; one model ``m0`` on ``hf``) scored and reported, as a
    :class:`lceval.core.io.RunDir`. Made once per test process (a score and report cost 2-8 s
    each on 2 cores) and shared: tests only read it."""
    import lceval.report
    import lceval.run
    from lceval.core.io import RunDir, new_meta

    root = tmp_path_factory.mktemp("regression-reports")
    runs: dict[str, RunDir] = {}

    def reported(key: str) -> RunDir:
        if key not in runs:
            run = RunDir(key, root).create()
            for name in ("samples.jsonl", "contexts.jsonl", "responses.jsonl"):
                if (REGRESSION / key / name).exists():
                    shutil.copy(REGRESSION / key / name, run.path / name)
            run.write_meta(new_meta(key, models={"m0": {"backend": "hf"}}))
            lceval.run.score(key, root=root, progress=False)
            lceval.report.write_report(key, root=root)
            runs[key] = run
        return runs[key]

    return reported


# -- a small benchmark registered by tests ("echo": exact match, a batch judge, typed gold) --------
@dataclass(frozen=True)
class EchoGold(Gold):
    target: str
    """The exact answer."""
    aliases: tuple[str, ...] = ()
    """Other accepted answers."""
    weight: float = 1.0


def _score(sample, response, context, *, bonus: float = 0.0):
    g: EchoGold = sample.gold
    assert isinstance(g, EchoGold)  # parsed once, at load
    if response.text == "RAISE":
        raise RuntimeError("scorer bug\nsecond line")
    ok = response.text in (g.target, *g.aliases)
    return Judgement(value=min(1.0, float(ok) + bonus), parts={"hit": float(ok)}, explanation="")


class _Judge:
    batch_items = 3

    def __init__(self, run, calls):
        self.calls = calls

    def prepare(self, sample, response, context):
        return types.SimpleNamespace(n_items=2, text=response.text, target=sample.gold.target)

    def finish(self, prepared):
        self.calls.append(len(prepared))
        return [
            Judgement(
                value=float(p.text == p.target),
                details=({"check": "exact", "yes": p.text == p.target},),
            )
            for p in prepared
        ]

    def close(self):
        self.calls.append("closed")


CALLS: list = []
"""What the echo batch judge was called with (group sizes, then "closed")."""


class EchoParams(declared.Declared):
    """The echo builder's params."""

    n: declared.NonNegative = 3
    seed: int = 0


def _build(params):
    """``n`` samples ``e0``, ``e1``, ...; a nonzero ``seed`` changes the gold of the odd ones and
    the text of the context that every third sample (``e2``, ``e5``, ...) reads."""
    p = declared.parse(EchoParams, params, "echo", accept=(declared.InferenceSection,))
    n, seed = p.n, p.seed
    ctx = Context(id="echo/c", text=f"context of seed {seed}", n_tokens=4, encoding="o200k_base")
    samples = [
        Sample(
            id=f"e{i}",
            benchmark="echo",
            task="T",
            instruction="say",
            context_id=ctx.id if i % 3 == 2 else None,
            gold=EchoGold(f"a{i}" if i % 2 == 0 or seed == 0 else f"a{i}.{seed}"),
        )
        for i in range(n)
    ]
    return BuildResult(samples=samples, contexts=[ctx] if n > 2 else [])


def _report(run, scores, samples):
    return {"mean": scores.groupby("task")["value"].mean().to_frame()}


BENCH = Benchmark(
    key="echo",
    title="a test benchmark",
    tasks=("T",),
    build=_build,
    gold={"T": EchoGold},
    scorers={
        "echo": ScorerSpec(
            "echo",
            "1",
            "exact match",
            ("accuracy",),
            score=_score,
            options={"bonus": "added to every value"},
        ),
        "echo:judge": ScorerSpec(
            "echo:judge", "1", "batched", ("accuracy",), batch=lambda run: _Judge(run, CALLS)
        ),
    },
    report=_report,
    details_file="echo_details.parquet",
)


@pytest.fixture
def echo_bench(monkeypatch):
    """Register the ``echo`` benchmark for one test; returns this module's namespace."""
    import sys
    import types

    from lceval.benchmarks import registry

    mod = types.ModuleType("lceval_test_echo")
    mod.BENCHMARK = BENCH  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lceval_test_echo", mod)
    monkeypatch.setitem(registry._MODULES, "echo", "lceval_test_echo")
    monkeypatch.setattr(registry, "BENCHMARKS", (*registry.BENCHMARKS, "echo"))
    CALLS.clear()
    return types.SimpleNamespace(EchoGold=EchoGold, CALLS=CALLS, BENCH=BENCH)
