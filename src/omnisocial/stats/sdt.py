"""Accuracy, signal detection and scoring of familiarity predictions (docs/statistics.md#accuracy).

Definitions pinned by the published tables; "familiar" is the signal class:

- accuracy is computed on answered items only (an empty label is a non-answer), with the
  95% Wilson score interval and the exact two-sided binomial test against 0.5;
- familiar recall = hit rate = P(label familiar | truth familiar), stranger recall =
  correct-rejection rate = P(label stranger | truth stranger), both on answered items;
- d' = z(H) - z(F) and c = -(z(H) + z(F)) / 2 with the log-linear correction
  H = (hits + 0.5) / (n_familiar_answered + 1), F = (false alarms + 0.5) / (n_stranger_answered + 1);
  c > 0 is a bias toward "stranger".

Where a quantity has no trials to rest on (no answered items, or no answered item of one
class for recall, d' and c) it is NaN rather than a number the correction would invent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from omnisocial.tables import METRICS, NON_ANSWER, PREDICTIONS, RELATIONSHIPS, TRIALS, Contract

# scipy is imported in the functions that use it (scipy.stats costs ~1.3 s CPU per job start);
# the normal quantile is scipy.special.ndtri, the function stats.norm.ppf(q) evaluates (same bits)

SIGNAL = "familiar"
NOISE = "stranger"
MAJORITY_MODEL = "human_majority"


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k successes out of n; (nan, nan) when n == 0.

    With p = k/n and z the two-sided normal quantile for `level`:
    centre = (p + z^2/(2n)) / (1 + z^2/n), half-width = z sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n).
    """
    _check_count(k, n)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n == 0:
        return (math.nan, math.nan)
    from scipy.special import ndtri

    z = ndtri(0.5 + level / 2)
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # analytically the interval ends at exactly 0 for k == 0 and 1 for k == n; keep float noise out
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return (low, high)


def binomial_p(k: int, n: int) -> float:
    """Exact two-sided binomial test of k successes in n against 0.5; nan when n == 0."""
    _check_count(k, n)
    if n == 0:
        return math.nan
    from scipy import stats

    return float(stats.binomtest(int(k), int(n), 0.5, alternative="two-sided").pvalue)


def sdt(hits, n_familiar, false_alarms, n_stranger):
    """d' and c with the log-linear correction; "familiar" is the signal class.

    H = (hits + 0.5) / (n_familiar + 1), F = (false_alarms + 0.5) / (n_stranger + 1),
    d' = z(H) - z(F), c = -(z(H) + z(F)) / 2 (c > 0: bias toward "stranger").
    `n_familiar` and `n_stranger` count the answered familiar and stranger items. Accepts
    scalars (returns two floats) or arrays (returns two arrays); NaN where either class has
    no answered item.
    """
    hits, n_familiar, false_alarms, n_stranger = (
        np.asarray(v, dtype=float) for v in (hits, n_familiar, false_alarms, n_stranger)
    )
    if np.any((hits < 0) | (hits > n_familiar)) or np.any((false_alarms < 0) | (false_alarms > n_stranger)):
        raise ValueError("need 0 <= hits <= n_familiar and 0 <= false_alarms <= n_stranger")
    from scipy.special import ndtri

    z_hit = ndtri((hits + 0.5) / (n_familiar + 1))
    z_fa = ndtri((false_alarms + 0.5) / (n_stranger + 1))
    undefined = (n_familiar == 0) | (n_stranger == 0)
    d_prime = np.where(undefined, np.nan, z_hit - z_fa)
    criterion = np.where(undefined, np.nan, -(z_hit + z_fa) / 2)
    if d_prime.ndim == 0:
        return float(d_prime), float(criterion)
    return d_prime, criterion


def _check_count(k, n) -> None:
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else math.nan


def _counts(group: pd.DataFrame) -> dict:
    answered = group["label"] != NON_ANSWER
    familiar = group["truth"] == SIGNAL
    said_familiar = group["label"] == SIGNAL
    return {
        "n_items": len(group),
        "n_answered": int(answered.sum()),
        "n_correct": int((answered & (group["label"] == group["truth"])).sum()),
        "n_familiar": int((answered & familiar).sum()),
        "n_stranger": int((answered & ~familiar).sum()),
        "hits": int((answered & familiar & said_familiar).sum()),
        "false_alarms": int((answered & ~familiar & said_familiar).sum()),
    }


