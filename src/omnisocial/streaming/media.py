"""Step media without re-encoding the world: each item cut once into segments, steps assembled.

An item's segment bounds are every time a step's media starts or ends (`segment_bounds`):
the media start, each query time t_k and, with a sliding window, each t_k - window_s. Each
span [b_i, b_i+1) is cut ONCE, re-encoded and bitexact (`cut_segments`: audio decoded once
and split at exact sample positions, video cut per span by `media.cut.cut_clip`),
into `segment_dir(root, modality, item_id)`, so every model reads the same files (a rule's
declared output; atomic writes, so jobs side by side never see half a file).

A step's prefix (or window) is the run of segments between its start and t, joined by
ffmpeg's concat demuxer with stream copy (`assemble`; audio-only wav segments are joined
sample for sample in Python, without an ffmpeg start-up): no decoding, and bitexact, so the
same step always gives the same bytes and the same sha256 (the result cache keys on media
content). Joined AAC segments each keep their encoder priming (a few ms
of near-silence at each join); video segments each start on a keyframe.
"""

from __future__ import annotations

import os
import tempfile
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ffmpeg

from omnisocial.io import atomic_path
from omnisocial.media.cut import SUFFIX, cut_clip
from omnisocial.media.ffmpeg_run import run_ffmpeg
from omnisocial.streaming.protocol import StreamItem
from omnisocial.streaming.schedule import DIGITS


def segment_bounds(item: StreamItem, window_s: float | None) -> list[float]:
    """Sorted distinct times where some step's media starts or ends (module doc)."""
    bounds = {round(item.media_start, DIGITS)}
    for t in item.schedule.times():
        bounds.add(t)
        if window_s is not None:
            bounds.add(round(max(item.media_start, t - window_s), DIGITS))
    return sorted(bounds)


def segment_dir(root: str | os.PathLike, modality: str, item_id: str) -> Path:
    if not item_id or "/" in item_id or item_id in (".", ".."):
        raise ValueError(f"item id {item_id!r} cannot name a folder")
    return Path(root) / modality / item_id


def segment_paths(
    root: str | os.PathLike, modality: str, item: StreamItem, window_s: float | None
) -> list[Path]:
    """Segment i's file: <root>/<modality>/<item_id>/<i>_<start>_<end><suffix>."""
    bounds = segment_bounds(item, window_s)
    folder = segment_dir(root, modality, item.item_id)
    return [
        folder / f"{i:05d}_{start:.3f}_{end:.3f}{SUFFIX[modality]}"
        for i, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
    ]


def step_segments(item: StreamItem, window_s: float | None, start: float, t: float) -> slice:
    """The slice of the item's segments that covers [start, t]."""
    bounds = segment_bounds(item, window_s)
    first, last = bounds.index(round(start, DIGITS)), bounds.index(round(t, DIGITS))
    if last <= first:
        raise ValueError(f"item {item.item_id}: step media [{start}, {t}] is empty")
    return slice(first, last)


def cut_segments(
    item: StreamItem, window_s: float | None, root: str | os.PathLike, modality: str, threads: int = 1
) -> list[Path]:
    """Cut every segment of `item` that is not there yet; the segment files, in time order.

    Audio: the span is decoded ONCE to 16 kHz mono PCM and split at the bounds' sample
    positions (round(b * rate)), so consecutive segments join into exactly the prefix's
    samples. Video: each segment is its own exact re-encoded cut (`media.cut.cut_clip`).
    """
    bounds = segment_bounds(item, window_s)
    paths = segment_paths(root, modality, item, window_s)
    if all(path.is_file() for path in paths):
        return paths
    if modality == "audio":
        return _split_wav(item, bounds, paths)

    def cut(i: int) -> Path:
        if not paths[i].is_file():
            cut_clip(item.source, bounds[i], bounds[i + 1], paths[i], modality, bitexact=True)
        return paths[i]

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        return list(pool.map(cut, range(len(paths))))


def _split_wav(item: StreamItem, bounds: list[float], paths: list[Path]) -> list[Path]:
    folder = paths[0].parent
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".decode-", dir=folder) as scratch:
        whole = cut_clip(
            item.source, bounds[0], bounds[-1], Path(scratch) / "span.wav", "audio", bitexact=True
        )
        with wave.open(str(whole), "rb") as span:
            rate, width, channels = span.getframerate(), span.getsampwidth(), span.getnchannels()
            frames = span.readframes(span.getnframes())
    frame_bytes = width * channels
    total = len(frames) // frame_bytes
    for i, path in enumerate(paths):
        first = min(round((bounds[i] - bounds[0]) * rate), total)
        last = min(round((bounds[i + 1] - bounds[0]) * rate), total)
        with atomic_path(path) as tmp, wave.open(str(tmp), "wb") as out:
            out.setnchannels(channels)
            out.setsampwidth(width)
            out.setframerate(rate)
            out.writeframes(frames[first * frame_bytes : last * frame_bytes])
    return paths


def assemble(segments: list[Path], destination: str | os.PathLike) -> Path:
    """The segments joined in order into `destination` (concat demuxer, stream copy, bitexact)."""
    destination = Path(destination)
    if not segments:
        raise ValueError(f"{destination}: no segments to join")
    missing = [str(path) for path in segments if not Path(path).is_file()]
    if missing:
        raise FileNotFoundError(f"missing segment(s): {', '.join(missing[:3])}")
    if destination.suffix == ".wav":
        return _join_wav(segments, destination)
    listing = "".join(f"file '{Path(path).resolve()}'\n" for path in segments)
    fmt = "mp4"
    with atomic_path(destination.with_suffix(".txt")) as list_file, atomic_path(destination) as tmp:
        list_file.write_text(listing, encoding="utf-8")
        joined = ffmpeg.input(str(list_file), f="concat", safe=0, nostdin=None, v="error")
        options = {"c": "copy", "fflags": "+bitexact", "map_metadata": "-1", "format": fmt}
        run_ffmpeg(joined.output(str(tmp), **options).overwrite_output(), file=Path(segments[0]), what="join")
    destination.with_suffix(".txt").unlink(missing_ok=True)
    return destination


def _join_wav(segments: list[Path], destination: Path) -> Path:
    """PCM wav segments joined sample for sample in Python (no ffmpeg start-up, ~1 ms a step)."""
    params = None
    with atomic_path(destination) as tmp, wave.open(str(tmp), "wb") as out:
        for path in segments:
            with wave.open(str(path), "rb") as part:
                own = (part.getnchannels(), part.getsampwidth(), part.getframerate())
                if params is None:
                    params = own
                    out.setnchannels(own[0])
                    out.setsampwidth(own[1])
                    out.setframerate(own[2])
                elif own != params:
                    raise ValueError(f"{path}: wav format {own} differs from the first segment's {params}")
                out.writeframes(part.readframes(part.getnframes()))
    return destination


def cut_prefix(
    item: StreamItem, start: float, t: float, destination: str | os.PathLike, modality: str
) -> Path:
    """What `assemble` replaces: step t's media cut afresh from the source (the benchmark's reference)."""
    return cut_clip(item.source, start, t, destination, modality, bitexact=True)


def cut_all_segments(
    items: list[StreamItem], window_s: float | None, root: str | os.PathLike, modality: str, threads: int = 1
) -> int:
    """Cut every item's segments under `root/modality` (module doc); the number of segments."""
    (Path(root) / modality).mkdir(parents=True, exist_ok=True)
    return sum(len(cut_segments(item, window_s, root, modality, threads)) for item in items)
