"""Model-free baselines of the who / when / how tasks (model names in the tables).

Baselines (model names in the tables):
- `baseline_signal`: who = panel motion, when = silence after VAD, how = previous utterance;
- `baseline_chance`: who = a random option, when = a random YES/NO, how = a random earlier
  utterance of the conversation;
- `baseline_caption` (real-time description): the ground-truth event captions, said
  `caption_delay_s` after each event;
- `baseline_detector` (reminders): a sentence at every frame-difference event.
All random draws come from generators seeded by (seed, sha256 of the item id), so a reply
does not depend on which other items are present.

Panel motion (who, transcript-free): a who item asks who speaks in [query_start,
query_time]. Per-speaker voice templates do not exist for unseen speakers, so the baseline
reads the video: it decodes grey frames at `motion_fps`, and for every speaker named in the
options that has a screen panel (truth/panels.csv) averages the frame-difference motion
inside the panel over the frames in the interval (frame i is the change at i / fps). The
speaker with the most motion is the answer's speaker when that motion reaches `min_motion`
(mean absolute grey-level change); otherwise (nobody visibly talks, e.g. an off-screen
speaker: an inconsistent item) the speaker is drawn at random among the options'
speakers. The content cannot be known without a transcript, so the letter is drawn at
random among the options naming that speaker. Without panels (released data) only
`baseline_chance` answers who items.

Silence after VAD (when): speech segments come from silero VAD on the clip's audio track
(`speech_source: vad`; one mono mix, so the target's own speech counts too), or from the
ground-truth turns without the target's (`truth`, demo only). Single cut: YES when the
silence at the cut time is at least `pause_s` (`when.silence_baseline` at that one time).
Streaming: `when.silence_baseline` from the item's `stream_start` every `step_s` to its
`stream_end`, offsets, labels and rates by `when.score_when_streaming`. Tolerance-window
P/R/F1 is computed per item (its one response time against its one turn end) and summed
over items (micro-average): precision = matches / items with a response, recall = matches /
items.

Previous utterance (how): the last line of full_asr (the transcript before the cut), its
"Name:" prefix removed; the chance baseline takes a random line.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.importing import nan_to_none, resolve
from omnisocial.media.audio import load_audio
from omnisocial.media.frames import frame_motion, read_grey_frames
from omnisocial.media.vad import speech_segments
from omnisocial.settings import Vad
from omnisocial.socialomni.contracts import LETTERS, REPLIES, WHEN_STREAM_RESPONSES, WHO_EVIDENCE, reply_row
from omnisocial.socialomni.importers import clip_of, split_said
from omnisocial.socialomni.when import response_time, silence_baseline

EPS = 1e-9


SIGNAL_MODEL = "baseline_signal"


CHANCE_MODEL = "baseline_chance"


def item_rng(seed: int, item_id: str, stream: int = 0) -> np.random.Generator:
    """A generator for one item: seeded by (seed, stream, sha256 of the item id)."""
    digest = int(hashlib.sha256(str(item_id).encode("utf-8")).hexdigest()[:12], 16)
    return np.random.default_rng([int(seed), int(stream), digest])


def panel_motion(video: str | os.PathLike, panels: pd.DataFrame, fps: float) -> pd.DataFrame:
    """Per-frame motion (mean absolute grey change) inside each on-screen speaker's panel.

    The video is decoded at the panels' pixel grid (width = max x1, height = max y1). Rows
    are frames (index = frame number, time = index / fps), columns are speakers.
    """
    shown = panels[panels["on_screen"]]
    if shown.empty:
        return pd.DataFrame()
    width, height = int(shown["x1"].max()), int(shown["y1"].max())
    frames = read_grey_frames(video, fps=fps, size=(width, height))
    motion = {}
    for row in shown.itertuples():
        region = frames[:, row.y0 : row.y1, row.x0 : row.x1]
        motion[row.speaker] = frame_motion(region)
    return pd.DataFrame(motion)


def _option_speakers(item) -> dict[str, list[str]]:
    """speaker -> the letters of the options naming them (options without ' said ' are skipped)."""
    out: dict[str, list[str]] = {}
    for letter in LETTERS:
        said = split_said(str(item[f"option_{letter.lower()}"]))
        if said:
            out.setdefault(said[0], []).append(letter)
    return out


def who_signal_replies(
    items: pd.DataFrame,
    panels: pd.DataFrame,
    root: str | os.PathLike,
    fps: float,
    min_motion: float,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Panel-motion replies (REPLIES, model baseline_signal, modality video) and the evidence per item."""
    rows, evidence, cache = [], [], {}
    for item in items.to_dict("records"):
        clip = clip_of(item)
        clip_panels = panels[panels["clip_id"] == clip]
        if clip_panels.empty:
            continue
        video = resolve(root, item["video_path"])
        if video not in cache:
            cache[video] = panel_motion(video, clip_panels, fps)
        motion = cache[video]
        times = np.arange(len(motion)) / fps
        start, end = item["query_start"], item["query_time"]
        start = 0.0 if pd.isna(start) else float(start)  # no time in the question: the whole clip
        end = math.inf if pd.isna(end) else float(end)
        inside = (times >= start - EPS) & (times <= end + EPS)
        speakers = _option_speakers(item)
        rng = item_rng(seed, item["item_id"], 1)
        means = {
            s: float(motion[s].to_numpy()[inside].mean()) for s in speakers if s in motion and inside.any()
        }
        best = max(sorted(means), key=lambda s: means[s]) if means else None
        fallback = best is None or means[best] < min_motion
        names = sorted(speakers)
        speaker = names[int(rng.integers(len(names)))] if fallback else best
        letters = speakers[speaker]
        letter = letters[int(rng.integers(len(letters)))]
        rows.append(reply_row(SIGNAL_MODEL, "video", "who", item["item_id"], letter))
        evidence.append(
            {
                "item_id": item["item_id"],
                "speaker": speaker,
                "true_speaker": item["speaker"],
                "motion": means.get(speaker),
                "fallback": fallback,
                "motion_json": json.dumps({s: round(v, 4) for s, v in means.items()}, sort_keys=True),
            }
        )
    return (
        REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names)),
        WHO_EVIDENCE.validate(pd.DataFrame(evidence, columns=WHO_EVIDENCE.names)),
    )


