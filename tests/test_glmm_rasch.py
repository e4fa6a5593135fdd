"""Bayesian GLMM (fast path vs bambi) and Rasch item difficulty (docs/statistics.md#glmm, #rasch).

Slow tests run a sampler; sizes are kept small so the file runs in about a minute and a half
on two free cores. Tolerances are stated next to each check.
"""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from omnisocial import cli
from omnisocial.stats import glmm, rasch
from omnisocial.stats.glmm import _mcmc, _summary
from omnisocial.stats.glmm import cli as glmm_cli
from omnisocial.tables import TRIALS

FORMULA = glmm.DEFAULT_FORMULA


def _small_trials(seed: int = 3) -> pd.DataFrame:
    return glmm.simulate_trials(
        n_raters_per_modality=12,
        n_dyads=24,
        dyads_per_rater=8,
        modality_effects={"text": 0.2, "audio": 0.6, "video": 1.0},
        rater_sd=0.6,
        dyad_sd=0.9,
        seed=seed,
    )


def _fast_model(frame: pd.DataFrame, centered) -> glmm.FastModel:
    import bambi as bmb

    standard = glmm.parse_standard_formula(FORMULA)
    prepared = glmm._prepare(frame, FORMULA, standard, "bernoulli")
    model = bmb.Model(FORMULA, prepared, family="bernoulli")
    return glmm.build_fast_model(model, prepared, standard, centered=centered)


# --- fast checks --------------------------------------------------------------------------


def test_parse_standard_formula():
    parsed = glmm.parse_standard_formula("correct ~ 0 + modality + (1|rater_id) + (1 | dyad_id)")
    assert parsed == glmm.StandardFormula("correct", "modality", ("rater_id", "dyad_id"))
    assert parsed.group_terms == ("1|rater_id", "1|dyad_id")
    assert glmm.parse_standard_formula("y ~ (1|g) + -1 + f") == glmm.StandardFormula("y", "f", ("g",))
    for other in (
        "correct ~ modality + (1|rater_id)",  # intercept: not the standard form
        "correct ~ 0 + modality",  # no random intercept
        "correct ~ 0 + modality + x + (1|rater_id)",  # two common terms
        "correct ~ 0 + modality + (modality|rater_id)",  # random slopes
        "correct ~ 0 + modality + (1|rater_id) + (1|rater_id)",
    ):
        assert glmm.parse_standard_formula(other) is None, other


def test_simulate_trials_design():
    frame = glmm.simulate_trials(n_raters_per_modality=10, n_dyads=12, dyads_per_rater=4, seed=1)
    TRIALS.validate(frame[TRIALS.names])  # a TRIALS table, unique (rater, dyad, modality)
    assert len(frame) == 3 * 10 * 4
    assert frame.groupby("rater_id")["modality"].nunique().max() == 1  # raters nested in modality
    assert (frame.groupby("rater_id")["dyad_id"].nunique() == 4).all()
    per_dyad = frame.groupby(["modality", "dyad_id"]).size()
    assert per_dyad.max() - per_dyad.min() <= 1  # balanced planned-missing design
    flip = frame["response"] != frame["truth"]
    assert (flip == ~frame["correct"]).all()
    assert frame.groupby("dyad_id")["dyad_effect"].nunique().max() == 1  # shared across modalities
    assert frame.attrs["truth"]["dyad_sd"] == 1.0
    again = glmm.simulate_trials(n_raters_per_modality=10, n_dyads=12, dyads_per_rater=4, seed=1)
    pd.testing.assert_frame_equal(frame, again)


def test_coerce_binary():
    assert glmm.coerce_binary(pd.Series(["True", "false", "1", "no"])).tolist() == [1, 0, 1, 0]
    assert glmm.coerce_binary(pd.Series([True, False])).tolist() == [1, 0]
    with pytest.raises(ValueError, match="not a 0/1"):
        glmm.coerce_binary(pd.Series(["yes", "maybe"]), "correct")


