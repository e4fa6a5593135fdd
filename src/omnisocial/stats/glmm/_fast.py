"""The fast path's model: the reparameterized layout, its log density (numba kernel) and sampling.

See the package docstring (`omnisocial.stats.glmm`) for the reparameterization. `make_fast_model`
lays the model out from data, levels and priors; `standard_fast_model` takes those from
`_design.standard_design` (no bambi), `build_fast_model` from a `bambi.Model` (user priors).
`sample_fast_model` samples it with nutpie; `choose_draws` sizes the draws to the ESS target.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import gammaln

from omnisocial.stats.glmm._design import StandardFormula, standard_design

log = logging.getLogger("omnisocial.stats.glmm")


@dataclass
class _Factor:
    term: str  # "1|rater_id"
    column: str
    dim: str  # bambi's dim name
    levels: list[str]  # bambi's order
    prior_sd: float  # HalfNormal scale of the SD
    centered: bool
    nested: bool
    blocks: list[np.ndarray]  # level indices (bambi order) of each block
    block_of_fixed: np.ndarray  # block (within the factor) that shifts each fixed level
    pos_ls: int = 0
    eta_pos: list[int] = field(default_factory=list)
    w_pos: list[int] = field(default_factory=list)


@dataclass
class FastModel:
    """The reparameterized model of the fast path: data arrays, layout and priors."""

    response: str
    fixed_term: str
    fixed_dim: str
    fixed_levels: list[str]
    prior_mu: np.ndarray
    prior_sd: np.ndarray
    factors: list[_Factor]
    mod: np.ndarray
    lev: np.ndarray  # (n_factors, n_cells) global internal level index
    k: np.ndarray
    n: np.ndarray
    const: float
    ndim: int
    n_trials: int
    kernel_args: tuple = ()
    internal_of: list[np.ndarray] = field(default_factory=list)  # bambi level -> internal index

    def logp_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        from omnisocial.stats.glmm._kernel import logp_grad

        grad = np.empty(self.ndim)
        value = logp_grad(np.ascontiguousarray(theta, dtype=np.float64), grad, *self.kernel_args)
        return float(value), grad

    def initial_point(self, seed) -> np.ndarray:
        rng = np.random.default_rng(seed)
        theta = rng.uniform(-1.0, 1.0, self.ndim)
        rate = np.bincount(self.mod, weights=self.k, minlength=len(self.fixed_levels))
        rate = np.clip(
            rate / np.bincount(self.mod, weights=self.n, minlength=len(self.fixed_levels)), 0.05, 0.95
        )
        theta[: len(self.fixed_levels)] = np.log(rate / (1 - rate)) + rng.uniform(-0.3, 0.3, len(rate))
        for factor in self.factors:
            theta[factor.pos_ls] = math.log(0.5) + rng.uniform(-0.5, 0.5)
            if factor.centered:
                for start, block in zip(factor.w_pos, factor.blocks, strict=True):
                    theta[start : start + len(block) - 1] *= 0.5
        return theta

    def expand(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """Map unconstrained draws (..., ndim) to bambi's variables (..., levels), in bambi's order."""
        theta = np.asarray(theta, dtype=np.float64)
        lead = theta.shape[:-1]
        sigmas, out = {}, {}
        fixed = theta[..., : len(self.fixed_levels)].copy()
        for factor in self.factors:
            sigma = np.exp(theta[..., factor.pos_ls])
            sigmas[f"{factor.term}_sigma"] = sigma
            effects = np.empty((*lead, len(factor.levels)))
            for b, block in enumerate(factor.blocks):
                mean = sigma * theta[..., factor.eta_pos[b]] / math.sqrt(len(block))
                fixed -= mean[..., None] * (factor.block_of_fixed == b)
                if len(block) > 1:
                    w = theta[..., factor.w_pos[b] : factor.w_pos[b] + len(block) - 1]
                    zs = _zerosum_extend(w)
                    if not factor.centered:
                        zs = zs * sigma[..., None]
                else:
                    zs = np.zeros((*lead, 1))
                effects[..., block] = mean[..., None] + zs
            out[factor.term] = effects
        return {self.fixed_term: fixed, **sigmas, **out}  # bambi's order


def _zerosum_extend(w: np.ndarray) -> np.ndarray:
    """PyMC's ZeroSumTransform.backward on the last axis (an isometry onto sum-zero vectors)."""
    n = w.shape[-1] + 1
    total = w.sum(axis=-1, keepdims=True)
    shift = total / (math.sqrt(n) + n)
    return np.concatenate([w - shift, -total / math.sqrt(n)], axis=-1)


