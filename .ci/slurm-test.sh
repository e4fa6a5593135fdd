#!/usr/bin/env bash
# CI: the small social demo through a single-node SLURM cluster started here (and stopped on
# exit): outputs identical to the local run, a job killed with scancel is retried, nothing left
# to do afterwards (benchmarks/bench_slurm.py --check). Needs root for the Debian packages.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
.ci/slurm-cluster.sh start
trap '.ci/slurm-cluster.sh stop' EXIT
start=$(date +%s)
"$BIN/python" benchmarks/bench_slurm.py --check --cores "$(nproc)"
echo "slurm-test: $(($(date +%s) - start)) s"
