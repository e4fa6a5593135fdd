"""Vectorized MCMC summaries: arviz's rank-normalized R-hat, bulk ESS and HDI for many quantities.

`arviz.summary` loops over quantities in Python and takes seconds for the ~1,000 random effects
of a GLMM; these functions compute the same numbers (ported from arviz 0.23
`stats/diagnostics.py`; `tests/test_glmm_rasch.py` checks them against arviz) on arrays of
shape (chain, draw, quantity) at once.
"""

from __future__ import annotations

import numpy as np
from scipy import fft, special, stats

_BLOM = 3 / 8


def _split_chains(draws: np.ndarray) -> np.ndarray:
    half = draws.shape[1] // 2
    return np.concatenate([draws[:, :half], draws[:, draws.shape[1] - half :]], axis=0)


def _average_ranks(flat: np.ndarray) -> np.ndarray:
    """Ranks (1..N) of each column, ties sharing their average rank (scipy's method="average")."""
    rows = np.ascontiguousarray(flat.T)  # one quantity per row: sorts along contiguous memory
    order = np.argsort(rows, axis=1)
    ranks = np.empty(rows.shape)
    np.put_along_axis(ranks, order, np.arange(1, rows.shape[1] + 1, dtype=float)[None, :], axis=1)
    tied = (np.diff(np.take_along_axis(rows, order, axis=1), axis=1) == 0).any(axis=1)
    if tied.any():
        ranks[tied] = stats.rankdata(rows[tied], method="average", axis=1)
    return ranks.T


def _z_scale(draws: np.ndarray) -> np.ndarray:
    """Rank-normalize each quantity over all chains and draws (average ranks, Blom offset)."""
    chains, n_draws, k = draws.shape
    size = chains * n_draws
    rank = _average_ranks(draws.reshape(size, k))
    return special.ndtri((rank - _BLOM) / (size - 2 * _BLOM + 1)).reshape(draws.shape)


def _rhat(draws: np.ndarray) -> np.ndarray:
    n = draws.shape[1]
    chain_mean = draws.mean(axis=1)
    within = draws.var(axis=1, ddof=1).mean(axis=0)
    between = n * chain_mean.var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # constant quantity: NaN, as arviz
        return np.sqrt((between / within + n - 1) / n)


def _autocov(draws: np.ndarray) -> np.ndarray:
    n = draws.shape[1]
    m = fft.next_fast_len(2 * n)
    centred = draws - draws.mean(axis=1, keepdims=True)
    spectrum = np.fft.rfft(centred, n=m, axis=1)
    spectrum *= np.conjugate(spectrum)
    return np.fft.irfft(spectrum, n=m, axis=1)[:, :n] / n


def _ess_one(acov: np.ndarray, chain_mean: np.ndarray) -> float:
    """arviz `_ess` for one quantity from its autocovariances (chain, lag)."""
    n_chain, n_draw = acov.shape
    mean_var = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(chain_mean, ddof=1)
    rho = np.zeros(n_draw)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    rho[1] = rho_odd
    t = 1
    while t < (n_draw - 3) and (rho_even + rho_odd) > 0.0:  # Geyer's initial positive sequence
        rho_even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        rho_odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if (rho_even + rho_odd) >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:  # Geyer's initial monotone sequence
        if (rho[t + 1] + rho[t + 2]) > (rho[t - 1] + rho[t]):
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    total = n_chain * n_draw
    tau = -1.0 + 2.0 * np.sum(rho[: max_t + 1]) + np.sum(rho[max_t + 1 : max_t + 2])
    tau = max(tau, 1 / np.log10(total))
    return np.nan if np.isnan(rho).any() else total / tau


def diagnostics(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalized split R-hat (max of bulk and folded) and bulk ESS of each quantity.

    `draws` has shape (chain, draw, quantity); returns two arrays of length `quantity`, NaN
    where arviz returns NaN (non-finite draws, fewer than 4 draws, R-hat with one chain).
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
    split = _split_chains(good)
    bulk_z = _z_scale(split)
    if chains >= 2:
        folded = np.abs(split - np.median(split.reshape(-1, split.shape[-1]), axis=0))
        rhat[valid] = np.maximum(_rhat(bulk_z), _rhat(_z_scale(folded)))
    acov = _autocov(bulk_z)
    chain_mean = bulk_z.mean(axis=1)
    constant = (good.max(axis=(0, 1)) - good.min(axis=(0, 1))) < np.finfo(float).resolution
    values = np.empty(good.shape[-1])
    for j in range(good.shape[-1]):
        values[j] = (
            split.shape[0] * split.shape[1] if constant[j] else _ess_one(acov[..., j], chain_mean[:, j])
        )
    ess[valid] = values
    return rhat, ess


def hdi(draws: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Narrowest interval holding `prob` of the draws of each quantity (arviz's `hdi`)."""
    draws = np.asarray(draws, dtype=np.float64)
    flat = np.sort(draws.reshape(-1, draws.shape[-1]) if draws.ndim == 3 else draws.reshape(-1, 1), axis=0)
    n = flat.shape[0]
    inc = int(np.floor(prob * n))
    width = flat[inc:] - flat[: n - inc]
    low_idx = np.argmin(width, axis=0)
    columns = np.arange(flat.shape[1])
    return flat[low_idx, columns], flat[low_idx + inc, columns]
