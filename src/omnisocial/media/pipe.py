"""Raw video frames for an external encoder (ffmpeg): pixel format, standard input, the demos' mp4.

The encoder runs through `ffmpeg_run.pipe_frames`; `run_with_stdin` is its former name.
`encode_raw_mp4` is the one mp4 encoder of the demo generators (the familiarity demo corpus
and the social demos): raw yuv420p frames on stdin, H.264 plus optional AAC, as an
ffmpeg-python graph. `encode_raw_mp4s` encodes several such files in one ffmpeg process
(the same bytes; one ffmpeg start-up instead of one per file).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import ffmpeg
import numpy as np

from omnisocial.io import atomic_path
from omnisocial.media.ffmpeg_run import compile_args, pipe_frames, run_command

QUIET = ("-nostdin", "-hide_banner", "-loglevel", "error")  # the encoders' global options


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


def raw_mp4_stream(
    output: str | Path,
    video: dict,
    seconds: float,
    audio_path: Path | None = None,
    video_options: dict | None = None,
    audio_options: dict | None = None,
):
    """The ffmpeg-python graph of `encode_raw_mp4` (raw yuv420p on `pipe:0` -> `output`).

    Compiles to `ffmpeg -f rawvideo -framerate FPS -pix_fmt yuv420p -s WxH -threads 1 -i pipe:0
    [-i AUDIO] -map 0:v:0 [-map 1:a:0] -f mp4 OPTIONS OUTPUT -nostdin -hide_banner -loglevel
    error -y`, OPTIONS being libx264 ultrafast yuv420p single-threaded, `-t SECONDS`, bit-exact
    flags, no metadata, then `-an` or AAC, plus `video_options` / `audio_options`, sorted by
    name as ffmpeg-python writes them (their order does not change the encoding; global
    options such as -nostdin may stand anywhere).
    """
    stream = _raw_mp4_output(output, video, seconds, audio_path, video_options, audio_options, "pipe:0")
    return stream.global_args(*QUIET).overwrite_output()


def _raw_mp4_output(output, video, seconds, audio_path, video_options, audio_options, frames_source):
    width, height = int(video["width"]), int(video["height"])
    frames = ffmpeg.input(
        frames_source,
        format="rawvideo",
        pix_fmt="yuv420p",
        s=f"{width}x{height}",
        framerate=str(video["fps"]),
        threads=1,
    )
    streams = [frames["v:0"]]
    options = {
        "format": "mp4",
        "t": f"{seconds:.6f}",
        "c:v": "libx264",
        "preset": "ultrafast",
        "threads": 1,
        "pix_fmt": "yuv420p",
        "fflags": "+bitexact",
        "flags:v": "+bitexact",
        "map_metadata": -1,
        **(video_options or {}),
    }
    if audio_path is None:
        options["an"] = None
    else:
        streams.append(ffmpeg.input(str(audio_path))["a:0"])
        options.update({"c:a": "aac", "flags:a": "+bitexact", **(audio_options or {})})
    return ffmpeg.output(*streams, str(output), **options)


@dataclass(frozen=True)
class RawMp4:
    """One file of `encode_raw_mp4s`: its path, raw yuv420p frames, length (`-t`) and audio."""

    path: Path
    frames: bytes
    seconds: float
    audio_path: Path | None = None


def encode_raw_mp4s(
    files: list[RawMp4],
    video: dict,
    workdir: Path,
    video_options: dict | None = None,
    audio_options: dict | None = None,
) -> None:
    """`encode_raw_mp4` of each file, all in one ffmpeg process: the same bytes, one start-up.

    Each file's frames go through a raw file in `workdir` (one stdin cannot carry two
    inputs); each output has its own encoders and is written atomically. MediaError naming
    the first file, with ffmpeg's last message line, when the run fails (then none is written).
    """
    with ExitStack() as stack:
        outputs = []
        for index, file in enumerate(files):
            raw = Path(workdir) / f"frames{index}.yuv"
            raw.write_bytes(file.frames)
            tmp = stack.enter_context(atomic_path(file.path))
            outputs.append(
                _raw_mp4_output(
                    tmp, video, file.seconds, file.audio_path, video_options, audio_options, str(raw)
                )
            )
        stream = ffmpeg.merge_outputs(*outputs).global_args(*QUIET)
        run_command(compile_args(stream.overwrite_output()), file=files[0].path, what="encode")


def encode_raw_mp4(
    path: Path,
    frames: bytes,
    video: dict,
    seconds: float,
    stderr_path: Path,
    audio_path: Path | None = None,
    video_options: dict | None = None,
    audio_options: dict | None = None,
) -> None:
    """H.264 yuv420p (+ AAC of `audio_path`) from raw yuv420p `frames`, written atomically to `path`.

    Single-threaded and bit-exact, without metadata, so the same frames give the same bytes.
    `video` holds width, height and fps; `seconds` cuts the output (`-t`); `video_options` /
    `audio_options` add or override output options (e.g. `{"qp": 4}`, `{"b:a": "32k"}`).
    RuntimeError with the end of ffmpeg's message when it fails.
    """
    with atomic_path(path) as tmp:
        stream = raw_mp4_stream(tmp, video, seconds, audio_path, video_options, audio_options)
        code = pipe_frames(stream, frames, stderr_path)
        if code:
            message = Path(stderr_path).read_text(errors="replace")[-500:]
            raise RuntimeError(f"ffmpeg failed for {path.name}: {message}")
