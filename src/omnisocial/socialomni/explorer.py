"""The who / when / how benchmark's items in the results explorer (omnisocial.explorer).

- who: the question, its options and the gold letter; the video up to the query time (what the
  causal protocol shows a model), the clip's turns on a timeline with the asked interval; each
  model's raw reply and parsed letter (unparseable and failed replies shown with their error);
- when (single cut): the question, YES / NO and the gold; the video up to the cut, the gold turn
  end on the timeline; each model's reply;
- when (streamed): one item per turn transition: the video over the streamed span, each
  model's first speak-now decision on the timeline against the gold turn end, its offset and
  timing label;
- how: the question and the reference utterance; each model's reply and each judge's score and
  rationale (a failed judge call shown as such, never as 0).

Flags: `models_disagree` when models' parsed answers differ (timing labels, for streamed when);
`judges_disagree` when two judges' scores of one reply differ by more than 25 points (one step
of the 0/25/50/75/100 scale).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from omnisocial.explorer import answer
from omnisocial.socialomni.contracts import (
    HOW_JUDGEMENTS,
    LETTERS,
    REPLIES,
    TURNS,
    WHEN_ITEMS,
    WHEN_SCORES,
    WHEN_STREAM_ITEMS,
    WHEN_STREAM_SCORES,
    WHO_ITEMS,
    WHO_SCORES,
)
from omnisocial.streaming.contracts import STREAM_STEPS

JUDGE_SPREAD = 25.0  # points: more than one step of the how scale apart


def _num(value):
    return None if value is None or pd.isna(value) else float(value)


def _clip_of(metadata_json: str, fallback: str) -> str:
    try:
        return str(json.loads(metadata_json or "{}").get("clip_id") or fallback)
    except json.JSONDecodeError:
        return fallback


def _turn_tracks(turns: pd.DataFrame, clip: str) -> tuple[list[dict], str, float]:
    """Timeline tracks (one per speaker), the transcript and the last turn's end of a clip."""
    rows = turns[turns["clip_id"] == clip].sort_values("start", kind="stable")
    tracks = [
        {
            "label": speaker,
            "spans": [[s, e, t, "speech"] for s, e, t in zip(g["start"], g["end"], g["text"], strict=True)],
        }
        for speaker, g in rows.groupby("speaker", sort=False)
    ]
    transcript = "\n".join(
        f"[{s:.1f}-{e:.1f} s] {sp}: {t}"
        for s, e, sp, t in rows[["start", "end", "speaker", "text"]].itertuples(index=False)
    )
    return tracks, transcript, float(rows["end"].max()) if len(rows) else 0.0


def _status(reply) -> tuple[str, str]:
    if reply is None:
        return "", ""
    return ("answered", "") if reply["ok"] else ("failed", str(reply["error"]))


def _scored_answer(score: Mapping, reply, status: str, reason: str) -> dict:
    """A model's scored who / when answer: its prediction, whether correct, and its reply's text."""
    return answer(
        score["model"],
        "model",
        score["modality"],
        score["prediction"],
        correct=bool(score["correct"]),
        status=status,
        reason=reason,
        text=reply["reply"] if reply else "",
    )


