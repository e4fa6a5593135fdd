"""The small social demo run locally and through SLURM (workflow/profiles/slurm) in one go.

    python benchmarks/bench_slurm.py              # timing: prints local s, slurm s and the ratio
    python benchmarks/bench_slurm.py --demo full  # the same for the whole demo (make demo's config)
    python benchmarks/bench_slurm.py --check      # CI: also kills a job with scancel (it must be
                                                  # retried), compares every output byte for byte
                                                  # and requires `snakemake -n` to find nothing to do

Needs a running SLURM cluster (.ci/slurm-cluster.sh start) and snakemake-executor-plugin-slurm
importable by this Python (pip install '.[slurm]'). Exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"social": "social_all", "full": "all"}
# Logs, benchmark timings and caches record times and hosts; everything else must match.
SKIP_DIRS = {"logs", "benchmarks", "cache"}
SKIP_SUFFIXES = (".log", ".log.attempts")  # the table renderings' logs sit beside their tables


def demo_config(demo: str) -> dict:
    """full: config/demo.yaml; social: the social demo of tests/test_social_pipeline.py (about a
    minute on two cores) with two baseline models that share the short rules' submission."""
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    if demo == "full":
        return config
    config["social"]["demo"].update(
        n_multiparty=2,
        who_items_per_clip=2,
        when_transitions_per_clip=1,
        visual_splits=["RTD_counting", "PR_event_reminder"],
    )
    config["social"]["streaming"]["caption_delay_s"] = 2.0
    av = {
        "backend": "baseline",
        "model": "chance",
        "modalities": ["audio", "video"],
        "cluster": {"group": "social_short"},
    }
    config["social"]["models"] = [{**av, "name": "chance-av-1"}, {**av, "name": "chance-av-2"}]
    return config


def base_command(workdir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
    ]


def slurm_args(cores: int) -> list[str]:
    # the profile as a user runs it; the CI node is small, so cap threads to its CPUs
    return [
        "--profile",
        str(ROOT / "workflow" / "profiles" / "slurm"),
        "--max-threads",
        str(cores),
        "--cores",
        str(cores),
    ]


def run(command: list[str], log: Path, timeout: int = 900) -> float:
    start = time.monotonic()
    with log.open("w") as handle:
        result = subprocess.run(
            command, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout, cwd=command[6]
        )
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        sys.stderr.write(log.read_text()[-6000:])
        raise SystemExit(f"failed ({result.returncode}): {' '.join(command)}")
    return elapsed


def digests(results: Path) -> dict[str, str]:
    out = {}
    for path in sorted(results.rglob("*")):
        rel = path.relative_to(results)
        if path.is_file() and not (set(rel.parts[:-1]) & SKIP_DIRS) and not path.name.endswith(SKIP_SUFFIXES):
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def compare(local: Path, slurm: Path) -> None:
    a, b = digests(local / "results"), digests(slurm / "results")
    if not a:
        raise SystemExit("the local run wrote no outputs")
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    if differ:
        raise SystemExit(f"outputs differ between local and SLURM runs: {differ[:20]}")
    print(f"outputs identical: {len(a)} files")


def kill_one_job(stop: threading.Event, killed: list[str]) -> None:
    """scancel the first running job of this user (the rerun below submits only ours)."""
    while not stop.is_set() and not killed:
        listing = subprocess.run(
            ["squeue", "--me", "-h", "-t", "RUNNING", "-o", "%i %k"], capture_output=True, text=True
        ).stdout.split("\n")
        for line in filter(None, listing):
            jobid, _, comment = line.partition(" ")
            time.sleep(1.0)  # let it start writing, so its partial outputs must be cleaned up
            if subprocess.run(["scancel", jobid]).returncode == 0:
                killed.append(f"{jobid} ({comment})")
            break
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="kill/retry, identity and -n checks")
    parser.add_argument("--demo", choices=sorted(TARGETS), default="social", help="which demo to run")
    parser.add_argument("--cores", type=int, default=2, help="local --cores (and SLURM --max-threads)")
    parser.add_argument("--workdir", type=Path, help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args()
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        raise SystemExit("no SLURM client on PATH: start one with .ci/slurm-cluster.sh start")
    top = args.workdir or Path(tempfile.mkdtemp(prefix="omnisocial-slurm-"))
    local, slurm = top / "local", top / "slurm"
    for folder in (local, slurm):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text(yaml.safe_dump(demo_config(args.demo), sort_keys=False))

    local_s = run([*base_command(local), "--cores", str(args.cores), TARGETS[args.demo]], top / "local.log")
    slurm_s = run([*base_command(slurm), *slurm_args(args.cores), TARGETS[args.demo]], top / "slurm.log")
    compare(local, slurm)
    print(f"bench_slurm: local {local_s:.1f} s, slurm {slurm_s:.1f} s, ratio {slurm_s / local_s:.2f}x")

    if args.check:
        # a job killed with scancel is retried (profile retries) and loses nothing
        scores = slurm / "results" / "social" / "metrics"
        for path in scores.glob("*.csv"):
            path.unlink()  # the score jobs run again, everything upstream is kept
        stop, killed = threading.Event(), []
        killer = threading.Thread(target=kill_one_job, args=(stop, killed))
        killer.start()
        try:
            run([*base_command(slurm), *slurm_args(args.cores), TARGETS[args.demo]], top / "slurm-kill.log")
        finally:
            stop.set()
            killer.join()
        if not killed:
            raise SystemExit("no running job was seen to scancel")
        log = (top / "slurm-kill.log").read_text()
        if "CANCELLED" not in log and "failed" not in log.lower():
            raise SystemExit("the killed job was not reported as failed: see slurm-kill.log")
        print(f"killed {killed[0]} with scancel: retried, run completed")
        compare(local, slurm)
        dry = subprocess.run(
            [*base_command(slurm), *slurm_args(args.cores), "-n", TARGETS[args.demo]],
            capture_output=True,
            text=True,
            cwd=slurm,
        )
        if dry.returncode != 0 or "Nothing to be done" not in dry.stdout + dry.stderr:
            raise SystemExit(f"snakemake -n after the SLURM run still plans jobs:\n{dry.stdout[-3000:]}")
        print("snakemake -n: nothing to be done")
        left = subprocess.run(["squeue", "--me", "-h"], capture_output=True, text=True).stdout.strip()
        if left:
            raise SystemExit(f"jobs left in the queue:\n{left}")
    if not args.workdir:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
