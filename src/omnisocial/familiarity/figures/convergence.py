"""Convergence marks of the Bayesian fits the figures draw (GLMM contrasts, Rasch fits).

A row counts as not converged exactly when `stats.convergence.convergence_problems` says so (R-hat
above RHAT_MAX, bulk ESS below ESS_MIN, or either undefined): the rule behind the tables'
`converged` column, which the summary page's convergence section shows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.stats.convergence import ESS_MIN, RHAT_MAX, convergence_problems

RULE = f"R-hat > {RHAT_MAX} or bulk ESS < {ESS_MIN}"
NOT_CONVERGED = f"not converged: {RULE}"


def not_converged(r_hat, ess_bulk) -> np.ndarray:
    """Per row, True where (r_hat, ess_bulk) misses the targets (missing values miss them)."""
    pairs = zip(np.asarray(r_hat, dtype=float), np.asarray(ess_bulk, dtype=float), strict=True)
    return np.array([bool(convergence_problems(r, e)) for r, e in pairs], dtype=bool)


def _fitted(fits: pd.DataFrame | None) -> pd.DataFrame:
    if fits is None or fits.empty:
        return pd.DataFrame(columns=["rater_type", "modality", "r_hat_max", "ess_bulk_min"])
    return fits[fits["fitted"].astype(bool)] if "fitted" in fits.columns else fits


def unconverged_fits(fits: pd.DataFrame | None) -> set[tuple[str, str]]:
    """(rater_type, modality) of every fitted Rasch fit (rasch_fits rows) that did not converge."""
    fitted = _fitted(fits)
    bad = not_converged(fitted["r_hat_max"], fitted["ess_bulk_min"])
    return set(zip(fitted["rater_type"][bad], fitted["modality"][bad], strict=True))


def convergence_note(flagged: int, total: int, noun: str, mark: str) -> str:
    """A caption sentence: how many of the `total` fits drawn did not converge and how they look."""
    if not flagged:
        return f"All {total} {noun} converged (R-hat \u2264 {RHAT_MAX}, bulk ESS \u2265 {ESS_MIN})."
    return f"{mark}: not converged, {RULE} ({flagged} of {total} {noun})."


def fits_note(fits: pd.DataFrame | None, drawn: set[tuple[str, str]], mark: str) -> str:
    """`convergence_note` over the Rasch fits drawn, (rater_type, modality), that `fits` lists;
    '' when it lists none of them."""
    fitted = _fitted(fits)
    known = drawn & set(zip(fitted["rater_type"], fitted["modality"], strict=True))
    if not known:
        return ""
    return convergence_note(len(known & unconverged_fits(fits)), len(known), "Rasch fits", mark)