def _prior_args(prior, what: str) -> dict:
    if prior is None or prior.name != "Normal":
        raise _NotFast(f"{what} prior is not Normal")
    return prior.args


class _NotFast(Exception):
    """The bambi model has a feature the fast path does not implement."""


@dataclass(frozen=True)
class GroupSpec:
    """One random-intercept factor of the fast path: its column, bambi term, levels and SD prior."""

    column: str
    term: str
    levels: list[str]
    prior_sd: float


def build_fast_model(
    bambi_model, frame: pd.DataFrame, standard: StandardFormula, centered="auto"
) -> FastModel:
    """Read bambi's terms, level order and priors and lay out the reparameterized model."""
    parent = bambi_model.family.likelihood.parent
    component = bambi_model.components[parent]
    if bambi_model.family.name != "bernoulli" or bambi_model.family.link[parent].name != "logit":
        raise _NotFast("family is not bernoulli with a logit link")
    if set(component.common_terms) != {standard.fixed} or component.intercept_term is not None:
        raise _NotFast("common terms are not a single factor without intercept")
    fixed = component.common_terms[standard.fixed]
    if not fixed.categorical:
        raise _NotFast(f"{standard.fixed} is not categorical")
    fixed_levels = [str(level) for level in fixed.levels]
    args = _prior_args(fixed.prior, standard.fixed)
    if set(component.group_specific_terms) != set(standard.group_terms):
        raise _NotFast("group-specific terms differ from the formula's intercepts")
    groups = []
    for column, term in zip(standard.groups, standard.group_terms, strict=True):
        group = component.group_specific_terms[term]
        gargs = _prior_args(group.prior, term)
        if float(np.asarray(gargs["mu"])) != 0.0 or getattr(gargs["sigma"], "name", None) != "HalfNormal":
            raise _NotFast(f"{term} prior is not Normal(0, HalfNormal)")
        levels = [str(level) for level in group.groups]
        groups.append(GroupSpec(column, term, levels, float(np.asarray(gargs["sigma"].args["sigma"]))))
    return make_fast_model(
        frame,
        standard.response,
        standard.fixed,
        fixed_levels,
        np.asarray(args["mu"], dtype=float),
        np.asarray(args["sigma"], dtype=float),
        groups,
        centered=centered,
    )


# Above this information ratio a factor's zero-sum part is sampled centred. Measured (bulk ESS of
# the group SD, FriendBench-sized tables, rater and dyad SDs 0.2-1.5: benchmarks/bench_glmm.py):
# at a ratio of about 0.8 (dyad SD 0.2, ~92 trials per dyad) the non-centred form mixes 2-4x
# better, at about 1.8 (rater SD 0.5, 32 trials per rater) the two are alike, from about 5 on the
# centred form mixes 3-5x better; 1.5 leaves a margin for the estimate's noise on both sides.
CENTERED_MIN_RATIO = 1.5