def score_predictions(predictions: pd.DataFrame, contract: Contract = PREDICTIONS) -> pd.DataFrame:
    """One METRICS row per (model, modality), sorted by model then modality.

    n_items counts every prediction row, n_answered the non-empty labels; coverage =
    n_answered / n_items; accuracy, its Wilson 95% interval, the binomial p-value, both
    recalls, d' and c are on answered items only (see the module docstring). `contract`:
    PREDICTIONS, or a variant of it with other modalities (as `omnisocial score --modalities`).
    """
    frame = contract.validate(predictions)
    rows = []
    for (model, modality), group in frame.groupby(["model", "modality"], sort=True):
        n = _counts(group)
        correct, answered = n["n_correct"], n["n_answered"]
        low, high = wilson_interval(correct, answered)
        d_prime, criterion = sdt(n["hits"], n["n_familiar"], n["false_alarms"], n["n_stranger"])
        rows.append(
            {
                "model": model,
                "modality": modality,
                "n_items": n["n_items"],
                "n_answered": answered,
                "coverage": _ratio(answered, n["n_items"]),
                "accuracy": _ratio(correct, answered),
                "ci_low": low,
                "ci_high": high,
                "p_value": binomial_p(correct, answered),
                "familiar_recall": _ratio(n["hits"], n["n_familiar"]),
                "stranger_recall": _ratio(n["n_stranger"] - n["false_alarms"], n["n_stranger"]),
                "d_prime": d_prime,
                "criterion": criterion,
            }
        )
    if not rows:
        return METRICS.empty()
    return METRICS.validate(pd.DataFrame(rows))


def nonanswer_accuracies(predictions: pd.DataFrame) -> pd.DataFrame:
    """Accuracy three ways per (model, modality) (docs/statistics.md#refusals).

    accuracy_answered = correct / answered (NaN without answers);
    accuracy_nonanswer_wrong = correct / items (a non-answer counts as wrong);
    accuracy_nonanswer_coinflip = (correct + 0.5 * non-answers) / items (a non-answer counts
    as the expected score of a fair coin flip, so no randomness is involved).
    """
    frame = PREDICTIONS.validate(predictions)
    rows = []
    for (model, modality), group in frame.groupby(["model", "modality"], sort=True):
        n = _counts(group)
        items, answered, correct = n["n_items"], n["n_answered"], n["n_correct"]
        rows.append(
            {
                "model": model,
                "modality": modality,
                "accuracy_answered": _ratio(correct, answered),
                "accuracy_nonanswer_wrong": _ratio(correct, items),
                "accuracy_nonanswer_coinflip": _ratio(correct + 0.5 * (items - answered), items),
            }
        )
    columns = [
        "model",
        "modality",
        "accuracy_answered",
        "accuracy_nonanswer_wrong",
        "accuracy_nonanswer_coinflip",
    ]
    return pd.DataFrame(rows, columns=columns)


# --- Human trials ---------------------------------------------------------------------------


def truth_map(truth) -> dict[str, str]:
    """dyad_id -> 'familiar' / 'stranger' from a mapping, a Series or a DESIGN-like frame.

    A frame must hold `dyad_id` and `relationship` columns (the DESIGN table does). Values are
    matched case-insensitively; anything else raises ValueError.
    """
    if isinstance(truth, pd.DataFrame):
        if not {"dyad_id", "relationship"} <= set(truth.columns):
            raise ValueError("a truth frame needs dyad_id and relationship columns")
        pairs = zip(truth["dyad_id"], truth["relationship"], strict=True)
    elif isinstance(truth, (Mapping, pd.Series)):
        pairs = truth.items()
    else:
        raise TypeError(f"truth must be a mapping, Series or DESIGN frame, not {type(truth).__name__}")
    out = {}
    for dyad, value in pairs:
        label = str(value).strip().lower()
        if label not in RELATIONSHIPS:
            raise ValueError(f"truth for dyad {dyad!r} is {value!r}, not one of {RELATIONSHIPS}")
        out[str(dyad)] = label
    return out


