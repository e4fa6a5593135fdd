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


INTERVAL_METHODS = ("percentile", "basic", "bca")
JACKKNIFE_BLOCK = 256  # left-out items per block of the jackknife (memory: block x n values)
INTERVAL_METHOD = "bca"  # the interval the tables report (docs/rasch-correction.md; issue 51)


def _rows_eap(values: np.ndarray, errors: np.ndarray) -> np.ndarray:
    spread = values.var(axis=1, ddof=1)
    total = spread + np.mean(errors**2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, spread / total, np.nan)


def _rows_classical(values: np.ndarray, errors: np.ndarray) -> np.ndarray:
    spread = values.var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, 1 - errors.mean(axis=1) / spread, np.nan)


_ROWS = {eap_reliability: _rows_eap, classical_reliability: _rows_classical}


def _rows_centred(values: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Each row's values centred within its classes (codes per row, as values)."""
    flat = (codes + n_classes * np.arange(len(values))[:, None]).ravel()
    size = n_classes * len(values)
    sums = np.bincount(flat, values.ravel(), minlength=size)
    counts = np.bincount(flat, minlength=size)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = sums / counts
    return values - means[flat].reshape(values.shape)


def corrected_rows(x, y, error_x, error_y, reliability, codes=None) -> np.ndarray:
    """`corrected_correlation` of each row of the 2-D arrays (one resample a row; `codes`: the
    class codes per row for the partial correlation), vectorised for eap_reliability and
    classical_reliability, else row by row."""
    if reliability not in _ROWS:
        return np.array(
            [
                corrected_correlation(*row[:4], reliability, None if codes is None else row[4])
                for row in zip(x, y, error_x, error_y, *([] if codes is None else [codes]), strict=True)
            ]
        )
    if codes is not None:
        n_classes = int(codes.max()) + 1
        x, y = _rows_centred(x, codes, n_classes), _rows_centred(y, codes, n_classes)
    dx, dy = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    sxx, syy = (dx**2).sum(axis=1), (dy**2).sum(axis=1)
    rows = _ROWS[reliability]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (dx * dy).sum(axis=1) / np.sqrt(sxx * syy)
        rel_x, rel_y = rows(x, error_x), rows(y, error_y)
        out = np.where((rel_x > 0) & (rel_y > 0), r / np.sqrt(rel_x * rel_y), np.nan)  # as disattenuate
    # as corrected_correlation: no value for fewer than 3 items or a constant side
    out[(sxx <= 0) | (syy <= 0) | (x.shape[1] < 3)] = np.nan
    return out


def _jackknife_acceleration(x, y, error_x, error_y, reliability, codes) -> float:
    """BCa's acceleration from the leave-one-item-out values (Efron & Tibshirani 1993, 14.15),
    computed a block of left-out items at a time (n x (n - 1) values in all)."""
    n = len(x)
    values = []
    for begin in range(0, n, JACKKNIFE_BLOCK):
        left_out = np.arange(begin, min(n, begin + JACKKNIFE_BLOCK))
        # row k: every item but left_out[k]
        drop = np.arange(n - 1)[None, :] + (np.arange(n - 1)[None, :] >= left_out[:, None])
        values.append(
            corrected_rows(
                x[drop],
                y[drop],
                error_x[drop],
                error_y[drop],
                reliability,
                None if codes is None else codes[drop],
            )
        )
    values = np.concatenate(values)
    values = values[np.isfinite(values)]
    if len(values) < 3:
        return 0.0
    d = values.mean() - values
    denominator = 6 * (d**2).sum() ** 1.5
    return float((d**3).sum() / denominator) if denominator > 0 else 0.0


def bootstrap_corrected(
    x,
    y,
    error_x,
    error_y,
    reliability,
    resamples: int,
    seed: int,
    classes=None,
    level: float = 0.95,
    method: str = INTERVAL_METHOD,
) -> tuple[float, float]:
    """Bootstrap interval of the corrected correlation over `resamples` resamples of the items
    (dyads) with replacement: r and both reliabilities are recomputed in each, so the interval
    carries the uncertainty of all three (Efron & Tibshirani 1993, ch. 13-14). `method`:
    "percentile" (the resampled values' quantiles), "basic" (reflected about the estimate) or
    "bca" (bias-corrected and accelerated: the quantiles moved by the share of resampled values
    below the estimate and by the jackknife's skewness, so the estimator's bias and skew are
    corrected, not only reproduced). Bounds clipped to +/- 1 (a latent correlation lies
    there); NaN when resamples is 0 or fewer than 90% of the resamples give a corrected value
    (a reliability <= 0)."""
    return bootstrap_intervals(
        x, y, error_x, error_y, reliability, resamples, seed, classes, level, (method,)
    )[method]


def bootstrap_intervals(
    x, y, error_x, error_y, reliability, resamples: int, seed: int, classes=None, level: float = 0.95,
    methods=INTERVAL_METHODS,
) -> dict[str, tuple[float, float]]:  # fmt: skip
    """`bootstrap_corrected`'s interval by each of `methods`, from the same resamples."""
    for method in methods:
        if method not in INTERVAL_METHODS:
            raise ValueError(f"unknown interval method {method!r}; choose from {', '.join(INTERVAL_METHODS)}")
    none = dict.fromkeys(methods, (math.nan, math.nan))
    x, y = np.asarray(x, float), np.asarray(y, float)
    error_x, error_y = np.asarray(error_x, float), np.asarray(error_y, float)
    keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(error_x) & np.isfinite(error_y)
    codes = None
    if classes is not None:
        _, codes = np.unique(np.asarray(classes, dtype=str)[keep], return_inverse=True)
    x, y, error_x, error_y = x[keep], y[keep], error_x[keep], error_y[keep]
    if resamples < 1 or len(x) < 4:
        return none
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(x), (resamples, len(x)))
    values = corrected_rows(
        x[pick], y[pick], error_x[pick], error_y[pick], reliability, None if codes is None else codes[pick]
    )
    if np.isfinite(values).mean() < 0.9:
        return none
    values = values[np.isfinite(values)]
    tail = (1 - level) / 2
    point = float(corrected_rows(x[None], y[None], error_x[None], error_y[None], reliability,
                                 None if codes is None else codes[None])[0])  # fmt: skip
    out = {}
    for method in methods:
        if method == "percentile" or not math.isfinite(point):
            low, high = np.quantile(values, [tail, 1 - tail])
        elif method == "basic":
            upper, lower = np.quantile(values, [1 - tail, tail])
            low, high = 2 * point - upper, 2 * point - lower
        else:
            from scipy.stats import norm

            below = (np.sum(values < point) + 0.5 * np.sum(values == point)) / len(values)
            bias = norm.ppf(min(max(below, 0.5 / len(values)), 1 - 0.5 / len(values)))
            accel = _jackknife_acceleration(x, y, error_x, error_y, reliability, codes)
            z = norm.ppf([tail, 1 - tail])
            low, high = np.quantile(values, norm.cdf(bias + (bias + z) / (1 - accel * (bias + z))))
        out[method] = (float(np.clip(low, -1, 1)), float(np.clip(high, -1, 1)))
    return out


def share_error_variance(accuracy, n_responses) -> np.ndarray:
    """Sampling variance of a share of correct answers, p (1 - p) / (n - 1); NaN where n < 2."""
    p, n = np.asarray(accuracy, dtype=float), np.asarray(n_responses, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n >= 2, p * (1 - p) / (n - 1), np.nan)
