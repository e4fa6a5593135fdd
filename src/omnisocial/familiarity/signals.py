"""Per-interaction media measurements: the SIGNALS table (and silero rows for SPEECH).

For every ingested interaction: the audio and video stream durations of both
participants, each speaker's speech time and their union, the similarity and lag between
the two audio tracks, each participant's audio-video lag, and the transcript's word
count. Speech comes from the corpus's own VAD (SPEECH rows of source `corpus_vad`) when
the interaction has any; otherwise silero-vad runs on both tracks, with cross-talk
attributed by level (see `omnisocial.media.vad.attribute_speech`), and its segments are handed
back so the caller can add them to the SPEECH table.

A missing, corrupt or unreadable file never raises: the row gets `measure_ok` False and
a reason naming the file (`video_a: cannot probe ...: moov atom not found`).

Parameters (`params`) are read from a flat dict, or from nested `vad:` / `filters:` /
`signals:` blocks of the config (flat keys win). Keys and defaults are in `DEFAULTS`:

- `threshold`, `min_speech_s`, `min_silence_s`, `restart_s`: silero settings (config `vad:`;
  `restart_s`: its runs from a fresh state, `omnisocial.media.vad.speech_probabilities`);
- `measure_av_sync`: measure the audio-video lags (config `filters:`);
- `sample_rate`: rate the audio is decoded at (16000; silero needs 16 kHz);
- `hop_s`: envelope hop; `track_lag_search_s` / `av_lag_search_s`: lag search ranges,
  which must exceed the filter thresholds they feed; `track_lag_min_peak` /
  `track_lag_min_prominence`: the weakest and least prominent inter-track correlation
  peak whose lag is reported (else the lag is None: not measurable, see
  `omnisocial.media.sync.track_lag`); `av_min_correlation`: the weakest audio-video
  correlation whose lag is reported (below it the lag is NaN); `motion_fps`,
  `motion_size`: how video motion is decoded; `crosstalk_margin_db`: by how much a
  microphone must lead the other for silero speech to be attributed by level (speech on a
  microphone the other leads is cross-talk; where neither leads, speech on both is shared,
  `shared_speech_s`; see `omnisocial.media.vad.attribute_speech`; None turns this off);
  `cancel_bleed`: subtract from each microphone its linear estimate of the other's voice
  before silero and the attribution (`omnisocial.media.vad.cancel_bleed`; only where that
  voice is coherent bleed); `bleed_path_s`: the longest path of that bleed modelled (a room's
  reflections and tail arrive over hundreds of milliseconds; None: one 32 ms frame only);
  `speech_edge_below_level_db` / `speech_edge_above_floor_db`: where an attributed stretch
  of speech starts and ends, by the microphone's own level (None keeps silero's edges);
  `noise_floor_window_s`: the running window of each microphone's noise floor (None: one
  floor for the whole track); `speech_edge_hangover_s`: how near the other microphone's voice
  an unvoiced end of a stretch must be to be trimmed (None: every unvoiced end);
  `own_speech_excess_db` / `bleed_coherence`: how a microphone's own speech under the other's
  louder voice is told from bleed, so that simultaneous speech is kept on both (None drops
  all speech the other microphone leads); `bleed_tail_s`: how long a room's bleed is taken
  to outlast the other's voice (60 dB of decay), used where a microphone shows such a tail
  (None: the bleed of the moment only);
  `backchannel_max_s` / `backchannel_pause_s`: what counts as a backchannel
  (`omnisocial.familiarity.turns.backchannels`).

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
from omnisocial.media.sync import av_lag, track_lag, video_motion, video_motions
from omnisocial.media.vad import (
    RESTART_S,
    attribute_speech,
    cancel_bleed,
    speech_and_short_segments,
)
from omnisocial.processes import fork_context
from omnisocial.tables import SPEAKERS, is_true

DEFAULTS = {
    "threshold": 0.5,
    "min_speech_s": 0.25,
    "min_silence_s": 0.1,
    "restart_s": RESTART_S,
    "measure_av_sync": True,
    "sample_rate": 16000,
    "hop_s": 0.02,
    "track_lag_search_s": 3.0,
    "track_lag_min_peak": 0.22,
    "track_lag_min_prominence": 0.05,
    "av_lag_search_s": 2.0,
    "av_min_correlation": 0.3,
    "motion_fps": 10.0,
    "motion_size": (32, 24),
    "crosstalk_margin_db": 6.0,
    "cancel_bleed": True,
    "bleed_path_s": 0.25,
    "speech_edge_below_level_db": 25.0,
    "speech_edge_above_floor_db": 6.0,
    "own_speech_excess_db": 6.0,
    "bleed_coherence": 0.5,
    "noise_floor_window_s": 3.0,
    "speech_edge_hangover_s": 0.5,
    "bleed_tail_s": 1.0,
    "backchannel_max_s": 1.0,
    "backchannel_pause_s": 1.0,
}
_NESTED = ("vad", "filters", "signals")


def measure_params(params: dict | None) -> dict:
    """`DEFAULTS` overridden by nested `vad`/`filters`/`signals` blocks, then by flat keys."""
    params = dict(params or {})
    merged = dict(DEFAULTS)
    for block in _NESTED:
        if isinstance(params.get(block), dict):
            merged.update({k: v for k, v in params[block].items() if k in DEFAULTS})
    merged.update({k: v for k, v in params.items() if k in DEFAULTS})
    return merged


def _float_or_none(value) -> float | None:
    return None if value is None else float(value)


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
    row: dict, speech: pd.DataFrame | None, segments: pd.DataFrame | None, params: dict | None
) -> tuple[dict, list[dict]]:
    """Measure one INTERACTIONS row; returns (SIGNALS row as a dict, new silero SPEECH rows).

    `speech` and `segments` may hold other interactions' rows too; only this
    interaction's are used. The SPEECH rows are empty when the corpus VAD (or earlier
    silero rows) were used, or when measurement failed.
    """
    p = measure_params(params)
    interaction_id = str(row["interaction_id"])
    out = _empty_row(interaction_id)
    if not is_true(row.get("ingest_ok")):
        out["measure_reason"] = "not ingested"
        return out, []
    sr = int(p["sample_rate"])
    hop_s = float(p["hop_s"])
    stage = ""
    try:
        audio = {}
        for speaker in SPEAKERS:
            stage = f"audio_{speaker}"
            audio[speaker] = load_audio(row.get(stage), sr)
            info = probe(row[stage])
            duration = info["audio_duration"]
            out[f"duration_audio_{speaker}"] = duration if duration is not None else audio[speaker].size / sr
            stage = f"video_{speaker}"
            info = probe(row.get(stage))
            if info["video_duration"] is None:
                raise MediaError(f"no video stream in {info['path']}")
            out[f"duration_video_{speaker}"] = info["video_duration"]

        stage = "track similarity"
        linear_env = {s: envelope(audio[s], sr, hop_s) for s in SPEAKERS}  # once: both forms below
        log_env = {s: decibels(linear_env[s]) for s in SPEAKERS}
        lag = track_lag(
            log_env["a"],
            log_env["b"],
            hop_s,
            float(p["track_lag_search_s"]),
            min_peak=float(p["track_lag_min_peak"]),
            min_prominence=float(p["track_lag_min_prominence"]),
        )
        out["track_similarity"] = _finite_or_none(lag.similarity)
        out["track_lag_s"] = _finite_or_none(lag.lag_s)
        out["track_lag_peak"] = _finite_or_none(lag.peak)
        out["track_lag_prominence"] = _finite_or_none(lag.prominence)

        stage = "speech"
        own_speech = _of(speech, interaction_id)
        new_rows: list[dict] = []
        short: dict[str, list[tuple[float, float]]] = {}
        if len(own_speech):
            sources = sorted(set(own_speech["source"].astype(str)))
            out["vad_source"] = sources[0] if len(sources) == 1 else "+".join(sources)
            intervals = {
                s: list(zip(g["start"].astype(float), g["end"].astype(float), strict=True))
                for s, g in own_speech.groupby(own_speech["speaker"].astype(str))
            }
        else:
            out["vad_source"] = "silero"
            heard = audio
            if is_true(p["cancel_bleed"]):
                heard, _shares = cancel_bleed(
                    audio,
                    sr,
                    out["track_lag_s"],
                    margin_db=float(p["crosstalk_margin_db"] or 6.0),
                    path_s=_float_or_none(p["bleed_path_s"]),
                )
            found = {
                speaker: speech_and_short_segments(
                    heard[speaker],
                    sr,
                    float(p["threshold"]),
                    float(p["min_speech_s"]),
                    float(p["min_silence_s"]),
                    restart_s=_float_or_none(p["restart_s"]),
                )
                for speaker in SPEAKERS
            }
            intervals = {speaker: found[speaker][0] for speaker in SPEAKERS}
            short = {speaker: found[speaker][1] for speaker in SPEAKERS}
            if p["crosstalk_margin_db"] is not None:
                attribution = attribute_speech(
                    intervals,
                    heard,
                    sr,
                    margin_db=float(p["crosstalk_margin_db"]),
                    hop_s=hop_s,
                    min_speech_s=float(p["min_speech_s"]),
                    min_silence_s=float(p["min_silence_s"]),
                    edge_below_level_db=_float_or_none(p["speech_edge_below_level_db"]),
                    edge_above_floor_db=float(p["speech_edge_above_floor_db"]),
                    short=short,
                    lag_s=out["track_lag_s"],
                    own_excess_db=_float_or_none(p["own_speech_excess_db"]),
                    bleed_coherence=float(p["bleed_coherence"]),
                    floor_window_s=_float_or_none(p["noise_floor_window_s"]),
                    hangover_s=_float_or_none(p["speech_edge_hangover_s"]),
                    tail_s=_float_or_none(p["bleed_tail_s"]),
                )
                intervals = attribution.segments
                short = attribution.short
                out["shared_speech_s"] = attribution.shared_s
            new_rows = [
                {
                    "interaction_id": interaction_id,
                    "speaker": speaker,
                    "start": s,
                    "end": e,
                    "source": "silero",
                }
                for speaker in SPEAKERS
                for s, e in intervals[speaker]
            ]
        for speaker in SPEAKERS:
            out[f"speech_s_{speaker}"] = union_seconds(intervals.get(speaker, []))
        out["speech_total_s"] = union_seconds([iv for ivs in intervals.values() for iv in ivs])
        a, b = intervals.get("a", []), intervals.get("b", [])
        out["overlap_s"], out["overlap_s_a"], out["overlap_s_b"] = overlap_seconds_by(a, b)
        for speaker, other in (("a", "b"), ("b", "a")):
            # short events (silero rows only) count too: a "mm" under the VAD's minimum duration
            own = [*intervals.get(speaker, []), *short.get(speaker, [])]
            found_backchannels = backchannels(
                own, intervals.get(other, []), float(p["backchannel_max_s"]), float(p["backchannel_pause_s"])
            )
            out[f"backchannels_{speaker}"] = len(found_backchannels)

        if is_true(p["measure_av_sync"]):
            fps, size = float(p["motion_fps"]), tuple(p["motion_size"])
            try:  # both cameras in one ffmpeg process; when that fails, one by one, to name the file
                paths = [row[f"video_{speaker}"] for speaker in SPEAKERS]
                motions = dict(zip(SPEAKERS, video_motions(paths, fps, size), strict=True))
            except MediaError:
                motions = {}
            for speaker in SPEAKERS:
                stage = f"video_{speaker}"
                motion = motions.get(speaker)
                if motion is None:
                    motion = video_motion(row[stage], fps=fps, size=size)
                lag = av_lag(
                    linear_env[speaker],
                    hop_s,
                    motion,
                    fps,
                    float(p["av_lag_search_s"]),
                    float(p["av_min_correlation"]),
                )
                out[f"av_lag_{speaker}_s"] = _finite_or_none(lag)

        out["transcript_words"] = _word_count(_of(segments, interaction_id))
        out["measure_ok"] = True
        return out, new_rows
    except (MediaError, OSError, ValueError) as error:
        out["measure_ok"] = False
        out["measure_reason"] = f"{stage}: {error}" if stage else str(error)
        return out, []


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
    params: dict | None,
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
        tasks.append((row, speech_by_id.get(interaction_id), segments_by_id.get(interaction_id), params))
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
