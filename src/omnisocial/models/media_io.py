"""Turning stimulus files into what model APIs accept: WAV bytes, sampled JPEG frames, MIME types.

All decoding goes through the ffmpeg / ffprobe executables, driven by ffmpeg-python
(`ffmpeg.input(...).output(...).run(...)`, `ffmpeg.probe`) as the rest of the workflow
(`omnisocial.media.ffmpeg_run`), so results do not depend on a Python media stack. These
calls run without a timeout (as they always have: a model call has its own), hence
`media.ffmpeg_run.run_tool` rather than `run_ffmpeg`, and this module keeps its
own `MediaError` (a RuntimeError the backends catch). Errors raise `MediaError` with
the file and ffmpeg's own message; backends turn that into a failed `Reply`. A tool stopped
by a signal raises `omnisocial.processes.Interrupted` instead, which no backend catches: an
interrupted run is not counted as failed items, it ends and a rerun redoes them.
"""

from __future__ import annotations

import json
import mimetypes
import tempfile
import wave
from pathlib import Path
from typing import Protocol

import ffmpeg

from omnisocial.media.ffmpeg_run import compile_args, ffprobe_args, run_tool

FFMPEG = "ffmpeg"
FFPROBE = "ffprobe"
DEFAULT_TRACK_RATE = 16000

_MIME = {
    ".wav": "audio/wav",
    ".mp3": "audio/mp3",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".m4a": "audio/aac",
    ".aac": "audio/aac",
    ".mp4": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".avi": "video/x-msvideo",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".txt": "text/plain",
}


class MediaError(RuntimeError):
    """A media file could not be read or converted."""


class Known(Protocol):
    """What a caller already knows of one media file: `probe()` and `sample_frames(fps,
    max_frames, width, quality)` answer as this module's functions would for that file, without
    opening it (a streamed step's media, from its segments: `streaming.media.StepMedia`)."""

    def probe(self) -> dict: ...

    def sample_frames(self, fps: float, max_frames: int, width: int, quality: int) -> list[bytes]: ...


def mime_type(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    return _MIME.get(suffix) or mimetypes.guess_type(str(path))[0] or "application/octet-stream"


def _run(stream, path: Path, cmd: str = FFMPEG) -> bytes:
    """Run an ffmpeg-python graph; its stdout. No timeout here (as before).

    Through the package's runner: Interrupted, not MediaError, when a signal stopped ffmpeg.
    """
    try:
        result = run_tool(compile_args(stream, cmd=cmd), doing=f"reading {path}", timeout_s=None)
    except FileNotFoundError as exc:
        raise MediaError(f"{cmd} not found on PATH") from exc
    if result.returncode != 0:
        raise MediaError(_failed(path, cmd, result.stderr))
    return result.stdout


def _failed(path: Path, cmd: str, stderr: bytes | None) -> str:
    tail = (stderr or b"").decode("utf-8", errors="replace").strip().splitlines()[-3:]
    return f"{path}: {cmd} failed: {' | '.join(tail)}"


def probe(path: str | Path) -> dict:
    """Duration (s, or None) and whether the file has audio / video streams."""
    path = Path(path)
    if not path.is_file():
        raise MediaError(f"{path}: no such file")
    # ffmpeg.probe's arguments (-show_format -show_streams: a superset of the entries read here)
    argv = ffprobe_args(path, cmd=FFPROBE, v="error", show_entries="format=duration:stream=codec_type")
    try:
        result = run_tool(argv, doing=f"probing {path}", timeout_s=None)
    except FileNotFoundError as exc:
        raise MediaError(f"{FFPROBE} not found on PATH") from exc
    if result.returncode != 0:
        raise MediaError(_failed(path, FFPROBE, result.stderr))
    info = json.loads(result.stdout.decode("utf-8", errors="replace") or "{}")
    kinds = {stream.get("codec_type") for stream in info.get("streams", [])}
    try:
        duration = float(info.get("format", {}).get("duration"))
    except (TypeError, ValueError):
        duration = None
    return {"duration_s": duration, "has_audio": "audio" in kinds, "has_video": "video" in kinds}


def audio_wav(path: str | Path, sample_rate: int | None = None) -> bytes:
    """The file's audio as WAV bytes: WAV files as they are unless a rate is asked, else 16-bit PCM."""
    path = Path(path)
    if not path.is_file():
        raise MediaError(f"{path}: no such file")
    if path.suffix.lower() == ".wav" and (sample_rate is None or _is_pcm16_at(path, sample_rate)):
        return path.read_bytes()  # already what ffmpeg would write: no process to start
    rate = sample_rate or DEFAULT_TRACK_RATE
    return _run(_wav_stream(path, rate), path)


def _is_pcm16_at(path: Path, rate: int) -> bool:
    """Whether a wav file is 16-bit PCM at `rate` (a streamed step's prefix, joined from PCM segments)."""
    try:
        with wave.open(str(path), "rb") as handle:
            return (
                handle.getsampwidth() == 2
                and handle.getframerate() == int(rate)
                and handle.getcomptype() == "NONE"
            )
    except (wave.Error, EOFError):
        return False  # not plain PCM (float, extensible headers): ffmpeg converts it


def _wav_stream(path: Path, rate: int):
    """ffmpeg -nostdin -v error -i PATH -f wav -acodec pcm_s16le -ar RATE -vn pipe:1"""
    source = ffmpeg.input(str(path), nostdin=None, v="error")
    return source.output("pipe:1", format="wav", acodec="pcm_s16le", ar=rate, vn=None)


def video_audio_track(path: str | Path, sample_rate: int | None = None) -> bytes | None:
    """The video's audio track as WAV bytes, or None when it has none."""
    if not probe(path)["has_audio"]:
        return None
    return audio_wav(path, sample_rate or DEFAULT_TRACK_RATE)


def _frames_stream(path: Path, pattern: str, rate: float, max_frames: int, width: int, quality: int):
    """ffmpeg -nostdin -v error -i PATH -frames:v N -q:v Q -vf fps=R,scale=W:-2 PATTERN"""
    source = ffmpeg.input(str(path), nostdin=None, v="error")
    options = {"frames:v": max_frames, "q:v": quality, "vf": f"fps={rate:.6f},scale={width}:-2"}
    return source.output(pattern, **options)


def sample_frames(
    path: str | Path, fps: float = 1.0, max_frames: int = 32, width: int = 768, quality: int = 4
) -> list[bytes]:
    """JPEG frames sampled at `fps` (lowered so the clip gives at most `max_frames`), `width` px wide."""
    path = Path(path)
    info = probe(path)
    if not info["has_video"]:
        raise MediaError(f"{path}: no video stream")
    duration = info["duration_s"]
    rate = min(fps, max_frames / duration) if duration and duration > 0 else fps
    frames = frames_at(path, rate, max_frames, width, quality)
    if not frames:
        raise MediaError(f"{path}: ffmpeg produced no frames")
    return frames


def frames_at(path: str | Path, rate: float, max_frames: int, width: int, quality: int) -> list[bytes]:
    """JPEG frames of `path` at exactly `rate` per second (ffmpeg's fps filter: frame k is the one
    shown at k / rate), at most `max_frames`, `width` px wide; [] when there are none."""
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="omni-frames-") as folder:
        pattern = str(Path(folder) / "frame_%05d.jpg")
        _run(_frames_stream(path, pattern, rate, max_frames, width, quality), path)
        return [frame.read_bytes() for frame in sorted(Path(folder).glob("frame_*.jpg"))]
