"""Proactive reminders ("pr", docs/benchmarks/duplexeval.md#pr): per-event windows, judges and sample scores.

Proactive reminders (3.2, `reminder_scores`): for each event time t, the sentences whose
time (start; a point sentence's time) lies in [t, t + 10] inclusive (1e-9 s allowance) are
joined in time order with spaces and judged 0/1 by the judge callable; no text in the
window scores 0 without calling the judge. The sample scores 1 only if every event
scores 1. A sample without events (the correction split) is judged once on the whole
response, as the released scorer does.

Reminders (`score_pr`): `streaming.reminder_scores` with the item's reminder1/2; the text of
event k's window is judged against answer k (else answer1, else the question) by the
embedding judge's 0/1 "reminder" level, or by the keyword rule (`keyword_share` of the
reference's content words present). The detector baseline says the item's reminder
(answer1, else the question) at every detected change plus `latency_s`, so its scores
measure when it speaks, not what it says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from omnisocial.duplexeval.contracts import PR_EVENT_SCORES, PR_SCORES, RTD_SPLITS
from omnisocial.duplexeval.metrics import responses_by_item
from omnisocial.importing import nan_to_none

REMINDER_WINDOW_S = 10.0


EPS = 1e-9


def reminder_scores(
    events: Sequence[float],
    response_sentences: pd.DataFrame,
    judge: Callable[[str, float | None], int],
    window_s: float = REMINDER_WINDOW_S,
) -> dict:
    """Per-event 0/1 scores and the all-events-must-pass sample score (module doc).

    `response_sentences`: text and start (STREAM_RESPONSES rows of one item). `judge(text,
    event_time)` returns 0/1 (event_time None for the whole-response judgement). Returns
    {"events": frame(event_index, time, text, judged, score), "sample_score": 0/1}.
    """
    frame = response_sentences[["text", "start"]].copy()
    frame["start"] = frame["start"].astype(float)
    frame = frame.sort_values("start", kind="stable")

    def call(text: str, time: float | None) -> int:
        score = judge(text, time)
        if isinstance(score, (bool, np.bool_)):
            score = int(score)
        if score not in (0, 1):
            raise ValueError(f"judge must return 0 or 1, got {score!r}")
        return int(score)

    rows = []
    if len(events) == 0:
        text = " ".join(t.strip() for t in frame["text"] if str(t).strip()).strip()
        score = call(text, None) if text else 0
        rows.append({"event_index": 0, "time": None, "text": text, "judged": bool(text), "score": score})
    for index, t in enumerate(events):
        t = float(t)
        inside = frame[(frame["start"] >= t - EPS) & (frame["start"] <= t + window_s + EPS)]
        text = " ".join(s.strip() for s in inside["text"] if str(s).strip()).strip()
        score = call(text, t) if text else 0
        rows.append({"event_index": index, "time": t, "text": text, "judged": bool(text), "score": score})
    table = pd.DataFrame(rows, columns=["event_index", "time", "text", "judged", "score"])
    return {"events": table, "sample_score": int(bool(len(table)) and bool((table["score"] == 1).all()))}


def reminder_judge(judge=None, rule: str = "embedding", keyword_share: float = 0.5, keyword_match=None):
    """A 0/1 judge(text, reference) for reminders: the judge's 'reminder' level, or the keyword rule."""
    if rule == "embedding":
        if judge is None:
            raise ValueError("reminder_judge embedding needs a judge")
        return lambda text, reference: int(judge.score(text, [reference], "reminder").score)
    if rule == "keyword":
        if keyword_match is None:
            raise ValueError("reminder_judge keyword needs keyword_match")
        return lambda text, reference: int(keyword_match(text, reference) >= keyword_share - EPS)
    raise ValueError(f"unknown reminder judge {rule!r}; expected embedding or keyword")


def score_pr(
    responses: pd.DataFrame,
    items: pd.DataFrame,
    judge: Callable[[str, str], int],
    models: Sequence[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Proactive reminders with `streaming.reminder_scores` (module doc): per event and per
    sample; `models` are scored on every item even without a sentence (no text in any window:
    every event 0 without a judge call, as released)."""
    pr_items = items[items["task"] == "PR"]
    pr = responses[~responses["split"].isin(RTD_SPLITS)]
    event_rows, sample_rows = [], []
    for model, item, own in responses_by_item(pr, pr_items, models):
        times = [float(t) for t in (item["reminder1"], item["reminder2"]) if nan_to_none(t) is not None]
        references = [str(item["answer1"] or ""), str(item["answer2"] or "")]

        def call(text: str, time: float | None, item=item, times=times, references=references) -> int:
            k = times.index(time) if time in times else 0
            reference = references[k].strip() or references[0].strip() or str(item["question_text"])
            return judge(text, reference)

        result = reminder_scores(times, own[["text", "start"]], call)
        table = result["events"]
        for row in table.to_dict("records"):
            event_rows.append({"model": model, "split": item["split"], "item_id": item["item_id"], **row})
        sample_rows.append(
            {
                "model": model,
                "split": item["split"],
                "item_id": item["item_id"],
                "n_events": len(times),
                "n_passed": int((table["score"] == 1).sum()),
                "sample_score": result["sample_score"],
            }
        )
    return (
        PR_EVENT_SCORES.validate(pd.DataFrame(event_rows, columns=PR_EVENT_SCORES.names)),
        PR_SCORES.validate(pd.DataFrame(sample_rows, columns=PR_SCORES.names)),
    )
