"""Attenuation-corrected correlation of two sets of Rasch difficulties, on simulated fits.

    .venv/bin/python benchmarks/bench_rasch_attenuation.py [--seeds 12] [--raters 8,30]

Per seed: 96 dyads whose latent difficulties in two modalities are bivariate normal (SD 1,
r = 0.87); each modality has its own raters (8 or 30, abilities N(0, 0.5^2)) who all answer
every dyad (`rasch.simulate_responses`). Both modalities are fitted by `rasch.fit_rasch`
(hierarchical prior on the difficulties; 2 chains, until converged), and the Pearson r of the
posterior means is corrected by the two fits' EAP reliabilities (`stats.reliability`, with
the SDs of the relative difficulties, `sd_relative`), as the rasch rule does. Printed per
rater count: the raw and the corrected r over the seeds (mean, SD, and the standard error of
the mean), the mean reliabilities and the fits' worst R-hat / ESS.
Exits 1 when a corrected mean is more than 3 standard errors (and 0.05) from 0.87.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

LATENT_R = 0.87
N_DYADS = 96


def one_seed(seed: int, n_raters: int, draws: int, tune: int) -> dict:
    from omnisocial.stats.rasch import fit_rasch, simulate_responses
    from omnisocial.stats.reliability import disattenuate, eap_reliability

    rng = np.random.default_rng(seed)
    latent = rng.multivariate_normal([0, 0], [[1, LATENT_R], [LATENT_R, 1]], size=N_DYADS)
    fits, worst = [], []
    for modality in range(2):
        frame = simulate_responses(latent[:, modality], n_raters, rng)
        items, _, info = fit_rasch(
            frame, "person", "item", "correct", draws=draws, tune=tune, seed=seed, until_converged=True
        )
        fits.append(items)
        worst.append((info["r_hat_max"], info["ess_bulk_min"], info["draws"]))
    x, y = fits
    raw = float(np.corrcoef(x["difficulty"], y["difficulty"])[0, 1])
    rel = tuple(eap_reliability(fit["difficulty"], fit["sd_relative"]) for fit in fits)
    return {
        "raw": raw,
        "corrected": disattenuate(raw, *rel),
        "reliability": float(np.mean(rel)),
        "latent": float(np.corrcoef(latent[:, 0], latent[:, 1])[0, 1]),
        "r_hat": max(w[0] for w in worst),
        "ess": min(w[1] for w in worst),
        "draws": max(w[2] for w in worst),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--raters", default="8,30", help="raters per dyad, comma-separated")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    args = parser.parse_args(argv)
    failed = False
    for n_raters in [int(v) for v in args.raters.split(",")]:
        started = time.perf_counter()
        rows = [one_seed(seed, n_raters, args.draws, args.tune) for seed in range(args.seeds)]
        values = {key: np.array([row[key] for row in rows]) for key in rows[0]}
        corrected = values["corrected"]
        sem = float(corrected.std(ddof=1) / math.sqrt(len(corrected)))
        print(
            f"{n_raters:>3} raters per dyad, {args.seeds} seeds: raw r {values['raw'].mean():.3f} "
            f"+/- {values['raw'].std(ddof=1):.3f}, corrected {corrected.mean():.3f} +/- "
            f"{corrected.std(ddof=1):.3f} (SE of the mean {sem:.3f}; latent {LATENT_R}, sample "
            f"latent r {values['latent'].mean():.3f}), reliability {values['reliability'].mean():.3f}, "
            f"worst R-hat {values['r_hat'].max():.3f}, min ESS {values['ess'].min():.0f}, "
            f"max draws {values['draws'].max():.0f}; {time.perf_counter() - started:.0f} s"
        )
        if abs(corrected.mean() - LATENT_R) > max(3 * sem, 0.05):
            print(f"  corrected mean is off the latent r {LATENT_R}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
