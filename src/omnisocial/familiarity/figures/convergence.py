"""Convergence marks of the Bayesian fits the figures draw (GLMM contrasts, Rasch fits).

A row counts as not converged exactly when its table's `converged` column says so: the one rule
of `stats.convergence` (R-hat above RHAT_MAX, bulk or tail ESS below ESS_MIN, one of them
undefined, or the fit's divergent transitions above max_divergences), which the summary page's
convergence section shows. A table without that column (an older one) is judged on its R-hat
and ESS columns by `stats.convergence.convergence_problems`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.stats.convergence import ESS_MIN, RHAT_MAX, convergence_problems

RULE = f"R-hat > {RHAT_MAX}, bulk or tail ESS < {ESS_MIN}, or divergent transitions"
NOT_CONVERGED = f"not converged: {RULE}"


def not_converged(r_hat, ess_bulk, ess_tail=None) -> np.ndarray:
    """Per row, True where (r_hat, ess_bulk, ess_tail) misses the targets (missing values miss
    them); without `ess_tail` (an older table) the bulk ESS stands for it."""
    tail = ess_bulk if ess_tail is None else ess_tail
    rows = zip(*(np.asarray(v, dtype=float) for v in (r_hat, ess_bulk, tail)), strict=True)
    return np.array([bool(convergence_problems(r, e, t)) for r, e, t in rows], dtype=bool)


def rows_not_converged(
    table: pd.DataFrame, r_hat: str = "r_hat", ess: str = "ess_bulk", tail: str = "ess_tail"
):
    """Per row of a table, True where it did not converge: its `converged` column, else the
    rule on its R-hat and ESS columns (`not_converged`)."""
    if "converged" in table.columns:
        return ~table["converged"].fillna(False).astype(bool).to_numpy()
    return not_converged(table[r_hat], table[ess], table[tail] if tail in table.columns else None)


def _fitted(fits: pd.DataFrame | None) -> pd.DataFrame:
    if fits is None or fits.empty:
        return pd.DataFrame(columns=["rater_type", "modality", "r_hat_max", "ess_bulk_min"])
    return fits[fits["fitted"].astype(bool)] if "fitted" in fits.columns else fits


def unconverged_fits(fits: pd.DataFrame | None) -> set[tuple[str, str]]:
    """(rater_type, modality) of every fitted Rasch fit (rasch_fits rows) that did not converge."""
    fitted = _fitted(fits)
    bad = rows_not_converged(fitted, "r_hat_max", "ess_bulk_min", "ess_tail_min")
    return set(zip(fitted["rater_type"][bad], fitted["modality"][bad], strict=True))


def convergence_note(flagged: int, total: int, noun: str, mark: str) -> str:
    """A caption sentence: how many of the `total` fits drawn did not converge and how they look."""
    if not flagged:
        return f"All {total} {noun} converged (R-hat \u2264 {RHAT_MAX}, bulk and tail ESS \u2265 {ESS_MIN})."
    return f"{mark}: not converged, {RULE} ({flagged} of {total} {noun})."


def fits_note(fits: pd.DataFrame | None, drawn: set[tuple[str, str]], mark: str) -> str:
    """`convergence_note` over the Rasch fits drawn, (rater_type, modality), that `fits` lists;
    '' when it lists none of them."""
    fitted = _fitted(fits)
    known = drawn & set(zip(fitted["rater_type"], fitted["modality"], strict=True))
    if not known:
        return ""
    return convergence_note(len(known & unconverged_fits(fits)), len(known), "Rasch fits", mark)
