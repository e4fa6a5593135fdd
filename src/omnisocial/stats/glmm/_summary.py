"""Posterior summaries of a fitted GLMM: rows with HDI, R-hat, bulk and tail ESS and convergence flags.

Owns the HDI probability; the convergence rule (RHAT_MAX, ESS_MIN, `fit_problems`) comes from
`omnisocial.stats.convergence`, shared with the Rasch fits and the figures: a row is flagged when
it misses R-hat, bulk or tail ESS, and every row of every table is flagged when the fit has more
divergent transitions than `result.max_divergences`. Diagnostics are computed once per quantity
and kept in `result.diagnostics` (label -> (r_hat, ess_bulk, ess_tail)): the draw-sizing loop of
`fit_glmm` and the summaries read the same numbers without computing them twice.
"""

from __future__ import annotations

import itertools
import logging
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from omnisocial.stats.convergence import (  # noqa: F401
    ESS_MIN,
    RHAT_MAX,
    convergence_problems,
    divergence_problem,
    fit_problems,
    flag_text,
)

if TYPE_CHECKING:
    from omnisocial.stats.glmm import GLMMResult

log = logging.getLogger("omnisocial.stats.glmm")

HDI_PROB = 0.95


def fit_divergence(result: GLMMResult) -> str:
    """The fit's divergence problem ("" when its divergences are within `result.max_divergences`)."""
    return divergence_problem(result.divergences, result.max_divergences)


def _flags(frame: pd.DataFrame, label: str, diverged: str = "") -> pd.DataFrame:
    """Add `converged` and `flag` (`stats.convergence.fit_problems`: the row's R-hat, bulk and tail
    ESS, and the fit's divergence problem `diverged`); log a WARNING for every flagged row."""
    problems = [
        fit_problems(row.r_hat, row.ess_bulk, row.ess_tail, diverged) for row in frame.itertuples(index=False)
    ]
    frame = frame.copy()
    frame["converged"] = [not why for why in problems]
    frame["flag"] = [flag_text(why) for why in problems]
    for name, flag in zip(frame[label], frame["flag"], strict=True):
        if flag:
            log.warning("%s: %s", name, flag)
    return frame


def _reported_vars(result: GLMMResult, levels: bool) -> list[str]:
    # PyMC names transformed (sampler-space) copies `<name>_log__` etc.: not reported.
    names = [name for name in result.trace.posterior.data_vars if not str(name).endswith("__")]
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


def summary_frame(
    labels: list[str], draws: np.ndarray, label: str, cache: dict | None = None
) -> pd.DataFrame:
    """Rows label, mean, sd, hdi_low, hdi_high, r_hat, ess_bulk, ess_tail of draws (chain, draw, quantity).

    `cache` (label -> (r_hat, ess_bulk, ess_tail)) supplies diagnostics computed before from the same draws,
    and receives the ones computed here.
    """
    from omnisocial.stats.glmm import _mcmc

    if cache is not None and labels and all(name in cache for name in labels):
        rhat, ess, tail = (np.array([cache[name][i] for name in labels], dtype=float) for i in range(3))
    else:
        rhat, ess, tail = _mcmc.diagnostics(draws)
        if cache is not None:
            cache.update(
                zip(labels, zip(rhat.tolist(), ess.tolist(), tail.tolist(), strict=True), strict=True)
            )
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
            "ess_tail": tail,
        }
    )


def summarize(result: GLMMResult, levels: bool = True) -> pd.DataFrame:
    """One row per parameter: term, mean, sd, hdi_low, hdi_high (95%), r_hat, ess_bulk, ess_tail,
    converged, flag.

    Terms are named as bambi names them (`modality[audio]`, `1|rater_id_sigma`,
    `1|dyad_id[d007]`); `levels=False` leaves out the group-level effects. r_hat is the
    rank-normalized split R-hat, ess_bulk and ess_tail the bulk and tail ESS, as `arviz.summary`
    computes them.
    """
    labels, draws = posterior_matrix(result.trace, _reported_vars(result, levels))
    return _flags(summary_frame(labels, draws, "term", result.diagnostics), "term", fit_divergence(result))


