"""Human crowds: majority-vote accuracy as a function of crowd size, and per-rater SDT.

Crowd curve (docs/statistics.md#crowds): for crowd size k, every resample draws, for each dyad, k of
its raters without replacement, takes their majority vote (a tie is a fair coin flip) and
scores it against the truth; the resample's accuracy is the mean over dyads, and the curve
point is the mean (and SD and 2.5/97.5 percentiles) over resamples. The percentiles
(resample_low, resample_high) are the spread of the rater resampling with the dyads and
raters held fixed: they are not a confidence interval for a population of raters or dyads.

Choices the paper leaves open, made here:

- a dyad with fewer than k raters in a modality is left out of that k (it cannot field a
  crowd of k); `n_dyads` says how many dyads each point rests on, so a shrinking set is
  visible, and `beyond_min_raters` marks every k above the smallest number of raters any dyad
  of the modality has (its point rests on a subset of the dyads). A k no dyad reaches gives a
  row of NaN with n_dyads = 0;
- common random numbers: each resample draws one random ordering of a dyad's raters and the
  crowd of size k is its first k raters. For every k that is exactly a uniform k-subset, and
  it makes neighbouring points of the curve less noisy relative to each other;
- `accuracy_expected` is the exact (simulation-free) expectation of the same quantity: with m
  raters of whom r are right, the number right among k drawn is hypergeometric(m, r, k) and a
  dyad's expected majority accuracy is P(X > k/2) + P(X = k/2)/2. The resampling mean
  converges to it; at k = 1 it equals the mean over dyads of the per-dyad rater accuracy.

The random stream is `numpy.random.default_rng(seed)`, consumed in sorted modality, then
sorted dyad order, so the same trials and seed give the same table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.stats.sdt import NOISE, SIGNAL, sdt, trials_with_truth

# scipy is imported in the functions that use it: scipy.stats costs ~1.3 s CPU per job start

CROWD_COLUMNS = [
    "modality",
    "k",
    "accuracy_mean",
    "accuracy_sd",
    "resample_low",
    "resample_high",
    "accuracy_expected",
    "n_dyads",
    "beyond_min_raters",
]


def _majority_correct(n_right, k: int, coin) -> np.ndarray:
    """1 where the k-crowd's majority is right, 0 where wrong; a tie takes the coin."""
    n_right = np.asarray(n_right)
    return np.where(2 * n_right > k, 1.0, np.where(2 * n_right == k, coin.astype(float), 0.0))


def crowd_curve(trials: pd.DataFrame, truth, ks, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Majority-vote accuracy per modality and crowd size k (see the module docstring)."""
    from scipy import stats

    ks = [int(k) for k in ks]
    if not ks or min(ks) < 1:
        raise ValueError("ks must be crowd sizes >= 1")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    frame = trials_with_truth(trials, truth)
    rng = np.random.default_rng(seed)
    rows = []
    for modality, per_modality in frame.groupby("modality", sort=True):
        # sums[r, j] / counts[j]: accuracy of resample r at ks[j], summed over eligible dyads
        sums = np.zeros((n_resamples, len(ks)))
        expected = np.zeros(len(ks))
        counts = np.zeros(len(ks), dtype=int)
        fewest = int(per_modality.groupby("dyad_id").size().min())
        for _, dyad in per_modality.groupby("dyad_id", sort=True):
            right = dyad.sort_values("rater_id")["correct"].to_numpy(dtype=int)
            m, r = len(right), int(right.sum())
            order = np.argsort(rng.random((n_resamples, m)), axis=1)
            cumulative = np.cumsum(right[order], axis=1)
            coins = rng.random((n_resamples, len(ks))) < 0.5
            for j, k in enumerate(ks):
                if k > m:
                    continue
                sums[:, j] += _majority_correct(cumulative[:, k - 1], k, coins[:, j])
                hyper = stats.hypergeom(m, r, k)
                expected[j] += hyper.sf(k // 2) if k % 2 else hyper.sf(k // 2) + 0.5 * hyper.pmf(k // 2)
                counts[j] += 1
        for j, k in enumerate(ks):
            if counts[j] == 0:
                rows.append([modality, k, np.nan, np.nan, np.nan, np.nan, np.nan, 0, k > fewest])
                continue
            accuracy = sums[:, j] / counts[j]
            low, high = np.percentile(accuracy, [2.5, 97.5])
            sd = float(np.std(accuracy, ddof=1)) if n_resamples > 1 else np.nan
            rows.append(
                [
                    modality,
                    k,
                    float(accuracy.mean()),
                    sd,
                    low,
                    high,
                    expected[j] / counts[j],
                    int(counts[j]),
                    k > fewest,
                ]
            )
    table = pd.DataFrame(rows, columns=CROWD_COLUMNS)
    return table.astype({"k": "int64", "n_dyads": "int64", "beyond_min_raters": bool})


def per_rater_sdt(trials: pd.DataFrame, truth) -> pd.DataFrame:
    """Accuracy and signal detection per rater and modality (log-linear d', c as in `sdt`).

    Columns: rater_id, modality, n, n_familiar, n_stranger, accuracy, familiar_recall,
    stranger_recall, d_prime, criterion; sorted by rater_id then modality. Recall, d' and c
    are NaN for a rater who saw no dyad of one class.
    """
    frame = trials_with_truth(trials, truth)
    frame["is_familiar"] = frame["truth"] == SIGNAL
    frame["hit"] = frame["is_familiar"] & (frame["response"] == SIGNAL)
    frame["false_alarm"] = ~frame["is_familiar"] & (frame["response"] == SIGNAL)
    frame["correct_rejection"] = (frame["truth"] == NOISE) & (frame["response"] == NOISE)
    grouped = frame.groupby(["rater_id", "modality"], sort=True).agg(
        n=("correct", "size"),
        n_correct=("correct", "sum"),
        n_familiar=("is_familiar", "sum"),
        hits=("hit", "sum"),
        false_alarms=("false_alarm", "sum"),
        correct_rejections=("correct_rejection", "sum"),
    )
    out = grouped.reset_index()
    for column in ("n", "n_correct", "n_familiar", "hits", "false_alarms", "correct_rejections"):
        out[column] = out[column].astype("int64")
    out["n_stranger"] = out["n"] - out["n_familiar"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["accuracy"] = out["n_correct"] / out["n"]
        out["familiar_recall"] = np.where(out["n_familiar"] > 0, out["hits"] / out["n_familiar"], np.nan)
        out["stranger_recall"] = np.where(
            out["n_stranger"] > 0, out["correct_rejections"] / out["n_stranger"], np.nan
        )
    d_prime, criterion = sdt(
        out["hits"].to_numpy(),
        out["n_familiar"].to_numpy(),
        out["false_alarms"].to_numpy(),
        out["n_stranger"].to_numpy(),
    )
    out["d_prime"] = np.asarray(d_prime, dtype=float).reshape(-1)
    out["criterion"] = np.asarray(criterion, dtype=float).reshape(-1)
    columns = [
        "rater_id",
        "modality",
        "n",
        "n_familiar",
        "n_stranger",
        "accuracy",
        "familiar_recall",
        "stranger_recall",
        "d_prime",
        "criterion",
    ]
    return out[columns]