def who_chance_replies(items: pd.DataFrame, seed: int) -> pd.DataFrame:
    rows = [
        reply_row(CHANCE_MODEL, "none", "who", i, LETTERS[int(item_rng(seed, i, 2).integers(4))])
        for i in items["item_id"]
    ]
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))


def vad_segments(media: str | os.PathLike, vad: Vad) -> pd.DataFrame:
    """Silero speech segments of a clip's audio track (start, end), with the `vad:` config's settings."""
    audio = load_audio(media, 16000)
    segments = speech_segments(audio, 16000, vad)
    frame = pd.DataFrame(segments, columns=["start", "end"])
    frame["duration"] = len(audio) / 16000
    return frame


def speech_by_video(
    videos: Sequence[str], root: str | os.PathLike, source: str, turns: pd.DataFrame, vad: Vad
) -> dict[str, pd.DataFrame]:
    """video path -> speech segments (start, end[, speaker], duration) from VAD or the ground-truth turns."""
    out = {}
    for video in sorted(set(videos)):
        if source == "vad":
            out[video] = vad_segments(resolve(root, video), vad)
        elif source == "truth":
            clip = Path(video).stem
            frame = turns[turns["clip_id"] == clip][["speaker", "start", "end"]].copy()
            if frame.empty:
                raise ValueError(f"speech_source truth: no ground-truth turns for clip {clip!r}")
            frame["duration"] = math.nan
            out[video] = frame
        else:
            raise ValueError(f"unknown speech_source {source!r}; expected vad or truth")
    return out


def _others(segments: pd.DataFrame, target: str) -> pd.DataFrame:
    if "speaker" in segments.columns and target:
        return segments[segments["speaker"].astype(str) != str(target)]
    return segments


def when_single_replies(
    items: pd.DataFrame, speech: Mapping[str, pd.DataFrame], pause_s: float, seed: int
) -> pd.DataFrame:
    """Single-cut YES/NO of the silence baseline (at the cut: silence >= pause_s) and of chance."""
    rows = []
    for item in items.to_dict("records"):
        cut = float(item["cut_time"])
        segments = _others(speech[item["video_path"]], item["target"])
        decision = silence_baseline(segments[["start", "end"]], pause_s, 1.0, clip_end=cut, clip_start=cut)
        answer = "YES" if decision[0][1] else "NO"
        rows.append(reply_row(SIGNAL_MODEL, "audio", "when", item["item_id"], answer))
        coin = "YES" if item_rng(seed, item["item_id"], 3).random() < 0.5 else "NO"
        rows.append(reply_row(CHANCE_MODEL, "none", "when", item["item_id"], coin))
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))


def when_stream_baseline(
    items: pd.DataFrame, speech: Mapping[str, pd.DataFrame], pause_s: float, step_s: float
) -> pd.DataFrame:
    """Response times of the silence baseline under the streaming protocol (module doc)."""
    rows = []
    for item in items.to_dict("records"):
        segments = speech[item["video_path"]]
        end = nan_to_none(item["stream_end"])
        if end is None:
            durations = segments["duration"].dropna() if "duration" in segments else pd.Series(dtype=float)
            if durations.empty:
                raise ValueError(f"when stream item {item['item_id']}: no stream_end and no audio duration")
            end = float(durations.iloc[0])
        others = _others(segments, item["target"])[["start", "end"]]
        decisions = silence_baseline(
            others, pause_s, step_s, clip_end=float(end), clip_start=float(item["stream_start"])
        )
        rows.append(
            {
                "model": SIGNAL_MODEL,
                "item_id": item["item_id"],
                "turn_end": float(item["turn_end"]),
                "response_time": response_time(decisions),
            }
        )
    return WHEN_STREAM_RESPONSES.validate(pd.DataFrame(rows, columns=WHEN_STREAM_RESPONSES.names))


_NAME_PREFIX = re.compile(r"^\s*[^:\n]{1,40}:\s+")


def transcript_lines(full_asr: str) -> list[str]:
    """Utterances of a transcript: its lines without a 'Name:' prefix (a single line: its sentences)."""
    lines = [line.strip() for line in str(full_asr or "").splitlines() if line.strip()]
    if len(lines) == 1:
        lines = [s.strip() for s in re.split(r"(?<=[.!?])\s+", lines[0]) if s.strip()]
    return [_NAME_PREFIX.sub("", line) for line in lines]


def how_baseline_replies(items: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Candidates for gold-YES items: the previous utterance (signal), a random earlier one (chance)."""
    rows = []
    for item in items[items["gold"] == "YES"].to_dict("records"):
        lines = transcript_lines(item["full_asr"])
        previous = lines[-1] if lines else ""
        rows.append(reply_row(SIGNAL_MODEL, "text", "how", item["item_id"], previous))
        pick = lines[int(item_rng(seed, item["item_id"], 4).integers(len(lines)))] if lines else ""
        rows.append(reply_row(CHANCE_MODEL, "none", "how", item["item_id"], pick))
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))