def _information_ratio(cells: pd.DataFrame, codes: np.ndarray, mod: np.ndarray, n_levels: int) -> float:
    """Median over levels of (Fisher information of a level's effect) * (a rough sigma^2), both
    measured within the fixed effect's cells.

    The information of a level is sum over its trials of p_m (1 - p_m), p_m the share correct
    of the trial's fixed level (a level rated only in an all-correct modality has none).
    sigma^2 is a moment estimate from the empirical logits of the (level, fixed level) cells:
    their variance around the mean of their fixed level, pooled over the fixed levels, minus
    their mean sampling variance (0 when the noise explains it all: nothing to centre on). The
    fixed levels' differences are the fixed effects' to explain, not the factor's: measured
    across all of a factor's trials, raters nested in modalities whose accuracies differ look
    spread out where within each modality they are not (issue 52: a ratio of 12.0, centred,
    106 divergences, where within modality it is 0.0). Above CENTERED_MIN_RATIO the data
    dominate the prior of a level's effect, and the centred parameterization mixes better
    than the non-centred one.
    """
    k = cells["sum"].to_numpy(dtype=np.float64)
    n = cells["count"].to_numpy(dtype=np.float64)
    n_fixed = int(mod.max()) + 1
    rate = np.bincount(mod, weights=k, minlength=n_fixed) / np.bincount(mod, weights=n, minlength=n_fixed)
    info = np.bincount(codes, weights=n * rate[mod] * (1.0 - rate[mod]), minlength=n_levels)
    key = codes * n_fixed + mod  # one (level, fixed level) cell per key
    ck = np.bincount(key, weights=k, minlength=n_levels * n_fixed)
    cn = np.bincount(key, weights=n, minlength=n_levels * n_fixed)
    seen = np.flatnonzero(cn > 0)
    ck, cn, fixed = ck[seen], cn[seen], seen % n_fixed
    logits = np.log((ck + 0.5) / (cn - ck + 0.5))
    noise = (cn + 1.0) / ((ck + 0.5) * (cn - ck + 0.5))
    per_fixed = np.bincount(fixed, minlength=n_fixed)
    means = np.bincount(fixed, weights=logits, minlength=n_fixed) / np.maximum(per_fixed, 1)
    dof = len(logits) - int((per_fixed > 0).sum())
    if dof < 1:
        return 0.0
    spread = float(np.sum((logits - means[fixed]) ** 2)) / dof
    sigma2 = max(spread - float(noise.mean()), 0.0)
    return float(np.median(info) * sigma2)


def make_fast_model(
    frame: pd.DataFrame,
    response: str,
    fixed: str,
    fixed_levels: list[str],
    prior_mu,
    prior_sd,
    groups: list[GroupSpec],
    centered="auto",
) -> FastModel:
    """Lay out `logit p = b[fixed] + sum_g u_g[group g]` with b ~ Normal(prior_mu, prior_sd).

    `frame[response]` holds 0/1 integers; `fixed` and the group columns hold strings among the
    given levels. `centered`: "auto", a bool, or {column: bool} (see the module docstring).
    """
    n_fixed = len(fixed_levels)
    prior_mu = np.broadcast_to(np.asarray(prior_mu, dtype=float), (n_fixed,)).copy()
    prior_sd = np.broadcast_to(np.asarray(prior_sd, dtype=float), (n_fixed,)).copy()
    columns = [fixed, *[group.column for group in groups]]
    cells = frame.groupby(columns, sort=True, observed=True)[response].agg(["sum", "count"]).reset_index()
    fixed_index = {level: i for i, level in enumerate(fixed_levels)}
    mod = cells[fixed].map(fixed_index).to_numpy(dtype=np.int64)

    factors = []
    level_codes = []
    position = n_fixed
    for spec in groups:
        index = {level: i for i, level in enumerate(spec.levels)}
        codes = cells[spec.column].map(index).to_numpy(dtype=np.int64)
        nested, blocks, block_of_fixed = _group_blocks(cells, spec, fixed, fixed_index)
        factor = _Factor(
            term=spec.term,
            column=spec.column,
            dim=f"{spec.column}__factor_dim",
            levels=list(spec.levels),
            prior_sd=spec.prior_sd,
            centered=_is_centered(centered, spec, cells, codes, mod),
            nested=nested,
            blocks=blocks,
            block_of_fixed=block_of_fixed,
        )
        position = _place_parameters(factor, position)
        factors.append(factor)
        level_codes.append(codes)
    layout = _BlockLayout.of(factors, level_codes, n_fixed)

    k = cells["sum"].to_numpy(dtype=np.float64)
    n = cells["count"].to_numpy(dtype=np.float64)
    const = float(np.sum(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)))
    model = FastModel(
        response=response,
        fixed_term=fixed,
        fixed_dim=f"{fixed}_dim",
        fixed_levels=list(fixed_levels),
        prior_mu=prior_mu,
        prior_sd=prior_sd,
        factors=factors,
        mod=mod,
        lev=np.ascontiguousarray(np.vstack(layout.lev)),
        k=k,
        n=n,
        const=const,
        ndim=position,
        n_trials=int(n.sum()),
        internal_of=layout.internal_of,
    )
    model.kernel_args = (
        model.mod,
        model.lev,
        model.k,
        model.n,
        model.const,
        model.prior_mu,
        model.prior_sd,
        np.array([f.prior_sd for f in factors]),
        np.array([f.centered for f in factors]),
        np.array([f.pos_ls for f in factors], dtype=np.int64),
        np.array(layout.blk_factor, dtype=np.int64),
        np.array(layout.blk_first, dtype=np.int64),
        np.array(layout.blk_size, dtype=np.int64),
        np.array(layout.blk_eta, dtype=np.int64),
        np.array(layout.blk_w, dtype=np.int64),
        layout.mod_block,
        layout.n_levels,
    )
    return model


