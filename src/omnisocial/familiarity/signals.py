"""Per-interaction media measurements: the SIGNALS table (and silero rows for SPEECH).

For every ingested interaction: the audio and video stream durations of both
participants, each speaker's speech time and their union, the similarity and lag between
the two audio tracks, each participant's audio-video lag, and the transcript's word
count. Speech comes from the corpus's own VAD (SPEECH rows of source `corpus_vad`) when
the interaction has any; otherwise silero-vad runs on both tracks, with cross-talk
attributed by level (`omnisocial.media.crosstalk.separate_speakers`), and its segments are handed
back so the caller can add them to the SPEECH table.

A missing, corrupt or unreadable file never raises: the row gets `measure_ok` False and
a reason naming the file (`video_a: cannot probe ...: moov atom not found`).

Settings: the config's `vad:` and `signals:` blocks whole (`omnisocial.settings.Vad`, `Signals`;
the schema says what each key and its null mean) and `filters.measure_av_sync` (whether the
audio-video lags are measured). Audio is decoded at `SAMPLE_RATE` (silero needs 16 kHz) and video
motion at `MOTION_SIZE` pixels.

Simultaneous speech: `overlap_s` is the time both speak, `overlap_s_a` / `overlap_s_b` the part
each started while the other talked (`turns.overlap_seconds_by`); `backchannels_a` / `_b` count
each speaker's backchannels, including silero's stretches under `min_speech_s` (kept as
events, never as SPEECH rows, so that turn counting ignores them).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from omnisocial.familiarity.contracts import SIGNALS, SPEECH
from omnisocial.familiarity.intervals import union_seconds
from omnisocial.familiarity.turns import backchannels, overlap_seconds_by
from omnisocial.media.audio import MediaError, decibels, envelope, load_audio, probe
from omnisocial.media.crosstalk import separate_speakers
from omnisocial.media.sync import av_lag, track_lag, video_motion, video_motions
from omnisocial.processes import fork_context
from omnisocial.settings import Signals, Vad
from omnisocial.tables import SPEAKERS, is_true

SAMPLE_RATE = 16000  # the rate the audio is decoded at: silero's
MOTION_SIZE = (32, 24)  # pixels video motion is decoded at


def _finite_or_none(value) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def _empty_row(interaction_id: str) -> dict:
    row = {name: None for name in SIGNALS.names}
    row.update(interaction_id=interaction_id, measure_ok=False, measure_reason="", vad_source="")
    return row


def _of(frame: pd.DataFrame | None, interaction_id: str) -> pd.DataFrame:
    if frame is None or len(frame) == 0:
        return pd.DataFrame()
    return frame[frame["interaction_id"].astype(str) == str(interaction_id)]


def _word_count(segments: pd.DataFrame) -> int | None:
    if len(segments) == 0:
        return None
    return int(sum(len(str(text).split()) for text in segments["text"].tolist()))


def measure_interaction(
    row: dict,
    speech: pd.DataFrame | None,
    segments: pd.DataFrame | None,
    vad: Vad,
    signals: Signals,
    measure_av_sync: bool,
) -> tuple[dict, list[dict]]:
    """Measure one INTERACTIONS row; returns (SIGNALS row as a dict, new silero SPEECH rows).

    `speech` and `segments` may hold other interactions' rows too; only this
    interaction's are used. The SPEECH rows are empty when the corpus VAD (or earlier
    silero rows) were used, or when measurement failed.
    """
    interaction_id = str(row["interaction_id"])
    out = _empty_row(interaction_id)
    if not is_true(row.get("ingest_ok")):
        out["measure_reason"] = "not ingested"
        return out, []
    stage = ["durations"]  # the part being measured, named in the reason when it fails
    try:
        audio = _durations(row, out, stage)
        stage[0] = "track similarity"
        linear_env = {s: envelope(audio[s], SAMPLE_RATE, signals.hop_s) for s in SPEAKERS}
        _track_lag(linear_env, signals, out)
        stage[0] = "speech"
        intervals, short, new_rows = _speech(_of(speech, interaction_id), audio, vad, signals, out)
        _turn_taking(intervals, short, signals, out)
        if measure_av_sync:
            _av_lags(row, linear_env, signals, out, stage)
        out["transcript_words"] = _word_count(_of(segments, interaction_id))
        out["measure_ok"] = True
        return out, new_rows
    except (MediaError, OSError, ValueError) as error:
        out["measure_ok"] = False
        out["measure_reason"] = f"{stage[0]}: {error}" if stage[0] else str(error)
        return out, []


def _durations(row: dict, out: dict, stage: list[str]) -> dict[str, np.ndarray]:
    """Each participant's audio (decoded) and the audio and video stream durations (into `out`)."""
    audio = {}
    for speaker in SPEAKERS:
        stage[0] = f"audio_{speaker}"
        audio[speaker] = load_audio(row.get(stage[0]), SAMPLE_RATE)
        duration = probe(row[stage[0]])["audio_duration"]
        out[f"duration_audio_{speaker}"] = (
            duration if duration is not None else audio[speaker].size / SAMPLE_RATE
        )
        stage[0] = f"video_{speaker}"
        info = probe(row.get(stage[0]))
        if info["video_duration"] is None:
            raise MediaError(f"no video stream in {info['path']}")
        out[f"duration_video_{speaker}"] = info["video_duration"]
    return audio


