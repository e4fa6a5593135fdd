"""Stimuli in three modalities for each sampled dyad (docs/benchmarks/familiarity.md#stimuli).

For each design row the same window [clip_start, clip_end] is rendered as
- text:  `text/{dyad_id}.txt`, the speaker-labelled transcript of the window;
- audio: `audio/{dyad_id}.wav`, both microphones mixed to mono and loudness-balanced,
         and (params['stereo']) `audio_stereo/{dyad_id}.wav`, participant A left, B right;
- video: `video/{dyad_id}.mp4`, both cameras side by side with the mixed audio.

A dyad's media files are cut and encoded by one ffmpeg command (three outputs, each
track decoded once) built with ffmpeg-python and flagged bit-exact (single thread, no
metadata), so the same inputs give the same bytes.
Every file is written to a temporary name and renamed into place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import ffmpeg
import numpy as np
import pandas as pd
import soundfile as sf

from omnisocial.familiarity.contracts import STIMULI_MANIFEST
from omnisocial.io import atomic_path, sha256_file, write_text
from omnisocial.media.audio import WAV_SUFFIXES, mp4_probe
from omnisocial.media.ffmpeg_run import compile_args, ffprobe_args, run_tool

SPEAKER_LABELS = {"a": "A", "b": "B"}
MAX_GAIN = 10.0  # at most +-20 dB of balancing gain per track
PEAK_LIMIT = 0.98  # the mixed signal's peak is scaled under this (no clipping)
SILENT_RMS = 1e-5  # a track this quiet is left at unity gain
GATE_DB = 20.0  # frames this far under a track's loud frames are pauses, not speech
BITEXACT = {"fflags": "+bitexact", "flags:v": "+bitexact", "flags:a": "+bitexact", "map_metadata": -1}


class StimulusError(RuntimeError):
    """Rendering a dyad's stimulus failed; the message names the dyad and ffmpeg's last stderr lines."""


def _stderr_tail(stderr: bytes, lines: int = 8) -> str:
    text = (stderr or b"").decode("utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:]) if text else "(no stderr)"


def _run(dyad_id: str, what: str, stream) -> bytes:
    """Run an ffmpeg-python stream quietly and return its stdout.

    StimulusError with ffmpeg's stderr tail when it fails; Interrupted (not a StimulusError:
    the media are not at fault) when a signal stopped it.
    """
    stream = stream.global_args(
        "-nostdin", "-hide_banner", "-loglevel", "error", "-filter_complex_threads", "1"
    )
    result = run_tool(
        compile_args(stream.overwrite_output()), doing=f"making {what} of dyad {dyad_id}", timeout_s=None
    )
    if result.returncode != 0:
        raise StimulusError(f"dyad {dyad_id}: ffmpeg failed making {what}: {_stderr_tail(result.stderr)}")
    return result.stdout


def clock(seconds: float) -> str:
    """`mm:ss.t` for a time in seconds (tenths, rounded)."""
    tenths = max(0, round(seconds * 10))
    return f"{tenths // 600:02d}:{(tenths % 600) / 10:04.1f}"


def transcript_text(segments: pd.DataFrame | None, interaction_id: str, start: float, end: float) -> str:
    """The transcript lines of the segments overlapping [start, end].

    One line per segment, `[mm:ss.t] A: text`, ordered by start time; the time is the
    segment's start relative to the clip start (0 for a segment already under way), and
    speakers a/b are labelled A/B (A is participant_a). Empty when there are no segments.
    """
    if segments is None or segments.empty:
        return ""
    rows = segments[
        (segments["interaction_id"].astype(str) == str(interaction_id))
        & (segments["start"].astype(float) < end)
        & (segments["end"].astype(float) > start)
    ]
    rows = rows.sort_values(["start", "end", "speaker"], kind="mergesort")
    lines = []
    for row in rows.itertuples(index=False):
        text = " ".join(str(row.text).split())
        label = SPEAKER_LABELS.get(str(row.speaker), str(row.speaker).upper())
        lines.append(f"[{clock(max(float(row.start), start) - start)}] {label}: {text}")
    return "\n".join(lines) + "\n" if lines else ""


def _media(path_value: str, media_root: Path | None, dyad_id: str, what: str) -> str:
    if not path_value:
        raise StimulusError(f"dyad {dyad_id}: the interaction has no {what} path")
    path = Path(path_value)
    if not path.is_absolute() and media_root is not None:
        path = Path(media_root) / path
    if not path.is_file():
        raise StimulusError(f"dyad {dyad_id}: {what} file {path} does not exist")
    return str(path)


def _window_input(path: str, start: float, duration: float):
    return ffmpeg.input(path, ss=f"{start:.6f}", t=f"{duration:.6f}")


def _sample_index(seconds: float, sample_rate: int) -> int | None:
    """`seconds` as a whole number of samples, or None when it falls between samples."""
    samples = seconds * sample_rate
    return round(samples) if abs(samples - round(samples)) < 1e-6 else None


def _read_wav_window(path: str, start: float, duration: float, sample_rate: int) -> np.ndarray | None:
    """The window of a mono 16-bit WAV at `sample_rate` read in-process, or None for any other file.

    For such a file and a window on sample boundaries (clip edges are in ms) these are
    the samples ffmpeg's `-ss/-t` decode gives (s16 / 32768 as float32), without its process.
    """
    if Path(path).suffix.lower() not in WAV_SUFFIXES:
        return None
    first, count = _sample_index(start, sample_rate), _sample_index(duration, sample_rate)
    try:
        info = sf.info(path)
    except (sf.LibsndfileError, RuntimeError):
        return None
    if first is None or count is None or info.subtype != "PCM_16" or info.channels != 1:
        return None
    if info.samplerate != sample_rate:
        return None
    return sf.read(path, dtype="float32", start=first, stop=first + count)[0]


def _decode(dyad_id: str, path: str, start: float, duration: float, sample_rate: int) -> np.ndarray:
    samples = _read_wav_window(path, start, duration, sample_rate)
    if samples is not None:
        return samples
    stream = _window_input(path, start, duration).output("pipe:", format="f32le", ac=1, ar=sample_rate)
    return np.frombuffer(_run(dyad_id, f"a level measure of {path}", stream), "<f4")


def speech_level(track: np.ndarray, frame_len: int = 800) -> float:
    """RMS over the voiced part of a track: frames (frame_len samples) whose RMS is within
    GATE_DB of the track's loud frames (95th percentile), so pauses and the other
    speaker's crosstalk do not make a speaker who talks less look quieter."""
    if track.size == 0:
        return 0.0
    if track.size < frame_len:  # shorter than one frame: plain RMS
        return float(np.sqrt(np.mean(np.square(track, dtype=np.float64))))
    frames = track[: track.size - track.size % frame_len].reshape(-1, frame_len)
    power = np.mean(np.square(frames, dtype=np.float64), axis=1)
    loud = float(np.percentile(power, 95))
    if loud <= 0:
        return 0.0
    voiced = power[power >= loud * 10 ** (-GATE_DB / 10)]
    return float(np.sqrt(np.mean(voiced)))


