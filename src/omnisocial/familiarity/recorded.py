"""The filter stages on a real recorded conversation laid out as per-speaker tracks, against its reference.

`omnisocial.media.recorded` gives the recording and its human reference turns; this module
writes one interaction per `Condition` (two wavs and two still cameras), runs the study's
own stages on them (`signals.measure_all` with silero, `clips.clip_candidates`,
`filters.apply_filters`) and scores the result against the reference: speech seconds per
speaker, merged turns, overlap between the speakers and the inter-track lag.
`tests/test_recorded_speech.py` asserts these, `benchmarks/bench_real_sync.py` prints them.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

from omnisocial.familiarity.clips import clip_candidates
from omnisocial.familiarity.contracts import INTERACTIONS
from omnisocial.familiarity.filters import apply_filters
from omnisocial.familiarity.intervals import union_seconds
from omnisocial.familiarity.signals import measure_all
from omnisocial.familiarity.turns import merge_turns
from omnisocial.media.recorded import B_GAIN_DB, Recording, reference_turns, speaker_tracks
from omnisocial.processes import as_child
from omnisocial.settings import Filters, Signals, Vad

FPS = 10
HEARD_BELOW_FLOOR_DB = 10.0


@dataclass(frozen=True)
class Condition:
    """How the two tracks are made: bleed (dB, None: none), noise floor (dBFS), delay of b, or b = a."""

    name: str
    bleed_db: float | None = None
    noise_floor_db: float | None = None
    delay_b_s: float = 0.0
    duplicate: bool = False

    def shares_signal(self, recording: Recording) -> bool:
        """Whether a microphone hears the other speaker, so that the inter-track lag is evidence.

        With a noise floor the bleed is heard while its level (the recording's speech level
        plus `bleed_db`) is at most `HEARD_BELOW_FLOOR_DB` under the floor: a correlation over
        30 s still finds a signal a little under the noise, not one far under it.
        """
        if self.duplicate:
            return True
        if self.bleed_db is None:
            return False
        if self.noise_floor_db is None:
            return True
        return recording.speech_dbfs + self.bleed_db >= self.noise_floor_db - HEARD_BELOW_FLOOR_DB


def _still_video(path: Path, seconds: float) -> None:
    """A grey 64x48 camera at FPS frames per second: nothing moves, so its audio-video lag is n/a."""
    command = [
        "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
        f"color=c=gray:s=64x48:r={FPS}:d={seconds:.3f}", "-c:v", "libx264", "-preset", "ultrafast",
        "-threads", "1", "-pix_fmt", "yuv420p", str(path),
    ]  # fmt: skip
    command, options = as_child(command)
    subprocess.run(command, check=True, capture_output=True, **options)


def _interaction_row(index: int) -> dict:
    """The INTERACTIONS row of the `index`-th written interaction, without its media paths."""
    row = {name: "" for name in INTERACTIONS.names}
    row.update(
        interaction_id=f"V00_S{index:04d}_I00000001",
        vendor_id="V00",
        session_id=f"{index:04d}",
        prompt_hash="00000001",
        site="V00",
        relationship="familiar",
        prompt_id="P_EO_001",
        prompt_text="Where are you calling from?",
        n_participants=2,
        participant_a=f"{index:04d}1",
        participant_b=f"{index:04d}2",
        gender_mix="female-female",
        has_transcript=True,
        ingest_ok=True,
    )
    return row


def write_tracks(folder: Path, stem: str, tracks: dict[str, np.ndarray], sr: int, index: int) -> dict:
    """Write each track as `{stem}_{speaker}.wav` with a still camera beside it; returns its row."""
    folder.mkdir(parents=True, exist_ok=True)
    row = _interaction_row(index)
    for speaker, track in tracks.items():
        wav = folder / f"{stem}_{speaker}.wav"
        sf.write(wav, np.clip(track, -1.0, 1.0), sr, subtype="PCM_16")
        video = folder / f"{stem}_{speaker}.mp4"
        _still_video(video, track.size / sr)
        row[f"audio_{speaker}"], row[f"video_{speaker}"] = str(wav), str(video)
    return row


def write_interaction(folder: Path, recording: Recording, condition: Condition, index: int) -> dict:
    """Write the condition's wavs and cameras under `folder`; returns its INTERACTIONS row."""
    tracks = speaker_tracks(recording, condition.bleed_db, condition.noise_floor_db, condition.delay_b_s)
    if condition.duplicate:
        tracks["b"] = tracks["a"].copy()
    return write_tracks(folder, condition.name, tracks, recording.sr, index)


