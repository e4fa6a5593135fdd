"""Speed and memory of the whole demo workflow, setup excluded.

    .venv/bin/python benchmarks/bench_pipeline.py [--config config/demo.yaml] [--cores 2]

Runs `snakemake --cores N` on the config in a fresh temporary folder (the demo corpus is
generated there too), then a no-op `snakemake -n`, and prints:

- wall time of the full run (target: under 5 minutes for the default demo on 2 cores);
- wall time of the no-op dry run (target: under 3 s);
- per rule: wall seconds and peak memory (max_rss) from the rules' `benchmark:` files
  (target: no job above 4 GiB);
- signal measurement throughput: seconds of audio (both tracks) measured per wall second
  per thread of `measure_signals`.

Exits 1 when a target is missed. The VAD's own x-real-time is in bench_vad_filters.py.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"full_run_s": 300.0, "noop_s": 3.0, "max_rss_mb": 4096.0}


def snakemake(workdir: Path, *args: str) -> float:
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
    command += ["--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), *args]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return elapsed


def rule_benchmarks(workdir: Path) -> pd.DataFrame:
    rows = []
    for path in sorted(workdir.rglob("*.tsv")):
        if "benchmarks" not in path.parts:
            continue
        table = pd.read_csv(path, sep="\t")
        rows.append({"rule": path.stem, "wall_s": table["s"].iloc[0], "max_rss_mb": table["max_rss"].iloc[0]})
    return pd.DataFrame(rows)


def audio_seconds(workdir: Path, results: str) -> float:
    signals = pd.read_csv(workdir / results / "signals" / "signals.csv")
    return float(signals[["duration_audio_a", "duration_audio_b"]].fillna(0).to_numpy().sum())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=str(ROOT / "config" / "demo.yaml"))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    config = yaml.safe_load(Path(args.config).read_text())
    workdir = Path(tempfile.mkdtemp(prefix="omnisocial-bench-"))
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    full = snakemake(workdir, "--cores", str(args.cores))
    noop = snakemake(workdir, "-n")
    rules = rule_benchmarks(workdir)
    results = config.get("results", "results/familiarity")
    measure = rules.loc[rules["rule"] == "measure_signals", "wall_s"]
    throughput = None
    if len(measure):
        throughput = audio_seconds(workdir, results) / float(measure.iloc[0]) / args.cores

    print(f"workdir: {workdir}")
    print(f"full run on {args.cores} cores: {full:7.1f} s   (target < {TARGETS['full_run_s']:.0f} s)")
    print(f"no-op dry run:           {noop:7.2f} s   (target < {TARGETS['noop_s']:.0f} s)")
    print("per rule (from benchmark: files):")
    print(rules.sort_values("wall_s", ascending=False).to_string(index=False, float_format="%.1f"))
    peak = float(rules["max_rss_mb"].max()) if len(rules) else float("nan")
    print(f"peak job memory: {peak:.0f} MB   (target < {TARGETS['max_rss_mb']:.0f} MB)")
    if throughput is not None:
        print(f"measure_signals: {throughput:.0f}x real time per thread (audio of both tracks)")
    ok = full < TARGETS["full_run_s"] and noop < TARGETS["noop_s"] and peak < TARGETS["max_rss_mb"]
    print("PASS" if ok else "FAIL")
    if not args.keep:
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