def balance_gains(track_a: np.ndarray, track_b: np.ndarray, frame_len: int = 800) -> tuple[float, float]:
    """Gains that bring both tracks to the same speech level (their geometric mean).

    Levels are `speech_level`s. Each gain is bounded to [1/MAX_GAIN, MAX_GAIN]; a
    near-silent track keeps gain 1 (and the other then keeps its level too). The mix
    (a*ga + b*gb) / 2 would then peak under PEAK_LIMIT; both gains are scaled down
    together when it would not.
    """
    levels = [speech_level(track, frame_len) for track in (track_a, track_b)]
    if min(levels) < SILENT_RMS:
        gains = [1.0, 1.0]
    else:
        target = math.sqrt(levels[0] * levels[1])
        gains = [min(MAX_GAIN, max(1.0 / MAX_GAIN, target / value)) for value in levels]
    length = max(track_a.size, track_b.size)
    mix = np.zeros(length)
    mix[: track_a.size] += gains[0] * track_a
    mix[: track_b.size] += gains[1] * track_b
    peak = float(np.max(np.abs(mix / 2))) if length else 0.0
    if peak > PEAK_LIMIT:
        gains = [g * PEAK_LIMIT / peak for g in gains]
    return round(gains[0], 6), round(gains[1], 6)


def _tracks(paths, start: float, duration: float, sample_rate: int, branches: int) -> list:
    """Each track's window, resampled to mono float once; `branches` outputs each (asplit when > 1)."""
    tracks = []
    for path in paths:
        track = (
            _window_input(path, start, duration)
            .audio.filter("aresample", sample_rate)
            .filter("aformat", sample_fmts="fltp", channel_layouts="mono")
        )
        split = track.filter_multi_output("asplit", branches) if branches > 1 else None
        tracks.append([split[k] for k in range(branches)] if split is not None else [track])
    return tracks


