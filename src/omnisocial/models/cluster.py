"""Cluster resources of a model job from its registry entry (`cluster`, `expected_latency_s`).

Snakemake resources, which the SLURM executor turns into sbatch options: slurm_partition,
gpu / gpu_model (--gpus), cpus_per_gpu, mem_mb and runtime (minutes, -t).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

# Seconds per call when an entry gives no expected_latency_s.
DEFAULT_LATENCY_S = {"transformers": 10.0, "openai": 6.0, "gemini": 6.0, "baseline": 0.05}
STARTUP_MIN = 5  # workflow parse, imports, model load


def entry_gpus(entry: Mapping) -> int:
    cluster = entry.get("cluster") or {}
    if cluster.get("gpus") is not None:
        return int(cluster["gpus"])
    if entry.get("backend") != "transformers":
        return 0
    device = str((entry.get("options") or {}).get("device", "auto")).lower()
    return 0 if device.startswith("cpu") else 1


def runtime_minutes(entry: Mapping, n_requests: int, attempt: int = 1) -> int:
    """Requests x expected latency / concurrency, plus start-up, doubled on every retry."""
    latency = entry.get("expected_latency_s") or DEFAULT_LATENCY_S.get(entry.get("backend"), 10.0)
    concurrency = 1 if entry.get("backend") == "transformers" else int(entry.get("concurrency") or 1)
    minutes = STARTUP_MIN + math.ceil(n_requests * float(latency) / max(concurrency, 1) / 60)
    return int(minutes * 2 ** max(attempt - 1, 0))


def placement(entry: Mapping, default_mem_mb: int, transformers_mem_mb: int) -> dict:
    """gpu, mem_mb and, where the entry names them, slurm_partition, gpu_model, cpus_per_gpu."""
    cluster = entry.get("cluster") or {}
    gpus = entry_gpus(entry)
    mem = cluster.get("mem_mb") or (
        transformers_mem_mb if entry.get("backend") == "transformers" else default_mem_mb
    )
    out: dict = {"gpu": gpus, "mem_mb": int(mem)}
    if cluster.get("partition"):
        out["slurm_partition"] = cluster["partition"]
    if gpus and cluster.get("gpu_model"):
        out["gpu_model"] = cluster["gpu_model"]
    if gpus and cluster.get("cpus_per_gpu"):
        out["cpus_per_gpu"] = int(cluster["cpus_per_gpu"])
    return out


def count_rows(csv_path) -> int:
    """Data rows of a CSV (its header excluded), for request counts at job time."""
    with open(csv_path, encoding="utf-8") as handle:
        return max(sum(1 for _ in handle) - 1, 0)
