# Setup is idempotent: each target below re-runs only what is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all

.PHONY: setup system-deps notebook-deps notebook-strip demo test test-slurm lint format benchmark report clean

setup: system-deps $(STAMP)

system-deps:
	@bash .ci/system-deps.sh

$(STAMP): pyproject.toml requirements/lock.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch is pinned in the lock: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet -c requirements/lock.txt -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/snakemake --cores $(CORES) --configfile config/demo.yaml

# the notebook's kernel and executor (extra `notebook`): the slow notebook test runs with them
NOTEBOOK_STAMP := $(VENV)/.notebook-installed
notebook-deps: $(NOTEBOOK_STAMP)

$(NOTEBOOK_STAMP): $(STAMP) pyproject.toml requirements/lock.txt
	$(BIN)/python -m pip install --quiet -c requirements/lock.txt -e '.[dev,notebook]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(NOTEBOOK_STAMP)

# outputs are never committed (tests/test_notebook.py checks): strip them before a commit
notebook-strip: setup
	$(BIN)/python -c "import nbformat, sys; p = 'notebooks/familiarity.ipynb'; nb = nbformat.read(p, 4); [c.update(outputs=[], execution_count=None) for c in nb.cells if c.cell_type == 'code']; nbformat.write(nb, p)"

test: setup notebook-deps
	$(BIN)/python -m pytest

# The demo through a single-node SLURM cluster this target starts and stops (root, Debian).
test-slurm: setup
	$(BIN)/python -m pip install --quiet -c requirements/lock.txt -e '.[slurm]'
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

report: setup
	$(BIN)/snakemake --cores $(CORES) --report results/report.html

clean:
	rm -rf results/* .snakemake
