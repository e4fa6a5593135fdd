"""Statistics of the familiarity study: hand-computed values (docs/statistics.md)."""

from __future__ import annotations

import math
import sys
import textwrap
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import tost_proportions_2indep

from omnisocial import cli
from omnisocial.stats.calibration import auroc_from_confidence, calibration, confidence_familiar
from omnisocial.stats.crowds import crowd_curve, per_rater_sdt
from omnisocial.stats.sdt import (
    binomial_p,
    majority_vote,
    majority_votes,
    nonanswer_accuracies,
    rater_predictions,
    score_predictions,
    sdt,
    wilson_interval,
)
from omnisocial.stats.tests import (
    mcnemar_exact,
    n_mcnemar,
    n_tost_paired,
    paired_tost_from_counts,
    power_table,
    tost_difference,
)
from omnisocial.tables import METRICS, TableError

Z = NormalDist().inv_cdf
METRIC_COLUMNS = (
    "model,modality,n_items,n_answered,coverage,accuracy,ci_low,ci_high,p_value,"
    "familiar_recall,stranger_recall,d_prime,criterion"
)


# --- sdt.py --------------------------------------------------------------------------------


def test_wilson_interval_7_of_10():
    # z = 1.959964, z^2 = 3.841459, p = 0.7, n = 10
    # denominator = 1 + 3.841459/10 = 1.3841459
    # centre = (0.7 + 3.841459/20) / 1.3841459 = 0.8920729 / 1.3841459 = 0.644493
    # half = 1.959964 * sqrt(0.21/10 + 3.841459/400) / 1.3841459
    #      = 1.959964 * sqrt(0.0306036) / 1.3841459 = 1.959964 * 0.1749389 / 1.3841459 = 0.247715
    # -> (0.396778, 0.892209)
    low, high = wilson_interval(7, 10)
    assert low == pytest.approx(0.396778, abs=1e-6)
    assert high == pytest.approx(0.892209, abs=1e-6)
    # 0/10 starts at 0 and 10/10 ends at 1; no trials, no interval
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_binomial_p_hand_values():
    # 7/10: P(X >= 7) = (C(10,7)+C(10,8)+C(10,9)+C(10,10)) / 2^10 = (120+45+10+1)/1024 = 176/1024,
    # two-sided (symmetric null) = 352/1024 = 0.34375
    assert binomial_p(7, 10) == pytest.approx(352 / 1024, rel=1e-12)
    # 60/96: two-sided = 2 * sum_{i=60..96} C(96,i) / 2^96 = 0.0184334 (exact integer arithmetic)
    exact = 2 * sum(math.comb(96, i) for i in range(60, 97)) / 2**96
    assert exact == pytest.approx(0.0184334, abs=1e-7)
    assert binomial_p(60, 96) == pytest.approx(exact, rel=1e-9)
    # 48/96 sits on the null: p = 1
    assert binomial_p(48, 96) == pytest.approx(1.0)
    assert math.isnan(binomial_p(0, 0))


def test_sdt_log_linear_small_table():
    # 10 familiar answered, 8 called familiar (hits); 10 strangers answered, 3 called familiar (FA)
    # H = (8 + 0.5) / (10 + 1) = 0.772727, z(H) = 0.747859
    # F = (3 + 0.5) / (10 + 1) = 0.318182, z(F) = -0.472789
    # d' = 0.747859 + 0.472789 = 1.220648;  c = -(0.747859 - 0.472789) / 2 = -0.137535
    d_prime, criterion = sdt(8, 10, 3, 10)
    assert d_prime == pytest.approx(1.220648, abs=1e-6)
    assert criterion == pytest.approx(-0.137535, abs=1e-6)
    assert d_prime == pytest.approx(Z(8.5 / 11) - Z(3.5 / 11), rel=1e-12)
    # chance and no bias: H = F = 5.5/11 = 0.5 -> d' = 0, c = 0
    assert sdt(5, 10, 5, 10) == pytest.approx((0.0, 0.0), abs=1e-12)
    # saying "stranger" to everything: H = 0.5/11, F = 0.5/11 -> d' = 0, c = -2 z(1/22) > 0
    d0, c0 = sdt(0, 10, 0, 10)
    assert d0 == pytest.approx(0.0, abs=1e-12)
    assert c0 == pytest.approx(-Z(0.5 / 11), rel=1e-12)
    assert c0 > 0
    # arrays in, arrays out; a class without answered items is NaN
    d_arr, c_arr = sdt(np.array([8, 1]), np.array([10, 0 + 2]), np.array([3, 0]), np.array([10, 0]))
    assert d_arr[0] == pytest.approx(d_prime) and np.isnan(d_arr[1]) and np.isnan(c_arr[1])


