"""Step media without re-encoding the world: each item cut once, each step's media assembled.

An item's segment bounds are every time a step's media starts or ends (`segment_bounds`):
the media start, each query time t_k and, with a sliding window, each t_k - window_s. Each
span [b_i, b_i+1) is cut ONCE (`cut_segments`), bitexact, into `segment_dir(root, modality,
item_id)`, so every model reads the same files (a rule's declared output; atomic writes, so
jobs side by side never see half a file):

- audio: the span decoded once to 16 kHz mono PCM and split at exact sample positions
  (round(b * rate)): wav segments that join sample for sample into any prefix or window.
- video and audio_video: the item's video encoded ONCE on one frame grid, a keyframe forced
  at each bound's first frame, and split there by stream copy (`_split_video`: each frame in
  one segment, each segment starting on a keyframe), each segment's frame count and rate in
  the folder's `frames.json`;
  audio_video adds the item's audio, decoded ONCE and encoded as continuous AAC tracks from
  b_0 (`_cut_tracks`, `audio_<g>_<b_0>_<b_end>.m4a`): one track per frame grid, so that each
  bound where a step may end falls on an AAC frame boundary of its track (module doc, "Exact
  audio").

A step's media [start, t] (`assemble`) is its run of segments joined with no decoding:
wav segments in Python; mp4 remuxed in this process with PyAV (`_join_mp4`: no ffmpeg
start-up, each file's packet index read once per process), the video segments' packets each
placed at the sum of the frame durations before it (`frames.json`: a segment's own header
rounds its length up to its cut, and those roundings add up at every join), and the audio as
the packets of the track whose grid ends at t, from start to t (from a pre-roll packet before
`start`, which the mp4 edit list skips, to the packet ending at t), and the last frame shown
cut short to end at t too. So at every step the audio and the video both end at t (to a tick
of their time bases), hold the frames of a direct cut of [start, t] (`cut_prefix`) at its
times, and its sound; a direct cut's video runs on to its last frame's end, up to one frame
past t (0.1 s at 10 fps, past its audio). No join adds AAC priming: joining per-span AAC cuts
did, at every join (docs/performance.md#code), so a streamed model heard speech later and later
behind the picture. Stream copy with a bitexact muxer: the same step always gives the same bytes
and the same sha256 (the result cache keys on media content).

Exact audio: a decoder plays every AAC frame whole (1024 samples; 64 ms at 16 kHz): the mp4
edit list skips the priming at the start, but ffmpeg (and so most model stacks) does not trim
a last frame that runs past the edit's end. One track on one grid therefore gave a prefix
audio up to a frame longer than its video (docs/performance.md#models). So the item's
audio is encoded on every grid a step end needs: for a bound b, the grid shifted by
g = -(b - b_0) * rate mod 1024 samples (g samples of the source before b_0, or of silence
where there are none, feed the encoder first and are skipped by the edit list), so b ends a
frame and a step's decoded audio has exactly the samples of [start, t]. Steps 1 s apart at
16 kHz share 8 grids; each track is encoded in this process (PyAV) from the decoded span.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
import wave
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import ffmpeg
import numpy as np

from omnisocial.io import atomic_path, write_json
from omnisocial.media.cut import BITEXACT, SUFFIX, cut_clip, encode_options
from omnisocial.media.ffmpeg_run import MediaError, probe_json, run_ffmpeg
from omnisocial.models import media_io
from omnisocial.streaming.protocol import StreamItem
from omnisocial.streaming.schedule import DIGITS

FRAMES = "frames.json"  # per item folder: each video segment's frame count and rate, its audio track
TRACK_PREFIX = "audio_"
PREROLL_S = 0.1  # audio read before a window's start: more than one AAC packet at 8 kHz and up
AAC_FRAME = 1024  # samples an AAC frame decodes to, whole


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


def bound_text(bound: float) -> str:
    """A bound as a file name carries it: 3 decimals, or all 6 where it has them (read back exactly)."""
    return f"{bound:.3f}" if round(bound, 3) == bound else f"{bound:.{DIGITS}f}"


def segment_paths(
    root: str | os.PathLike, modality: str, item: StreamItem, window_s: float | None
) -> list[Path]:
    """Segment i's file: <root>/<modality>/<item_id>/<i>_<start>_<end><suffix>."""
    bounds = segment_bounds(item, window_s)
    folder = segment_dir(root, modality, item.item_id)
    return [
        folder / f"{i:05d}_{bound_text(start)}_{bound_text(end)}{SUFFIX[modality]}"
        for i, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
    ]


