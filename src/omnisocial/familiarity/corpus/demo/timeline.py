"""The demo corpus timelines: turns, gaps, overlaps and backchannels, redrawn until they meet their targets.

Part of `corpus.demo`: alternating turns; the gap before a turn is exponential(`gap_mean_s`)
(capped at 3 means), with probability `overlap_prob` the next turn starts 0.2-0.8 s before
the current one ends, and the listener says "yeah" / "mm-hm" / "right" mid-turn with
probability `backchannel_prob`. A timeline is accepted only when it meets the targets of
its kind (`timeline_stats`, `accept`, and for good conversations `clips_pass`); otherwise
the layout is redrawn (seeded), and after `MAX_TRIES` tries generation fails with a message.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np

from omnisocial.familiarity.clips import interaction_clips
from omnisocial.familiarity.corpus.demo.conversations import (
    GENERIC,
    OPEN_PROMPT,
    SHORT,
    Supply,
    prompt_by_key,
)
from omnisocial.familiarity.corpus.demo.design import (
    CLIP_TURN_SLACK,
    DEFAULT_CLIPS,
    MIN_SPEAKER_S,
    MIN_TURNS,
    TURN_GAP_S,
    WINDOW_S,
    WINDOW_STEP_S,
    Plan,
    SpeechTargets,
)
from omnisocial.familiarity.corpus.demo.voices import Synth
from omnisocial.familiarity.intervals import union_seconds

log = logging.getLogger(__name__)

# Clips must hold MIN_TURNS + CLIP_TURN_SLACK merged turns (a listener's count): a few of the
# demo's slower conversations meet that in 1 try of 20-40, so 60 tries were too few for them
MAX_TRIES = 200
RESHUFFLE_EVERY = 10
OVERLAP_S = (0.2, 0.8)
IN_TURN_PAUSE_S = (0.12, 0.25)  # between sentences of one turn: below TURN_GAP_S, so one turn
SOLO_PAUSE_S = (0.45, 0.7)  # silent_speaker: a pause between sentences (one speaker is one turn)
SPARSE_GAP_S = (1.2, 2.0)
SPARSE_TURN_SPEECH_S = 2.0  # too_little_speech: speech per turn
MONOLOGUE_S = (11.0, 13.5)  # too_few_turns: a 20 s window then spans at most three turns
MONOLOGUE_MAX_S = 14.5


@dataclass
class Piece:
    """One stretch of one speaker's speech: a sentence or a backchannel."""

    speaker: int
    start: float
    text: str
    audio: np.ndarray  # float32 at the corpus sample rate
    sample_rate: int
    backchannel: bool = False
    span: float | None = None  # the sentence's full duration when `audio` was cut short

    @property
    def duration(self) -> float:
        return len(self.audio) / self.sample_rate

    @property
    def end(self) -> float:
        return self.start + self.duration

    def words(self) -> list[tuple[str, float, float]]:
        """Word times: the sentence's duration spread over its words in proportion to length."""
        tokens = self.text.split()
        weights = np.array([max(1, len(re.sub(r"\W", "", t))) for t in tokens], dtype=float)
        edges = self.start + np.concatenate([[0.0], np.cumsum(weights)]) / weights.sum() * (
            self.span or self.duration
        )
        return [(t, float(edges[k]), float(edges[k + 1])) for k, t in enumerate(tokens)]


@dataclass(frozen=True)
class TimelineStats:
    speech_s: float  # union of both speakers' speech over the interaction
    min_turns: int  # fewest merged turns overlapping any 20 s window
    max_turns: int  # most merged turns overlapping any 20 s window
    min_onsets: int  # fewest merged-turn onsets in a 20 s window that starts at a turn onset
    min_speaker_s: float  # least speech of either speaker in any 20 s window


