"""Audio and video of the demo corpus: microphones, the face whose mouth follows speech, mp4.

Part of `corpus.demo`: each microphone holds its owner's speech, the other speaker at
`crosstalk_db` and faint seeded noise (mono 16-bit PCM); the camera is numpy frames
(participant-specific background, a face, a mouth whose height follows the owner's own speech
envelope, so the picture shows who speaks), piped to ffmpeg: H.264 yuv420p plus an AAC copy
of the microphone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from omnisocial.demo_kit import write_pcm_wav
from omnisocial.familiarity.corpus.demo.design import Person
from omnisocial.familiarity.corpus.demo.timeline import Piece
from omnisocial.media.pipe import RawMp4, encode_raw_mp4s, yuv420p


def render_speech(pieces: list[Piece], who: int, n_samples: int, gain: float) -> np.ndarray:
    signal = np.zeros(n_samples, dtype=np.float32)
    for piece in pieces:
        if piece.speaker != who:
            continue
        begin = int(round(piece.start * piece.sample_rate))
        chunk = piece.audio[: max(0, n_samples - begin)]
        signal[begin : begin + len(chunk)] += gain * chunk
    return signal


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


def encode_mp4s(files: list[tuple[Path, bytes, bytes]], video: dict, sample_rate: int, workdir: Path) -> None:
    """Each (path, frames, pcm) as H.264 yuv420p + AAC (fast coder, 32k), single-threaded and
    bit-exact, all in one ffmpeg process (`pipe.encode_raw_mp4s`)."""
    width, height, fps = int(video["width"]), int(video["height"]), float(video["fps"])
    jobs = []
    for index, (path, frames, pcm) in enumerate(files):
        audio = workdir / f"mp4_audio{index}.wav"
        write_pcm_wav(audio, pcm, sample_rate)
        seconds = len(frames) / (width * height * 3 // 2) / fps
        jobs.append(RawMp4(path, frames, seconds, audio))
    encode_raw_mp4s(jobs, video, workdir, audio_options={"aac_coder": "fast", "b:a": "32k"})
