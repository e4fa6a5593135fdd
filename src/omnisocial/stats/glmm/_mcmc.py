"""MCMC summaries of many quantities at once: rank-normalized R-hat, bulk ESS and HDI.

`arviz.summary` builds an xarray Dataset per call and takes seconds for the ~1,000 random
effects of a GLMM; these functions compute arviz-stats' diagnostics and its "nearest" HDI with
numpy (and scipy.special, scipy.fft) on arrays of shape (chain, draw, quantity), vectorized over
the quantities, and return the same numbers (`tests/test_glmm_rasch.py` checks them against
arviz and against an independent formula). Neither arviz-stats nor scipy.stats is imported:
their imports would cost every `omnisocial glmm` call (docs/performance.md#code).

The one thing kept here: a quantity with a non-finite draw (inf as well as NaN) gets NaN
R-hat and ESS, as before; arviz-stats only screens NaN and would score an inf quantity.

Speed: arviz-stats rank-normalizes each quantity in a Python loop (three `rankdata` and
`norm.ppf` calls per quantity, for the ~400 reported quantities of a FriendBench-sized GLMM,
at every round of the draw sizing: docs/performance.md#code). `diagnostics` ranks all quantities
at once and computes the split R-hat in numpy, with arviz-stats' own formulas (split as
`_split_chains`, Blom's offsets as `_backtransform_ranks`, fold around the split draws'
median), and the bulk ESS from one batched FFT with Geyer's initial positive and monotone
sequences over all quantities at once (`_ess`, arviz-stats' `_ess` step by step); the numbers
equal arviz's to rounding (tests/test_glmm_rasch.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _average_ranks(flat: np.ndarray, scores: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """`scipy.stats.rankdata(flat, method="average", axis=0)` of finite values, in numpy.

    Ranks 1..n down each column, ties sharing the mean of their ranks. Importing scipy.stats
    for `rankdata` would cost every `omnisocial glmm` call (docs/performance.md#code); a sort
    and two running extrema give the same ranks. Each column is sorted as a contiguous row of
    the transpose (half the time of sorting down the strided columns: docs/performance.md#code).
    `scores` (a function of the ranks, elementwise): its values instead of the ranks, computed
    once for the n positions where a column has no ties.
    """
    scores = scores or (lambda ranks: ranks)
    n = flat.shape[0]
    rows = np.ascontiguousarray(flat.T)  # (quantity, draw)
    order = np.argsort(rows, axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    position = np.broadcast_to(np.arange(1.0, n + 1.0), rows.shape)
    starts = np.ones(rows.shape, dtype=bool)  # a tie group starts at this sorted position
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ranks = np.empty(rows.shape)
    if starts.all():  # no ties (the usual case for continuous draws): rank = sorted position
        np.put_along_axis(ranks, order, np.broadcast_to(scores(position[0]), rows.shape), axis=1)
        return np.ascontiguousarray(ranks.T)  # the caller's layout: its sums add in the same order
    ends = np.ones(rows.shape, dtype=bool)  # and ends at this one
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, position, 1.0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, float(n))[:, ::-1], axis=1)[:, ::-1]
    np.put_along_axis(ranks, order, scores((first + last) / 2.0), axis=1)
    return np.ascontiguousarray(ranks.T)


def _z_scale(values: np.ndarray) -> np.ndarray:
    """arviz-stats' `_z_scale` of each quantity (last axis) over all its draws at once (the
    normal quantile by `ndtri`, as `norm.ppf` computes it, without its argument checks; once
    for the n rank positions, not once a draw, where a quantity has no ties)."""
    from scipy import special

    flat = values.reshape(-1, values.shape[-1])
    n = flat.shape[0]
    z = _average_ranks(flat, lambda ranks: special.ndtri((ranks - 0.375) / (n + 0.25)))
    return z.reshape(values.shape)


def _split_rhat(z: np.ndarray) -> np.ndarray:
    """arviz-stats' `_rhat` of each quantity of split chains z (split chain, draw, quantity)."""
    n = z.shape[1]
    between = n * np.var(z.mean(axis=1), axis=0, ddof=1)
    within = np.var(z, axis=1, ddof=1).mean(axis=0)
    return np.sqrt((between / within + n - 1) / n)


def _ess(z: np.ndarray) -> np.ndarray:
    """arviz-stats' `_DiagnosticsBase._ess` of each quantity of z (chain, draw, quantity).

    Autocovariances by FFT per chain, averaged over chains; rho_t = 1 - (var_within - acov_t) /
    var_plus; Geyer's initial positive sequence keeps the pairs (rho_2j, rho_2j+1) up to the first
    pair whose sum is not positive (and that pair's even lag when positive); his initial
    monotone sequence makes the kept pair sums non-increasing; ESS = chains x draws / tau with
    tau = -1 + 2 sum(kept rho) + rho at the cut, at least 1 / log10(chains x draws)."""
    from scipy.fft import irfft, next_fast_len, rfft

    chains, n, k = z.shape
    size = float(chains * n)
    centred = z - z.mean(axis=1, keepdims=True)
    m = next_fast_len(2 * n)
    spectrum = rfft(centred, n=m, axis=1)
    spectrum *= np.conjugate(spectrum)
    acov = irfft(spectrum, n=m, axis=1)[:, :n] / n
    mean_acov = acov.mean(axis=0)  # (lag, quantity)
    mean_var = mean_acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus = var_plus + np.var(z.mean(axis=1), axis=0, ddof=1)
    rho = 1.0 - (mean_var - mean_acov) / var_plus  # rho[0] is 1 up to rounding: arviz sets 1
    rho[0] = 1.0
    # pairs j = 0, 1, ...: lags (2j, 2j + 1); arviz computes pair j >= 1 while 2j - 1 < n - 3
    n_pairs = max(1, -(-(n - 2) // 2))
    pair = rho[: 2 * n_pairs].reshape(n_pairs, 2, k).sum(axis=1)
    failed = pair <= 0.0
    failed[-1] = True  # the loop ends after the last pair it may compute
    cut = np.argmax(failed, axis=0)  # J: the first pair that ends the positive sequence
    kept = np.arange(n_pairs)[:, None] < cut[None, :]
    monotone = np.minimum.accumulate(np.where(kept, pair, np.inf), axis=0)
    total = np.where(kept, monotone, 0.0).sum(axis=0)
    even = rho[2 * cut, np.arange(k)]
    last_pair = pair[cut, np.arange(k)]
    tail = np.where((even > 0) | (last_pair >= 0), even, 0.0)
    tau = np.maximum(-1.0 + 2.0 * total + tail, 1.0 / np.log10(size))
    ess = size / tau
    ess[np.isnan(rho).any(axis=0)] = np.nan
    constant = (z.max(axis=(0, 1)) - z.min(axis=(0, 1))) < np.finfo(float).resolution
    ess[constant] = size
    return ess


def _ess_tail(split: np.ndarray) -> np.ndarray:
    """arviz-stats' tail ESS of each quantity of split chains: the smaller ESS of the indicators
    draw <= 5% quantile and draw <= 95% quantile (`_ess_tail`, `_ess_quantile`, prob 0.05)."""
    rows = np.ascontiguousarray(split.reshape(-1, split.shape[-1]).T)  # a quantity's draws contiguous
    low, high = np.quantile(rows, [0.05, 0.95], axis=1)
    return np.minimum(_ess((split <= low).astype(float)), _ess((split <= high).astype(float)))


def diagnostics(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-normalized split R-hat (max of bulk and folded), bulk ESS and tail ESS of each quantity.

    `draws` has shape (chain, draw, quantity), or (chain, draw) for one quantity; returns three
    arrays of length `quantity`, NaN where arviz returns NaN (non-finite draws, fewer than 4
    draws, R-hat with one chain).
    """
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 2:
        draws = draws[..., None]
    chains, n_draws, k = draws.shape
    rhat = np.full(k, np.nan)
    ess = np.full(k, np.nan)
    tail = np.full(k, np.nan)
    valid = np.isfinite(draws).all(axis=(0, 1))
    if n_draws < 4 or not valid.any():
        return rhat, ess, tail
    good = draws[..., valid]
    half = n_draws // 2  # arviz-stats' _split_chains: drops the middle draw of an odd count
    split = np.concatenate([good[:, :half], good[:, n_draws - half :]], axis=0)
    z = _z_scale(split)
    with np.errstate(divide="ignore", invalid="ignore"):  # constant quantity: NaN R-hat, as arviz
        if chains >= 2:
            rows = np.ascontiguousarray(split.reshape(-1, split.shape[-1]).T)
            folded = np.abs(split - np.median(rows, axis=1))
            rhat[valid] = np.maximum(_split_rhat(z), _split_rhat(_z_scale(folded)))
        ess[valid] = _ess(z)
        tail[valid] = _ess_tail(split)
    return rhat, ess, tail


def hdi(draws: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Narrowest interval holding `prob` of the draws of each quantity (arviz's `hdi`, "nearest").

    `draws` has shape (chain, draw, quantity), or anything else for one quantity.
    """
    draws = np.asarray(draws, dtype=np.float64)
    flat = draws.reshape(-1, draws.shape[-1]) if draws.ndim == 3 else draws.reshape(-1, 1)
    # arviz-stats' `_hdi_linear_nearest_common`, on every column at once (no import of
    # arviz-stats, whose package import loads scipy.stats: ~0.5 s of CPU in every command call).
    n = flat.shape[0]
    ordered = np.sort(flat, axis=0)
    inside = int(np.floor(prob * n))
    if n - inside == 0:
        raise ValueError("Too few elements for interval calculation. ")
    width = ordered[inside:] - ordered[: n - inside]
    low = np.argmin(width, axis=0)
    columns = np.arange(flat.shape[1])
    return ordered[low, columns], ordered[low + inside, columns]
