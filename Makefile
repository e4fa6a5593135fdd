# Setup is idempotent: each target below re-runs only what is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HINT := $(VENV)/.snakemake-hint-installed
CORES ?= all
# uv installs the pinned packages (parallel downloads, no per-package pip start-up; timings:
# docs/performance.md#setup); pip installs uv itself, at this pin, into each venv.
UV_VERSION := 0.13.9
# Bytecode is not compiled at install: the workflow and tests import a few thousand of the ~24,000
# installed modules, so setup writes only those (.ci/write_bytecode.py). And make's commands run
# with bytecode writing on even where PYTHONDONTWRITEBYTECODE is set: else every workflow job would
# compile its imports anew. Timings: docs/performance.md#setup.
unexport PYTHONDONTWRITEBYTECODE
UV_INSTALL = uv pip install --quiet

.PHONY: setup system-deps notebook-deps notebook-strip demo test test-heavy test-slurm lint format benchmark \
	report clean venv-omni venv-voxtral venv-asr test-local-models docs-deps docs docs-build \
	web-deps test-browser

setup: system-deps $(STAMP) $(HINT) web-deps

# jsPsych and its plugins at package-lock.json's pins (the rating experiment copies them in)
web-deps: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

system-deps:
	@bash .ci/system-deps.sh

$(STAMP): pyproject.toml requirements/lock.txt requirements/speech-sample.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	# torch is pinned in the lock: an unpinned torch would pull a multi-GB CUDA build. uv reads no
	# pip configuration, so pip names the local folders it would take torch from (here its
	# find-links, with the CPU build of the pinned release; PyPI has only the CUDA one).
	# slurm: the executor plugins, for the cluster profile's dry-run tests and make test-slurm
	links=$$(bash .ci/pip-find-links.sh $(BIN)/python -c requirements/lock.txt torch) && \
		$(BIN)/$(UV_INSTALL) --python $(BIN)/python -c requirements/lock.txt $$links -e '.[dev,slurm]'
	# the recorded conversation the tests measure: files only, no dependencies (see the file)
	$(BIN)/$(UV_INSTALL) --python $(BIN)/python --no-deps -r requirements/speech-sample.txt
	# the bytecode of what the package imports (not all ~24,000 installed modules), so that a
	# fresh clone's first demo and tests do not compile it in their jobs
	$(BIN)/python .ci/write_bytecode.py snakemake.cli snakemake_executor_plugin_slurm
	# the GLMM/Rasch numba kernel into its disk cache: the first fit then loads it, not compiles it
	$(BIN)/python -c 'from omnisocial.stats import glmm; glmm.compile_kernel()'
	touch $(STAMP)

# A target written after --configfile (which takes several files) is said in one line, not a
# traceback: a .pth file in the venv checks a snakemake process's arguments at start (see the module)
$(HINT): $(STAMP) src/omnisocial/snakemake_hint.py
	$(BIN)/python -m omnisocial.snakemake_hint
	touch $@

demo: setup
	$(BIN)/snakemake --cores $(CORES) --configfile config/demo.yaml

# the notebook's kernel and executor (extra `notebook`): the slow notebook test runs with them
NOTEBOOK_STAMP := $(VENV)/.notebook-installed
notebook-deps: $(NOTEBOOK_STAMP)

$(NOTEBOOK_STAMP): $(STAMP) pyproject.toml requirements/lock.txt
	$(BIN)/$(UV_INSTALL) --python $(BIN)/python -c requirements/lock.txt -e '.[dev,notebook]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(NOTEBOOK_STAMP)

# the documentation site (extra `docs`: MkDocs + Material). docs-build builds it into site/ in strict
# mode (a broken link, anchor or nav entry fails; CI runs it); docs builds it and serves it on
# 127.0.0.1:$(DOCS_PORT), rebuilding on every edit. The reference pages are generated each build.
DOCS_STAMP := $(VENV)/.docs-installed
DOCS_PORT ?= 8000
docs-deps: $(DOCS_STAMP)

