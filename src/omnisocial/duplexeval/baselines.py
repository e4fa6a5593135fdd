"""Model-free baselines of the streaming benchmark: delayed captions and a frame-difference detector.

- `baseline_caption` (real-time description): the ground-truth event captions, said
  `caption_delay_s` after each event (`caption_stream`, `caption_responses`);
- `baseline_detector` (reminders): the item's reminder (answer1, else the question) at
  every frame-difference event plus `latency_s` (`detect_events`, `detector_baseline`), so
  its scores measure when it speaks, not what it says; `detection_prf` scores the
  detections against every ground-truth change.

`detect_events`: motion(i) = mean absolute grey-level difference (0-255 scale) between
frame i and frame i - 1 (motion(0) = 0). An event is reported at time i / fps for every
rising edge, i.e. motion(i) >= threshold and motion(i - 1) < threshold, so a sustained
change gives one event at its onset; with `min_gap_s` an event closer than that to the
previous reported one is dropped. i / fps is the time of the first frame after the change.

`caption_stream` turns ground-truth events (t, text) into a response stream that says
each event's text `delay_s` after it happens, as point sentences (start = end = t + delay)
in STREAM_RESPONSES shape; captions after `video_duration` are dropped (the video has
ended). With the reminder window [t, t + 10], a delay in [0, 10] s passes every event.

Frames are decoded by `omnisocial.media.frames.read_grey_frames`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from omnisocial.duplexeval.contracts import DETECTIONS, RTD_SPLITS, STREAM_RESPONSES
from omnisocial.importing import concat_frames, nan_to_none, resolve
from omnisocial.media.audio import MediaError
from omnisocial.media.frames import frame_motion, read_grey_frames
from omnisocial.stats.tolerance import tolerance_prf

EPS = 1e-9

log = logging.getLogger(__name__)


CAPTION_MODEL = "baseline_caption"


DETECTOR_MODEL = "baseline_detector"


def detect_events(frames: np.ndarray, fps: float, threshold: float, min_gap_s: float = 0.0) -> list[float]:
    """Event times (s) at the rising edges of frame-difference motion above `threshold` (module doc)."""
    if fps <= 0:
        raise ValueError("fps must be > 0")
    motion = frame_motion(frames)
    above = motion >= threshold
    events: list[float] = []
    for i in range(1, len(motion)):
        if above[i] and not above[i - 1]:
            t = i / fps
            if events and t - events[-1] < min_gap_s:
                continue
            events.append(t)
    return events


def caption_stream(
    events: pd.DataFrame,
    delay_s: float,
    video_duration: float | None = None,
    model: str = "caption_baseline",
    split: str = "PR_event_reminder",
    item_id: str = "",
) -> pd.DataFrame:
    """STREAM_RESPONSES point sentences saying each event's text `delay_s` after it (module doc)."""
    if delay_s < 0:
        raise ValueError("delay_s must be >= 0")
    for column in ("t", "text"):
        if column not in events.columns:
            raise ValueError(f"events lack column {column}")
    frame = events[["t", "text"]].copy()
    frame["time"] = frame["t"].astype(float) + float(delay_s)
    if video_duration is not None:
        frame = frame[frame["time"] <= float(video_duration)]
    frame = frame.sort_values("time", kind="stable").reset_index(drop=True)
    rows = [
        {
            "model": model,
            "split": split,
            "item_id": item_id,
            "sentence_index": index,
            "text": str(text).strip(),
            "start": time,
            "end": time,
            "is_point": True,
        }
        for index, (text, time) in enumerate(zip(frame["text"], frame["time"], strict=True))
    ]
    return STREAM_RESPONSES.validate(pd.DataFrame(rows, columns=STREAM_RESPONSES.names))


def caption_responses(items: pd.DataFrame, events: pd.DataFrame, delay_s: float) -> pd.DataFrame:
    """The caption baseline on every real-time-description item with timed captions."""
    frames = []
    for item in items[items["split"].isin(RTD_SPLITS)].to_dict("records"):
        own = events[(events["split"] == item["split"]) & (events["item_id"] == item["item_id"])]
        if own.empty:
            continue
        frames.append(
            caption_stream(
                own[["t", "text"]],
                delay_s,
                video_duration=nan_to_none(item["video_duration"]),
                model=CAPTION_MODEL,
                split=item["split"],
                item_id=item["item_id"],
            )
        )
    return concat_frames(frames, STREAM_RESPONSES)


def reminder_text(item) -> str:
    """What the detector baseline says: the item's reminder (answer1), else its question."""
    return str(item.get("answer1") or "").strip() or str(item.get("question_text") or "").strip()


def detector_baseline(
    items: pd.DataFrame, root: str | os.PathLike, detector: Mapping
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Frame-difference detections on every item's video (DETECTIONS) and reminder responses on PR items.

    `detector`: fps, width, height (decoding grid), threshold, min_gap_s, latency_s. Items
    whose video is missing are skipped with a warning.
    """
    fps = float(detector["fps"])
    size = (int(detector["width"]), int(detector["height"]))
    detections, responses = [], []
    for item in items.to_dict("records"):
        if not item["video"]:
            log.warning("%s/%s has no video: not run through the detector", item["split"], item["item_id"])
            continue
        video = resolve(root, item["video"])
        try:
            frames = read_grey_frames(video, fps=fps, size=size)
        except MediaError as error:
            log.warning("%s/%s: %s", item["split"], item["item_id"], error)
            continue
        times = detect_events(frames, fps, float(detector["threshold"]), float(detector["min_gap_s"]))
        detections += [{"split": item["split"], "item_id": item["item_id"], "t": round(t, 6)} for t in times]
        if item["task"] != "PR":
            continue
        duration = nan_to_none(item["video_duration"])
        said = [t + float(detector["latency_s"]) for t in times]
        said = [t for t in said if duration is None or t <= float(duration) + EPS]
        responses += [
            {
                "model": DETECTOR_MODEL,
                "split": item["split"],
                "item_id": item["item_id"],
                "sentence_index": k,
                "text": reminder_text(item),
                "start": round(t, 6),
                "end": round(t, 6),
                "is_point": True,
            }
            for k, t in enumerate(said)
        ]
    return (
        DETECTIONS.validate(pd.DataFrame(detections, columns=DETECTIONS.names)),
        STREAM_RESPONSES.validate(pd.DataFrame(responses, columns=STREAM_RESPONSES.names)),
    )


def detection_prf(detections: pd.DataFrame, events: pd.DataFrame, deltas: Sequence[float]) -> pd.DataFrame:
    """Detector P/R/F1 against every ground-truth change, per item and delta (`when.tolerance_prf`)."""
    rows = []
    for (split, item_id), own in events.groupby(["split", "item_id"], sort=True):
        found = detections[(detections["split"] == split) & (detections["item_id"] == item_id)]["t"]
        table = tolerance_prf(found.tolist(), own["t"].tolist(), deltas)
        table.insert(0, "item_id", item_id)
        table.insert(0, "split", split)
        rows.append(table)
    columns = ["split", "item_id", "delta", "n_pred", "n_true", "tp", "precision", "recall", "f1"]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)
