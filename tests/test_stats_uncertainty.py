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


# --- attenuation-corrected correlations -------------------------------------------------------


def _shrunken_estimates(rng, n_items=4000, rho=0.87, error_sd=(1.2, 1.1)):
    """Latent (x, y) ~ N(0, [[1, rho], [rho, 1]]), observed with noise; the exact normal-normal
    posterior means and SDs under the N(0, 1) prior (shrunken like the Rasch fits')."""
    latent = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n_items)
    out = []
    for column, sd in enumerate(error_sd):
        shrink = 1 / (1 + sd**2)
        observed = latent[:, column] + rng.normal(0, sd, n_items)
        out.append((shrink * observed, np.full(n_items, np.sqrt(1 - shrink)), shrink))
    return latent, out


def test_corrected_correlation_recovers_the_latent_correlation():
    from omnisocial.stats.reliability import disattenuate, eap_reliability

    rng = np.random.default_rng(13)
    latent, ((mx, sx, lx), (my, sy, ly)) = _shrunken_estimates(rng)
    raw = np.corrcoef(mx, my)[0, 1]
    assert raw == pytest.approx(0.87 * np.sqrt(lx * ly), abs=0.03)  # about 0.37: attenuated
    rel_x, rel_y = eap_reliability(mx, sx), eap_reliability(my, sy)
    assert (rel_x, rel_y) == pytest.approx((lx, ly), abs=0.03)  # 0.41, 0.45
    assert disattenuate(raw, rel_x, rel_y) == pytest.approx(0.87, abs=0.04)
    assert disattenuate(0.9, 0.5, 0.5) == 1.0 and np.isnan(disattenuate(0.3, 0.0, 0.5))


