"""Convergence targets of every Bayesian fit (GLMM, Rasch) and the check against them.

A quantity counts as converged when its rank-normalized R-hat is at most RHAT_MAX and its
bulk ESS at least ESS_MIN. numpy only, so the figures (envs/figures.yaml) mark fits without
the sampling stack; `omnisocial.stats.glmm` re-exports these names.
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
