"""Probing, decoding and envelopes.

`probe` asks ffprobe for per-stream durations (a complete PCM WAV's come from its header, an
MP4's from the FFmpeg libraries in this process, each as ffprobe computes them); `load_audio`
decodes to mono float32 at a chosen rate (soundfile for WAV, ffmpeg through ffmpeg-python for
everything else); `envelope` turns samples into an RMS value per hop. Every failure to read a
file, whatever the cause, surfaces as `MediaError` with a one-line reason that names the file.
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import ffmpeg
import numpy as np
import soundfile as sf

from omnisocial.media.ffmpeg_run import TIMEOUT_S, MediaError, probe_json, run_ffmpeg
from omnisocial.media.ffmpeg_run import last_line as _last_line

# scipy.signal is imported where used: it loads scipy.stats too (~1.6 s CPU per job start)

__all__ = ["MediaError", "decibels", "envelope", "load_audio", "probe", "resample"]

WAV_SUFFIXES = (".wav", ".wave")
MP4_SUFFIXES = (".mp4", ".m4a", ".mov")  # ISO BMFF: every track holds its own duration
_TIMEOUT_S = TIMEOUT_S


def _existing_file(path: str | os.PathLike, empty_reason: str = "empty file (0 bytes)") -> Path:
    if path is None or str(path).strip() == "":
        raise MediaError("no file path given")
    file = Path(path)
    if not file.exists():
        raise MediaError(f"file not found: {file}")
    if not file.is_file():
        raise MediaError(f"not a regular file: {file}")
    if file.stat().st_size == 0:
        raise MediaError(f"{empty_reason}: {file}")
    return file


def _stream_duration(stream: dict) -> float | None:
    """Duration of one ffprobe stream in seconds, from whichever field the container fills."""
    value = stream.get("duration")
    if value not in (None, "N/A"):
        return float(value)
    if stream.get("duration_ts") not in (None, "N/A") and stream.get("time_base"):
        numerator, denominator = (int(part) for part in stream["time_base"].split("/"))
        return int(stream["duration_ts"]) * numerator / denominator
    tag = (stream.get("tags") or {}).get("DURATION")  # Matroska/WebM: "HH:MM:SS.fffffffff"
    if tag:
        hours, minutes, seconds = tag.split(":")
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    return None


def _rate(text: str | None) -> float | None:
    if not text or text in ("0/0", "N/A"):
        return None
    numerator, _, denominator = text.partition("/")
    denominator = denominator or "1"
    return float(numerator) / float(denominator) if float(denominator) else None


def probe(path: str | os.PathLike) -> dict:
    """Describe a media file's streams with ffprobe (a complete PCM WAV: from its header, the same).

    Returns a dict with `audio_duration` and `video_duration` (seconds of the first audio
    and first video stream, None when the file has no such stream; a stream without its
    own duration falls back to the container's), `format_duration`, `n_audio_streams`,
    `n_video_streams`, `sample_rate`, `channels` (first audio stream), `width`, `height`
    and `fps` (first video stream), each None when absent.

    Raises MediaError for a missing, empty or unreadable file, or one without any audio
    or video stream.
    """
    file = _existing_file(path)
    if file.suffix.lower() in WAV_SUFFIXES:
        header = complete_pcm_wav(file)
        if header is not None:
            return _wav_probe(file, *header)
    if file.suffix.lower() in MP4_SUFFIXES:
        answer = mp4_probe(file)
        if answer is not None:
            return answer
    return probe_with_ffprobe(file)


def probe_with_ffprobe(file: Path) -> dict:
    """`probe`'s answer from ffprobe itself (for any file `probe` accepts)."""
    info = probe_json(file, timeout_s=_TIMEOUT_S, v="error")
    streams = info.get("streams") or []
    fmt = info.get("format") or {}
    format_duration = _stream_duration(fmt)
    audio = [s for s in streams if s.get("codec_type") == "audio"]
    # Cover art in audio files is a one-frame "video" stream; it is not a camera.
    video = [
        s
        for s in streams
        if s.get("codec_type") == "video" and not (s.get("disposition") or {}).get("attached_pic")
    ]
    if not audio and not video:
        raise MediaError(f"no audio or video stream in {file}")

    def duration(stream_list: list[dict]) -> float | None:
        if not stream_list:
            return None
        own = _stream_duration(stream_list[0])
        return own if own is not None else format_duration

    first_audio = audio[0] if audio else {}
    first_video = video[0] if video else {}
    return _answer(
        file,
        format_duration,
        (duration(audio), duration(video)),
        (len(audio), len(video)),
        sample_rate=int(first_audio["sample_rate"]) if first_audio.get("sample_rate") else None,
        channels=int(first_audio["channels"]) if first_audio.get("channels") else None,
        width=int(first_video["width"]) if first_video.get("width") else None,
        height=int(first_video["height"]) if first_video.get("height") else None,
        fps=_rate(first_video.get("avg_frame_rate")) or _rate(first_video.get("r_frame_rate")),
    )


def _answer(
    file: Path,
    format_duration: float | None,
    durations: tuple[float | None, float | None],
    streams: tuple[int, int],
    *,
    sample_rate: int | None = None,
    channels: int | None = None,
    width: int | None = None,
    height: int | None = None,
    fps: float | None = None,
) -> dict:
    """`probe`'s answer, whichever reader gave it (ffprobe, a WAV header, PyAV): the container's
    duration, the (audio, video) durations and stream counts, and the first audio and video
    streams' properties (None where absent)."""
    return {
        "path": str(file),
        "format_duration": format_duration,
        "audio_duration": durations[0],
        "video_duration": durations[1],
        "n_audio_streams": streams[0],
        "n_video_streams": streams[1],
        "sample_rate": sample_rate,
        "channels": channels,
        "width": width,
        "height": height,
        "fps": fps,
    }


def complete_pcm_wav(file: Path) -> tuple[int, int, int] | None:
    """(sample rate, channels, frames) of a PCM or float WAV whose data chunk is whole, else None.

    ffprobe's WAV demuxer counts such a data chunk in whole blocks (its time base is one
    sample), so `probe` can answer from the header without starting ffprobe (a process start
    per file: docs/performance.md#code). Anything else goes to ffprobe: a data chunk the file
    cuts short, one of no or an unknown length (a streamed WAV), another codec, RF64, a
    malformed header.
    """
    size = file.stat().st_size
    with open(file, "rb") as handle:
        head = handle.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        fmt, position = None, 12
        while position + 8 <= size:
            handle.seek(position)
            chunk, length = struct.unpack("<4sI", handle.read(8))
            if chunk == b"fmt ":
                fmt = _wav_format(handle.read(min(length, 40)))
                if fmt is None:
                    return None
            elif chunk == b"data":
                if fmt is None or length in (0, 0xFFFFFFFF) or position + 8 + length > size:
                    return None
                rate, channels, block = fmt
                return (rate, channels, length // block) if length % block == 0 else None
            position += 8 + length + (length & 1)
    return None


def _wav_format(body: bytes) -> tuple[int, int, int] | None:
    """(sample rate, channels, block size) of a PCM or IEEE-float `fmt ` chunk, else None."""
    if len(body) < 16:
        return None
    tag, channels, rate, _, block, bits = struct.unpack("<HHIIHH", body[:16])
    if tag == 0xFFFE:  # WAVE_FORMAT_EXTENSIBLE: the codec is the sub-format GUID's first two bytes
        if len(body) < 26:
            return None
        tag = struct.unpack("<H", body[24:26])[0]
    if tag not in (1, 3) or not channels or not rate or block != channels * ((bits + 7) // 8):
        return None
    return rate, channels, block


def _wav_probe(file: Path, rate: int, channels: int, frames: int) -> dict:
    """`probe`'s answer for a complete PCM WAV: ffprobe's frames x (1 / rate), printed to 6 decimals."""
    duration = float(f"{frames * (1.0 / rate):f}")
    return _answer(file, duration, (duration, None), (1, 0), sample_rate=rate, channels=channels)


def _ffprobe_double(value: float) -> float:
    """A duration as ffprobe prints it (`%f`: 6 decimals) and `probe` reads it back."""
    return float(f"{value:f}")


def mp4_probe(file: Path) -> dict | None:
    """`probe`'s answer for an MP4 / M4A / MOV, from the FFmpeg libraries in this process (PyAV).

    ffprobe starts for each file (about 0.07 CPU-s, most of a signal job's probing; the demo
    probes about 200 files: docs/performance.md#demo). The same demuxer fills the same fields:
    each stream's duration x its time base and the container's in microseconds, printed as
    ffprobe prints them. None, to ask ffprobe itself, for a file the libraries cannot open (so
    that its error names ffprobe's reason), one where a stream or the container has no
    duration of its own (ffprobe's fallbacks, e.g. a tag, stay ffprobe's), and one whose
    container duration is not one number: FFmpeg releases differ in whether they report the
    movie header's duration (`mvhd`, rounded to its time scale) or the streams' longest end
    (ffprobe 5.1 and PyAV's 8.1 gave 2.203 and 2.2022 s for a 29.97 fps file), so the answer is
    given here only where the header, the libraries and the streams' end all agree.
    """
    import av  # imported here: only the jobs that probe an MP4 load it

    header = _movie_header_duration(file)
    if header is None:
        return None
    try:
        with av.open(str(file)) as container:
            return _container_probe(file, container, header)
    except (av.FFmpegError, OSError, ValueError):
        return None


def _movie_header_duration(file: Path) -> float | None:
    """The `mvhd` duration in seconds of an ISO BMFF file (top-level `moov`), else None."""
    size = file.stat().st_size
    with open(file, "rb") as handle:
        position, end, in_moov = 0, size, False
        while position + 8 <= end:
            handle.seek(position)
            length, kind = struct.unpack(">I4s", handle.read(8))
            header = 8
            if length == 1:
                length, header = struct.unpack(">Q", handle.read(8))[0], 16
            elif length == 0:
                length = end - position
            if length < header or position + length > end:
                return None
            if kind == b"moov" and not in_moov:
                position, end, in_moov = position + header, position + length, True
                continue
            if kind == b"mvhd" and in_moov:
                body = handle.read(min(length - header, 32))
                if len(body) < 20:
                    return None
                if body[0] == 1:
                    if len(body) < 32:
                        return None
                    scale, duration = struct.unpack(">IQ", body[20:32])
                else:
                    scale, duration = struct.unpack(">II", body[12:20])
                return duration / scale if scale and duration else None
            position += length
    return None


def _container_probe(file: Path, container, header_s: float) -> dict | None:
    import av

    if container.duration is None or container.start_time is None:
        return None
    streams = list(container.streams)
    if any(s.duration is None or s.start_time is None for s in streams):
        return None
    format_duration = _ffprobe_double(container.duration * (1 / av.time_base))
    ends = [(s.start_time + s.duration) * (s.time_base.numerator / s.time_base.denominator) for s in streams]
    streams_end = _ffprobe_double(max(ends) - container.start_time * (1 / av.time_base)) if ends else None
    if not format_duration == streams_end == _ffprobe_double(header_s):
        return None  # the durations a release may report disagree: ffprobe's is the answer
    audio = [s for s in streams if s.type == "audio"]
    video = [
        s for s in streams if s.type == "video" and not (s.disposition & av.stream.Disposition.attached_pic)
    ]  # cover art is a one-frame "video" stream, not a camera (as in probe_with_ffprobe)
    if not audio and not video:
        return None

    def duration(stream_list: list) -> float | None:
        if not stream_list:
            return None
        base = stream_list[0].time_base
        return _ffprobe_double(stream_list[0].duration * (base.numerator / base.denominator))

    first_audio = audio[0].codec_context if audio else None
    first_video = video[0] if video else None
    rate = None
    if first_video is not None:
        rate = first_video.average_rate or first_video.base_rate
    return _answer(
        file,
        format_duration,
        (duration(audio), duration(video)),
        (len(audio), len(video)),
        sample_rate=(first_audio.sample_rate or None) if first_audio is not None else None,
        channels=(first_audio.channels or None) if first_audio is not None else None,
        width=(first_video.codec_context.width or None) if first_video is not None else None,
        height=(first_video.codec_context.height or None) if first_video is not None else None,
        fps=float(rate) if rate else None,
    )


def resample(audio: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Polyphase resampling (scipy.signal.resample_poly) from `sr_in` to `sr_out` Hz."""
    if sr_in == sr_out or audio.size == 0:
        return np.asarray(audio, dtype=np.float32)
    from scipy.signal import resample_poly

    divisor = math.gcd(int(sr_in), int(sr_out))
    out = resample_poly(audio, int(sr_out) // divisor, int(sr_in) // divisor)
    return np.asarray(out, dtype=np.float32)


def _load_wav(file: Path) -> tuple[np.ndarray, int]:
    try:
        data, sr = sf.read(str(file), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError) as error:
        raise MediaError(f"cannot read WAV {file}: {_last_line(str(error))}") from None
    return data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0], int(sr)


def _load_ffmpeg(file: Path, sample_rate: int) -> np.ndarray:
    stdout = run_ffmpeg(
        _audio_stream(file, sample_rate), file=file, what="decode audio from", timeout_s=_TIMEOUT_S
    )
    return np.frombuffer(stdout, dtype="<f4").astype(np.float32)


def _audio_stream(file: Path, sample_rate: int):
    """ffmpeg -nostdin -v error -i FILE -map 0:a:0 -f f32le -ac 1 -ar RATE -vn -"""
    source = ffmpeg.input(str(file), nostdin=None, v="error")
    return source["a:0"].output("-", format="f32le", ac=1, ar=sample_rate, vn=None)


def load_audio(path: str | os.PathLike, sample_rate: int = 16000) -> np.ndarray:
    """Decode the first audio stream of `path` to mono float32 in [-1, 1] at `sample_rate` Hz.

    WAV files are read with soundfile (channels averaged) and resampled with
    `scipy.signal.resample_poly` when their rate differs; any other container is decoded
    and resampled by ffmpeg. Raises MediaError when the file is missing,
    unreadable, has no audio stream, or holds no samples ("no audio samples").
    """
    file = _existing_file(path, empty_reason="no audio samples (empty file)")
    if file.suffix.lower() in WAV_SUFFIXES:
        try:
            audio, sr = _load_wav(file)
        except MediaError as error:
            try:  # a WAV container with a codec libsndfile lacks (e.g. MP3 in RIFF): let ffmpeg try
                audio, sr = _load_ffmpeg(file, sample_rate), sample_rate
            except MediaError:
                raise error from None
        if audio.size == 0:
            raise MediaError(f"no audio samples: {file}")
        audio = resample(audio, sr, sample_rate)
    else:
        audio = _load_ffmpeg(file, sample_rate)
    if audio.size == 0:
        raise MediaError(f"no audio samples: {file}")
    if not np.all(np.isfinite(audio)):
        raise MediaError(f"audio holds NaN or infinite samples: {file}")
    return np.ascontiguousarray(audio, dtype=np.float32)


def envelope(audio: np.ndarray, sr: int, hop_s: float = 0.02, log: bool = False, floor_db: float = -60.0):
    """RMS of `audio` in consecutive, non-overlapping hops of `hop_s` seconds.

    Hop i covers samples [i*h, (i+1)*h) with h = round(hop_s * sr); a last partial hop is
    dropped. With `log=False` (default) the values are linear RMS amplitudes. With
    `log=True` they are decibels relative to the loudest hop (so the maximum is 0 dB),
    clipped below at `floor_db`; a silent signal gives `floor_db` everywhere. The log
    form lets quiet cross-talk carry as much shape as the speaker's own voice, which is
    what the track-similarity measure needs; the linear form keeps the speaker's own
    voice dominant, which is what audio-video lag needs.
    """
    hop = int(round(hop_s * sr))
    if hop < 1:
        raise ValueError(f"hop_s={hop_s} is shorter than one sample at {sr} Hz")
    samples = np.asarray(audio, dtype=np.float64).reshape(-1)
    n = samples.size // hop
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    frames = samples[: n * hop].reshape(n, hop)
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    return decibels(rms, floor_db) if log else rms


def decibels(rms: np.ndarray, floor_db: float = -60.0) -> np.ndarray:
    """A linear `envelope` in dB relative to its loudest hop, clipped at `floor_db`: the
    `log=True` form, for a caller that needs both forms without computing the RMS twice."""
    rms = np.asarray(rms, dtype=np.float64)
    n = rms.size
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    peak = float(rms.max())
    if peak <= 0.0:
        return np.full(n, float(floor_db))
    floor = peak * 10.0 ** (floor_db / 20.0)
    return 20.0 * np.log10(np.maximum(rms, floor) / peak)