def trials_with_truth(trials: pd.DataFrame, truth) -> pd.DataFrame:
    """Validated TRIALS plus a `truth` column; checks `correct` agrees with response == truth."""
    frame = TRIALS.validate(trials)
    mapping = truth_map(truth)
    missing = sorted(set(frame["dyad_id"]) - set(mapping))
    if missing:
        raise ValueError(f"no truth for dyad(s) {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    frame["truth"] = frame["dyad_id"].map(mapping)
    disagree = frame["correct"].to_numpy() != (frame["response"] == frame["truth"]).to_numpy()
    if disagree.any():
        row = frame.iloc[int(np.flatnonzero(disagree)[0])]
        raise ValueError(
            f"trial rater={row['rater_id']} dyad={row['dyad_id']} modality={row['modality']}: "
            f"correct={row['correct']} but response={row['response']} and truth={row['truth']}"
        )
    return frame


def rater_predictions(trials: pd.DataFrame, truth) -> pd.DataFrame:
    """Each human rater as a 'model' named by rater id: a PREDICTIONS frame (no confidence)."""
    frame = trials_with_truth(trials, truth)
    out = pd.DataFrame(
        {
            "model": frame["rater_id"],
            "modality": frame["modality"],
            "item_id": frame["dyad_id"],
            "truth": frame["truth"],
            "label": frame["response"],
            "confidence": np.nan,
        }
    )
    return PREDICTIONS.validate(out.sort_values(["model", "modality", "item_id"], kind="stable"))


def majority_votes(trials: pd.DataFrame, truth, seed: int) -> pd.DataFrame:
    """The majority-vote record per (modality, dyad), ties included.

    Columns: modality, item_id, truth, n_raters, n_familiar, n_stranger, tie, label,
    vote_share (share of raters who gave `label`). Rows are in sorted (modality, item_id)
    order; ties are broken by one fair draw each from `numpy.random.default_rng(seed)`,
    taken in that order, so the record is the same for the same trials and seed.
    """
    frame = trials_with_truth(trials, truth)
    frame["is_familiar"] = frame["response"] == SIGNAL
    grouped = frame.groupby(["modality", "dyad_id"], sort=True).agg(
        truth=("truth", "first"), n_raters=("response", "size"), n_familiar=("is_familiar", "sum")
    )
    record = grouped.reset_index().rename(columns={"dyad_id": "item_id"})
    record["n_familiar"] = record["n_familiar"].astype("int64")
    record["n_stranger"] = record["n_raters"] - record["n_familiar"]
    record["tie"] = record["n_familiar"] == record["n_stranger"]
    labels = np.where(record["n_familiar"] > record["n_stranger"], SIGNAL, NOISE).astype(object)
    rng = np.random.default_rng(seed)
    ties = np.flatnonzero(record["tie"].to_numpy())
    labels[ties] = np.where(rng.random(len(ties)) < 0.5, SIGNAL, NOISE)
    record["label"] = labels
    chosen = np.where(labels == SIGNAL, record["n_familiar"], record["n_stranger"])
    record["vote_share"] = chosen / record["n_raters"]
    columns = [
        "modality",
        "item_id",
        "truth",
        "n_raters",
        "n_familiar",
        "n_stranger",
        "tie",
        "label",
        "vote_share",
    ]
    return record[columns]


def majority_vote(trials: pd.DataFrame, truth, seed: int) -> pd.DataFrame:
    """The human crowd as model 'human_majority': a PREDICTIONS frame.

    `confidence` is the vote share of the chosen label (0.5 on a tie). See `majority_votes`
    for the full record, which says which dyads were ties.
    """
    record = majority_votes(trials, truth, seed)
    out = pd.DataFrame(
        {
            "model": MAJORITY_MODEL,
            "modality": record["modality"],
            "item_id": record["item_id"],
            "truth": record["truth"],
            "label": record["label"],
            "confidence": record["vote_share"].astype(float),
        }
    )
    return PREDICTIONS.validate(out)