def _predictions(rows):
    return pd.DataFrame(rows, columns=["model", "modality", "item_id", "truth", "label", "confidence"])


def test_score_predictions_with_nonanswer():
    frame = _predictions(
        [
            ("m", "text", "d1", "familiar", "familiar", 0.9),
            ("m", "text", "d2", "familiar", "stranger", 0.6),
            ("m", "text", "d3", "stranger", "stranger", 0.8),
            ("m", "text", "d4", "stranger", "", None),  # non-answer
            ("m", "text", "d5", "familiar", "familiar", 0.7),
            ("silent", "text", "d1", "familiar", "", None),
            ("silent", "text", "d2", "stranger", "", None),
        ]
    )
    metrics = score_predictions(frame)
    assert list(metrics.columns) == METRIC_COLUMNS.split(",")
    m = metrics.set_index("model").loc["m"]
    # 5 items, 4 answered: coverage 4/5 = 0.8; correct d1, d3, d5 -> accuracy 3/4 on answered
    assert (m["n_items"], m["n_answered"]) == (5, 4)
    assert m["coverage"] == pytest.approx(0.8)
    assert m["accuracy"] == pytest.approx(0.75)
    # Wilson 3/4: same formula as above; exact binomial 3/4: 2 * (C(4,3)+C(4,4))/16 = 10/16 = 0.625
    assert (m["ci_low"], m["ci_high"]) == pytest.approx(wilson_interval(3, 4))
    assert m["p_value"] == pytest.approx(0.625)
    # familiar answered: d1, d2, d5 -> 2 hits of 3; stranger answered: d3 -> 1 correct rejection of 1
    assert m["familiar_recall"] == pytest.approx(2 / 3)
    assert m["stranger_recall"] == pytest.approx(1.0)
    # H = 2.5/4 = 0.625, z = 0.318639; F = 0.5/2 = 0.25, z = -0.674490
    # d' = 0.993129, c = -(0.318639 - 0.674490)/2 = 0.177925
    assert m["d_prime"] == pytest.approx(0.993129, abs=1e-6)
    assert m["criterion"] == pytest.approx(0.177925, abs=1e-6)
    silent = metrics.set_index("model").loc["silent"]
    assert (silent["n_items"], silent["n_answered"], silent["coverage"]) == (2, 0, 0.0)
    for column in ("accuracy", "ci_low", "ci_high", "p_value", "familiar_recall", "d_prime", "criterion"):
        assert np.isnan(silent[column]), column

    three_ways = nonanswer_accuracies(frame).set_index("model").loc["m"]
    assert three_ways["accuracy_answered"] == pytest.approx(3 / 4)
    assert three_ways["accuracy_nonanswer_wrong"] == pytest.approx(3 / 5)  # 3 right of 5
    assert three_ways["accuracy_nonanswer_coinflip"] == pytest.approx(3.5 / 5)  # (3 + 0.5) / 5


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["familiar", "stranger"]), st.sampled_from(["familiar", "stranger", ""])),
        min_size=1,
        max_size=30,
    )
)
def test_scoring_invariants(pairs):
    frame = _predictions(
        [("m", "audio", f"d{i}", truth, label, None) for i, (truth, label) in enumerate(pairs)]
    )
    row = score_predictions(frame).iloc[0]
    answered = [(t, lab) for t, lab in pairs if lab]
    assert row["n_answered"] == len(answered) and row["coverage"] == pytest.approx(len(answered) / len(pairs))
    three = nonanswer_accuracies(frame).iloc[0]
    if answered:
        assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
        assert 0 <= row["p_value"] <= 1
        # coin flip = coverage-weighted mix of the answered accuracy and 0.5; never below "wrong"
        mix = row["coverage"] * row["accuracy"] + (1 - row["coverage"]) * 0.5
        assert three["accuracy_nonanswer_coinflip"] == pytest.approx(mix)
        assert three["accuracy_nonanswer_wrong"] <= three["accuracy_nonanswer_coinflip"]
    else:
        assert np.isnan(row["accuracy"]) and three["accuracy_nonanswer_coinflip"] == pytest.approx(0.5)


