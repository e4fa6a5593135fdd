"""Speed and convergence of the familiarity GLMM: the fast path vs lme4 (R) or out-of-the-box bambi.

    .venv/bin/python benchmarks/bench_glmm.py [--sizes friendbench,large] [--skip-bambi] [--seed 0]

Where `Rscript` with lme4 is installed, each size is also fitted by `lme4::glmer` (Laplace, the
same formula, family binomial) on the same simulated CSV, timed end to end in a subprocess
(R start, library(lme4), read.csv, glmer), and the fast path's ratio to it is printed: for the
`omnisocial glmm` CLI end to end (a subprocess: Python start, imports, read, fit, summaries,
writing the CSVs) and for the in-process fit + summaries. Without R the ratio is to bambi.

Data (`glmm.simulate_trials`): 3 modalities, raters nested in modality, each rater rating 32
dyads; "friendbench" = 92 raters per modality and 96 dyads (8,832 trials), "large" = 276 and
288 (26,496 trials). Formula `correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)`.

- bambi: `bambi.Model(...).fit(chains=2, cores=2)` with PyMC's default NUTS, draws and tune
  (1000 each);
- fast: `glmm.fit_glmm` defaults (sampler "fast": numba kernel + nutpie, 2 chains, draws sized
  to the R-hat/ESS target, tune 300);
- cli: `omnisocial glmm trials.csv -o summary.csv` in a subprocess (defaults as fast).

Each is warmed up once on a small data set (imports, numba cache, PyTensor C cache), then
timed: wall seconds of the fit (model build + sampling) and of the summaries, and the CPU
seconds of the fit over all threads and (PyMC's) chain processes; on a busy machine the wall
time grows with the load while the CPU time stays about the same.
Reported quantities: the population-level rows (modality means, SDs, contrasts) and all rows
(plus the ~400 / ~1,100 rater and dyad effects). Targets for the fast path: every reported
quantity at R-hat <= 1.01 and bulk ESS >= 400, fit + summaries under 30 s wall on 2 cores.
Exits 1 when the fast path misses a target. Wall times depend on what else the machine runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _timed(command: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the child) of a subprocess, and its stdout."""
    before = os.times()
    wall0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
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


def run_cli(csv: Path) -> dict:
    omnisocial = Path(sys.executable).with_name("omnisocial")
    command = [str(omnisocial)] if omnisocial.exists() else [sys.executable, "-m", "omnisocial.cli"]
    wall, cpu, out = _timed([*command, "glmm", str(csv), "-o", str(csv.with_name("summary.csv"))])
    return {"total_s": wall, "cpu_s": cpu, "out": out.strip().splitlines()[-1]}


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


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="friendbench,large")
    parser.add_argument("--skip-bambi", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-lme4", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the per-row convergence warnings are counted below
    samplers = ["fast"] if args.skip_bambi else ["bambi", "fast"]
    lme4 = not args.skip_lme4 and have_lme4()
    print("reference:", "lme4 (Rscript)" if lme4 else "out-of-the-box bambi (no Rscript with lme4)")
    tmp = Path(tempfile.mkdtemp(prefix="bench_glmm_"))

    warm = glmm.simulate_trials(8, 12, 6, seed=1)
    for sampler in samplers:
        if sampler == "bambi":
            glmm.fit_glmm(warm, sampler="bambi", draws=50, tune=50, chains=2, seed=1)
        else:
            glmm.fit_glmm(warm, draws=50, tune=50, seed=1)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cores: {os.cpu_count()}, load average at start: {load:.2f}")

    missed = []
    for name in args.sizes.split(","):
        raters, dyads = SIZES[name]
        frame = glmm.simulate_trials(raters, dyads, 32, seed=args.seed)
        print(f"\n== {name}: {len(frame)} trials, {3 * raters} raters, {dyads} dyads ==", flush=True)
        csv = tmp / f"{name}.csv"
        frame[["rater_id", "dyad_id", "modality", "correct"]].to_csv(csv, index=False)
        results = {}
        cli_run = run_cli(csv)
        print(
            f"cli    omnisocial glmm end to end {cli_run['total_s']:6.1f} s (CPU {cli_run['cpu_s']:6.1f} s)"
            f" {cli_run['out']}",
            flush=True,
        )
        if lme4:
            r = run_lme4(csv)
            results["lme4"] = r
            print(
                f"lme4   Rscript end to end {r['total_s']:6.1f} s (CPU {r['cpu_s']:6.1f} s),"
                f" glmer {r['glmer_s']:.1f} s",
                flush=True,
            )
        for sampler in samplers:
            r = run(frame, sampler, args.seed)
            results[sampler] = r
            print(
                f"{sampler:6s} fit {r['fit_s']:6.1f} s (CPU {r['fit_cpu_s']:6.1f} s)"
                f" + summaries {r['summary_s']:4.1f} s"
                f" = {r['total_s']:6.1f} s | population: min ESS {r['pop_ess']:6.0f} ({r['pop_worst']}),"
                f" max R-hat {r['pop_rhat']:.4f} | all {r['rows']} rows: min ESS {r['all_ess']:6.0f},"
                f" max R-hat {r['all_rhat']:.4f}, flagged {r['flagged']}, divergences {r['divergences']}",
                flush=True,
            )
            print(f"       modality means: {r['modality']}", flush=True)
        fast = results["fast"]
        if lme4:
            ref = results["lme4"]
            ratio = cli_run["total_s"] / ref["total_s"]
            print(
                f"ratio vs lme4: CLI end to end {ratio:.1f}x wall"
                f" ({cli_run['cpu_s'] / ref['cpu_s']:.1f}x CPU);"
                f" in-process fit + summaries / glmer {fast['total_s'] / ref['glmer_s']:.1f}x wall"
            )
            if ratio > 3.0:
                missed.append(f"{name}: CLI {ratio:.1f}x lme4 > 3x")
        if "bambi" in results:
            bambi = results["bambi"]
            print(
                f"speed ratio bambi/fast: {bambi['total_s'] / fast['total_s']:.1f}x wall, "
                f"{bambi['fit_cpu_s'] / fast['fit_cpu_s']:.1f}x fit CPU; min population ESS per second: "
                f"bambi {bambi['pop_ess'] / bambi['total_s']:.0f},"
                f" fast {fast['pop_ess'] / fast['total_s']:.0f}"
            )
        if fast["flagged"] or fast["all_rhat"] > glmm.RHAT_MAX or fast["all_ess"] < glmm.ESS_MIN:
            missed.append(f"{name}: convergence")
        if fast["total_s"] > TARGET_S:
            missed.append(f"{name}: {fast['total_s']:.1f} s > {TARGET_S:.0f} s")
    print("\ntargets:", "all met" if not missed else "missed: " + "; ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
