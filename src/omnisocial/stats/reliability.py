"""Reliability of estimated item values and correlations corrected for attenuation.

A correlation between two sets of noisy estimates is smaller than the correlation of the
latent values they estimate (Spearman 1904): with reliabilities rel_x and rel_y (the share
of the estimates' variance that is latent variance),

    r_corrected = r / sqrt(rel_x rel_y),   capped at +/- 1 (sampling error can push it past).

Reliabilities:

- `eap_reliability(means, sds)`: of posterior means (shrunken estimates, as the Rasch fits'
  difficulties): var(means) / (var(means) + mean(sd^2)) (the EAP reliability of item
  response theory). In the normal model, with EAP = lambda (theta + e) and lambda the
  shrinkage factor, var(EAP) = lambda sigma^2 and E[posterior var] = (1 - lambda) sigma^2,
  so this is lambda, and corr(EAP_x, EAP_y) = rho sqrt(lambda_x lambda_y): the correction
  recovers the latent rho. It needs a prior whose spread is the latent values' (a prior
  estimated from the data, as the Rasch fits' hierarchical one; a fixed wide prior shrinks
  too little and overstates the reliability) and SDs of the error that varies from item to
  item (the Rasch fits' `sd_relative`: an error shared by all items moves no correlation);
- `classical_reliability(values, error_variances)`: of unshrunken estimates (as per-dyad
  shares of correct answers): 1 - mean(error variance) / var(values).

Variances use ddof = 1. A reliability <= 0 or NaN gives a NaN correction. The tables report
the capped and the uncapped value, a flag when capped, and a bootstrap interval over the items
(`bootstrap_corrected`); formulas and coverage: docs/rasch-correction.md.
"""

from __future__ import annotations

import math

import numpy as np


def eap_reliability(means, sds) -> float:
    """var(means) / (var(means) + mean(sds^2)) over the finite pairs; NaN with fewer than 2."""
    means, sds = np.asarray(means, dtype=float), np.asarray(sds, dtype=float)
    keep = np.isfinite(means) & np.isfinite(sds)
    if keep.sum() < 2:
        return math.nan
    spread = float(np.var(means[keep], ddof=1))
    noise = float(np.mean(sds[keep] ** 2))
    return spread / (spread + noise) if spread + noise > 0 else math.nan


def classical_reliability(values, error_variances) -> float:
    """1 - mean(error_variances) / var(values) over the finite pairs; NaN with fewer than 2."""
    values, errors = np.asarray(values, dtype=float), np.asarray(error_variances, dtype=float)
    keep = np.isfinite(values) & np.isfinite(errors)
    if keep.sum() < 2:
        return math.nan
    spread = float(np.var(values[keep], ddof=1))
    return 1 - float(np.mean(errors[keep])) / spread if spread > 0 else math.nan


def disattenuate(r: float, reliability_x: float, reliability_y: float, cap: bool = True) -> float:
    """r / sqrt(rel_x rel_y), capped at +/- 1 unless `cap` is False; NaN if r is NaN or a
    reliability is not positive."""
    values = (r, reliability_x, reliability_y)
    if any(v is None or not math.isfinite(v) for v in values) or min(reliability_x, reliability_y) <= 0:
        return math.nan
    corrected = r / math.sqrt(reliability_x * reliability_y)
    return float(np.clip(corrected, -1.0, 1.0)) if cap else float(corrected)


def _centred(values: np.ndarray, classes) -> np.ndarray:
    if classes is None:
        return values
    _, codes = np.unique(np.asarray(classes, dtype=str), return_inverse=True)
    return values - (np.bincount(codes, values) / np.bincount(codes))[codes]


def corrected_correlation(x, y, error_x, error_y, reliability, classes=None) -> float:
    """The uncapped corrected (partial, with `classes`) correlation of x and y: the Pearson r of
    the (class-centred) values over sqrt of both `reliability(values, errors)`."""
    x, y = _centred(np.asarray(x, float), classes), _centred(np.asarray(y, float), classes)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    r = float(np.corrcoef(x, y)[0, 1])
    return disattenuate(r, reliability(x, error_x), reliability(y, error_y), cap=False)


def bootstrap_corrected(
    x, y, error_x, error_y, reliability, resamples: int, seed: int, classes=None, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the corrected correlation over `resamples` resamples of the items
    (dyads) with replacement: r and both reliabilities are recomputed in each, so the interval
    carries the uncertainty of all three (Efron & Tibshirani 1993, ch. 13). Bounds clipped to
    +/- 1 (a latent correlation lies there); NaN when resamples is 0 or fewer than 90% of the
    resamples give a corrected value (a reliability <= 0)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    error_x, error_y = np.asarray(error_x, float), np.asarray(error_y, float)
    keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(error_x) & np.isfinite(error_y)
    groups = None if classes is None else np.asarray(classes, dtype=object)[keep]
    x, y, error_x, error_y = x[keep], y[keep], error_x[keep], error_y[keep]
    if resamples < 1 or len(x) < 4:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    values = np.empty(resamples)
    for b in range(resamples):
        pick = rng.integers(0, len(x), len(x))
        values[b] = corrected_correlation(
            x[pick],
            y[pick],
            error_x[pick],
            error_y[pick],
            reliability,
            None if groups is None else groups[pick],
        )
    if np.isfinite(values).mean() < 0.9:
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(np.clip(low, -1, 1)), float(np.clip(high, -1, 1))


def share_error_variance(accuracy, n_responses) -> np.ndarray:
    """Sampling variance of a share of correct answers, p (1 - p) / (n - 1); NaN where n < 2."""
    p, n = np.asarray(accuracy, dtype=float), np.asarray(n_responses, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n >= 2, p * (1 - p) / (n - 1), np.nan)