def _contrast_draws(result: GLMMResult) -> tuple[list[str], np.ndarray]:
    values = result.trace.posterior[result.fixed_term].transpose("chain", "draw", ...).to_numpy()
    pairs = list(itertools.combinations(range(len(result.fixed_levels)), 2))
    term, levels = result.fixed_term, result.fixed_levels
    labels = [f"{term}[{levels[i]}] - {term}[{levels[j]}]" for i, j in pairs]
    if not pairs:
        return labels, np.empty((*values.shape[:2], 0))
    return labels, np.stack([values[..., i] - values[..., j] for i, j in pairs], axis=-1)


# The contrasts in percentage points of accuracy (docs/statistics.md#glmm-contrasts-in-percentage-points).
PP_DEFINITIONS = {
    "averaged": (
        "accuracy averaged over the raters and dyads: per draw, the mean over a level's trials of "
        "invlogit(b_level + rater effect + dyad effect), as the marginal accuracies average them"
    ),
    "zero": "accuracy at random effects zero: invlogit(b_level) per draw",
}
DEFAULT_PP = "averaged"  # the one the paper's figures match (docs/statistics.md)
# Draws per block of the averaged accuracies: a block's cells x draws floats stay in the CPU's
# cache (16 draws x 25,000 cells: 3.2 MB); 256 took 2.5x the time on the 26,496-trial table.
_CHUNK = 16


def accuracy_draws(result: GLMMResult, definition: str = DEFAULT_PP) -> np.ndarray:
    """Accuracy (0-1) of each fixed level per draw, shape (chain, draw, level), by `definition`.

    "zero": invlogit(b_m). "averaged": the mean over the trials of level m of invlogit(b_m +
    sum_g u_g[level of the trial]), with the fitted random effects of the trial's raters and
    dyads (`result.cells` holds the trials per cell); what `bambi.Model.predict(kind="response_params")`
    gives per trial, averaged per level (tests/test_glmm_rasch.py checks it against bambi).
    """
    if definition not in PP_DEFINITIONS:
        raise ValueError(f"unknown definition {definition!r}; choose from {', '.join(PP_DEFINITIONS)}")
    if result.fixed_term is None or result.family != "bernoulli":
        raise ValueError("accuracies need a bernoulli formula of the form `y ~ 0 + factor + ...`")
    posterior = result.trace.posterior
    fixed = posterior[result.fixed_term].transpose("chain", "draw", ...).to_numpy()
    if definition == "zero":
        return 1.0 / (1.0 + np.exp(-fixed))
    cells = result.cells
    if cells is None:
        raise ValueError("the averaged accuracies need the fit's cells (a standard formula)")
    chains, draws, n_levels = fixed.shape
    mod = cells[result.fixed_term].map({level: i for i, level in enumerate(result.fixed_levels)})
    mod = mod.to_numpy(dtype=np.int64)
    effects = []  # (draws flattened, levels) and the level index of each cell, per factor
    for term in result.group_terms:
        array = posterior[term]
        dim = next(d for d in array.dims if d not in ("chain", "draw"))
        index = {str(level): i for i, level in enumerate(array.coords[dim].to_numpy())}
        codes = cells[term.split("|", 1)[1].strip()].astype(str).map(index).to_numpy(dtype=np.int64)
        effects.append((array.transpose("chain", "draw", dim).to_numpy().reshape(chains * draws, -1), codes))
    n = cells["n"].to_numpy(dtype=np.float64)
    weights = np.zeros((len(cells), n_levels))  # each cell's share of its level's trials
    weights[np.arange(len(cells)), mod] = n / np.bincount(mod, weights=n, minlength=n_levels)[mod]
    from scipy import special  # loaded already by the diagnostics (`_mcmc`)

    flat = fixed.reshape(chains * draws, n_levels)
    out = np.empty_like(flat)
    for start in range(0, len(flat), _CHUNK):
        block = slice(start, start + _CHUNK)
        eta = np.take(flat[block], mod, axis=1)
        for values, codes in effects:
            eta += np.take(values[block], codes, axis=1)
        out[block] = special.expit(eta, out=eta) @ weights
    return out.reshape(chains, draws, n_levels)


