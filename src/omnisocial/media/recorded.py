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


# The separate-microphone layout (`separate_mics`): each microphone carries only its owner's
# voice, so simultaneous speech is two different signals, as on headsets or telephone lines.
B_LEAD_S = 0.6  # b's voice is played this much earlier: every turn b takes starts over a's end
B_GAIN_DB = -6.0  # b is the softer speaker
# Short utterances cut from the call's own voices (voiced extent, from the recording's level)
# and laid inside the other speaker's turn: (owner, cut start, cut end, placed at), seconds.
BACKCHANNELS = (
    ("b", 7.68, 7.88, 12.5),  # "Hel-" of Sheila's "Hello?": 0.2 s, under silero's 0.25 s minimum
    ("b", 7.68, 8.24, 19.6),  # her whole "Hello?": 0.56 s
    ("a", 6.74, 6.94, 24.0),  # "Hel-" of Diane's "Hello?": 0.2 s
)
FADE_S = 0.01
MIN_PIECE_S = 0.25  # a voice's pieces shorter than this, left between two overlaps, are silenced


def _without_short_runs(mask: np.ndarray, shortest: int) -> np.ndarray:
    """`mask` without its True runs shorter than `shortest` samples."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    out = mask.copy()
    for start, stop in zip(edges[0::2], edges[1::2], strict=True):
        if stop - start < shortest:
            out[start:stop] = False
    return out


@dataclass(frozen=True)
class SeparateMics:
    """Two tracks with one voice each, and the reference that made them."""

    tracks: dict[str, np.ndarray]
    sr: int
    reference: dict[str, list[tuple[float, float]]]  # each speaker's speech, backchannels included
    backchannels: dict[str, list[tuple[float, float]]]  # the placed short utterances


def separate_mics(
    recording: Recording,
    cross_db: float | None = None,
    noise_floor_db: float | None = None,
    seed: int = 0,
    b_gain_db: float = B_GAIN_DB,
) -> SeparateMics:
    """The real call laid out as one microphone per talker, with simultaneous speech of both.

    Each speaker's voice is the recording inside that speaker's reference turns where the
    other does not also speak (the mono recording holds both voices in a reference overlap,
    so those stretches are left out of both voices and of the reference, and so are the
    pieces under `MIN_PIECE_S` they leave: a syllable cut in two). b's voice is moved
    `B_LEAD_S` earlier and scaled by `b_gain_db` (softer), so that each of b's turns begins over the
    end of a's (an overlapping start, at a different level on each microphone), and the short
    utterances of `BACKCHANNELS` are laid inside the other's turns (with `FADE_S` fades).
    Track a = a's voice + b's at `cross_db` (None: none) + white noise at `noise_floor_db`
    dBFS, track b likewise. The reference is exact by construction up to the human reference
    turns' own edges.
    """
    audio, sr = recording.audio, recording.sr
    first, second = recording.speakers[:2]
    masks = {
        name: turn_mask(recording.turns, owner, audio.size, sr)
        for name, owner in (("a", first), ("b", second))
    }
    both = masks["a"] & masks["b"]
    own = {name: _without_short_runs(masks[name] & ~both, int(round(MIN_PIECE_S * sr))) for name in masks}
    voice = {name: np.where(own[name], audio, 0.0).astype(np.float64) for name in masks}
    shift = int(round(B_LEAD_S * sr))
    voice["b"] = 10.0 ** (b_gain_db / 20.0) * np.concatenate((voice["b"][shift:], np.zeros(shift)))
    fade = int(round(FADE_S * sr))
    placed: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}
    for owner, cut_start, cut_end, at in BACKCHANNELS:
        piece = audio[int(round(cut_start * sr)) : int(round(cut_end * sr))].astype(np.float64)
        ramp = np.linspace(0.0, 1.0, fade)
        piece[:fade] *= ramp
        piece[-fade:] *= ramp[::-1]
        gain = 10.0 ** (b_gain_db / 20.0) if owner == "b" else 1.0
        begin = int(round(at * sr))
        voice[owner][begin : begin + piece.size] += gain * piece
        placed[owner].append((at, at + piece.size / sr))
    cross = 0.0 if cross_db is None else 10.0 ** (cross_db / 20.0)
    rng = np.random.default_rng(seed)
    tracks = {}
    for name, other in (("a", "b"), ("b", "a")):
        track = voice[name] + cross * voice[other]
        if noise_floor_db is not None:
            track = track + 10.0 ** (noise_floor_db / 20.0) * rng.standard_normal(audio.size)
        tracks[name] = track.astype(np.float32)
    reference = {}
    for name, offset in (("a", 0.0), ("b", B_LEAD_S)):
        runs = np.flatnonzero(np.diff(np.concatenate(([0], own[name].astype(np.int8), [0]))))
        spans = [(s / sr - offset, e / sr - offset) for s, e in zip(runs[0::2], runs[1::2], strict=True)]
        reference[name] = sorted([(max(s, 0.0), e) for s, e in spans if e > 0] + placed[name])
    return SeparateMics(tracks, sr, reference, placed)
