"""Cutting a span of a clip for a model of one input modality (re-encoded, so the cut is exact).

`cut_clip(source, start_s, end_s, destination, modality, bitexact=False)`: audio_video: video
and audio (mp4, h264 + aac); video: video only (mp4, audio dropped); audio: a 16 kHz mono wav.
`cut_audio_track(source, start_s, end_s, destination, bitexact=False)`: the audio of an
audio_video cut alone (an m4a, aac at the source's rate and channels, as `cut_clip` encodes it).
`start_s` None or 0 starts at the clip's start, `end_s` None runs to its end. Written through
a unique temporary name and renamed, so jobs that cut side by side never trip over each
other's files. `bitexact` drops the encoder's version string and the container's metadata,
so the same span always gives the same bytes (the streaming driver's step media are hashed
into the result cache's keys).
"""

from __future__ import annotations

import os
from pathlib import Path

import ffmpeg

from omnisocial.io import atomic_path
from omnisocial.media.ffmpeg_run import run_ffmpeg

MODALITIES = ("audio_video", "video", "audio")
SUFFIX = {"audio": ".wav", "video": ".mp4", "audio_video": ".mp4"}
BITEXACT = {"fflags": "+bitexact", "flags:v": "+bitexact", "flags:a": "+bitexact", "map_metadata": "-1"}


def encode_options(modality: str) -> dict:
    """ffmpeg output options of a clip for models of `modality`."""
    if modality not in MODALITIES:
        raise ValueError(f"unknown media modality {modality!r}; expected one of {', '.join(MODALITIES)}")
    if modality == "audio":
        return {"vn": None, "ac": 1, "ar": 16000, "format": "wav"}
    options = {"c:v": "libx264", "preset": "ultrafast", "pix_fmt": "yuv420p", "format": "mp4"}
    options.update({"an": None} if modality == "video" else {"c:a": "aac"})
    return options


AUDIO_TRACK = {"vn": None, "c:a": "aac", "format": "mp4"}  # the audio of an audio_video cut


def cut_clip(
    source: str | os.PathLike,
    start_s: float | None,
    end_s: float | None,
    destination: str | os.PathLike,
    modality: str,
    bitexact: bool = False,
) -> Path:
    """[start_s, end_s) of `source` as a model of `modality` may see it (module doc)."""
    return _cut(source, start_s, end_s, destination, encode_options(modality), bitexact)


def cut_audio_track(
    source: str | os.PathLike,
    start_s: float | None,
    end_s: float | None,
    destination: str | os.PathLike,
    bitexact: bool = False,
) -> Path:
    """[start_s, end_s) of `source`'s audio encoded as an audio_video cut encodes it (module doc)."""
    return _cut(source, start_s, end_s, destination, dict(AUDIO_TRACK), bitexact)


def _cut(source, start_s, end_s, destination, options: dict, bitexact: bool) -> Path:
    destination = Path(destination)
    if bitexact:
        options.update(BITEXACT)
    start = float(start_s or 0.0)
    if end_s is not None:
        if float(end_s) <= start:
            raise ValueError(f"cannot cut {source}: end {end_s} s is not after start {start} s")
        options["t"] = f"{float(end_s) - start:.6f}"
    inputs = {"nostdin": None, "v": "error"}
    if start > 0:
        inputs["ss"] = f"{start:.6f}"  # an input seek: decoded from the keyframe before, exact after
    with atomic_path(destination) as tmp:
        stream = ffmpeg.input(str(source), **inputs).output(str(tmp), **options).overwrite_output()
        run_ffmpeg(stream, file=Path(source), what="cut")
    return destination
