"""The fast path's model written in PyMC: the reference implementation of the numba kernel."""

from __future__ import annotations

import numpy as np

from omnisocial.stats.glmm._fast import FastModel


def build_pymc_model(fast: FastModel):
    """The fast path's model written in PyMC (the reference for the numba kernel).

    Free variables: `a` (flat), per factor `<term>_sigma` (HalfNormal), `<term>_eta` (one
    N(0, 1) per block) and `<term>_zs<b>` (ZeroSumNormal per block of 2+ levels); bambi's
    variables are Deterministics with bambi's names and dims.
    """
    import pymc as pm
    import pytensor.tensor as pt

    coords = {fast.fixed_dim: fast.fixed_levels}
    for factor in fast.factors:
        coords[factor.dim] = factor.levels
    with pm.Model(coords=coords) as model:
        a = pm.Flat("a", dims=fast.fixed_dim)
        fixed = a
        eta = a[fast.mod]
        for g, factor in enumerate(fast.factors):
            sigma = pm.HalfNormal(f"{factor.term}_sigma", sigma=factor.prior_sd)
            etas = pm.Normal(f"{factor.term}_eta", 0.0, 1.0, shape=len(factor.blocks))
            sizes = np.array([len(block) for block in factor.blocks], dtype=float)
            means = sigma * etas / np.sqrt(sizes)
            fixed = fixed - means[factor.block_of_fixed]
            parts = []
            for b, block in enumerate(factor.blocks):
                if len(block) > 1:
                    scale = sigma if factor.centered else 1.0
                    zs = pm.ZeroSumNormal(f"{factor.term}_zs{b}", sigma=scale, shape=len(block))
                    parts.append(zs if factor.centered else sigma * zs)
                else:
                    parts.append(pt.zeros(1))
            zs_all = pt.concatenate(parts)  # internal order, blocks contiguous
            block_id = np.concatenate([np.full(len(block), b) for b, block in enumerate(factor.blocks)])
            offset = int(fast.internal_of[g].min())
            local = fast.internal_of[g] - offset
            pm.Deterministic(factor.term, (means[block_id] + zs_all)[local], dims=factor.dim)
            eta = eta + zs_all[fast.lev[g] - offset]
        pm.Deterministic(fast.fixed_term, fixed, dims=fast.fixed_dim)
        pm.Potential(
            f"{fast.fixed_term}_prior",
            pm.logp(pm.Normal.dist(fast.prior_mu, fast.prior_sd), fixed).sum(),
        )
        pm.Binomial(fast.response, n=fast.n, logit_p=eta, observed=fast.k)
    return model


def theta_to_pymc_point(fast: FastModel, theta: np.ndarray) -> dict[str, np.ndarray]:
    """The PyMC value-variable point (as in `build_pymc_model`) for an unconstrained vector."""
    point = {"a": theta[: len(fast.fixed_levels)]}
    for factor in fast.factors:
        point[f"{factor.term}_sigma_log__"] = np.asarray(theta[factor.pos_ls])
        point[f"{factor.term}_eta"] = theta[np.array(factor.eta_pos)]
        for b, block in enumerate(factor.blocks):
            if len(block) > 1:
                start = factor.w_pos[b]
                point[f"{factor.term}_zs{b}_zerosum__"] = theta[start : start + len(block) - 1]
    return point
