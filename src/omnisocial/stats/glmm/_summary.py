"""Posterior summaries of a fitted GLMM: rows with HDI, R-hat, bulk ESS and convergence flags.

Owns the HDI probability; the convergence targets RHAT_MAX, ESS_MIN and `convergence_problems`
come from `omnisocial.stats.convergence` (shared with the figures). Diagnostics are computed
once per quantity and kept in `result.diagnostics` (label -> (r_hat, ess_bulk)): the draw-sizing
loop of `fit_glmm` and the summaries read the same numbers without computing them twice.
"""

from __future__ import annotations

import itertools
import logging
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from omnisocial.stats.convergence import ESS_MIN, RHAT_MAX, convergence_problems  # noqa: F401

if TYPE_CHECKING:
    from omnisocial.stats.glmm import GLMMResult

log = logging.getLogger("omnisocial.stats.glmm")

HDI_PROB = 0.95


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
    """Rows label, mean, sd, hdi_low, hdi_high, r_hat, ess_bulk of draws (chain, draw, quantity).

    `cache` (label -> (r_hat, ess_bulk)) supplies diagnostics computed before from the same draws,
    and receives the ones computed here.
    """
    from omnisocial.stats.glmm import _mcmc

    if cache is not None and labels and all(name in cache for name in labels):
        rhat = np.array([cache[name][0] for name in labels], dtype=float)
        ess = np.array([cache[name][1] for name in labels], dtype=float)
    else:
        rhat, ess = _mcmc.diagnostics(draws)
        if cache is not None:
            cache.update(zip(labels, zip(rhat.tolist(), ess.tolist(), strict=True), strict=True))
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
    labels, draws = posterior_matrix(result.trace, _reported_vars(result, levels))
    return _flags(summary_frame(labels, draws, "term", result.diagnostics), "term")


def _contrast_draws(result: GLMMResult) -> tuple[list[str], np.ndarray]:
    values = result.trace.posterior[result.fixed_term].transpose("chain", "draw", ...).to_numpy()
    pairs = list(itertools.combinations(range(len(result.fixed_levels)), 2))
    term, levels = result.fixed_term, result.fixed_levels
    labels = [f"{term}[{levels[i]}] - {term}[{levels[j]}]" for i, j in pairs]
    if not pairs:
        return labels, np.empty((*values.shape[:2], 0))
    return labels, np.stack([values[..., i] - values[..., j] for i, j in pairs], axis=-1)


def contrasts(result: GLMMResult) -> pd.DataFrame:
    """Every pairwise difference of the fixed levels on the logit scale.

    Rows `modality[audio] - modality[text]` (first level minus second, in bambi's level
    order) with contrast, mean, sd, hdi_low, hdi_high, p_gt_0 (posterior probability that
    the difference is positive), r_hat, ess_bulk, converged, flag.
    """
    if result.fixed_term is None:
        raise ValueError("contrasts need a formula of the form `y ~ 0 + factor + ...`")
    labels, diffs = _contrast_draws(result)
    if not labels:
        raise ValueError(f"{result.fixed_term} has a single level: nothing to contrast")
    frame = summary_frame(labels, diffs, "contrast", result.diagnostics)
    frame.insert(5, "p_gt_0", (diffs > 0).mean(axis=(0, 1)))
    return _flags(frame, "contrast")


def worst_diagnostics(result: GLMMResult) -> tuple[float, float]:
    """(min bulk ESS, max R-hat) over every reported quantity: the rows of `summarize` and
    `contrasts` (NaN when one is undefined); fills `result.diagnostics`."""
    from omnisocial.stats.glmm import _mcmc

    labels, draws = posterior_matrix(result.trace, _reported_vars(result, True))
    if result.fixed_term is not None:
        more, diffs = _contrast_draws(result)
        labels, draws = labels + more, np.concatenate([draws, diffs], axis=2)
    rhat, ess = _mcmc.diagnostics(draws)
    result.diagnostics.clear()
    result.diagnostics.update(zip(labels, zip(rhat.tolist(), ess.tolist(), strict=True), strict=True))
    worst_ess = float(ess.min()) if np.isfinite(ess).all() else float("nan")
    worst_rhat = float(rhat.max()) if np.isfinite(rhat).all() else float("nan")
    return worst_ess, worst_rhat


def variance_components(result: GLMMResult) -> pd.DataFrame:
    """Per grouping factor: the SD of its effects, the variance, and the latent-scale ICC.

    icc = sigma_g^2 / (sum of all sigma^2 + pi^2 / 3), the share of latent (logit-scale)
    variance due to the factor. Columns term, group, sd_mean, sd_hdi_low, sd_hdi_high,
    var_mean, icc_mean, icc_hdi_low, icc_hdi_high, r_hat, ess_bulk (of the SD), converged, flag.
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
        }
    )
    return _flags(frame, "term")
