"""Sampling the fast path with nutpie, and sizing the draws to the ESS target.

`fit_glmm(draws=None)` (the default) samples `auto_draws(chains)` draws per chain, checks R-hat
and bulk ESS of every reported quantity (the rows of `summarize` and `contrasts`), and when one
misses the target lets the same chains run on to the draws scaled by ESS_TARGET / (worst ESS)
(`next_draws`), at most MAX_ROUNDS checks (`sample_fast_until`). A chain's first n draws are the
same whatever number it was asked for, and each check looks at the first n draws only, so the
whole procedure, and the result, is deterministic for a seed and equals a single run of the
reported draws. (Before, each round sampled again from the start, tuning included, so a table
whose first check missed by a little paid for its draws twice and more.)
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import math
import os
import sys
import threading
import time

import numpy as np

from omnisocial.stats.glmm._fast import FastModel

# The worst reported quantity (usually the rater SD) reaches a bulk ESS of about 0.2-1 per draw
# (FriendBench and 3x sizes), so 1,000-2,000 draws in all meet ESS >= 400; but the max of R-hat
# over the ~400-1,100 reported rows (2 chains) binds: it falls about as 1 / draws and scatters
# around 1.01 at 1,200 draws per chain. Measured on the 16 tables of benchmarks/bench_glmm.py
# (rater and dyad SD 0.2-1.5, seed 0; the max over the first n draws of one run of 1,800):
# at 1,200 per chain 1.0081-1.0145, 8 of 16 above 1.01; at 1,400 one above; at 1,500
# 1.0063-1.0096 (mean 1.0076), none. A missed check costs the extra draws plus a second check
# and the pause (about 2 s on 2 cores, 0.7x lme4's whole run), 300 more draws per chain about
# 0.9 s: so the first check comes at 1,500 per chain, where it rarely misses.
AUTO_TOTAL_DRAWS = 3000
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

    The largest of n R-hats grows with log n (docs/performance.md#code): the draws grow by a
    quarter per doubling of the rows beyond 400.
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


_WORKER = threading.local()


def _hold_thread_state() -> None:
    """Keep this thread's Python thread state for the thread's life (called in the logp callback).

    nutpie's chains run in Rust threads that call the Python logp through PyO3, which takes the
    GIL with PyGILState_Ensure and gives it back with PyGILState_Release. On a thread that holds
    no thread state of its own, that pair creates a Python thread state and destroys it again:
    on every one of the ~100,000 gradient calls of a fit, an allocation, the 16 KiB mmap of its
    frame stack, a munmap and a wait on the interpreter's thread list lock (what it cost a fit:
    docs/performance.md#code). One more Ensure per worker thread, never released, makes every
    later pair a counter step, with the same draws. The cost is one thread state (a few
    KiB) left behind per worker thread when the sampler's threads end.
    """
    if not getattr(_WORKER, "holds", False):
        ensure = ctypes.pythonapi.PyGILState_Ensure
        ensure.restype = ctypes.c_int  # PyGILState_STATE; this thread holds the GIL already
        ensure()
        _WORKER.holds = True


def _callbacks(fast: FastModel):
    """(make_logp_fn, make_expand_fn) of `fast` as nutpie's Python models take them: the numba
    kernel's log density and gradient, and the draw as `theta`."""
    from omnisocial.stats.glmm._kernel import logp_grad

    kernel_args = fast.kernel_args
    ndim = fast.ndim

    def make_logp_fn():
        def logp(x, **_shared):
            _hold_thread_state()
            grad = np.empty(ndim)
            value = logp_grad(x, grad, *kernel_args)
            return value, grad

        return logp

    def make_expand_fn(_seed1, _seed2, _chain):
        def expand(x, **_shared):
            return {"theta": np.array(x, dtype=np.float64)}

        return expand

    return make_logp_fn, make_expand_fn


