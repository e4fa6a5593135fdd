"""The media of a local model's request, decoded: audio at the processor's sampling rate (mono),
a video's frames, a frame list's images, and a signal as base64 WAV.

Audio is decoded mono: a WAV/FLAC with soundfile (a stereo stimulus is averaged to mono),
anything else (the mp4's audio track) with ffmpeg, through ffmpeg-python (no timeout, as
before: `ffmpeg.run` and `ffmpeg.probe` themselves). Part of
`omnisocial.models.transformers_backend`.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import ffmpeg
import numpy as np

from omnisocial.media.ffmpeg_run import compile_args, ffprobe_args, run_tool

VIDEO_FPS = 2.0  # frames per second given to Qwen2.5-Omni (its processor's own default)
VIDEO_MAX_FRAMES = 768
SOUNDFILE_SUFFIXES = (".wav", ".flac", ".ogg")


def _ffmpeg() -> str:
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise RuntimeError("ffmpeg is not on PATH (needed to decode this media file)")
    return exe


def _resample(signal: np.ndarray, source_rate: int, target_rate: int) -> np.ndarray:
    if source_rate == target_rate:
        return signal
    from math import gcd

    from scipy.signal import resample_poly

    divisor = gcd(int(source_rate), int(target_rate))
    return resample_poly(signal, target_rate // divisor, source_rate // divisor).astype(np.float32)


def load_audio(path: str | os.PathLike, sampling_rate: int) -> np.ndarray:
    """Mono float32 samples at `sampling_rate`, from an audio file or a video's audio track."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"media file not found: {path}")
    if path.suffix.lower() in SOUNDFILE_SUFFIXES:
        import soundfile as sf

        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
        signal = _resample(data.mean(axis=1).astype(np.float32), int(rate), int(sampling_rate))
    else:
        source = ffmpeg.input(str(path), nostdin=None, v="error")
        stream = source["a:0"].output("-", format="f32le", ac=1, ar=int(sampling_rate), vn=None)
        # no timeout, as before; Interrupted (not a decode error) when a signal stopped ffmpeg
        done = run_tool(compile_args(stream, cmd=_ffmpeg()), doing=f"decoding {path}", timeout_s=None)
        if done.returncode != 0:
            raise RuntimeError(f"ffmpeg could not decode audio of {path}: {done.stderr.decode()[-400:]}")
        stdout = done.stdout
        signal = np.frombuffer(stdout, dtype="<f4").astype(np.float32)
    if signal.size == 0:
        raise ValueError(f"no audio samples in {path}")
    return np.ascontiguousarray(signal)


def _frames_stream(path: Path, fps: float, max_frames: int):
    """ffmpeg -nostdin -v error -i PATH -map 0:v:0 -f rawvideo -frames:v N -pix_fmt rgb24 -vf fps=F -"""
    source = ffmpeg.input(str(path), nostdin=None, v="error")
    options = {"frames:v": int(max_frames), "pix_fmt": "rgb24", "vf": f"fps={fps}"}
    return source["v:0"].output("-", format="rawvideo", **options)


def load_video_frames(
    path: str | os.PathLike, fps: float = VIDEO_FPS, max_frames: int = VIDEO_MAX_FRAMES, even: bool = True
) -> np.ndarray:
    """RGB frames (T, H, W, 3) uint8 sampled at `fps` with ffmpeg (`even`: T made even by repeating
    the last frame, as Qwen's temporal patch is 2)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"media file not found: {path}")
    argv = ffprobe_args(
        path,
        cmd=shutil.which("ffprobe") or "ffprobe",
        v="error",
        select_streams="v:0",
        show_entries="stream=width,height",
    )  # ffmpeg.probe's arguments
    done = run_tool(argv, doing=f"probing {path}", timeout_s=None)
    if done.returncode != 0:
        raise RuntimeError(f"ffprobe could not read {path}: {done.stderr.decode()[-400:]}")
    info = json.loads(done.stdout.decode("utf-8", errors="replace") or "{}")
    streams = info.get("streams", [])
    if not streams:
        raise ValueError(f"no video stream in {path}")
    width, height = int(streams[0]["width"]), int(streams[0]["height"])
    stream = _frames_stream(path, fps, max_frames)
    # no timeout, as before; Interrupted (not a decode error) when a signal stopped ffmpeg
    done = run_tool(compile_args(stream, cmd=_ffmpeg()), doing=f"decoding {path}", timeout_s=None)
    if done.returncode != 0:
        raise RuntimeError(f"ffmpeg could not decode video of {path}: {done.stderr.decode()[-400:]}")
    stdout = done.stdout
    frame_bytes = width * height * 3
    count = len(stdout) // frame_bytes
    if count == 0:
        raise ValueError(f"no video frames decoded from {path}")
    frames = np.frombuffer(stdout[: count * frame_bytes], dtype=np.uint8).reshape(count, height, width, 3)
    if even and count % 2:
        frames = np.concatenate([frames, frames[-1:]], axis=0)
    return frames


def is_frame_key(key: str) -> bool:
    """``image`` or ``image:NNN`` (one frame of a frame list)."""
    return key == "image" or key.startswith("image:")


def load_frames(paths: Sequence[str | os.PathLike]) -> list:
    """RGB PIL images of `paths`, in the order given (decoded now: a bad file fails its request)."""
    from PIL import Image

    frames = []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"frame file not found: {path}")
        with Image.open(path) as image:
            frames.append(image.convert("RGB"))
    return frames


def wav_base64(signal: np.ndarray, sampling_rate: int) -> str:
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, signal, samplerate=int(sampling_rate), format="WAV", subtype="PCM_16")
    return base64.b64encode(buffer.getvalue()).decode("ascii")
