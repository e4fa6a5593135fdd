"""Bayesian crossed random-effects logistic GLMM of human trials (benchmarks.md section 1.8).

    correct ~ 0 + modality + (1|rater_id) + (1|dyad_id),  family bernoulli, logit link

Any bambi formula works (`fit_glmm(..., sampler="bambi")` or `"bambi-nutpie"`); results use
bambi's names: `modality[audio]`, `1|rater_id_sigma`, `1|dyad_id[d007]`, ...

Fast path (`sampler="fast"`; `"auto"` picks it for a formula of the standard form
`y ~ 0 + F + (1|G1) + ... + (1|Gk)` with a categorical F, family bernoulli, and Normal /
HalfNormal priors, which are bambi's defaults). It samples exactly bambi's model, with bambi's
priors read from the bambi model object, but

1. aggregates the Bernoulli trials to Binomial counts per (F, G1, ..., Gk) cell (the same
   likelihood; for TRIALS every cell holds one trial, so it changes nothing there);
2. reparameterizes so that the fixed-level means are identified. In bambi's parameterization
   each modality mean b_m trades off against the mean of the dyad effects and (raters being
   nested in modality) the mean of that modality's rater effects, so NUTS moves slowly along
   that ridge (ESS ~100 for b_m). Each factor's effects are split into block means and
   zero-sum parts: u_g = sigma_g * eta_block / sqrt(n_block) + zs_g, eta ~ N(0, 1), zs_g a
   ZeroSumNormal per block (blocks: the levels of F when G is nested in F, as raters are;
   otherwise one block). This is an orthonormal change of basis, so u_g is still exactly
   i.i.d. Normal(0, sigma_g). The sampler then moves a_m = b_m + sum_g (block means that shift
   level m), which the data pin down, instead of b_m; bambi's Normal prior on b_m is kept as
   a potential on b_m = a_m - sum_g ..., and b_m and the full u_g are reported. The change of
   variables is linear with unit Jacobian, so the posterior is bambi's posterior;
   `tests/test_glmm_rasch.py` checks the log density against PyMC and the posterior means
   against an out-of-the-box bambi fit;
3. samples a factor's zero-sum part centred (w ~ N(0, sigma_g)) when the data inform its
   levels more than the prior does (median trials per level x p(1-p) x a moment estimate of
   sigma_g^2 > 1, e.g. dyads rated ~90 times), else non-centred (w ~ N(0, 1), scaled by sigma_g);
4. evaluates the log density and its gradient with a hand-written numba kernel
   (`_glmm_kernel.py`, compiled once and cached on disk) and samples it with nutpie's NUTS.
   Compiling the same model from PyMC with nutpie (`sampler="pymc"`, kept as a reference
   implementation) takes longer than the whole fast fit.

Convergence: every reported row carries `r_hat`, `ess_bulk`, `converged` and `flag`; a row with
r_hat > 1.01 or ess_bulk < 400 (or undefined) is flagged and logged at WARNING level.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import os
import re
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import gammaln

log = logging.getLogger(__name__)

DEFAULT_FORMULA = "correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)"
SAMPLERS = ("auto", "fast", "pymc", "bambi", "bambi-nutpie")
RHAT_MAX = 1.01
ESS_MIN = 400
HDI_PROB = 0.95

_NAME = r"[A-Za-z_][A-Za-z0-9_.]*"
_GROUP_TERM = re.compile(rf"^\(\s*1\s*\|\s*({_NAME})\s*\)$")
_TRUE = {"true", "1", "yes", "1.0"}
_FALSE = {"false", "0", "no", "0.0"}


# --- formula ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StandardFormula:
    """`response ~ 0 + fixed + (1|group_1) + ... + (1|group_k)`."""

    response: str
    fixed: str
    groups: tuple[str, ...]

    @property
    def group_terms(self) -> tuple[str, ...]:
        return tuple(f"1|{group}" for group in self.groups)


def parse_standard_formula(formula: str) -> StandardFormula | None:
    """Return the parts of a standard crossed formula, or None when it has another shape."""
    if formula.count("~") != 1:
        return None
    lhs, rhs = (side.strip() for side in formula.split("~"))
    if not re.fullmatch(_NAME, lhs):
        return None
    terms = _split_terms(rhs)
    if terms is None:
        return None
    zero = [term for term in terms if term in ("0", "-1")]
    groups = [_GROUP_TERM.match(term) for term in terms]
    fixed = [term for term, group in zip(terms, groups, strict=True) if group is None and term not in zero]
    names = [group.group(1) for group in groups if group is not None]
    if len(zero) != 1 or len(fixed) != 1 or not re.fullmatch(_NAME, fixed[0]) or not names:
        return None
    if len(set(names)) != len(names) or fixed[0] in names or lhs in (fixed[0], *names):
        return None
    return StandardFormula(lhs, fixed[0], tuple(names))


def _split_terms(rhs: str) -> list[str] | None:
    """Split the right-hand side on top-level '+' (a leading '-1' counts as a term)."""
    terms, depth, current = [], 0, ""
    for char in rhs:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
        if char == "+" and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    if depth != 0 or any(not term for term in terms):
        return None
    return terms


# --- data -------------------------------------------------------------------------------


def coerce_binary(series: pd.Series, name: str = "response") -> pd.Series:
    """Map booleans, 0/1 numbers or true/false/yes/no strings to integers 0/1."""
    if series.dtype == bool or str(series.dtype) == "boolean":
        return series.astype(int)
    if pd.api.types.is_numeric_dtype(series):
        values = series.to_numpy()
        if not np.isin(values, (0, 1)).all():
            raise ValueError(f"column {name}: values other than 0/1")
        return series.astype(int)
    text = series.astype(str).str.strip().str.lower()
    bad = ~text.isin(_TRUE | _FALSE)
    if bad.any():
        raise ValueError(f"column {name}: {series[bad].iloc[0]!r} is not a 0/1 or true/false value")
    return text.isin(_TRUE).astype(int)


def _formula_columns(formula: str, data: pd.DataFrame) -> list[str]:
    tokens = set(re.findall(_NAME, formula))
    return [column for column in data.columns if column in tokens]


def _prepare(data: pd.DataFrame, formula: str, standard: StandardFormula | None, family: str) -> pd.DataFrame:
    """Keep the formula's columns, drop incomplete rows (with a warning), coerce a 0/1 response."""
    if standard is not None:
        missing = [c for c in (standard.response, standard.fixed, *standard.groups) if c not in data.columns]
        if missing:
            raise ValueError(f"data lacks column(s) {', '.join(missing)}")
    frame = data[_formula_columns(formula, data)].copy()
    incomplete = frame.isna().any(axis=1) | frame.astype(str).eq("").any(axis=1)
    if incomplete.any():
        log.warning("dropping %d of %d rows with a missing value", int(incomplete.sum()), len(frame))
        frame = frame.loc[~incomplete].reset_index(drop=True)
    if frame.empty:
        raise ValueError("no complete rows to fit")
    response = formula.split("~")[0].strip()
    if family == "bernoulli":
        if response not in frame.columns:
            raise ValueError(f"data lacks the response column {response!r}")
        frame[response] = coerce_binary(frame[response], response)
    if standard is not None:
        for column in (standard.fixed, *standard.groups):
            frame[column] = frame[column].astype(str)
    return frame


