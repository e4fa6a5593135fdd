"""Tolerance-window precision / recall / F1 of predicted against true event times.

Used by the SocialOmni streaming when protocol (response time against turn end) and by the
Omni-DuplexEval detector baseline (detections against every ground-truth change).

Predicted and true times are matched one-to-one when |p - t| <= delta (inclusive, 1e-9 s
allowance), greedily by increasing distance (ties: earlier true time, then earlier
prediction). Greedy matching can find fewer pairs than an optimal assignment in crowded
cases; it is deterministic and needs no solver. precision = matches / predictions,
recall = matches / true times, F1 = 2PR / (P + R); a ratio with a zero denominator is 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

EPS = 1e-9


def tolerance_prf(
    predicted_times: Sequence[float], true_times: Sequence[float], deltas: Sequence[float] = (0.2, 0.5, 1.0)
) -> pd.DataFrame:
    """Precision, recall and F1 of predicted event times within +/- delta, one row per delta (module doc)."""
    predicted = np.asarray(list(predicted_times), dtype=float)
    truth = np.asarray(list(true_times), dtype=float)
    if not (np.isfinite(predicted).all() and np.isfinite(truth).all()):
        raise ValueError("times must be finite")
    rows = []
    for delta in deltas:
        if delta < 0:
            raise ValueError(f"delta must be >= 0, got {delta}")
        tp = _greedy_matches(predicted, truth, float(delta))
        precision = tp / len(predicted) if len(predicted) else 0.0
        recall = tp / len(truth) if len(truth) else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        rows.append(
            {
                "delta": float(delta),
                "n_pred": len(predicted),
                "n_true": len(truth),
                "tp": tp,
                "precision": precision,
                "recall": recall,
                "f1": f1,
            }
        )
    return pd.DataFrame(rows)


def _greedy_matches(predicted: np.ndarray, truth: np.ndarray, delta: float) -> int:
    pairs = [
        (abs(p - t), truth[j], predicted[i], i, j)
        for i, p in enumerate(predicted)
        for j, t in enumerate(truth)
        if abs(p - t) <= delta + EPS
    ]
    pairs.sort()
    used_p, used_t = set(), set()
    for _, _, _, i, j in pairs:
        if i not in used_p and j not in used_t:
            used_p.add(i)
            used_t.add(j)
    return len(used_p)
