"""Speed and convergence of `omnisocial glmm` (the command itself) against lme4 (R), in one run.

    .venv/bin/python benchmarks/bench_glmm.py [--sizes friendbench,large] [--cli-runs 3]
        [--in-process [--skip-bambi]] [--seed 0]

The measured thing is the command a user runs: `omnisocial glmm trials.csv -o summary.csv` in a
subprocess, end to end (Python start, imports, read, fit, summaries, the three CSVs), with its
defaults (the fast path: numba kernel + nutpie, 2 chains, draws sized to the R-hat/ESS target).
For each size it runs

- cold: the first call with an empty numba cache (`NUMBA_CACHE_DIR` a fresh folder), so the kernel
  is compiled as on the first call in a new setup;
- warm: `--cli-runs` later calls reusing that cache, each followed by one `lme4::glmer` run
  (`Rscript`: R start, library(lme4), read.csv, glmer; Laplace, the same formula, family binomial,
  the same CSV), so the two share the machine's load;

and prints each run's wall and CPU seconds (user + system of the child), the medians, and the
ratios command / lme4 (cold, and warm median over lme4 median; wall and CPU). The CPU ratio moves
less with the load of a shared machine than the wall ratio does. Convergence is read from the
command's own CSVs (summary and contrasts): every reported quantity at R-hat <= 1.01 and bulk
ESS >= 400. Targets: warm wall ratio <= 3x lme4 and warm wall <= 30 s on 2 cores; exits 1 on a miss.

`--in-process` adds `glmm.fit_glmm` in this process after a warm-up (fast, and out-of-the-box
bambi unless `--skip-bambi`): the fit's own time without Python start and imports, and the
bambi comparison. Where no `Rscript` with lme4 is installed (Debian: `apt-get install
r-base-core r-cran-lme4`), the in-process bambi fit is the reference instead.

Data (`glmm.simulate_trials`): 3 modalities, raters nested in modality, each rater rating 32
dyads; "friendbench" = 92 raters per modality and 96 dyads (8,832 trials), "large" = 276 and
288 (26,496 trials). Formula `correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from omnisocial.stats import glmm

SIZES = {"friendbench": (92, 96), "large": (276, 288)}
TARGET_S = 30.0


def _clock() -> tuple[float, float]:
    """Wall seconds, and CPU seconds of this process and its finished children (PyMC's chains)."""
    cpu = os.times()
    return time.perf_counter(), cpu.user + cpu.system + cpu.children_user + cpu.children_system


R_SCRIPT = """
t0 <- proc.time()
suppressMessages(library(lme4))
d <- read.csv(commandArgs(TRUE)[1], colClasses = "character")
d$correct <- as.integer(d$correct %in% c("True", "true", "1"))
t1 <- proc.time()
m <- glmer(correct ~ 0 + modality + (1|rater_id) + (1|dyad_id), data = d, family = binomial)
t2 <- proc.time()
cat(sprintf("glmer_s %.3f load_s %.3f\\n", (t2 - t1)[["elapsed"]], (t1 - t0)[["elapsed"]]))
print(round(fixef(m), 3))
"""


def _timed(command: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the child) of a subprocess, and its stdout."""
    before = os.times()
    wall0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - wall0
    after = os.times()
    if done.returncode:
        raise RuntimeError(f"{command[0]} failed: {done.stderr[-2000:]}")
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    return wall, cpu, done.stdout


def have_lme4() -> bool:
    if shutil.which("Rscript") is None:
        return False
    done = subprocess.run(["Rscript", "-e", "library(lme4)"], capture_output=True, check=False)
    return done.returncode == 0


def run_lme4(csv: Path) -> dict:
    script = csv.with_name("glmer.R")
    script.write_text(R_SCRIPT)
    wall, cpu, out = _timed(["Rscript", str(script), str(csv)])
    fields = out.split()
    return {"total_s": wall, "cpu_s": cpu, "glmer_s": float(fields[fields.index("glmer_s") + 1])}


def run_cli(csv: Path, cache_dir: Path) -> dict:
    """`omnisocial glmm CSV` in a subprocess with numba's cache in `cache_dir`; times and convergence."""
    omnisocial = Path(sys.executable).with_name("omnisocial")
    command = [str(omnisocial)] if omnisocial.exists() else [sys.executable, "-m", "omnisocial.cli"]
    output = csv.with_name(f"{csv.stem}_summary.csv")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    wall, cpu, out = _timed([*command, "glmm", str(csv), "-o", str(output)], env)
    summary = pd.read_csv(output)
    contrast = pd.read_csv(output.with_name(f"{output.stem}_contrasts.csv"))
    both = pd.concat([summary, contrast], ignore_index=True)
    return {
        "total_s": wall,
        "cpu_s": cpu,
        "sampler": json.loads(out.strip().splitlines()[-1])["sampler"],
        "rows": len(both),
        "min_ess": float(both["ess_bulk"].min()),
        "max_rhat": float(both["r_hat"].max()),
        "flagged": int((~both["converged"].astype(bool)).sum()),
    }


def run(frame, sampler: str, seed: int) -> dict:
    wall0, cpu0 = _clock()
    if sampler == "bambi":
        result = glmm.fit_glmm(frame, sampler="bambi", draws=1000, tune=1000, chains=2, cores=2, seed=seed)
    else:
        result = glmm.fit_glmm(frame, sampler=sampler, seed=seed)
    wall1, cpu1 = _clock()
    summary = glmm.summarize(result)
    contrast = glmm.contrasts(result)
    wall2, cpu2 = _clock()
    population = summary[~summary["term"].str.startswith(tuple(f"{t}[" for t in result.group_terms))]
    return {
        "sampler": result.sampler,
        "fit_s": wall1 - wall0,
        "fit_cpu_s": cpu1 - cpu0,
        "summary_s": wall2 - wall1,
        "total_s": wall2 - wall0,
        "pop_ess": float(min(population["ess_bulk"].min(), contrast["ess_bulk"].min())),
        "pop_rhat": float(max(population["r_hat"].max(), contrast["r_hat"].max())),
        "pop_worst": population.sort_values("ess_bulk")["term"].iloc[0],
        "all_ess": float(min(summary["ess_bulk"].min(), contrast["ess_bulk"].min())),
        "all_rhat": float(max(summary["r_hat"].max(), contrast["r_hat"].max())),
        "rows": len(summary) + len(contrast),
        "flagged": int((~summary["converged"]).sum() + (~contrast["converged"]).sum()),
        "divergences": result.divergences,
        "modality": population.set_index("term")["mean"].filter(like="modality[").round(3).to_dict(),
    }


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _print_cli(label: str, r: dict) -> None:
    print(
        f"{label:12s} {r['total_s']:6.1f} s wall, CPU {r['cpu_s']:6.1f} s | sampler {r['sampler']},"
        f" {r['rows']} rows: min ESS {r['min_ess']:.0f}, max R-hat {r['max_rhat']:.4f},"
        f" flagged {r['flagged']} | load {_load():.1f}",
        flush=True,
    )


def bench_command(name: str, csv: Path, runs: int, lme4: bool, tmp: Path) -> tuple[dict, list[str]]:
    """Cold and warm calls of the command, each warm one followed by lme4; prints the ratios."""
    cache = tmp / f"numba_cache_{name}"  # empty: the cold call compiles the kernel into it
    cold = run_cli(csv, cache)
    _print_cli("cli cold", cold)
    warm, ref = [], []
    for i in range(runs):
        warm.append(run_cli(csv, cache))
        _print_cli(f"cli warm {i + 1}", warm[-1])
        if lme4:
            ref.append(run_lme4(csv))
            r = ref[-1]
            print(
                f"{'lme4 ' + str(i + 1):12s} {r['total_s']:6.1f} s wall, CPU {r['cpu_s']:6.1f} s"
                f" (glmer {r['glmer_s']:.1f} s) | load {_load():.1f}",
                flush=True,
            )
    med = {key: statistics.median(r[key] for r in warm) for key in ("total_s", "cpu_s")}
    print(
        f"command: cold {cold['total_s']:.1f} s (CPU {cold['cpu_s']:.1f} s), warm median"
        f" {med['total_s']:.1f} s (CPU {med['cpu_s']:.1f} s) over {runs}; the compile costs"
        f" {cold['total_s'] - med['total_s']:.1f} s wall"
    )
    missed = []
    if lme4:
        lm = {key: statistics.median(r[key] for r in ref) for key in ("total_s", "cpu_s")}
        ratio = med["total_s"] / lm["total_s"]
        print(
            f"ratio command / lme4 ({lm['total_s']:.1f} s wall, CPU {lm['cpu_s']:.1f} s median):"
            f" warm {ratio:.1f}x wall, {med['cpu_s'] / lm['cpu_s']:.1f}x CPU;"
            f" cold {cold['total_s'] / lm['total_s']:.1f}x wall, {cold['cpu_s'] / lm['cpu_s']:.1f}x CPU"
        )
        if ratio > 3.0:
            missed.append(f"{name}: command {ratio:.1f}x lme4 > 3x")
    if any(r["flagged"] or r["sampler"] != "fast" for r in [cold, *warm]):
        missed.append(f"{name}: command convergence or sampler")
    if med["total_s"] > TARGET_S:
        missed.append(f"{name}: command {med['total_s']:.1f} s > {TARGET_S:.0f} s")
    return med, missed


def bench_in_process(frame, samplers: list[str], seed: int) -> dict:
    results = {}
    for sampler in samplers:
        r = run(frame, sampler, seed)
        results[sampler] = r
        print(
            f"{sampler:6s} in process: fit {r['fit_s']:6.1f} s (CPU {r['fit_cpu_s']:6.1f} s)"
            f" + summaries {r['summary_s']:4.1f} s"
            f" = {r['total_s']:6.1f} s | population: min ESS {r['pop_ess']:6.0f} ({r['pop_worst']}),"
            f" max R-hat {r['pop_rhat']:.4f} | all {r['rows']} rows: min ESS {r['all_ess']:6.0f},"
            f" max R-hat {r['all_rhat']:.4f}, flagged {r['flagged']}, divergences {r['divergences']}",
            flush=True,
        )
        print(f"       modality means: {r['modality']}", flush=True)
    if "bambi" in results:
        bambi, fast = results["bambi"], results["fast"]
        print(
            f"speed ratio bambi/fast: {bambi['total_s'] / fast['total_s']:.1f}x wall, "
            f"{bambi['fit_cpu_s'] / fast['fit_cpu_s']:.1f}x fit CPU; min population ESS per second: "
            f"bambi {bambi['pop_ess'] / bambi['total_s']:.0f},"
            f" fast {fast['pop_ess'] / fast['total_s']:.0f}"
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="friendbench,large")
    parser.add_argument("--cli-runs", type=int, default=3, help="warm calls of the command (and of lme4)")
    parser.add_argument("--in-process", action="store_true", help="also fit in this process")
    parser.add_argument("--skip-bambi", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-lme4", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the per-row convergence warnings are counted below
    lme4 = not args.skip_lme4 and have_lme4()
    in_process = args.in_process or not lme4
    samplers = ["fast"] if args.skip_bambi else ["bambi", "fast"]
    reference = "lme4 (Rscript)" if lme4 else "out-of-the-box bambi, in process (no lme4)"
    print("reference:", reference if lme4 or "bambi" in samplers else "none (no lme4, --skip-bambi)")
    print(f"cores: {os.cpu_count()}, load average at start: {_load():.2f}")
    tmp = Path(tempfile.mkdtemp(prefix="bench_glmm_"))

    if in_process:  # imports, numba cache, PyTensor C cache
        warm = glmm.simulate_trials(8, 12, 6, seed=1)
        for sampler in samplers:
            if sampler == "bambi":
                glmm.fit_glmm(warm, sampler="bambi", draws=50, tune=50, chains=2, seed=1)
            else:
                glmm.fit_glmm(warm, draws=50, tune=50, seed=1)

    missed = []
    for name in args.sizes.split(","):
        raters, dyads = SIZES[name]
        frame = glmm.simulate_trials(raters, dyads, 32, seed=args.seed)
        print(f"\n== {name}: {len(frame)} trials, {3 * raters} raters, {dyads} dyads ==", flush=True)
        csv = tmp / f"{name}.csv"
        frame[["rater_id", "dyad_id", "modality", "correct"]].to_csv(csv, index=False)
        _, miss = bench_command(name, csv, args.cli_runs, lme4, tmp)
        missed += miss
        if in_process:
            results = bench_in_process(frame, samplers, args.seed)
            fast = results["fast"]
            if fast["flagged"] or fast["all_rhat"] > glmm.RHAT_MAX or fast["all_ess"] < glmm.ESS_MIN:
                missed.append(f"{name}: in-process convergence")
    print(f"\nload average at the end: {_load():.2f}")
    print("targets:", "all met" if not missed else "missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
