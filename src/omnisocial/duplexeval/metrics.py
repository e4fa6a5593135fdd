"""Summaries of the streaming scores: responses per (model, item) and the per-split metrics table.

`responses_by_item`: the models to score are those with sentences plus any named in `models`
(a streamed model that never spoke, or whose every reply was unparsed, has no sentence row
but is scored all the same: as an empty response, which the released scorers score 0).

`streaming_metrics`: per model and split (and 'all'), mean temporal / content scores and
reminder success on a 0-100 scale, from `description.score_rtd` and `reminders.score_pr`;
with `stream_counts` (`stream_step_counts` of the streamed models' steps), the steps each
streamed model was asked and how many of its replies were silence or unparsed, beside its
scores (empty for models that were not streamed here: baselines, imported responses).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from omnisocial.streaming.protocol import SILENCE, UNPARSED

STREAM_COUNT_COLUMNS = ("n_stream_steps", "n_silent_steps", "n_unparsed_steps")


def responses_by_item(
    responses: pd.DataFrame, items: pd.DataFrame, models: Iterable[str] = ()
) -> list[tuple[str, dict, pd.DataFrame]]:
    """(model, item, that model's sentences for it) for every model with responses or named in
    `models` (module doc), and every item."""
    out = []
    for model in sorted(set(responses["model"].astype(str)) | {str(m) for m in models}):
        own = responses[responses["model"] == model]
        for item in items.to_dict("records"):
            mask = (own["split"] == item["split"]) & (own["item_id"] == item["item_id"])
            out.append((model, item, own[mask].sort_values("start", kind="stable")))
    return out


def stream_step_counts(steps: pd.DataFrame) -> pd.DataFrame:
    """Per streamed model and split (and 'all'): steps asked, silent and unparsed replies, from
    the streamed models' steps tables (`duplexeval.streamed.DUPLEX_STREAM_STEPS` rows)."""
    rows = []
    for (model, split), group in _with_all(steps).groupby(["model", "split"], sort=True):
        kinds = group["kind"]
        rows.append(
            {
                "model": model,
                "split": split,
                "n_stream_steps": len(group),
                "n_silent_steps": int((kinds == SILENCE).sum()),
                "n_unparsed_steps": int((kinds == UNPARSED).sum()),
            }
        )
    return pd.DataFrame(rows, columns=["model", "split", *STREAM_COUNT_COLUMNS])


def _with_all(steps: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([steps, steps.assign(split="all")], ignore_index=True)


def streaming_metrics(
    rtd: pd.DataFrame, pr: pd.DataFrame, stream_counts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per model and split (and 'all'): mean temporal / content scores and reminder success,
    0-100; the streamed models' step counts beside them (module doc)."""
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
    table = pd.DataFrame(rows, columns=columns)
    counts = stream_counts if stream_counts is not None else pd.DataFrame(columns=["model", "split"])
    table = table.merge(counts, on=["model", "split"], how="left", validate="one_to_one")
    for column in STREAM_COUNT_COLUMNS:
        if column not in table:
            table[column] = pd.NA
        table[column] = table[column].astype("Int64")  # empty: not streamed here
    return table
