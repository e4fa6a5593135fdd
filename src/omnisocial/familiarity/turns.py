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


def _ordered(rows: pd.DataFrame) -> pd.DataFrame:
    """`speaker, start, end` rows with end > start, sorted by (start, end, speaker), fresh index."""
    if rows is None or rows.empty:
        return _empty()
    speaker = rows["speaker"].astype(str).to_numpy(dtype="U")
    start = rows["start"].to_numpy(dtype="float64")
    end = rows["end"].to_numpy(dtype="float64")
    keep = np.flatnonzero(end > start)
    order = keep[np.lexsort((speaker[keep], end[keep], start[keep]))]
    return pd.DataFrame(
        {"speaker": pd.Series(speaker[order], dtype=object), "start": start[order], "end": end[order]}
    )


def merge_turns(segments: pd.DataFrame, gap_s: float) -> pd.DataFrame:
    """Merge consecutive same-speaker segments separated by at most `gap_s` into turns.

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
    turns: list[list] = []
    columns = (ordered["speaker"].tolist(), ordered["start"].tolist(), ordered["end"].tolist())
    for speaker, start, end in zip(*columns, strict=True):
        if turns and turns[-1][0] == speaker and start - turns[-1][2] <= gap_s + _EPS:
            turns[-1][2] = max(turns[-1][2], end)
        else:
            turns.append([speaker, start, end])
    out = pd.DataFrame(turns, columns=TURN_COLUMNS)
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
