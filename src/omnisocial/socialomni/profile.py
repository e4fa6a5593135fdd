"""The per-model who / when / how profile, its uncertainty and its perception and generation ranks.

`social_profile` combines only this benchmark's tasks (who accuracy, single-cut and
streaming when, how score); it uses nothing of the Omni-DuplexEval streaming scores, so it
lives in the SocialOmni package (rule `socialomni_profile`, output
`metrics/social_profile.csv`, contract `SOCIAL_PROFILE`, name kept for the workflow's outputs).

Every rate comes with the counts behind it and a 95% interval:
- who accuracy, single-cut when accuracy and the streaming on-time rate are proportions
  (correct / items, Perfect / items); their intervals are Wilson score intervals
  (`stats.sdt.wilson_interval`) of those counts, computed here from the counts;
- the how score is a mean over items of each item's mean over judges (judged scores,
  zeros kept, as `how.aggregate_how`'s judge "all"); its interval is the t interval
  mean +- t(0.975, n - 1) * sd / sqrt(n) over those per-item scores, clipped to the score
  range [0, 100] (zero width when every item scored the same); it needs the per-item
  judgements (`how_items`, HOW_JUDGEMENTS) and is empty without them or with fewer than
  two items; judgements that disagree with the how table (other items or another mean)
  raise ValueError.
A model not run on a task has empty values, counts and bounds for it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from omnisocial.socialomni.contracts import SOCIAL_PROFILE
from omnisocial.socialomni.how import item_means
from omnisocial.stats.sdt import wilson_interval

# scipy is imported in the functions that use it: scipy.stats costs ~1.3 s CPU per job start

HOW_RANGE = (0.0, 100.0)


def _row(frame: pd.DataFrame, **where) -> dict:
    """The first row of `frame` matching `where` as a dict ({} when none)."""
    if frame is None or frame.empty or any(key not in frame.columns for key in where):
        return {}
    mask = np.ones(len(frame), dtype=bool)
    for key, value in where.items():
        values = frame[key].to_numpy()
        mask &= np.isclose(values.astype(float), value) if isinstance(value, float) else values == value
    picked = frame.loc[mask]
    return picked.iloc[0].to_dict() if len(picked) else {}


def _number(row: dict, column: str) -> float:
    value = row.get(column)
    return math.nan if value is None or pd.isna(value) else float(value)


def _count(row: dict, column: str) -> int | None:
    value = _number(row, column)
    return None if math.isnan(value) else int(value)


def _wilson(k: int | None, n: int | None) -> tuple[float, float]:
    return (math.nan, math.nan) if k is None or not n else wilson_interval(k, n)


def mean_t_interval(
    values, level: float = 0.95, bounds: tuple[float, float] = HOW_RANGE
) -> tuple[float, float]:
    """t interval of the mean of `values` (NaN, NaN with fewer than two), clipped to `bounds`."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < 2:
        return (math.nan, math.nan)
    mean = float(values.mean())
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * float(values.std(ddof=1)) / math.sqrt(n)
    return (max(bounds[0], mean - half), min(bounds[1], mean + half))


def how_item_scores(judgements: pd.DataFrame | None) -> dict[str, pd.Series]:
    """model -> each item's mean over the judges' valid scores (items no judge scored left out)."""
    if judgements is None or judgements.empty:
        return {}
    frame = judgements[["model", "item_id", "score"]].copy()
    frame["score"] = pd.to_numeric(frame["score"], errors="raise").astype(float)
    return {model: item_means(group).dropna() for model, group in frame.groupby("model", sort=True)}


