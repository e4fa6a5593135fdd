"""Calibration of stated confidence (docs/statistics.md#calibration): ECE, reliability bins, AUROC.

- Reliability bins are equal-width on [0, 1]: bin i is [i/n, (i+1)/n), the last one closed
  at 1. A bin's accuracy is the share of correct answers, its mean_confidence the mean
  stated confidence in the label given.
- ECE = sum over bins of (n_bin / N) * |accuracy_bin - mean_confidence_bin| (empty bins add
  nothing).
- AUROC: the model's confidence that an item is familiar is `confidence` when it said
  "familiar" and 1 - confidence when it said "stranger"; the AUROC of that score against
  the true class ("familiar" positive), by `sklearn.metrics.roc_auc_score` (the trapezoidal
  ROC area, equal to the Mann-Whitney rank formula (sum of the positives' mid-ranks
  - n_pos (n_pos + 1) / 2) / (n_pos n_neg) with ties counting 1/2, up to float rounding);
  NaN when the kept items hold one class only.

Items without a confidence (NaN) or without a label (non-answers) are left out; both
functions report how many items they used.

`bootstrap_calibration` gives percentile intervals of ECE and AUROC (items resampled with
replacement, `numpy.random.default_rng(seed)`; the first B x n integers are the resampled
item indices, the next B x n uniforms the simulated outcomes below) and
`ece_perfect`: the mean ECE of a perfectly calibrated model with the same stated
confidences, i.e. correct ~ Bernoulli(confidence) per item. ECE is biased upward at small n:
binning noise alone makes it positive (a perfectly calibrated model with confidences
uniform on [0.5, 1] has a mean ECE of about 0.07 on 96 items and 10 bins), so an observed ECE
is to be read against ece_perfect, not against 0.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from omnisocial.stats.sdt import NOISE, SIGNAL


def _as_float(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float).reshape(-1)
    finite = array[~np.isnan(array)]
    if np.any((finite < 0) | (finite > 1)):
        raise ValueError(f"{name} must lie in [0, 1]")
    return array


def calibration(confidence_in_label, correct, n_bins: int = 10) -> dict:
    """ECE and reliability bins. Returns dict(ece, n, bins DataFrame[bin_low, bin_high, n,
    mean_confidence, accuracy]); all n_bins bins are listed, empty ones with NaN means.
    ece is NaN when no item has a confidence."""
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    confidence = _as_float(confidence_in_label, "confidence_in_label")
    right = pd.array(np.asarray(correct, dtype=object).reshape(-1), dtype="boolean")
    if len(right) != len(confidence):
        raise ValueError("confidence_in_label and correct differ in length")
    keep = ~np.isnan(confidence) & ~right.isna()
    confidence = confidence[keep]
    right = right[keep].to_numpy(dtype=float)
    # i / n_bins (not linspace) so a literal edge like 0.3 falls into the bin it starts.
    edges = np.arange(n_bins + 1) / n_bins
    index = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, n_bins - 1)
    rows = []
    ece = 0.0
    for i in range(n_bins):
        in_bin = index == i
        count = int(in_bin.sum())
        mean_confidence = float(confidence[in_bin].mean()) if count else math.nan
        accuracy = float(right[in_bin].mean()) if count else math.nan
        if count:
            ece += count / len(confidence) * abs(accuracy - mean_confidence)
        rows.append([edges[i], edges[i + 1], count, mean_confidence, accuracy])
    bins = pd.DataFrame(rows, columns=["bin_low", "bin_high", "n", "mean_confidence", "accuracy"])
    return {"ece": ece if len(confidence) else math.nan, "n": int(len(confidence)), "bins": bins}


def confidence_familiar(labels, confidence) -> np.ndarray:
    """Confidence that the item is familiar: c if label is familiar, 1 - c if stranger, else NaN."""
    labels = np.asarray(labels, dtype=object).reshape(-1)
    confidence = _as_float(confidence, "confidence")
    if len(labels) != len(confidence):
        raise ValueError("labels and confidence differ in length")
    normalised = np.array([str(label).strip().lower() if isinstance(label, str) else "" for label in labels])
    return np.where(normalised == SIGNAL, confidence, np.where(normalised == NOISE, 1 - confidence, np.nan))


def auroc_from_confidence(labels, confidence, truth) -> float:
    """AUROC of the confidence-that-familiar score against the truth; NaN with one class only."""
    score = confidence_familiar(labels, confidence)
    truth = np.array([str(value).strip().lower() for value in np.asarray(truth, dtype=object).reshape(-1)])
    if len(truth) != len(score):
        raise ValueError("truth and labels differ in length")
    if not set(truth) <= {SIGNAL, NOISE}:
        raise ValueError(f"truth must be {SIGNAL!r} or {NOISE!r}")
    keep = ~np.isnan(score)
    score, positive = score[keep], truth[keep] == SIGNAL
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    from sklearn.metrics import roc_auc_score  # imported here: scikit-learn takes a while to import

    return float(roc_auc_score(positive, score))


def _ece_rows(confidence: np.ndarray, right: np.ndarray, n_bins: int) -> np.ndarray:
    """ECE of every row of (B, n) arrays, binned like `calibration`."""
    rows, n = confidence.shape
    edges = np.arange(n_bins + 1) / n_bins
    index = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, n_bins - 1)
    flat = (index + n_bins * np.arange(rows)[:, None]).ravel()
    # n_bin / N * |accuracy - mean confidence| = |sum right - sum confidence| / N
    gap = np.bincount(flat, weights=(right - confidence).ravel(), minlength=rows * n_bins)
    return np.abs(gap.reshape(rows, n_bins)).sum(axis=1) / n


def _auroc_rows(score: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Mann-Whitney AUROC (ties 1/2) of every row; NaN for a row with one class only."""
    from scipy.stats import rankdata

    ranks = rankdata(score, axis=1)
    n_pos = positive.sum(axis=1)
    n_neg = positive.shape[1] - n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = ((ranks * positive).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), auc, np.nan)