def test_score_predictions_rejects_bad_label():
    frame = _predictions([("m", "text", "d1", "familiar", "maybe", None)])
    with pytest.raises(TableError, match="column label"):
        score_predictions(frame)


# --- human trials ----------------------------------------------------------------------------

TRUTH = {"d1": "familiar", "d2": "stranger", "d3": "familiar", "d4": "stranger"}


def _trials(responses):
    """responses: {(rater, dyad): response}, all in the text modality."""
    rows = [
        {"rater_id": r, "dyad_id": d, "modality": "text", "response": resp, "correct": resp == TRUTH[d]}
        for (r, d), resp in responses.items()
    ]
    return pd.DataFrame(rows)


HAND_TRIALS = _trials(
    {
        ("r1", "d1"): "familiar",
        ("r2", "d1"): "familiar",
        ("r3", "d1"): "stranger",  # d1: 2 familiar vs 1 -> familiar (right)
        ("r1", "d2"): "familiar",
        ("r2", "d2"): "stranger",  # d2: 1 vs 1 -> tie
        ("r1", "d3"): "stranger",
        ("r2", "d3"): "stranger",
        ("r3", "d3"): "familiar",  # d3: 1 familiar vs 2 -> stranger (wrong)
        ("r1", "d4"): "stranger",  # d4: 0 vs 1 -> stranger (right)
    }
)


def test_rater_predictions_and_majority_vote_record():
    per_rater = rater_predictions(HAND_TRIALS, TRUTH)
    assert set(per_rater["model"]) == {"r1", "r2", "r3"}
    assert len(per_rater) == len(HAND_TRIALS)
    r1 = score_predictions(per_rater).set_index("model").loc["r1"]
    assert r1["accuracy"] == pytest.approx(2 / 4)  # r1 right on d1 and d4

    record = majority_votes(HAND_TRIALS, TRUTH, seed=3).set_index("item_id")
    assert list(record["tie"]) == [False, True, False, False]
    assert list(record.loc[["d1", "d3", "d4"], "label"]) == ["familiar", "stranger", "stranger"]
    assert record.loc["d1", "vote_share"] == pytest.approx(2 / 3)
    assert record.loc["d2", "vote_share"] == pytest.approx(0.5)
    crowd = majority_vote(HAND_TRIALS, TRUTH, seed=3)
    assert set(crowd["model"]) == {"human_majority"}
    # the tie breaks the same way for the same seed, and both ways over seeds
    assert crowd.equals(majority_vote(HAND_TRIALS, TRUTH, seed=3))
    tie_labels = {
        majority_vote(HAND_TRIALS, TRUTH, seed=s).set_index("item_id").loc["d2", "label"] for s in range(20)
    }
    assert tie_labels == {"familiar", "stranger"}


def test_trials_inconsistent_with_truth_are_rejected():
    bad = HAND_TRIALS.copy()
    bad.loc[0, "correct"] = False
    with pytest.raises(ValueError, match="rater=r1 dyad=d1"):
        rater_predictions(bad, TRUTH)
    with pytest.raises(ValueError, match="no truth"):
        rater_predictions(HAND_TRIALS, {"d1": "familiar"})


