# Setup is idempotent: each target below re-runs only what is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all

.PHONY: setup system-deps demo test test-slurm test-module lint format benchmark report clean

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

test: setup
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
