"""Raw video frames for an external encoder (ffmpeg): pixel format and standard input.

The encoder runs through `ffmpeg_run.pipe_frames`; `run_with_stdin` is its former name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from omnisocial.media.ffmpeg_run import pipe_frames


def run_with_stdin(command, data: bytes, stderr_path: Path) -> int:
    """Run `command` with `data` on its stdin and stderr in `stderr_path`; return its exit code.

    `command` is an argument list or an ffmpeg-python graph; kept for the demo generators,
    new code calls `ffmpeg_run.pipe_frames` (which this is).
    """
    return pipe_frames(command, data, stderr_path)


def yuv420p(rgb: np.ndarray) -> bytes:
    """An RGB frame (even height and width) as planar yuv420p bytes, BT.601 limited range."""
    height, width = rgb.shape[:2]
    r, g, b = (rgb[..., k].astype(np.float64) for k in range(3))
    y = 16.0 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0
    cb = 128.0 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0
    cr = 128.0 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0

    def half_size(plane: np.ndarray) -> np.ndarray:
        return plane.reshape(height // 2, 2, width // 2, 2).mean(axis=(1, 3))

    planes = [y.ravel(), half_size(cb).ravel(), half_size(cr).ravel()]
    return np.clip(np.round(np.concatenate(planes)), 0, 255).astype(np.uint8).tobytes()
