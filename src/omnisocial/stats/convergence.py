"""Convergence targets of every Bayesian fit (GLMM, Rasch) and the check against them.

A quantity counts as converged when its rank-normalized R-hat is at most RHAT_MAX and its
bulk ESS at least ESS_MIN; a fit counts as converged only when, besides, its divergent
transitions are at most a threshold (config `analysis.glmm.max_divergences`,
`analysis.rasch.max_divergences`: none by default, as Stan and ArviZ treat any divergence as a
sign that the sampler missed part of the posterior). docs/rasch-correction.md.
numpy only, so the figures (envs/figures.yaml) mark fits without the sampling stack;
`omnisocial.stats.glmm` re-exports these names.
"""

from __future__ import annotations

import numpy as np

RHAT_MAX = 1.01
ESS_MIN = 400


def convergence_problems(r_hat: float, ess_bulk: float) -> list[str]:
    """Why a quantity does not count as converged (R-hat > 1.01, bulk ESS < 400, or undefined)."""
    why = []
    if not np.isfinite(r_hat):
        why.append("r_hat undefined (one chain or constant draws)")
    elif r_hat > RHAT_MAX:
        why.append(f"r_hat {r_hat:.3f} > {RHAT_MAX}")
    if not np.isfinite(ess_bulk):
        why.append("ess_bulk undefined")
    elif ess_bulk < ESS_MIN:
        why.append(f"ess_bulk {ess_bulk:.0f} < {ESS_MIN}")
    return why


def divergence_problem(divergences: int, max_divergences: int) -> str:
    """Why a fit does not count as converged for its divergent transitions ("" when it does)."""
    if divergences > max_divergences:
        return f"{divergences} divergent transitions > {max_divergences}"
    return ""


def raised_target_accept(target_accept: float) -> float:
    """The target acceptance of the rerun after divergences: halves the distance to 1 (0.8 -> 0.9
    -> 0.95), at most 0.99; smaller steps of NUTS are what removes divergences when they can be."""
    return min(0.99, 1.0 - (1.0 - target_accept) / 2.0)
