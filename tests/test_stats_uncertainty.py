"""Uncertainty of the familiarity statistics (issue 13): bootstrap intervals of ECE and AUROC,
the crowd curve's resampling spread, attenuation-corrected difficulty correlations."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from omnisocial.stats.calibration import bootstrap_calibration, calibration


def _model(rng, n, calibrated=True):
    truth = np.where(rng.random(n) < 0.5, "familiar", "stranger")
    confidence = rng.uniform(0.5, 1.0, n)
    right = rng.random(n) < (confidence if calibrated else 0.5)
    other = np.where(truth == "familiar", "stranger", "familiar")
    labels = np.where(right, truth, other)
    return labels, confidence, truth


def test_bootstrap_calibration_matches_a_loop_over_the_same_resamples():
    rng = np.random.default_rng(5)
    labels, confidence, truth = _model(rng, 60)
    out = bootstrap_calibration(labels, confidence, truth, n_bins=10, n_boot=200, seed=9)
    # the same draws, statistic by statistic with the plain functions
    draws = np.random.default_rng(9)
    index = draws.integers(0, 60, size=(200, 60))
    right = labels == truth
    ece = [calibration(confidence[i], right[i], 10)["ece"] for i in index]
    score = np.where(labels == "familiar", confidence, 1 - confidence)
    auc = [roc_auc_score(truth[i] == "familiar", score[i]) for i in index]
    assert (out["ece_ci_low"], out["ece_ci_high"]) == pytest.approx(tuple(np.percentile(ece, [2.5, 97.5])))
    assert (out["auroc_ci_low"], out["auroc_ci_high"]) == pytest.approx(
        tuple(np.percentile(auc, [2.5, 97.5]))
    )
    simulated = draws.random((200, 60)) < confidence
    perfect = np.mean([calibration(confidence, s, 10)["ece"] for s in simulated])
    assert out["ece_perfect"] == pytest.approx(perfect)
    assert out["ece_ci_low"] <= calibration(confidence, right, 10)["ece"] <= out["ece_ci_high"]


def test_ece_of_a_perfectly_calibrated_model_is_biased_upward_at_96_items():
    rng = np.random.default_rng(1)
    labels, confidence, truth = _model(rng, 96)
    out = bootstrap_calibration(labels, confidence, truth, n_bins=10, n_boot=4000, seed=2)
    assert 0.06 < out["ece_perfect"] < 0.085  # the audit's 0.071: far from 0 at this n
    assert np.isnan(bootstrap_calibration(labels, confidence, truth, n_boot=0)["ece_perfect"])
