"""Audio and video of the demo corpus: microphones, the face whose mouth follows speech, mp4.

Part of `corpus.demo`: each microphone holds its owner's speech, the other speaker at
`crosstalk_db` and faint seeded noise (mono 16-bit PCM); the camera is numpy frames
(participant-specific background, a face, a mouth whose height follows the owner's own speech
envelope, so the picture shows who speaks), piped to ffmpeg: H.264 yuv420p plus an AAC copy
of the microphone.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from omnisocial.familiarity.corpus.demo.design import Person
from omnisocial.familiarity.corpus.demo.timeline import Piece
from omnisocial.io import atomic_path
from omnisocial.media.pipe import run_with_stdin, yuv420p


def render_speech(pieces: list[Piece], who: int, n_samples: int, gain: float) -> np.ndarray:
    signal = np.zeros(n_samples, dtype=np.float32)
    for piece in pieces:
        if piece.speaker != who:
            continue
        begin = int(round(piece.start * piece.sample_rate))
        chunk = piece.audio[: max(0, n_samples - begin)]
        signal[begin : begin + len(chunk)] += gain * chunk
    return signal


def to_pcm(signal: np.ndarray) -> bytes:
    return np.round(np.clip(signal, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def write_wav(path: Path, pcm: bytes, sample_rate: int) -> None:
    """Mono 16-bit PCM, written atomically (the header holds no date, so bytes are reproducible)."""
    with atomic_path(path) as tmp, wave.open(str(tmp), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(sample_rate)
        handle.writeframes(pcm)


def mouth_openings(
    speech: np.ndarray, sample_rate: int, fps: float, n_frames: int, height: int
) -> np.ndarray:
    """Half-height in pixels of the mouth in each frame, from the RMS envelope of `speech`."""
    per_frame = sample_rate / fps
    if per_frame.is_integer() and n_frames * int(per_frame) <= len(speech):
        block = speech[: n_frames * int(per_frame)].reshape(n_frames, int(per_frame))
        rms = np.sqrt(np.mean(np.square(block, dtype=np.float64), axis=1))
    else:
        edges = np.minimum(np.round(np.arange(n_frames + 1) * per_frame).astype(int), len(speech))
        power = np.concatenate([[0.0], np.cumsum(np.square(speech, dtype=np.float64))])
        rms = np.sqrt((power[edges[1:]] - power[edges[:-1]]) / np.maximum(np.diff(edges), 1))
    voiced = rms[rms > 1e-3]
    reference = float(np.percentile(voiced, 90)) if voiced.size else 1.0
    envelope = np.clip(rms / max(reference, 1e-6), 0.0, 1.0)
    return 1 + np.round(envelope * height * 0.1).astype(int)


def _face(person: Person, width: int, height: int, half: int) -> np.ndarray:
    """One RGB frame: background colour, a face, two eyes and a mouth `2 * half - 1` rows tall."""
    frame = np.empty((height, width, 3), dtype=np.uint8)
    frame[:] = person.colour
    frame[int(height * 0.15) : int(height * 0.9), int(width * 0.3) : int(width * 0.7)] = (224, 188, 160)
    eye = max(2, height // 20)
    ey = int(height * 0.4)
    for ex in (int(width * 0.42), int(width * 0.58)):
        frame[ey - eye // 2 : ey + eye - eye // 2, ex - eye // 2 : ex + eye - eye // 2] = (40, 30, 30)
    mouth_y = int(height * 0.7)
    rows = slice(max(0, mouth_y - half + 1), min(height, mouth_y + half))
    frame[rows, int(width * 0.42) : int(width * 0.58)] = (120, 20, 30)
    return frame


def video_frames(speech: np.ndarray, person: Person, video: dict, sample_rate: int, n_frames: int) -> bytes:
    """The camera as raw yuv420p: the mouth of each frame follows the owner's own speech."""
    width, height, fps = int(video["width"]), int(video["height"]), float(video["fps"])
    openings = mouth_openings(speech, sample_rate, fps, n_frames, height)
    looks = {int(h): yuv420p(_face(person, width, height, int(h))) for h in np.unique(openings)}
    return b"".join(looks[int(h)] for h in openings)


def encode_mp4(path: Path, frames: bytes, pcm: bytes, video: dict, sample_rate: int, workdir: Path) -> None:
    """H.264 yuv420p + AAC, single-threaded and bit-exact so the bytes are reproducible."""
    width, height, fps = int(video["width"]), int(video["height"]), float(video["fps"])
    seconds = len(frames) / (width * height * 3 // 2) / fps
    audio = workdir / "mp4_audio.wav"
    write_wav(audio, pcm, sample_rate)
    errors = workdir / "ffmpeg.log"
    with atomic_path(path) as tmp:
        command = [
            "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-threads", "1",
            "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{width}x{height}",
            "-framerate", str(video["fps"]), "-i", "pipe:0", "-i", str(audio),
            "-map", "0:v:0", "-map", "1:a:0", "-t", f"{seconds:.6f}",
            "-c:v", "libx264", "-preset", "ultrafast", "-threads", "1", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-aac_coder", "fast", "-b:a", "32k",
            "-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact",
            "-map_metadata", "-1", str(tmp),
        ]  # fmt: skip
        code = run_with_stdin(command, frames, errors)
        if code:
            message = errors.read_text(errors="replace")[-500:]
            raise RuntimeError(f"ffmpeg failed for {path.name}: {message}")