def segment_span(path: str | os.PathLike) -> tuple[float, float]:
    """(start, end) of a segment or audio track, read from its name (`segment_paths`)."""
    try:
        _, start, end = Path(path).stem.rsplit("_", 2)
        return float(start), float(end)
    except ValueError:
        raise ValueError(f"{path}: not a segment name <i>_<start>_<end> (streaming.media)") from None


def track_path(folder: Path, shift: int, start: float, end: float) -> Path:
    """The item's AAC track of [start, end) on the frame grid shifted by `shift` samples
    (audio_video; `grid_shift`)."""
    return folder / f"{TRACK_PREFIX}{shift:04d}_{bound_text(start)}_{bound_text(end)}.m4a"


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
    samples. Video and audio_video: the video is encoded once and split at the bounds
    (`_split_video`), each segment's frames counted into `frames.json`; audio_video also
    decodes the item's audio once and encodes its tracks, one per frame grid a segment end
    needs (`_cut_tracks`, module doc "Exact audio").
    """
    bounds = segment_bounds(item, window_s)
    paths = segment_paths(root, modality, item, window_s)
    if modality == "audio":
        if all(path.is_file() for path in paths):
            return paths
        return _split_wav(item, bounds, paths)
    folder = paths[0].parent
    manifest = read_manifest(folder)
    # segment i's track: the one whose frame grid ends at the segment's end (module doc)
    tracks = _cut_tracks(item, bounds, folder) if modality == "audio_video" else [None] * len(paths)
    todo = [i for i, path in enumerate(paths) if path.name not in manifest or not path.is_file()]
    if not todo and all(manifest[path.name].get("audio") == tracks[i] for i, path in enumerate(paths)):
        return paths

    if todo:  # a missing segment, or one uncounted (cut by an earlier version, span by span)
        _split_video(item, bounds, paths)
        manifest = {name: entry for name, entry in manifest.items() if name not in {p.name for p in paths}}

    def count(i: int) -> tuple[str, dict]:
        entry = manifest.get(paths[i].name) or count_frames(paths[i])
        return paths[i].name, {**entry, "audio": tracks[i]}

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        manifest.update(dict(pool.map(count, range(len(paths)))))
    write_json(folder / FRAMES, manifest)
    return paths


def _split_video(item: StreamItem, bounds: list[float], paths: list[Path]) -> None:
    """The video of [b_0, b_last) encoded ONCE on one frame grid, a keyframe forced at the first
    frame of each bound, and split there by stream copy (the segment muxer): each frame lands in
    exactly one segment, as in a direct cut. Cutting each span on its own rounded every span up
    to whole frames, so short spans repeated frames (docs/performance.md#code)."""
    folder = paths[0].parent
    folder.mkdir(parents=True, exist_ok=True)
    rate = _frame_rate(Path(item.source))
    # the first frame at or after each bound, on the cut's grid (frame k at k / rate from b_0);
    # keyframes forced at those frames' own times (ffmpeg rounds a forcing time to the nearest
    # frame) and the split made by frame number, so encoder and splitter agree on every frame
    firsts = [
        math.ceil(
            (
                Fraction(bound).limit_denominator(10**DIGITS)
                - Fraction(bounds[0]).limit_denominator(10**DIGITS)
            )
            * rate
            - Fraction(1, 10**6)
        )
        for bound in bounds[1:-1]
    ]
    if any(later <= earlier for earlier, later in zip([0, *firsts], firsts, strict=False)):
        raise MediaError(f"cannot cut {item.source} for item {item.item_id}: a span holds no video frame")
    options = {**encode_options("video"), **BITEXACT, "t": f"{bounds[-1] - bounds[0]:.{DIGITS}f}"}
    options.update({"format": "segment", "segment_format": "mp4", "reset_timestamps": 1, "threads": 1})
    if firsts:
        times = ",".join(f"{float(k / rate):.{DIGITS}f}" for k in firsts)
        options.update(
            {"force_key_frames": times, "forced-idr": 1, "segment_frames": ",".join(map(str, firsts))}
        )
    inputs = {"nostdin": None, "v": "error"}
    if bounds[0] > 0:
        inputs["ss"] = f"{bounds[0]:.{DIGITS}f}"
    with tempfile.TemporaryDirectory(prefix=".split-", dir=folder) as scratch:
        pattern = str(Path(scratch) / "%05d.mp4")
        stream = ffmpeg.input(str(item.source), **inputs).output(pattern, **options).overwrite_output()
        run_ffmpeg(stream, file=Path(item.source), what="cut")
        parts = sorted(Path(scratch).glob("*.mp4"))
        if len(parts) != len(paths):
            raise MediaError(
                f"cannot cut {item.source} for item {item.item_id}: {len(parts)} video segments for "
                f"{len(paths)} spans (a span shorter than one frame?)"
            )
        for part, path in zip(parts, paths, strict=True):
            os.replace(part, path)


def _frame_rate(source: Path) -> Fraction:
    """The frame rate a cut of `source` is encoded at (its video's r_frame_rate)."""
    streams = probe_json(source, what="probe", v="error", select_streams="v:0").get("streams") or []
    numerator, _, denominator = (streams[0].get("r_frame_rate") if streams else "0/0").partition("/")
    if int(numerator or 0) <= 0 or int(denominator or 1) <= 0:
        raise MediaError(f"{source} has no video frame rate to cut on")
    return Fraction(int(numerator), int(denominator or 1))


def grid_shift(bound: float, first: float, rate: int) -> int:
    """Samples g that shift a track's AAC frame grid so that `bound` ends a frame, for a track
    whose sample 0 is at `first` (module doc, "Exact audio")."""
    return -round((bound - first) * rate) % AAC_FRAME


def _cut_tracks(item: StreamItem, bounds: list[float], folder: Path) -> list[str | None]:
    """Each segment's audio track name (segment i: the track whose grid ends at bounds[i + 1]),
    the tracks encoded now where missing; all None when the source has no audio."""
    streams = probe_json(Path(item.source), what="probe", v="error", select_streams="a:0").get("streams")
    if not streams:
        return [None] * (len(bounds) - 1)
    # more than two channels are mixed down to stereo (a model hears mono; AAC layouts beyond
    # stereo depend on the source's layout name)
    rate, channels = int(streams[0]["sample_rate"]), min(2, int(streams[0]["channels"]))
    ends: dict[int, float] = {}  # grid shift -> the last bound on that grid
    for bound in bounds[1:]:
        shift = grid_shift(bound, bounds[0], rate)
        ends[shift] = max(ends.get(shift, bound), bound)
    names = {shift: track_path(folder, shift, bounds[0], end) for shift, end in ends.items()}
    missing = {shift: path for shift, path in names.items() if not path.is_file()}
    if missing:
        pcm = _decode_span(item, bounds, rate, channels, folder)
        for shift, path in missing.items():
            _encode_track(pcm, shift, round((ends[shift] - bounds[0]) * rate), rate, path)
    return [names[grid_shift(bound, bounds[0], rate)].name for bound in bounds[1:]]


def _decode_span(item: StreamItem, bounds: list[float], rate: int, channels: int, folder: Path):
    """The source's audio of [b_0, b_last) decoded once: float32 samples, (channels, n), at its rate
    (the same input seek as `media.cut`: decoded from before b_0, exact from b_0)."""
    folder.mkdir(parents=True, exist_ok=True)
    inputs = {"nostdin": None, "v": "error"}
    if bounds[0] > 0:
        inputs["ss"] = f"{bounds[0]:.{DIGITS}f}"
    options = {"vn": None, "t": f"{bounds[-1] - bounds[0]:.{DIGITS}f}", "ar": rate, "ac": channels}
    with tempfile.TemporaryDirectory(prefix=".decode-", dir=folder) as scratch:
        raw = Path(scratch) / "span.f32"
        options.update({"format": "f32le", "acodec": "pcm_f32le"})
        stream = ffmpeg.input(str(item.source), **inputs).output(str(raw), **options).overwrite_output()
        run_ffmpeg(stream, file=Path(item.source), what="decode the audio of")
        samples = np.fromfile(raw, dtype="<f4")
    return np.ascontiguousarray(samples.reshape(-1, channels).T)


def _encode_track(pcm, shift: int, length: int, rate: int, path: Path) -> None:
    """AAC of the span's first `length` samples after `shift` samples of silence, so the
    frame grid ends every bound with that shift; packets timed from the span's first sample
    (the silence and the encoder's priming at negative times: the mp4 edit list skips them).
    Past the decoded audio's end (a source whose sound stops before its picture), silence."""
    channels = pcm.shape[0]
    data = np.zeros((channels, shift + length), dtype=np.float32)
    kept = min(length, pcm.shape[1])
    data[:, shift : shift + kept] = pcm[:, :kept]
    layout = "mono" if channels == 1 else "stereo"
    with (
        atomic_path(path) as tmp,
        av.open(str(tmp), "w", format="mp4", options={"fflags": "+bitexact"}) as out,
    ):
        stream = out.add_stream("aac", rate=rate, layout=layout)
        stream.codec_context.flags |= av.codec.context.Flags.bitexact
        stream.time_base = Fraction(1, rate)

        def write(packets) -> None:
            for packet in packets:
                packet.pts, packet.dts = packet.pts - shift, packet.dts - shift
                out.mux(packet)

        for first in range(0, data.shape[1], AAC_FRAME):
            frame = av.AudioFrame.from_ndarray(
                data[:, first : first + AAC_FRAME], format="fltp", layout=layout
            )
            frame.sample_rate, frame.pts, frame.time_base = rate, first, Fraction(1, rate)
            write(stream.encode(frame))
        write(stream.encode(None))


def count_frames(path: Path) -> dict:
    """{"frames": n, "rate": "num/den"} of a video segment (its packets counted, nothing decoded):
    in this process where `frames_in_process` answers, else ffprobe's `-count_packets`."""
    counted = frames_in_process(path)
    return counted if counted is not None else frames_by_ffprobe(path)


def frames_by_ffprobe(path: Path) -> dict:
    """`count_frames`' answer from ffprobe (`-count_packets`, the first video stream)."""
    info = probe_json(path, what="count the frames of", v="error", count_packets=None, select_streams="v:0")
    streams = info.get("streams") or []
    if not streams or not streams[0].get("nb_read_packets"):
        raise MediaError(f"no video frames in segment {path}")
    rate = streams[0].get("avg_frame_rate") or "0/0"
    numerator, _, denominator = rate.partition("/")
    if int(numerator or 0) <= 0 or int(denominator or 1) <= 0:
        raise MediaError(f"segment {path} has no frame rate ({rate})")
    return {"frames": int(streams[0]["nb_read_packets"]), "rate": rate}


def frames_in_process(path: Path) -> dict | None:
    """`count_frames`' answer from the FFmpeg libraries in this process (PyAV): the first video
    stream's packets counted as ffprobe counts them, and its average frame rate. ffprobe starts
    for each segment (about 0.07 CPU-s; a 30 s item at 1 s steps has 30). None, to ask ffprobe,
    for a file the libraries cannot open and one where the container's frame count, the packets
    counted and the rate (frames over the stream's duration) do not all agree, so that what is
    answered here no FFmpeg release reads otherwise.
    """
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                return None
            stream = container.streams.video[0]
            packets = sum(1 for packet in container.demux(stream) if packet.size)
            frames, rate, duration, base = (
                stream.frames,
                stream.average_rate,
                stream.duration,
                stream.time_base,
            )
    except (av.FFmpegError, OSError, ValueError):
        return None
    if not packets or frames != packets or not rate or not duration or not base:
        return None
    if rate != Fraction(packets) / (duration * base):
        return None
    return {"frames": packets, "rate": f"{rate.numerator}/{rate.denominator}"}


def read_manifest(folder: Path) -> dict:
    """An item folder's `frames.json` ({} when there is none yet)."""
    path = folder / FRAMES
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


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
    """The segments joined in order into `destination`, bitexact (module doc): wav segments
    sample for sample; mp4 video segments remuxed in process at their frames' durations, with
    the audio of the item's track whose frame grid ends at the last segment's end (audio_video),
    from the first segment's start to that end."""
    destination = Path(destination)
    if not segments:
        raise ValueError(f"{destination}: no segments to join")
    segments = [Path(path) for path in segments]
    missing = [str(path) for path in segments if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"missing segment(s): {', '.join(missing[:3])}")
    if destination.suffix == ".wav":
        return _join_wav(segments, destination)
    manifest = _counted(segments)
    track = manifest[segments[-1].name].get("audio")  # the track whose grid ends where the step does
    with atomic_path(destination) as tmp:
        _join_mp4(segments, manifest, segments[0].parent / track if track is not None else None, tmp)
    return destination


def _counted(segments: list[Path]) -> dict:
    """The segments' folder's `frames.json`, checked to count every one of `segments`."""
    manifest = read_manifest(segments[0].parent)
    uncounted = [path.name for path in segments if path.name not in manifest]
    if uncounted:
        raise FileNotFoundError(
            f"{segments[0].parent / FRAMES} has no frame count for segment(s) {', '.join(uncounted[:3])}: "
            "cut them with streaming.media.cut_segments"
        )
    return manifest


def frames_duration(entry: dict) -> Fraction:
    """A video segment's frames' total duration (s): frames / rate, exact (`count_frames`)."""
    numerator, _, denominator = entry["rate"].partition("/")
    return Fraction(entry["frames"]) * Fraction(int(denominator or 1), int(numerator))


@dataclass(frozen=True)
class _Packets:
    """One file's packets of one stream, as read once (`_packets`): where each lies in the file
    and its timing, so a step copies them from the file's bytes with no demuxer opened."""

    time_base: Fraction
    sample_rate: int  # audio; 0 for video
    rows: tuple[tuple[int, int, int, int, int, bool], ...]  # (pos, size, pts, dts, duration, keyframe)


# Opening a file with a demuxer costs milliseconds (its stream probe): a step that joined 29
# segments by opening each spent most of its time there. So each file's packet index is read
# once per process and file version, and a few files stay open as the streams' templates.
_PACKETS: OrderedDict[tuple, _Packets] = OrderedDict()  # (path, kind, size, mtime) -> index, LRU
_TEMPLATES: OrderedDict[tuple, av.container.InputContainer] = OrderedDict()  # the same key, LRU
_LOCK = threading.Lock()
PACKET_INDEXES = 4096  # files whose packet index is kept (tens of bytes a packet)
TEMPLATES = 32  # files kept open for their stream's codec parameters


def _file_key(path: Path, kind: str) -> tuple:
    stat = path.stat()
    return (str(path.resolve()), kind, stat.st_size, stat.st_mtime_ns)


def _remember(cache: OrderedDict, key: tuple, value, limit: int):
    with _LOCK:
        value = cache.setdefault(key, value)
        cache.move_to_end(key)
        while len(cache) > limit:
            cache.popitem(last=False)  # an evicted container closes once no join holds it
    return value


def _recalled(cache: OrderedDict, key: tuple):
    with _LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    return None


def _template(path: Path, kind: str):
    """`path`'s first `kind` stream, from a file kept open (`add_stream_from_template` reads
    its codec parameters)."""
    key = _file_key(path, kind)
    container = _recalled(_TEMPLATES, key)
    if container is None:
        container = _remember(_TEMPLATES, key, av.open(str(path)), TEMPLATES)
    return getattr(container.streams, kind)[0]


def _packets(path: Path, kind: str) -> _Packets:
    """`path`'s packets of its first `kind` stream (read once per file version, module LRU)."""
    key = _file_key(path, kind)
    known = _recalled(_PACKETS, key)
    if known is not None:
        return known
    raw = path.read_bytes()
    with av.open(str(path)) as container:
        stream = getattr(container.streams, kind)[0]
        rows = []
        for packet in container.demux(stream):
            if packet.size == 0:  # the demuxer's flush packet
                continue
            pos = packet.pos
            if pos is None or pos < 0 or raw[pos : pos + packet.size] != bytes(packet):
                raise MediaError(
                    f"{path}: the packet at pts {packet.pts} is not stored whole at its position"
                )
            rows.append((pos, packet.size, packet.pts, packet.dts, packet.duration, packet.is_keyframe))
        rate = stream.codec_context.sample_rate if kind == "audio" else 0
        time_base = Fraction(stream.time_base)
    if not rows:
        raise MediaError(f"{path}: no {kind} packets")
    return _remember(_PACKETS, key, _Packets(time_base, rate, tuple(rows)), PACKET_INDEXES)


def _join_mp4(segments: list[Path], manifest: dict, track: Path | None, destination: Path) -> None:
    """The video segments and the audio track's packets of their span remuxed into one mp4 in
    this process (PyAV; no ffmpeg start-up, nothing decoded): segment i's packets shifted to
    the sum of the frame durations before it (`frames.json`: a segment's own header rounds its
    length up to its cut, and those roundings would add up at every join), the track's
    packets from `_track_packets`. The same segments give the same bytes (bitexact muxer)."""
    if track is not None and not track.is_file():
        raise FileNotFoundError(f"missing audio track {track}: cut it with streaming.media.cut_segments")
    video = [_packets(path, "video") for path in segments]
    audio = _packets(track, "audio") if track is not None else None
    start, end = segment_span(segments[0])[0], segment_span(segments[-1])[1]
    with av.open(str(destination), "w", format="mp4", options={"fflags": "+bitexact"}) as out:
        video_out = out.add_stream_from_template(_template(segments[0], "video"))
        video_out.time_base = video[0].time_base
        audio_out = None
        if audio is not None:
            audio_out = out.add_stream_from_template(_template(track, "audio"))
            audio_out.time_base = audio.time_base
        offset = Fraction(0)  # segment i's start in the step, in seconds
        base = video[0].time_base
        # the step's video ends at t, where its audio ends: the last frame shown is cut short
        # there (a whole frame ran past t by up to a frame, 0.1 s at 10 fps, past the audio)
        end_tick = round(Fraction(end - start) / base)
        for index, (path, packets) in enumerate(zip(segments, video, strict=True)):
            raw = path.read_bytes()
            shift, scale = offset / base, packets.time_base / base
            whole = scale == 1 and shift.denominator == 1  # one encode's segments: whole ticks, no Fractions
            if whole:
                shift = int(shift)
            # the frame shown last in the step (the last segment's highest pts), in step ticks
            last = None
            if index == len(segments) - 1:
                top = max(row[2] for row in packets.rows)
                last = top + shift if whole else round(top * scale + shift)
            for pos, size, pts, dts, duration, keyframe in packets.rows:
                if whole:
                    pts, dts = pts + shift, dts + shift
                else:
                    pts, dts, duration = (
                        round(pts * scale + shift),
                        round(dts * scale + shift),
                        round(duration * scale),
                    )
                if pts == last and end_tick > pts:
                    duration = end_tick - pts
                _mux(out, video_out, raw[pos : pos + size], pts, dts, duration, keyframe, base)
            offset += frames_duration(manifest[path.name])
        if audio is not None:
            raw = track.read_bytes()
            for pos, size, pts, duration in _track_packets(audio, segment_span(track)[0], start, end):
                _mux(out, audio_out, raw[pos : pos + size], pts, pts, duration, True, audio.time_base)


def _mux(out, stream, data: bytes, pts: int, dts: int, duration: int, keyframe: bool, time_base) -> None:
    packet = av.Packet(data)
    packet.pts, packet.dts, packet.duration = pts, dts, duration
    packet.is_keyframe = keyframe
    packet.time_base = time_base
    packet.stream = stream
    out.mux(packet)


def _track_packets(audio: _Packets, track_start: float, start: float, end: float):
    """(pos, size, pts, duration) of the track's packets for [start, end], pts counted from
    `start` (in 1 / sample rate): from the packet holding PREROLL_S before `start` (AAC decodes
    a packet from the one before it too; at the track's start, from its first packet, the
    encoder's priming and the grid's shift) to the packet ending at `end` (the track's grid
    puts a frame boundary there; a packet past it would have its duration cut, which decoders
    ignore). A negative pts puts the samples before `start` in the mp4 edit list (not played)."""
    if audio.time_base != Fraction(1, audio.sample_rate):
        raise MediaError(f"audio track with time base {audio.time_base}, not 1/{audio.sample_rate}")
    rate = audio.sample_rate
    offset = round((start - track_start) * rate)
    first = offset - min(round(PREROLL_S * rate), offset)
    length = round((end - start) * rate)
    for pos, size, pts, _, duration, _ in audio.rows:
        if offset > 0 and pts + duration <= first:
            continue
        if pts - offset >= length:
            break
        yield pos, size, pts - offset, min(duration, length - (pts - offset))


@dataclass(frozen=True)
class StepMedia:
    """What a step's joined mp4 holds, known from its segments without opening it: the facts a
    backend would otherwise probe or decode again at every step (`probe`, `sample_frames`,
    with the answers of `models.media_io`'s functions of the same names). `segments` are all
    the item's segments, the step's are `segments[first:last]`."""

    path: Path
    segments: tuple[Path, ...]
    first: int
    last: int

    def probe(self) -> dict:
        """media_io.probe's answer (duration exact, where ffprobe rounds it to the millisecond)."""
        parts = self.segments[self.first : self.last]
        manifest = _counted(list(parts))
        has_audio = manifest[parts[0].name].get("audio") is not None
        # video and audio both end at the step's t (`_join_mp4`)
        span = segment_span(parts[-1])[1] - segment_span(parts[0])[0]
        return {"duration_s": span, "has_audio": has_audio, "has_video": True}

    def sample_frames(
        self, fps: float = 1.0, max_frames: int = 32, width: int = 768, quality: int = 4
    ) -> list[bytes]:
        """media_io.sample_frames(path, ...): the item's frames sampled once (`step_frames`) where
        they give the same frames, else sampled from the file."""
        frames = step_frames(self.segments, self.first, self.last, fps, max_frames, width, quality)
        if frames is None:
            return media_io.sample_frames(self.path, fps, max_frames, width, quality)
        if not frames:
            raise media_io.MediaError(f"{self.path}: ffmpeg produced no frames")
        return frames


def describe_step(segments: list[Path], first: int, last: int, path: Path) -> StepMedia:
    return StepMedia(Path(path), tuple(Path(segment) for segment in segments), first, last)


FRAME_CACHE = ".frames"  # per item folder: the item's sampled frames, one folder per sampling
_FRAME_LOCKS: dict[Path, threading.Lock] = {}


def step_frames(
    segments: tuple[Path, ...] | list[Path],
    first: int,
    last: int,
    fps: float,
    max_frames: int,
    width: int,
    quality: int,
) -> list[bytes] | None:
    """The JPEG frames `media_io.sample_frames` gives the step joined from segments[first:last],
    taken from the whole item's frames sampled ONCE (`_item_frames`), or None where those are
    not the step's: sampling the item joined from `segments` at rate R shows frame k at k / R,
    and a step from the item's start shows the same frames at the same ticks, its first
    round(D R) of them (D: its video's length; ffmpeg's fps filter ends at its input's end,
    rounded to the nearest tick). A window starting at offset O shares them only where O R is
    a whole tick (else None), and a step long enough for sampling to lower its rate (D R
    above max_frames) has other ticks (None)."""
    segments = [Path(path) for path in segments]
    manifest = _counted(segments)
    lengths = [frames_duration(manifest[path.name]) for path in segments]
    rate = Fraction(f"{fps:.6f}")  # as ffmpeg reads the filter's rate (media_io._frames_stream)
    offset = sum(lengths[:first], Fraction(0)) * rate
    # the step's video ends at its t, as its audio (`_join_mp4`: the last frame cut short there)
    length = Fraction(segment_span(segments[last - 1])[1] - segment_span(segments[first])[0])
    longest = length + Fraction(1, 1000)  # what probe may say: ms rounding
    if offset.denominator != 1 or longest * rate > max_frames:
        return None
    count = math.floor(length * rate + Fraction(1, 2))
    files = _item_frames(segments, manifest, rate, width, quality)
    return [path.read_bytes() for path in files[int(offset) : int(offset) + count]]


def _item_frames(
    segments: list[Path], manifest: dict, rate: Fraction, width: int, quality: int
) -> list[Path]:
    """The item joined from `segments` sampled at `rate` (all its frames), cached in its folder
    under FRAME_CACHE, keyed by the segments (names, frame counts, file versions) and the
    sampling: written once, atomically (a folder renamed into place), read by every step."""
    folder = segments[0].parent
    key = json.dumps(
        [
            [
                (path.name, manifest[path.name], path.stat().st_size, path.stat().st_mtime_ns)
                for path in segments
            ],
            str(rate),
            width,
            quality,
        ],
        sort_keys=True,
    )
    cache = folder / FRAME_CACHE / hashlib.sha256(key.encode()).hexdigest()[:20]
    with _FRAME_LOCKS.setdefault(cache.resolve(), threading.Lock()):  # one build per process
        if not cache.is_dir():
            cache.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=".build-", dir=cache.parent) as scratch:
                joined = assemble(segments, Path(scratch) / "item.mp4")
                frames = media_io.frames_at(joined, float(rate), 10**9, width, quality)
                built = Path(scratch) / "frames"
                built.mkdir()
                for i, frame in enumerate(frames):
                    (built / f"{i:06d}.jpg").write_bytes(frame)
                try:
                    os.rename(built, cache)
                except OSError:  # another job built it first: theirs holds the same frames
                    if not cache.is_dir():
                        raise
    return sorted(cache.glob("*.jpg"))


def _join_wav(segments: list[Path], destination: Path) -> Path:
    """PCM wav segments joined sample for sample in Python (no ffmpeg start-up a step)."""
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
