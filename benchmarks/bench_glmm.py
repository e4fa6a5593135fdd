"""Speed and convergence of the familiarity GLMM: out-of-the-box bambi vs the fast path.

    .venv/bin/python benchmarks/bench_glmm.py [--sizes friendbench,large] [--skip-bambi] [--seed 0]

Data (`glmm.simulate_trials`): 3 modalities, raters nested in modality, each rater rating 32
dyads; "friendbench" = 92 raters per modality and 96 dyads (8,832 trials), "large" = 276 and
288 (26,496 trials). Formula `correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)`.

- bambi: `bambi.Model(...).fit(chains=2, cores=2)` with PyMC's default NUTS, draws and tune
  (1000 each);
- fast: `glmm.fit_glmm` defaults (sampler "fast": numba kernel + nutpie, 2 chains, draws 2000,
  tune 500).

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
import sys
import time

from omnisocial.stats import glmm

SIZES = {"friendbench": (92, 96), "large": (276, 288)}
TARGET_S = 30.0


def _clock() -> tuple[float, float]:
    """Wall seconds, and CPU seconds of this process and its finished children (PyMC's chains)."""
    cpu = os.times()
    return time.perf_counter(), cpu.user + cpu.system + cpu.children_user + cpu.children_system


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
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the per-row convergence warnings are counted below
    samplers = ["fast"] if args.skip_bambi else ["bambi", "fast"]

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
        results = {}
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