def _gain(track, gain: float):
    return track.filter("volume", volume=f"{gain:.6f}", precision="float")


def _exact_length(stream, sample_rate: int, duration: float):
    samples = round(duration * sample_rate)
    return stream.filter("apad", whole_len=samples).filter("atrim", end_sample=samples)


def _mix(tracks, sample_rate, duration, gains):
    """The mono mix: each track balanced by its gain, summed, halved, padded to the exact length."""
    chains = [_gain(track, gain / 2) for track, gain in zip(tracks, gains, strict=True)]
    mixed = ffmpeg.filter(chains, "amix", inputs=2, normalize=0, duration="longest")
    return _exact_length(mixed, sample_rate, duration)


def _probe_duration(dyad_id: str, path: Path) -> float:
    if path.suffix == ".wav":  # our own PCM WAV: its header's length is ffprobe's duration
        info = sf.info(str(path))
        return round(info.frames / info.samplerate, 6)
    in_process = mp4_probe(path)  # ffprobe's answer without its start, where releases agree
    if in_process is not None:
        return round(in_process["format_duration"], 6)
    result = run_tool(ffprobe_args(path), doing=f"probing {path.name} for dyad {dyad_id}", timeout_s=None)
    if result.returncode != 0:
        raise StimulusError(f"dyad {dyad_id}: ffprobe failed on {path.name}: {_stderr_tail(result.stderr)}")
    return round(float(json.loads(result.stdout)["format"]["duration"]), 6)


def _video_output(video, start: float, mix, path: Path, params: Mapping, sample_rate: int, duration: float):
    """Both cameras side by side (scaled to video_height, at video_fps) with the mono mix."""
    height, fps = int(params["video_height"]), params["video_fps"]
    cameras = [
        _window_input(camera, start, duration)
        .video.filter("scale", -2, height)
        .filter("fps", fps=fps)
        .filter("setsar", 1)
        for camera in video
    ]
    return ffmpeg.output(
        ffmpeg.filter(cameras, "hstack", inputs=2),
        mix,
        str(path),
        vcodec="libx264",
        preset="veryfast",
        crf=28,
        pix_fmt="yuv420p",
        acodec="aac",
        audio_bitrate="64k",
        ar=sample_rate,
        ac=1,
        t=f"{duration:.6f}",
        threads=1,
        **BITEXACT,
    )


def _render_dyad(
    dyad, row, segments, out_dir: Path, params: Mapping, media_root: Path | None, relative_to: Path
) -> list[dict]:
    dyad_id = str(dyad.dyad_id)
    start, end = float(dyad.clip_start), float(dyad.clip_end)
    duration = end - start
    if duration <= 0:
        raise StimulusError(f"dyad {dyad_id}: empty clip window [{start}, {end}]")
    sample_rate = int(params["sample_rate"])
    audio = [_media(row[f"audio_{s}"], media_root, dyad_id, f"audio_{s}") for s in ("a", "b")]
    video = [_media(row[f"video_{s}"], media_root, dyad_id, f"video_{s}") for s in ("a", "b")]
    common = {"clip_start": start, "clip_end": end, "dyad_id": dyad_id}
    rows = []

    text_path = out_dir / "text" / f"{dyad_id}.txt"
    write_text(text_path, transcript_text(segments, str(dyad.interaction_id), start, end))
    rows.append(
        {"modality": "text", "variant": "transcript", "path": text_path, "duration_s": round(duration, 6)}
    )

    levels = [_decode(dyad_id, path, start, duration, sample_rate) for path in audio]
    gains = balance_gains(*levels, frame_len=max(1, round(0.05 * sample_rate)))
    wav = {"acodec": "pcm_s16le", "ar": sample_rate, **BITEXACT}
    stereo = bool(params.get("stereo", False))
    # One ffmpeg run writes the mix, the stereo file and the video (each track decoded once).
    tracks = _tracks(audio, start, duration, sample_rate, branches=2 if stereo else 1)
    mix = _mix([branches[0] for branches in tracks], sample_rate, duration, gains)
    mix = mix.filter_multi_output("asplit")  # the mix wav and the video's audio
    targets = {"mix": out_dir / "audio" / f"{dyad_id}.wav", "video": out_dir / "video" / f"{dyad_id}.mp4"}
    if stereo:
        targets["stereo"] = out_dir / "audio_stereo" / f"{dyad_id}.wav"
    with ExitStack() as stack:
        tmp = {name: stack.enter_context(atomic_path(path)) for name, path in targets.items()}
        outputs = [mix[0].output(str(tmp["mix"]), ac=1, **wav)]
        if stereo:
            peak = max(
                float(np.max(np.abs(t * g))) if t.size else 0.0 for t, g in zip(levels, gains, strict=True)
            )
            scale = min(1.0, PEAK_LIMIT / peak) if peak > 0 else 1.0
            chains = [
                _exact_length(_gain(branches[1], gain * scale), sample_rate, duration)
                for branches, gain in zip(tracks, gains, strict=True)
            ]
            joined = ffmpeg.filter(chains, "join", inputs=2, channel_layout="stereo", map="0.0-FL|1.0-FR")
            outputs.append(joined.output(str(tmp["stereo"]), ac=2, **wav))
        outputs.append(_video_output(video, start, mix[1], tmp["video"], params, sample_rate, duration))
        _run(dyad_id, "the audio and video stimuli", ffmpeg.merge_outputs(*outputs))
    rows.append({"modality": "audio", "variant": "mix", "path": targets["mix"]})
    if stereo:
        rows.append({"modality": "audio", "variant": "stereo", "path": targets["stereo"]})
    rows.append({"modality": "video", "variant": "side_by_side", "path": targets["video"]})

    for entry in rows:
        path = entry["path"]
        if "duration_s" not in entry:
            entry["duration_s"] = _probe_duration(dyad_id, path)
        entry["sha256"] = sha256_file(path)
        entry["path"] = path.relative_to(relative_to).as_posix()
        entry.update(common)
    return rows


