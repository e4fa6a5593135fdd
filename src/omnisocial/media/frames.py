"""Grey video frames and their frame-difference motion (used by both benchmarks' baselines).

`read_grey_frames` decodes a video with ffmpeg (`media.ffmpeg_run`) at `fps` into small grey frames
(area-averaged to `size` = (width, height)); frame i is at i / fps from the stream start.

`frame_motion`: motion(i) = mean absolute grey-level difference (0-255 scale) between
frame i and frame i - 1 (motion(0) = 0), over whatever region the frames show.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import ffmpeg
import numpy as np

from omnisocial.media.ffmpeg_run import MediaError, run_ffmpeg


def frame_motion(frames: np.ndarray) -> np.ndarray:
    """Mean absolute grey-level change of each frame from the previous one; 0 for the first."""
    frames = np.asarray(frames)
    if frames.ndim != 3:
        raise ValueError(f"frames must be [T, H, W], got shape {frames.shape}")
    motion = np.zeros(len(frames), dtype=float)
    if len(frames) > 1:
        motion[1:] = np.abs(np.diff(frames.astype(np.float64), axis=0)).mean(axis=(1, 2))
    return motion


def grey_frames_stream(file: Path, fps: float, width: int, height: int, output: str = "-"):
    """ffmpeg -nostdin -v error -threads 1 -i FILE -map 0:v:0 -f rawvideo -an -pix_fmt gray -vf .. -

    One decoder thread: small frames gain nothing from frame threading, which about doubles
    the CPU time of the decode (callers parallelize over files); the frames are the same.
    `output` is stdout ("-") or a file.
    """
    source = ffmpeg.input(str(file), nostdin=None, v="error", threads=1)
    scale = f"fps={fps},scale={width}:{height}:flags=area,format=gray"
    return source["v:0"].output(output, format="rawvideo", an=None, pix_fmt="gray", vf=scale)


def _frames_of(data: bytes, file: Path, width: int, height: int) -> np.ndarray:
    frame_bytes = width * height
    n = len(data) // frame_bytes
    if n == 0:
        raise MediaError(f"no video frames decoded: {file}")
    return np.frombuffer(data[: n * frame_bytes], dtype=np.uint8).reshape(n, height, width)


def decode_grey(file: Path, fps: float, width: int, height: int, what: str = "decode") -> np.ndarray:
    """[T, H, W] uint8 grey frames of `file`'s first video stream; MediaError without frames."""
    stdout = run_ffmpeg(grey_frames_stream(file, fps, width, height), file=file, what=what)
    return _frames_of(stdout, file, width, height)


def decode_grey_together(
    files: list[Path], fps: float, width: int, height: int, what: str = "decode"
) -> list[np.ndarray]:
    """`decode_grey` of each file, all in one ffmpeg process: the same frames, one start-up.

    Each ffmpeg start loads a few hundred shared libraries, which costs more than decoding a
    minute of small video (docs/performance.md#code). Each input has its own output file and
    filter chain, so its frames are those `decode_grey` gives. MediaError when the run fails or
    a file gives no frames; it may name only the first file: decode one by one to learn which
    failed.
    """
    files = [Path(f) for f in files]
    with tempfile.TemporaryDirectory(prefix="omnisocial-grey-") as scratch:
        targets = [Path(scratch) / f"{i}.gray" for i in range(len(files))]
        outputs = [
            grey_frames_stream(file, fps, width, height, output=str(target))
            for file, target in zip(files, targets, strict=True)
        ]
        run_ffmpeg(ffmpeg.merge_outputs(*outputs), file=files[0], what=what)
        return [
            _frames_of(target.read_bytes(), file, width, height)
            for file, target in zip(files, targets, strict=True)
        ]


def read_grey_frames(
    path: str | os.PathLike, fps: float = 5.0, size: tuple[int, int] = (32, 24)
) -> np.ndarray:
    """[T, H, W] uint8 grey frames of a video's first stream at `fps`; MediaError when unreadable."""
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        raise MediaError(f"no readable video file: {file}")
    width, height = (int(v) for v in size)
    return decode_grey(file, fps, width, height)