def transcript_rows(stm: list[tuple[str, float, float, str]], interaction_id: str) -> list[dict]:
    """SEGMENTS rows (source transcript) from STM utterances; speakers a, b in order of first speech."""
    own = {name: "ab"[i] for i, name in enumerate(dict.fromkeys(speaker for speaker, *_ in stm))}
    return [
        {"interaction_id": interaction_id, "speaker": own[speaker], "start": start, "end": end,
         "text": text, "source": "transcript"}
        for speaker, start, end, text in stm
    ]  # fmt: skip


def run_stages(
    interactions: pd.DataFrame, transcript: pd.DataFrame, config: dict
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(SIGNALS, SPEECH, FILTER_REPORT) of the interactions, with silero VAD and the config's blocks.

    Clip windows come from the VAD speech (the transcript feeds only the prompt audit), so
    F2 and F3 judge what silero and the cross-talk attribution found.
    """
    filters = Filters.of(config.get("filters"))
    signals, speech = measure_all(
        interactions,
        None,
        transcript,
        Vad.of(config.get("vad")),
        Signals.of(config.get("signals")),
        filters.measure_av_sync,
    )
    candidates = clip_candidates(interactions, None, speech, signals, config["clips"], filters.turn_gap_s)
    report = apply_filters(interactions, signals, candidates, transcript, filters)
    return signals, speech, report


def _intervals(speech: pd.DataFrame, interaction_id: str) -> dict[str, list[tuple[float, float]]]:
    own = speech[speech["interaction_id"] == interaction_id]
    return {
        speaker: list(zip(group["start"].astype(float), group["end"].astype(float), strict=True))
        for speaker, group in own.groupby("speaker")
    }


def overlap_seconds(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Seconds during which both speakers speak."""
    return union_seconds(a) + union_seconds(b) - union_seconds([*a, *b])


def turn_count(intervals: dict[str, list[tuple[float, float]]], gap_s: float | None) -> int:
    rows = [{"speaker": s, "start": a, "end": b} for s, ivs in intervals.items() for a, b in ivs]
    return len(merge_turns(pd.DataFrame(rows, columns=["speaker", "start", "end"]), gap_s))


def score(
    recording: Recording,
    condition: Condition,
    interaction_id: str,
    signals,
    speech,
    report,
    gap_s: float | None,
) -> dict:
    """One row of measured-vs-reference figures and the filter decisions of one interaction."""
    truth = reference_turns(recording, condition.delay_b_s)
    if condition.duplicate:
        truth = {"a": truth["a"], "b": truth["a"]}
    found = _intervals(speech, interaction_id)
    signal = signals.set_index("interaction_id").loc[interaction_id]
    decision = report.set_index("interaction_id").loc[interaction_id]
    row = {
        "condition": condition.name,
        "true_lag_s": condition.delay_b_s if condition.shares_signal(recording) else None,
    }
    for speaker in ("a", "b"):
        measured, reference = union_seconds(found.get(speaker, [])), union_seconds(truth[speaker])
        row[f"speech_{speaker}_s"] = measured
        row[f"speech_{speaker}_error"] = measured / reference - 1.0
    row["turns"] = turn_count(found, gap_s)
    row["reference_turns"] = turn_count(truth, gap_s)
    row["overlap_s"] = overlap_seconds(found.get("a", []), found.get("b", []))
    row["reference_overlap_s"] = overlap_seconds(truth["a"], truth["b"])
    row["shared_speech_s"] = signal["shared_speech_s"]
    row["similarity"] = signal["track_similarity"]
    row["lag_s"] = signal["track_lag_s"]
    row["lag_peak"] = signal["track_lag_peak"]
    row["lag_prominence"] = signal["track_lag_prominence"]
    for column in ("f1_prompt", "f2_turns", "f3_speech", "f4_tracks", "f5_amount", "audit"):
        row[f"{column}_pass"] = bool(decision[f"{column}_pass"])
    row["passed"] = bool(decision["passed"])
    row["reasons"] = str(decision["reasons"])
    return row


def read_stm(path: Path) -> list[tuple[str, float, float, str]]:
    """(speaker, start, end, text) of each line of an STM transcript."""
    rows = []
    for line in Path(path).read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) >= 5:
            rows.append((fields[2], float(fields[3]), float(fields[4]), fields[5] if len(fields) > 5 else ""))
    return rows


BLEED_LEVELS_DB = (None, -45.0, -30.0, -20.0, -10.0, -5.0)
NOISE_FLOOR_DB = -60.0
DELAY_S = 0.4


