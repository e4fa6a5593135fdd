"""Calibration of stated confidence (benchmarks.md 1.9): ECE, reliability bins, AUROC.

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