$(DOCS_STAMP): $(STAMP) pyproject.toml requirements/lock.txt
	$(BIN)/$(UV_INSTALL) --python $(BIN)/python -c requirements/lock.txt -e '.[docs]'
	touch $(DOCS_STAMP)

docs-build: docs-deps
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --clean

docs: docs-build
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

# outputs are never committed (tests/test_notebook.py checks): strip them before a commit
notebook-strip: setup
	$(BIN)/python -c "import nbformat, sys; p = 'notebooks/familiarity.ipynb'; nb = nbformat.read(p, 4); [c.update(outputs=[], execution_count=None) for c in nb.cells if c.cell_type == 'code']; nbformat.write(nb, p)"

# Two workers (pytest-xdist; TEST_WORKERS=auto takes one per core): tests/conftest.py groups the
# tests (a module's fast ones together, each slow one alone or with the tests sharing its
# workflow run) and queues the slow ones first; --no-loadscope-reorder keeps that order.
# Two tiers: make test runs the unit, contract and command tests, each under 3 CPU-s (the line in
# tests/conftest.py), in a few minutes on 2 cores; the tests marked heavy (workflow runs, the shared
# study and social runs, real browsers, samplers at full size) are make test-heavy, a CI step of its
# own. Each prints its CPU per test at the end. Timings: docs/performance.md#tests.
TEST_WORKERS ?= 2
PYTEST_XDIST = $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder
test: setup notebook-deps
	$(PYTEST_XDIST) -m 'not heavy'

test-heavy: setup notebook-deps
	$(PYTEST_XDIST) -m heavy

# The rating experiment in headless chromium alone (make test, and so .ci/run, runs them too)
test-browser: setup
	$(BIN)/python -m pytest -m browser tests/test_rating_browser.py