def _group_blocks(cells: pd.DataFrame, spec: GroupSpec, fixed: str, fixed_index: dict):
    """(nested, blocks, block_of_fixed) of a group factor: nested in the fixed effect (each
    level under one fixed level, as raters in modality), one block of its levels per fixed
    level; otherwise one block of all its levels."""
    n_fixed = len(fixed_index)
    nested = bool(cells.groupby(spec.column, sort=False)[fixed].nunique().max() == 1)
    if nested:
        owner = cells.drop_duplicates(spec.column).set_index(spec.column)[fixed].map(fixed_index)
        owner = owner.reindex(spec.levels).to_numpy(dtype=np.int64)
        return True, [np.flatnonzero(owner == m) for m in range(n_fixed)], np.arange(n_fixed)
    return False, [np.arange(len(spec.levels))], np.zeros(n_fixed, dtype=np.int64)


def _is_centered(centered, spec: GroupSpec, cells: pd.DataFrame, codes: np.ndarray, mod: np.ndarray) -> bool:
    """Whether the factor is sampled centred: `centered` "auto" (the information ratio above
    CENTERED_MIN_RATIO), a bool, or {column: bool}."""
    if centered == "auto":
        return bool(_information_ratio(cells, codes, mod, len(spec.levels)) > CENTERED_MIN_RATIO)
    if isinstance(centered, dict):
        return bool(centered.get(spec.column, False))
    return bool(centered)


def _place_parameters(factor: _Factor, position: int) -> int:
    """Give the factor its places in the parameter vector from `position` on (log SD, one eta
    per block, then each block's zero-sum part); returns the next free place."""
    factor.pos_ls = position
    position += 1
    for _ in factor.blocks:
        factor.eta_pos.append(position)
        position += 1
    for block in factor.blocks:
        factor.w_pos.append(position)
        position += max(len(block) - 1, 0)
    return position


@dataclass
class _BlockLayout:
    """Internal level numbering: all factors' levels in one space, each block contiguous, with
    the per-block arrays the kernel reads."""

    blk_factor: list
    blk_first: list
    blk_size: list
    blk_eta: list
    blk_w: list
    mod_block: np.ndarray
    internal_of: list
    lev: list
    n_levels: int

    @classmethod
    def of(cls, factors: list[_Factor], level_codes: list[np.ndarray], n_fixed: int) -> _BlockLayout:
        layout = cls([], [], [], [], [], np.zeros((len(factors), n_fixed), dtype=np.int64), [], [], 0)
        for g, (factor, codes) in enumerate(zip(factors, level_codes, strict=True)):
            internal = np.empty(len(factor.levels), dtype=np.int64)
            first_block = len(layout.blk_size)
            for b, block in enumerate(factor.blocks):
                internal[block] = layout.n_levels + np.arange(len(block))
                layout.blk_factor.append(g)
                layout.blk_first.append(layout.n_levels)
                layout.blk_size.append(len(block))
                layout.blk_eta.append(factor.eta_pos[b])
                layout.blk_w.append(factor.w_pos[b])
                layout.n_levels += len(block)
            layout.mod_block[g] = first_block + factor.block_of_fixed
            layout.internal_of.append(internal)
            layout.lev.append(internal[codes])
        return layout


def standard_fast_model(frame: pd.DataFrame, standard: StandardFormula, centered="auto") -> FastModel:
    """The fast model of a standard formula with bambi's default priors, built without bambi.

    Same layout, levels and priors as `build_fast_model(bambi.Model(...), ...)` (tested).
    """
    design = standard_design(frame, standard)
    groups = [
        GroupSpec(column, f"1|{column}", design.group_levels[column], design.group_prior_sd[column])
        for column in standard.groups
    ]
    return make_fast_model(
        frame,
        standard.response,
        standard.fixed,
        design.fixed_levels,
        design.prior_mu,
        design.prior_sd,
        groups,
        centered=centered,
    )
