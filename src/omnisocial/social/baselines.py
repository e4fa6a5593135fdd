"""Model-free baselines for the streaming demo: a frame-difference event detector and delayed captions.

`detect_events`: motion(i) = mean absolute grey-level difference (0-255 scale) between
frame i and frame i - 1 (motion(0) = 0). An event is reported at time i / fps for every
rising edge, i.e. motion(i) >= threshold and motion(i - 1) < threshold, so a sustained
change gives one event at its onset; with `min_gap_s` an event closer than that to the
previous reported one is dropped. i / fps is the time of the first frame after the change.

`read_grey_frames` decodes a video with the ffmpeg CLI at `fps` into small grey frames
(area-averaged to `size` = (width, height)); frame i is at i / fps from the stream start.

`caption_stream` turns ground-truth events (t, text) into a response stream that says
each event's text `delay_s` after it happens, as point sentences (start = end = t + delay)
in STREAM_RESPONSES shape; captions after `video_duration` are dropped (the video has
ended). With the reminder window [t, t + 10], a delay in [0, 10] s passes every event.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.media.audio import MediaError
from omnisocial.social.contracts import STREAM_RESPONSES

_TIMEOUT_S = 600


def frame_motion(frames: np.ndarray) -> np.ndarray:
    """Mean absolute grey-level change of each frame from the previous one; 0 for the first."""
    frames = np.asarray(frames)
    if frames.ndim != 3:
        raise ValueError(f"frames must be [T, H, W], got shape {frames.shape}")
    motion = np.zeros(len(frames), dtype=float)
    if len(frames) > 1:
        motion[1:] = np.abs(np.diff(frames.astype(np.float64), axis=0)).mean(axis=(1, 2))
    return motion


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


def read_grey_frames(
    path: str | os.PathLike, fps: float = 5.0, size: tuple[int, int] = (32, 24)
) -> np.ndarray:
    """[T, H, W] uint8 grey frames of a video's first stream at `fps`; MediaError when unreadable."""
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        raise MediaError(f"no readable video file: {file}")
    width, height = (int(v) for v in size)
    command = [
        "ffmpeg", "-nostdin", "-v", "error", "-i", str(file), "-map", "0:v:0", "-an",
        "-vf", f"fps={fps},scale={width}:{height}:flags=area,format=gray",
        "-f", "rawvideo", "-pix_fmt", "gray", "-",
    ]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, timeout=_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise MediaError(f"ffmpeg is not installed (needed to decode {file})") from None
    except subprocess.TimeoutExpired:
        raise MediaError(f"ffmpeg took over {_TIMEOUT_S} s to decode {file}") from None
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise MediaError(f"cannot decode {file}: {message[-1] if message else 'no message'}")
    frame_bytes = width * height
    n = len(result.stdout) // frame_bytes
    if n == 0:
        raise MediaError(f"no video frames decoded: {file}")
    return np.frombuffer(result.stdout[: n * frame_bytes], dtype=np.uint8).reshape(n, height, width)


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
