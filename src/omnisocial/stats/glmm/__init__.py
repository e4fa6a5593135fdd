"""Bayesian crossed random-effects logistic GLMM of human trials (docs/statistics.md#glmm).

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
   that ridge (a low ESS for b_m: docs/performance.md#code). Each factor's effects are split
   into block means and zero-sum parts: u_g = sigma_g * eta_block / sqrt(n_block) + zs_g,
   eta ~ N(0, 1), zs_g a ZeroSumNormal per block (blocks: the levels of F when G is nested in
   F, as raters are; otherwise one block). This is an orthonormal change of basis, so u_g is still exactly
   i.i.d. Normal(0, sigma_g). The sampler then moves a_m = b_m + sum_g (block means that shift
   level m), which the data pin down, instead of b_m; bambi's Normal prior on b_m is kept as
   a potential on b_m = a_m - sum_g ..., and b_m and the full u_g are reported. The change of
   variables is linear with unit Jacobian, so the posterior is bambi's posterior;
   `tests/test_glmm_rasch.py` checks the log density against PyMC and the posterior means
   against an out-of-the-box bambi fit;
3. samples a factor's zero-sum part centred (w ~ N(0, sigma_g)) when the data inform its
   levels clearly more than the prior does (median over levels of the Fisher information
   sum p(1-p) x a moment estimate of sigma_g^2, both within the fixed effect's cells, so that
   modality differences do not count as rater spread, > `_fast.CENTERED_MIN_RATIO`, 1.5: e.g.
   dyads rated ~90 times with a dyad SD of 0.5 or more), else non-centred (w ~ N(0, 1),
   scaled by sigma_g): a small SD (rater or dyad SD 0.2) sampled centred is a funnel that
   mixes slower (docs/performance.md#code);
4. evaluates the log density and its gradient with a hand-written numba kernel
   (`glmm/_kernel.py`, compiled once and cached on disk, by `make setup` through
   `compile_kernel()`; where the cache lives: `_kernel.py`) and samples it with nutpie's NUTS.
   Compiling the same model from PyMC with nutpie (`sampler="pymc"`, kept as a reference
   implementation) takes longer than the whole fast fit.

Draws: by default (`draws=None`) the fast path samples 2 x 1,500 draws (more for more levels)
after 300 tuning steps and, when a reported quantity misses R-hat <= 1.01 or bulk ESS >= 400,
lets the same chains run on to more draws (`_sample.sample_fast_until`: no round repeats the
tuning and draws of the one before; the result equals one run of the reported draws).
Importing this package and fitting on the fast path loads neither bambi nor PyMC: the design and
bambi's default priors are built directly (`_design.standard_design`); user `priors`, other
formulas and the bambi samplers go through `bambi.Model`.

Modules: `_design` (formula, data, simulation, design and priors), `_fast` (layout and log
density), `_sample` (nutpie and draw sizing), `_pymc` (the PyMC reference model), `_summary`
(summaries, HDI_PROB, and the targets RHAT_MAX, ESS_MIN of `stats.convergence`), `cli` (the
`omnisocial glmm` command); this module fits.

Convergence (`stats.convergence`, the one rule of the command, the workflow and the Rasch fits):
every reported row carries `r_hat`, `ess_bulk`, `ess_tail`, `converged` and `flag`; a row with
r_hat > 1.01, ess_bulk or ess_tail < 400 (or undefined) is flagged and logged at WARNING level,
and a fit with more divergent transitions than `max_divergences` (0 by default) is first sampled
again at a higher target acceptance (halving its distance to 1: 0.8 -> 0.9 -> 0.95, or from the
fast path's 0.65 where every factor is centred, `default_target_accept`; `fit_glmm`) and, if it
still diverges, has every row of every table flagged.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

import pandas as pd

from omnisocial.stats.glmm._design import (  # noqa: F401
    StandardDesign,
    StandardFormula,
    _prepare,
    coerce_binary,
    parse_standard_formula,
    simulate_trials,
    standard_design,
)
from omnisocial.stats.glmm._fast import (  # noqa: F401
    FastModel,
    GroupSpec,
    _NotFast,
    build_fast_model,
    make_fast_model,
    standard_fast_model,
)
from omnisocial.stats.glmm._pymc import build_pymc_model, theta_to_pymc_point  # noqa: F401
from omnisocial.stats.glmm._sample import (  # noqa: F401
    AUTO_TUNE,
    MAX_ROUNDS,
    PARALLEL_CHAINS_MIN_ROWS,
    Trace,
    _sample_pymc,
    auto_draws,
    chain_threads,
    next_draws,
    sample_fast_model,
    sample_fast_until,
)
from omnisocial.stats.glmm._summary import (  # noqa: F401
    ESS_MIN,
    HDI_PROB,
    PP_DEFINITIONS,
    RHAT_MAX,
    accuracy_draws,
    contrasts,
    convergence_problems,
    fit_divergence,
    posterior_matrix,
    summarize,
    summary_frame,
    variance_components,
    worst_diagnostics,
)

log = logging.getLogger(__name__)

DEFAULT_FORMULA = "correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)"
SAMPLERS = ("auto", "fast", "pymc", "bambi", "bambi-nutpie")


# --- fitting ----------------------------------------------------------------------------

BAMBI_DRAWS = 2000  # draws per chain of the bambi samplers when `draws` is None
BAMBI_TUNE = 500  # and their tuning steps when `tune` is None


TARGET_ACCEPT = 0.8  # nutpie's and PyMC's default
# The fast path's first fit when every factor is sampled centred. On FriendBench-sized tables of
# other shapes (benchmarks/bench_glmm.py --shapes: all centred) NUTS's adapted step size at 0.8
# (0.36-0.44) sits just below what a tree one level shallower needs: 15 leapfrog steps per draw
# (10 crossed). At 0.65 (near the asymptotically optimal acceptance of HMC, 0.651: Beskos et al.
# 2013) the step is 0.47-0.59 and a draw takes 7-8 steps with the same worst ESS (unequal trials:
# 1,025 against 998 at 1,500 draws per chain) and 0 divergences: the sampling's CPU halves. Not
# where a factor is non-centred (a small, weakly identified SD): rater SD 0.2 with the larger
# step mixed its SD 4x worse (bulk ESS 143 against 619, tail 81 against 569), so those fits stay
# at 0.8. A fit that diverges is sampled again at a higher target (`fit_glmm`).
FAST_TARGET_ACCEPT = 0.65


def default_target_accept(sampler: str, fast: FastModel | None) -> float:
    """FAST_TARGET_ACCEPT on the fast path ("fast", "pymc") when every factor is centred, else
    TARGET_ACCEPT."""
    if sampler in ("fast", "pymc") and fast is not None and all(f.centered for f in fast.factors):
        return FAST_TARGET_ACCEPT
    return TARGET_ACCEPT


@dataclass
class GLMMResult:
    """A fitted GLMM: the posterior with bambi's variable names, and how it was obtained.

    `draws` is the number of draws per chain of the posterior (the last round when sized
    automatically: `rounds` > 1); `diagnostics` caches R-hat and bulk ESS by row label.
    `trace` holds the draws: an arviz.InferenceData from the bambi samplers and "pymc", a
    `_sample.Trace` (the same `posterior` and `sample_stats` Datasets, built without arviz) from
    the fast path; `idata` is always the arviz object (the fast path's made on first use).
    """

    formula: str
    family: str
    sampler: str
    trace: object  # posterior variables named as bambi names them
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
    rounds: int = 1
    max_divergences: int = 0  # more divergent transitions flag every reported row
    target_accept: float = TARGET_ACCEPT  # NUTS target acceptance of the reported fit
    attempts: int = 1  # fits made: more than one after divergences (higher target_accept)
    cells: pd.DataFrame | None = field(default=None, repr=False)  # trials per (fixed, groups...) cell
    diagnostics: dict = field(default_factory=dict, repr=False)

    @property
    def converged(self) -> bool:
        """Whether the fit-wide part of the rule holds (divergences); rows add R-hat and ESS."""
        return not fit_divergence(self)

    @property
    def idata(self):
        """The posterior as an arviz.InferenceData (imports arviz on the fast path's first use)."""
        if isinstance(self.trace, Trace):
            self.trace = self.trace.to_inference_data()
        return self.trace


def fit_glmm(
    data: pd.DataFrame,
    formula: str = DEFAULT_FORMULA,
    family: str = "bernoulli",
    draws: int | None = None,
    tune: int | None = None,
    chains: int = 2,
    seed: int = 0,
    sampler: str = "auto",
    cores: int | None = None,
    priors: dict | None = None,
    centered="auto",
    sampler_kwargs: dict | None = None,
    target_accept: float | None = None,
    max_divergences: int = 0,
) -> GLMMResult:
    """Fit a bambi-formula GLMM (`_fit_once`); after more than `max_divergences` divergent
    transitions sample again at a higher `target_accept` (`stats.convergence.raised_target_accept`:
    halves the distance to 1: 0.8 -> 0.9 -> 0.95), at most MAX_ROUNDS fits. `target_accept`
    None: `default_target_accept` (0.65 on the fast path when every factor is centred, else 0.8);
    the result records `target_accept`, `max_divergences` and `attempts`, and a last fit that
    still diverges has every row of its summaries flagged (`_summary.fit_divergence`). Other
    arguments: `_fit_once`.
    """
    from omnisocial.stats.convergence import divergence_problem, raised_target_accept

    request = _FitRequest(formula, family, draws, tune, chains, seed, sampler, cores, priors, centered)
    started = time.perf_counter()
    for attempt in range(1, MAX_ROUNDS + 1):
        kwargs = dict(sampler_kwargs or {})
        if target_accept is not None:
            kwargs["target_accept"] = target_accept
        result = _fit_once(data, request, kwargs)
        result.max_divergences, result.attempts = max_divergences, attempt
        target_accept = result.target_accept
        diverged = divergence_problem(result.divergences, max_divergences)
        if not diverged or attempt == MAX_ROUNDS or target_accept >= 0.99:
            break
        log.info("GLMM: %s at target_accept %.3f; sampling again", diverged, target_accept)
        target_accept = raised_target_accept(target_accept)
    result.wall_s = time.perf_counter() - started
    return result


@dataclass(frozen=True)
class _FitRequest:
    """What `fit_glmm` was asked for, passed whole to each of its fits (`_fit_once`)."""

    formula: str
    family: str
    draws: int | None
    tune: int | None
    chains: int
    seed: int
    sampler: str
    cores: int | None
    priors: dict | None
    centered: object


def _fit_once(data: pd.DataFrame, request: _FitRequest, sampler_kwargs: dict) -> GLMMResult:
    """Fit a bambi-formula GLMM once (`request`: `fit_glmm`'s arguments); see the module docstring
    for the samplers.

    `sampler`: "auto" (fast path when the formula is standard, else "bambi-nutpie"), "fast",
    "pymc" (the fast path's model compiled by nutpie from PyMC), "bambi" (out of the box:
    `bambi.Model.fit`, PyMC's NUTS) or "bambi-nutpie". `draws` per chain; None sizes them to
    the R-hat/ESS target on the fast paths (`_sample.py`) and means 2000 for the bambi samplers;
    `tune` None means 300 on the fast paths and 500 for the bambi samplers.
    `priors` go to `bambi.Model` (the fast path then reads them from it);
    `cores`: the most threads for the chains (one per chain; None: up to the CPUs), but one on the
    fast path below PARALLEL_CHAINS_MIN_ROWS rows, where one thread is faster (`_sample.chain_threads`);
    `centered` ("auto", bool, or {column: bool}) chooses the fast path's parameterization;
    `sampler_kwargs` go to `nutpie.sample` (fast, pymc) or `bambi.Model.fit` (bambi samplers).
    """
    _check_request(request)
    started = time.perf_counter()
    standard = parse_standard_formula(request.formula)
    frame = _prepare(data, request.formula, standard, request.family)
    chosen, fast, model = _choose_sampler(request, frame, standard)
    sampler_kwargs = dict(sampler_kwargs or {})
    sampler_kwargs.setdefault("target_accept", default_target_accept(chosen, fast))
    cores = min(request.chains, request.cores or os.cpu_count() or 1)
    cells = _trial_cells(frame, standard, request.family)
    if chosen in ("fast", "pymc"):
        if chosen == "fast":
            cores = chain_threads(request.chains, len(frame), cores)
        tune = AUTO_TUNE if request.tune is None else request.tune
        terms = (fast.fixed_term, list(fast.fixed_levels), [factor.term for factor in fast.factors])
        sampling = _Sampling(request, chosen, frame, fast, cells, tune, cores, terms, sampler_kwargs)
        result = _sample_fast_path(sampling)
    else:
        model = (
            model
            if model is not None
            else _bambi_model(request.formula, frame, request.family, request.priors)
        )
        tune = BAMBI_TUNE if request.tune is None else request.tune
        terms = _bambi_terms(model, standard)
        sampling = _Sampling(request, chosen, frame, fast, cells, tune, cores, terms, sampler_kwargs)
        result = _sample_bambi(sampling, model)
    if result.divergences:
        log.warning("%d divergent transitions in %d draws", result.divergences, result.draws * request.chains)
    result.wall_s = time.perf_counter() - started
    log.info("GLMM %s fitted with sampler %s in %.1f s", request.formula, chosen, result.wall_s)
    return result


def _check_request(request: _FitRequest) -> None:
    """Refuse an unknown sampler and non-positive draws or chains (negative tuning)."""
    if request.sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {request.sampler!r}; choose from {', '.join(SAMPLERS)}")
    draws, tune = request.draws, request.tune
    if (draws is not None and draws < 1) or (tune is not None and tune < 0) or request.chains < 1:
        raise ValueError("draws and chains must be positive, tune non-negative")


def _trial_cells(frame: pd.DataFrame, standard: StandardFormula | None, family: str) -> pd.DataFrame | None:
    """Trials per (fixed, groups...) cell of a standard bernoulli model: what the accuracies in
    percentage points average over (`_summary.accuracy_draws`); None for any other model."""
    if standard is None or family != "bernoulli":
        return None
    columns = [standard.fixed, *standard.groups]
    return frame.groupby(columns, sort=False, observed=True).size().rename("n").reset_index()


def _choose_sampler(request: _FitRequest, frame: pd.DataFrame, standard: StandardFormula | None):
    """(the sampler that fits, its fast model or None, the bambi model built on the way or None).

    "auto" takes the fast path where the model allows it and falls back to "bambi-nutpie";
    "fast" and "pymc" refuse a model the fast path cannot sample."""
    sampler, family, priors = request.sampler, request.family, request.priors
    if sampler not in ("auto", "fast", "pymc"):
        return sampler, None, None
    model = None
    try:
        if standard is None:
            raise _NotFast("the formula is not of the form y ~ 0 + F + (1|G1) + ...")
        if priors is None and family == "bernoulli":  # bambi's default priors, without bambi
            fast = standard_fast_model(frame, standard, centered=request.centered)
        else:
            model = _bambi_model(request.formula, frame, family, priors)
            fast = build_fast_model(model, frame, standard, centered=request.centered)
    except _NotFast as reason:
        if sampler != "auto":
            raise ValueError(f"sampler {sampler!r} cannot fit this model: {reason}") from None
        log.info("fast path not applicable (%s); sampling with bambi + nutpie", reason)
        return "bambi-nutpie", None, model
    return ("fast" if sampler == "auto" else sampler), fast, model


@dataclass(frozen=True)
class _Sampling:
    """One fit's chosen path and what every result drawn on it records (`_fit_once`)."""

    request: _FitRequest
    chosen: str  # the sampler that samples: "fast", "pymc", "bambi" or "bambi-nutpie"
    frame: pd.DataFrame
    fast: FastModel | None
    cells: pd.DataFrame | None
    tune: int
    cores: int
    terms: tuple  # (fixed term, its levels, group terms)
    sampler_kwargs: dict

    def result(self, trace, n_draws: int) -> GLMMResult:
        """The GLMMResult of `trace`, `n_draws` draws per chain (its divergences counted)."""
        divergences = 0
        if hasattr(trace, "sample_stats") and "diverging" in trace.sample_stats:
            divergences = int(trace.sample_stats["diverging"].sum())
        fixed_term, fixed_levels, group_terms = self.terms
        return GLMMResult(
            formula=self.request.formula,
            family=self.request.family,
            sampler=self.chosen,
            trace=trace,
            fixed_term=fixed_term,
            fixed_levels=fixed_levels,
            group_terms=group_terms,
            n_obs=len(self.frame),
            draws=n_draws,
            tune=self.tune,
            chains=self.request.chains,
            seed=self.request.seed,
            wall_s=0.0,
            divergences=divergences,
            target_accept=float(self.sampler_kwargs["target_accept"]),
            fast_model=self.fast,
            cells=self.cells,
        )


def _sample_bambi(sampling: _Sampling, model) -> GLMMResult:
    """`bambi.Model.fit` with PyMC's NUTS ("bambi") or nutpie ("bambi-nutpie"); BAMBI_DRAWS per
    chain when `draws` is None."""
    request = sampling.request
    draws = BAMBI_DRAWS if request.draws is None else request.draws
    idata = model.fit(
        draws=draws,
        tune=sampling.tune,
        chains=request.chains,
        cores=sampling.cores,
        random_seed=request.seed,
        inference_method="pymc" if sampling.chosen == "bambi" else "nutpie",
        **{"progressbar": False, **sampling.sampler_kwargs},
    )
    return sampling.result(idata, draws)


def _sample_fast_path(sampling: _Sampling) -> GLMMResult:
    """The fast model sampled by nutpie ("fast") or compiled from PyMC ("pymc"). `draws` None
    sizes them (`_sample.auto_draws`) and draws more while a reported quantity misses the
    convergence targets, at most MAX_ROUNDS rounds: "fast" lets the same chains run on, "pymc"
    samples again."""
    request, fast = sampling.request, sampling.fast
    chains, seed, kwargs = request.chains, request.seed, sampling.sampler_kwargs
    sized = request.draws is None
    n_reported = 2 * len(fast.fixed_levels) + sum(1 + len(f.levels) for f in fast.factors)
    draws = auto_draws(chains, n_reported) if sized else request.draws
    rounds = 1
    if sized and sampling.chosen == "fast":  # the same chains go on (`_sample.sample_fast_until`)
        checked = []  # the results looked at, whose diagnostics are cached

        def check(idata, n_draws):
            checked.append(sampling.result(idata, n_draws))
            return _more_draws(checked[-1], chains)

        idata, draws, rounds = sample_fast_until(
            fast, draws, sampling.tune, chains, sampling.cores, seed, kwargs, check
        )
        result = checked[-1] if checked and checked[-1].trace is idata else sampling.result(idata, draws)
    else:
        sample = sample_fast_model if sampling.chosen == "fast" else _sample_pymc
        while True:
            trace = sample(fast, draws, sampling.tune, chains, sampling.cores, seed, kwargs)
            result = sampling.result(trace, draws)
            if not sized or rounds >= MAX_ROUNDS:
                break
            more = _more_draws(result, chains)
            if more is None:
                break
            draws, rounds = more, rounds + 1
    result.rounds = rounds
    return result


def _more_draws(result: GLMMResult, chains: int) -> int | None:
    """Draws per chain to sample on to while `result` misses the R-hat/ESS targets; None when
    it meets them (`_sample.next_draws`)."""
    min_ess, max_rhat = worst_diagnostics(result)
    if chains == 1 and max_rhat != max_rhat:  # one chain: no R-hat to aim at
        max_rhat = 1.0
    more = next_draws(result.draws, min_ess, max_rhat, ESS_MIN, RHAT_MAX)
    if more is not None:
        log.info(
            "%d draws per chain: min ESS %.0f, max R-hat %.3f; sampling on to %d",
            result.draws,
            min_ess,
            max_rhat,
            more,
        )
    return more


def compile_kernel() -> bool:
    """Compile the fast path's numba kernel into its disk cache now; True if it was cached.

    `make setup` calls it, so the first fit in a new setup loads the kernel instead of compiling
    it (docs/performance.md#setup). A tiny model has the argument types of every fast-path model.
    """
    from omnisocial.stats.glmm import _kernel

    standard = parse_standard_formula(DEFAULT_FORMULA)
    frame = _prepare(simulate_trials(2, 4, 2, seed=0), DEFAULT_FORMULA, standard, "bernoulli")
    fast = standard_fast_model(frame, standard)
    fast.logp_grad(fast.initial_point(0))
    return not _kernel._UNCACHED


def preload_fast_path() -> None:
    """Import the fast path's sampler and diagnostics and load its kernel, once, in this process.

    A pool of workers forked afterwards (`familiarity.analysis.rasch_tables`) inherits them
    instead of each paying again for the imports and the kernel's load (docs/performance.md#code).
    """
    import arviz_stats.base  # noqa: F401
    import nutpie.compiled_pyfunc  # noqa: F401  (imports nutpie, and with it arviz)

    compile_kernel()


def _bambi_model(formula, frame, family, priors):
    import bambi as bmb

    return bmb.Model(formula, frame, family=family, priors=priors)


def _bambi_terms(model, standard) -> tuple[str | None, list[str], list[str]]:
    component = model.components[model.family.likelihood.parent]
    fixed_term, fixed_levels = None, []
    if standard is not None and standard.fixed in component.common_terms:
        term = component.common_terms[standard.fixed]
        if term.categorical and component.intercept_term is None:
            fixed_term, fixed_levels = standard.fixed, [str(level) for level in term.levels]
    return fixed_term, fixed_levels, list(component.group_specific_terms)


# --- command line -----------------------------------------------------------------------