def _pp_columns(result: GLMMResult, definition: str, prefix: str) -> dict[str, np.ndarray]:
    """Mean, sd, 95% HDI and P(> 0) of every pairwise difference of the accuracies, in pp."""
    from omnisocial.stats.glmm import _mcmc

    accuracy = 100.0 * accuracy_draws(result, definition)
    pairs = list(itertools.combinations(range(len(result.fixed_levels)), 2))
    diffs = np.stack([accuracy[..., i] - accuracy[..., j] for i, j in pairs], axis=-1)
    low, high = _mcmc.hdi(diffs, HDI_PROB)
    return {
        f"{prefix}_mean": diffs.mean(axis=(0, 1)),
        f"{prefix}_sd": diffs.reshape(-1, diffs.shape[-1]).std(axis=0, ddof=1),
        f"{prefix}_hdi_low": low,
        f"{prefix}_hdi_high": high,
        f"{prefix}_p_gt_0": (diffs > 0).mean(axis=(0, 1)),
    }


def contrasts(result: GLMMResult) -> pd.DataFrame:
    """Every pairwise difference of the fixed levels, on the logit scale and in percentage points.

    Rows `modality[audio] - modality[text]` (first level minus second, in bambi's level
    order) with contrast, mean, sd, hdi_low, hdi_high, p_gt_0 (posterior probability that
    the difference is positive), all of the logit-scale difference; then, for a bernoulli
    standard formula, the same difference of the accuracies in percentage points from the same
    draws: pp_mean, pp_sd, pp_hdi_low, pp_hdi_high, pp_p_gt_0 (DEFAULT_PP, "averaged" over the
    raters and dyads) and pp_zero_* (at random effects zero), pp_definition naming the first;
    then r_hat, ess_bulk, ess_tail (of the logit difference), converged, flag.
    """
    if result.fixed_term is None:
        raise ValueError("contrasts need a formula of the form `y ~ 0 + factor + ...`")
    labels, diffs = _contrast_draws(result)
    if not labels:
        raise ValueError(f"{result.fixed_term} has a single level: nothing to contrast")
    frame = summary_frame(labels, diffs, "contrast", result.diagnostics)
    frame.insert(5, "p_gt_0", (diffs > 0).mean(axis=(0, 1)))
    if result.family == "bernoulli" and result.cells is not None:
        pp = {**_pp_columns(result, DEFAULT_PP, "pp"), **_pp_columns(result, "zero", "pp_zero")}
        for offset, (name, values) in enumerate(pp.items()):
            frame.insert(6 + offset, name, values)
        frame.insert(6 + len(pp), "pp_definition", DEFAULT_PP)
    return _flags(frame, "contrast", fit_divergence(result))


def worst_diagnostics(result: GLMMResult) -> tuple[float, float]:
    """(min of bulk and tail ESS, max R-hat) over every reported quantity: the rows of `summarize`
    and `contrasts` (NaN when one is undefined); fills `result.diagnostics`."""
    from omnisocial.stats.glmm import _mcmc

    labels, draws = posterior_matrix(result.trace, _reported_vars(result, True))
    if result.fixed_term is not None:
        more, diffs = _contrast_draws(result)
        labels, draws = labels + more, np.concatenate([draws, diffs], axis=2)
    rhat, bulk, tail = _mcmc.diagnostics(draws)
    result.diagnostics.clear()
    result.diagnostics.update(
        zip(labels, zip(rhat.tolist(), bulk.tolist(), tail.tolist(), strict=True), strict=True)
    )
    ess = np.minimum(bulk, tail)
    worst_ess = float(ess.min()) if np.isfinite(ess).all() else float("nan")
    worst_rhat = float(rhat.max()) if np.isfinite(rhat).all() else float("nan")
    return worst_ess, worst_rhat


def variance_components(result: GLMMResult) -> pd.DataFrame:
    """Per grouping factor: the SD of its effects, the variance, and the latent-scale ICC.

    icc = sigma_g^2 / (sum of all sigma^2 + pi^2 / 3), the share of latent (logit-scale)
    variance due to the factor. Columns term, group, sd_mean, sd_hdi_low, sd_hdi_high,
    var_mean, icc_mean, icc_hdi_low, icc_hdi_high, r_hat, ess_bulk, ess_tail (of the SD),
    converged, flag.
    """
    from omnisocial.stats.glmm import _mcmc

    terms = [term for term in result.group_terms if f"{term}_sigma" in result.trace.posterior]
    if not terms:
        raise ValueError("the model has no random intercepts")
    labels, sigma = posterior_matrix(result.trace, [f"{term}_sigma" for term in terms])
    stats = summary_frame(labels, sigma, "term", result.diagnostics)
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
            "ess_tail": stats["ess_tail"].to_numpy(),
        }
    )
    return _flags(frame, "term", fit_divergence(result))