def _compiled(fast: FastModel):
    """nutpie's model of `fast`: the numba kernel called through Python (`from_pyfunc`)."""
    from nutpie.compiled_pyfunc import from_pyfunc

    make_logp_fn, make_expand_fn = _callbacks(fast)
    return from_pyfunc(
        ndim=fast.ndim,
        make_logp_fn=make_logp_fn,
        make_expand_fn=make_expand_fn,
        expanded_dtypes=[np.dtype("float64")],
        expanded_shapes=[(fast.ndim,)],
        expanded_names=["theta"],
        make_initial_point_fn=fast.initial_point,
    )


def _nutpie_core():
    """nutpie's Rust core, the module `nutpie._lib`, loaded without running `nutpie/__init__.py`.

    Why: `nutpie/__init__` imports `nutpie.sample`, which imports arviz at its top, and arviz
    imports matplotlib, its plots (one of which compiles a numba ufunc at import), arviz-stats
    and scipy.stats, in every `omnisocial glmm` call (docs/performance.md#code), for nothing the
    fast path uses (it takes nutpie's raw arrow trace). The
    package's spec is found without executing it, stands in `sys.modules` while the extension
    module loads as `nutpie._lib`, and is removed again: a later `import nutpie` runs
    `nutpie/__init__` as usual and finds this same `nutpie._lib` in `sys.modules`.
    """
    if "nutpie._lib" in sys.modules:
        return sys.modules["nutpie._lib"]
    if "nutpie" in sys.modules:  # nutpie imported already: nothing to save
        return importlib.import_module("nutpie._lib")
    spec = importlib.util.find_spec("nutpie")
    sys.modules["nutpie"] = importlib.util.module_from_spec(spec)  # not executed
    try:
        return importlib.import_module("nutpie._lib")
    finally:
        del sys.modules["nutpie"]


def _start_sampler(fast: FastModel, draws, tune, chains, cores, seed, extra=None):
    """A running nutpie sampler (nutpie's `_lib.PySampler`) of `fast`, with the arrow store.

    What `nutpie.sample(_compiled(fast), blocking=False, return_raw_trace=True, **settings)`
    builds (nutpie 0.16.8, pinned: `compiled_pyfunc.from_pyfunc`, `PyFuncModel._make_model`,
    `sample`'s settings and `_BackgroundSampler`), called on nutpie's core directly so that
    arviz is not imported (`_nutpie_core`); tests/test_glmm_rasch.py checks that the draws equal
    `nutpie.sample`'s for a seed.
    """
    lib = _nutpie_core()
    ndim = fast.ndim
    make_logp_fn, make_expand_fn = _callbacks(fast)
    dim_sizes = {}  # new_variables adds the size of theta's dimension; PyModel needs it
    variables = lib.PyVariable.new_variables(["theta"], ["float64"], [(ndim,)], dim_sizes, {})
    model = lib.PyModel(
        make_logp_fn,
        make_expand_fn,
        variables,
        ndim,
        dim_sizes=dim_sizes,
        coords={},
        init_point_func=fast.initial_point,
        transform_adapter=None,
    )
    settings = lib.PyNutsSettings.Diag(seed)
    settings.num_tune = tune
    settings.num_draws = draws
    settings.num_chains = chains
    for name, value in (extra or {}).items():
        setattr(settings, name, value)
    return lib.PySampler.from_pyfunc(settings, cores, model, lib.ProgressType.none(), lib.PyStorage.arrow())


class Trace:
    """The draws of a fast-path fit as an arviz InferenceData holds them: `posterior` and
    `sample_stats`, xarray Datasets with dims (chain, draw, ...) and bambi's names and coords.

    Built with xarray alone: importing arviz costs about a second of CPU that `omnisocial glmm`
    does not need. `to_inference_data()` gives the arviz object (`GLMMResult.idata` calls it).
    """

    def __init__(self, posterior, sample_stats):
        self.posterior = posterior
        self.sample_stats = sample_stats

    def to_inference_data(self):
        import arviz as az

        return az.InferenceData(posterior=self.posterior, sample_stats=self.sample_stats)


