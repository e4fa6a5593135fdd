"""Speech synthesis for the demo corpus: espeak-ng voices, batched and cached per interaction.

Part of `corpus.demo`: one voice variant (`en+m1..m7` / `en+f1..f5`), pitch and speed per
participant. The sentences of one participant are synthesized in one espeak-ng call (SSML,
separated by long breaks, split on the silences) and cached per (voice, sentence) inside one
interaction, so the output never depends on which worker ran what before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from omnisocial.demo_kit import espeak, trim_and_fade

log = logging.getLogger(__name__)

SPLIT_BREAK_MS = 1500
SPLIT_QUIET_S = 0.8
SPLIT_QUIET_LEVEL = 4 / 32768  # espeak-ng's breaks stay within +-1 LSB, a little more once resampled


@dataclass(frozen=True)
class Voice:
    variant: str
    pitch: int
    speed: int

    @property
    def name(self) -> str:
        return f"en+{self.variant}"


def _espeak(voice: Voice, text: str, path: Path, ssml: bool, sample_rate: int) -> np.ndarray:
    """Run espeak-ng once (`demo_kit.espeak`); its recording as float32 at `sample_rate`."""
    return espeak(voice.name, voice.pitch, voice.speed, text, path, sample_rate, ssml=ssml)


def _split_on_silence(x: np.ndarray, sample_rate: int) -> list[np.ndarray]:
    """Cut a batch recording at its long silences (the SSML breaks); speech never pauses that long."""
    loud = np.flatnonzero(np.abs(x) > SPLIT_QUIET_LEVEL)
    if loud.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(loud) > SPLIT_QUIET_S * sample_rate)
    starts = np.concatenate([[loud[0]], loud[breaks + 1]])
    ends = np.concatenate([loud[breaks], [loud[-1]]]) + 1
    return [x[s:e] for s, e in zip(starts, ends, strict=True)]


class Synth:
    """espeak-ng speech for one interaction, cached per (voice, sentence).

    Uncached sentences of one voice are synthesized together in one call (SSML breaks
    between them, split on the silences); when the split does not give one piece per
    sentence, each sentence is synthesized on its own instead.
    """

    def __init__(self, sample_rate: int, workdir: Path):
        self.sample_rate = sample_rate
        self.workdir = workdir
        self.cache: dict[tuple[Voice, str], np.ndarray] = {}
        self.calls = 0

    def prefetch(self, voice: Voice, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if (voice, t) not in self.cache))
        if not todo:
            return
        path = self.workdir / f"espeak{self.calls}.wav"
        self.calls += 1
        body = "".join(f'{escape(t)} <break time="{SPLIT_BREAK_MS}ms"/> ' for t in todo)
        recording = _espeak(voice, f"<speak>{body}</speak>", path, True, self.sample_rate)
        pieces = _split_on_silence(recording, self.sample_rate)
        if len(pieces) != len(todo):
            log.debug("espeak batch of %d gave %d pieces; synthesizing one by one", len(todo), len(pieces))
            pieces = []
            for text in todo:
                pieces.append(_espeak(voice, text, path, False, self.sample_rate))
                self.calls += 1
        for text, piece in zip(todo, pieces, strict=True):
            self.cache[(voice, text)] = trim_and_fade(piece, self.sample_rate, text)

    def audio(self, voice: Voice, text: str) -> np.ndarray:
        if (voice, text) not in self.cache:
            self.prefetch(voice, [text])
        return self.cache[(voice, text)]
