"""Glue between the workflow's `social_*` rules and the who / when / how and streaming scorers.

Each rule's script reads its inputs, calls one or two functions here and writes the
result; every table has one contract (below, or in `social.contracts`). Judges and model
backends are passed in by the scripts, so this module runs without any model.

Import (`import_socialomni`, `import_duplexeval`, `import_stream_responses`): the released
SocialOmni files `data/level_1/dataset.json` and `data/level_2/annotations.json` under a
root, the Omni-DuplexEval items file and streaming response files
`{responses_root}/{model}/{split}/{id}.json`. Relative media paths are resolved against
the data set's root. An optional `truth/` folder (written by the demo) adds speaker turns,
the screen panels of each speaker, several references per how item and every turn
transition for the streaming when protocol. Without it (released data): how items have
one reference (question_2.answer), and the streaming when items are the YES items, queried
from the clip's start with the cut time as the turn end.

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

Failed model calls (a reply with ok false: transport errors, timeouts) are left out of
every score and logged, so a rerun retries them instead of scoring them as wrong answers;
an answer that cannot be parsed is scored wrong, as released.

Previous utterance (how): the last line of full_asr (the transcript before the cut), its
"Name:" prefix removed; the chance baseline takes a random line. Judges score the
candidate against all references (`judge_how`); `how_metrics` aggregates per judge and over
judges with and without zeros (`how.aggregate_how`), once on the judged scores
("judged") and once with the released rule that zeroes the how score when the model's
single-cut when answer was wrong ("released", `how.released_how_score`). `how_agreement`
gives Krippendorff's alpha (ordinal) and ICC(2,1) / ICC(2,k) between the judges per model.

Real-time description with a text judge (`score_rtd`): a frame-seeing judge is replaced by
the reference-similarity judge against the ground-truth captions, with the judge window's
timing made explicit. For a sentence with judge window [ws, we] (`streaming.judge_window`)
and each ground-truth event at time t with caption c:
    cap(t) = 3 if ws <= t <= we (the window shows the event: timely),
             2 if ws - late_s[0] <= t < ws (slightly late), 1 if ws - late_s[1] <= t <
             ws - late_s[0] (clearly late), else 0 (another moment or not yet happened);
    temporal score = max over events of min(cap(t), level(sentence vs c)), level = the
    judge's 0-3 "temporal" level of the pair;
    is_relevant = 1 when the sentence's best similarity to any caption (or, without
    captions, to the item's answers) reaches `relevance_threshold` (filler is not);
    judged = the window lies inside the video (else not judged, as released).
Without timed captions (released data) the references are answer1/answer2 and the cap is
3. `n_frames` records how many frames a frame-seeing judge would get (2 fps). Content
consistency: the judge's 0-3 "content" level of the joined response against answer1 and
answer2. For the caption baseline with delay d (point sentences, window [t + d - 2, t + d -
1.5]) the expected temporal score is 3 for 1.5 <= d <= 2, 2 for 2 < d <= 4, 1 for 4 < d
<= 7, else 0; its first relevant time is the first event time + d.

Reminders (`score_pr`): `streaming.reminder_scores` with the item's reminder1/2; the text of
event k's window is judged against answer k (else answer1, else the question) by the
embedding judge's 0/1 "reminder" level, or by the keyword rule (`keyword_share` of the
reference's content words present). The detector baseline says the item's reminder
(answer1, else the question) at every detected change plus `latency_s`, so its scores
measure when it speaks, not what it says.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.judges.agreement import icc, krippendorff_alpha, to_matrix
from omnisocial.media.audio import MediaError, load_audio
from omnisocial.media.vad import speech_segments
from omnisocial.models.base import Request
from omnisocial.social.baselines import caption_stream, detect_events, frame_motion, read_grey_frames
from omnisocial.social.contracts import (
    ACCURACY_BREAKDOWN,
    IMPORT_ERRORS,
    LETTERS,
    RTD_SPLITS,
    STREAM_RESPONSES,
    STREAM_SPLITS,
    WHEN_ITEMS,
    WHEN_SCORES,
    WHEN_STREAM_SCORES,
    WHO_ITEMS,
)
from omnisocial.social.how import aggregate_how, released_how_score
from omnisocial.social.importers import (
    load_stream_items,
    load_stream_responses,
    load_when_items,
    load_who_items,
)
from omnisocial.social.streaming import (
    frame_times,
    judge_window,
    reminder_scores,
    temporal_sensitivity,
    to_100,
)
from omnisocial.social.when import (
    response_time,
    score_when_single,
    score_when_streaming,
    silence_baseline,
    tolerance_prf,
)
from omnisocial.social.who import MODALITY_INPUTS, score_who, split_said, who_prompt
from omnisocial.tables import Column, Contract

log = logging.getLogger(__name__)

SIGNAL_MODEL = "baseline_signal"
CHANCE_MODEL = "baseline_chance"
CAPTION_MODEL = "baseline_caption"
DETECTOR_MODEL = "baseline_detector"
TASKS = ("who", "when", "how")
EPS = 1e-9

# --- contracts of the pipeline's own tables -------------------------------------------------

TURNS = Contract(
    "social_turns",
    (Column("clip_id"), Column("speaker"), Column("start", "float"), Column("end", "float"), Column("text")),
    key=("clip_id", "speaker", "start"),
)
PANELS = Contract(
    "social_panels",
    (
        Column("clip_id"),
        Column("speaker"),
        Column("on_screen", "bool"),
        Column("x0", "int", doc="panel box in video pixels; -1 when off-screen"),
        Column("y0", "int"),
        Column("x1", "int"),
        Column("y1", "int"),
    ),
    key=("clip_id", "speaker"),
)
HOW_REFERENCES = Contract(
    "how_references",
    (
        Column("item_id"),
        Column("ref_index", "int"),
        Column("kind", doc="true / paraphrase (demo) or released (question_2.answer)"),
        Column("text"),
    ),
    key=("item_id", "ref_index"),
)
WHEN_STREAM_ITEMS = Contract(
    "when_stream_items",
    (
        Column("item_id"),
        Column("clip_id"),
        Column("video_path"),
        Column("target", doc="who should speak next (excluded from the speech in truth mode)"),
        Column("previous_speaker"),
        Column("stream_start", "float", doc="first query time"),
        Column("turn_end", "float"),
        Column("next_start", "float", nullable=True, doc="when the next turn really starts"),
        Column("stream_end", "float", nullable=True, doc="last query time; empty = end of the audio"),
    ),
    key=("item_id",),
)
STREAM_EVENTS = Contract(
    "stream_events",
    (
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("event_index", "int"),
        Column("t", "float"),
        Column("kind"),
        Column("text", doc="ground-truth caption of the change"),
        Column("reminder", "int", doc="1 or 2 when the item's reminder1/2 is this event, else 0"),
    ),
    key=("split", "item_id", "event_index"),
)
REPLIES = Contract(
    "social_replies",
    (
        Column("model"),
        Column("modality"),
        Column("task", allowed=TASKS),
        Column("item_id"),
        Column("reply", doc="letter (who), YES/NO (when) or the next utterance (how); empty when failed"),
        Column("ok", "bool"),
        Column("error"),
    ),
    key=("model", "modality", "task", "item_id"),
)
WHO_EVIDENCE = Contract(
    "who_panel_evidence",
    (
        Column("item_id"),
        Column("speaker", doc="the speaker the baseline chose"),
        Column("true_speaker"),
        Column("motion", "float", nullable=True, doc="the chosen speaker's mean panel motion"),
        Column("fallback", "bool", doc="no option speaker moved enough: speaker drawn at random"),
        Column("motion_json", doc="mean panel motion of every option speaker with a panel"),
    ),
    key=("item_id",),
)
WHEN_STREAM_RESPONSES = Contract(
    "when_stream_responses",
    (
        Column("model"),
        Column("item_id"),
        Column("turn_end", "float"),
        Column("response_time", "float", nullable=True),
    ),
    key=("model", "item_id"),
)
HOW_JUDGEMENTS = Contract(
    "how_judgements",
    (
        Column("model"),
        Column("modality"),
        Column("item_id"),
        Column("judge"),
        Column("score", "float", nullable=True, doc="0/25/50/75/100; empty = not scored"),
        Column("similarity", "float", nullable=True, doc="the judge's best similarity to a reference"),
        Column("reason"),
    ),
    key=("model", "modality", "item_id", "judge"),
)
DETECTIONS = Contract(
    "stream_detections",
    (Column("split", allowed=STREAM_SPLITS), Column("item_id"), Column("t", "float")),
    key=("split", "item_id", "t"),
)
RTD_SENTENCES = Contract(
    "rtd_sentences",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("sentence_index", "int"),
        Column("text"),
        Column("start", "float"),
        Column("end", "float"),
        Column("window_start", "float", nullable=True),
        Column("window_end", "float", nullable=True),
        Column("judged_ok", "bool", doc="the window lies inside the video"),
        Column("n_frames", "int", doc="frames a frame-seeing judge would get (2 fps)"),
        Column("event_index", "int", nullable=True, doc="the event that gave the temporal score"),
        Column("temporal_score", "float", nullable=True, doc="0-3"),
        Column("is_relevant", "int"),
        Column("relevance", "float", nullable=True, doc="best similarity to any caption / answer"),
    ),
    key=("model", "split", "item_id", "sentence_index"),
)
RTD_SCORES = Contract(
    "rtd_scores",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("n_sentences", "int"),
        Column("n_judged", "int"),
        Column("n_relevant", "int"),
        Column("temporal_score", "float"),
        Column("temporal_100", "float"),
        Column("irrelevant_duration_ratio", "float"),
        Column("first_relevant_time", "float", nullable=True),
        Column("first_event_time", "float", nullable=True),
        Column("first_relevant_offset", "float", nullable=True, doc="first relevant time - first event"),
        Column("content_score", "float", nullable=True, doc="0-3"),
        Column("content_100", "float", nullable=True),
    ),
    key=("model", "split", "item_id"),
)
PR_EVENT_SCORES = Contract(
    "pr_event_scores",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("event_index", "int"),
        Column("time", "float", nullable=True, doc="event time; empty = the whole response was judged"),
        Column("text", doc="the response text inside [t, t + 10]"),
        Column("judged", "bool"),
        Column("score", "int"),
    ),
    key=("model", "split", "item_id", "event_index"),
)
PR_SCORES = Contract(
    "pr_scores",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("n_events", "int"),
        Column("n_passed", "int"),
        Column("sample_score", "int", doc="1 only if every event passed"),
    ),
    key=("model", "split", "item_id"),
)

# --- small helpers ----------------------------------------------------------------------------


def item_rng(seed: int, item_id: str, stream: int = 0) -> np.random.Generator:
    """A generator for one item: seeded by (seed, stream, sha256 of the item id)."""
    digest = int(hashlib.sha256(str(item_id).encode("utf-8")).hexdigest()[:12], 16)
    return np.random.default_rng([int(seed), int(stream), digest])


def resolve(root: str | os.PathLike, path: str) -> Path:
    """A media path from an item: absolute as given, else relative to the data set's root."""
    candidate = Path(str(path))
    return candidate if candidate.is_absolute() else Path(root) / candidate