def bootstrap_calibration(
    labels, confidence, truth, n_bins: int = 10, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> dict:
    """Percentile bootstrap intervals of ECE and AUROC and the ECE of a perfectly calibrated
    model (module docstring) over the answered items with a confidence.

    Returns ece_ci_low, ece_ci_high, auroc_ci_low, auroc_ci_high (NaN-free resamples only for
    AUROC), ece_perfect and n_boot; all NaN when no item or n_boot == 0."""
    labels = np.asarray(labels, dtype=object).reshape(-1)
    confidence = _as_float(confidence, "confidence")
    truth = np.array([str(value).strip().lower() for value in np.asarray(truth, dtype=object).reshape(-1)])
    score = confidence_familiar(labels, confidence)
    keep = ~np.isnan(score)
    nan = math.nan
    out = dict.fromkeys(("ece_ci_low", "ece_ci_high", "auroc_ci_low", "auroc_ci_high", "ece_perfect"), nan)
    out["n_boot"] = int(n_boot)
    n = int(keep.sum())
    if n == 0 or n_boot < 1:
        return out
    said = np.array([str(label).strip().lower() for label in labels[keep]])
    stated, score, truth = confidence[keep], score[keep], truth[keep]
    right = (said == truth).astype(float)
    positive = truth == SIGNAL
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=(n_boot, n))
    tail = (1 - level) / 2 * 100
    ece = _ece_rows(stated[index], right[index], n_bins)
    out["ece_ci_low"], out["ece_ci_high"] = np.percentile(ece, [tail, 100 - tail])
    auc = _auroc_rows(score[index], positive[index])
    if np.isfinite(auc).any():
        out["auroc_ci_low"], out["auroc_ci_high"] = np.nanpercentile(auc, [tail, 100 - tail])
    simulated = (rng.random((n_boot, n)) < stated).astype(float)
    out["ece_perfect"] = float(_ece_rows(np.broadcast_to(stated, (n_boot, n)), simulated, n_bins).mean())
    return {key: (float(value) if key != "n_boot" else value) for key, value in out.items()}
