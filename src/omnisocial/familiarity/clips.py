"""Clip selection: an early and a late window per interaction, snapped to turn edges.

The specification: docs/benchmarks/familiarity.md#clips.

`clip_candidates` (rule `select_clip_candidates`) proposes the windows; the filters judge
them (F2 turns, F3 speech) and `sampling.sample_design` draws the dyads from the
interactions that pass every filter.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from omnisocial.familiarity.contracts import CLIP_CANDIDATES
from omnisocial.familiarity.intervals import union_seconds
from omnisocial.familiarity.turns import merge_spans, ordered_spans, timeline
from omnisocial.tables import POSITIONS

_EPS = 1e-9

# One interaction's speech as plain arrays: (speaker, start, end).
Spans = tuple[np.ndarray, np.ndarray, np.ndarray]


def _by_interaction(frame: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """The rows of `frame` per interaction_id (one pass instead of one filter per interaction)."""
    if frame is None or frame.empty:
        return {}
    keys = frame["interaction_id"].astype(str)
    return {str(key): rows for key, rows in frame.groupby(keys, sort=False)}


def _interaction_end(interaction_id: str, line: pd.DataFrame, signals: pd.DataFrame | None) -> float:
    """Usable end of an interaction: the shorter known audio track, else the timeline's end."""
    if signals is not None and not signals.empty:
        row = signals[signals["interaction_id"].astype(str) == str(interaction_id)]
        if not row.empty:
            durations = [
                float(value)
                for value in (row.iloc[0].get("duration_audio_a"), row.iloc[0].get("duration_audio_b"))
                if value is not None and not pd.isna(value)
            ]
            if durations:
                return min(durations)
    return float(line["end"].max())


def _is_cut(point: float, starts: np.ndarray, ends: np.ndarray) -> bool:
    """True when some unit [start, end] strictly contains `point`."""
    return bool(np.any((starts < point - _EPS) & (ends > point + _EPS)))


def snap_end(end: float, line: pd.DataFrame, tolerance_s: float) -> float:
    """Move a clip end back so that it does not cut a segment, where possible.

    When no unit (segment) of `line` is cut at `end`, `end` stays. Otherwise the end moves
    back to the latest unit end in [end - tolerance_s, end] that itself cuts no unit (the
    end of the last whole word/utterance before `end`). When there is none, `end` stays:
    a cut is unavoidable within the tolerance.
    """
    return _snap_end(end, line["start"].to_numpy(dtype=float), line["end"].to_numpy(dtype=float), tolerance_s)


def _snap_end(end: float, starts: np.ndarray, ends: np.ndarray, tolerance_s: float) -> float:
    """`snap_end` for the units given as arrays of their starts and ends."""
    if not _is_cut(end, starts, ends):
        return end
    options = sorted({e for e in ends.tolist() if end - tolerance_s - _EPS <= e <= end + _EPS}, reverse=True)
    for option in options:
        if not _is_cut(option, starts, ends):
            return min(option, end)
    return end


def snap_start_forward(target: float, onsets: np.ndarray, tolerance_s: float) -> float:
    """The first turn onset in [target, target + tolerance_s], else `target` itself."""
    inside = onsets[(onsets >= target - _EPS) & (onsets <= target + tolerance_s + _EPS)]
    return float(inside.min()) if inside.size else float(target)


def snap_start_backward(target: float, onsets: np.ndarray, tolerance_s: float) -> float:
    """The last turn onset in [target - tolerance_s, target], else `target` itself."""
    inside = onsets[(onsets <= target + _EPS) & (onsets >= target - tolerance_s - _EPS)]
    return float(inside.max()) if inside.size else float(target)


def _speech_seconds(voiced: Spans, speaker: str, lo: float, hi: float) -> float:
    """Seconds of [lo, hi] covered by the union of `speaker`'s intervals, rounded as stored."""
    who, starts, ends = voiced
    mine = who == speaker
    return round(union_seconds(zip(starts[mine].tolist(), ends[mine].tolist(), strict=True), lo, hi), 6)


def count_turns(turn_starts: np.ndarray, turn_ends: np.ndarray, clip_start: float, clip_end: float) -> int:
    """Turns with a positive stretch inside [clip_start, clip_end] (turns clipped to the window)."""
    overlap = np.minimum(turn_ends, clip_end) - np.maximum(turn_starts, clip_start)
    return int(np.sum(overlap > _EPS))