def _idata(fast: FastModel, theta: np.ndarray, sample_stats: dict) -> Trace:
    """The posterior in bambi's names from nutpie's draws of theta (chain, draw, ndim), with the
    sample stats (a dict of (chain, draw) arrays)."""
    import xarray as xr

    chains, draws = theta.shape[:2]
    base = {"chain": np.arange(chains), "draw": np.arange(draws)}
    dims = {fast.fixed_term: fast.fixed_dim}
    coords = {**base, fast.fixed_dim: list(fast.fixed_levels)}
    for factor in fast.factors:
        dims[factor.term] = factor.dim
        coords[factor.dim] = list(factor.levels)
    posterior = {
        name: (("chain", "draw", dims[name]) if name in dims else ("chain", "draw"), values)
        for name, values in fast.expand(theta).items()
    }
    stats = {name: (("chain", "draw"), values) for name, values in sample_stats.items()}
    return Trace(xr.Dataset(posterior, coords=coords), xr.Dataset(stats, coords=base))


def sample_fast_model(fast: FastModel, draws, tune, chains, cores, seed, extra=None) -> Trace:
    """`draws` per chain after `tune` tuning steps (nutpie's NUTS, diagonal mass matrix)."""
    sampler = _start_sampler(fast, draws, tune, chains, cores, seed, extra)
    try:
        sampler.wait(None)
        batches = sampler.take_results().get_arrow_trace()
    finally:
        if not sampler.is_empty(ignore_error=True):
            sampler.abort()
    return _raw_idata(fast, batches, draws)


# the wait between two looks at a sampler before its pace is known: each look takes the GIL
# from the chains' threads (4 in the workflow's job) and copies the trace so far; 20 ms here
# made the job no faster (docs/performance.md#code)
POLL_S = 0.1
MIN_WAIT_S = 0.02  # the shortest wait between two looks once the pace is known
# the longest: the pace of early tuning (small steps, long trajectories) runs slow
MAX_WAIT_S = 0.5
SKIPPED_STATS = ("chain", "draw", "tuning")  # nutpie's bookkeeping columns, not sample stats


def _column(batch, name: str) -> np.ndarray:
    import pyarrow

    values = pyarrow.array(batch.column(name))
    if isinstance(values.type, pyarrow.LargeListType | pyarrow.ListType):
        return values.flatten().to_numpy(zero_copy_only=False).reshape(batch.num_rows, -1)
    return values.to_numpy(zero_copy_only=False)


def _scalar_stats(batch) -> list[str]:
    import pyarrow

    schema = pyarrow.schema(batch.schema)
    return [
        field.name
        for field in schema
        if field.name not in SKIPPED_STATS and not pyarrow.types.is_large_list(field.type)
    ]


def _posterior_rows(stat_batch) -> np.ndarray:
    return ~_column(stat_batch, "tuning").astype(bool)


def _drawn(stat_batches) -> int:
    """Draws after tuning that every chain has made so far (nutpie's stat batches, one a chain)."""
    if not stat_batches:
        return 0
    return min(int(_posterior_rows(stat).sum()) for stat in stat_batches)


def _raw_idata(fast: FastModel, batches, draws: int):
    """`_idata` of the first `draws` draws after tuning of each chain of a raw nutpie trace
    (its arrow batches): theta, and the scalar sample stats (diverging, step_size, n_steps, ...)."""
    draw_batches, stat_batches = batches
    thetas, stats = [], {}
    names = _scalar_stats(stat_batches[0])
    for draw, stat in zip(draw_batches, stat_batches, strict=True):
        keep = np.flatnonzero(_posterior_rows(stat))[:draws]
        thetas.append(_column(draw, "theta")[keep])
        for name in names:
            stats.setdefault(name, []).append(_column(stat, name)[keep])
    return _idata(fast, np.stack(thetas), {name: np.stack(values) for name, values in stats.items()})


