"""Real telephone calls recorded one line per talker, and a reference made from each line alone.

The calls are three of SpokenWOZ's human-to-human calls (CC BY-NC 4.0) as shipped in
`tests/data/spokenwoz/` (its README gives the source, the licence and what each call holds):
8 kHz stereo, speaker A on channel 0 and speaker B on channel 1, each on its own line. That is
the layout of a corpus with one microphone per participant, recorded rather than built: the
two people talk over each other, back-channel and pause as they did on the call.

**The reference.** The two lines carry no measurable trace of each other (correlation 0.00;
each line sits at its own noise, -64 to -72 dBFS, while the other person talks), so each line
alone says when its owner makes a sound; only where speech starts and ends is a convention.
`line_speech` fixes it the way the study's stages do on one microphone: silero's segments on
the line with the study's VAD settings, each end moved to the line's own voiced hops (within
25 dB of its speech level and 6 dB over its running noise floor), the stretches under the
minimum duration kept apart as backchannel candidates. No second microphone, cross-talk rule
or coupling estimate enters it, so a layout made by adding noise or cross-mix to the lines is
scored against what the clean lines said.

**Its uncertainty.** Two readings of the same lines that share nothing with silero bound it:
`energy_speech_seconds`, the 10 ms frames of the line more than 10, 15 or 20 dB over its noise
(the level while its owner's words are more than a second away) within 0.3 s of its owner's
words, closed over pauses under 0.1 s; and the dataset's utterance edges. The benchmark prints
both beside the reference (`benchmarks/bench_separate_mics.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omnisocial.media.audio import envelope
from omnisocial.media.crosstalk import _segments_of, attribute_speech
from omnisocial.media.vad import speech_and_short_segments
from omnisocial.settings import Signals, Vad

CALL_NAMES = ("MUL1423", "SNG0696", "SNG1640")
HOP_S = 0.01  # frames of the energy reading
NEAR_WORD_S = 0.3  # the energy reading counts frames this near a word of the line's owner
QUIET_FROM_WORDS_S = 1.0  # a line's noise: its level while its owner's words are farther than this


@dataclass(frozen=True)
class Word:
    """One word of the call's transcript: speaker "a" (channel 0) or "b" (channel 1), seconds."""

    speaker: str
    text: str
    start: float
    end: float


@dataclass(frozen=True)
class Call:
    """A two-line call: each speaker's line (float32, "a" and "b"), its rate and its words."""

    name: str
    tracks: dict[str, np.ndarray]
    sr: int
    words: tuple[Word, ...]

    @property
    def seconds(self) -> float:
        return self.tracks["a"].size / self.sr

    def word_spans(self, speaker: str) -> list[tuple[float, float]]:
        return [(w.start, w.end) for w in self.words if w.speaker == speaker]


def read_call(folder: Path, name: str) -> Call:
    """`{name}.flac` (two channels) and `{name}.words.json` of `folder`; ValueError naming what is wrong."""
    import soundfile as sf

    audio_path, words_path = Path(folder) / f"{name}.flac", Path(folder) / f"{name}.words.json"
    audio, sr = sf.read(str(audio_path), dtype="float32", always_2d=True)
    if audio.shape[1] != 2:
        raise ValueError(f"{audio_path}: {audio.shape[1]} channel(s), a two-line call has 2")
    speakers = {"A": "a", "B": "b"}
    words = []
    for index, item in enumerate(json.loads(words_path.read_text())):
        if item.get("speaker") not in speakers:
            raise ValueError(f"{words_path}: word {index} has speaker {item.get('speaker')!r}, not A or B")
        words.append(
            Word(speakers[item["speaker"]], str(item["word"]), float(item["start"]), float(item["end"]))
        )
    tracks = {"a": np.ascontiguousarray(audio[:, 0]), "b": np.ascontiguousarray(audio[:, 1])}
    return Call(name, tracks, int(sr), tuple(sorted(words, key=lambda w: (w.start, w.end))))


def utterances(call: Call) -> list[tuple[str, float, float, str]]:
    """(speaker, start, end, text) of each run of one speaker's consecutive words."""
    out: list[list] = []
    for word in call.words:
        if out and out[-1][0] == word.speaker:
            out[-1][2] = max(out[-1][2], word.end)
            out[-1][3] += " " + word.text
        else:
            out.append([word.speaker, word.start, word.end, word.text])
    return [(speaker, start, end, text) for speaker, start, end, text in out]