def test_per_rater_sdt_hand_values():
    table = per_rater_sdt(HAND_TRIALS, TRUTH).set_index("rater_id")
    r1 = table.loc["r1"]
    # r1: d1 fam->fam (hit), d3 fam->str (miss), d2 str->fam (FA), d4 str->str (CR)
    assert (r1["n"], r1["n_familiar"], r1["n_stranger"]) == (4, 2, 2)
    assert r1["accuracy"] == pytest.approx(0.5)
    assert (r1["familiar_recall"], r1["stranger_recall"]) == pytest.approx((0.5, 0.5))
    # H = 1.5/3 = 0.5, F = 1.5/3 = 0.5 -> d' = 0, c = 0
    assert (r1["d_prime"], r1["criterion"]) == pytest.approx((0.0, 0.0), abs=1e-12)
    # r3 saw only familiar dyads (d1, d3): recall of strangers, d' and c undefined
    r3 = table.loc["r3"]
    assert r3["n_stranger"] == 0 and np.isnan(r3["stranger_recall"]) and np.isnan(r3["d_prime"])


# --- tests.py ----------------------------------------------------------------------------------


def test_mcnemar_hand_and_statsmodels():
    # a right / b wrong on 9 items, a wrong / b right on 3, 20 concordant
    a = pd.Series([True] * 9 + [False] * 3 + [True] * 12 + [False] * 8)
    b = pd.Series([False] * 9 + [True] * 3 + [True] * 12 + [False] * 8)
    result = mcnemar_exact(a, b)
    # p = 2 * P(X <= 3 | 12, 1/2) = 2 * (1 + 12 + 66 + 220) / 4096 = 598/4096 = 0.145996
    assert (result["b"], result["c"], result["n_discordant"]) == (9, 3, 12)
    assert result["p_value"] == pytest.approx(598 / 4096, rel=1e-12)
    reference = mcnemar([[12, 9], [3, 8]], exact=True)
    assert result["p_value"] == pytest.approx(reference.pvalue, rel=1e-12)
    assert result["statistic"] == reference.statistic

    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        x, y = rng.random(n) < 0.7, rng.random(n) < rng.uniform(0.3, 0.9)
        table = [[np.sum(x & y), np.sum(x & ~y)], [np.sum(~x & y), np.sum(~x & ~y)]]
        ours = mcnemar_exact(pd.Series(x), pd.Series(y))
        assert ours["p_value"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-10)


def test_mcnemar_aligns_by_index():
    a = pd.Series({"d1": True, "d2": True, "d3": False, "d9": True})
    b = pd.Series({"d3": True, "d2": False, "d1": True, "d8": False})  # other order, d8/d9 unpaired
    result = mcnemar_exact(a, b)
    assert (result["b"], result["c"], result["n_items"]) == (1, 1, 3)
    assert result["p_value"] == pytest.approx(1.0)
    assert mcnemar_exact(a, a)["p_value"] == 1.0  # no discordant pair


def _paired_series(b, c, concordant_right, concordant_wrong):
    a = [True] * b + [False] * c + [True] * concordant_right + [False] * concordant_wrong
    other = [False] * b + [True] * c + [True] * concordant_right + [False] * concordant_wrong
    return pd.Series(a), pd.Series(other)


def test_tost_equivalent_case():
    # n = 400, b = c = 20: diff = 0, SE = sqrt((40/400) - 0) / sqrt(400) = sqrt(0.1)/20 = 0.0158114
    # margin 0.1: z = 0.1 / 0.0158114 = 6.3246 on both sides -> p ~ 1.3e-10 < 0.05: equivalent
    a, b = _paired_series(20, 20, 250, 110)
    result = tost_difference(a, b, margin=0.1, method="wald")
    assert result["diff"] == pytest.approx(0.0)
    assert result["se"] == pytest.approx(math.sqrt(0.1) / 20)
    assert result["p_tost"] == pytest.approx(stats.norm.sf(0.1 / (math.sqrt(0.1) / 20)))
    assert result["equivalent"] is True
    # 90% interval: 0 +/- 1.644854 * 0.0158114 = +/- 0.026008
    assert (result["ci_low"], result["ci_high"]) == pytest.approx((-0.026008, 0.026008), abs=1e-6)