def standard_conditions() -> list[Condition]:
    """Every bleed level, without and with a noise floor, each in sync and with b delayed; and a duplicate."""
    conditions = []
    for bleed in BLEED_LEVELS_DB:
        for floor in (None, NOISE_FLOOR_DB):
            for delay in (0.0, DELAY_S):
                name = "none" if bleed is None else f"bleed{-bleed:g}dB"
                name += "" if floor is None else f"_floor{-floor:g}dB"
                name += "" if not delay else f"_delay{delay * 1000:g}ms"
                conditions.append(Condition(name, bleed, floor, delay))
    conditions.append(Condition("duplicate_bleed20dB", bleed_db=-20.0, duplicate=True))
    return conditions


def study_config(config: dict) -> dict:
    """The config's blocks fitted to the 30 s recording: F5's minimum total speech and the audit's keywords.

    The recording is 30 s long (a study wants 90 s of voiced speech) and its prompt is not an
    either-or question, so these two are set for it; every other key is the config's.
    """
    fitted = {key: dict(value) if isinstance(value, dict) else value for key, value in config.items()}
    fitted["filters"].update(min_total_speech_s=20.0, audit_keywords=["chicago"], audit_min_hits=1)
    return fitted


def evaluate(folder: Path, conditions: list[Condition], config: dict) -> pd.DataFrame:
    """Score every condition on the shipped recording (one `score` row each, in the given order)."""
    from omnisocial.familiarity.contracts import SEGMENTS
    from omnisocial.media.recorded import sample_conversation, sample_file

    recording = sample_conversation()
    stm = read_stm(sample_file("sample.stm"))
    rows = [write_interaction(folder, recording, c, i + 1) for i, c in enumerate(conditions)]
    interactions = INTERACTIONS.validate(pd.DataFrame(rows))
    transcript = SEGMENTS.validate(
        pd.DataFrame([seg for row in rows for seg in transcript_rows(stm, row["interaction_id"])])
    )
    signals, speech, report = run_stages(interactions, transcript, config)
    gap_s = config["filters"]["turn_gap_s"]
    return pd.DataFrame(
        [
            score(recording, c, row["interaction_id"], signals, speech, report, gap_s)
            for c, row in zip(conditions, rows, strict=True)
        ]
    )


@dataclass(frozen=True)
class MicLayout:
    """One separate-microphone condition (`omnisocial.media.recorded.separate_mics`)."""

    name: str
    cross_db: float | None = None
    noise_floor_db: float | None = None
    b_gain_db: float = B_GAIN_DB  # the second speaker's level against the recording's
    room_rt60_s: float | None = None  # real calls: the cross-mix through a room of this RT60


SEPARATE_LAYOUTS = (
    MicLayout("as recorded"),
    MicLayout("-60 dBFS floor", noise_floor_db=NOISE_FLOOR_DB),
    MicLayout("-20 dB cross-mix", cross_db=-20.0),
    MicLayout("-20 dB cross-mix, -60 dBFS floor", cross_db=-20.0, noise_floor_db=NOISE_FLOOR_DB),
    MicLayout("b 12 dB softer, -60 dBFS floor", noise_floor_db=NOISE_FLOOR_DB, b_gain_db=-12.0),
    MicLayout("b 18 dB softer, -60 dBFS floor", noise_floor_db=NOISE_FLOOR_DB, b_gain_db=-18.0),
)


def reference_figures(mics, min_speech_s: float, gap_s: float | None, signals: Signals) -> dict:
    """Speech seconds, overlap, merged turns and backchannels of a layout's reference.

    Speech, overlap and turns count the reference stretches longer than `min_speech_s` (what
    the speech detector keeps as SPEECH); backchannels count every stretch, short ones too, by
    `turns.backchannels` with the signals' settings: the same rules as the measured figures.
    """
    from omnisocial.familiarity.turns import backchannels, overlap_seconds_by

    long = {k: [(s, e) for s, e in v if e - s > min_speech_s] for k, v in mics.reference.items()}
    total, by_a, by_b = overlap_seconds_by(long["a"], long["b"])
    out = {"overlap_s": total, "overlap_s_a": by_a, "overlap_s_b": by_b, "turns": turn_count(long, gap_s)}
    for speaker, other in (("a", "b"), ("b", "a")):
        out[f"speech_s_{speaker}"] = union_seconds(long[speaker])
        found = backchannels(
            mics.reference[speaker],
            long[other],
            signals.backchannel_max_s,
            signals.backchannel_pause_s,
        )
        out[f"backchannels_{speaker}"] = len(found)
    return out