def _metadata(item) -> dict:
    try:
        value = json.loads(item.get("metadata_json") or "{}")
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def clip_of(item) -> str:
    """The clip an item belongs to: metadata.clip_id, else the video file's stem."""
    meta = _metadata(item)
    path = item.get("video_path") or ""
    return str(meta.get("clip_id") or Path(str(path)).stem)


def _concat(frames: Sequence[pd.DataFrame], contract: Contract) -> pd.DataFrame:
    frames = [frame for frame in frames if len(frame)]
    return contract.validate(pd.concat(frames, ignore_index=True)) if frames else contract.empty()


def _nan_to_none(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


# --- import ---------------------------------------------------------------------------------


def import_socialomni(
    root: str | os.PathLike, skip_bad: bool = False, max_time_s: float | None = None
) -> dict[str, pd.DataFrame]:
    """Who / when items, how references, streaming when items, turns and panels from a SocialOmni root.

    Reads `data/level_1/dataset.json` (who) and `data/level_2/annotations.json` (when / how);
    at least one must exist. `skip_bad`: malformed items are left out and listed in
    `errors` instead of failing the import. `truth/*.csv` (the demo's) are read when present.
    """
    root = Path(root)
    level1 = root / "data" / "level_1" / "dataset.json"
    level2 = root / "data" / "level_2" / "annotations.json"
    if not level1.is_file() and not level2.is_file():
        raise FileNotFoundError(
            f"{root}: neither data/level_1/dataset.json nor data/level_2/annotations.json"
        )
    errors = []

    def load(reader, path, contract):
        if not path.is_file():
            log.warning("%s not found: no items of this level", path)
            return contract.empty()
        if skip_bad:
            frame, bad = reader(path, collect_errors=True, max_time_s=max_time_s)
            errors.append(bad)
            return frame
        return reader(path, max_time_s=max_time_s)

    who = load(load_who_items, level1, WHO_ITEMS)
    when = load(load_when_items, level2, WHEN_ITEMS)
    truth = root / "truth"
    turns = TURNS.read(truth / "turns.csv") if (truth / "turns.csv").is_file() else TURNS.empty()
    panels = PANELS.read(truth / "panels.csv") if (truth / "panels.csv").is_file() else PANELS.empty()
    if (truth / "how_references.csv").is_file():
        references = HOW_REFERENCES.read(truth / "how_references.csv")
        references = references[references["item_id"].isin(set(when["item_id"]))]
    else:
        rows = [
            {"item_id": r.item_id, "ref_index": 0, "kind": "released", "text": r.how_reference}
            for r in when.itertuples()
            if str(r.how_reference).strip()
        ]
        references = HOW_REFERENCES.validate(pd.DataFrame(rows, columns=HOW_REFERENCES.names))
    if (truth / "when_stream.csv").is_file():
        stream = WHEN_STREAM_ITEMS.read(truth / "when_stream.csv")
    else:
        yes = when[when["gold"] == "YES"]
        stream = WHEN_STREAM_ITEMS.validate(
            pd.DataFrame(
                {
                    "item_id": yes["item_id"],
                    "clip_id": [clip_of(r) for r in yes.to_dict("records")],
                    "video_path": yes["video_path"],
                    "target": yes["target"],
                    "previous_speaker": "",
                    "stream_start": 0.0,
                    "turn_end": yes["cut_time"],
                    "next_start": None,
                    "stream_end": None,
                },
                columns=WHEN_STREAM_ITEMS.names,
            )
        )
    return {
        "who_items": who,
        "when_items": when,
        "how_references": HOW_REFERENCES.validate(references),
        "when_stream_items": stream,
        "turns": turns,
        "panels": panels,
        "errors": _concat(errors, IMPORT_ERRORS),
    }


def import_duplexeval(
    root: str | os.PathLike, items_file: str = "items.json", skip_bad: bool = False
) -> dict[str, pd.DataFrame]:
    """Omni-DuplexEval items (JSON or CSV: `items_file` under `root`) and the demo's timed events."""
    root = Path(root)
    path = root / items_file
    if skip_bad:
        items, errors = load_stream_items(path, collect_errors=True)
    else:
        items, errors = load_stream_items(path), IMPORT_ERRORS.empty()
    events_file = root / "truth" / "events.csv"
    events = STREAM_EVENTS.read(events_file) if events_file.is_file() else STREAM_EVENTS.empty()
    keys = set(zip(items["split"], items["item_id"], strict=True))
    inside = [key in keys for key in zip(events["split"], events["item_id"], strict=True)]
    events = events[pd.Series(inside, index=events.index, dtype=bool)]
    return {"stream_items": items, "stream_events": STREAM_EVENTS.validate(events), "errors": errors}


def import_stream_responses(
    responses_root: str | os.PathLike | None, items: pd.DataFrame, skip_bad: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every model folder `{responses_root}/{model}/` read for the items: (responses, import errors)."""
    if not responses_root:
        return STREAM_RESPONSES.empty(), IMPORT_ERRORS.empty()
    root = Path(responses_root)
    if not root.is_dir():
        raise FileNotFoundError(f"responses_root {root} is not a folder")
    frames, errors = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if skip_bad:
            responses, bad = load_stream_responses(folder, items, model=folder.name, collect_errors=True)
            errors.append(bad)
        else:
            responses = load_stream_responses(folder, items, model=folder.name)
        frames.append(responses)
    return _concat(frames, STREAM_RESPONSES), _concat(errors, IMPORT_ERRORS)


# --- who baselines ----------------------------------------------------------------------------


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
        inside = (times >= float(item["query_start"]) - EPS) & (times <= float(item["query_time"]) + EPS)
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
        rows.append(_reply(SIGNAL_MODEL, "video", "who", item["item_id"], letter))
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


def _reply(model: str, modality: str, task: str, item_id: str, text: str, error: str = "") -> dict:
    return {
        "model": model,
        "modality": modality,
        "task": task,
        "item_id": str(item_id),
        "reply": text,
        "ok": not error,
        "error": error,
    }


def who_chance_replies(items: pd.DataFrame, seed: int) -> pd.DataFrame:
    rows = [
        _reply(CHANCE_MODEL, "none", "who", i, LETTERS[int(item_rng(seed, i, 2).integers(4))])
        for i in items["item_id"]
    ]
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))


# --- when baselines ---------------------------------------------------------------------------


def vad_segments(media: str | os.PathLike, vad: Mapping) -> pd.DataFrame:
    """Silero speech segments of a clip's audio track (start, end), with the `vad:` config's settings."""
    audio = load_audio(media, 16000)
    segments = speech_segments(
        audio,
        16000,
        threshold=float(vad.get("threshold", 0.5)),
        min_speech_s=float(vad.get("min_speech_s", 0.25)),
        min_silence_s=float(vad.get("min_silence_s", 0.1)),
    )
    frame = pd.DataFrame(segments, columns=["start", "end"])
    frame["duration"] = len(audio) / 16000
    return frame


def speech_by_video(
    videos: Sequence[str], root: str | os.PathLike, source: str, turns: pd.DataFrame, vad: Mapping
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
        rows.append(_reply(SIGNAL_MODEL, "audio", "when", item["item_id"], "YES" if decision[0][1] else "NO"))
        coin = "YES" if item_rng(seed, item["item_id"], 3).random() < 0.5 else "NO"
        rows.append(_reply(CHANCE_MODEL, "none", "when", item["item_id"], coin))
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))


def when_stream_baseline(
    items: pd.DataFrame, speech: Mapping[str, pd.DataFrame], pause_s: float, step_s: float
) -> pd.DataFrame:
    """Response times of the silence baseline under the streaming protocol (module doc)."""
    rows = []
    for item in items.to_dict("records"):
        segments = speech[item["video_path"]]
        end = _nan_to_none(item["stream_end"])
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


# --- how baselines ----------------------------------------------------------------------------

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
        rows.append(_reply(SIGNAL_MODEL, "text", "how", item["item_id"], previous))
        pick = lines[int(item_rng(seed, item["item_id"], 4).integers(len(lines)))] if lines else ""
        rows.append(_reply(CHANCE_MODEL, "none", "how", item["item_id"], pick))
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))


# --- scoring: who and when --------------------------------------------------------------------


def _task(replies: pd.DataFrame, task: str) -> pd.DataFrame:
    """The task's answered replies; failed calls (ok false) are left out (module doc)."""
    own = replies[replies["task"] == task]
    failed = own[~own["ok"].astype(bool)]
    if len(failed):
        counts = failed.groupby("model").size().to_dict()
        log.warning("%s: failed calls left out of scoring (rerun to retry them): %s", task, counts)
    return own[own["ok"].astype(bool)]


def score_who_replies(items: pd.DataFrame, replies: pd.DataFrame):
    """`who.score_who` on the who replies (failed calls score as unparseable)."""
    who = _task(replies, "who")
    return score_who(items, who[["model", "modality", "item_id", "reply"]].reset_index(drop=True))


def score_when_replies(items: pd.DataFrame, replies: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    when = _task(replies, "when")
    if when.empty:
        return WHEN_SCORES.empty(), ACCURACY_BREAKDOWN.empty()
    return score_when_single(items, when[["model", "modality", "item_id", "reply"]].reset_index(drop=True))


def score_when_stream(
    responses: pd.DataFrame, thresholds: Sequence[float], deltas: Sequence[float]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(WHEN_STREAM_SCORES, rates per model, tolerance P/R/F1 per model and delta, micro over items)."""
    if responses.empty:
        return (
            WHEN_STREAM_SCORES.empty(),
            pd.DataFrame(columns=["model", "n"]),
            pd.DataFrame(columns=["model", "delta", "n_pred", "n_true", "tp", "precision", "recall", "f1"]),
        )
    scored, rates = score_when_streaming(responses, thresholds)
    prf = []
    for model, group in scored.groupby("model", sort=True):
        for delta in deltas:
            counts = {"n_pred": 0, "n_true": 0, "tp": 0}
            for row in group.itertuples():
                predicted = [] if pd.isna(row.response_time) else [float(row.response_time)]
                table = tolerance_prf(predicted, [float(row.turn_end)], [float(delta)])
                for key in counts:
                    counts[key] += int(table[key].iloc[0])
            precision = counts["tp"] / counts["n_pred"] if counts["n_pred"] else 0.0
            recall = counts["tp"] / counts["n_true"] if counts["n_true"] else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
            prf.append(
                {
                    "model": model,
                    "delta": float(delta),
                    **counts,
                    "precision": precision,
                    "recall": recall,
                    "f1": f1,
                }
            )
    return scored, rates, pd.DataFrame(prf)


# --- how judging ------------------------------------------------------------------------------


def judge_how(
    candidates: pd.DataFrame, references: pd.DataFrame, judges: Mapping[str, object]
) -> pd.DataFrame:
    """Score every how candidate against its item's references with each judge (`score_many(pairs, 'how')`).

    An empty candidate scores 0, as the released scorer does; a failed call is not judged.
    Items without any reference are skipped with a warning.
    """
    how = _task(candidates, "how").reset_index(drop=True)
    refs = references.sort_values(["item_id", "ref_index"]).groupby("item_id")["text"].apply(list).to_dict()
    missing = sorted(set(how["item_id"]) - set(refs))
    if missing:
        log.warning("how items without references are not judged: %s", ", ".join(missing))
        how = how[how["item_id"].isin(set(refs))].reset_index(drop=True)
    rows = []
    for name, judge in judges.items():
        pairs = [(c, refs[i]) for c, i in zip(how["reply"], how["item_id"], strict=True)]
        scores = judge.score_many(pairs, "how") if pairs else []
        for record, result in zip(how.to_dict("records"), scores, strict=True):
            rows.append(
                {
                    "model": record["model"],
                    "modality": record["modality"],
                    "item_id": record["item_id"],
                    "judge": name,
                    "score": result.score,
                    "similarity": result.similarity,
                    "reason": result.reason,
                }
            )
    return HOW_JUDGEMENTS.validate(pd.DataFrame(rows, columns=HOW_JUDGEMENTS.names))


def how_metrics(judgements: pd.DataFrame, when_scores: pd.DataFrame) -> pd.DataFrame:
    """`aggregate_how` per model, on the judged scores and with the released when-gated rule (module doc)."""
    columns = ["scoring", "model", "judge", "n_items", "n_nonzero", "mean_with_zeros", "mean_without_zeros"]
    if judgements.empty:
        return pd.DataFrame(columns=[*columns, "n_unparsed"])
    judged = aggregate_how(judgements[["item_id", "model", "judge", "score"]])
    judged.insert(0, "scoring", "judged")
    correct = {(r.model, r.item_id): bool(r.correct) for r in when_scores.itertuples()}
    gated = judgements.copy()
    gated["score"] = [
        released_how_score("YES", correct[(m, i)], _nan_to_none(s)) if (m, i) in correct else math.nan
        for m, i, s in zip(gated["model"], gated["item_id"], gated["score"], strict=True)
    ]
    gated = gated[[(m, i) in correct for m, i in zip(gated["model"], gated["item_id"], strict=True)]]
    parts = [judged]
    if len(gated):
        released = aggregate_how(gated[["item_id", "model", "judge", "score"]])
        released.insert(0, "scoring", "released")
        parts.append(released)
    return pd.concat(parts, ignore_index=True)


def how_agreement(judgements: pd.DataFrame) -> pd.DataFrame:
    """Per model: Krippendorff's alpha (ordinal, interval) and ICC(2,1) / ICC(2,k) between the judges."""
    rows = []
    for model, group in judgements.groupby("model", sort=True):
        matrix = to_matrix(group.dropna(subset=["score"]), rater="judge", unit="item_id", value="score")
        row = {
            "model": model,
            "n_judges": int(matrix.shape[0]),
            "n_items": int(matrix.shape[1]),
            "alpha_ordinal": krippendorff_alpha(matrix.to_numpy(), "ordinal"),
            "alpha_interval": krippendorff_alpha(matrix.to_numpy(), "interval"),
            "icc_2_1": math.nan,
            "icc_2_k": math.nan,
            "exact_agreement": math.nan,
        }
        if matrix.shape[0] >= 2:
            complete = matrix.dropna(axis=1)
            if complete.shape[1]:
                row["exact_agreement"] = float((complete.nunique(axis=0) == 1).mean())
            try:
                result = icc(matrix.to_numpy())
                row["icc_2_1"], row["icc_2_k"] = result.icc_2_1, result.icc_2_k
            except ValueError as error:
                log.info("ICC for %s not computed: %s", model, error)
        rows.append(row)
    columns = ["model", "n_judges", "n_items", "alpha_ordinal", "alpha_interval", "icc_2_1", "icc_2_k"]
    return pd.DataFrame(rows, columns=[*columns, "exact_agreement"])


# --- streaming baselines ----------------------------------------------------------------------


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
                video_duration=_nan_to_none(item["video_duration"]),
                model=CAPTION_MODEL,
                split=item["split"],
                item_id=item["item_id"],
            )
        )
    return _concat(frames, STREAM_RESPONSES)


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
        duration = _nan_to_none(item["video_duration"])
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


# --- streaming scoring ------------------------------------------------------------------------


def timing_cap(event_time: float, window: tuple[float, float], late_s: Sequence[float] = (2.0, 5.0)) -> int:
    """The highest temporal score an event allows for a window (module doc): 3 inside, 2 / 1 late, 0 else."""
    ws, we = window
    first, second = (float(v) for v in late_s)
    if ws - EPS <= event_time <= we + EPS:
        return 3
    if ws - first - EPS <= event_time < ws - EPS:
        return 2
    if ws - second - EPS <= event_time < ws - first - EPS:
        return 1
    return 0


def _responses_by_item(responses: pd.DataFrame, items: pd.DataFrame) -> list[tuple[str, dict, pd.DataFrame]]:
    """(model, item, that model's sentences for it) for every model with responses and every item."""
    out = []
    for model in sorted(responses["model"].unique()):
        own = responses[responses["model"] == model]
        for item in items.to_dict("records"):
            mask = (own["split"] == item["split"]) & (own["item_id"] == item["item_id"])
            out.append((model, item, own[mask].sort_values("start", kind="stable")))
    return out


def score_rtd(
    responses: pd.DataFrame,
    items: pd.DataFrame,
    events: pd.DataFrame,
    judge,
    late_s: Sequence[float] = (2.0, 5.0),
    relevance_threshold: float = 0.5,
    judge_fps: float = 2.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Real-time description: per sentence and per (model, item) scores with a text judge (module doc)."""
    rtd_items = items[items["split"].isin(RTD_SPLITS)]
    rtd = responses[responses["split"].isin(RTD_SPLITS)]
    sentence_rows, score_rows = [], []
    for model, item, own in _responses_by_item(rtd, rtd_items):
        item_events = events[(events["split"] == item["split"]) & (events["item_id"] == item["item_id"])]
        captions = list(zip(item_events["t"].astype(float), item_events["text"], strict=True))
        answers = [a for a in (item["answer1"], item["answer2"]) if str(a).strip()]
        duration = _nan_to_none(item["video_duration"])
        texts = own["text"].tolist()
        relevance_refs = [c for _, c in captions] or answers or [item["question_text"]]
        relevance = [s.similarity for s in judge.score_many([(t, relevance_refs) for t in texts], "temporal")]
        pairs, owners = [], []
        windows = []
        for k, sentence in enumerate(own.to_dict("records")):
            window = judge_window(sentence["start"], sentence["end"], duration)
            windows.append(window)
            if window is None:
                continue
            if captions:
                for e, (t, caption) in enumerate(captions):
                    cap = timing_cap(t, window, late_s)
                    if cap:
                        pairs.append((sentence["text"], [caption]))
                        owners.append((k, e, cap))
            elif answers:
                pairs.append((sentence["text"], answers))
                owners.append((k, None, 3))
        levels = judge.score_many(pairs, "temporal") if pairs else []
        best: dict[int, tuple[float, int | None]] = {}
        for (k, e, cap), result in zip(owners, levels, strict=True):
            value = min(float(cap), float(result.score))
            if k not in best or value > best[k][0]:
                best[k] = (value, e)
        frame_rows = []
        for k, sentence in enumerate(own.to_dict("records")):
            window = windows[k]
            relevant = int(relevance[k] is not None and relevance[k] >= relevance_threshold - EPS)
            score, event = best.get(k, (0.0, None)) if window is not None else (math.nan, None)
            frame_rows.append(
                {
                    "model": model,
                    "split": item["split"],
                    "item_id": item["item_id"],
                    "sentence_index": int(sentence["sentence_index"]),
                    "text": sentence["text"],
                    "start": float(sentence["start"]),
                    "end": float(sentence["end"]),
                    "window_start": window[0] if window else None,
                    "window_end": window[1] if window else None,
                    "judged_ok": window is not None,
                    "n_frames": len(frame_times(window, judge_fps)) if window else 0,
                    "event_index": None if event is None else int(item_events["event_index"].iloc[event]),
                    "temporal_score": score,
                    "is_relevant": relevant,
                    "relevance": relevance[k],
                }
            )
        sentence_rows += frame_rows
        summary = temporal_sensitivity(
            pd.DataFrame(frame_rows, columns=["start", "end", "is_relevant", "judged_ok", "temporal_score"])
        )
        content = judge.score(" ".join(texts), answers, "content").score if answers else math.nan
        first_event = float(item_events["t"].min()) if len(item_events) else None
        first_relevant = summary["first_relevant_time"]
        score_rows.append(
            {
                "model": model,
                "split": item["split"],
                "item_id": item["item_id"],
                **{key: summary[key] for key in ("n_sentences", "n_judged", "n_relevant", "temporal_score")},
                "temporal_100": summary["temporal_score_100"],
                "irrelevant_duration_ratio": summary["irrelevant_duration_ratio"],
                "first_relevant_time": first_relevant,
                "first_event_time": first_event,
                "first_relevant_offset": None
                if first_relevant is None or first_event is None
                else first_relevant - first_event,
                "content_score": content,
                "content_100": to_100(content) if not math.isnan(content) else math.nan,
            }
        )
    return (
        RTD_SENTENCES.validate(pd.DataFrame(sentence_rows, columns=RTD_SENTENCES.names)),
        RTD_SCORES.validate(pd.DataFrame(score_rows, columns=RTD_SCORES.names)),
    )


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
    responses: pd.DataFrame, items: pd.DataFrame, judge: Callable[[str, str], int]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Proactive reminders with `streaming.reminder_scores` (module doc): per event and per sample."""
    pr_items = items[items["task"] == "PR"]
    pr = responses[~responses["split"].isin(RTD_SPLITS)]
    event_rows, sample_rows = [], []
    for model, item, own in _responses_by_item(pr, pr_items):
        times = [float(t) for t in (item["reminder1"], item["reminder2"]) if _nan_to_none(t) is not None]
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


# --- the who / when / how profile -------------------------------------------------------------


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


# --- registry models --------------------------------------------------------------------------

WHEN_INSTRUCTION = "Options:\nA. YES\nB. NO\nAnswer with YES or NO only."


def model_modality(entry: Mapping) -> str | None:
    """The who/when input modality of a registry entry: audio_video, video or audio; None for text-only."""
    modalities = set(entry.get("modalities") or ())
    if {"audio", "video"} <= modalities:
        return "audio_video"
    if "video" in modalities:
        return "video"
    if "audio" in modalities:
        return "audio"
    return None


def cut_media(source: str | os.PathLike, end_s: float, destination: str | os.PathLike, modality: str) -> Path:
    """The first `end_s` seconds of a clip, as a model may see it (released evaluators cut there).

    audio_video: video and audio (mp4); video: video only (mp4, audio dropped); audio: a
    16 kHz mono wav. Re-encoded, so the cut is exact; an existing output is reused.
    """
    destination = Path(destination)
    if destination.is_file() and destination.stat().st_size:
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    command = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(source), "-t", f"{float(end_s):.3f}"]
    if modality == "audio":
        command += ["-vn", "-ac", "1", "-ar", "16000", "-f", "wav"]
    else:
        command += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
        command += ["-an"] if modality == "video" else ["-c:a", "aac"]
        command += ["-f", "mp4"]
    tmp = destination.with_name(f".{destination.name}.part")
    result = subprocess.run([*command, str(tmp)], capture_output=True, timeout=600, check=False)
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        message = result.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise MediaError(f"cannot cut {source}: {message[-1] if message else 'no message'}")
    os.replace(tmp, destination)
    return destination


def social_requests(
    entry: Mapping,
    who_items: pd.DataFrame,
    when_items: pd.DataFrame,
    root: str | os.PathLike,
    media_dir: str | os.PathLike,
    include_asr: bool = False,
) -> list[tuple[str, str, Request]]:
    """(task, item_id, Request) of one registry model: who cut at query_time, when / how at the cut.

    Request ids are '<task>:<item_id>' so the result cache keeps the tasks apart. A
    text-only model gets no requests (it can neither see nor hear the clip).
    """
    modality = model_modality(entry)
    if modality is None:
        log.warning("model %s is text-only: no who / when / how requests", entry.get("name"))
        return []
    kind = "audio" if modality == "audio" else "video"
    suffix = ".wav" if kind == "audio" else ".mp4"
    media_dir = Path(media_dir)
    out = []

    def media(item_id: str, video: str, end: float) -> dict[str, Path]:
        cut = cut_media(resolve(root, video), end, media_dir / modality / f"{item_id}{suffix}", modality)
        return {kind: cut}

    for item in who_items.to_dict("records"):
        prompt = who_prompt(item, modality, include_asr=include_asr)
        request = Request(
            f"who:{item['item_id']}",
            prompt,
            media=media(item["item_id"], item["video_path"], item["query_time"]),
        )
        out.append(("who", item["item_id"], request))
    for item in when_items.to_dict("records"):
        files = media(item["item_id"], item["video_path"], item["cut_time"])
        prompt = f"{MODALITY_INPUTS[modality]}\n\n{item['question']}\n\n{WHEN_INSTRUCTION}"
        out.append(("when", item["item_id"], Request(f"when:{item['item_id']}", prompt, media=files)))
        if item["gold"] == "YES" and item["how_question"]:
            context = str(item["full_asr"] or "").strip() or "(no transcript)"
            prompt = (
                f"{MODALITY_INPUTS[modality]}\n\nConversation so far (automatic transcript):\n{context}\n\n"
                f"{item['how_question']} Reply with exactly the words {item['target'] or 'they'} should say "
                "next, nothing else."
            )
            out.append(("how", item["item_id"], Request(f"how:{item['item_id']}", prompt, media=files)))
    return out


def replies_from_results(
    name: str, modality: str, requests: Sequence[tuple[str, str, Request]], results
) -> pd.DataFrame:
    """REPLIES rows from `run_inference`'s frame (one row per request, in request order)."""
    rows = []
    for (task, item_id, _), record in zip(requests, results.to_dict("records"), strict=True):
        ok = bool(record["ok"])
        rows.append(
            _reply(
                name,
                modality,
                task,
                item_id,
                str(record["text"] or "") if ok else "",
                "" if ok else str(record["error"]),
            )
        )
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))


__all__ = [
    "CAPTION_MODEL",
    "CHANCE_MODEL",
    "DETECTOR_MODEL",
    "SIGNAL_MODEL",
    "caption_responses",
    "detector_baseline",
    "how_agreement",
    "how_metrics",
    "import_duplexeval",
    "import_socialomni",
    "import_stream_responses",
    "judge_how",
    "score_pr",
    "score_rtd",
    "social_profile",
    "streaming_metrics",
    "timing_cap",
]