def test_tost_not_equivalent_case():
    # n = 40, b = 6, c = 2: diff = 4/40 = 0.1
    # SE = sqrt(8/40 - 0.1^2)/sqrt(40) = sqrt(0.19)/6.324555 = 0.068920
    # H01 (diff <= -0.1): z = 0.2/0.068920 = 2.9019, p_lower = 0.0018545
    # H02 (diff >= +0.1): z = 0/0.068920 = 0, p_upper = 0.5 -> p_tost = 0.5, not equivalent
    a, b = _paired_series(6, 2, 20, 12)
    result = tost_difference(a, b, margin=0.1, method="wald")
    assert result["diff"] == pytest.approx(0.1)
    assert result["se"] == pytest.approx(0.068920, abs=1e-6)
    assert result["p_lower"] == pytest.approx(0.0018545, abs=1e-7)
    assert result["p_upper"] == pytest.approx(0.5)
    assert result["p_tost"] == pytest.approx(0.5)
    assert result["equivalent"] is False


def test_tost_degenerate_and_unpaired():
    # no discordant pair: Wald SE is 0 -> no claim; Agresti-Min (+0.5 per cell) gives a finite test
    a, b = _paired_series(0, 0, 7, 3)
    wald = tost_difference(a, b, margin=0.1, method="wald")
    assert np.isnan(wald["p_tost"]) and wald["equivalent"] is False
    adjusted = tost_difference(a, b, margin=0.1, method="agresti_min")
    # p10 = p01 = 0.5/12, SE = sqrt((1/12)/12) = 0.083333; z = 0.1/0.083333 = 1.2 -> p = 0.115070
    assert adjusted["p_tost"] == pytest.approx(stats.norm.sf(1.2), rel=1e-9)
    assert adjusted["equivalent"] is False
    # unpaired Wald TOST equals statsmodels
    x = pd.Series([True] * 30 + [False] * 20)
    y = pd.Series([True] * 25 + [False] * 15)
    ours = tost_difference(x, y, margin=0.1, paired=False)
    reference = tost_proportions_2indep(30, 50, 25, 40, -0.1, 0.1, method="wald", correction=False)
    assert ours["p_tost"] == pytest.approx(reference.pvalue, rel=1e-9)
    assert ours["diff"] == pytest.approx(30 / 50 - 25 / 40)


def test_power_formulas_hand_values():
    # McNemar (Connor): psi = 0.3, delta = 0.1, z_.975 = 1.959964, z_.8 = 0.841621
    # n = (1.959964*sqrt(0.3) + 0.841621*sqrt(0.29))^2 / 0.01 = (1.073516 + 0.453225)^2 / 0.01 = 233.09
    assert n_mcnemar(0.1, 0.3) == pytest.approx(233.09, abs=0.01)
    # TOST, delta = 0: n = (z_.95 + z_.9)^2 psi / m^2 = (1.644854 + 1.281552)^2 * 0.3 / 0.01 = 256.92
    assert n_tost_paired(0.0, 0.1, 0.3) == pytest.approx(256.92, abs=0.01)
    table = power_table([0.0, 0.1], [0.05, 0.1], discordance=0.3)
    assert len(table) == 4
    row = table.set_index(["effect_size", "margin"])
    assert row.loc[(0.1, 0.1), "n_mcnemar_approx"] == 234
    assert row.loc[(0.1, 0.1), "n_mcnemar"] == 249  # by exact power (tests/test_stats_paired.py)
    assert row.loc[(0.0, 0.1), "n_tost"] == 257
    assert pd.isna(row.loc[(0.0, 0.1), "n_mcnemar"])  # no difference to detect
    assert pd.isna(row.loc[(0.1, 0.1), "n_tost"])  # true difference on the margin
    # discordance derived from a baseline of 0.6 with independent errors: 0.7*0.4 + 0.6*0.3 = 0.46
    derived = power_table([0.1], [0.2], baseline_accuracy=0.6)
    assert derived.loc[0, "discordance"] == pytest.approx(0.46)