def evaluate_separate(folder: Path, layouts, config: dict) -> pd.DataFrame:
    """Each separate-microphone layout of the shipped call through the study's stages, against its reference.

    One row per layout (`evaluate_mics`), named by the layout.
    """
    from omnisocial.media.recorded import sample_conversation, sample_file, separate_mics

    recording = sample_conversation()
    stm = read_stm(sample_file("sample.stm"))
    cases = []
    for layout in layouts:
        mics = separate_mics(recording, layout.cross_db, layout.noise_floor_db, b_gain_db=layout.b_gain_db)
        cases.append(({"layout": layout.name}, mics, transcript_rows(stm, "")))
    return evaluate_mics(folder, cases, config)


def evaluate_mics(folder: Path, cases, config: dict) -> pd.DataFrame:
    """Each case `(labels, SeparateMics, transcript rows)` through the study's stages, against its reference.

    One row per case: its labels, then measured and reference speech seconds per speaker,
    overlap (total and per speaker, from SIGNALS), merged turns (from SPEECH, with
    `filters.turn_gap_s`) and backchannels per speaker (SIGNALS), each with its `ref_` twin.
    The transcript rows (SEGMENTS rows of speakers "a"/"b") feed the prompt audit only.
    """
    from omnisocial.familiarity.contracts import SEGMENTS

    rows, transcript = [], []
    for index, (_labels, mics, segments) in enumerate(cases, start=1):
        row = write_tracks(folder, f"mics{index}", mics.tracks, mics.sr, index)
        rows.append(row)
        transcript += [{**segment, "interaction_id": row["interaction_id"]} for segment in segments]
    interactions = INTERACTIONS.validate(pd.DataFrame(rows))
    signals, speech, _report = run_stages(interactions, SEGMENTS.validate(pd.DataFrame(transcript)), config)
    gap_s = config["filters"]["turn_gap_s"]
    min_speech_s = Vad.of(config.get("vad")).min_speech_s
    out = []
    for (labels, mics, _segments), row in zip(cases, rows, strict=True):
        interaction_id = row["interaction_id"]
        signal = signals.set_index("interaction_id").loc[interaction_id]
        found = _intervals(speech, interaction_id)
        measured = {**labels, "turns": turn_count(found, gap_s)}
        for column in ("speech_s_a", "speech_s_b", "overlap_s", "overlap_s_a", "overlap_s_b"):
            measured[column] = float(signal[column])
        for column in ("backchannels_a", "backchannels_b"):
            measured[column] = int(signal[column])
        reference = reference_figures(mics, min_speech_s, gap_s, Signals.of(config.get("signals")))
        measured.update({f"ref_{key}": value for key, value in reference.items()})
        out.append(measured)
    return pd.DataFrame(out)


CALL_LAYOUTS = (
    MicLayout("as recorded", b_gain_db=0.0),
    MicLayout("-60 dBFS floor", noise_floor_db=NOISE_FLOOR_DB, b_gain_db=0.0),
    MicLayout("-20 dB cross-mix", cross_db=-20.0, b_gain_db=0.0),
    MicLayout(
        "-20 dB cross-mix, -60 dBFS floor", cross_db=-20.0, noise_floor_db=NOISE_FLOOR_DB, b_gain_db=0.0
    ),
    MicLayout("-20 dB room bleed, RT60 0.2 s", cross_db=-20.0, b_gain_db=0.0, room_rt60_s=0.2),
    MicLayout("-20 dB room bleed, RT60 0.5 s", cross_db=-20.0, b_gain_db=0.0, room_rt60_s=0.5),
)


def evaluate_calls(folder: Path, calls_folder: Path, names, layouts, config: dict) -> pd.DataFrame:
    """Each real two-line call of `names` (`omnisocial.media.telephone`) in each layout, against the
    reference of its clean lines (`telephone.reference`, with the config's `vad` block).

    One row per call and layout (`evaluate_mics`), labelled `call` and `layout`.
    """
    from omnisocial.media import telephone
    from omnisocial.media.recorded import SeparateMics

    cases = []
    for name in names:
        call = telephone.read_call(calls_folder, name)
        truth = telephone.reference(call, Vad.of(config.get("vad")))
        segments = [
            {"interaction_id": "", "speaker": speaker, "start": start, "end": end, "text": text,
             "source": "transcript"}
            for speaker, start, end, text in telephone.utterances(call)
        ]  # fmt: skip
        for layout in layouts:
            tracks = telephone.layout_tracks(
                call, layout.cross_db, layout.noise_floor_db, room_rt60_s=layout.room_rt60_s
            )
            mics = SeparateMics(tracks, call.sr, truth, {"a": [], "b": []})
            cases.append(({"call": name, "layout": layout.name}, mics, segments))
    return evaluate_mics(folder, cases, config)
