"""MCMC summaries of many quantities at once: rank-normalized R-hat, bulk ESS and HDI.

`arviz.summary` builds an xarray Dataset per call and takes seconds for the ~1,000 random
effects of a GLMM; these functions call arviz-stats' array interface
(`arviz_stats.base.array_stats`, numpy + scipy only) directly on arrays of shape
(chain, draw, quantity). They replace a hand-written port of arviz 0.23's diagnostics and
return the same numbers bit for bit (`tests/test_glmm_rasch.py` checks both against arviz
and against an independent formula). arviz-stats is imported on first use, so importing
`omnisocial.stats.glmm` stays as light as before.

The one thing kept here: a quantity with a non-finite draw (inf as well as NaN) gets NaN
R-hat and ESS, as before; arviz-stats only screens NaN and would score an inf quantity.
"""

from __future__ import annotations

import numpy as np


def _array_stats():
    from arviz_stats.base import array_stats

    return array_stats


def diagnostics(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalized split R-hat (max of bulk and folded) and bulk ESS of each quantity.

    `draws` has shape (chain, draw, quantity), or (chain, draw) for one quantity; returns two
    arrays of length `quantity`, NaN where arviz returns NaN (non-finite draws, fewer than 4
    draws, R-hat with one chain).
    """
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 2:
        draws = draws[..., None]
    chains, n_draws, k = draws.shape
    rhat = np.full(k, np.nan)
    ess = np.full(k, np.nan)
    valid = np.isfinite(draws).all(axis=(0, 1))
    if n_draws < 4 or not valid.any():
        return rhat, ess
    good = draws[..., valid]
    stats = _array_stats()
    with np.errstate(divide="ignore", invalid="ignore"):  # constant quantity: NaN R-hat, as arviz
        if chains >= 2:
            rhat[valid] = stats.rhat(good, chain_axis=0, draw_axis=1, method="rank")
        ess[valid] = stats.ess(good, chain_axis=0, draw_axis=1, method="bulk")
    return rhat, ess


def hdi(draws: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Narrowest interval holding `prob` of the draws of each quantity (arviz's `hdi`, "nearest").

    `draws` has shape (chain, draw, quantity), or anything else for one quantity.
    """
    draws = np.asarray(draws, dtype=np.float64)
    flat = draws.reshape(-1, draws.shape[-1]) if draws.ndim == 3 else draws.reshape(-1, 1)
    interval = _array_stats().hdi(flat, prob, axis=0, method="nearest")
    return interval[:, 0], interval[:, 1]