def explorer_items(inputs: Mapping[str, object], socialomni_root: str | os.PathLike) -> list[dict]:
    """Items from the benchmark's tables. `inputs`: who_items, when_items, when_stream_items,
    turns, who_scores, when_single_scores, when_stream_scores, replies (list of REPLIES tables),
    how_judgements and stream_steps (each streamed registry model's steps table; both optional);
    videos are found under `socialomni_root`."""
    root = Path(socialomni_root)
    who = WHO_ITEMS.read(inputs["who_items"])
    when = WHEN_ITEMS.read(inputs["when_items"])
    stream_items = WHEN_STREAM_ITEMS.read(inputs["when_stream_items"])
    turns = TURNS.read(inputs["turns"])
    who_scores = WHO_SCORES.read(inputs["who_scores"])
    when_scores = WHEN_SCORES.read(inputs["when_single_scores"])
    stream_scores = WHEN_STREAM_SCORES.read(inputs["when_stream_scores"])
    steps = pd.concat(
        [STREAM_STEPS.read(p) for p in inputs.get("stream_steps", [])] or [STREAM_STEPS.empty()]
    )
    steps_of = {key: g.sort_values("step") for key, g in steps.groupby(["model", "item_id"], sort=False)}
    replies = pd.concat(
        [REPLIES.read(p) for p in inputs.get("replies", [])] or [REPLIES.empty()], ignore_index=True
    )
    judged = (
        HOW_JUDGEMENTS.read(inputs["how_judgements"])
        if inputs.get("how_judgements")
        else HOW_JUDGEMENTS.empty()
    )
    reply_of = {(r["model"], r["modality"], r["task"], r["item_id"]): r for r in replies.to_dict("records")}
    items: list[dict] = []

    for item in who.to_dict("records"):
        clip = _clip_of(item["metadata_json"], Path(item["video_path"]).stem)
        tracks, transcript, last = _turn_tracks(turns, clip)
        options = [item[f"option_{x.lower()}"] for x in LETTERS if item[f"option_{x.lower()}"]]
        query_end = _num(item["query_time"])
        answers, letters = [], set()
        for score in who_scores[who_scores["item_id"] == item["item_id"]].to_dict("records"):
            reply = reply_of.get((score["model"], score["modality"], "who", item["item_id"]))
            status, reason = _status(reply)
            if status == "answered" and not score["parsed"]:
                status, reason = "unparsed", "no option letter in the reply"
            if score["prediction"]:
                letters.add(score["prediction"])
            reason = reason or (f"error type: {score['error_type']}" if not score["correct"] else "")
            answers.append(_scored_answer(score, reply, status, reason))
        window = (
            [[_num(item["query_start"]) or 0.0, query_end, "asked interval", "window"]] if query_end else []
        )
        items.append(
            {
                "id": f"who:{item['item_id']}",
                "benchmark": "who",
                "title": f"who {item['item_id']}: {item['speaker']} ({item['consistency']})",
                "truth": item["correct_answer"],
                "modalities": ["video"],
                "media": [
                    {
                        "kind": "video",
                        "label": "clip as the models saw it",
                        "src": str(root / item["video_path"]),
                        "start": 0.0,
                        "end": query_end,
                    }
                ],
                "question": item["question"],
                "options": options,
                "transcript": transcript,
                "answers": answers,
                "timeline": {
                    "start": 0.0,
                    "end": max(last, query_end or 0.0),
                    "tracks": [*tracks, {"label": "asked", "spans": window}],
                    "marks": [],
                },
                "facts": [
                    ("clip", clip),
                    ("gold", f"{item['correct_answer']}. {item['option_' + item['correct_answer'].lower()]}"),
                    ("domain", f"{item['domain']} / {item['subcategory']}"),
                ],
                "difficulty": None,
                "flags": {"models_disagree": len(letters) > 1},
            }
        )

    for item in when.to_dict("records"):
        clip = _clip_of(item["metadata_json"], Path(item["video_path"]).stem)
        meta = json.loads(item["metadata_json"] or "{}")
        tracks, transcript, last = _turn_tracks(turns, clip)
        answers, said = [], set()
        for score in when_scores[when_scores["item_id"] == item["item_id"]].to_dict("records"):
            reply = reply_of.get((score["model"], score["modality"], "when", item["item_id"]))
            status, reason = _status(reply)
            if status == "answered" and not score["parsed"]:
                status, reason = "unparsed", "no YES / NO in the reply"
            said.add(score["prediction"])
            answers.append(_scored_answer(score, reply, status, reason))
        marks = [[item["cut_time"], "cut"]] + (
            [[meta["turn_end"], "turn end (gold)"]] if "turn_end" in meta else []
        )
        items.append(
            {
                "id": f"when:{item['item_id']}",
                "benchmark": "when",
                "title": f"when {item['item_id']}: should {item['target'] or 'the target'}"
                f" speak at {item['cut_time']:.1f} s?",
                "truth": item["gold"],
                "modalities": ["video"],
                "media": [
                    {
                        "kind": "video",
                        "label": "clip up to the cut",
                        "src": str(root / item["video_path"]),
                        "start": 0.0,
                        "end": item["cut_time"],
                    }
                ],
                "question": item["question"],
                "options": [item["option_a"], item["option_b"]],
                "transcript": transcript,
                "answers": answers,
                "timeline": {
                    "start": 0.0,
                    "end": max(last, item["cut_time"]),
                    "tracks": tracks,
                    "marks": marks,
                },
                "facts": [
                    ("clip", clip),
                    ("cut", f"{item['cut_time']} s ({item['timestamp_raw']} as written)"),
                    ("gold", item["gold"]),
                    ("cut kind", meta.get("cut_kind", "")),
                ],
                "difficulty": None,
                "flags": {"models_disagree": len(said - {""}) > 1},
            }
        )

        if item["how_question"]:
            items.append(_how_item(item, clip, root, transcript, reply_of, replies, judged))

    for item in stream_items.to_dict("records"):
        tracks, transcript, _ = _turn_tracks(turns, item["clip_id"])
        answers, labels, points = [], set(), []
        for score in stream_scores[stream_scores["item_id"] == item["item_id"]].to_dict("records"):
            labels.add(score["label"])
            if score["response_time"] is not None and not pd.isna(score["response_time"]):
                points.append(
                    [
                        score["response_time"],
                        f"{score['model']}: speak now ({score['label']})",
                        "wrong" if score["label"] != "Perfect" else "event",
                    ]
                )
            answers.append(
                answer(
                    score["model"],
                    "model",
                    "stream",
                    score["label"],
                    correct=score["label"] == "Perfect",
                    score=_num(score["offset"]),
                    text=f"first speak-now at {score['response_time']:.2f} s, offset {score['offset']:+.2f} s"
                    if _num(score["response_time"]) is not None
                    else "no speak-now in the clip",
                )
            )
        items.append(
            {
                "id": f"when-stream:{item['item_id']}",
                "benchmark": "when",
                "title": f"when, streamed {item['item_id']}: {item['previous_speaker']} -> {item['target']}",
                "truth": "Perfect",
                "modalities": ["video"],
                "media": [
                    {
                        "kind": "video",
                        "label": "streamed span",
                        "src": str(root / item["video_path"]),
                        "start": item["stream_start"],
                        "end": item["stream_end"],
                    }
                ],
                "question": f"When should {item['target']} start speaking?",
                "transcript": transcript,
                "answers": answers,
                "timeline": {
                    "start": item["stream_start"],
                    "end": item["stream_end"],
                    "tracks": [
                        *tracks,
                        {"label": "speak-now decisions", "points": points},
                        *_step_tracks(steps_of, item["item_id"]),
                    ],
                    "marks": [
                        [item["turn_end"], "turn end (gold)"],
                        [item["next_start"], "next turn starts"],
                    ],
                },
                "facts": [
                    ("clip", item["clip_id"]),
                    ("gold turn end", f"{item['turn_end']:.2f} s"),
                    ("next turn starts", f"{item['next_start']:.2f} s"),
                ],
                "difficulty": None,
                "flags": {"models_disagree": len(labels) > 1},
            }
        )
    return items