def merged_turns(pieces: list[Piece], gap: float | None = TURN_GAP_S) -> list[tuple[int, float, float]]:
    """Main (non-backchannel) pieces in time order, same-speaker runs closer than `gap` merged (None: all)."""
    gap = float("inf") if gap is None else gap
    turns: list[list] = []
    for piece in sorted((p for p in pieces if not p.backchannel), key=lambda p: (p.start, p.speaker)):
        if turns and turns[-1][0] == piece.speaker and piece.start - turns[-1][2] < gap:
            turns[-1][2] = max(turns[-1][2], piece.end)
        else:
            turns.append([piece.speaker, piece.start, piece.end])
    return [(s, a, b) for s, a, b in turns]


def timeline_stats(pieces: list[Piece], duration: float, window: float = WINDOW_S) -> TimelineStats:
    """Measure a timeline the way the quality filters will (turns, speech per window, total)."""
    speech = union_seconds([(p.start, p.end) for p in pieces])
    turns = merged_turns(pieces)
    starts = np.arange(0.0, duration - window + 1e-9, WINDOW_STEP_S)
    if not turns or starts.size == 0:
        return TimelineStats(speech, 0, 0, 0, 0.0)
    ts = np.array([t[1] for t in turns])
    te = np.array([t[2] for t in turns])
    lo, hi = starts[:, None], starts[:, None] + window
    inside = np.clip(np.minimum(te, hi) - np.maximum(ts, lo), 0.0, None)
    counts = (inside > 0.1).sum(axis=1)
    anchors = ts[ts + window <= duration]
    onsets = [int(((ts >= a) & (ts < a + window)).sum()) for a in anchors]
    per_speaker = []
    for who in range(2):
        own = [p for p in pieces if p.speaker == who and not p.backchannel]
        if not own:
            per_speaker.append(0.0)
            continue
        ps = np.array([p.start for p in own])
        pe = np.array([p.end for p in own])
        per_speaker.append(float(np.clip(np.minimum(pe, hi) - np.maximum(ps, lo), 0.0, None).sum(1).min()))
    return TimelineStats(
        speech_s=speech,
        min_turns=int(counts.min()),
        max_turns=int(counts.max()),
        min_onsets=min(onsets) if onsets else 0,
        min_speaker_s=min(per_speaker),
    )


def clips_pass(pieces: list[Piece], duration: float) -> bool:
    """Whether the workflow's own clip selection finds F2/F3-passing early and late clips.

    The sliding-window statistics above cannot see how a clip's start and end snap to turn
    edges, so a good conversation is also checked with `clips.interaction_clips` (the core of
    `clip_candidates`) at the default clip settings, exactly as the workflow will cut it.
    The recording is `duration` long on both tracks, which makes it the interaction's end.
    """
    spans = (
        np.array(["a" if p.speaker == 0 else "b" for p in pieces]),
        np.array([p.start for p in pieces], dtype=float),
        np.array([p.end for p in pieces], dtype=float),
    )
    clips = interaction_clips(spans, spans, float(duration), DEFAULT_CLIPS, TURN_GAP_S)
    return len(clips) == 2 and all(
        clip["n_turns"] >= MIN_TURNS + CLIP_TURN_SLACK
        and min(clip["speech_s_a"], clip["speech_s_b"]) >= MIN_SPEAKER_S
        for clip in clips
    )


def accept(mode: str, stats: TimelineStats, targets: SpeechTargets) -> bool:
    """Whether a timeline of `mode` meets its targets (see the module docstring)."""
    if mode == "dialogue":
        return (
            stats.speech_s >= targets.speech_s
            and stats.min_turns >= MIN_TURNS
            and stats.min_onsets >= MIN_TURNS
            and stats.min_speaker_s >= MIN_SPEAKER_S
        )
    if mode == "monologues":
        return (
            stats.speech_s >= targets.speech_s
            and stats.max_turns < MIN_TURNS
            and stats.min_speaker_s >= MIN_SPEAKER_S
        )
    if mode == "solo":
        # one speaker talks: one merged turn, so F2 fails as well as F3 (a listener hears a
        # monologue); only the amount of speech is a target
        return stats.speech_s >= targets.speech_s
    if mode == "sparse":
        low, high = targets.little_speech_s
        return (
            low <= stats.speech_s <= high
            and stats.min_turns >= MIN_TURNS
            and stats.min_onsets >= MIN_TURNS
            and stats.min_speaker_s >= MIN_SPEAKER_S
        )
    raise ValueError(f"unknown timeline mode {mode!r}")