def line_speech(
    track: np.ndarray, sr: int, vad: Vad
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(speech, short stretches) of one line alone: silero with the `vad` block, ends at the line's own level.

    `attribute_speech` with a silent second microphone and the schema's `signals:` block, but
    `speech_edge_hangover_s` null: nothing is cross-talk, every unvoiced end is trimmed;
    stretches under `vad.min_speech_s` are the short ones.
    """
    segments, short = speech_and_short_segments(track, sr, vad)
    silent = np.zeros_like(track)
    alone = attribute_speech(
        {"a": segments, "b": []},
        {"a": track, "b": silent},
        sr,
        Signals.of(speech_edge_hangover_s=None),
        vad,
        short={"a": short, "b": []},
    )
    return alone.segments["a"], alone.short["a"]


def reference(call: Call, vad: Vad) -> dict[str, list[tuple[float, float]]]:
    """Each speaker's speech by `line_speech` on their own line, short stretches included, sorted."""
    out = {}
    for speaker in ("a", "b"):
        segments, short = line_speech(call.tracks[speaker], call.sr, vad)
        out[speaker] = sorted([*segments, *short])
    return out


def _near(spans: list[tuple[float, float]], count: int, pad_s: float) -> np.ndarray:
    mask = np.zeros(count, dtype=bool)
    for start, end in spans:
        mask[max(0, int((start - pad_s) / HOP_S)) : max(0, int(np.ceil((end + pad_s) / HOP_S)))] = True
    return mask


def energy_speech_seconds(call: Call, speaker: str, above_db: float, min_speech_s: float = 0.25) -> float:
    """Seconds of the speaker's line more than `above_db` over its noise, near its owner's words.

    Frames of `HOP_S`; the noise is the median level of the frames farther than
    `QUIET_FROM_WORDS_S` from any of the owner's words; frames count within `NEAR_WORD_S` of
    a word, runs are closed over pauses under 0.1 s and count when longer than `min_speech_s`.
    Independent of silero: the benchmark's bound on the reference's edge convention.
    """
    levels = 20.0 * np.log10(np.maximum(envelope(call.tracks[speaker], call.sr, HOP_S), 1e-6))  # dBFS
    spans = call.word_spans(speaker)
    quiet = ~_near(spans, levels.size, QUIET_FROM_WORDS_S)
    noise = float(np.median(levels[quiet])) if quiet.any() else float(np.percentile(levels, 5))
    loud = (levels > noise + above_db) & _near(spans, levels.size, NEAR_WORD_S)
    return float(sum(end - start for start, end in _segments_of(loud, HOP_S, min_speech_s, 0.1)))


def room_response(sr: int, rt60_s: float, seed: int) -> np.ndarray:
    """A synthetic room impulse response (unit energy): a direct path 3 ms in, then seeded noise
    decaying 60 dB over `rt60_s` (a model of a room's bleed path, not a measured one)."""
    rng = np.random.default_rng(seed)
    times = np.arange(int(round(1.2 * rt60_s * sr))) / sr
    response = rng.standard_normal(times.size) * np.exp(-6.9 * times / rt60_s)
    direct = int(round(0.003 * sr))
    response[:direct] = 0.0
    response[direct] = 3.0
    return response / np.sqrt(np.sum(response**2))


def layout_tracks(
    call: Call,
    cross_db: float | None = None,
    noise_floor_db: float | None = None,
    seed: int = 0,
    room_rt60_s: float | None = None,
) -> dict[str, np.ndarray]:
    """The call's lines, each with the other mixed in at `cross_db` (None: not) and white noise at
    `noise_floor_db` dBFS RMS (None: none) added: a hybrid's echo or a shared room, a noisier line.

    With `room_rt60_s` the other line reaches each one through `room_response` (as through a
    room with that reverberation time) instead of as a plain copy.
    """
    from scipy.signal import fftconvolve

    cross = 0.0 if cross_db is None else 10.0 ** (cross_db / 20.0)
    rng = np.random.default_rng(seed)
    out = {}
    for index, (name, other) in enumerate((("a", "b"), ("b", "a"))):
        heard = call.tracks[other].astype(np.float64)
        if room_rt60_s is not None:
            heard = fftconvolve(heard, room_response(call.sr, room_rt60_s, seed + 1 + index))[: heard.size]
        track = call.tracks[name].astype(np.float64) + cross * heard
        if noise_floor_db is not None:
            track = track + 10.0 ** (noise_floor_db / 20.0) * rng.standard_normal(track.size)
        out[name] = track.astype(np.float32)
    return out
