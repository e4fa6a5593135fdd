"""Log density and gradient of the fast-path GLMM (see `omnisocial.stats.glmm`), in numba.

The unconstrained parameter vector `theta` is laid out as

    [a_0 .. a_{M-1}]                      identified fixed-level means (flat prior)
    for each grouping factor g:
        [log sigma_g]                     HalfNormal(sigma_prior_g) prior, log-Jacobian added
        [eta_{g,0} .. eta_{g,B_g-1}]      one standard normal per block (block means)
        [w_{g,block} ...]                 n_block - 1 coordinates of each block's zero-sum part

and the model is

    u_g[level]  = sigma_g * eta_{g,block} / sqrt(n_block) + zs_g[level]
    zs_g        = S * E(w)  with E the orthonormal zero-sum extension of PyMC's ZeroSumTransform,
                  S = sigma_g and w ~ N(0, 1) (non-centred) or S = 1 and w ~ N(0, sigma_g) (centred)
    b_m         = a_m - sum_g sigma_g * eta_{g, block(g, m)} / sqrt(n_block)  ~ Normal(mu_m, sd_m)
    logit p_i   = b_{m_i} + sum_g u_g[level_{g,i}] = a_{m_i} + sum_g zs_g[level_{g,i}]
    k_i         ~ Binomial(n_i, p_i)

so `u_g` is exactly i.i.d. Normal(0, sigma_g) (an orthonormal change of basis of a standard normal
vector) and the density equals bambi's model up to the linear, volume-preserving change of variables
(b, u) -> (a, eta, w). All constants are kept, so the value equals PyMC's `model.logp()` of the same
model written in PyMC (`glmm.build_pymc_model`).

Compile cache: the three jitted functions are compiled on the first call in a setup (seconds:
docs/performance.md#setup) and cached on disk (numba's `cache=True`), so later processes load
them. numba keeps the cache in the first writable of: `$NUMBA_CACHE_DIR`, the
`__pycache__` folder beside this file (for the editable install:
`src/omnisocial/stats/glmm/__pycache__/_kernel.*.nbi|nbc`, ignored by git), and
`$XDG_CACHE_HOME/numba` (`~/.cache/numba`). It is keyed on this file's modification time, so a
fresh clone or an edit compiles once again. Where none is writable (a read-only install and
home) the functions are compiled in each process instead, with a warning, and nothing fails.
"""

from __future__ import annotations

import logging
import math

import numba
import numpy as np

log = logging.getLogger("omnisocial.stats.glmm")

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_SQRT_2_OVER_PI = 0.5 * math.log(2.0 / math.pi)


_UNCACHED: list[str] = []  # the functions compiled without a cache (none where one is writable)


def _cached_njit(**options):
    """numba.njit with the on-disk cache, or without it where no cache folder is writable."""

    def decorate(func):
        try:
            return numba.njit(cache=True, **options)(func)
        except RuntimeError as error:  # numba: "cannot cache function ...: no locator available"
            if not _UNCACHED:
                log.warning("%s; the GLMM kernel is compiled in this process (about 6 s)", error)
            _UNCACHED.append(func.__name__)
            return numba.njit(**options)(func)

    return decorate


def logp_grad(
    theta,
    grad,
    mod,
    lev,
    k,
    n,
    const,
    prior_mu,
    prior_sd,
    sig_prior_sd,
    centered,
    pos_ls,
    blk_factor,
    blk_first,
    blk_size,
    blk_eta_pos,
    blk_w_pos,
    mod_block,
    n_levels,
):
    """Return log p(theta | data) (all constants included); write its gradient into `grad`.

    Two numba loops around numpy's SIMD `exp`/`log1p` (numba's scalar libm calls would take
    most of the time): priors and linear predictor, then likelihood and back-propagation.
    """
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    eta = np.empty(k.shape[0])
    u = np.empty(n_levels)
    logp = _prior_and_eta(
        theta,
        grad,
        eta,
        u,
        mod,
        lev,
        const,
        prior_mu,
        prior_sd,
        sig_prior_sd,
        centered,
        pos_ls,
        blk_factor,
        blk_first,
        blk_size,
        blk_eta_pos,
        blk_w_pos,
        mod_block,
    )
    small = np.abs(eta)
    np.negative(small, out=small)
    np.exp(small, out=small)  # exp(-|eta|), in (0, 1]
    log_term = np.log1p(small)
    logp += _likelihood_and_backprop(
        theta,
        grad,
        eta,
        small,
        log_term,
        u,
        mod,
        lev,
        k,
        n,
        centered,
        pos_ls,
        blk_factor,
        blk_first,
        blk_size,
        blk_w_pos,
        prior_mu.shape[0],
    )
    return logp


