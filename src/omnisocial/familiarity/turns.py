"""Turns: merging speech segments into conversational turns, and the timeline they come from.

A *segment* is one stretch of speech by one speaker (a transcript utterance or a VAD
region); a *turn* is a run of consecutive segments by the same speaker. Both are frames
with the columns `speaker, start, end` (seconds, interaction-local).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TURN_COLUMNS = ["speaker", "start", "end"]

# Times are floats read from CSV: a gap written as exactly the threshold (1.0 -> 1.3) can
# come out a hair above it (0.30000000000000004). Anything within this slack counts as equal.
_EPS = 1e-9


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "speaker": pd.Series(dtype=object),
            "start": pd.Series(dtype="float64"),
            "end": pd.Series(dtype="float64"),
        }
    )


def ordered_spans(speaker, start, end) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows with end > start as (speaker, start, end) arrays, in the order they are heard.

    That order is start, then end, then speaker. Plain arrays, so that callers that check
    many drafts (the demo generator) need not build a frame for each.
    """
    speaker = np.asarray(speaker, dtype=str)  # no copy when already text (`_ordered` passes it so)
    start = np.asarray(start, dtype="float64")
    end = np.asarray(end, dtype="float64")
    keep = np.flatnonzero(end > start)
    order = keep[np.lexsort((speaker[keep], end[keep], start[keep]))]
    return speaker[order], start[order], end[order]


def _ordered(rows: pd.DataFrame) -> pd.DataFrame:
    """`speaker, start, end` rows with end > start, sorted by (start, end, speaker), fresh index."""
    if rows is None or rows.empty:
        return _empty()
    speaker, start, end = ordered_spans(
        rows["speaker"].astype(str).to_numpy(dtype="U"),
        rows["start"].to_numpy(dtype="float64"),
        rows["end"].to_numpy(dtype="float64"),
    )
    return pd.DataFrame({"speaker": pd.Series(speaker, dtype=object), "start": start, "end": end})


def merge_spans(speaker: np.ndarray, start: np.ndarray, end: np.ndarray, gap_s: float | None) -> list[list]:
    """`merge_turns` on arrays already in `ordered_spans` order: `[speaker, start, end]` per turn."""
    gap_s = float("inf") if gap_s is None else float(gap_s)
    turns: list[list] = []
    for who, onset, offset in zip(speaker.tolist(), start.tolist(), end.tolist(), strict=True):
        if turns and turns[-1][0] == who and onset - turns[-1][2] <= gap_s + _EPS:
            turns[-1][2] = max(turns[-1][2], offset)
        else:
            turns.append([who, onset, offset])
    return turns


def merge_turns(segments: pd.DataFrame, gap_s: float | None = None) -> pd.DataFrame:
    """Merge consecutive same-speaker segments separated by at most `gap_s` into turns.

    `gap_s` None (the default) merges them whatever the pause: a turn lasts until the other
    person speaks, as a listener counts turns; a number splits one speaker's speech at
    every pause longer than it (counting pauses rather than turns).

    The segments of both speakers are put in one sequence ordered by start time (ties by
    end, then speaker). Walking that sequence, a segment extends the current turn when it
    is by the same speaker and starts no more than `gap_s` after the turn's end (overlap
    counts as a gap of zero or less); otherwise it opens a new turn. So any segment of the
    other speaker that starts in between, even a short backchannel inside a long
    utterance, ends the turn: turns alternate in the order they are heard.

    A gap equal to `gap_s` merges (`<=`). Rows with end <= start are dropped. Extra
    columns (interaction_id, text, ...) are ignored. Returns `speaker, start, end`
    sorted by start, with a fresh index.
    """
    ordered = _ordered(segments)
    if ordered.empty:
        return _empty()
    columns = (ordered["speaker"].to_numpy(), ordered["start"].to_numpy(), ordered["end"].to_numpy())
    out = pd.DataFrame(merge_spans(*columns, gap_s), columns=TURN_COLUMNS)
    out["start"] = out["start"].astype("float64")
    out["end"] = out["end"].astype("float64")
    return out


def _rows_of(frame: pd.DataFrame | None, interaction_id: str) -> pd.DataFrame:
    if frame is None or frame.empty:
        return _empty()
    return _ordered(frame[frame["interaction_id"].astype(str) == str(interaction_id)])


def timeline(interaction_id: str, segments: pd.DataFrame | None, speech: pd.DataFrame | None) -> pd.DataFrame:
    """The speech timeline of one interaction: `speaker, start, end`, sorted by start.

    Prefers the transcript/ASR `segments` (SEGMENTS rows) of that interaction; when it has
    none, falls back to its voice-activity `speech` rows (SPEECH). Either frame may be
    None or empty. Returns an empty frame when the interaction has neither.
    """
    rows = _rows_of(segments, interaction_id)
    if rows.empty:
        rows = _rows_of(speech, interaction_id)
    return rows


Intervals = list[tuple[float, float]]


def _spans(intervals: Intervals, pause_s: float) -> Intervals:
    """`intervals` sorted and joined over pauses of at most `pause_s`."""
    spans: list[list[float]] = []
    for start, end in sorted(intervals):
        if spans and start - spans[-1][1] <= pause_s + _EPS:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return [(start, end) for start, end in spans]


def backchannels(own: Intervals, other: Intervals, max_s: float, pause_s: float) -> Intervals:
    """The stretches of `own` that are backchannels: short, and inside the other speaker's talk.

    A stretch of one speaker's speech (a VAD segment or a short event) is a backchannel when
    it lasts at most `max_s` and lies wholly within one span of the other speaker's speech
    (the other's stretches joined over pauses of at most `pause_s`): the other talks before
    and after it, and it does not take the floor. Stretches of `own` closer than 1e-9 s are
    one. Returns them in time order.
    """
    spans = _spans(other, pause_s)
    return [
        (start, end)
        for start, end in _spans(own, 0.0)
        if end - start <= max_s + _EPS
        and any(first <= start + _EPS and end <= last + _EPS for first, last in spans)
    ]


def overlap_seconds_by(a: Intervals, b: Intervals) -> tuple[float, float, float]:
    """(total, a's, b's) seconds of simultaneous speech; each overlap credited to the one who joined.

    Simultaneous speech is where a stretch of a and one of b intersect; the seconds go to
    the speaker whose stretch started later (who started speaking while the other talked:
    an overlapping start, a backchannel, an interruption). Equal starts are split evenly.
    """
    by = {"a": 0.0, "b": 0.0}
    for a_start, a_end in _spans(a, 0.0):
        for b_start, b_end in _spans(b, 0.0):
            seconds = min(a_end, b_end) - max(a_start, b_start)
            if seconds <= 0:
                continue
            if abs(a_start - b_start) <= _EPS:
                by["a"] += seconds / 2
                by["b"] += seconds / 2
            else:
                by["a" if a_start > b_start else "b"] += seconds
    return by["a"] + by["b"], by["a"], by["b"]