def _track_lag(linear_env: dict[str, np.ndarray], signals: Signals, out: dict) -> None:
    """The similarity and lag of the two tracks' log envelopes (`media.sync.track_lag`), into `out`."""
    log_env = {s: decibels(linear_env[s]) for s in SPEAKERS}
    lag = track_lag(
        log_env["a"],
        log_env["b"],
        signals.hop_s,
        signals.track_lag_search_s,
        min_peak=signals.track_lag_min_peak,
        min_prominence=signals.track_lag_min_prominence,
    )
    out["track_similarity"] = _finite_or_none(lag.similarity)
    out["track_lag_s"] = _finite_or_none(lag.lag_s)
    out["track_lag_peak"] = _finite_or_none(lag.peak)
    out["track_lag_prominence"] = _finite_or_none(lag.prominence)


def _speech(own_speech: pd.DataFrame, audio: dict, vad: Vad, signals: Signals, out: dict):
    """(speech intervals, short events, new SPEECH rows) per speaker: the interaction's SPEECH rows
    when it has any, else silero's (`crosstalk.separate_speakers`); sets vad_source, shared_speech_s."""
    if len(own_speech):
        sources = sorted(set(own_speech["source"].astype(str)))
        out["vad_source"] = sources[0] if len(sources) == 1 else "+".join(sources)
        intervals = {
            s: list(zip(g["start"].astype(float), g["end"].astype(float), strict=True))
            for s, g in own_speech.groupby(own_speech["speaker"].astype(str))
        }
        return intervals, {}, []
    out["vad_source"] = "silero"
    intervals, short, out["shared_speech_s"] = separate_speakers(
        audio, SAMPLE_RATE, out["track_lag_s"], signals, vad
    )
    new_rows = [
        {
            "interaction_id": out["interaction_id"],
            "speaker": speaker,
            "start": s,
            "end": e,
            "source": "silero",
        }
        for speaker in SPEAKERS
        for s, e in intervals[speaker]
    ]
    return intervals, short, new_rows


def _turn_taking(intervals: dict, short: dict, signals: Signals, out: dict) -> None:
    """Speech seconds, overlap and backchannels per speaker, into `out`."""
    for speaker in SPEAKERS:
        out[f"speech_s_{speaker}"] = union_seconds(intervals.get(speaker, []))
    out["speech_total_s"] = union_seconds([iv for ivs in intervals.values() for iv in ivs])
    a, b = intervals.get("a", []), intervals.get("b", [])
    out["overlap_s"], out["overlap_s_a"], out["overlap_s_b"] = overlap_seconds_by(a, b)
    for speaker, other in (("a", "b"), ("b", "a")):
        # short events (silero rows only) count too: a "mm" under the VAD's minimum duration
        own = [*intervals.get(speaker, []), *short.get(speaker, [])]
        found = backchannels(
            own, intervals.get(other, []), signals.backchannel_max_s, signals.backchannel_pause_s
        )
        out[f"backchannels_{speaker}"] = len(found)