def test_power_formulas_match_seeded_simulation():
    rng = np.random.default_rng(2024)
    reps = 4000
    for psi, delta in [(0.3, 0.1), (0.4, 0.15)]:
        n = math.ceil(n_mcnemar(delta, psi))
        counts = rng.multinomial(n, [(psi + delta) / 2, (psi - delta) / 2, 1 - psi], size=reps)
        b, c = counts[:, 0], counts[:, 1]
        z = (b - c) / np.sqrt(np.maximum(b + c, 1))
        assert np.mean(np.abs(z) > stats.norm.ppf(0.975)) == pytest.approx(0.8, abs=0.03)
        exact_p = np.minimum(1, 2 * stats.binom.cdf(np.minimum(b, c), b + c, 0.5))
        assert 0.72 < np.mean(exact_p < 0.05) < 0.83  # the exact test is a little conservative
    for psi, delta, margin in [(0.3, 0.0, 0.1), (0.3, 0.03, 0.1)]:
        n = math.ceil(n_tost_paired(delta, margin, psi))
        counts = rng.multinomial(n, [(psi + delta) / 2, (psi - delta) / 2, 1 - psi], size=reps)
        result = paired_tost_from_counts(counts[:, 0], counts[:, 1], n, margin, method="wald")
        assert np.mean(result["equivalent"]) == pytest.approx(0.8, abs=0.03)


# --- crowds.py ---------------------------------------------------------------------------------


def _random_trials(seed, n_dyads=16, n_raters=9, modalities=("text", "audio")):
    rng = np.random.default_rng(seed)
    truth = {f"d{i:02d}": ("familiar" if i % 2 else "stranger") for i in range(n_dyads)}
    rows = []
    for modality in modalities:
        for dyad, relationship in truth.items():
            skill = rng.uniform(0.4, 0.9)
            for rater in range(n_raters):
                right = rng.random() < skill
                other = "stranger" if relationship == "familiar" else "familiar"
                response = relationship if right else other
                rows.append((f"r{rater}", dyad, modality, response, right))
    trials = pd.DataFrame(rows, columns=["rater_id", "dyad_id", "modality", "response", "correct"])
    return trials, truth


def test_crowd_curve_k1_is_mean_individual_accuracy_and_seeded():
    trials, truth = _random_trials(11)
    curve = crowd_curve(trials, truth, ks=[1, 3, 5], n_resamples=2000, seed=5)
    individual = trials.groupby("modality")["correct"].mean()  # same rater count per dyad
    k1 = curve[curve["k"] == 1].set_index("modality")
    for modality in ("text", "audio"):
        assert k1.loc[modality, "accuracy_expected"] == pytest.approx(individual[modality], rel=1e-12)
        assert k1.loc[modality, "accuracy_mean"] == pytest.approx(individual[modality], abs=0.01)
    again = crowd_curve(trials, truth, ks=[1, 3, 5], n_resamples=2000, seed=5)
    pd.testing.assert_frame_equal(curve, again)
    other = crowd_curve(trials, truth, ks=[1, 3, 5], n_resamples=2000, seed=6)
    assert not np.allclose(curve["accuracy_mean"], other["accuracy_mean"])
    # the same trials in another row order give the same curve
    shuffled = trials.sample(frac=1.0, random_state=0)
    pd.testing.assert_frame_equal(curve, crowd_curve(shuffled, truth, ks=[1, 3, 5], n_resamples=2000, seed=5))
    assert (curve["resample_low"] <= curve["accuracy_mean"]).all()
    assert (curve["accuracy_mean"] <= curve["resample_high"]).all()


