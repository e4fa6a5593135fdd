"""The streaming benchmark's items in the results explorer (omnisocial.explorer): one item per
video, with the whole video, its ground-truth events and reminder times on the timeline, each
model's timestamped sentences (a track each), the judge windows of its sentences and their
scores (RTD), each reminder event with what the model said inside its window and the score it
got (PR), and each LLM judge's item score.

Flags: `models_disagree` when the models' item scores (RTD temporal score, PR sample score)
differ; `judges_disagree` when two LLM judges' scores of one model's item differ by more than
1 point on the 0-3 scale (RTD) or at all (PR: 0 / 1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from omnisocial.duplexeval.contracts import (
    PR_EVENT_SCORES,
    PR_REPLY_ITEMS,
    PR_SCORES,
    RTD_REPLY_ITEMS,
    RTD_SCORES,
    RTD_SENTENCES,
    STREAM_EVENTS,
    STREAM_ITEMS,
    STREAM_RESPONSES,
)
from omnisocial.explorer import answer
from omnisocial.io import read_csv_strings

RTD_JUDGE_SPREAD = 1.0  # points on the 0-3 scale
JUDGES_MEAN = "all"  # judged.judge_scores' row of the judges' mean


def _num(value):
    return None if value is None or pd.isna(value) else float(value)


def _all(contract, paths) -> pd.DataFrame:
    frames = [contract.read(p) for p in paths or []]
    return pd.concat(frames, ignore_index=True) if frames else contract.empty()


def _one(contract, path) -> pd.DataFrame:
    return contract.read(path) if path else contract.empty()


def _judged(contract, path) -> pd.DataFrame:
    """A judge score table (the contract's columns after a leading `judge`), without the judges'
    mean rows (`all`): the page shows each judge."""
    if not path:
        return contract.empty().assign(judge=pd.Series(dtype=str))
    frame = read_csv_strings(path)
    frame = frame[frame["judge"] != JUDGES_MEAN]
    parts = [  # the contract's key holds within one judge
        contract.validate(group.drop(columns="judge"), f"{path} (judge {judge})").assign(judge=judge)
        for judge, group in frame.groupby("judge", sort=True)
    ]
    return (
        pd.concat(parts, ignore_index=True) if parts else contract.empty().assign(judge=pd.Series(dtype=str))
    )


def explorer_items(inputs: Mapping[str, object], duplexeval_root: str | os.PathLike) -> list[dict]:
    """Items from the benchmark's tables. `inputs`: stream_items, stream_events, responses (list
    of STREAM_RESPONSES tables: baselines, imported, streamed models), rtd_sentences, rtd_scores,
    pr_event_scores, pr_scores; optional rtd_judge_scores, pr_judge_scores."""
    root = Path(duplexeval_root)
    items_table = STREAM_ITEMS.read(inputs["stream_items"])
    events = STREAM_EVENTS.read(inputs["stream_events"])
    responses = _all(STREAM_RESPONSES, inputs.get("responses"))
    sentences = _one(RTD_SENTENCES, inputs.get("rtd_sentences"))
    rtd = _one(RTD_SCORES, inputs.get("rtd_scores"))
    pr_events = _one(PR_EVENT_SCORES, inputs.get("pr_event_scores"))
    pr = _one(PR_SCORES, inputs.get("pr_scores"))
    rtd_judges = _judged(RTD_REPLY_ITEMS, inputs.get("rtd_judge_scores"))
    pr_judges = _judged(PR_REPLY_ITEMS, inputs.get("pr_judge_scores"))

    out = []
    for item in items_table.to_dict("records"):
        key = (item["split"], item["item_id"])

        def mine(table: pd.DataFrame, key=key) -> pd.DataFrame:
            return table[(table["split"] == key[0]) & (table["item_id"] == key[1])]

        own_events = mine(events).sort_values("event_index", kind="stable")
        duration = _num(item["video_duration"]) or float(
            max([*own_events["t"], *mine(responses)["end"], 1.0])
        )
        tracks = [
            {
                "label": "events (truth)",
                "points": [
                    [t, text, "gold"] for t, text in zip(own_events["t"], own_events["text"], strict=True)
                ],
            }
        ]
        marks = [
            [item[f"reminder{n}"], f"reminder {n}"] for n in (1, 2) if _num(item[f"reminder{n}"]) is not None
        ]
        answers, model_scores, spread = [], set(), False
        said = mine(responses)
        judged_sentences = mine(sentences)
        for model, group in said.groupby("model", sort=True):
            group = group.sort_values("sentence_index", kind="stable")
            tracks.append(
                {
                    "label": f"{model}: said",
                    "spans": [
                        [s, max(e, s), t, "speech"]
                        for s, e, t in zip(group["start"], group["end"], group["text"], strict=True)
                    ],
                }
            )
            windows = judged_sentences[judged_sentences["model"] == model]
            if len(windows):
                tracks.append(
                    {
                        "label": f"{model}: judge windows",
                        "spans": [
                            [ws, we, f"sentence {i}: temporal {ts}", "window"]
                            for ws, we, i, ts in zip(
                                windows["window_start"],
                                windows["window_end"],
                                windows["sentence_index"],
                                windows["temporal_score"],
                                strict=True,
                            )
                            if _num(ws) is not None and _num(we) is not None
                        ],
                    }
                )
            for row in group.to_dict("records"):
                scored = windows[windows["sentence_index"] == row["sentence_index"]]
                detail = ""
                if len(scored):
                    s = scored.iloc[0]
                    detail = (
                        f" | window {s['window_start']}-{s['window_end']} s,"
                        f" temporal {s['temporal_score']}, relevant {s['is_relevant']}"
                    )
                answers.append(
                    answer(
                        model,
                        "model",
                        "stream",
                        f"{row['start']:.1f} s",
                        score=_num(scored.iloc[0]["temporal_score"]) if len(scored) else None,
                        text=row["text"] + detail,
                    )
                )
        for row in mine(rtd).to_dict("records"):
            model_scores.add(row["temporal_score"])
            answers.append(
                answer(
                    row["model"],
                    "model",
                    "item score",
                    "RTD temporal",
                    score=row["temporal_score"],
                    text=f"{row['n_relevant']} of {row['n_sentences']} sentences relevant;"
                    f" content {row['content_score']}",
                )
            )
        for row in mine(pr_events).to_dict("records"):
            answers.append(
                answer(
                    row["model"],
                    "model",
                    "reminder",
                    f"event {row['event_index']} at {row['time']:.1f} s",
                    correct=bool(row["score"]) if row["judged"] else None,
                    status="answered" if row["judged"] else "",
                    reason="" if row["judged"] else "not judged",
                    score=_num(row["score"]),
                    text=f"said within the window: {row['text'] or '(nothing)'}",
                )
            )
        for row in mine(pr).to_dict("records"):
            model_scores.add(row["sample_score"])
        for judges, column, limit in (
            (rtd_judges, "temporal_score", RTD_JUDGE_SPREAD),
            (pr_judges, "sample_score", 0.0),
        ):
            own = mine(judges)
            for _, group in own.groupby("model", sort=True):
                given = group[column].dropna()
                spread = spread or (len(given) > 1 and float(given.max() - given.min()) > limit)
            for row in own.to_dict("records"):
                answers.append(
                    answer(
                        f"{row['judge']} on {row['model']}",
                        "judge",
                        item["task"],
                        column,
                        status="failed" if row["n_judge_failed"] else "answered",
                        reason=f"{row['n_judge_failed']} judge call(s) failed"
                        if row["n_judge_failed"]
                        else "",
                        score=_num(row[column]),
                    )
                )
        out.append(
            {
                "id": f"streaming:{item['split']}:{item['item_id']}",
                "benchmark": "streaming",
                "title": f"{item['split']} {item['item_id']}: {item['question_text']}",
                "truth": item["answer1"],
                "modalities": ["video"],
                "media": [
                    {
                        "kind": "video",
                        "label": "the streamed video",
                        "src": str(root / item["video"]),
                        "start": 0.0,
                        "end": None,
                    }
                ],
                "question": item["question_text"],
                "answers": answers,
                "timeline": {"start": 0.0, "end": duration, "tracks": tracks, "marks": marks},
                "facts": [
                    ("split", item["split"]),
                    ("task", item["task"]),
                    ("reference", item["answer1"]),
                    ("events", len(own_events)),
                ],
                "difficulty": None,
                "flags": {"models_disagree": len(model_scores) > 1, "judges_disagree": spread},
            }
        )
    return out
