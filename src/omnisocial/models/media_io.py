"""Turning stimulus files into what model APIs accept: WAV bytes, sampled JPEG frames, MIME types.

All decoding goes through the ffmpeg / ffprobe executables (as the rest of the workflow
does), so results do not depend on a Python media stack. Errors raise `MediaError` with
the file and ffmpeg's own message; backends turn that into a failed `Reply`.
"""

from __future__ import annotations

import json
import mimetypes
import subprocess
import tempfile
from pathlib import Path

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


def mime_type(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    return _MIME.get(suffix) or mimetypes.guess_type(str(path))[0] or "application/octet-stream"


def _run(args: list[str], path: Path) -> bytes:
    try:
        done = subprocess.run(args, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise MediaError(f"{args[0]} not found on PATH") from exc
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", errors="replace").strip().splitlines()[-3:]
        raise MediaError(f"{path}: {args[0]} failed: {' | '.join(tail)}")
    return done.stdout


def probe(path: str | Path) -> dict:
    """Duration (s, or None) and whether the file has audio / video streams."""
    path = Path(path)
    if not path.is_file():
        raise MediaError(f"{path}: no such file")
    out = _run(
        [
            FFPROBE,
            "-v",
            "error",
            "-show_entries",
            "format=duration:stream=codec_type",
            "-of",
            "json",
            str(path),
        ],
        path,
    )
    info = json.loads(out or b"{}")
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
    if sample_rate is None and path.suffix.lower() == ".wav":
        return path.read_bytes()
    rate = sample_rate or DEFAULT_TRACK_RATE
    args = [FFMPEG, "-nostdin", "-v", "error", "-i", str(path), "-vn", "-ar", str(rate)]
    return _run([*args, "-acodec", "pcm_s16le", "-f", "wav", "pipe:1"], path)


def video_audio_track(path: str | Path, sample_rate: int | None = None) -> bytes | None:
    """The video's audio track as WAV bytes, or None when it has none."""
    if not probe(path)["has_audio"]:
        return None
    return audio_wav(path, sample_rate or DEFAULT_TRACK_RATE)


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
    with tempfile.TemporaryDirectory(prefix="omni-frames-") as folder:
        pattern = str(Path(folder) / "frame_%05d.jpg")
        _run(
            [
                FFMPEG, "-nostdin", "-v", "error", "-i", str(path),
                "-vf", f"fps={rate:.6f},scale={width}:-2",
                "-frames:v", str(max_frames), "-q:v", str(quality), pattern,
            ],
            path,
        )  # fmt: skip
        frames = [frame.read_bytes() for frame in sorted(Path(folder).glob("frame_*.jpg"))]
    if not frames:
        raise MediaError(f"{path}: ffmpeg produced no frames")
    return frames