def test_crowd_curve_hand_expectation_and_skipped_k():
    # d1 has raters r1, r2 right and r3 wrong (3 raters); d4 has a single right rater
    trials = HAND_TRIALS[HAND_TRIALS["dyad_id"].isin(["d1", "d4"])]
    curve = crowd_curve(trials, TRUTH, ks=[1, 2, 3, 4], n_resamples=3000, seed=1).set_index("k")
    # k=1: d1 2/3, d4 1 -> (2/3 + 1)/2 = 5/6
    # k=2: only d1 (d4 has one rater): P(both right) = 1/3, P(split, coin) = 2/3 -> 1/3 + 1/3 = 2/3
    # k=3: only d1, majority 2 of 3 right -> 1;  k=4: no dyad has 4 raters -> NaN, n_dyads 0
    assert curve.loc[1, "accuracy_expected"] == pytest.approx(5 / 6)
    assert curve.loc[2, "accuracy_expected"] == pytest.approx(2 / 3)
    assert curve.loc[3, "accuracy_expected"] == pytest.approx(1.0)
    assert list(curve["n_dyads"]) == [2, 1, 1, 0]
    assert list(curve["beyond_min_raters"]) == [False, True, True, True]  # d4 has 1 rater
    assert np.isnan(curve.loc[4, "accuracy_mean"])
    assert curve.loc[2, "accuracy_mean"] == pytest.approx(2 / 3, abs=0.03)
    assert curve.loc[3, "accuracy_mean"] == 1.0 and curve.loc[3, "accuracy_sd"] == 0.0


# --- calibration.py ------------------------------------------------------------------------------


def test_ece_hand_case():
    confidence = [0.3, 0.55, 0.95, 0.95, np.nan]
    correct = [True, False, True, False, True]  # the NaN-confidence item is left out
    result = calibration(confidence, correct, n_bins=10)
    # bin [0.3,0.4): n=1, conf 0.3, acc 1 -> |1-0.3| = 0.7, weight 1/4
    # bin [0.5,0.6): n=1, conf 0.55, acc 0 -> 0.55, weight 1/4
    # bin [0.9,1.0]: n=2, conf 0.95, acc 0.5 -> 0.45, weight 2/4
    # ECE = 0.175 + 0.1375 + 0.225 = 0.5375
    assert result["ece"] == pytest.approx(0.5375)
    assert result["n"] == 4
    bins = result["bins"]
    assert list(bins.columns) == ["bin_low", "bin_high", "n", "mean_confidence", "accuracy"]
    assert list(bins["n"]) == [0, 0, 0, 1, 0, 1, 0, 0, 0, 2]
    assert bins.loc[9, "accuracy"] == pytest.approx(0.5)
    # a perfectly calibrated case: 4 items at 0.75, 3 right -> ECE 0; 1.0 falls in the last bin
    assert calibration([0.75] * 4, [True, True, True, False])["ece"] == pytest.approx(0.0)
    assert calibration([1.0], [True])["bins"]["n"].iloc[-1] == 1
    with pytest.raises(ValueError):
        calibration([1.2], [True])


def test_auroc_from_confidence():
    truth = ["familiar", "familiar", "stranger", "stranger"]
    # said familiar at 0.9/0.8 for the familiar ones, stranger at 0.7/0.6 for strangers:
    # familiar-scores 0.9, 0.8 vs 0.3, 0.4 -> perfectly separated
    labels = ["familiar", "FAMILIAR", "stranger", "stranger"]
    assert auroc_from_confidence(labels, [0.9, 0.8, 0.7, 0.6], truth) == 1.0
    flipped = ["stranger", "stranger", "familiar", "familiar"]
    assert auroc_from_confidence(flipped, [0.9, 0.8, 0.7, 0.6], truth) == 0.0
    assert np.isnan(auroc_from_confidence(labels[:2], [0.9, 0.8], truth[:2]))
    # ties and a non-answer, checked against scikit-learn
    labels = ["familiar", "stranger", "familiar", "stranger", "", "familiar"]
    confidence = [0.6, 0.6, 0.9, 0.4, 0.5, 0.6]
    truth = ["familiar", "familiar", "stranger", "stranger", "familiar", "stranger"]
    score = confidence_familiar(labels, confidence)
    keep = ~np.isnan(score)
    expected = roc_auc_score(np.array(truth)[keep] == "familiar", score[keep])
    assert auroc_from_confidence(labels, confidence, truth) == pytest.approx(expected)
    # only one class left once the non-answers are dropped
    assert np.isnan(auroc_from_confidence(["familiar", ""], [0.9, 0.5], ["familiar", "stranger"]))


