"""A real recorded two-person conversation with human speaker turns, and per-speaker tracks built from it.

The recording is the 30 s telephone conversation that `pyannote.audio` ships as its sample
(`pyannote/audio/sample/sample.wav`, 16 kHz mono, with the human reference turns in
`sample.rttm`; MIT licence). It is found through the installed distribution's metadata, so
`pyannote.audio` is never imported (the main venv installs only its files: `make setup`).

`speaker_tracks` lays it out as two microphones, one per participant, the way a corpus of
close-talk microphones (or of separated sources) gives them: each track carries its owner's
reference turns at full level, the other person's at `bleed_db` (None: none), an optional
white noise floor at `noise_floor_db` (dBFS RMS), and track b may be delayed. Inside a
reference overlap the single-channel recording holds both voices, so both tracks carry it
at full level there.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SAMPLE_DISTRIBUTION = "pyannote.audio"
SAMPLE_FOLDER = "pyannote/audio/sample"


@dataclass(frozen=True)
class Recording:
    """Mono audio, its rate, and the reference turns: (speaker label, start s, end s) in time order."""

    audio: np.ndarray
    sr: int
    turns: tuple[tuple[str, float, float], ...]

    @property
    def speech_dbfs(self) -> float:
        """RMS level (dBFS) of the recording inside the reference turns."""
        inside = np.zeros(self.audio.size, dtype=bool)
        for speaker in self.speakers:
            inside |= turn_mask(self.turns, speaker, self.audio.size, self.sr)
        return float(10.0 * np.log10(np.mean(np.square(self.audio[inside], dtype=np.float64))))

    @property
    def speakers(self) -> tuple[str, ...]:
        """Speaker labels in order of first speech."""
        return tuple(dict.fromkeys(speaker for speaker, _, _ in self.turns))


def sample_file(name: str) -> Path:
    """Path of one file of the shipped sample; FileNotFoundError naming the install step if absent."""
    try:
        distribution = importlib.metadata.distribution(SAMPLE_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise FileNotFoundError(
            f"the recorded conversation ships with {SAMPLE_DISTRIBUTION} (make setup installs its "
            "files: requirements/speech-sample.txt)"
        ) from exc
    path = Path(str(distribution.locate_file(f"{SAMPLE_FOLDER}/{name}")))
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not in the installed {SAMPLE_DISTRIBUTION}")
    return path


def read_rttm(path: Path) -> tuple[tuple[str, float, float], ...]:
    """(speaker, start, end) of every SPEAKER line of an RTTM file, sorted by start."""
    turns = []
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            turns.append((fields[7], start, start + duration))
    return tuple(sorted(turns, key=lambda turn: (turn[1], turn[2], turn[0])))


def sample_conversation() -> Recording:
    """The shipped recording (float32) with its human reference turns."""
    import soundfile as sf

    audio, sr = sf.read(str(sample_file("sample.wav")), dtype="float32", always_2d=False)
    return Recording(np.asarray(audio, dtype=np.float32), int(sr), read_rttm(sample_file("sample.rttm")))


def turn_mask(turns, speaker: str, n_samples: int, sr: int) -> np.ndarray:
    """Boolean per sample: inside one of `speaker`'s turns."""
    mask = np.zeros(n_samples, dtype=bool)
    for who, start, end in turns:
        if who == speaker:
            mask[int(round(start * sr)) : int(round(end * sr))] = True
    return mask


def speaker_tracks(
    recording: Recording,
    bleed_db: float | None = None,
    noise_floor_db: float | None = None,
    delay_b_s: float = 0.0,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Tracks {"a", "b"} (float32, the recording's rate): a = first speaker to talk, b = the second.

    Each track: the recording inside its owner's reference turns, plus the rest of the
    recording scaled by `bleed_db` (the other person heard on this microphone), plus white
    noise at `noise_floor_db` dBFS RMS. Track b is delayed by `delay_b_s` (zeros in front,
    same length). Outside any turn a track is digital silence unless there is a noise floor.
    """
    audio, sr = recording.audio, recording.sr
    first, second = recording.speakers[:2]
    gain = 0.0 if bleed_db is None else 10.0 ** (bleed_db / 20.0)
    rng = np.random.default_rng(seed)
    tracks = {}
    for name, owner in (("a", first), ("b", second)):
        own = turn_mask(recording.turns, owner, audio.size, sr)
        track = np.where(own, audio, gain * audio).astype(np.float32)
        if noise_floor_db is not None:
            track += (10.0 ** (noise_floor_db / 20.0) * rng.standard_normal(audio.size)).astype(np.float32)
        tracks[name] = track
    shift = int(round(delay_b_s * sr))
    if shift > 0:
        tracks["b"] = np.concatenate((np.zeros(shift, np.float32), tracks["b"][:-shift]))
    return tracks


def reference_turns(recording: Recording, delay_b_s: float = 0.0) -> dict[str, list[tuple[float, float]]]:
    """The reference turns as {"a": [(start, end)], "b": [...]} (b shifted by `delay_b_s`)."""
    first, second = recording.speakers[:2]
    return {
        "a": [(s, e) for who, s, e in recording.turns if who == first],
        "b": [(s + delay_b_s, e + delay_b_s) for who, s, e in recording.turns if who == second],
    }