# Local model families whose pins conflict with the main venv get their own venv (the same
# split as envs/omni.yaml and envs/voxtral.yaml under --use-conda), from exact requirement files:
#   .venv-omni:    Qwen2.5-Omni: torchvision 0.29.1 + torch 2.14.1 (a CUDA build; it runs on CPU);
#   .venv-voxtral: Voxtral: mistral-common 1.12.0, numpy 2.3.5 (mistral-common caps numpy < 2.4).
# The project is installed with --no-deps: its own pins (torch 2.13, numpy 2.4.6) are the main venv's.
.venv-%/.installed: requirements/%.txt pyproject.toml
	test -x .venv-$*/bin/python || $(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet uv==$(UV_VERSION)
	# torch, torchvision and their CUDA libraries from where pip finds them (as in $(STAMP))
	links=$$(bash .ci/pip-find-links.sh .venv-$*/bin/python -c requirements/$*.txt \
			$$(grep -o -E '^(torch|torchvision)==' requirements/$*.txt | tr -d =)) && \
		.venv-$*/bin/$(UV_INSTALL) --python .venv-$*/bin/python $$links -r requirements/$*.txt
	.venv-$*/bin/$(UV_INSTALL) --python .venv-$*/bin/python --no-deps -e .
	touch $@

# .venv-asr: whisperx for asr.engine whisperx without conda (envs/asr.yaml under --use-conda). whisperx
# pins torch 2.8 and torchaudio 2.8, CUDA builds here; this venv runs the lock's CPU torch 2.13.0
# (requirements/asr-overrides.txt), so requirements/asr.txt is installed as the exact closure it is
# (--no-deps: torchaudio 2.11.1 asks for torch 2.11.1). torchaudio 2.11's compiled extension does not
# load on torch 2.13 and makes `import torchaudio` fail; without it torchaudio runs its Python parts,
# all that whisperx and pyannote use on this path, so it is removed.
.venv-asr/.installed: requirements/asr.txt pyproject.toml
	test -x .venv-asr/bin/python || $(PYTHON) -m venv .venv-asr
	.venv-asr/bin/python -m pip install --quiet uv==$(UV_VERSION)
	links=$$(bash .ci/pip-find-links.sh .venv-asr/bin/python --no-deps torch==2.13.0) && \
		.venv-asr/bin/$(UV_INSTALL) --python .venv-asr/bin/python $$links --no-deps -r requirements/asr.txt
	.venv-asr/bin/python -c 'import importlib.util as u, pathlib as p; \
		[f.unlink() for f in p.Path(u.find_spec("torchaudio").origin).parent.glob("lib/*.so")]'
	# whisperx's alignment splits sentences with NLTK's punkt_tab model, which nltk downloads at run
	# time and no package ships: an untrained one (no abbreviations learned) in the venv's nltk_data
	mkdir -p .venv-asr/nltk_data/tokenizers/punkt_tab/english
	cd .venv-asr/nltk_data/tokenizers/punkt_tab/english && \
		touch collocations.tab sent_starters.txt abbrev_types.txt ortho_context.tab
	.venv-asr/bin/$(UV_INSTALL) --python .venv-asr/bin/python --no-deps -e .
	touch $@

venv-omni: .venv-omni/.installed
venv-voxtral: .venv-voxtral/.installed
venv-asr: .venv-asr/.installed

# Each family end to end on tiny random-weight checkpoints and the demo stimulus, in its venv.
test-local-models: $(STAMP) venv-omni venv-voxtral venv-asr
	.venv-omni/bin/python -m pytest -m local_models tests/test_local_models.py
	.venv-voxtral/bin/python -m pytest -m local_models tests/test_local_models.py
	# whisperx in .venv-asr, and the main venv's transcription handed to it
	.venv-asr/bin/python -m pytest -m local_models tests/test_asr.py
	$(BIN)/python -m pytest -m local_models tests/test_asr.py

# The demo through a single-node SLURM cluster this target starts and stops (root, Debian).
test-slurm: setup
	BIN=$(BIN) bash .ci/slurm-test.sh

lint: setup
	$(BIN)/ruff check src tests workflow benchmarks
	$(BIN)/ruff format --check src tests workflow benchmarks
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint

format: setup
	$(BIN)/ruff check --fix src tests workflow benchmarks
	$(BIN)/ruff format src tests workflow benchmarks
	$(BIN)/snakefmt Snakefile workflow/rules

benchmark: setup
	$(BIN)/python benchmarks/bench_pipeline.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_vad_filters.py
	$(BIN)/python benchmarks/bench_inference.py
	$(BIN)/python benchmarks/bench_glmm.py
	$(BIN)/python benchmarks/bench_rasch_attenuation.py
	$(BIN)/python benchmarks/bench_failures.py
	$(BIN)/python benchmarks/bench_streaming_media.py
	$(BIN)/python benchmarks/bench_streaming_steps.py --prefix-s 16 --step-s 2 --passes 3 --scaled
	$(BIN)/python benchmarks/bench_job_startup.py
	$(BIN)/python benchmarks/bench_tool_start.py
	$(BIN)/python benchmarks/bench_real_sync.py
	$(BIN)/python benchmarks/bench_explorer.py
	$(BIN)/python benchmarks/bench_separate_mics.py

# the report of the study CONFIG names (make report CONFIG=config/my_study.yaml; the demo's by
# default), in that study's own results folder (its `results`), so no study's report overwrites
# another's. Snakemake says "Loading script code for rule ..." once per rule: those lines are left out.
CONFIG ?= config/demo.yaml
REPORT ?= $(shell $(BIN)/python -m omnisocial.config $(CONFIG))/report.html
report: SHELL := /bin/bash
report: setup
	set -o pipefail; $(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG) --report $(REPORT) 2>&1 \
		| { grep -v '^Loading script code for rule ' || true; }

clean:
	rm -rf results/* .snakemake