def test_corrected_partial_correlation_on_simulated_classes():
    from omnisocial.familiarity.analysis import corrected_partial

    rng = np.random.default_rng(4)
    n = 20_000
    classes = np.repeat(["familiar", "stranger"], n // 2)
    shift = np.where(classes == "familiar", 1.0, -1.0)
    latent, ((mx, sx, _), (my, sy, _)) = _shrunken_estimates(rng, n_items=n, rho=0.6)
    out = corrected_partial(mx + shift, my + 0.5 * shift, classes, sx, sy, "difficulty")
    # within a class the estimates are the latent pair plus noise: the corrected partial r is rho
    assert out["partial_r"] < 0.35
    assert out["partial_r_corrected"] == pytest.approx(0.6, abs=0.04)
    # accuracy: shares of 20 answers around latent probabilities correlated within class
    p = 1 / (1 + np.exp(-latent))
    share_x, share_y = rng.binomial(20, p[:, 0]) / 20, rng.binomial(20, p[:, 1]) / 20
    from omnisocial.stats.reliability import share_error_variance

    acc = corrected_partial(
        share_x,
        share_y,
        classes,
        share_error_variance(share_x, 20),
        share_error_variance(share_y, 20),
        "accuracy",
    )
    latent_r = np.corrcoef(p[:, 0], p[:, 1])[0, 1]
    assert acc["r"] < latent_r - 0.08  # about 0.49 against 0.60
    assert acc["r_corrected"] == pytest.approx(latent_r, abs=0.03)


# benchmarks/bench_rasch_attenuation.py, 96 dyads, 12 seeds: the corrected r's SD over seeds is
# 0.10 at 8 raters per dyad; at 300 dyads about 0.10 * sqrt(96 / 300) = 0.057 per seed, so the
# mean of 2 seeds has a standard error of about 0.04: 0.1 is 2.5 of them, and the old bias
# (corrected 0.72 against 0.87) is 0.15
RASCH_TOLERANCE = 0.1


@pytest.mark.slow
@pytest.mark.parametrize("n_raters", [8, 30])
@pytest.mark.heavy  # 5 CPU-s
def test_rasch_difficulty_correlation_corrected_for_attenuation(n_raters):
    """Two simulated Rasch fits (each modality its own raters, every rater answering each of
    300 dyads) whose latent difficulties correlate 0.87: the corrected r of the posterior means
    (EAP reliabilities from sd_relative, as the rasch rule computes them) recovers the latent r,
    and each reliability is the squared correlation of the posterior means with the truth."""
    from omnisocial.stats.rasch import fit_rasch, simulate_responses
    from omnisocial.stats.reliability import disattenuate, eap_reliability

    raw, corrected, latent_r = [], [], []
    for seed in range(2):
        rng = np.random.default_rng(100 + seed)
        latent = rng.multivariate_normal([0, 0], [[1, 0.87], [0.87, 1]], size=300)
        fits = []
        for modality in range(2):
            frame = simulate_responses(latent[:, modality], n_raters, rng)
            items, _, _ = fit_rasch(frame, "person", "item", "correct", draws=400, tune=300, seed=seed)
            fits.append(items)
            reliability = eap_reliability(items["difficulty"], items["sd_relative"])
            true = np.corrcoef(items["difficulty"], latent[:, modality])[0, 1] ** 2  # items sorted i000..
            assert reliability == pytest.approx(true, abs=0.06)
        x, y = fits
        raw.append(np.corrcoef(x["difficulty"], y["difficulty"])[0, 1])
        reliabilities = [eap_reliability(fit["difficulty"], fit["sd_relative"]) for fit in fits]
        corrected.append(disattenuate(raw[-1], *reliabilities))
        latent_r.append(np.corrcoef(latent[:, 0], latent[:, 1])[0, 1])
    # compared with the simulated difficulties' own r (that removes their sampling error)
    assert np.mean(raw) < np.mean(latent_r) - (0.2 if n_raters == 8 else 0.03)  # attenuated
    assert np.mean(corrected) == pytest.approx(np.mean(latent_r), abs=RASCH_TOLERANCE)


def test_resampled_corrected_correlations_are_the_scalar_ones_row_by_row():
    """The bootstrap's vectorised corrected r (`corrected_rows`) is `corrected_correlation` of
    each resample: both reliabilities, with and without classes (the partial r), ties included."""
    from omnisocial.stats.reliability import (
        classical_reliability,
        corrected_correlation,
        corrected_rows,
        eap_reliability,
    )

    rng = np.random.default_rng(8)
    _, ((mx, sx, _), (my, sy, _)) = _shrunken_estimates(rng, n_items=40, rho=0.5)
    classes = rng.choice(["familiar", "stranger", "unsure"], 40)
    codes = np.unique(classes, return_inverse=True)[1]
    pick = rng.integers(0, 40, (30, 40))
    for reliability, ex, ey in ((eap_reliability, sx, sy), (classical_reliability, sx**2 / 3, sy**2 / 3)):
        for grouped in (False, True):
            rows = corrected_rows(
                mx[pick], my[pick], ex[pick], ey[pick], reliability, codes[pick] if grouped else None
            )
            each = [
                corrected_correlation(
                    mx[p], my[p], ex[p], ey[p], reliability, classes[p] if grouped else None
                )
                for p in pick
            ]
            np.testing.assert_allclose(rows, each, rtol=1e-10, equal_nan=True)


def test_the_bca_interval_moves_against_the_estimators_bias():
    """Few items and low reliabilities: the corrected r is skewed, its resamples lie mostly on
    one side of the estimate. BCa moves its quantiles against that (Efron & Tibshirani 1993,
    ch. 14), percentile keeps them, basic reflects them; all hold the estimate. Their coverage
    per cell: benchmarks/bench_rasch_coverage.py."""
    from omnisocial.stats.reliability import (
        INTERVAL_METHODS,
        bootstrap_intervals,
        corrected_correlation,
        eap_reliability,
    )

    rng = np.random.default_rng(21)
    _, ((mx, sx, _), (my, sy, _)) = _shrunken_estimates(rng, n_items=60, rho=0.87, error_sd=(0.9, 0.9))
    point = corrected_correlation(mx, my, sx, sy, eap_reliability)
    bounds = bootstrap_intervals(mx, my, sx, sy, eap_reliability, 2000, seed=3, methods=INTERVAL_METHODS)
    for method, (low, high) in bounds.items():
        assert low < min(point, 1) <= high, method
    (p_low, p_high), (b_low, b_high) = bounds["percentile"], bounds["bca"]
    assert (b_low, b_high) != (p_low, p_high)
    assert bounds["basic"] != bounds["percentile"]


def test_bootstrap_interval_of_the_corrected_correlation_and_its_cap():
    from omnisocial.familiarity.analysis.glmm_rasch import corrected_columns
    from omnisocial.stats.reliability import bootstrap_corrected, corrected_correlation, eap_reliability

    rng = np.random.default_rng(5)
    latent, ((mx, sx, _), (my, sy, _)) = _shrunken_estimates(rng, n_items=96)
    point = corrected_correlation(mx, my, sx, sy, eap_reliability)
    low, high = bootstrap_corrected(mx, my, sx, sy, eap_reliability, 1000, seed=1)
    assert low < point < high <= 1 and high - low > 0.1  # r and both reliabilities vary
    assert bootstrap_corrected(mx, my, sx, sy, eap_reliability, 1000, seed=1) == (low, high)  # seeded
    assert np.isnan(bootstrap_corrected(mx, my, sx, sy, eap_reliability, 0, seed=1)[0])
    with pytest.raises(ValueError, match="unknown interval method 'bootstrap'"):
        bootstrap_corrected(mx, my, sx, sy, eap_reliability, 10, seed=1, method="bootstrap")
    capped = corrected_columns("r_corrected", 0.66, 0.6, 0.6, (0.8, 1.0), min_reliability=0.5)
    assert capped["r_corrected"] == 1.0 and capped["r_corrected_capped"]
    assert capped["r_corrected_uncapped"] == pytest.approx(1.1) and capped["r_corrected_note"] == ""
    refused = corrected_columns("r_corrected", 0.3, 0.24, 0.6, (0.5, 1.0), min_reliability=0.5)
    assert np.isnan(refused["r_corrected"]) and np.isnan(refused["r_corrected_low"])
    assert refused["r_corrected_note"] == "not corrected: reliability 0.24 < min_reliability 0.5"


def test_refused_correction_leaves_the_uncapped_value_empty():
    """Issue 52, point 5: a correction refused for low reliability (r 0.9 with reliabilities 0.2
    and 0.19: 4.62 uncapped) leaves the corrected value, the uncapped one and the interval empty,
    not capped, and the note says why; one above the threshold keeps its uncapped value."""
    from omnisocial.familiarity.analysis.glmm_rasch import corrected_columns

    refused = corrected_columns("pearson_r_corrected", 0.9, 0.2, 0.19, (0.5, 1.0), min_reliability=0.3)
    assert np.isnan(refused["pearson_r_corrected"]) and np.isnan(refused["pearson_r_corrected_uncapped"])
    assert np.isnan(refused["pearson_r_corrected_low"]) and np.isnan(refused["pearson_r_corrected_high"])
    assert refused["pearson_r_corrected_capped"] is False
    assert refused["pearson_r_corrected_note"] == "not corrected: reliability 0.19 < min_reliability 0.3"
    kept = corrected_columns("pearson_r_corrected", 0.9, 0.2, 0.19, (0.5, 1.0), min_reliability=0.1)
    assert kept["pearson_r_corrected_uncapped"] == pytest.approx(0.9 / np.sqrt(0.2 * 0.19))
