"""Summaries of the streaming scores: responses per (model, item) and the per-split metrics table.

`streaming_metrics`: per model and split (and 'all'), mean temporal / content scores and
reminder success on a 0-100 scale, from `description.score_rtd` and `reminders.score_pr`.
"""

from __future__ import annotations

import math

import pandas as pd


def responses_by_item(responses: pd.DataFrame, items: pd.DataFrame) -> list[tuple[str, dict, pd.DataFrame]]:
    """(model, item, that model's sentences for it) for every model with responses and every item."""
    out = []
    for model in sorted(responses["model"].unique()):
        own = responses[responses["model"] == model]
        for item in items.to_dict("records"):
            mask = (own["split"] == item["split"]) & (own["item_id"] == item["item_id"])
            out.append((model, item, own[mask].sort_values("start", kind="stable")))
    return out


def streaming_metrics(rtd: pd.DataFrame, pr: pd.DataFrame) -> pd.DataFrame:
    """Per model and split (and 'all'): mean temporal / content scores and reminder success, 0-100."""
    rows = []
    for model in sorted(set(rtd["model"]) | set(pr["model"])):
        r, p = rtd[rtd["model"] == model], pr[pr["model"] == model]
        for split in sorted(set(r["split"]) | set(p["split"])) + ["all"]:
            rs = r if split == "all" else r[r["split"] == split]
            ps = p if split == "all" else p[p["split"] == split]
            rows.append(
                {
                    "model": model,
                    "split": split,
                    "n_rtd": len(rs),
                    "temporal_100": float(rs["temporal_100"].mean()) if len(rs) else math.nan,
                    "content_100": float(rs["content_100"].mean()) if len(rs) else math.nan,
                    "irrelevant_duration_ratio": float(rs["irrelevant_duration_ratio"].mean())
                    if len(rs)
                    else math.nan,
                    "first_relevant_offset": float(rs["first_relevant_offset"].mean())
                    if len(rs)
                    else math.nan,
                    "n_pr": len(ps),
                    "reminder_100": 100 * float(ps["sample_score"].mean()) if len(ps) else math.nan,
                    "reminder_event_100": 100 * float(ps["n_passed"].sum() / ps["n_events"].sum())
                    if len(ps) and ps["n_events"].sum()
                    else math.nan,
                }
            )
    columns = ["model", "split", "n_rtd", "temporal_100", "content_100", "irrelevant_duration_ratio"]
    columns += ["first_relevant_offset", "n_pr", "reminder_100", "reminder_event_100"]
    return pd.DataFrame(rows, columns=columns)
