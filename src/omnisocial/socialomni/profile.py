"""The per-model who / when / how profile and its perception and generation ranks.

`social_profile` combines only this benchmark's tasks (who accuracy, single-cut and
streaming when, how score); it uses nothing of the Omni-DuplexEval streaming scores, so it
lives in the SocialOmni package (rule `socialomni_profile`, output
`metrics/social_profile.csv`, name kept for the workflow's outputs).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def social_profile(
    who_summary: pd.DataFrame,
    when_breakdown: pd.DataFrame,
    when_rates: pd.DataFrame,
    when_prf: pd.DataFrame,
    how: pd.DataFrame,
    delta: float = 0.5,
) -> pd.DataFrame:
    """One row per model: who accuracy, when accuracy and timing, how score, and the two ranks.

    Perception rank orders models by who accuracy, generation rank by the how mean over
    judges (judged scores, zeros kept); 1 = best, ties share the average rank.
    """

    def first(frame: pd.DataFrame, column: str, **where) -> float:
        """The column's value in the first row matching `where` (NaN when none)."""
        if frame.empty or column not in frame.columns:
            return math.nan
        mask = np.ones(len(frame), dtype=bool)
        for key, value in where.items():
            values = frame[key].to_numpy()
            mask &= np.isclose(values.astype(float), value) if isinstance(value, float) else values == value
        picked = frame.loc[mask, column]
        return float(picked.iloc[0]) if len(picked) else math.nan

    tables = (who_summary, when_breakdown, when_rates, how)
    models = sorted(set().union(*(set(t["model"]) for t in tables if "model" in t.columns)))
    rows = []
    for model in models:
        rows.append(
            {
                "model": model,
                "who_accuracy": first(who_summary, "accuracy", model=model),
                "who_consistency_gap": first(who_summary, "consistency_gap", model=model),
                "when_accuracy": first(when_breakdown, "accuracy", model=model, breakdown="overall"),
                "when_on_time": first(when_rates, "on_time", model=model),
                "when_early": first(when_rates, "early", model=model),
                "when_late": first(when_rates, "late", model=model),
                "when_f1": first(when_prf, "f1", model=model, delta=float(delta)),
                "how_mean": first(how, "mean_with_zeros", model=model, scoring="judged", judge="all"),
                "how_mean_without_zeros": first(
                    how, "mean_without_zeros", model=model, scoring="judged", judge="all"
                ),
            }
        )
    profile = pd.DataFrame(rows)
    if profile.empty:
        return pd.DataFrame(columns=["model", "perception_rank", "generation_rank"])
    profile["perception_rank"] = profile["who_accuracy"].rank(ascending=False, method="average")
    profile["generation_rank"] = profile["how_mean"].rank(ascending=False, method="average")
    return profile
