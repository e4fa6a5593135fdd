"""Sampling the fast path with nutpie, and sizing the draws to the ESS target.

`fit_glmm(draws=None)` (the default) samples `auto_draws(chains)` draws per chain, checks R-hat
and bulk ESS of every reported quantity (the rows of `summarize` and `contrasts`), and when one
misses the target samples again from the start with the draws scaled by ESS_TARGET / (worst ESS)
(`next_draws`), at most MAX_ROUNDS times. Every round uses the same seed, so the whole procedure,
and the result, is deterministic for a seed.
"""

from __future__ import annotations

import math
import os

import numpy as np

from omnisocial.stats.glmm._fast import FastModel

# The worst reported quantity (usually the rater SD) reaches a bulk ESS of about 0.5 per draw
# (FriendBench and 3x sizes), so ~1,000 draws in all would meet ESS >= 400; but the max of R-hat
# over the ~400-1,100 reported rows (2 chains) stays above 1.01 until ~1,100 draws per chain
# (1.015 at 600 and 1,000, 1.009 at 1,200 on FriendBench): R-hat binds, not ESS.
AUTO_TOTAL_DRAWS = 2400
AUTO_TUNE = 300  # nutpie's default; 500 and 1,000 gave the same R-hat
ESS_MARGIN = 1.25  # a rerun aims at ESS_MIN * ESS_MARGIN
MAX_ROUNDS = 3
MAX_DRAWS = 20000  # per chain


# nutpie runs each chain in a thread, and every step of `sample_fast_model` calls the kernel through
# Python (`from_pyfunc`), so two threads queue for the GIL: below about 2,000 rows they take longer
# than one thread, at twice its CPU (192 trials: 5.4 s wall, 6.6 s CPU against 4.1 s; 1,440: 3.2 s,
# 4.5 s against 2.5 s; 8,832: 10.9 s, 18.0 s against 14.8 s). The draws are the same either way.
PARALLEL_CHAINS_MIN_ROWS = 2000


def chain_threads(chains: int, n_rows: int, cores: int | None = None) -> int:
    """Threads for the fast path's chains: one per chain up to `cores` (None: the CPUs), but one
    below PARALLEL_CHAINS_MIN_ROWS rows."""
    if n_rows < PARALLEL_CHAINS_MIN_ROWS:
        return 1
    return max(1, min(chains, cores or os.cpu_count() or 1))


def auto_draws(chains: int, n_quantities: int = 400) -> int:
    """Draws per chain of the first round of `draws=None`, for `n_quantities` reported rows.

    The largest of n R-hats grows with log n (1.011 over the 1,100 rows of the 3x set at 1,200
    draws per chain): the draws grow by a quarter per doubling of the rows beyond 400.
    """
    scale = 1.0 + 0.25 * max(0.0, math.log2(max(n_quantities, 1) / 400.0))
    return max(100, math.ceil(AUTO_TOTAL_DRAWS * scale / chains / 100.0) * 100)


def next_draws(draws: int, min_ess: float, max_rhat: float, ess_min: float, rhat_max: float) -> int | None:
    """Draws per chain for the next round, or None when the target is met (or cannot be helped).

    ESS grows about linearly with the draws: scale by ess_min * ESS_MARGIN / min_ess (at least 1.5x,
    rounded up to 100). An R-hat miss alone scales by 1.2 (max_rhat - 1) / (rhat_max - 1) (R-hat - 1
    falls about as 1 / draws), at least 1.3x; an undefined ESS or R-hat doubles the draws.
    """
    ess_ok = np.isfinite(min_ess) and min_ess >= ess_min
    rhat_ok = np.isfinite(max_rhat) and max_rhat <= rhat_max
    if ess_ok and rhat_ok:
        return None
    if draws >= MAX_DRAWS:
        return None
    factor = 2.0
    if np.isfinite(min_ess) and min_ess > 0 and not ess_ok:
        factor = max(1.5, ess_min * ESS_MARGIN / min_ess)
    elif ess_ok and np.isfinite(max_rhat):
        factor = max(1.3, 1.2 * (max_rhat - 1.0) / (rhat_max - 1.0))
    return int(min(MAX_DRAWS, math.ceil(draws * factor / 100.0) * 100))


def _nutpie_settings(draws, tune, chains, cores, seed, extra) -> dict:
    return {
        **(extra or {}),
        "draws": draws,
        "tune": tune,
        "chains": chains,
        "cores": cores,
        "seed": seed,
        "progress_bar": False,
        "save_warmup": False,
    }


def sample_fast_model(fast: FastModel, draws, tune, chains, cores, seed, extra=None):
    import arviz as az
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    from omnisocial.stats.glmm._kernel import logp_grad

    kernel_args = fast.kernel_args
    ndim = fast.ndim

    def make_logp_fn():
        def logp(x, **_shared):
            grad = np.empty(ndim)
            value = logp_grad(x, grad, *kernel_args)
            return value, grad

        return logp

    def make_expand_fn(_seed1, _seed2, _chain):
        def expand(x, **_shared):
            return {"theta": np.array(x, dtype=np.float64)}

        return expand

    compiled = from_pyfunc(
        ndim=ndim,
        make_logp_fn=make_logp_fn,
        make_expand_fn=make_expand_fn,
        expanded_dtypes=[np.dtype("float64")],
        expanded_shapes=[(ndim,)],
        expanded_names=["theta"],
        make_initial_point_fn=fast.initial_point,
    )
    raw = nutpie.sample(compiled, **_nutpie_settings(draws, tune, chains, cores, seed, extra))
    theta = raw.posterior["theta"].to_numpy()
    posterior = fast.expand(theta)
    dims = {fast.fixed_term: [fast.fixed_dim]}
    coords = {fast.fixed_dim: fast.fixed_levels}
    for factor in fast.factors:
        dims[factor.term] = [factor.dim]
        coords[factor.dim] = factor.levels
    idata = az.from_dict(posterior=posterior, coords=coords, dims=dims)
    idata.add_groups(sample_stats=raw.sample_stats)
    return idata


def _sample_pymc(fast: FastModel, draws, tune, chains, cores, seed, extra=None):
    import nutpie

    from omnisocial.stats.glmm._pymc import build_pymc_model

    compiled = nutpie.compile_pymc_model(build_pymc_model(fast))
    raw = nutpie.sample(compiled, **_nutpie_settings(draws, tune, chains, cores, seed, extra))
    keep = [fast.fixed_term, *[f"{f.term}_sigma" for f in fast.factors], *[f.term for f in fast.factors]]
    raw.posterior = raw.posterior[keep]
    return raw
