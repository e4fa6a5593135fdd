"""Grey video frames and their frame-difference motion (used by both benchmarks' baselines).

`read_grey_frames` decodes a video with the ffmpeg CLI at `fps` into small grey frames
(area-averaged to `size` = (width, height)); frame i is at i / fps from the stream start.

`frame_motion`: motion(i) = mean absolute grey-level difference (0-255 scale) between
frame i and frame i - 1 (motion(0) = 0), over whatever region the frames show.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np

from omnisocial.media.audio import MediaError

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
