"""The deliberately broken interactions of the demo corpus: one per entry of `failures`.

Part of `corpus.demo`. Some failures are made in the design (`design.plan_corpus`:
placeholder_prompt, not_either_or, single_participant) or by the timeline's mode (`MODES`:
too_few_turns, silent_speaker, too_little_speech); the rest break the written files of the
first participant (or the second track), here: duplicated_tracks, desynced_tracks,
empty_audio, truncated_video, corrupt_video, unreadable_json (missing_transcript leaves out
the transcript in `layout.participant_json`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from omnisocial.demo_kit import pcm16
from omnisocial.familiarity.corpus.demo.design import NOISE_RMS
from omnisocial.io import atomic_path, write_json, write_text

DESYNC_S = 1.5
TRUNCATED_SHARE = 0.4
CORRUPT_BYTES = 2048

MODES = {
    "too_few_turns": "monologues",
    "silent_speaker": "solo",
    "too_little_speech": "sparse",
}


def _first(expected: str, failure: str, who: int) -> bool:
    """Whether `failure` is what the interaction is built for and `who` is its first participant."""
    return expected == failure and who == 0


def break_tracks(
    expected: str, pcm: list[bytes], mics: list[np.ndarray], rng, sample_rate: int, n_samples: int
) -> None:
    """duplicated_tracks: the second wav is the first; desynced_tracks: the second lags DESYNC_S."""
    if expected == "duplicated_tracks":
        pcm[1] = pcm[0]
    if expected == "desynced_tracks":
        shift = int(round(DESYNC_S * sample_rate))
        lead = rng.normal(0.0, NOISE_RMS, shift).astype(np.float32)
        pcm[1] = pcm16(np.concatenate([lead, mics[1][: n_samples - shift]]))


def wav_payload(expected: str, who: int, pcm: bytes) -> bytes:
    """empty_audio: the first participant's wav holds no samples."""
    return b"" if _first(expected, "empty_audio", who) else pcm


def frame_count(expected: str, who: int, n_frames: int) -> int:
    """truncated_video: the first participant's video stops at TRUNCATED_SHARE of its length."""
    if _first(expected, "truncated_video", who):
        return int(round(TRUNCATED_SHARE * n_frames))
    return n_frames


def corrupt_video(expected: str, who: int, mp4: Path) -> None:
    """corrupt_video: the first participant's mp4 keeps only its first CORRUPT_BYTES bytes."""
    if _first(expected, "corrupt_video", who):
        head = mp4.read_bytes()[:CORRUPT_BYTES]
        with atomic_path(mp4) as tmp:
            tmp.write_bytes(head)


def write_participant_json(expected: str, who: int, path: Path, data: dict) -> None:
    """The participant's json; unreadable_json: the first participant's is cut in half."""
    if _first(expected, "unreadable_json", who):
        text = json_text(data)
        write_text(path, text[: len(text) // 2])
    else:
        write_json(path, data)


def json_text(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
