"""Quality filters F1-F5 and the prompt audit: the FILTER_REPORT table.

One row per interaction, one pass/fail column and one value column per filter, and the
reason text of every failure (`'; '`-joined, each naming the measured value and its
threshold, e.g. "F5 amount: 52.3 s voiced < 90 s"). Thresholds come from the `filters:`
config block, passed in whole as `omnisocial.settings.Filters`.

- ingest: the interaction was read (`ingest_ok`), with the ingest reason otherwise.
- F1 prompt: the prompt text is not a placeholder (case-insensitive, stripped, against
  `placeholder_prompts`) and `prompt_id` carries `either_or_marker` as an underscore-delimited
  token (`marker_tokens`): the marker `_EO_` (or `EO`) matches `P_EO_001`, a leading
  `EO_001` and a trailing `NAT_EO`, but not `GEO_1` or `P_EOX_1`; case-sensitive.
- F2 turns: the fewest merged turns over the clip candidates (early/late) >= `min_turns`;
  no candidate at all fails ("no clip window"). A turn lasts until the other person speaks
  (consecutive segments of one speaker are one turn whatever the pause) unless
  `turn_gap_s` is set (`clips.clip_candidates` counts them).
- F3 speech: the least speech of either speaker over the clip candidates >=
  `min_speech_per_speaker_s`.
- F4 tracks: fails when the tracks are duplicates (`track_similarity` >=
  `duplicate_similarity`), desynced (|`track_lag_s`| > `max_track_lag_s`), dominated by
  cross-talk (more than `max_shared_speech_share` of the voiced speech, `shared_speech_s` /
  `speech_total_s`, is on both microphones at a similar level; not checked for duplicates,
  whose reason already says it, nor for corpus VAD), a participant's audio-video lag
  exceeds `max_av_lag_s` (only when `measure_av_sync`; a lag that could not be measured is
  shown as n/a and fails nothing), or a participant's audio and video durations differ by
  more than `max_duration_mismatch_s` (truncated). An inter-track lag that could not be
  measured (the tracks share no signal: `omnisocial.media.sync.track_lag`) is shown as
  "lag=not measurable", recorded in `f4_lag_measured` and fails F4 only when
  `fail_unmeasurable_track_lag`; any other value that could not be measured fails.
- F5 amount: voiced speech of the whole interaction (`speech_total_s`) >= `min_total_speech_s`.
- prompt audit: occurrences of `audit_keywords` in the transcript (SEGMENTS text, lower
  case, punctuation turned into spaces, each keyword counted on its own and overlapping
  matches included; pad a keyword with spaces, as " or ", to match a whole word) >=
  `audit_min_hits`. An interaction without transcript text cannot be audited: with
  `audit_min_hits` 0 it passes with the value "not audited (no transcript)" (the funnel
  counts these), otherwise it fails ("no transcript text to audit").

Edges: a value exactly at a threshold passes, except `duplicate_similarity`, which the
spec states as "similarity >= threshold means duplicated". Values within 1e-9 of a
threshold count as at it (CSV round trips).

Dependencies: F1 and the audit need the interaction ingested; F4 and F5 need it measured
(a SIGNALS row with `measure_ok`); F2 and F3 need clip candidates, and when there are
none because measurement failed they say so. A filter whose input is missing fails with
"not evaluated: <cause>", and the root cause appears once in the reasons as "ingest: ..."
or "measure: ...".
"""

from __future__ import annotations

import math
import re

import pandas as pd

from omnisocial.familiarity.contracts import FILTER_REPORT
from omnisocial.settings import Filters
from omnisocial.summary import NOT_AUDITED
from omnisocial.tables import is_true

EPS = 1e-9
# every filter an interaction must pass, in the report's order (`<name>_pass` columns)
FILTER_NAMES = ("ingest", "f1_prompt", "f2_turns", "f3_speech", "f4_tracks", "f5_amount", "audit")


def _number(value) -> float | None:
    if value is None or value is pd.NA or value == "":
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _fmt(value: float) -> str:
    return f"{value:g}"