@_cached_njit(nogil=True, error_model="numpy")
def _prior_and_eta(
    theta,
    grad,
    eta,
    u,
    mod,
    lev,
    const,
    prior_mu,
    prior_sd,
    sig_prior_sd,
    centered,
    pos_ls,
    blk_factor,
    blk_first,
    blk_size,
    blk_eta_pos,
    blk_w_pos,
    mod_block,
):
    n_mod = prior_mu.shape[0]
    n_fac = sig_prior_sd.shape[0]
    n_blk = blk_size.shape[0]
    for j in range(grad.shape[0]):
        grad[j] = 0.0
    logp = const

    sig = np.empty(n_fac)
    for g in range(n_fac):
        sig[g] = math.exp(theta[pos_ls[g]])
        # HalfNormal prior on sigma plus the log-Jacobian of sigma = exp(log sigma).
        s = sig_prior_sd[g]
        logp += _LOG_SQRT_2_OVER_PI - math.log(s) - 0.5 * sig[g] * sig[g] / (s * s) + theta[pos_ls[g]]
        grad[pos_ls[g]] += 1.0 - sig[g] * sig[g] / (s * s)

    bmean = np.empty(n_blk)
    for b in range(n_blk):
        e = theta[blk_eta_pos[b]]
        bmean[b] = sig[blk_factor[b]] * e / math.sqrt(blk_size[b])
        logp += -0.5 * e * e - _HALF_LOG_2PI
        grad[blk_eta_pos[b]] += -e

    # Prior of the reported fixed effects b_m = a_m - (block means that shift level m).
    for m in range(n_mod):
        bm = theta[m]
        for g in range(n_fac):
            bm -= bmean[mod_block[g, m]]
        z = (bm - prior_mu[m]) / prior_sd[m]
        logp += -0.5 * z * z - math.log(prior_sd[m]) - _HALF_LOG_2PI
        dp = -z / prior_sd[m]
        grad[m] += dp
        for g in range(n_fac):
            bb = mod_block[g, m]
            grad[blk_eta_pos[bb]] -= dp * sig[g] / math.sqrt(blk_size[bb])
            grad[pos_ls[g]] -= dp * bmean[bb]

    # Zero-sum parts of the random effects (the part that enters the linear predictor).
    for j in range(u.shape[0]):
        u[j] = 0.0
    for b in range(n_blk):
        g = blk_factor[b]
        nb = blk_size[b]
        if nb < 2:
            continue
        w0 = blk_w_pos[b]
        total = 0.0
        sq = 0.0
        for j in range(nb - 1):
            total += theta[w0 + j]
            sq += theta[w0 + j] * theta[w0 + j]
        rootn = math.sqrt(nb)
        shift = total / (rootn + nb)
        scale = 1.0 if centered[g] else sig[g]
        first = blk_first[b]
        for j in range(nb - 1):
            u[first + j] = scale * (theta[w0 + j] - shift)
        u[first + nb - 1] = -scale * total / rootn
        if centered[g]:
            var = sig[g] * sig[g]
            logp += -0.5 * sq / var - (nb - 1) * (theta[pos_ls[g]] + _HALF_LOG_2PI)
            for j in range(nb - 1):
                grad[w0 + j] -= theta[w0 + j] / var
            grad[pos_ls[g]] += sq / var - (nb - 1)
        else:
            logp += -0.5 * sq - (nb - 1) * _HALF_LOG_2PI
            for j in range(nb - 1):
                grad[w0 + j] -= theta[w0 + j]

    # Linear predictor of every cell.
    for i in range(eta.shape[0]):
        eta[i] = theta[mod[i]]
    for g in range(n_fac):
        for i in range(eta.shape[0]):
            eta[i] += u[lev[g, i]]
    return logp


@_cached_njit(nogil=True, error_model="numpy", fastmath={"nsz", "arcp", "contract", "reassoc"})
def _binomial_terms(eta, small, log_term, k, n, resid):
    """Sum of k*eta - n*log(1 + exp(eta)) from exp(-|eta|) and its log1p; resid = d/d eta."""
    logp = 0.0
    for i in range(eta.shape[0]):
        value = eta[i]
        inv = 1.0 / (1.0 + small[i])
        prob = inv if value > 0.0 else small[i] * inv
        logp += k[i] * value - n[i] * (max(value, 0.0) + log_term[i])
        resid[i] = k[i] - n[i] * prob
    return logp


@_cached_njit(nogil=True, error_model="numpy")
def _likelihood_and_backprop(
    theta,
    grad,
    eta,
    small,
    log_term,
    u,
    mod,
    lev,
    k,
    n,
    centered,
    pos_ls,
    blk_factor,
    blk_first,
    blk_size,
    blk_w_pos,
    n_mod,
):
    """Binomial log likelihood from exp(-|eta|) and log1p of it; gradient through the zero-sum parts."""
    n_fac = pos_ls.shape[0]
    n_blk = blk_size.shape[0]
    sig = np.empty(n_fac)
    for g in range(n_fac):
        sig[g] = math.exp(theta[pos_ls[g]])
    resid = np.empty(eta.shape[0])
    logp = _binomial_terms(eta, small, log_term, k, n, resid)
    # Scatter-add into 4 interleaved accumulators: cells sorted by level hit the same slot
    # several times in a row, and a single accumulator would serialize on it.
    n_obs = eta.shape[0]
    acc_mod = np.zeros((4, grad.shape[0]))
    for i in range(n_obs):
        acc_mod[i & 3, mod[i]] += resid[i]
    acc = np.zeros((4, u.shape[0]))
    for g in range(n_fac):
        for i in range(n_obs):
            acc[i & 3, lev[g, i]] += resid[i]
    level_grad = acc[0] + acc[1] + acc[2] + acc[3]
    for m in range(n_mod):
        grad[m] += acc_mod[0, m] + acc_mod[1, m] + acc_mod[2, m] + acc_mod[3, m]

    # Back through the zero-sum extension (its transpose) and the scale.
    for b in range(n_blk):
        g = blk_factor[b]
        nb = blk_size[b]
        if nb < 2:
            continue
        first = blk_first[b]
        w0 = blk_w_pos[b]
        scale = 1.0 if centered[g] else sig[g]
        if not centered[g]:
            acc = 0.0
            for j in range(nb):
                acc += level_grad[first + j] * u[first + j]
            grad[pos_ls[g]] += acc
        rootn = math.sqrt(nb)
        head = 0.0
        for j in range(nb - 1):
            head += level_grad[first + j]
        last = level_grad[first + nb - 1]
        for j in range(nb - 1):
            grad[w0 + j] += scale * (level_grad[first + j] - head / (rootn + nb) - last / rootn)
    return logp