def _how_columns(how_row: dict, scores: pd.Series | None) -> dict:
    """how_mean, how_n, how_sd and the t interval; `scores`: the per-item scores (None: not given)."""
    mean, n = _number(how_row, "mean_with_zeros"), _count(how_row, "n_items")
    out = {
        "how_mean": mean,
        "how_n": n,
        "how_sd": math.nan,
        "how_mean_low": math.nan,
        "how_mean_high": math.nan,
    }
    if scores is None or math.isnan(mean):
        return out
    if len(scores) != n or not math.isclose(float(scores.mean()), mean, rel_tol=1e-9, abs_tol=1e-9):
        raise ValueError(
            f"how judgements of {how_row.get('model')!r} ({len(scores)} items, mean "
            f"{float(scores.mean()) if len(scores) else math.nan:.4g}) do not match the how table "
            f"({n} items, mean {mean:.4g}): are both from the same run?"
        )
    low, high = mean_t_interval(scores.to_numpy())
    sd = float(scores.std(ddof=1)) if len(scores) > 1 else math.nan
    return out | {"how_sd": sd, "how_mean_low": low, "how_mean_high": high}


def social_profile(
    who_summary: pd.DataFrame,
    when_breakdown: pd.DataFrame,
    when_rates: pd.DataFrame,
    when_prf: pd.DataFrame,
    how: pd.DataFrame,
    delta: float = 0.5,
    how_items: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per model (SOCIAL_PROFILE): each task's rate or score, counts, 95% interval, and the ranks.

    `who_summary`: who_metrics (per model and modality: n, n_correct, accuracy); `when_breakdown`:
    the single-cut ACCURACY_BREAKDOWN (its overall row); `when_rates`: streaming rates (n,
    n_Perfect, on_time, early, late); `when_prf`: tolerance P/R/F1 (the row at `delta`); `how`:
    how_metrics (judged scoring, judge "all"); `how_items`: the HOW_JUDGEMENTS behind `how`,
    for the how interval (module doc). A model's first row in each table is used.

    Perception rank orders models by who accuracy, generation rank by the how mean over
    judges (judged scores, zeros kept); 1 = best, ties share the average rank.
    """
    tables = (who_summary, when_breakdown, when_rates, how)
    models = sorted(set().union(*(set(t["model"]) for t in tables if "model" in t.columns)))
    item_scores = how_item_scores(how_items)
    rows = []
    for model in models:
        who = _row(who_summary, model=model)
        when = _row(when_breakdown, model=model, breakdown="overall")
        rates = _row(when_rates, model=model)
        how_row = _row(how, model=model, scoring="judged", judge="all")
        who_n, who_k = _count(who, "n"), _count(who, "n_correct")
        when_n, when_k = _count(when, "n"), _count(when, "n_correct")
        stream_n, on_time_k = _count(rates, "n"), _count(rates, "n_Perfect")
        scores = item_scores.get(model, pd.Series(dtype=float)) if how_items is not None else None
        rows.append(
            {
                "model": model,
                "who_accuracy": _number(who, "accuracy"),
                "who_n": who_n,
                "who_correct": who_k,
                **dict(zip(("who_accuracy_low", "who_accuracy_high"), _wilson(who_k, who_n), strict=True)),
                "who_consistency_gap": _number(who, "consistency_gap"),
                "when_accuracy": _number(when, "accuracy"),
                "when_n": when_n,
                "when_correct": when_k,
                **dict(
                    zip(("when_accuracy_low", "when_accuracy_high"), _wilson(when_k, when_n), strict=True)
                ),
                "when_on_time": _number(rates, "on_time"),
                "when_stream_n": stream_n,
                "when_on_time_count": on_time_k,
                **dict(
                    zip(("when_on_time_low", "when_on_time_high"), _wilson(on_time_k, stream_n), strict=True)
                ),
                "when_early": _number(rates, "early"),
                "when_late": _number(rates, "late"),
                "when_f1": _number(_row(when_prf, model=model, delta=float(delta)), "f1"),
                **_how_columns(how_row, scores),
                "how_mean_without_zeros": _number(how_row, "mean_without_zeros"),
            }
        )
    if not rows:
        return SOCIAL_PROFILE.empty()
    profile = pd.DataFrame(rows)
    profile["perception_rank"] = profile["who_accuracy"].rank(ascending=False, method="average")
    profile["generation_rank"] = profile["how_mean"].rank(ascending=False, method="average")
    return SOCIAL_PROFILE.validate(profile)