def _rows_by_id(frame: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    if frame is None or len(frame) == 0:
        return {}
    return {str(key): group for key, group in frame.groupby(frame["interaction_id"].astype(str))}


def normalize_text(text: str) -> str:
    """Lower case, every run of characters other than letters, digits and ' turned into one space."""
    return re.sub(r"[^\w']+", " ", str(text).lower())


def keyword_hits(text: str, keywords) -> dict[str, int]:
    """Occurrences (overlapping included) of each keyword in `normalize_text(text)` padded with spaces."""
    haystack = " " + normalize_text(text).strip() + " "
    hits = {}
    for keyword in keywords:
        needle = normalize_text(keyword)
        if not needle.strip():
            continue
        hits[str(keyword)] = len(re.findall(f"(?={re.escape(needle)})", haystack))
    return hits


def marker_tokens(marker: str) -> tuple[str, ...]:
    """The underscore-delimited tokens of a marker: `_EO_`, `EO_` and `EO` all give ('EO',)."""
    return tuple(token for token in str(marker).split("_") if token)


def has_marker(prompt_id: str, marker: str) -> bool:
    """True when the tokens of `marker` occur as consecutive `_`-delimited tokens of `prompt_id`."""
    needle = marker_tokens(marker)
    tokens = str(prompt_id).split("_")
    if not needle:
        return False
    return any(tuple(tokens[i : i + len(needle)]) == needle for i in range(len(tokens) - len(needle) + 1))


def _f1(row: dict, filters: Filters) -> tuple[bool, str, list[str]]:
    prompt_id = str(row.get("prompt_id") or "")
    text = str(row.get("prompt_text") or "")
    placeholders = {str(p).strip().lower() for p in filters.placeholder_prompts}
    marker = str(filters.either_or_marker)
    is_placeholder = text.strip().lower() in placeholders
    is_either_or = has_marker(prompt_id, marker)
    value = f"{prompt_id or '<no id>'}: {'either-or' if is_either_or else 'not either-or'}"
    reasons = []
    if is_placeholder:
        value += ", placeholder text"
        reasons.append(f"F1 prompt: placeholder prompt text {text.strip()!r}")
    if not is_either_or:
        reasons.append(f"F1 prompt: prompt_id {prompt_id!r} lacks the either-or marker {marker!r}")
    return not reasons, value, reasons


def _f2(candidates: pd.DataFrame, filters: Filters) -> tuple[bool, int, list[str]]:
    turns = {str(r["position"]): int(r["n_turns"]) for r in candidates.to_dict("records")}
    position = min(turns, key=lambda k: (turns[k], k))
    fewest, minimum = turns[position], int(filters.min_turns)
    if fewest >= minimum:
        return True, fewest, []
    return False, fewest, [f"F2 turns: {fewest} merged turns < {minimum} in the {position} clip"]


def _f3(candidates: pd.DataFrame, filters: Filters) -> tuple[bool, float, list[str]]:
    least = None
    for record in candidates.to_dict("records"):
        for speaker in ("a", "b"):
            seconds = _number(record[f"speech_s_{speaker}"]) or 0.0
            if least is None or seconds < least[0]:
                least = (seconds, speaker, str(record["position"]))
    seconds, speaker, position = least
    threshold = float(filters.min_speech_per_speaker_s)
    if seconds >= threshold - EPS:
        return True, seconds, []
    reason = (
        f"F3 speech: speaker {speaker} speaks {seconds:.1f} s in the {position} clip < {_fmt(threshold)} s"
    )
    return False, seconds, [reason]


def _f4_tracks(signal: dict, filters: Filters) -> tuple[str, list[str], bool | None]:
    """The inter-track part of F4: (value text, failure reasons, whether the lag was measured)."""
    similarity = _number(signal.get("track_similarity"))
    lag = _number(signal.get("track_lag_s"))
    if similarity is None:
        return (
            "similarity=n/a",
            ["F4 tracks: track similarity not measurable (a silent or constant track)"],
            None,
        )
    reasons = []
    duplicate = float(filters.duplicate_similarity)
    max_lag = float(filters.max_track_lag_s)
    value = f"similarity={similarity:.3f} lag={'not measurable' if lag is None else f'{lag:+.2f}s'}"
    if similarity >= duplicate - EPS:
        reasons.append(f"F4 tracks: duplicated tracks (similarity {similarity:.3f} >= {_fmt(duplicate)})")
    if lag is None:
        # Tracks that share no signal (each mic hears only its owner) have no lag to measure:
        # no evidence of desync, unless the study asks for a measured lag.
        peak = _number(signal.get("track_lag_peak"))
        if peak is not None:
            value += (
                f" (peak {peak:.2f}, prominence {_number(signal.get('track_lag_prominence')) or 0.0:.2f})"
            )
        if is_true(filters.fail_unmeasurable_track_lag):
            reasons.append("F4 tracks: lag between tracks not measurable (the tracks share no signal)")
    elif abs(lag) > max_lag + EPS:
        reasons.append(f"F4 tracks: desynced tracks (b lags a by {lag:+.2f} s, |lag| > {_fmt(max_lag)} s)")
    shared = _number(signal.get("shared_speech_s"))
    total = _number(signal.get("speech_total_s"))
    if shared is not None and total:
        share = shared / total
        limit = float(filters.max_shared_speech_share)
        value += f" shared={share:.0%}"
        # two copies of one track share all their speech; the duplicate reason already says why
        if share > limit + EPS and similarity < duplicate - EPS:
            reasons.append(
                f"F4 tracks: cross-talk dominated ({share:.0%} of the speech is on both microphones at a "
                f"similar level > {limit:.0%}: speech per speaker cannot be attributed)"
            )
    return value, reasons, lag is not None


def _f4(signal: dict, filters: Filters) -> tuple[bool, str, list[str], bool | None]:
    value, reasons, lag_measured = _f4_tracks(signal, filters)
    parts = [value]
    if is_true(filters.measure_av_sync):
        max_av = float(filters.max_av_lag_s)
        for speaker in ("a", "b"):
            av = _number(signal.get(f"av_lag_{speaker}_s"))
            parts.append(f"av_{speaker}={'n/a' if av is None else f'{av:+.2f}s'}")
            # Not measurable (nobody speaking on camera, or a picture too weakly tied to the
            # voice to align) is recorded in the value but is no evidence of desync.
            if av is not None and abs(av) > max_av + EPS:
                reasons.append(
                    f"F4 tracks: audio-video lag of {speaker} {av:+.2f} s, |lag| > {_fmt(max_av)} s"
                )
    max_mismatch = float(filters.max_duration_mismatch_s)
    for speaker in ("a", "b"):
        audio = _number(signal.get(f"duration_audio_{speaker}"))
        video = _number(signal.get(f"duration_video_{speaker}"))
        if audio is None or video is None:
            parts.append(f"dur_diff_{speaker}=n/a")
            reasons.append(f"F4 tracks: audio or video duration of {speaker} unknown")
            continue
        mismatch = abs(audio - video)
        parts.append(f"dur_diff_{speaker}={mismatch:.2f}s")
        if mismatch > max_mismatch + EPS:
            shorter = "video" if video < audio else "audio"
            reasons.append(
                f"F4 tracks: truncated {shorter} of {speaker} (audio {audio:.2f} s vs video {video:.2f} s, "
                f"mismatch {mismatch:.2f} s > {_fmt(max_mismatch)} s)"
            )
    return not reasons, " ".join(parts), reasons, lag_measured


def _audit(transcript: pd.DataFrame | None, filters: Filters) -> tuple[bool, str, list[str]]:
    keywords = list(filters.audit_keywords)
    minimum = int(filters.audit_min_hits)
    if transcript is None or len(transcript) == 0:
        # Nothing to audit: with a threshold of 0 the study asks for no evidence, so the
        # interaction passes as "not audited" (counted in the funnel); otherwise it fails.
        if minimum <= 0:
            return True, NOT_AUDITED, []
        return False, "no transcript", ["prompt audit: no transcript text to audit"]
    ordered = transcript.sort_values("start", kind="stable") if "start" in transcript else transcript
    hits = keyword_hits(" ".join(str(t) for t in ordered["text"].tolist()), keywords)
    total = sum(hits.values())
    value = f"{total} hits (" + ", ".join(f"{k!r}: {n}" for k, n in hits.items()) + ")"
    if total >= minimum:
        return True, value, []
    return False, value, [f"prompt audit: {total} prompt keyword hits < {minimum} in the transcript"]


def apply_filters(
    interactions: pd.DataFrame,
    signals: pd.DataFrame | None,
    clip_candidates: pd.DataFrame | None,
    segments: pd.DataFrame | None,
    filters: Filters,
) -> pd.DataFrame:
    """The FILTER_REPORT frame: one validated row per interaction, sorted by interaction_id.

    `interactions`: INTERACTIONS; `signals`: SIGNALS; `clip_candidates`: CLIP_CANDIDATES;
    `segments`: SEGMENTS (transcript text for the prompt audit); `filters`: the `filters:`
    config block. `signals`, `clip_candidates` and `segments` may be None or empty.
    """
    signals_by_id = _rows_by_id(signals)
    candidates_by_id = _rows_by_id(clip_candidates)
    segments_by_id = _rows_by_id(segments)
    records = []
    for row in interactions.to_dict("records"):
        interaction_id = str(row["interaction_id"])
        signal_rows = signals_by_id.get(interaction_id)
        signal = signal_rows.iloc[0].to_dict() if signal_rows is not None and len(signal_rows) else None
        inputs = (signal, candidates_by_id.get(interaction_id), segments_by_id.get(interaction_id))
        records.append(_filter_record(row, *inputs, filters))

    if not records:
        return FILTER_REPORT.empty()
    frame = pd.DataFrame(records, columns=FILTER_REPORT.names)
    report = FILTER_REPORT.validate(frame, "filter_report")
    return report.sort_values("interaction_id", kind="stable").reset_index(drop=True)


def _filter_record(row: dict, signal: dict | None, candidates, transcript, filters: Filters) -> dict:
    """The FILTER_REPORT row of one interaction (`row`: INTERACTIONS) from its signals row,
    its clip candidates and its transcript (each None when absent)."""
    interaction_id = str(row["interaction_id"])
    record = {
        "interaction_id": interaction_id,
        "site": row.get("site", ""),
        "relationship": row.get("relationship", ""),
        "gender_mix": row.get("gender_mix", ""),
        "f1_prompt_value": "",
        "f2_turns_value": None,
        "f3_speech_value": None,
        "f4_tracks_value": "",
        "f4_lag_measured": None,
        "f5_amount_value": None,
        "audit_value": "",
    }
    ingested = is_true(row.get("ingest_ok"))
    record["ingest_pass"] = ingested
    if not ingested:
        return _not_ingested(record, row)
    reasons: list[str] = []
    measured = signal is not None and is_true(signal.get("measure_ok"))
    if not measured:
        cause = (
            "no signals row"
            if signal is None
            else (str(signal.get("measure_reason") or "").strip() or "failed")
        )
        reasons.append(f"measure: {cause}")

    ok, record["f1_prompt_value"], found = _f1(row, filters)
    record["f1_prompt_pass"] = ok
    reasons += found
    reasons += _window_filters(record, candidates, measured, filters)
    if measured:
        ok, record["f4_tracks_value"], found, record["f4_lag_measured"] = _f4(signal, filters)
        record["f4_tracks_pass"] = ok
        reasons += found
        record["f5_amount_pass"], record["f5_amount_value"], found = _f5(signal, filters)
        reasons += found
    else:
        record["f4_tracks_pass"] = record["f5_amount_pass"] = False
        reasons += ["F4 tracks: not evaluated: not measured", "F5 amount: not evaluated: not measured"]
    ok, record["audit_value"], found = _audit(transcript, filters)
    record["audit_pass"] = ok
    reasons += found

    record["passed"] = all(record[f"{name}_pass"] for name in FILTER_NAMES)
    record["reasons"] = "; ".join(reasons)
    return record


def _not_ingested(record: dict, row: dict) -> dict:
    """An interaction that was not ingested: every filter fails, each saying it was not evaluated."""
    reasons = [f"ingest: {str(row.get('ingest_reason') or '').strip() or 'failed'}"]
    for name, label in (
        ("f1_prompt", "F1 prompt"),
        ("f2_turns", "F2 turns"),
        ("f3_speech", "F3 speech"),
        ("f4_tracks", "F4 tracks"),
        ("f5_amount", "F5 amount"),
        ("audit", "prompt audit"),
    ):
        record[f"{name}_pass"] = False
        reasons.append(f"{label}: not evaluated: not ingested")
    record["passed"] = False
    record["reasons"] = "; ".join(reasons)
    return record


def _window_filters(record: dict, candidates, measured: bool, filters: Filters) -> list[str]:
    """F2 and F3 on the interaction's clip window into `record`; their failure reasons."""
    if candidates is not None and len(candidates):
        f2_ok, record["f2_turns_value"], f2_reasons = _f2(candidates, filters)
        f3_ok, record["f3_speech_value"], f3_reasons = _f3(candidates, filters)
    elif measured:
        f2_ok = f3_ok = False
        f2_reasons = ["F2 turns: no clip window (no clip candidate for this interaction)"]
        f3_reasons = ["F3 speech: no clip window (no clip candidate for this interaction)"]
    else:
        f2_ok = f3_ok = False
        f2_reasons = ["F2 turns: not evaluated: not measured"]
        f3_reasons = ["F3 speech: not evaluated: not measured"]
    record["f2_turns_pass"], record["f3_speech_pass"] = f2_ok, f3_ok
    return f2_reasons + f3_reasons


def _f5(signal: dict, filters: Filters) -> tuple[bool, float | None, list[str]]:
    """F5 amount: (pass, the voiced speech in seconds, failure reasons)."""
    total = _number(signal.get("speech_total_s"))
    minimum = float(filters.min_total_speech_s)
    if total is None:
        return False, total, ["F5 amount: voiced speech not measurable"]
    if total >= minimum - EPS:
        return True, total, []
    return False, total, [f"F5 amount: {total:.1f} s voiced < {_fmt(minimum)} s"]
