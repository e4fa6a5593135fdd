"""The one convergence rule of every Bayesian fit (GLMM command and workflow, Rasch fits).

A quantity counts as converged when its rank-normalized R-hat is at most RHAT_MAX and both its
bulk ESS and its tail ESS (the smaller ESS of the 5% and 95% quantiles, as `arviz.ess(method=
"tail")`; the HDIs are read from the tails) are at least ESS_MIN. A fit counts as converged
only when, besides, its divergent transitions are at most a threshold (`--max-divergences` of
`omnisocial glmm` and `omnisocial rasch`, config `analysis.glmm.max_divergences`,
`analysis.rasch.max_divergences`: none by default, as Stan and ArviZ treat any divergence as a
sign that the sampler missed part of the posterior); a fit-wide problem flags every quantity of
the fit, in every table it writes (`fit_problems`). docs/statistics.md#convergence.
numpy only, so the figures (envs/figures.yaml) mark fits without the sampling stack;
`omnisocial.stats.glmm` re-exports these names.
"""

from __future__ import annotations

import numpy as np

RHAT_MAX = 1.01
ESS_MIN = 400
RULE = f"R-hat <= {RHAT_MAX}, bulk and tail ESS >= {ESS_MIN}, divergences <= max_divergences"


def convergence_problems(r_hat: float, ess_bulk: float, ess_tail: float) -> list[str]:
    """Why a quantity does not count as converged (R-hat > 1.01, bulk or tail ESS < 400, or
    one of them undefined)."""
    why = []
    if not np.isfinite(r_hat):
        why.append("r_hat undefined (one chain or constant draws)")
    elif r_hat > RHAT_MAX:
        why.append(f"r_hat {r_hat:.3f} > {RHAT_MAX}")
    for name, ess in (("ess_bulk", ess_bulk), ("ess_tail", ess_tail)):
        if not np.isfinite(ess):
            why.append(f"{name} undefined")
        elif ess < ESS_MIN:
            why.append(f"{name} {ess:.0f} < {ESS_MIN}")
    return why


def divergence_problem(divergences: int, max_divergences: int) -> str:
    """Why a fit does not count as converged for its divergent transitions ("" when it does)."""
    if divergences > max_divergences:
        return f"{divergences} divergent transitions > {max_divergences}"
    return ""


def fit_problems(r_hat: float, ess_bulk: float, ess_tail: float, diverged: str = "") -> list[str]:
    """`convergence_problems` of a quantity plus its fit's `divergence_problem` (`diverged`)."""
    return convergence_problems(r_hat, ess_bulk, ess_tail) + ([diverged] if diverged else [])


def flag_text(problems: list[str]) -> str:
    """The `flag` column of a table: "" when converged, else "not converged: why; why"."""
    return f"not converged: {'; '.join(problems)}" if problems else ""


def raised_target_accept(target_accept: float) -> float:
    """The target acceptance of the rerun after divergences: halves the distance to 1 (0.8 -> 0.9
    -> 0.95), at most 0.99; smaller steps of NUTS are what removes divergences when they can be."""
    return min(0.99, 1.0 - (1.0 - target_accept) / 2.0)