STEP_KINDS = {"utterance": "event", "silence": "silence", "unparsed": "wrong", "failed": "wrong"}


def _step_tracks(steps_of: dict, item_id: str) -> list[dict]:
    """A registry model's every streamed step on the timeline (silence, utterance, unparsed,
    failed), from its steps table (streaming.STREAM_STEPS)."""
    tracks = []
    for (model, item), group in steps_of.items():
        if item != item_id:
            continue
        points = []
        columns = ("step", "t", "kind", "text", "reply", "error")
        for n, t, kind, text, reply, error in zip(*(group[c] for c in columns), strict=True):
            said = text or error or (reply if kind == "unparsed" else "")  # what the step was
            points.append([t, f"step {n}: {kind}" + (f": {said}" if said else ""), STEP_KINDS[kind]])
        tracks.append({"label": f"{model}: steps", "points": points})
    return tracks


def _how_item(item, clip, root, transcript, reply_of, replies, judged) -> dict:
    answers, spread = [], False
    own = replies[(replies["task"] == "how") & (replies["item_id"] == item["item_id"])]
    scores = judged[judged["item_id"] == item["item_id"]]
    for reply in own.to_dict("records"):
        status, reason = _status(reply)
        answers.append(
            answer(reply["model"], "model", reply["modality"], reply["reply"], status=status, reason=reason)
        )
        mine = scores[(scores["model"] == reply["model"]) & (scores["modality"] == reply["modality"])]
        given = mine["score"].dropna()
        spread = spread or (len(given) > 1 and float(given.max() - given.min()) > JUDGE_SPREAD)
        for judge in mine.to_dict("records"):
            answers.append(
                answer(
                    f"{judge['judge']} on {reply['model']}",
                    "judge",
                    reply["modality"],
                    "",
                    status="failed" if judge["judge_failed"] else "answered",
                    reason="the judge's call failed" if judge["judge_failed"] else "",
                    score=_num(judge["score"]),
                    text=judge["reason"]
                    + (
                        f" (similarity {judge['similarity']:.2f})"
                        if _num(judge["similarity"]) is not None
                        else ""
                    ),
                )
            )
    return {
        "id": f"how:{item['item_id']}",
        "benchmark": "how",
        "title": f"how {item['item_id']}: {item['how_question']}",
        "truth": item["how_reference"],
        "modalities": ["video"],
        "media": [
            {
                "kind": "video",
                "label": "clip up to the cut",
                "src": str(root / item["video_path"]),
                "start": 0.0,
                "end": item["cut_time"],
            }
        ],
        "question": item["how_question"],
        "transcript": transcript,
        "answers": answers,
        "timeline": None,
        "facts": [("clip", clip), ("reference", item["how_reference"])],
        "difficulty": None,
        "flags": {"judges_disagree": spread},
    }
