"""Speed and convergence of `omnisocial glmm` (the command itself) and of the workflow's GLMM
job against lme4 (R), in one run.

    .venv/bin/python benchmarks/bench_glmm.py [--sds 0.2,0.5,1.0,1.5] [--sizes friendbench,large]
        [--shapes crossed,unequal,few-raters,missing,mixed-3x] [--cli-runs 1] [--no-job]
        [--in-process [--skip-bambi]] [--seed 0]

The measured thing is the command a user runs: `omnisocial glmm trials.csv -o summary.csv` in a
subprocess, end to end (Python start, imports, read, fit, summaries, the three CSVs), with its
defaults (the fast path: numba kernel + nutpie, 2 chains, draws sized to the R-hat/ESS target).
Each of its calls is followed by one `lme4::glmer` run (`Rscript`: R start, library(lme4),
read.csv, glmer; Laplace, the same formula, family binomial, the same CSV), so the two share
the machine's load; the ratios command / lme4 (wall and CPU: user + system of the child; the CPU
ratio moves less with the load of a shared machine) are of the medians over `--cli-runs`.

Three sets of tables:

- `--sds` (default 0.2,0.5,1.0,1.5): FriendBench-sized tables (3 modalities, 92 raters nested in
  each, 96 dyads, 32 dyads per rater: 8,832 trials) from this file's own simulator
  (`independent_trials`, not `glmm.simulate_trials`: every rater draws its dyads at random,
  other modality effects and seeds) for every pair of rater SD and dyad SD from the list, the
  range real studies have; one table per pair, printed as one row each, then the worst ratio;
- `--sizes` (default none; friendbench, large): `glmm.simulate_trials` tables at its default
  SDs (rater 0.5, dyad 1), FriendBench-sized and 3x ("large": 276 raters per modality, 288
  dyads, 26,496 trials), with a cold call first (an empty numba cache: `NUMBA_CACHE_DIR` a
  fresh folder, so the kernel is compiled as on the first call in a new setup);
- `--shapes` (default all; '' for none): `shaped_trials`, the shapes of real rating studies that
  neither simulator makes (SHAPES: raters crossed with modality, unequal trials per rater, dyads
  with few ratings, missing rows, each 8,832 trials, and all of it at 26,496); their rows add the
  mean leapfrog steps per draw (the command's `mean_steps`), the time per draw.

The workflow's GLMM job (`--no-job` leaves it out) is timed on the `--shapes` tables beside the
command and lme4, in the same loop: the rule's own script (`workflow/scripts/familiarity/glmm.py`)
in a new Python process, as Snakemake runs it, with a `snakemake` object holding the rule's
input (the table as the workflow's `trials.csv`: RATED_TRIALS, missing answers left out as the
workflow never holds them), outputs, log, and the params and threads the rule's own `params:`
and `threads:` expressions give (read from `workflow/rules/familiarity/analysis.smk` and
evaluated on the config the schema gives, `config.validate_config({})`: no study's settings).
So the job follows whatever the rule passes and the script calls. Its row reads the job's
`glmm_summary.csv` and `glmm_contrasts.csv`: draws per chain, chains, divergences, flagged rows,
min ESS, max R-hat. Snakemake's own start and DAG are not in its time.

Convergence is read from the command's own CSVs (summary and contrasts): every reported quantity
at R-hat <= 1.01 and bulk and tail ESS >= 400 (tail ESS where the command reports it); the
command's JSON line gives the draws per chain, the rounds of the draw sizing and the
parameterization it chose (C: centred, N: non-centred; rater,
dyad). Targets: every table's command and job <= 2x lme4 (wall, median; issue 62) and the
command <= 30 s warm on 2 cores, all converged; exits 1 on a miss.

`--in-process` adds `glmm.fit_glmm` in this process after a warm-up (fast, and out-of-the-box
bambi unless `--skip-bambi`) on the `--sizes` tables: the fit's own time without Python start
and imports, and the bambi comparison. Where no `Rscript` with lme4 is installed (Debian:
`apt-get install r-base-core r-cran-lme4`), the in-process bambi fit is the reference instead.
Formula `correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)`.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.stats import glmm

ROOT = Path(__file__).resolve().parents[1]
GLMM_RULE = ROOT / "workflow" / "rules" / "familiarity" / "analysis.smk"
GLMM_SCRIPT = ROOT / "workflow" / "scripts" / "familiarity" / "glmm.py"
SIZES = {"friendbench": (92, 96), "large": (276, 288)}
TARGET_S = 30.0
RATIO_MAX = 2.0  # issue 62: the command and the workflow's job at most twice lme4's wall
MODALITY_EFFECTS = {"audio": 0.2, "text": 0.5, "video": 0.8}  # logits, unlike simulate_trials'


def independent_trials(
    rater_sd: float, dyad_sd: float, seed: int, raters: int = 92, dyads: int = 96, per_rater: int = 32
) -> pd.DataFrame:
    """A FriendBench-shaped trial table made without `glmm.simulate_trials`: raters nested in
    modality, each rating `per_rater` dyads drawn at random (so the dyads' rating counts vary),
    logit P(correct) = modality effect + rater effect + dyad effect (shared by the modalities)."""
    rng = np.random.default_rng([seed, round(rater_sd * 100), round(dyad_sd * 100)])
    dyad_effect = rng.normal(0.0, dyad_sd, dyads)
    parts = []
    for modality, effect in MODALITY_EFFECTS.items():
        rater_effect = rng.normal(0.0, rater_sd, raters)
        chosen = np.stack([rng.choice(dyads, per_rater, replace=False) for _ in range(raters)])
        rater = np.repeat(np.arange(raters), per_rater)
        logit = effect + rater_effect[rater] + dyad_effect[chosen.ravel()]
        correct = rng.random(logit.size) < 1.0 / (1.0 + np.exp(-logit))
        parts.append(
            pd.DataFrame(
                {
                    "rater_id": [f"{modality[0]}{r:03d}" for r in rater],
                    "dyad_id": [f"pair{d:03d}" for d in chosen.ravel()],
                    "modality": modality,
                    "correct": correct.astype(int),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


# Tables that neither `glmm.simulate_trials` nor `independent_trials` make (issue 53): the shapes
# of real rating studies. Each is FriendBench-sized (8,832 trials before missing rows) unless
# its scale is 3 (26,496).
SHAPES = {
    "crossed": "every rater rates 32 random dyads in each of the 3 modalities (raters crossed with modality)",
    "unequal": "raters nested in modality, trials per rater from 2 to 96 (negative binomial, mean 32)",
    "few-raters": "a fifth of the dyads drawn 33x less often: those have 1-8 ratings",
    "missing": "5% of the rows removed at random and 1% with an empty `correct` (dropped, counted)",
    "mixed-3x": "all of it at 3x (26,496 trials): unequal trials, a third of the raters in 2-3 "
    "modalities, few-rater dyads, missing rows",
}
SHAPE_EFFECTS = {"text": -0.2, "audio": 0.15, "video": 0.45}  # logits: other accuracies again


def _dyad_weights(rng, dyads: int, skewed: bool) -> np.ndarray:
    weights = np.ones(dyads)
    if skewed:
        weights[rng.choice(dyads, dyads // 5, replace=False)] = 0.03
    return weights / weights.sum()


def shaped_trials(shape: str, seed: int = 0) -> pd.DataFrame:
    """A trial table of one of SHAPES (rater SD 0.7, dyad SD 0.8), made by neither simulator.

    Raters rate distinct dyads within a modality, drawn with the dyads' weights; rows
    rater_id, dyad_id, modality, correct (0/1, or empty for a missing answer)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")
    scale = 3 if shape.endswith("3x") else 1
    mixed = shape == "mixed-3x"
    rng = np.random.default_rng([seed, sorted(SHAPES).index(shape)])
    raters, dyads, modalities = 92 * scale, 96 * scale, list(SHAPE_EFFECTS)
    total = raters * len(modalities) * 32
    dyad_effect = rng.normal(0.0, 0.8, dyads)
    weights = _dyad_weights(rng, dyads, skewed=shape == "few-raters" or mixed)
    if shape == "crossed":  # one pool of raters, each in every modality
        pool = [(f"r{r:04d}", modalities) for r in range(raters)]
    elif mixed:  # a third of the raters in 2 or 3 modalities, the others in one
        pool = []
        for r in range(int(raters * len(modalities) * 0.8)):
            k = int(rng.choice([1, 2, 3], p=[0.67, 0.2, 0.13]))
            pool.append((f"r{r:04d}", list(rng.choice(modalities, k, replace=False))))
    else:
        pool = [(f"{m[0]}{r:03d}", [m]) for m in modalities for r in range(raters)]
    slots = sum(len(ms) for _, ms in pool)
    if shape == "unequal" or mixed:  # negative binomial counts, mean 32, within 2..96
        counts = np.clip(rng.negative_binomial(2, 2 / (2 + 32), slots), 2, 96).astype(float)
        counts = np.clip(np.round(counts * total / counts.sum()), 2, 96).astype(int)
    else:
        counts = np.full(slots, total // slots)
    rater_effect = {name: rng.normal(0.0, 0.7) for name, _ in pool}
    parts, slot = [], 0
    for name, rated in pool:
        for modality in rated:
            chosen = rng.choice(dyads, min(counts[slot], dyads), replace=False, p=weights)
            slot += 1
            logit = SHAPE_EFFECTS[modality] + rater_effect[name] + dyad_effect[chosen]
            parts.append(
                pd.DataFrame(
                    {
                        "rater_id": name,
                        "dyad_id": [f"pair{d:04d}" for d in chosen],
                        "modality": modality,
                        "correct": (rng.random(len(chosen)) < 1 / (1 + np.exp(-logit))).astype(int),
                    }
                )
            )
    frame = pd.concat(parts, ignore_index=True)
    if shape == "missing" or mixed:
        frame = frame.drop(index=rng.choice(len(frame), len(frame) // 20, replace=False))
        frame = frame.reset_index(drop=True).astype({"correct": object})
        frame.loc[rng.choice(len(frame), len(frame) // 100, replace=False), "correct"] = ""
    return frame


def _clock() -> tuple[float, float]:
    """Wall seconds, and CPU seconds of this process and its finished children (PyMC's chains)."""
    cpu = os.times()
    return time.perf_counter(), cpu.user + cpu.system + cpu.children_user + cpu.children_system


R_SCRIPT = """
t0 <- proc.time()
suppressMessages(library(lme4))
d <- read.csv(commandArgs(TRUE)[1], colClasses = "character")
d <- d[d$correct != "", ]  # missing answers: dropped, as the command drops them
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
    ess = both[[c for c in ("ess_bulk", "ess_tail") if c in both.columns]]  # ess_tail: since issue 52
    report = json.loads(out.strip().splitlines()[-1])
    centered = report.get("centered", {})
    return {
        "total_s": wall,
        "cpu_s": cpu,
        "sampler": report["sampler"],
        "draws": report.get("draws"),
        "rounds": report.get("rounds"),
        "divergences": report.get("divergences"),
        "param": "".join("C" if centered[c] else "N" for c in ("rater_id", "dyad_id")) if centered else "-",
        "rows": len(both),
        "min_ess": float(ess.min().min()),
        "steps": report.get("mean_steps"),
        "attempts": report.get("attempts"),
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


def _count(value) -> str:
    """A count from the command's JSON line; "-" where an older command does not report it."""
    return "-" if value is None else str(value)


def bench_sds(sds: list[float], runs: int, lme4: bool, seed: int, tmp: Path) -> list[str]:
    """One FriendBench-sized `independent_trials` table per (rater SD, dyad SD): the command and
    lme4, `runs` times each, interleaved; one row per table, then the worst ratio."""
    cache = tmp / "numba_cache_sds"
    warmup = tmp / "warmup.csv"
    independent_trials(0.5, 0.5, seed + 1, raters=12, dyads=12, per_rater=6).to_csv(warmup, index=False)
    run_cli(warmup, cache)  # compiles the kernel into the cache: the rows below are warm calls
    header = (
        f"{'rater_sd':>8} {'dyad_sd':>7} {'trials':>6} | {'command s':>9} {'CPU s':>6} | {'lme4 s':>6}"
        f" {'CPU s':>6} | {'ratio':>5} {'CPU':>5} | {'param':>5} {'draws':>5} {'rounds':>6}"
        f" {'min ESS':>7} {'max R-hat':>9} {'flagged':>7} {'div':>4} | load"
    )
    print(header, flush=True)
    missed, ratios = [], []
    for rater_sd in sds:
        for dyad_sd in sds:
            frame = independent_trials(rater_sd, dyad_sd, seed)
            csv = tmp / f"sd_{rater_sd:g}_{dyad_sd:g}.csv"
            frame.to_csv(csv, index=False)
            ours, med, lm, ratio, cpu_ratio = command_against_lme4(csv, cache, runs, lme4)
            last = ours[-1]
            ratios.append(ratio)
            print(
                f"{rater_sd:8.2f} {dyad_sd:7.2f} {len(frame):6d} | {med['total_s']:9.1f} {med['cpu_s']:6.1f}"
                f" | {lm['total_s']:6.1f} {lm['cpu_s']:6.1f} | {ratio:4.1f}x {cpu_ratio:4.1f}x"
                f" | {last['param']:>5} {_count(last['draws']):>5} {_count(last['rounds']):>6}"
                f" {last['min_ess']:7.0f} {last['max_rhat']:9.4f} {last['flagged']:7d}"
                f" {_count(last['divergences']):>4} | {_load():.1f}",
                flush=True,
            )
            name = f"rater SD {rater_sd:g}, dyad SD {dyad_sd:g}"
            if lme4 and ratio > RATIO_MAX:
                missed.append(f"{name}: command {ratio:.1f}x lme4 > {RATIO_MAX:g}x")
            if any(r["flagged"] or r["sampler"] != "fast" for r in ours):
                missed.append(f"{name}: command convergence or sampler")
            if med["total_s"] > TARGET_S:
                missed.append(f"{name}: command {med['total_s']:.1f} s > {TARGET_S:.0f} s")
    if lme4:
        print(
            f"worst ratio command / lme4: {max(ratios):.1f}x wall (median {statistics.median(ratios):.1f}x)"
        )
    return missed


def command_against_lme4(csv: Path, cache: Path, runs: int, lme4: bool, jobs: list | None = None) -> tuple:
    """The command and lme4 on `csv`, `runs` times each, interleaved (and the workflow's job,
    appended to `jobs`, where given): the command's runs, the median wall and CPU of each, and
    the ratios command / lme4 (NaN without lme4)."""
    ours, ref = [], []
    for _ in range(runs):
        ours.append(run_cli(csv, cache))
        if jobs is not None:
            jobs.append(run_job(csv, cache))
        if lme4:
            ref.append(run_lme4(csv))
    med = {key: statistics.median(r[key] for r in ours) for key in ("total_s", "cpu_s")}
    if not lme4:
        return ours, med, {"total_s": math.nan, "cpu_s": math.nan}, math.nan, math.nan
    lm = {key: statistics.median(r[key] for r in ref) for key in ("total_s", "cpu_s")}
    return ours, med, lm, med["total_s"] / lm["total_s"], med["cpu_s"] / lm["cpu_s"]


def bench_shapes(
    shapes: list[str], runs: int, lme4: bool, seed: int, tmp: Path, job: bool = True
) -> list[str]:
    """One `shaped_trials` table per shape: the command, the workflow's GLMM job (unless not
    `job`) and lme4, `runs` times each, interleaved; one row per table (with the mean leapfrog
    steps per draw: the time per draw) and one for the job, then the worst ratios."""
    cache = tmp / "numba_cache_shapes"
    warmup = tmp / "warmup_shapes.csv"
    independent_trials(0.5, 0.5, seed + 1, raters=12, dyads=12, per_rater=6).to_csv(warmup, index=False)
    run_cli(warmup, cache)  # compiles the kernel into the cache: the rows below are warm calls
    print(
        f"{'shape':>10} {'trials':>6} | {'command s':>9} {'CPU s':>6} | {'lme4 s':>6} {'CPU s':>6} |"
        f" {'ratio':>5} {'CPU':>5} | {'param':>5} {'draws':>5} {'rounds':>6} {'steps':>5}"
        f" {'min ESS':>7} {'max R-hat':>9} {'flagged':>7} {'div':>4} | load",
        flush=True,
    )
    if job:
        params, cores = rule_settings()
        print(
            f"{'':>10} job: the workflow's GLMM job, params {params}, threads {cores}"
            " (its row: draws per chain, then x chains where the command's gives rounds)",
            flush=True,
        )
    missed, ratios, job_ratios = [], [], []
    for shape in shapes:
        frame = shaped_trials(shape, seed)
        csv = tmp / f"shape_{shape}.csv"
        frame.to_csv(csv, index=False)
        jobs = [] if job else None
        ours, med, lm, ratio, cpu_ratio = command_against_lme4(csv, cache, runs, lme4, jobs)
        last = ours[-1]
        ratios.append(ratio)
        steps = "-" if last["steps"] is None else f"{last['steps']:.1f}"
        answered = int((frame["correct"].astype(str) != "").sum())
        print(
            f"{shape:>10} {answered:6d} | {med['total_s']:9.1f} {med['cpu_s']:6.1f}"
            f" | {lm['total_s']:6.1f} {lm['cpu_s']:6.1f} | {ratio:4.1f}x {cpu_ratio:4.1f}x"
            f" | {last['param']:>5} {_count(last['draws']):>5} {_count(last['rounds']):>6} {steps:>5}"
            f" {last['min_ess']:7.0f} {last['max_rhat']:9.4f} {last['flagged']:7d}"
            f" {_count(last['divergences']):>4} | {_load():.1f}",
            flush=True,
        )
        if lme4 and ratio > RATIO_MAX:
            missed.append(f"{shape}: command {ratio:.1f}x lme4 > {RATIO_MAX:g}x")
        if any(r["flagged"] or r["sampler"] != "fast" for r in ours):
            missed.append(f"{shape}: command convergence or sampler")
        if jobs:
            missed += _job_row(shape, jobs, lm, lme4, job_ratios)
    if lme4 and ratios:
        worst, middle = max(ratios), statistics.median(ratios)
        print(f"worst ratio command / lme4: {worst:.1f}x wall (median {middle:.1f}x)")
    if lme4 and job_ratios:
        worst, middle = max(job_ratios), statistics.median(job_ratios)
        print(f"worst ratio workflow job / lme4: {worst:.1f}x wall (median {middle:.1f}x)")
    return missed


def _job_row(shape: str, jobs: list[dict], lm: dict, lme4: bool, ratios: list[float]) -> list[str]:
    """Print the workflow job's row under the command's (its median against lme4's); its misses."""
    med = {key: statistics.median(r[key] for r in jobs) for key in ("total_s", "cpu_s")}
    last = jobs[-1]
    ratio = med["total_s"] / lm["total_s"] if lme4 else math.nan
    cpu_ratio = med["cpu_s"] / lm["cpu_s"] if lme4 else math.nan
    ratios.append(ratio)
    print(
        f"{'job':>10} {'':6} | {med['total_s']:9.1f} {med['cpu_s']:6.1f}"
        f" | {lm['total_s']:6.1f} {lm['cpu_s']:6.1f} | {ratio:4.1f}x {cpu_ratio:4.1f}x"
        f" | {'-':>5} {last['draws']:>5} {'x' + str(last['chains']):>6} {'-':>5}"
        f" {last['min_ess']:7.0f} {last['max_rhat']:9.4f} {last['flagged']:7d}"
        f" {last['divergences']:>4} | {_load():.1f}",
        flush=True,
    )
    missed = []
    if lme4 and ratio > RATIO_MAX:
        missed.append(f"{shape}: workflow job {ratio:.1f}x lme4 > {RATIO_MAX:g}x")
    if any(r["flagged"] for r in jobs):
        missed.append(f"{shape}: workflow job convergence")
    return missed


def rule_settings(rule: str = "glmm", smk: Path = GLMM_RULE) -> tuple[dict, int]:
    """(params, threads) of the workflow's `rule` on the config the schema gives: the rule's own
    `params:` and `threads:` expressions, read from its .smk file and evaluated with the names
    the workflow gives them (config, ANALYSIS = config["analysis"], THREADS = config["threads"]).
    A name the rule uses beyond these fails here, naming it: extend the names, never guess."""
    from omnisocial.config import validate_config

    config = validate_config({})
    names = {"config": config, "ANALYSIS": config["analysis"], "THREADS": config["threads"]}
    text = smk.read_text(encoding="utf-8")
    found = re.search(rf"^rule {rule}:\n(.*?)(?=^\S|\Z)", text, re.S | re.M)
    if found is None:
        raise SystemExit(f"{smk}: no rule {rule}")
    body = found.group(1)
    params = re.search(r"^    params:\n((?:        .*\n)+)", body, re.M)
    threads = re.search(r"^    threads: (.+)$", body, re.M)
    if params is None or threads is None:
        raise SystemExit(f"{smk}: rule {rule} has no params: block or threads: line to evaluate")
    try:
        values = eval(f"dict({params.group(1)})", {}, names)  # noqa: S307 (the project's own rule text)
        cores = int(eval(threads.group(1), {}, names))  # noqa: S307
    except (NameError, KeyError, SyntaxError) as error:
        message = f"{smk}: rule {rule}'s params or threads need more than the config: {error}"
        raise SystemExit(message) from None
    return values, cores


JOB_DRIVER = """
import json, runpy, sys
spec = json.loads(sys.argv[1])
class Named(dict):  # Snakemake's named lists: by name and by attribute
    __getattr__ = dict.__getitem__
smk = type("Snakemake", (), {})()
smk.input, smk.output, smk.params = Named(spec["input"]), Named(spec["output"]), Named(spec["params"])
smk.log, smk.threads, smk.rule = [spec["log"]], spec["threads"], spec["rule"]
smk.scriptdir = spec["scriptdir"]
smk.wildcards, smk.resources = Named(), Named()
runpy.run_path(spec["script"], init_globals={"snakemake": smk}, run_name="__main__")
"""


def workflow_trials(frame: pd.DataFrame) -> pd.DataFrame:
    """A bench table as the workflow's `ratings/trials.csv` (RATED_TRIALS): rows with an answer
    (the workflow's trials hold no missing one), correct as a bool, a response that agrees with
    it (the GLMM reads only `correct`) and a source."""
    from omnisocial.familiarity.contracts import RATED_TRIALS

    answered = frame[frame["correct"].astype(str) != ""].copy()
    correct = answered["correct"].astype(str).isin(["1", "True", "true"])
    answered["correct"] = correct
    answered["response"] = np.where(correct, "familiar", "stranger")
    answered["source"] = "bench_glmm"
    return RATED_TRIALS.validate(
        answered[["rater_id", "dyad_id", "modality", "response", "correct", "source"]]
    )


def run_job(csv: Path, cache_dir: Path) -> dict:
    """The workflow's GLMM job on `csv` (module doc): its times and its tables' convergence."""
    from omnisocial.familiarity.contracts import RATED_TRIALS

    params, cores = rule_settings()
    folder = csv.with_name(f"{csv.stem}_job")
    folder.mkdir(exist_ok=True)
    trials = folder / "trials.csv"
    RATED_TRIALS.write(trials, workflow_trials(pd.read_csv(csv, dtype=str, keep_default_na=False)))
    outputs = {name: str(folder / f"{name}.csv") for name in ("glmm_summary", "glmm_contrasts")}
    spec = {
        "input": {"trials": str(trials)},
        "output": outputs,
        "params": params,
        "log": str(folder / "glmm.log"),
        "threads": cores,
        "rule": "glmm",
        "scriptdir": str(GLMM_SCRIPT.parent),
        "script": str(GLMM_SCRIPT),
    }
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    wall, cpu, _ = _timed([sys.executable, "-c", JOB_DRIVER, json.dumps(spec)], env)
    both = pd.concat([pd.read_csv(path) for path in outputs.values()], ignore_index=True)
    ess = both[[c for c in ("ess_bulk", "ess_tail") if c in both.columns]]
    summary = pd.read_csv(outputs["glmm_summary"])
    return {
        "total_s": wall,
        "cpu_s": cpu,
        "draws": int(summary["draws"].iloc[0]),
        "chains": int(summary["chains"].iloc[0]),
        "divergences": int(summary["divergences"].iloc[0]),
        "min_ess": float(ess.min().min()),
        "max_rhat": float(both["r_hat"].max()),
        "flagged": int((~both["converged"].astype(bool)).sum()),
        "settings": {**params, "threads": cores},
    }


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
    parser.add_argument("--sds", default="0.2,0.5,1.0,1.5", help="rater and dyad SDs ('' for none)")
    parser.add_argument("--sizes", default="", help="glmm.simulate_trials tables: friendbench,large")
    parser.add_argument(
        "--shapes",
        default=",".join(SHAPES),
        help=f"tables of real studies' shapes ('' for none): {', '.join(SHAPES)}",
    )
    parser.add_argument(
        "--cli-runs", type=int, default=1, help="calls of the command (and of lme4) per table"
    )
    parser.add_argument("--in-process", action="store_true", help="also fit in this process")
    parser.add_argument("--skip-bambi", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-lme4", action="store_true")
    parser.add_argument(
        "--no-job", action="store_true", help="leave out the workflow's GLMM job on the --shapes tables"
    )
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
    if args.sds:
        sds = [float(value) for value in args.sds.split(",")]
        print("\n== independent tables, FriendBench-sized, rater SD x dyad SD ==", flush=True)
        missed += bench_sds(sds, args.cli_runs, lme4, args.seed, tmp)
    shapes = [shape for shape in args.shapes.split(",") if shape]
    if shapes:
        print("\n== tables of other shapes (neither simulator's) ==", flush=True)
        for shape in shapes:
            print(f"  {shape}: {SHAPES[shape]}")
        missed += bench_shapes(shapes, args.cli_runs, lme4, args.seed, tmp, job=not args.no_job)
    for name in [size for size in args.sizes.split(",") if size]:
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