def _av_lags(row: dict, linear_env: dict, signals: Signals, out: dict, stage: list[str]) -> None:
    """Each participant's audio-video lag (`media.sync.av_lag`), into `out`."""
    fps = signals.motion_fps
    try:  # both cameras in one ffmpeg process; when that fails, one by one, to name the file
        paths = [row[f"video_{speaker}"] for speaker in SPEAKERS]
        motions = dict(zip(SPEAKERS, video_motions(paths, fps, MOTION_SIZE), strict=True))
    except MediaError:
        motions = {}
    for speaker in SPEAKERS:
        stage[0] = f"video_{speaker}"
        motion = motions.get(speaker)
        if motion is None:
            motion = video_motion(row[stage[0]], fps=fps, size=MOTION_SIZE)
        lag = av_lag(
            linear_env[speaker],
            signals.hop_s,
            motion,
            fps,
            signals.av_lag_search_s,
            signals.av_min_correlation,
        )
        out[f"av_lag_{speaker}_s"] = _finite_or_none(lag)


def _measure_task(task: tuple) -> tuple[dict, list[dict]]:
    return measure_interaction(*task)


def _fresh_worker() -> None:
    # A forked worker must not reuse an onnxruntime session created in the parent.
    from omnisocial.media import vad

    vad._session.cache_clear()


def measure_all(
    interactions: pd.DataFrame,
    speech: pd.DataFrame | None,
    segments: pd.DataFrame | None,
    vad: Vad,
    signals: Signals,
    measure_av_sync: bool,
    workers: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measure every interaction; returns (SIGNALS frame, complete SPEECH frame).

    Interactions with `ingest_ok` False get `measure_ok` False and the reason
    'not ingested'. The SPEECH frame is every row of `speech` plus the silero rows added
    for interactions without any, sorted by interaction_id, speaker and start; write it
    as the SPEECH table. `workers` > 1 measures in a pool of (forked) processes (each runs
    silero on one thread). Both frames are validated; SIGNALS is sorted by interaction_id.
    """
    speech_in = SPEECH.validate(speech, "speech") if speech is not None and len(speech) else SPEECH.empty()
    segments_in = segments if segments is not None and len(segments) else None
    speech_by_id = {str(k): g for k, g in speech_in.groupby("interaction_id")} if len(speech_in) else {}
    segments_by_id = (
        {str(k): g for k, g in segments_in.groupby("interaction_id")} if segments_in is not None else {}
    )
    tasks = []
    for row in interactions.to_dict("records"):
        interaction_id = str(row["interaction_id"])
        tasks.append(
            (
                row,
                speech_by_id.get(interaction_id),
                segments_by_id.get(interaction_id),
                vad,
                signals,
                measure_av_sync,
            )
        )
    if workers > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(
            max_workers=min(workers, len(tasks)), mp_context=fork_context(), initializer=_fresh_worker
        ) as pool:
            results = list(pool.map(_measure_task, tasks))
    else:
        results = [_measure_task(task) for task in tasks]

    rows = [signals_row for signals_row, _ in results]
    signals = pd.DataFrame(rows, columns=SIGNALS.names) if rows else SIGNALS.empty()
    signals = SIGNALS.validate(signals, "signals")
    signals = signals.sort_values("interaction_id", kind="stable").reset_index(drop=True)

    added = [speech_row for _, speech_rows in results for speech_row in speech_rows]
    combined = speech_in
    if added:
        new_speech = pd.DataFrame(added, columns=SPEECH.names)
        parts = [new_speech] if len(speech_in) == 0 else [speech_in, new_speech]
        combined = SPEECH.validate(pd.concat(parts, ignore_index=True), "speech")
    combined = combined.sort_values(["interaction_id", "speaker", "start", "end"], kind="stable")
    return signals, combined.reset_index(drop=True)