class _Timeline:
    """Pieces being laid out, keeping each speaker's own speech from overlapping itself."""

    def __init__(self, duration: float, sample_rate: int):
        self.duration = duration
        self.sample_rate = sample_rate
        self.pieces: list[Piece] = []
        self.last_end = [0.0, 0.0]

    def earliest(self, who: int, proposed: float) -> float:
        return max(proposed, self.last_end[who] + 0.15)

    def add(self, who: int, start: float, text: str, audio: np.ndarray, backchannel: bool = False) -> bool:
        """Place a piece; cut it at the end of the recording. False once nothing more fits."""
        limit = self.duration - 0.05
        if start + 0.5 > limit:
            return False
        piece = Piece(who, round(start, 3), text, audio, self.sample_rate, backchannel)
        if piece.end > limit:
            if backchannel:
                return False
            piece = _cut(piece, limit)
            if piece is None:
                return False
        self.pieces.append(piece)
        self.last_end[who] = max(self.last_end[who], piece.end)
        return True


def _cut(piece: Piece, limit: float) -> Piece | None:
    """The part of a sentence said before the recording stops, words that end in it only."""
    words = [w for w in piece.words() if w[2] <= limit]
    if not words:
        return None
    keep = int(round((limit - piece.start) * piece.sample_rate))
    audio = piece.audio[:keep].copy()
    fade = min(len(audio), int(0.02 * piece.sample_rate))
    audio[len(audio) - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return Piece(
        piece.speaker,
        piece.start,
        " ".join(w[0] for w in words),
        audio,
        piece.sample_rate,
        piece.backchannel,
        span=piece.duration,
    )


def _turn_gap(rng: np.random.Generator, style: dict) -> float:
    """Signed gap before the next turn: negative for an overlap."""
    if rng.random() < float(style["overlap_prob"]):
        return -float(rng.uniform(*OVERLAP_S))
    mean = float(style["gap_mean_s"])
    return float(min(rng.exponential(mean), 3.0 * mean)) if mean > 0 else 0.0


def _layout_dialogue(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.3, 0.7))
    who = 0
    while True:
        start = line.earliest(who, t)
        text, audio = supply.sentence(who)
        pieces = [(text, audio)]
        if len(audio) / line.sample_rate < 2.5:  # a short sentence: say another one in the same turn
            pieces.append(supply.sentence(who))
        turn_start = start
        for k, (text, audio) in enumerate(pieces):
            if k:
                start = line.pieces[-1].end + float(rng.uniform(*IN_TURN_PAUSE_S))
            if not line.add(who, start, text, audio):
                return
        turn_end = line.pieces[-1].end
        listener = 1 - who
        if turn_end - turn_start >= 2.0 and rng.random() < float(style["backchannel_prob"]):
            shown, bc = supply.backchannel(listener, rng)
            at = turn_start + float(rng.uniform(0.35, 0.65)) * (turn_end - turn_start)
            if at >= line.last_end[listener] + 0.3 and at + len(bc) / line.sample_rate < turn_end - 0.2:
                line.add(listener, at, shown, bc, backchannel=True)
        gap = _turn_gap(rng, style)
        t = max(turn_end + gap, turn_start + 0.5)
        who = listener