def test_auroc_is_the_mann_whitney_statistic_with_ties_half():
    from scipy import stats

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 60))
        truth = np.where(rng.random(n) < 0.4, "familiar", "stranger")
        if len(set(truth)) < 2:
            continue
        labels = np.where(rng.random(n) < 0.5, "familiar", "stranger")
        confidence = np.round(rng.random(n), 1)  # many ties
        score = confidence_familiar(labels, confidence)
        positive = truth == "familiar"
        n_pos, n_neg = positive.sum(), (~positive).sum()
        ranks = stats.rankdata(score)
        expected = (ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
        assert auroc_from_confidence(labels, confidence, truth) == pytest.approx(
            expected, rel=1e-12, abs=1e-15
        )


# --- cli.py ------------------------------------------------------------------------------------


def test_cli_score_writes_exact_columns(tmp_path, capsys):
    source = tmp_path / "predictions.csv"
    source.write_text(
        textwrap.dedent(
            """\
            model,modality,item_id,truth,label,confidence
            m,text,0894,FAMILIAR,familiar,0.9
            m,text,0895,familiar,STRANGER,0.6
            m,text,0896,Stranger,stranger,0.8
            m,text,0897,stranger,,
            m,text,0898,familiar,Familiar,0.7
            """
        )
    )
    output = tmp_path / "out" / "metrics.csv"
    assert cli.main(["score", str(source), "-o", str(output)]) == 0
    lines = output.read_text().splitlines()
    assert lines[0] == METRIC_COLUMNS
    metrics = METRICS.read(output)
    row = metrics.iloc[0]
    assert (row["n_items"], row["n_answered"]) == (5, 4)
    assert row["coverage"] == pytest.approx(0.8) and row["accuracy"] == pytest.approx(0.75)
    assert capsys.readouterr().err == ""


def test_cli_score_malformed_file(tmp_path, capsys):
    source = tmp_path / "bad.csv"
    source.write_text(
        "model,modality,item_id,truth,label,confidence\nm,text,d1,familiar,familiar,0.9\nm,text,d2,familiar,maybe,\n"
    )
    assert cli.main(["score", str(source), "-o", str(tmp_path / "m.csv")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "bad.csv" in error and "row 3" in error and "column label" in error
    assert not (tmp_path / "m.csv").exists()

    missing = tmp_path / "nolabel.csv"
    missing.write_text("model,modality,item_id,truth,confidence\nm,text,d1,familiar,0.9\n")
    assert cli.main(["score", str(missing), "-o", str(tmp_path / "m.csv")]) == 2
    assert "label" in capsys.readouterr().err

    short = tmp_path / "short.csv"  # pandas would pad the short row with empty strings
    short.write_text("model,modality,item_id,truth,label,confidence\nm,text,d1,familiar\n")
    assert cli.main(["score", str(short), "-o", str(tmp_path / "m.csv")]) == 2
    assert "short.csv: row 2 column label, confidence" in capsys.readouterr().err

    assert cli.main(["score", str(tmp_path / "absent.csv"), "-o", str(tmp_path / "m.csv")]) == 2
    assert "absent.csv" in capsys.readouterr().err


def test_each_subcommand_registers_from_its_module_imported_only_when_named(tmp_path, monkeypatch, capsys):
    plugin = tmp_path / "fake_stats_plugin.py"
    plugin.write_text(
        textwrap.dedent(
            """\
            def add_cli(subparsers):
                parser = subparsers.add_parser("hello")
                parser.add_argument("name")
                parser.set_defaults(func=lambda args: print("hi " + args.name) or 0)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    commands = {**cli.COMMANDS, "hello": "fake_stats_plugin", "later": "omnisocial.stats.not_written_yet"}
    monkeypatch.setattr(cli, "COMMANDS", commands)
    assert cli.main(["hello", "there"]) == 0
    assert capsys.readouterr().out.strip() == "hi there"
    # a named subcommand imports its own module only
    monkeypatch.delitem(sys.modules, "fake_stats_plugin")
    with pytest.raises(SystemExit):
        cli.main(["score", "--help"])
    assert "fake_stats_plugin" not in sys.modules