def _window(
    position: str,
    starts: np.ndarray,
    ends: np.ndarray,
    onsets: np.ndarray,
    total_end: float,
    params: Mapping,
) -> tuple[float, float] | None:
    duration = float(params["duration_s"])
    tolerance = float(params["snap_tolerance_s"])
    if position == "early":
        target = float(params["early_start_s"])
        start = snap_start_forward(target, onsets, tolerance)
        if start + duration > total_end + _EPS:
            start = target  # the snapped window runs past the end; the unsnapped one may fit
        if target < 0 or start + duration > total_end + _EPS:
            return None
    else:
        target = total_end - float(params["late_end_margin_s"]) - duration
        if target < -_EPS:
            return None
        target = max(target, 0.0)
        start = snap_start_backward(target, onsets, tolerance)
    end = _snap_end(start + duration, starts, ends, tolerance)
    return round(start, 6), round(end, 6)


def interaction_clips(
    line: Spans, voiced: Spans, total_end: float, clip_params: Mapping, turn_gap_s: float | None
) -> list[dict]:
    """The early and late clip of one interaction, as `clip_candidates` rows without the id.

    `line` is the interaction's timeline, `voiced` the speech that speech_s_a/b measure and
    `total_end` its end T (see `clip_candidates`); `line` need not be ordered. Plain arrays
    rather than frames, so that the demo generator can check hundreds of drafts cheaply
    with the very selection the workflow runs.
    """
    speaker, starts, ends = ordered_spans(*line)
    if not starts.size:
        return []
    turns = merge_spans(speaker, starts, ends, turn_gap_s)
    turn_starts = np.array([turn[1] for turn in turns], dtype=float)
    turn_ends = np.array([turn[2] for turn in turns], dtype=float)
    onsets = np.sort(turn_starts)
    rows = []
    for position in POSITIONS:
        window = _window(position, starts, ends, onsets, total_end, clip_params)
        if window is None:
            continue
        start, end = window
        rows.append(
            {
                "position": position,
                "clip_start": start,
                "clip_end": end,
                "n_turns": count_turns(turn_starts, turn_ends, start, end),
                "speech_s_a": _speech_seconds(voiced, "a", start, end),
                "speech_s_b": _speech_seconds(voiced, "b", start, end),
            }
        )
    return rows


def _spans(frame: pd.DataFrame) -> Spans:
    """The `speaker, start, end` columns of a timeline frame as `interaction_clips` takes them."""
    return frame["speaker"].to_numpy(), frame["start"].to_numpy(float), frame["end"].to_numpy(float)


def clip_candidates(
    interactions: pd.DataFrame,
    segments: pd.DataFrame | None,
    speech: pd.DataFrame | None,
    signals: pd.DataFrame | None,
    clip_params: Mapping,
    turn_gap_s: float,
) -> pd.DataFrame:
    """An early and a late clip window per interaction (a CLIP_CANDIDATES frame).

    Source of speech: the interaction's timeline (`turns.timeline`): transcript/ASR
    segments when it has any, else its VAD speech rows. An interaction with neither gets no
    row. Turns are `merge_turns(timeline, turn_gap_s)`; a turn onset is a turn's start.

    `clip_params` keys: duration_s, early_start_s, late_end_margin_s, snap_tolerance_s.

    Interaction end T: the shorter of the two audio durations in `signals` when either is
    known (clips are cut from the audio), else the end of the last timeline unit.

    - early: starts at the first turn onset in [early_start_s, early_start_s + tolerance];
      with no onset there (or when the snapped window would run past T) at early_start_s.
      No early row when early_start_s + duration_s > T.
    - late: the unsnapped start is u = T - late_end_margin_s - duration_s; the start is the
      last turn onset in [u - tolerance, u], else u. No late row when u < 0. For a short
      interaction the late window may overlap the early one (the filters still see both).
    - end: start + duration_s, then moved back by `snap_end` to the end of the last whole
      timeline unit when a unit would be cut (never more than the tolerance, so the clip is
      between duration_s - tolerance and duration_s long).

    n_turns counts merged turns overlapping the window (clipped to it). speech_s_a/b are
    the seconds inside the window covered by each speaker's speech: the union of the
    interaction's SPEECH (VAD) rows when it has any, else of its timeline units.
    Rows are sorted by interaction_id, then early before late.
    """
    rows = []
    ids = sorted(set(interactions["interaction_id"].astype(str)))
    by_segments, by_speech, by_signals = (_by_interaction(frame) for frame in (segments, speech, signals))
    for interaction_id in ids:
        own_speech = by_speech.get(interaction_id)
        line = timeline(interaction_id, by_segments.get(interaction_id), own_speech)
        if line.empty:
            continue
        voiced = timeline(interaction_id, None, own_speech)
        voiced = voiced if not voiced.empty else line
        total_end = _interaction_end(interaction_id, line, by_signals.get(interaction_id))
        clips = interaction_clips(_spans(line), _spans(voiced), total_end, clip_params, turn_gap_s)
        rows.extend({"interaction_id": interaction_id, **clip} for clip in clips)
    if not rows:
        return CLIP_CANDIDATES.empty()
    return CLIP_CANDIDATES.validate(pd.DataFrame(rows))