def _layout_monologues(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.3, 0.7))
    who = 0
    while True:
        target = float(rng.uniform(*MONOLOGUE_S))
        start = line.earliest(who, t)
        turn_start = start
        while True:
            text, audio = supply.sentence(who)
            length = len(audio) / line.sample_rate
            if start - turn_start + length > MONOLOGUE_MAX_S and start > turn_start:
                break
            if not line.add(who, start, text, audio):
                return
            start = line.pieces[-1].end + float(rng.uniform(*IN_TURN_PAUSE_S))
            if line.pieces[-1].end - turn_start >= target:
                break
        gap = _turn_gap(rng, style)
        t = max(line.pieces[-1].end + max(gap, 0.05), turn_start + 0.5)
        who = 1 - who


def _layout_solo(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.3, 0.7))
    while True:
        text, audio = supply.sentence(0)
        if not line.add(0, line.earliest(0, t), text, audio):
            return
        t = line.pieces[-1].end + float(rng.uniform(*SOLO_PAUSE_S))


def _layout_sparse(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.5, 1.5))
    who = 0
    while True:
        start = line.earliest(who, t)
        turn_start = start
        # Turns of about 2 s of speech keep each speaker above MIN_SPEAKER_S in every 20 s
        # window; the gaps between turns keep the total far below the F5 threshold.
        spoken = 0.0
        for k in range(3):
            if k:
                start = line.pieces[-1].end + float(rng.uniform(*IN_TURN_PAUSE_S))
            # The very first line is the prompt's opening, as in every demo conversation.
            text, audio = supply.sentence(who) if not line.pieces else supply.short_sentence(who)
            if not line.add(who, start, text, audio):
                return
            spoken += line.pieces[-1].end - line.pieces[-1].start
            if spoken >= SPARSE_TURN_SPEECH_S:
                break
        t = max(line.pieces[-1].end + float(rng.uniform(*SPARSE_GAP_S)), turn_start + 0.5)
        who = 1 - who


LAYOUTS = {
    "dialogue": _layout_dialogue,
    "monologues": _layout_monologues,
    "solo": _layout_solo,
    "sparse": _layout_sparse,
}


def build_timeline(
    mode: str,
    rng: np.random.Generator,
    supply: Supply,
    style: dict,
    duration: float,
    sample_rate: int,
    targets: SpeechTargets,
    label: str = "",
) -> tuple[list[Piece], TimelineStats]:
    """Lay out a conversation of `mode`, redrawing (seeded) until it meets its targets."""
    for attempt in range(MAX_TRIES):
        reshuffle = attempt and attempt % RESHUFFLE_EVERY == 0
        supply.reset(rng if reshuffle else None)
        line = _Timeline(duration, sample_rate)
        LAYOUTS[mode](rng, supply, style, line)
        stats = timeline_stats(line.pieces, duration)
        if accept(mode, stats, targets) and (mode != "dialogue" or clips_pass(line.pieces, duration)):
            if attempt:
                log.debug("%s: %s timeline accepted at try %d", label, mode, attempt + 1)
            return line.pieces, stats
    raise RuntimeError(
        f"demo corpus: could not lay out a {mode!r} conversation for {label or 'an interaction'} in "
        f"{MAX_TRIES} tries (last: {stats}); duration_s={duration:g} may be too short for "
        f"{targets.speech_s:g} s of speech with this style"
    )


def make_supply(rng: np.random.Generator, plan: Plan, synth: Synth) -> Supply:
    """The sentence order of each speaker: the prompt's topic plus small talk, shuffled."""
    prompt = OPEN_PROMPT if plan.prompt_key == OPEN_PROMPT.key else prompt_by_key(plan.prompt_key)
    generic = [s for s in GENERIC if prompt.either_or or (" or " not in s and "rather" not in s)]
    pool = list(prompt.sentences) + generic
    orders = []
    for who in range(2):
        order = [pool[k] for k in rng.permutation(len(pool))]
        orders.append([prompt.opening, *order] if who == 0 else order)
    short = [[SHORT[k] for k in rng.permutation(len(SHORT))] for _ in range(2)]
    return Supply(synth, (plan.people[0].voice, plan.people[1].voice), orders, short)