def _wait_for(sampler, draws: int, tune: int) -> object:
    """The raw trace's arrow batches (draws, stats) once every chain has `draws` draws after
    tuning (or the sampler stopped).

    Looks again after the time the slowest chain's missing steps (tuning included) should take
    at its pace between the last two looks that saw steps (the sampler's start, seconds where the
    kernel loads, is in no pace). Tuning steps count in that pace: counted from the start, the
    draws alone gave a pace slowed by the whole tuning, and the wait overshot the last draw by
    up to 2 s, the sampler drawing on in vain (docs/performance.md#code)."""
    seen, since = 0, time.perf_counter()
    while True:
        batches = sampler.inspect().get_arrow_trace()  # a copy of the trace so far
        if _drawn(batches[1]) >= draws or _finished(sampler):
            return batches
        steps = min(stat.num_rows for stat in batches[1]) if batches[1] else 0
        now = time.perf_counter()
        wait = POLL_S  # no pace yet: the sampler is starting, or its first steps were just seen
        if steps > seen > 0:
            wait = (tune + draws - steps) * (now - since) / (steps - seen)
        if steps > seen:
            seen, since = steps, now
        time.sleep(min(max(wait, MIN_WAIT_S), MAX_WAIT_S))


def _finished(sampler) -> bool:
    """Whether a nutpie sampler (`_lib.PySampler`) has stopped (it raises TimeoutError while it runs)."""
    try:
        return bool(sampler.is_finished())
    except TimeoutError:
        return False


def sample_fast_until(fast: FastModel, draws, tune, chains, cores, seed, extra, more_draws):
    """Sample `draws` per chain, then keep the same chains going while `more_draws(idata, draws)`
    asks for more (it returns the new number of draws per chain, or None to stop).

    One nutpie run serves every round: it is started for MAX_DRAWS per chain, paused while
    `more_draws` looks at the first `draws` draws, and stopped when it returns None. A chain's
    first n draws do not depend on how many it was asked for (tuning depends on `tune` only), so
    the result equals a run of exactly the reported draws: deterministic for a seed, and no
    round repeats the tuning and the draws of the one before. Returns (idata, draws, rounds)."""
    # a thread per chain: the run is asked for MAX_DRAWS, so with fewer threads than chains the
    # first chains would draw on towards it while the others wait for a thread, and a round
    # (every chain at `draws`) would come only after them; a chain's draws depend on its seed
    # alone, not on the threads (tests/test_glmm_rasch.py)
    sampler = _start_sampler(fast, MAX_DRAWS, tune, chains, max(cores, chains), seed, extra)
    rounds = 1
    try:
        while True:
            batches = _wait_for(sampler, draws, tune)
            sampler.pause()
            if (have := _drawn(batches[1])) < draws:  # the sampler stopped early: wait() raises
                sampler.wait(None)
                raise RuntimeError(f"nutpie stopped after {have} of {draws} draws per chain")
            idata = _raw_idata(fast, batches, draws)
            more = more_draws(idata, draws) if rounds < MAX_ROUNDS else None
            if more is None:
                return idata, draws, rounds
            draws, rounds = more, rounds + 1
            sampler.resume()
    finally:
        sampler.abort()


def _sample_pymc(fast: FastModel, draws, tune, chains, cores, seed, extra=None):
    import nutpie

    from omnisocial.stats.glmm._pymc import build_pymc_model

    compiled = nutpie.compile_pymc_model(build_pymc_model(fast))
    raw = nutpie.sample(compiled, **_nutpie_settings(draws, tune, chains, cores, seed, extra))
    keep = [fast.fixed_term, *[f"{f.term}_sigma" for f in fast.factors], *[f.term for f in fast.factors]]
    raw.posterior = raw.posterior[keep]
    return raw