# --- simulation -------------------------------------------------------------------------


def simulate_trials(
    n_raters_per_modality: int = 92,
    n_dyads: int = 96,
    dyads_per_rater: int = 32,
    modality_effects: dict[str, float] | None = None,
    rater_sd: float = 0.5,
    dyad_sd: float = 1.0,
    seed: int = 0,
) -> pd.DataFrame:
    """Simulate a TRIALS-like table from the GLMM, one separate rater pool per modality.

    Each rater rates `dyads_per_rater` distinct dyads: a window of a per-modality random
    permutation of the dyads, so every dyad gets n_raters * dyads_per_rater / n_dyads ratings
    (+-1) per modality (the planned-missing design of benchmarks.md 1.6). logit P(correct) =
    modality effect + rater effect + dyad effect, the dyad effect shared across modalities.

    Columns: rater_id, dyad_id, modality, response, correct, and the truth: `truth` (the
    dyad's relationship), `rater_effect`, `dyad_effect`. `frame.attrs["truth"]` holds the
    generating values (modality_effects, rater_sd, dyad_sd).
    """
    if modality_effects is None:
        modality_effects = {"text": 0.3, "audio": 0.6, "video": 0.9}
    if not 0 < dyads_per_rater <= n_dyads:
        raise ValueError("dyads_per_rater must be in 1..n_dyads")
    rng = np.random.default_rng(seed)
    dyad_effect = rng.normal(0.0, dyad_sd, n_dyads)
    relationship = np.array(["familiar", "stranger"])[np.arange(n_dyads) % 2]
    relationship = relationship[rng.permutation(n_dyads)]
    width = len(str(max(n_dyads, n_raters_per_modality) - 1))
    parts = []
    for modality, effect in modality_effects.items():
        order = rng.permutation(n_dyads)
        starts = np.arange(n_raters_per_modality) * dyads_per_rater
        dyads = order[(starts[:, None] + np.arange(dyads_per_rater)[None, :]) % n_dyads]
        rater_effect = rng.normal(0.0, rater_sd, n_raters_per_modality)
        raters = np.repeat(np.arange(n_raters_per_modality), dyads_per_rater)
        dyads = dyads.ravel()
        logit = effect + rater_effect[raters] + dyad_effect[dyads]
        correct = rng.random(logit.size) < 1.0 / (1.0 + np.exp(-logit))
        truth = relationship[dyads]
        other = np.where(truth == "familiar", "stranger", "familiar")
        parts.append(
            pd.DataFrame(
                {
                    "rater_id": [f"{modality}-r{r:0{width}d}" for r in raters],
                    "dyad_id": [f"d{d:0{width}d}" for d in dyads],
                    "modality": modality,
                    "response": np.where(correct, truth, other),
                    "correct": correct,
                    "truth": truth,
                    "rater_effect": rater_effect[raters],
                    "dyad_effect": dyad_effect[dyads],
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    frame.attrs["truth"] = {
        "modality_effects": dict(modality_effects),
        "rater_sd": rater_sd,
        "dyad_sd": dyad_sd,
    }
    return frame


# --- fast path: layout ------------------------------------------------------------------


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
        from omnisocial.stats._glmm_kernel import logp_grad

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


def _information_ratio(cells: pd.DataFrame, column: str, codes: np.ndarray, trials: np.ndarray) -> float:
    """Median over levels of (Fisher information of a level's effect) * (a rough sigma^2).

    sigma^2 is a moment estimate: the variance of the levels' empirical logits minus their mean
    sampling variance (at least 0.05). Above 1 the data dominate the prior of a level's effect,
    and the centred parameterization mixes better than the non-centred one.
    """
    successes = np.bincount(codes, weights=cells["sum"].to_numpy(), minlength=len(trials))
    rate = successes.sum() / trials.sum()
    info = np.median(trials) * rate * (1.0 - rate)
    logits = np.log((successes + 0.5) / (trials - successes + 0.5))
    noise = np.mean((trials + 1.0) / ((successes + 0.5) * (trials - successes + 0.5)))
    sigma2 = max(float(np.var(logits)) - float(noise), 0.05)
    return float(info * sigma2)


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
        nested = bool(cells.groupby(spec.column, sort=False)[fixed].nunique().max() == 1)
        if nested:
            owner = cells.drop_duplicates(spec.column).set_index(spec.column)[fixed].map(fixed_index)
            owner = owner.reindex(spec.levels).to_numpy(dtype=np.int64)
            blocks = [np.flatnonzero(owner == m) for m in range(n_fixed)]
            block_of_fixed = np.arange(n_fixed)
        else:
            blocks = [np.arange(len(spec.levels))]
            block_of_fixed = np.zeros(n_fixed, dtype=np.int64)
        trials = np.bincount(codes, weights=cells["count"].to_numpy(), minlength=len(spec.levels))
        if centered == "auto":
            is_centered = bool(_information_ratio(cells, spec.column, codes, trials) > 1.0)
        elif isinstance(centered, dict):
            is_centered = bool(centered.get(spec.column, False))
        else:
            is_centered = bool(centered)
        factor = _Factor(
            term=spec.term,
            column=spec.column,
            dim=f"{spec.column}__factor_dim",
            levels=list(spec.levels),
            prior_sd=spec.prior_sd,
            centered=is_centered,
            nested=nested,
            blocks=blocks,
            block_of_fixed=block_of_fixed,
        )
        factor.pos_ls = position
        position += 1
        for _ in blocks:
            factor.eta_pos.append(position)
            position += 1
        for block in blocks:
            factor.w_pos.append(position)
            position += max(len(block) - 1, 0)
        factors.append(factor)
        level_codes.append(codes)

    # Internal level numbering: all factors' levels in one space, each block contiguous.
    blk_factor, blk_first, blk_size, blk_eta, blk_w = [], [], [], [], []
    mod_block = np.zeros((len(factors), n_fixed), dtype=np.int64)
    internal_of, lev = [], []
    offset = 0
    for g, (factor, codes) in enumerate(zip(factors, level_codes, strict=True)):
        internal = np.empty(len(factor.levels), dtype=np.int64)
        first_block = len(blk_size)
        for b, block in enumerate(factor.blocks):
            internal[block] = offset + np.arange(len(block))
            blk_factor.append(g)
            blk_first.append(offset)
            blk_size.append(len(block))
            blk_eta.append(factor.eta_pos[b])
            blk_w.append(factor.w_pos[b])
            offset += len(block)
        mod_block[g] = first_block + factor.block_of_fixed
        internal_of.append(internal)
        lev.append(internal[codes])

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
        lev=np.ascontiguousarray(np.vstack(lev)),
        k=k,
        n=n,
        const=const,
        ndim=position,
        n_trials=int(n.sum()),
        internal_of=internal_of,
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
        np.array(blk_factor, dtype=np.int64),
        np.array(blk_first, dtype=np.int64),
        np.array(blk_size, dtype=np.int64),
        np.array(blk_eta, dtype=np.int64),
        np.array(blk_w, dtype=np.int64),
        mod_block,
        offset,
    )
    return model


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


# --- fitting ----------------------------------------------------------------------------


@dataclass
class GLMMResult:
    """A fitted GLMM: the posterior with bambi's variable names, and how it was obtained."""

    formula: str
    family: str
    sampler: str
    idata: object  # arviz.InferenceData; posterior variables named as bambi names them
    fixed_term: str | None
    fixed_levels: list[str]
    group_terms: list[str]
    n_obs: int
    draws: int
    tune: int
    chains: int
    seed: int
    wall_s: float
    divergences: int = 0
    fast_model: FastModel | None = None


def fit_glmm(
    data: pd.DataFrame,
    formula: str = DEFAULT_FORMULA,
    family: str = "bernoulli",
    draws: int = 2000,
    tune: int = 500,
    chains: int = 2,
    seed: int = 0,
    sampler: str = "auto",
    cores: int | None = None,
    priors: dict | None = None,
    centered="auto",
    sampler_kwargs: dict | None = None,
) -> GLMMResult:
    """Fit a bambi-formula GLMM; see the module docstring for the samplers.

    `sampler`: "auto" (fast path when the formula is standard, else "bambi-nutpie"), "fast",
    "pymc" (the fast path's model compiled by nutpie from PyMC), "bambi" (out of the box:
    `bambi.Model.fit`, PyMC's NUTS) or "bambi-nutpie". `priors` go to `bambi.Model`;
    `centered` ("auto", bool, or {column: bool}) chooses the fast path's parameterization;
    `sampler_kwargs` go to `nutpie.sample` (fast, pymc) or `bambi.Model.fit` (bambi samplers).
    """
    import bambi as bmb

    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose from {', '.join(SAMPLERS)}")
    if draws < 1 or tune < 0 or chains < 1:
        raise ValueError("draws and chains must be positive, tune non-negative")
    started = time.perf_counter()
    standard = parse_standard_formula(formula)
    frame = _prepare(data, formula, standard, family)
    model = bmb.Model(formula, frame, family=family, priors=priors)
    cores = min(chains, cores or os.cpu_count() or 1)

    fast = None
    chosen = sampler
    if sampler in ("auto", "fast", "pymc"):
        try:
            if standard is None:
                raise _NotFast("the formula is not of the form y ~ 0 + F + (1|G1) + ...")
            fast = build_fast_model(model, frame, standard, centered=centered)
        except _NotFast as reason:
            if sampler != "auto":
                raise ValueError(f"sampler {sampler!r} cannot fit this model: {reason}") from None
            log.info("fast path not applicable (%s); sampling with bambi + nutpie", reason)
            chosen = "bambi-nutpie"
        else:
            chosen = "fast" if sampler == "auto" else sampler

    if chosen == "fast":
        idata = sample_fast_model(fast, draws, tune, chains, cores, seed, sampler_kwargs)
    elif chosen == "pymc":
        idata = _sample_pymc(fast, draws, tune, chains, cores, seed, sampler_kwargs)
    else:
        method = "pymc" if chosen == "bambi" else "nutpie"
        kwargs = {"progressbar": False, **(sampler_kwargs or {})}
        idata = model.fit(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=seed,
            inference_method=method,
            **kwargs,
        )

    component = model.components[model.family.likelihood.parent]
    fixed_term, fixed_levels = None, []
    if standard is not None and standard.fixed in component.common_terms:
        term = component.common_terms[standard.fixed]
        if term.categorical and component.intercept_term is None:
            fixed_term, fixed_levels = standard.fixed, [str(level) for level in term.levels]
    divergences = 0
    if hasattr(idata, "sample_stats") and "diverging" in idata.sample_stats:
        divergences = int(idata.sample_stats["diverging"].sum())
    if divergences:
        log.warning(
            "%d divergent transitions in %d draws: treat the fit with caution", divergences, draws * chains
        )
    result = GLMMResult(
        formula=formula,
        family=family,
        sampler=chosen,
        idata=idata,
        fixed_term=fixed_term,
        fixed_levels=fixed_levels,
        group_terms=list(component.group_specific_terms),
        n_obs=len(frame),
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
        wall_s=time.perf_counter() - started,
        divergences=divergences,
        fast_model=fast,
    )
    log.info("GLMM %s fitted with sampler %s in %.1f s", formula, chosen, result.wall_s)
    return result


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

    from omnisocial.stats._glmm_kernel import logp_grad

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

    compiled = nutpie.compile_pymc_model(build_pymc_model(fast))
    raw = nutpie.sample(compiled, **_nutpie_settings(draws, tune, chains, cores, seed, extra))
    keep = [fast.fixed_term, *[f"{f.term}_sigma" for f in fast.factors], *[f.term for f in fast.factors]]
    raw.posterior = raw.posterior[keep]
    return raw


# --- summaries --------------------------------------------------------------------------


def convergence_problems(r_hat: float, ess_bulk: float) -> list[str]:
    """Why a quantity does not count as converged (R-hat > 1.01, bulk ESS < 400, or undefined)."""
    why = []
    if not np.isfinite(r_hat):
        why.append("r_hat undefined (one chain or constant draws)")
    elif r_hat > RHAT_MAX:
        why.append(f"r_hat {r_hat:.3f} > {RHAT_MAX}")
    if not np.isfinite(ess_bulk):
        why.append("ess_bulk undefined")
    elif ess_bulk < ESS_MIN:
        why.append(f"ess_bulk {ess_bulk:.0f} < {ESS_MIN}")
    return why


def _flags(frame: pd.DataFrame, label: str) -> pd.DataFrame:
    """Add `converged` and `flag`; log a WARNING for every flagged row."""
    reasons = [
        "; ".join(convergence_problems(row.r_hat, row.ess_bulk)) for row in frame.itertuples(index=False)
    ]
    frame = frame.copy()
    frame["converged"] = [not reason for reason in reasons]
    frame["flag"] = [f"not converged: {reason}" if reason else "" for reason in reasons]
    for name, flag in zip(frame[label], frame["flag"], strict=True):
        if flag:
            log.warning("%s: %s", name, flag)
    return frame


def _reported_vars(result: GLMMResult, levels: bool) -> list[str]:
    # PyMC names transformed (sampler-space) copies `<name>_log__` etc.: not reported.
    names = [name for name in result.idata.posterior.data_vars if not str(name).endswith("__")]
    if not levels:
        names = [name for name in names if name not in result.group_terms]
    return names


def posterior_matrix(idata, var_names: list[str]) -> tuple[list[str], np.ndarray]:
    """Labels (arviz style: `var[level]`) and draws (chain, draw, quantity) of the variables."""
    labels, blocks = [], []
    posterior = idata.posterior
    for name in var_names:
        array = posterior[name]
        extra = [dim for dim in array.dims if dim not in ("chain", "draw")]
        values = array.transpose("chain", "draw", *extra).to_numpy()
        blocks.append(values.reshape(values.shape[0], values.shape[1], -1))
        if not extra:
            labels.append(name)
            continue
        coords = [
            array.coords[dim].to_numpy() if dim in array.coords else range(array.sizes[dim]) for dim in extra
        ]
        labels.extend(f"{name}[{', '.join(str(v) for v in combo)}]" for combo in itertools.product(*coords))
    return labels, np.concatenate(blocks, axis=2)


def summary_frame(labels: list[str], draws: np.ndarray, label: str) -> pd.DataFrame:
    from omnisocial.stats import _mcmc

    rhat, ess = _mcmc.diagnostics(draws)
    low, high = _mcmc.hdi(draws, HDI_PROB)
    return pd.DataFrame(
        {
            label: labels,
            "mean": draws.mean(axis=(0, 1)),
            "sd": draws.reshape(-1, draws.shape[-1]).std(axis=0, ddof=1),
            "hdi_low": low,
            "hdi_high": high,
            "r_hat": rhat,
            "ess_bulk": ess,
        }
    )


def summarize(result: GLMMResult, levels: bool = True) -> pd.DataFrame:
    """One row per parameter: term, mean, sd, hdi_low, hdi_high (95%), r_hat, ess_bulk, converged, flag.

    Terms are named as bambi names them (`modality[audio]`, `1|rater_id_sigma`,
    `1|dyad_id[d007]`); `levels=False` leaves out the group-level effects. r_hat is the
    rank-normalized split R-hat and ess_bulk the bulk ESS, as `arviz.summary` computes them.
    """
    labels, draws = posterior_matrix(result.idata, _reported_vars(result, levels))
    return _flags(summary_frame(labels, draws, "term"), "term")


def contrasts(result: GLMMResult) -> pd.DataFrame:
    """Every pairwise difference of the fixed levels on the logit scale.

    Rows `modality[audio] - modality[text]` (first level minus second, in bambi's level
    order) with contrast, mean, sd, hdi_low, hdi_high, p_gt_0 (posterior probability that
    the difference is positive), r_hat, ess_bulk, converged, flag.
    """
    if result.fixed_term is None:
        raise ValueError("contrasts need a formula of the form `y ~ 0 + factor + ...`")
    values = result.idata.posterior[result.fixed_term].transpose("chain", "draw", ...).to_numpy()
    pairs = list(itertools.combinations(range(len(result.fixed_levels)), 2))
    if not pairs:
        raise ValueError(f"{result.fixed_term} has a single level: nothing to contrast")
    term, levels = result.fixed_term, result.fixed_levels
    labels = [f"{term}[{levels[i]}] - {term}[{levels[j]}]" for i, j in pairs]
    diffs = np.stack([values[..., i] - values[..., j] for i, j in pairs], axis=-1)
    frame = summary_frame(labels, diffs, "contrast")
    frame.insert(5, "p_gt_0", (diffs > 0).mean(axis=(0, 1)))
    return _flags(frame, "contrast")


def variance_components(result: GLMMResult) -> pd.DataFrame:
    """Per grouping factor: the SD of its effects, the variance, and the latent-scale ICC.

    icc = sigma_g^2 / (sum of all sigma^2 + pi^2 / 3), the share of latent (logit-scale)
    variance due to the factor. Columns term, group, sd_mean, sd_hdi_low, sd_hdi_high,
    var_mean, icc_mean, icc_hdi_low, icc_hdi_high, r_hat, ess_bulk (of the SD), converged, flag.
    """
    from omnisocial.stats import _mcmc

    terms = [term for term in result.group_terms if f"{term}_sigma" in result.idata.posterior]
    if not terms:
        raise ValueError("the model has no random intercepts")
    labels, sigma = posterior_matrix(result.idata, [f"{term}_sigma" for term in terms])
    stats = summary_frame(labels, sigma, "term")
    icc = sigma**2 / ((sigma**2).sum(axis=-1, keepdims=True) + math.pi**2 / 3)
    icc_low, icc_high = _mcmc.hdi(icc, HDI_PROB)
    frame = pd.DataFrame(
        {
            "term": labels,
            "group": [term.split("|", 1)[1] for term in terms],
            "sd_mean": stats["mean"].to_numpy(),
            "sd_hdi_low": stats["hdi_low"].to_numpy(),
            "sd_hdi_high": stats["hdi_high"].to_numpy(),
            "var_mean": (sigma**2).mean(axis=(0, 1)),
            "icc_mean": icc.mean(axis=(0, 1)),
            "icc_hdi_low": icc_low,
            "icc_hdi_high": icc_high,
            "r_hat": stats["r_hat"].to_numpy(),
            "ess_bulk": stats["ess_bulk"].to_numpy(),
        }
    )
    return _flags(frame, "term")


# --- command line -----------------------------------------------------------------------


def add_cli(subparsers) -> None:
    """Register `omnisocial glmm DATA.csv --formula ... -o SUMMARY.csv`."""
    parser = subparsers.add_parser(
        "glmm",
        help="Bayesian logistic GLMM (bambi formula) of trial-level data",
        description=(
            "Fit a bambi-formula logistic GLMM and write one row per parameter "
            "(term, mean, sd, hdi_low, hdi_high, r_hat, ess_bulk, converged, flag). Pairwise "
            "contrasts of the `0 + factor` term go to SUMMARY_contrasts.csv and variance "
            "components to SUMMARY_variance.csv when the formula has that form."
        ),
    )
    parser.add_argument("data", help="trial-level CSV (e.g. a TRIALS table)")
    parser.add_argument(
        "--formula", default=DEFAULT_FORMULA, help=f"bambi formula (default: {DEFAULT_FORMULA!r})"
    )
    parser.add_argument("--family", default="bernoulli")
    parser.add_argument("-o", "--output", required=True, help="summary CSV to write")
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sampler", choices=SAMPLERS, default="auto")
    parser.set_defaults(func=run_cli)


def read_data(path: str, formula: str) -> pd.DataFrame:
    """Read a CSV as strings; formula columns that are all numbers (and not groups) become numeric."""
    from omnisocial.io import read_csv_strings

    frame = read_csv_strings(path)
    standard = parse_standard_formula(formula)
    groups = set(re.findall(rf"\|\s*({_NAME})", formula))
    keep_text = groups | ({standard.fixed} if standard else set())
    for column in _formula_columns(formula, frame):
        if column in keep_text:
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        if numbers.notna().all():
            frame[column] = numbers
    return frame


def run_cli(args: argparse.Namespace) -> int:
    from omnisocial.cli import InputError
    from omnisocial.io import write_csv

    try:
        data = read_data(args.data, args.formula)
    except FileNotFoundError:
        raise InputError(f"{args.data}: no such file") from None
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise InputError(f"{args.data}: not a readable CSV ({error})") from None
    try:
        result = fit_glmm(
            data,
            formula=args.formula,
            family=args.family,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            seed=args.seed,
            sampler=args.sampler,
        )
    except ValueError as error:
        raise InputError(f"{args.data}: {error}") from None
    summary = summarize(result)
    write_csv(args.output, summary)
    stem = args.output[:-4] if args.output.endswith(".csv") else args.output
    if result.fixed_term is not None and len(result.fixed_levels) > 1:
        write_csv(f"{stem}_contrasts.csv", contrasts(result))
    if result.group_terms:
        write_csv(f"{stem}_variance.csv", variance_components(result))
    bad = int((~summary["converged"]).sum())
    log.info("glmm: %s sampler %s, %d rows, %d flagged", args.data, result.sampler, len(summary), bad)
    print(
        json.dumps({"output": args.output, "sampler": result.sampler, "rows": len(summary), "flagged": bad})
    )
    return 0