def render_stimuli(
    design: pd.DataFrame,
    interactions: pd.DataFrame,
    segments: pd.DataFrame | None,
    out_dir: Path,
    params: Mapping,
    media_root: Path | None = None,
    workers: int = 1,
    manifest_dir: Path | None = None,
) -> pd.DataFrame:
    """Render every dyad of `design` into `out_dir`; return the STIMULI_MANIFEST frame.

    `params`: sample_rate (Hz of both audio outputs and the video's audio), stereo (bool),
    video_height (px; each camera is scaled to it, width keeping the aspect, even), video_fps.
    Media paths in `interactions` (audio_a/b, video_a/b) are used as they are, relative ones
    resolved against `media_root` when given. `segments` (SEGMENTS) feed the transcripts.

    Loudness balance: each participant's track is measured (RMS over its voiced 50 ms
    frames in the window, `speech_level`) and scaled so both have the same level, within
    +-20 dB (`balance_gains`); the mono mix is half the
    sum, kept under clipping. The stereo file holds the same balanced tracks unmixed.
    Audio is padded/trimmed to exactly round(clip length x sample_rate) samples.

    Manifest rows per dyad, dyads in dyad_id order: text/transcript, audio/mix,
    audio/stereo (when enabled), video/side_by_side; duration_s is the clip length for
    text, the WAV header's length for audio (ffprobe's duration of it) and ffprobe's
    container duration for video; paths are relative to `manifest_dir` (default
    `out_dir`, which must lie inside it). Dyads render on `workers` threads (each
    runs its own single-threaded ffmpeg processes); the manifest order does not depend on it.
    Every file is rendered each call (nothing is reused). Raises StimulusError naming the
    dyad when an input is missing or ffmpeg fails.
    """
    out_dir = Path(out_dir)
    by_id = interactions.assign(interaction_id=interactions["interaction_id"].astype(str)).set_index(
        "interaction_id"
    )
    relative_to = Path(manifest_dir) if manifest_dir is not None else out_dir

    def render(dyad) -> list[dict]:
        interaction_id = str(dyad.interaction_id)
        if interaction_id not in by_id.index:
            raise StimulusError(
                f"dyad {dyad.dyad_id}: interaction {interaction_id} is not in the interactions table"
            )
        row = by_id.loc[interaction_id].map(
            lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else v
        )
        return _render_dyad(dyad, row, segments, out_dir, params, media_root, relative_to)

    dyads = list(design.sort_values("dyad_id", kind="mergesort").itertuples(index=False))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        rows = [entry for entries in pool.map(render, dyads) for entry in entries]
    if not rows:
        return STIMULI_MANIFEST.empty()
    return STIMULI_MANIFEST.validate(pd.DataFrame(rows))


__all__ = [
    "StimulusError",
    "balance_gains",
    "clock",
    "render_stimuli",
    "transcript_text",
]