def test_mcmc_diagnostics_match_arviz():
    import arviz as az

    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2, 400, 6))
    for t in range(1, 400):  # AR(1) chains with different autocorrelation per quantity
        draws[:, t] += np.linspace(0.0, 0.9, 6) * draws[:, t - 1]
    draws[1] += np.linspace(0.0, 0.5, 6)  # chains that disagree more and more
    idata = az.from_dict(posterior={"x": draws})
    rhat, ess, tail = _mcmc.diagnostics(draws)
    low, high = _mcmc.hdi(draws, 0.95)
    np.testing.assert_allclose(rhat, az.rhat(idata)["x"].to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(ess, az.ess(idata, method="bulk")["x"].to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(tail, az.ess(idata, method="tail")["x"].to_numpy(), rtol=1e-10)
    reference = az.hdi(idata, hdi_prob=0.95)["x"].to_numpy()
    np.testing.assert_allclose(np.c_[low, high], reference, rtol=1e-12)
    one_chain_rhat, *_ = _mcmc.diagnostics(draws[:1])
    assert np.isnan(one_chain_rhat).all()  # never reported as clean


def test_average_ranks_equal_scipy_rankdata_with_ties():
    """`_mcmc._average_ranks` (numpy, no scipy.stats import) equals rankdata's "average" ranks,
    ties included (a chain that stays put repeats a draw)."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(1)
    values = np.round(rng.normal(size=(301, 7)), 1)  # many ties
    values[:, 0] = 2.0  # a constant column: one tie group
    values[:, 1] = rng.normal(size=301)  # no ties
    np.testing.assert_array_equal(_mcmc._average_ranks(values), rankdata(values, method="average", axis=0))


@pytest.mark.slow
def test_nutpie_core_sampler_equals_nutpie_sample():
    """The fast path calls nutpie's core without importing `nutpie.sample` (and with it arviz):
    its draws and divergences equal `nutpie.sample`'s of the same model and seed."""
    import nutpie

    from omnisocial.stats.glmm import _sample

    fast = glmm.standard_fast_model(
        glmm._prepare(_small_trials(), FORMULA, glmm.parse_standard_formula(FORMULA), "bernoulli"),
        glmm.parse_standard_formula(FORMULA),
    )
    ours = _sample.sample_fast_model(fast, 150, 100, 2, 1, 7)
    settings = _sample._nutpie_settings(150, 100, 2, 1, 7, None)
    theirs = nutpie.sample(_sample._compiled(fast), **settings)
    reference = _sample._idata(fast, theirs.posterior["theta"].to_numpy(), {})
    for name in ("modality", "1|rater_id_sigma", "1|dyad_id"):
        np.testing.assert_array_equal(ours.posterior[name], reference.posterior[name])
    np.testing.assert_array_equal(ours.sample_stats["diverging"], theirs.sample_stats["diverging"])


def test_command_does_not_import_arviz(tmp_path):
    """`omnisocial glmm` on the fast path imports neither arviz, nor arviz-stats, nor
    scipy.stats (about 2 s of CPU per call together, against lme4's ~3 s run)."""
    import subprocess
    import sys

    csv = tmp_path / "trials.csv"
    glmm.simulate_trials(4, 6, 3, seed=0).to_csv(csv, index=False)
    argv = ["glmm", str(csv), "-o", str(tmp_path / "s.csv"), "--draws", "50", "--tune", "50"]
    heavy = ("arviz", "arviz_stats", "scipy.stats", "nutpie.sample")
    code = (
        f"import sys; from omnisocial import cli; cli.main({argv!r}); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_batched_ess_equals_arviz_stats_per_quantity():
    """`_mcmc._ess` (all quantities at once) gives arviz-stats' `_ess` of each: odd and even
    lengths (where Geyer's loop stops), 1-4 chains, autocorrelation from -0.9 to 0.99."""
    from arviz_stats.base import array_stats

    rng = np.random.default_rng(1)
    for n in (4, 5, 10, 11, 100, 401):
        for chains in (1, 2, 4):
            draws = rng.normal(size=(chains, n, 12))
            for t in range(1, n):
                draws[:, t] += np.linspace(-0.9, 0.99, 12) * draws[:, t - 1]
            reference = [array_stats._ess(draws[..., j]) for j in range(12)]
            np.testing.assert_allclose(_mcmc._ess(draws), reference, rtol=1e-12)


def test_mcmc_summaries_keep_the_hand_written_numbers():
    """arviz-stats gives the numbers of the former hand-written port (pinned here) and of short
    independent formulas: split R-hat on rank-normalized draws, and the brute-force narrowest interval."""
    from scipy import special, stats

    rng = np.random.default_rng(42)
    draws = rng.normal(size=(3, 60, 4))
    draws[:, 1:] += np.array([0.0, 0.3, 0.6, 0.9]) * draws[:, :-1]
    draws[2] += 0.4
    rhat, ess, _ = _mcmc.diagnostics(draws)
    low, high = _mcmc.hdi(draws, 0.9)
    # values of the hand-written implementation (git show 57c5a6c:src/omnisocial/stats/_mcmc.py)
    np.testing.assert_allclose(
        rhat, [1.0043203977228254, 1.0599419851240075, 1.0104497166790263, 1.0096007551704296], rtol=1e-12
    )
    np.testing.assert_allclose(
        ess, [195.82966516526042, 77.63473026424546, 96.3379833701784, 117.54995188238142], rtol=1e-12
    )
    np.testing.assert_allclose(
        low, [-1.5815943994539423, -1.7889516905526377, -1.7760158284518455, -1.8250533901148351], rtol=1e-12
    )
    np.testing.assert_allclose(
        high, [1.8206461576468016, 1.6835128459265052, 1.941836726318106, 1.7057630521535925], rtol=1e-12
    )

    split = np.concatenate([draws[:, :30], draws[:, 30:]], axis=0)  # 6 chains of 30

    def gelman(x):
        n = x.shape[1]
        within = x.var(axis=1, ddof=1).mean(axis=0)
        return np.sqrt(((n - 1) / n * within + x.mean(axis=1).var(axis=0, ddof=1)) / within)

    def z(x):
        ranks = stats.rankdata(x.reshape(-1, x.shape[-1]), axis=0)
        return special.ndtri((ranks - 0.375) / (ranks.shape[0] + 0.25)).reshape(x.shape)

    folded = np.abs(split - np.median(split.reshape(-1, 4), axis=0))
    np.testing.assert_allclose(rhat, np.maximum(gelman(z(split)), gelman(z(folded))), rtol=1e-12)
    flat = draws.reshape(-1, 4)
    for j in range(4):
        values = np.sort(flat[:, j])
        inc = int(0.9 * len(values))
        start = min(range(len(values) - inc), key=lambda i: values[i + inc] - values[i])
        assert (low[j], high[j]) == (values[start], values[start + inc])

    draws[..., 1] = 3.0  # constant: no R-hat, ESS = all draws
    draws[0, 0, 2] = np.inf  # non-finite: neither
    rhat, ess, _ = _mcmc.diagnostics(draws)
    assert np.isnan(rhat[1]) and ess[1] == 180 and np.isnan(rhat[2]) and np.isnan(ess[2])
    assert np.isnan(_mcmc.diagnostics(draws[:, :3])[1]).all()  # fewer than 4 draws


def test_kernel_gradient_matches_finite_differences():
    fast = _fast_model(_small_trials(), centered={"rater_id": False, "dyad_id": True})
    rng = np.random.default_rng(1)
    theta = fast.initial_point(5) + rng.normal(0, 0.3, fast.ndim)
    _, grad = fast.logp_grad(theta)
    step = 1e-5
    numeric = np.empty(fast.ndim)
    for j in range(fast.ndim):
        shift = np.zeros(fast.ndim)
        shift[j] = step
        numeric[j] = (fast.logp_grad(theta + shift)[0] - fast.logp_grad(theta - shift)[0]) / (2 * step)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-5)


def test_fast_model_layout_reads_bambi_priors():
    import bambi as bmb

    frame = _small_trials()
    fast = _fast_model(frame, centered="auto")
    model = bmb.Model(FORMULA, glmm._prepare(frame, FORMULA, None, "bernoulli"), family="bernoulli")
    component = model.components["p"]
    np.testing.assert_allclose(fast.prior_sd, component.common_terms["modality"].prior.args["sigma"])
    raters, dyads = fast.factors
    assert raters.nested and not dyads.nested  # raters nested in modality, dyads crossed
    assert [len(block) for block in raters.blocks] == [12, 12, 12]
    assert raters.levels == [str(level) for level in component.group_specific_terms["1|rater_id"].groups]
    sigma_prior = component.group_specific_terms["1|dyad_id"].prior.args["sigma"].args["sigma"]
    assert dyads.prior_sd == pytest.approx(float(sigma_prior))
    assert fast.n_trials == len(frame)


def _unbalanced_trials() -> pd.DataFrame:
    """Unequal modality shares (the group SD prior depends on them), level names that sort
    differently as numbers and as strings, and a fourth fixed level."""
    frame = _small_trials(seed=4)
    rng = np.random.default_rng(0)
    frame = frame[~((frame["modality"] == "video") & (rng.random(len(frame)) < 0.6))].copy()
    frame.loc[frame.index[:30], "modality"] = "9"
    frame.loc[frame.index[30:60], "modality"] = "10"
    frame["dyad_id"] = frame["dyad_id"].str.replace("d0", "d", regex=False)  # d1 .. d23: 'd10' < 'd2'
    return frame


@pytest.mark.parametrize(
    "formula",
    [FORMULA, "correct ~ 0 + modality + (1|dyad_id)", "correct ~ (1|dyad_id) + -1 + modality + (1|rater_id)"],
)
@pytest.mark.parametrize("which", ["small", "unbalanced"])
def test_standard_design_and_priors_equal_bambi(formula, which):
    """The fast path's own design and priors (no bambi) are bambi 0.17's defaults, bit for bit."""
    import bambi as bmb

    frame = _small_trials() if which == "small" else _unbalanced_trials()
    standard = glmm.parse_standard_formula(formula)
    prepared = glmm._prepare(frame, formula, standard, "bernoulli")
    model = bmb.Model(formula, prepared, family="bernoulli")
    component = model.components["p"]
    design = glmm.standard_design(prepared, standard)
    fixed = component.common_terms["modality"]
    assert design.fixed_levels == [str(level) for level in fixed.levels]
    np.testing.assert_array_equal(design.fixed_design, np.asarray(fixed.data, dtype=float))
    np.testing.assert_array_equal(
        design.prior_mu, np.broadcast_to(fixed.prior.args["mu"], design.prior_mu.shape)
    )
    np.testing.assert_array_equal(
        design.prior_sd, np.broadcast_to(fixed.prior.args["sigma"], design.prior_sd.shape)
    )
    assert fixed.prior.name == "Normal"
    for column, term in zip(standard.groups, standard.group_terms, strict=True):
        group = component.group_specific_terms[term]
        assert design.group_levels[column] == [str(level) for level in group.groups]
        np.testing.assert_array_equal(design.group_codes[column], group.group_index)
        assert group.prior.name == "Normal" and float(np.asarray(group.prior.args["mu"])) == 0.0
        assert group.prior.args["sigma"].name == "HalfNormal"
        assert design.group_prior_sd[column] == float(np.asarray(group.prior.args["sigma"].args["sigma"]))
    # The whole fast model (layout, data arrays, priors) is the one read from the bambi model.
    mine = glmm.standard_fast_model(prepared, standard)
    theirs = glmm.build_fast_model(model, prepared, standard)
    assert len(mine.kernel_args) == len(theirs.kernel_args)
    for a, b in zip(mine.kernel_args, theirs.kernel_args, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [f.levels for f in mine.factors] == [f.levels for f in theirs.factors]
    assert mine.fixed_levels == theirs.fixed_levels


def test_fast_path_does_not_import_bambi_or_pymc(tmp_path):
    """`omnisocial glmm` (a subprocess, as a user runs it) takes the fast path, loads neither bambi
    nor PyMC, and writes exactly the library call's summary (same seed, same draws)."""
    import subprocess
    import sys

    from omnisocial.io import write_csv

    trials = tmp_path / "trials.csv"
    TRIALS.write(trials, _small_trials()[TRIALS.names])
    args = ["glmm", str(trials), "-o", str(tmp_path / "g.csv"), "--draws", "30", "--tune", "30"]
    code = (
        "import sys; from omnisocial import cli; "
        f"assert cli.main({args!r}) == 0; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('bambi', 'pymc', 'pytensor')]; "
        "assert not bad, bad"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["sampler"] == "fast"

    result = glmm.fit_glmm(glmm_cli.read_data(str(trials), FORMULA), draws=30, tune=30)
    assert result.sampler == "fast"
    write_csv(tmp_path / "library.csv", glmm.summarize(result))
    assert (tmp_path / "g.csv").read_bytes() == (tmp_path / "library.csv").read_bytes()


@pytest.mark.slow
@pytest.mark.heavy  # 5 CPU-s
def test_compile_kernel_caches_it_for_the_next_process(tmp_path):
    """`glmm.compile_kernel()` (run by `make setup`) fills numba's cache; a later process's fit
    loads the kernel from it and compiles nothing."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}  # empty: a new setup
    first = "from omnisocial.stats import glmm; assert glmm.compile_kernel()"
    done = subprocess.run([sys.executable, "-c", first], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list((tmp_path / "numba").rglob("_kernel.*.nbi"))) == 3
    later = (
        "from omnisocial.stats import glmm; from omnisocial.stats.glmm import _kernel as k; "
        "glmm.fit_glmm(glmm.simulate_trials(6, 12, 6, seed=2), draws=20, tune=20, chains=1); "
        "funcs = (k._prior_and_eta, k._binomial_terms, k._likelihood_and_backprop); "
        "hits = [sum(f.stats.cache_hits.values()) for f in funcs]; "
        "misses = [sum(f.stats.cache_misses.values()) for f in funcs]; "
        # _binomial_terms is called inside _likelihood_and_backprop: loaded with it, no lookup
        "assert hits == [1, 0, 1] and misses == [0, 0, 0], (hits, misses)"
    )
    done = subprocess.run([sys.executable, "-c", later], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.heavy  # 3 CPU-s
def test_kernel_without_a_writable_cache_compiles_in_process():
    """No writable numba cache folder (every locator refused): the kernel still imports and gives
    the same log density and gradient, compiled in the process, with one warning."""
    import os
    import subprocess
    import sys

    frame = _small_trials()
    standard = glmm.parse_standard_formula(FORMULA)
    fast = glmm.standard_fast_model(glmm._prepare(frame, FORMULA, standard, "bernoulli"), standard)
    theta = np.random.default_rng(1).normal(0, 0.5, fast.ndim)
    value, grad = fast.logp_grad(theta)
    code = (
        "import json, sys, numpy as np; from omnisocial.stats import glmm; "
        "from omnisocial.stats.glmm import _kernel; "
        "assert _kernel._UNCACHED == ['_prior_and_eta', '_binomial_terms', '_likelihood_and_backprop']; "
        "frame = glmm.simulate_trials(12, 24, 8, modality_effects={'text': 0.2, 'audio': 0.6, "
        "'video': 1.0}, rater_sd=0.6, dyad_sd=0.9, seed=3); "
        "s = glmm.parse_standard_formula(glmm.DEFAULT_FORMULA); "
        "fast = glmm.standard_fast_model(glmm._prepare(frame, glmm.DEFAULT_FORMULA, s, 'bernoulli'), s); "
        "v, g = fast.logp_grad(np.array(json.loads(sys.stdin.read()))); "
        "print(json.dumps([v, g.tolist()]))"
    )
    # Only the IPython locator: it refuses a plain file, as every locator refuses a read-only one.
    env = {**os.environ, "NUMBA_CACHE_LOCATOR_CLASSES": "numba.core.caching.IPythonCacheLocator"}
    stdin = json.dumps(theta.tolist())
    done = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("compiled in this process") == 1
    their_value, their_grad = json.loads(done.stdout.strip().splitlines()[-1])
    assert their_value == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(their_grad, grad, rtol=1e-12, atol=1e-12)


def test_next_draws_sizes_to_the_ess_target():
    assert glmm.auto_draws(2) == 1500 and glmm.auto_draws(4) == 800
    assert glmm.auto_draws(2, 1600) == 2300  # two doublings of the rows: +50%
    assert glmm.next_draws(600, 650.0, 1.005, 400, 1.01) is None  # target met
    # ESS short: scale by 400 * 1.25 / 250 = 2x, rounded up to 100
    assert glmm.next_draws(600, 250.0, 1.005, 400, 1.01) == 1200
    assert glmm.next_draws(600, 390.0, 1.005, 400, 1.01) == 900  # at least 1.5x
    assert glmm.next_draws(600, 800.0, 1.02, 400, 1.01) == 1500  # R-hat only: 1.2 * 2 = 2.4x
    assert glmm.next_draws(600, 800.0, 1.011, 400, 1.01) == 800  # at least 1.3x
    assert glmm.next_draws(600, float("nan"), float("nan"), 400, 1.01) == 1200
    assert glmm.next_draws(15000, 100.0, 1.005, 400, 1.01) == 20000  # capped
    assert glmm.next_draws(20000, 100.0, 1.005, 400, 1.01) is None


@pytest.mark.slow
@pytest.mark.heavy  # a sampler run twice to its sized draws (about 3.5 CPU-s)
def test_sized_draws_meet_the_target_and_are_deterministic(monkeypatch):
    """draws=None: a too-short first round is followed by a longer one that meets the target;
    the same seed gives the same rounds and numbers."""
    from omnisocial.stats.glmm import _sample

    monkeypatch.setattr(_sample, "AUTO_TOTAL_DRAWS", 200)  # first round short on purpose
    frame = _small_trials()
    first = glmm.fit_glmm(frame, seed=3)
    assert first.rounds >= 2 and first.draws > 100
    summary, contrast = glmm.summarize(first), glmm.contrasts(first)
    worst_ess, worst_rhat = glmm.worst_diagnostics(first)
    assert summary["ess_bulk"].min() >= worst_ess and contrast["ess_bulk"].min() >= worst_ess
    if first.rounds < glmm.MAX_ROUNDS:
        assert summary["converged"].all() and contrast["converged"].all()
    again = glmm.fit_glmm(frame, seed=3)
    assert (again.rounds, again.draws) == (first.rounds, first.draws)
    pd.testing.assert_frame_equal(glmm.summarize(again), summary)


class _PacedSampler:
    """nutpie's running sampler as `_sample._wait_for` sees it, on a simulated clock: nothing
    for `start_s` (threads start, the kernel loads), then `tune` tuning steps at `tune_pace`
    and draws at `draw_pace` steps a second; each chain's trace is an arrow batch with nutpie's
    `tuning` column, and `is_finished` raises TimeoutError while it runs, as nutpie's does."""

    def __init__(self, clock, tune, start_s=0.3, tune_pace=500.0, draw_pace=1500.0, chains=2):
        self.clock, self.tune, self.start_s, self.chains = clock, tune, start_s, chains
        self.tune_pace, self.draw_pace = tune_pace, draw_pace

    def steps_at(self, t: float) -> int:
        running = max(0.0, t - self.start_s)
        tuning_s = self.tune / self.tune_pace
        if running <= tuning_s:
            return int(running * self.tune_pace)
        return self.tune + int((running - tuning_s) * self.draw_pace)

    def time_of_draw(self, draws: int) -> float:
        return self.start_s + self.tune / self.tune_pace + draws / self.draw_pace

    def inspect(self):
        return self

    def get_arrow_trace(self):
        import pyarrow as pa

        steps = self.steps_at(self.clock.now)
        tuning = [i < self.tune for i in range(steps)]
        stats = [pa.record_batch({"tuning": pa.array(tuning, pa.bool_())}) for _ in range(self.chains)]
        return [None] * self.chains, stats

    def is_finished(self):
        raise TimeoutError


def test_sized_draws_look_again_at_the_pace_of_the_chains(monkeypatch):
    """The look that finds every chain at its draws comes within 0.1 s of the last one. Paced on
    the draws since the start (before), the tuning and the start counted in: the wait after the
    first draws was 2 s (its cap) and the look came a second late, the chains drawing on."""
    from types import SimpleNamespace

    from omnisocial.stats.glmm import _sample

    clock = SimpleNamespace(now=0.0, looks=0)

    def sleep(seconds):
        assert seconds > 0
        clock.now += seconds
        clock.looks += 1

    monkeypatch.setattr(_sample, "time", SimpleNamespace(perf_counter=lambda: clock.now, sleep=sleep))
    for tune, draws, tune_pace, draw_pace in [
        (300, 1500, 500.0, 1500.0),
        (300, 800, 200.0, 900.0),
        (1000, 2000, 3000.0, 3000.0),
    ]:
        clock.now, clock.looks = 0.0, 0
        sampler = _PacedSampler(clock, tune, tune_pace=tune_pace, draw_pace=draw_pace)
        batches = _sample._wait_for(sampler, draws, tune)
        assert _sample._drawn(batches[1]) >= draws
        late = clock.now - sampler.time_of_draw(draws)
        assert -1e-9 <= late <= 0.1, (tune, draws, late)
        assert clock.looks < 60


@pytest.mark.slow
def test_sized_draws_continue_the_chains_as_one_run(monkeypatch):
    """The rounds of draws=None continue the same chains: the result equals one run of the
    reported draws (same seed), draw for draw."""
    from omnisocial.stats.glmm import _sample

    monkeypatch.setattr(_sample, "AUTO_TOTAL_DRAWS", 200)  # first check too early on purpose
    frame = _small_trials()
    sized = glmm.fit_glmm(frame, seed=5)
    assert sized.rounds >= 2
    fixed = glmm.fit_glmm(frame, seed=5, draws=sized.draws)
    for name in ("modality", "1|rater_id_sigma", "1|dyad_id"):
        np.testing.assert_array_equal(sized.idata.posterior[name], fixed.idata.posterior[name])
    assert sized.divergences == fixed.divergences
    np.testing.assert_array_equal(
        sized.idata.sample_stats["diverging"], fixed.idata.sample_stats["diverging"]
    )


def test_small_group_sd_is_sampled_non_centred():
    """FriendBench-sized tables: a dyad SD of 0.2 (about 90 trials per dyad, information ratio
    below 1) is non-centred, a rater SD of 1.5 (32 trials per rater) and a dyad SD of 1 centred."""
    standard = glmm.parse_standard_formula(glmm.DEFAULT_FORMULA)

    def centred(rater_sd, dyad_sd):
        frame = glmm.simulate_trials(92, 96, 32, rater_sd=rater_sd, dyad_sd=dyad_sd, seed=2)
        prepared = glmm._prepare(frame, glmm.DEFAULT_FORMULA, standard, "bernoulli")
        fast = glmm.standard_fast_model(prepared, standard)
        return {factor.column: factor.centered for factor in fast.factors}

    assert centred(1.5, 0.2) == {"rater_id": True, "dyad_id": False}
    assert centred(0.2, 1.0) == {"rater_id": False, "dyad_id": True}


def test_fast_path_rejects_other_models():
    frame = _small_trials()
    with pytest.raises(ValueError, match="cannot fit"):
        glmm.fit_glmm(frame, "correct ~ modality + (1|rater_id)", sampler="fast", draws=10, tune=10)
    with pytest.raises(ValueError, match="lacks"):
        glmm.fit_glmm(frame.drop(columns="dyad_id"), draws=10, tune=10)
    with pytest.raises(ValueError, match="unknown sampler"):
        glmm.fit_glmm(frame, sampler="gibbs")


# --- samplers -----------------------------------------------------------------------------


@pytest.mark.slow
def test_kernel_equals_pymc_model_logp():
    """The numba kernel is the PyMC model of `build_pymc_model`: same log density and gradient."""
    fast = _fast_model(_small_trials(), centered={"rater_id": False, "dyad_id": True})
    model = glmm.build_pymc_model(fast)
    value_vars = model.value_vars
    quick = {"mode": "FAST_COMPILE"}  # three evaluations: skip the graph optimizations
    logp = model.compile_logp(**quick)
    dlogp = model.compile_dlogp(**quick)  # gradient over model.value_vars, in that order
    reported = model.replace_rvs_by_values([model[fast.fixed_term], *[model[f.term] for f in fast.factors]])
    deterministics = model.compile_fn(reported, inputs=value_vars, **quick)
    rng = np.random.default_rng(2)
    for _ in range(3):
        theta = rng.normal(0, 0.7, fast.ndim)
        point = glmm.theta_to_pymc_point(fast, theta)
        assert set(point) == {var.name for var in value_vars}
        value, grad = fast.logp_grad(theta)
        assert value == pytest.approx(float(logp(point)), rel=1e-10, abs=1e-6)  # see the Rasch test
        expected = np.split(dlogp(point), _splits(model, point))
        mine = glmm.theta_to_pymc_point(fast, grad)
        for var, array in zip(value_vars, expected, strict=True):
            np.testing.assert_allclose(np.atleast_1d(mine[var.name]), array, rtol=1e-8, atol=1e-8)
        # The reported variables (bambi's names) agree with the PyMC Deterministics.
        values = deterministics(point)
        expanded = fast.expand(theta)
        np.testing.assert_allclose(expanded[fast.fixed_term], values[0], rtol=1e-12)
        for factor, array in zip(fast.factors, values[1:], strict=True):
            np.testing.assert_allclose(expanded[factor.term], array, rtol=1e-10, atol=1e-12)


def _splits(model, point):
    sizes = [np.size(point[var.name]) for var in model.value_vars]
    return np.cumsum(sizes)[:-1]


@pytest.mark.slow
@pytest.mark.heavy
def test_fast_path_matches_out_of_the_box_bambi():
    """Same posterior (means within Monte Carlo error, same SDs) and same names as bambi + PyMC NUTS."""
    frame = _small_trials()
    reference = glmm.fit_glmm(frame, sampler="bambi", draws=1000, tune=1000, chains=2, seed=11)
    fast = glmm.fit_glmm(frame, sampler="fast", draws=3000, tune=500, chains=2, seed=11)
    assert fast.sampler == "fast" and reference.sampler == "bambi"
    a = glmm.summarize(reference).set_index("term")
    b = glmm.summarize(fast).set_index("term")
    assert list(a.index) == list(b.index)  # bambi's names, bambi's order
    assert list(a.index[:5]) == [
        "modality[audio]",
        "modality[text]",
        "modality[video]",
        "1|rater_id_sigma",
        "1|dyad_id_sigma",
    ]
    assert "1|dyad_id[d07]" in a.index and "1|rater_id[video-r03]" in a.index
    # Monte Carlo standard error of a mean ~ sd / sqrt(ESS); allow 4.5 combined SEs (the levels
    # are ~60 comparisons), plus 0.02 for the skew of the SD posteriors.
    mcse = np.sqrt(a["sd"] ** 2 / a["ess_bulk"] + b["sd"] ** 2 / b["ess_bulk"])
    difference = (a["mean"] - b["mean"]).abs()
    z = difference / mcse
    assert ((z < 4.5) | (difference < 0.02)).all(), z.sort_values().tail()
    population = [
        "modality[audio]",
        "modality[text]",
        "modality[video]",
        "1|rater_id_sigma",
        "1|dyad_id_sigma",
    ]
    assert (z[population] < 4.0).all(), z[population]
    # Same posterior spread: a sum-to-zero model without the block means would shrink these.
    ratio = b.loc[population, "sd"] / a.loc[population, "sd"]
    assert ratio.between(0.8, 1.25).all(), ratio
    pd.testing.assert_index_equal(
        pd.Index(glmm.contrasts(reference)["contrast"]), pd.Index(glmm.contrasts(fast)["contrast"])
    )


@pytest.mark.slow
@pytest.mark.heavy  # 4 CPU-s
def test_parameter_recovery_friendbench_size():
    """3 modalities x 92 raters x 32 of 96 dyads (8,832 trials), default settings."""
    truth = {"text": 0.3, "audio": 0.6, "video": 0.9}
    frame = glmm.simulate_trials(92, 96, 32, modality_effects=truth, rater_sd=0.5, dyad_sd=1.0, seed=7)
    result = glmm.fit_glmm(frame, seed=7)
    assert result.sampler == "fast"
    summary = glmm.summarize(result).set_index("term")
    for modality, effect in truth.items():  # within 0.3 logits of the truth
        assert summary.loc[f"modality[{modality}]", "mean"] == pytest.approx(effect, abs=0.3)
    contrast = glmm.contrasts(result).set_index("contrast")
    for first, second in (("audio", "text"), ("audio", "video"), ("text", "video")):
        row = contrast.loc[f"modality[{first}] - modality[{second}]"]
        assert row["mean"] == pytest.approx(truth[first] - truth[second], abs=0.3)
        assert 0.0 <= row["p_gt_0"] <= 1.0
    components = glmm.variance_components(result).set_index("group")
    assert components.loc["rater_id", "sd_mean"] == pytest.approx(0.5, abs=0.15)  # 276 raters
    assert components.loc["dyad_id", "sd_mean"] == pytest.approx(1.0, abs=0.3)  # 96 dyads
    assert components["icc_mean"].between(0, 1).all()
    # Dyad effects are recovered (they are the Rasch-style item difficulties downstream).
    dyads = frame.drop_duplicates("dyad_id").set_index("dyad_id")["dyad_effect"]
    estimated = summary.loc[[f"1|dyad_id[{d}]" for d in dyads.index], "mean"].to_numpy()
    assert np.corrcoef(estimated, dyads.to_numpy())[0, 1] > 0.9
    # The requirement: every reported quantity converged at the default settings.
    assert summary["converged"].all(), summary.loc[~summary["converged"], "flag"]
    assert contrast["converged"].all() and components["converged"].all()
    assert (summary["r_hat"] <= glmm.RHAT_MAX).all() and (summary["ess_bulk"] >= glmm.ESS_MIN).all()


@pytest.mark.slow
def test_undersampled_fit_is_flagged(caplog):
    frame = _small_trials()
    with caplog.at_level(logging.WARNING, logger="omnisocial.stats.glmm"):
        result = glmm.fit_glmm(frame, draws=20, tune=20, seed=1)
        summary = glmm.summarize(result)
        contrast = glmm.contrasts(result)
    bad = summary[~summary["converged"]]
    assert len(bad) > 0 and (bad["flag"].str.startswith("not converged")).all()
    assert (summary.loc[summary["converged"], "flag"] == "").all()
    expected = (summary["r_hat"] > 1.01) | (summary["ess_bulk"] < 400)
    assert (expected == ~summary["converged"]).all()
    assert not contrast["converged"].all()
    warned = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    for term in bad["term"]:
        assert any(message.startswith(f"{term}: not converged") for message in warned), term


@pytest.mark.slow
def test_summary_is_deterministic_for_a_seed(monkeypatch):
    frame = _small_trials()
    first = glmm.summarize(glmm.fit_glmm(frame, draws=300, tune=200, seed=5))
    second = glmm.summarize(glmm.fit_glmm(frame, draws=300, tune=200, seed=5))
    pd.testing.assert_frame_equal(first, second)
    other = glmm.summarize(glmm.fit_glmm(frame, draws=300, tune=200, seed=6))
    assert not np.allclose(first["mean"], other["mean"])
    # a model this small samples its chains in one thread; one thread per chain gives the same draws
    assert len(frame) < glmm.PARALLEL_CHAINS_MIN_ROWS
    monkeypatch.setattr("omnisocial.stats.glmm._sample.PARALLEL_CHAINS_MIN_ROWS", 0)
    two_threads = glmm.summarize(glmm.fit_glmm(frame, draws=300, tune=200, seed=5, cores=2))
    pd.testing.assert_frame_equal(first, two_threads)


def test_chain_threads_are_one_below_the_parallel_size(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert glmm.chain_threads(4, glmm.PARALLEL_CHAINS_MIN_ROWS - 1) == 1
    assert glmm.chain_threads(2, glmm.PARALLEL_CHAINS_MIN_ROWS - 1, cores=2) == 1
    assert glmm.chain_threads(4, glmm.PARALLEL_CHAINS_MIN_ROWS) == 4
    assert glmm.chain_threads(4, 100_000, cores=2) == 2  # at most `cores`
    assert glmm.chain_threads(2, 100_000, cores=16) == 2  # one per chain


# --- Rasch --------------------------------------------------------------------------------


def _rasch_responses(n_persons: int = 300, n_items: int = 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    ability = rng.normal(0.0, 1.0, n_persons)
    difficulty = rng.normal(0.0, 1.0, n_items)
    person, item = np.meshgrid(np.arange(n_persons), np.arange(n_items), indexing="ij")
    keep = rng.random(person.shape) < 0.8  # 20% missing at random
    person, item = person[keep], item[keep]
    correct = rng.random(person.size) < 1 / (1 + np.exp(-(ability[person] - difficulty[item])))
    frame = pd.DataFrame(
        {
            "rater": [f"p{p:03d}" for p in person],
            "dyad": [f"i{i:02d}" for i in item],
            "correct": np.where(correct, "true", "false"),
        }
    )
    items = pd.Series(difficulty, index=[f"i{i:02d}" for i in range(n_items)])
    return frame, items, pd.Series(ability, index=[f"p{p:03d}" for p in range(n_persons)])


@pytest.mark.slow
@pytest.mark.heavy  # 4 CPU-s
def test_rasch_recovers_item_difficulties():
    frame, truth, ability = _rasch_responses()
    items, persons, info = rasch.fit_rasch(frame, "rater", "dyad", "correct", seed=3)
    assert list(items.columns) == rasch.ITEM_COLUMNS
    assert list(items["item"]) == sorted(truth.index)
    estimate = items.set_index("item")["difficulty"]
    assert np.corrcoef(estimate, truth[estimate.index])[0, 1] > 0.9
    assert (estimate - truth[estimate.index]).abs().mean() < 0.3
    assert ((items["hdi_low"] < items["difficulty"]) & (items["difficulty"] < items["hdi_high"])).all()
    assert info["person_sd_mean"] == pytest.approx(1.0, abs=0.2)
    assert info["person_sd_hdi_low"] < info["person_sd_mean"] < info["person_sd_hdi_high"]
    assert info["converged"] and info["flag"] == ""
    assert info["r_hat_max"] <= 1.01 and info["ess_bulk_min"] >= 400
    # person abilities, on the difficulties' scale: 30 items per person, so noisy but recovered
    assert list(persons.columns) == rasch.PERSON_COLUMNS
    assert list(persons["person"]) == sorted(ability.index)
    theta = persons.set_index("person")
    assert np.corrcoef(theta["ability"], ability[theta.index])[0, 1] > 0.8
    covered = (theta["hdi_low"] <= ability[theta.index]) & (ability[theta.index] <= theta["hdi_high"])
    assert 0.88 <= covered.mean() <= 0.99  # 95% intervals over 300 persons


def _fake_rasch_posterior(persons, items, seed=0):
    """An InferenceData shaped like the fast sampler's, with known draws (2 chains x 500)."""
    import arviz as az

    rng = np.random.default_rng(seed)
    theta = rng.normal(np.linspace(-1, 1, len(persons)), 0.3, (2, 500, len(persons)))
    intercept = rng.normal(0.2, 0.1, (2, 500, 1))  # = -mu
    effect = rng.normal(0.0, 0.5, (2, 500, len(items)))  # = -(difficulty - mu)
    sigma = np.abs(rng.normal(1.0, 0.1, (2, 500)))
    idata = az.from_dict(
        posterior={
            "intercept": intercept,
            "1|item_sigma": sigma * 0.8,
            "1|person_sigma": sigma,
            "1|item": effect,
            "1|person": theta,
        },
        coords={"intercept_dim": ["all"], "item__factor_dim": items, "person__factor_dim": persons},
        dims={
            "intercept": ["intercept_dim"],
            "1|item": ["item__factor_dim"],
            "1|person": ["person__factor_dim"],
        },
    )
    idata.add_groups(sample_stats={"diverging": np.zeros((2, 500), dtype=bool)})
    return idata, theta, -(intercept + effect)


def test_rasch_person_table_is_the_posterior_of_theta(monkeypatch):
    """Each person row is the mean, SD and 95% HDI of that person's ability draws."""
    import arviz as az

    frame, _, _ = _rasch_responses(n_persons=6, n_items=4, seed=2)
    persons_sorted, items_sorted = sorted(frame["rater"].unique()), sorted(frame["dyad"].unique())
    idata, theta, difficulty = _fake_rasch_posterior(persons_sorted, items_sorted)
    monkeypatch.setattr(rasch, "sample_fast_model", lambda *args, **kwargs: idata)
    items, persons, info = rasch.fit_rasch(frame, "rater", "dyad", "correct")
    flat = theta.reshape(-1, theta.shape[-1])
    hdi = np.array([az.hdi(flat[:, j], hdi_prob=0.95) for j in range(flat.shape[1])])
    assert list(persons["person"]) == persons_sorted
    np.testing.assert_allclose(persons["ability"], flat.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(persons["sd"], flat.std(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(persons[["hdi_low", "hdi_high"]], hdi, rtol=1e-12)
    # the difficulty is minus (intercept + item effect); sd_relative is of b_i - mean_j b_j
    flat_b = difficulty.reshape(-1, len(items_sorted))
    np.testing.assert_allclose(items["difficulty"], flat_b.mean(axis=0))
    np.testing.assert_allclose(items["sd"], flat_b.std(axis=0, ddof=1))
    relative = flat_b - flat_b.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(items["sd_relative"], relative.std(axis=0, ddof=1))
    assert (items["sd_relative"] < items["sd"]).all()  # the shared -mu noise drops out
    assert info["difficulty_sd_mean"] == pytest.approx(0.8 * idata.posterior["1|person_sigma"].mean())
    assert info["difficulty_mean"] == pytest.approx(-0.2, abs=0.01)
    assert info["draws"] == 2000 and info["attempts"] == 1


@pytest.mark.slow
def test_rasch_kernel_equals_pymc_model():
    """The default (kernel) Rasch density is the PyMC model's, in the kernel's coordinates."""
    frame, _, _ = _rasch_responses(n_persons=30, n_items=8, seed=4)
    model, persons, items = rasch.build_rasch_model(frame, "rater", "dyad", "correct")
    data, _, _ = rasch._responses(frame, "rater", "dyad", "correct")
    fast = rasch.rasch_fast_model(data, persons, items, (2.5, 2.5, 2.5))
    assert [f.term for f in fast.factors] == ["1|item", "1|person"] and fast.fixed_levels == ["all"]
    logp = model.compile_logp(mode="FAST_COMPILE")
    rng = np.random.default_rng(5)
    for _ in range(3):
        theta = rng.normal(0, 0.8, fast.ndim)
        point = glmm.theta_to_pymc_point(fast, theta)
        # abs=1e-6: PyMC's Binomial goes through p = sigmoid(logit), which loses ~1e-9 of 1 - p
        # at logits near 20; the kernel works on the logit scale.
        assert fast.logp_grad(theta)[0] == pytest.approx(float(logp(point)), rel=1e-10, abs=1e-6)


def test_rasch_reruns_with_more_draws_until_converged(monkeypatch):
    """until_converged: a miss is sampled again with the GLMM's next_draws, capped by max_draws."""
    frame, _, _ = _rasch_responses(n_persons=6, n_items=4, seed=2)
    persons_sorted, items_sorted = sorted(frame["rater"].unique()), sorted(frame["dyad"].unique())
    calls = []

    def fake(fast, draws, *args):
        calls.append(draws)
        # ESS grows with the draws: draws of 300 or fewer per chain are autocorrelated (repeated)
        idata, _, _ = _fake_rasch_posterior(persons_sorted, items_sorted, seed=len(calls))
        if draws <= 300:
            posterior = idata.posterior.isel(draw=np.repeat(np.arange(100), 5))
            idata.posterior = posterior.assign_coords(draw=np.arange(500))
        return idata

    monkeypatch.setattr(rasch, "sample_fast_model", fake)
    _, _, info = rasch.fit_rasch(frame, "rater", "dyad", "correct", draws=200, until_converged=True)
    assert calls[0] == 200 and len(calls) == 2 and calls[1] > 300
    assert info["attempts"] == 2 and info["draws"] == calls[1] and info["converged"]
    calls.clear()
    _, _, info = rasch.fit_rasch(
        frame, "rater", "dyad", "correct", draws=200, until_converged=True, max_draws=250
    )
    assert calls == [200, 250] and info["draws"] == 250 and not info["converged"] and info["flag"]
    calls.clear()
    _, _, info = rasch.fit_rasch(frame, "rater", "dyad", "correct", draws=200)  # one fit by default
    assert calls == [200] and info["attempts"] == 1 and not info["converged"]


def test_rasch_divergences_flag_the_fit_and_raise_target_accept(monkeypatch):
    """Divergent transitions count against convergence: until_converged reruns at a higher
    target_accept first; without it, or when they persist, the fit is flagged."""
    frame, _, _ = _rasch_responses(n_persons=6, n_items=4, seed=2)
    persons_sorted, items_sorted = sorted(frame["rater"].unique()), sorted(frame["dyad"].unique())
    accepts = []

    def fake(fast, draws, tune, chains, cores, seed, extra):
        accepts.append(extra["target_accept"])
        idata, _, _ = _fake_rasch_posterior(persons_sorted, items_sorted, seed=len(accepts))
        diverging = np.zeros((2, 500), dtype=bool)
        diverging[0, : 145 if extra["target_accept"] < 0.9 else 0] = True  # gone at 0.9
        idata.sample_stats["diverging"] = (("chain", "draw"), diverging)
        return idata

    monkeypatch.setattr(rasch, "sample_fast_model", fake)
    _, persons, info = rasch.fit_rasch(frame, "rater", "dyad", "correct", draws=500, until_converged=True)
    assert accepts == [0.8, 0.9] and info["target_accept"] == 0.9 and info["attempts"] == 2
    assert info["divergences"] == 0 and info["converged"] and info["flag"] == ""
    assert {"r_hat", "ess_bulk"} <= set(persons.columns) and persons["r_hat"].notna().all()
    accepts.clear()
    _, _, info = rasch.fit_rasch(frame, "rater", "dyad", "correct", draws=500)  # one fit: flagged
    assert accepts == [0.8] and info["divergences"] == 145 and not info["converged"]
    assert info["flag"] == "not converged: 145 divergent transitions > 0"
    accepts.clear()
    _, _, info = rasch.fit_rasch(frame, "rater", "dyad", "correct", draws=500, max_divergences=200)
    assert info["converged"] and info["divergences"] == 145  # within the threshold


def test_sampler_settings_are_the_config_block_or_fail_naming_the_key():
    from omnisocial.settings import Glmm

    with pytest.raises(ValueError, match=r"analysis\.glmm\.draw "):
        Glmm.of({"draw": 10})
    # null: the package's own choices (`omnisocial glmm`): sized draws, tuned start
    assert Glmm.of() == Glmm(draws=None, tune=None, chains=4, target_accept=None, max_divergences=0)


@pytest.mark.slow
def test_rasch_flags_undersampled_fit(caplog):
    frame, _, _ = _rasch_responses(n_persons=40, n_items=10, seed=1)
    with caplog.at_level(logging.WARNING, logger="omnisocial.stats.rasch"):
        _, _, info = rasch.fit_rasch(frame, "rater", "dyad", "correct", draws=20, tune=20, seed=1)
    assert not info["converged"] and info["flag"].startswith("not converged")
    assert any("not converged" in record.getMessage() for record in caplog.records)


# --- command line -------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_glmm_and_rasch(tmp_path, capsys):
    frame = _small_trials()
    trials = tmp_path / "trials.csv"
    TRIALS.write(trials, frame[TRIALS.names])
    summary_path = tmp_path / "glmm.csv"
    code = cli.main(["glmm", str(trials), "-o", str(summary_path), "--draws", "200", "--tune", "200"])
    assert code == 0
    summary = pd.read_csv(summary_path)
    assert list(summary.columns[:7]) == ["term", "mean", "sd", "hdi_low", "hdi_high", "r_hat", "ess_bulk"]
    assert summary["term"].iloc[0] == "modality[audio]"
    contrast = pd.read_csv(tmp_path / "glmm_contrasts.csv")
    assert set(contrast["contrast"]) == {
        "modality[audio] - modality[text]",
        "modality[audio] - modality[video]",
        "modality[text] - modality[video]",
    }
    assert set(pd.read_csv(tmp_path / "glmm_variance.csv")["group"]) == {"rater_id", "dyad_id"}
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["sampler"] == "fast"

    items_path = tmp_path / "items.csv"
    code = cli.main(
        ["rasch", str(trials), "--person", "rater_id", "--item", "dyad_id", "--correct", "correct"]
        + ["-o", str(items_path), "--draws", "200", "--tune", "200", "--persons", str(tmp_path / "p.csv")]
        + ["--until-converged", "--max-draws", "400"]
    )
    assert code == 0
    items = pd.read_csv(items_path, dtype={"item": str})
    persons = pd.read_csv(tmp_path / "p.csv", dtype={"person": str})
    assert list(persons.columns) == rasch.PERSON_COLUMNS and len(persons) == frame["rater_id"].nunique()
    assert list(items.columns) == rasch.ITEM_COLUMNS and len(items) == frame["dyad_id"].nunique()
    sidecar = json.loads((tmp_path / "items.csv.json").read_text())
    assert sidecar["person_sd_mean"] > 0 and sidecar["n_items"] == len(items)
    assert sidecar["difficulty_sd_mean"] > 0 and 200 <= sidecar["draws"] <= 400 and sidecar["attempts"] >= 1
    assert "person SD" in capsys.readouterr().err

    assert (
        cli.main(["glmm", str(trials), "--formula", "correct ~ 0 + modality + (1|nobody)", "-o", "x.csv"])
        == 2
    )
    assert "nobody" in capsys.readouterr().err
    assert (
        cli.main(
            ["rasch", str(tmp_path / "none.csv"), "--person", "a", "--item", "b"]
            + ["--correct", "c", "-o", "y.csv"]
        )
        == 2
    )


def test_cli_registers_subcommands():
    parser = cli.build_parser()
    args = parser.parse_args(["glmm", "t.csv", "-o", "s.csv", "--draws", "50", "--seed", "4"])
    assert args.func is glmm_cli.run_cli and args.formula == FORMULA and args.draws == 50 and args.seed == 4
    args = parser.parse_args(
        ["rasch", "r.csv", "--person", "p", "--item", "i", "--correct", "c", "-o", "i.csv"]
    )
    assert args.func is rasch.run_cli and args.person == "p"
    assert rasch.sidecar_path("out/items.csv") == "out/items.csv.json"
    assert math.isclose(glmm.RHAT_MAX, 1.01) and glmm.ESS_MIN == 400


# --- issue 52: one convergence rule, tail ESS, centring within cells, pp contrasts ----------


def _separated(n_raters: int = 6, n_dyads: int = 12, per_rater: int = 6, seed: int = 0) -> pd.DataFrame:
    """A small pathological table: text all wrong, video all right (raters separated: every
    rater of those modalities all wrong or all right), audio as simulated."""
    frame = glmm.simulate_trials(n_raters, n_dyads, per_rater, rater_sd=0.3, dyad_sd=0.3, seed=seed)
    frame["correct"] = frame["correct"].astype(int)
    frame.loc[frame["modality"] == "text", "correct"] = 0
    frame.loc[frame["modality"] == "video", "correct"] = 1
    return frame[["rater_id", "dyad_id", "modality", "correct"]]


def test_one_rule_checks_tail_ess_as_bulk_ess():
    """Point 3: a quantity with bulk ESS 483 but tail ESS 218 is not converged, and the rule is
    the same function for the GLMM rows, the Rasch fits and the figures."""
    from omnisocial.familiarity.figures.convergence import not_converged, rows_not_converged
    from omnisocial.stats.convergence import convergence_problems, fit_problems

    assert convergence_problems(1.001, 483.0, 218.0) == ["ess_tail 218 < 400"]
    assert convergence_problems(1.001, 483.0, float("nan")) == ["ess_tail undefined"]
    assert fit_problems(1.001, 900.0, 800.0, "106 divergent transitions > 0") == [
        "106 divergent transitions > 0"
    ]
    rows = pd.DataFrame(
        {"term": ["a", "b"], "r_hat": [1.0, 1.0], "ess_bulk": [483.0, 900.0], "ess_tail": [218.0, 800.0]}
    )
    flagged = _summary._flags(rows, "term")
    assert flagged["converged"].tolist() == [False, True] and "ess_tail 218 < 400" in flagged["flag"][0]
    assert not _summary._flags(rows, "term", "2 divergent transitions > 0")["converged"].any()
    assert not_converged(rows["r_hat"], rows["ess_bulk"], rows["ess_tail"]).tolist() == [True, False]
    # the figures read the table's own judgement (divergences included) when it has one
    assert rows_not_converged(rows.assign(converged=[True, False])).tolist() == [False, True]


def test_centring_measures_the_spread_within_the_fixed_cells():
    """Point 4: raters nested in modalities whose accuracies differ (0%, simulated, 100%) are
    not spread out within their modality: the rater factor is sampled non-centred. Measured
    across the modalities (the former rule) the same raters look spread out (ratio > 1.5)."""
    from omnisocial.stats.glmm import _fast

    frame = _separated()
    fast = glmm.make_fast_model(
        frame.astype({"correct": int}),
        "correct",
        "modality",
        ["audio", "text", "video"],
        0.0,
        1.0,
        [glmm.GroupSpec(c, f"1|{c}", sorted(frame[c].unique()), 2.5) for c in ("rater_id", "dyad_id")],
    )
    assert [factor.centered for factor in fast.factors] == [False, False]
    # the former measure: each rater's logit over all its trials, modality differences included
    per_rater = frame.groupby("rater_id")["correct"].agg(["sum", "count"])
    k, n = per_rater["sum"], per_rater["count"]
    logits = np.log((k + 0.5) / (n - k + 0.5))
    noise = np.mean((n + 1.0) / ((k + 0.5) * (n - k + 0.5)))
    rate = k.sum() / n.sum()
    across = np.median(n) * rate * (1 - rate) * max(float(np.var(logits)) - noise, 0.0)
    assert across > _fast.CENTERED_MIN_RATIO


@pytest.mark.slow
def test_divergent_fit_is_flagged_in_every_output_of_the_command(tmp_path, capsys, monkeypatch):
    """Point 2: the former centring choice (forced here) makes the separated table diverge at
    every target_accept; the command then says converged: false, and every row of the summary,
    the contrasts and the variance components is flagged with the divergences. The automatic
    choice (point 4) fits the same table without divergences."""
    from omnisocial.stats.glmm import _fast

    frame = _separated()
    path = tmp_path / "separated.csv"
    frame.to_csv(path, index=False)
    monkeypatch.setattr(_fast, "CENTERED_MIN_RATIO", -1.0)  # centre every factor
    out = tmp_path / "summary.csv"
    # from a low target acceptance: at 0.9 and over, whether this table still diverges depends
    # on the machine's floating point (an AMD EPYC sampled it without divergences at 0.9125)
    command = ["glmm", str(path), "-o", str(out), "--draws", "500", "--tune", "300", "--target-accept", "0.3"]
    assert cli.main(command) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["divergences"] > 0 and report["attempts"] == 3
    assert report["target_accept"] == pytest.approx(0.825)  # 0.3 -> 0.65 -> 0.825
    assert report["converged"] is False and report["flagged"] == report["rows"]
    assert "divergent transitions > 0" in report["fit_flag"]
    for name in ("summary.csv", "summary_contrasts.csv", "summary_variance.csv"):
        table = pd.read_csv(tmp_path / name, keep_default_na=False)
        assert not table["converged"].astype(str).eq("True").any(), name
        assert table["flag"].str.contains(f"{report['divergences']} divergent transitions > 0").all(), name
    monkeypatch.undo()
    result = glmm.fit_glmm(frame, draws=500, tune=300)
    assert [f.centered for f in result.fast_model.factors] == [False, False]
    # converged without divergences; on some machines after one resampling at 0.9
    assert result.divergences == 0 and result.attempts <= 2 and result.converged


@pytest.mark.slow
def test_workflow_glmm_flags_a_divergent_fit_everywhere(monkeypatch):
    """Point 2, the workflow's tables: the same rule and the same flags as the command."""
    from omnisocial.familiarity.analysis.glmm_rasch import glmm_tables
    from omnisocial.settings import Glmm
    from omnisocial.stats.glmm import _fast

    trials = _separated().assign(response="familiar", source="test")  # response: not read here
    monkeypatch.setattr(_fast, "CENTERED_MIN_RATIO", -1.0)
    # from a low target acceptance, as the command's test: 0.3 -> 0.65 -> 0.825
    settings = Glmm(draws=400, tune=300, chains=2, target_accept=0.3, max_divergences=0)
    tables = glmm_tables(trials, settings, 0)
    summary, contrasts = tables["glmm_summary"], tables["glmm_contrasts"]
    assert (summary["divergences"] > 0).all() and (summary["target_accept"] == 0.825).all()
    for table in (summary, contrasts):
        assert not table["converged"].any() and table["flag"].str.contains("divergent transitions").all()
    assert {"ess_tail", "pp_mean", "pp_zero_mean"} <= set(contrasts.columns)


def assert_pp_contrasts_match_bambi(result: glmm.GLMMResult, frame: pd.DataFrame) -> pd.DataFrame:
    """The pp columns of `glmm.contrasts(result)` equal bambi's own computation on the same
    draws: `Model.predict(kind="response_params")` per trial with the group-specific effects
    (averaged: the mean over each modality's trials) and without them (zero); mean, 95% HDI
    (arviz) and P(> 0). Returns the contrasts."""
    import arviz as az
    import bambi as bmb
    import xarray as xr

    data = frame[["rater_id", "dyad_id", "modality", "correct"]].copy()
    data["correct"] = glmm.coerce_binary(data["correct"])
    for column in ("rater_id", "dyad_id", "modality"):
        data[column] = data[column].astype(str)
    model = bmb.Model(glmm.DEFAULT_FORMULA, data, family="bernoulli")
    model.build()
    table = glmm.contrasts(result).set_index("contrast")
    assert (table["pp_definition"] == "averaged").all()
    modality = xr.DataArray(data["modality"].to_numpy(), dims="__obs__", name="modality")
    for prefix, groups in (("pp", True), ("pp_zero", False)):
        predicted = model.predict(
            result.idata, kind="response_params", data=data, inplace=False, include_group_specific=groups
        )
        accuracy = 100.0 * predicted.posterior["p"].groupby(modality).mean()
        for contrast, row in table.iterrows():
            first, second = (part.split("[")[1].rstrip("]") for part in contrast.split(" - "))
            diff = accuracy.sel(modality=first) - accuracy.sel(modality=second)
            low, high = az.hdi(diff.to_numpy().ravel(), hdi_prob=0.95)
            assert row[f"{prefix}_mean"] == pytest.approx(float(diff.mean()), abs=1e-9)
            assert (row[f"{prefix}_hdi_low"], row[f"{prefix}_hdi_high"]) == pytest.approx(
                (low, high), abs=1e-9
            )
            assert row[f"{prefix}_p_gt_0"] == pytest.approx(float((diff > 0).mean()), abs=1e-12)
    return table


@pytest.mark.slow
@pytest.mark.heavy  # 11 CPU-s
def test_pp_contrasts_equal_bambi_friendbench_size():
    """Point 1 on a FriendBench-sized simulated study (92 raters per modality, 96 dyads, 32 dyads
    per rater: 8,832 trials) whose modality effects give the paper's marginal accuracies (text
    49.9%, audio 56.3%, video 60.9%): the pp contrasts equal bambi's on the same draws, and the
    averaged definition lands on the paper's figures (6.5 / 4.5 / 10.9 pp, HDIs about 4.8 pp
    wide) where the one at random effects zero does not (wider, and larger by a fifth)."""
    frame = glmm.simulate_trials(modality_effects={"text": -0.005, "audio": 0.303, "video": 0.532}, seed=0)
    result = glmm.fit_glmm(frame, seed=0, draws=500)  # the same draws go to bambi: any number
    table = assert_pp_contrasts_match_bambi(result, frame)
    observed = 100 * frame.groupby("modality")["correct"].mean()
    for contrast, row in table.iterrows():
        first, second = (part.split("[")[1].rstrip("]") for part in contrast.split(" - "))
        raw = observed[first] - observed[second]
        assert abs(row["pp_mean"] - raw) < 0.5  # the averaged accuracies track the marginal ones
        assert 3.5 < row["pp_hdi_high"] - row["pp_hdi_low"] < 6.0  # the paper: 4.8-4.9 pp
        assert row["pp_zero_hdi_high"] - row["pp_zero_hdi_low"] > row["pp_hdi_high"] - row["pp_hdi_low"]


def test_fast_path_starts_at_the_lower_target_only_where_every_factor_is_centred():
    """Issue 53: 0.65 (7-8 leapfrog steps per draw instead of 15 on tables of other shapes) where
    every factor is centred; 0.8 where one is non-centred (a small SD mixes worse with the larger
    step) and for the bambi samplers."""
    frame = _separated()
    groups = [glmm.GroupSpec(c, f"1|{c}", sorted(frame[c].unique()), 2.5) for c in ("rater_id", "dyad_id")]

    def model(centered):
        return glmm.make_fast_model(
            frame, "correct", "modality", ["audio", "text", "video"], 0.0, 1.0, groups, centered
        )

    assert glmm.default_target_accept("fast", model(True)) == glmm.FAST_TARGET_ACCEPT == 0.65
    assert glmm.default_target_accept("fast", model({"rater_id": True})) == glmm.TARGET_ACCEPT == 0.8
    assert glmm.default_target_accept("bambi-nutpie", None) == 0.8
