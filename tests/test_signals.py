"""measure_interaction / measure_all on a small two-person recording built from espeak-ng speech."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, SIGNALS, SPEECH
from omnisocial.familiarity.signals import measure_all, measure_interaction, union_seconds
from omnisocial.media import crosstalk
from omnisocial.media.audio import envelope, load_audio
from omnisocial.settings import Signals, Vad

SR = 16000
FPS = 10
SECONDS = 10.0
A_AT, B_AT = 0.5, 5.6  # where each speaker's utterance starts
PARAMS = (Vad.of(), Signals.of(), True)  # the schema's vad and signals blocks, audio-video lags measured
NO_AV = (Vad.of(), Signals.of(), False)


def _espeak(path: Path, text: str, voice: str) -> np.ndarray:
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, capture_output=True)
    return load_audio(path, SR)


def _extent(audio: np.ndarray) -> tuple[float, float]:
    loud = np.flatnonzero(np.abs(audio) > 0.02 * np.abs(audio).max())
    return loud[0] / SR, (loud[-1] + 1) / SR


def _video(path: Path, own: np.ndarray) -> None:
    """A face-sized patch whose brightness follows the owner's speech envelope, frame by frame."""
    per_frame = SR // FPS
    rms = np.sqrt(np.mean(own[: own.size // per_frame * per_frame].reshape(-1, per_frame) ** 2, axis=1))
    level = np.clip(rms / np.percentile(rms[rms > 1e-4], 90), 0, 1)
    frames = np.full((level.size, 48, 64), 60, dtype=np.uint8)
    frames[:, 28:40, 24:40] = (60 + 180 * level).astype(np.uint8)[:, None, None]
    command = [
        "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "64x48",
        "-framerate", str(FPS), "-i", "pipe:0", "-c:v", "libx264", "-preset", "ultrafast", "-threads", "1",
        "-pix_fmt", "yuv420p", str(path),
    ]  # fmt: skip
    subprocess.run(command, input=frames.tobytes(), check=True, capture_output=True)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> dict:
    """Two microphones (own voice + the other at -24 dB + noise), two cameras, known timings."""
    root = tmp_path_factory.mktemp("recording")
    u_a = _espeak(root / "ua.wav", "Would you rather have tea or coffee in the morning?", "en")
    u_b = _espeak(root / "ub.wav", "Coffee, definitely coffee.", "en+f3")
    n = int(SECONDS * SR)
    own = {"a": np.zeros(n, np.float32), "b": np.zeros(n, np.float32)}
    own["a"][int(A_AT * SR) : int(A_AT * SR) + u_a.size] = u_a
    own["b"][int(B_AT * SR) : int(B_AT * SR) + u_b.size] = u_b
    rng = np.random.default_rng(0)
    leak = 10 ** (-24 / 20)
    files = {}
    for speaker, other in (("a", "b"), ("b", "a")):
        mic = own[speaker] + leak * own[other] + 0.0015 * rng.standard_normal(n).astype(np.float32)
        files[f"audio_{speaker}"] = root / f"{speaker}.wav"
        sf.write(files[f"audio_{speaker}"], mic, SR, subtype="PCM_16")
        files[f"video_{speaker}"] = root / f"{speaker}.mp4"
        _video(files[f"video_{speaker}"], own[speaker])
    on_a, off_a = _extent(u_a)
    on_b, off_b = _extent(u_b)
    truth = {"a": (A_AT + on_a, A_AT + off_a), "b": (B_AT + on_b, B_AT + off_b)}
    return {"root": root, "files": {k: str(v) for k, v in files.items()}, "truth": truth}


def row(recording, interaction_id: str = "V00_S0001_I00000001", **changes) -> dict:
    values = {name: "" for name in INTERACTIONS.names}
    values.update(interaction_id=interaction_id, n_participants=2, has_transcript=True, ingest_ok=True)
    values.update(recording["files"])
    values.update(changes)
    return values


def corpus_speech(interaction_id: str = "V00_S0001_I00000001") -> pd.DataFrame:
    rows = [("a", 0.6, 3.0), ("a", 2.5, 4.0), ("b", 5.7, 7.0)]
    return pd.DataFrame(
        [
            {"interaction_id": interaction_id, "speaker": s, "start": a, "end": b, "source": "corpus_vad"}
            for s, a, b in rows
        ]
    )


def transcript(interaction_id: str = "V00_S0001_I00000001") -> pd.DataFrame:
    texts = [
        ("a", "Would you rather have tea or coffee in the morning?"),
        ("b", "Coffee, definitely coffee."),
    ]
    return pd.DataFrame(
        [{"interaction_id": interaction_id, "speaker": s, "start": float(i), "end": i + 1.0, "text": t,
          "source": "transcript"} for i, (s, t) in enumerate(texts)]
    )  # fmt: skip


def test_union_seconds_counts_overlap_once():
    assert union_seconds([]) == 0.0
    assert union_seconds([(0, 1), (0.5, 2), (3, 4), (4, 4.5), (5, 5)]) == pytest.approx(3.5)


def test_measures_with_corpus_vad(recording):
    signals, new_rows = measure_interaction(row(recording), corpus_speech(), transcript(), *PARAMS)
    assert signals["measure_ok"], signals["measure_reason"]
    assert new_rows == []
    assert signals["vad_source"] == "corpus_vad"
    for key in ("duration_audio_a", "duration_audio_b"):
        assert signals[key] == pytest.approx(SECONDS)
    for key in ("duration_video_a", "duration_video_b"):
        assert signals[key] == pytest.approx(SECONDS, abs=0.11)
    assert signals["speech_s_a"] == pytest.approx(3.4)
    assert signals["speech_s_b"] == pytest.approx(1.3)
    assert signals["speech_total_s"] == pytest.approx(4.7)
    assert signals["track_lag_s"] == pytest.approx(0.0, abs=0.02)
    assert signals["track_similarity"] < 0.98
    assert signals["av_lag_a_s"] == pytest.approx(0.0, abs=0.1)
    assert signals["av_lag_b_s"] == pytest.approx(0.0, abs=0.1)
    assert signals["transcript_words"] == 13


def test_falls_back_to_silero_without_crosstalk(recording):
    signals, new_rows = measure_interaction(row(recording), None, None, *NO_AV)
    assert signals["measure_ok"] and signals["vad_source"] == "silero"
    assert signals["av_lag_a_s"] is None and signals["transcript_words"] is None
    frame = SPEECH.validate(pd.DataFrame(new_rows))
    assert set(frame["source"]) == {"silero"}
    for speaker in ("a", "b"):
        mine = frame[frame["speaker"] == speaker]
        onset, offset = recording["truth"][speaker]
        assert mine["start"].min() == pytest.approx(onset, abs=0.3)
        assert mine["end"].max() == pytest.approx(offset, abs=0.3)
        assert signals[f"speech_s_{speaker}"] == pytest.approx(offset - onset, abs=0.8)
    total = union_seconds(zip(frame["start"], frame["end"], strict=True))
    assert signals["speech_total_s"] == pytest.approx(total)


def _recording_calls(monkeypatch) -> dict[str, list]:
    """The calls of the cross-talk path's cancel_bleed and attribute_speech, recorded as they run."""
    calls = {"cancel_bleed": [], "attribute_speech": []}
    for name in calls:
        real = getattr(crosstalk, name)
        monkeypatch.setattr(
            crosstalk,
            name,
            lambda *a, _real=real, _name=name, **k: calls[_name].append((a, k)) or _real(*a, **k),
        )
    return calls


def test_the_signals_block_reaches_the_attribution_whole(recording, monkeypatch):
    calls = _recording_calls(monkeypatch)
    vad, signals = Vad.of(), Signals.of()
    aligned, _ = measure_interaction(row(recording), None, None, vad, signals, False)
    silero_edges = signals.replace(speech_edge_below_level_db=None)
    as_found, _ = measure_interaction(row(recording), None, None, vad, silero_edges, False)
    (args, kwargs), (args_2, _) = calls["attribute_speech"]
    assert args[3] is signals and args[4] is vad and args_2[3] is silero_edges
    assert kwargs["lag_s"] == aligned["track_lag_s"] and set(kwargs["short"]) == {"a", "b"}
    assert [a[2] for a, _ in calls["cancel_bleed"]] == [signals, silero_edges]
    assert aligned["speech_s_a"] <= as_found["speech_s_a"]  # silero's quiet padding trimmed
    assert aligned["shared_speech_s"] is not None


def test_a_null_margin_turns_attribution_and_bleed_cancelling_off(recording, monkeypatch):
    """signals.crosstalk_margin_db null: no attribution, and no bleed cancelled either (whatever
    cancel_bleed says): silero's speech on each raw track is each speaker's."""
    from omnisocial.media.vad import speech_and_short_segments

    calls = _recording_calls(monkeypatch)
    vad, off = Vad.of(), Signals.of(crosstalk_margin_db=None, cancel_bleed=True)
    measured, new_rows = measure_interaction(row(recording), None, None, vad, off, False)
    assert calls == {"cancel_bleed": [], "attribute_speech": []}
    assert measured["measure_ok"] and measured["shared_speech_s"] is None
    for speaker in ("a", "b"):
        raw = speech_and_short_segments(load_audio(recording["files"][f"audio_{speaker}"], SR), SR, vad)[0]
        assert [(r["start"], r["end"]) for r in new_rows if r["speaker"] == speaker] == raw
    with pytest.raises(ValueError, match="crosstalk_margin_db is null"):
        crosstalk.cancel_bleed({"a": np.zeros(SR), "b": np.zeros(SR)}, SR, off)


def test_overlap_and_backchannels_are_in_the_signals_row(recording):
    """The two utterances never overlap: 0 s of overlap and no backchannel, counted as such (not empty)."""
    measured, _ = measure_interaction(row(recording), None, None, *NO_AV)
    assert measured["overlap_s"] == 0.0 and measured["overlap_s_a"] == measured["overlap_s_b"] == 0.0
    assert measured["backchannels_a"] == measured["backchannels_b"] == 0
    # corpus VAD with overlap: b starts over a's end (0.5 s), a's "mm-hm" inside b's talk (0.6 s)
    speech = pd.DataFrame(
        [
            {
                "interaction_id": "V00_S0001_I00000001",
                "speaker": s,
                "start": a,
                "end": b,
                "source": "corpus_vad",
            }
            for s, a, b in (("a", 0.6, 4.0), ("b", 3.5, 7.0), ("a", 5.0, 5.6), ("a", 7.2, 9.0))
        ]
    )
    measured, _ = measure_interaction(row(recording), speech, None, *NO_AV)
    assert measured["overlap_s"] == pytest.approx(1.1)
    assert measured["overlap_s_b"] == pytest.approx(0.5) and measured["overlap_s_a"] == pytest.approx(0.6)
    assert measured["backchannels_a"] == 1 and measured["backchannels_b"] == 0  # a's 0.6 s inside b's talk


def test_duplicated_tracks_measure_as_duplicates(recording):
    files = recording["files"]
    signals, _ = measure_interaction(row(recording, audio_b=files["audio_a"]), corpus_speech(), None, *PARAMS)
    assert signals["track_similarity"] > 0.99 and signals["track_lag_s"] == 0.0


def test_bad_files_never_raise(recording, tmp_path):
    empty = tmp_path / "empty.wav"
    sf.write(empty, np.zeros(0, np.float32), SR)
    cases = {
        "video_b: file not found": row(recording, video_b=str(tmp_path / "gone.mp4")),
        "audio_a: no audio samples": row(recording, audio_a=str(empty)),
        "video_a: cannot probe": row(recording, video_a=str(empty.with_suffix(".mp4"))),
        "audio_b: no file path given": row(recording, audio_b=""),
        "not ingested": row(recording, ingest_ok=False, ingest_reason="one participant"),
    }
    (tmp_path / "empty.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(500))
    for reason, values in cases.items():
        signals, new_rows = measure_interaction(values, None, None, *PARAMS)
        assert signals["measure_ok"] is False and new_rows == []
        assert signals["measure_reason"].startswith(reason), signals["measure_reason"]


def test_both_cameras_in_one_decode_or_one_by_one_give_the_same_lags(recording, monkeypatch):
    from omnisocial.familiarity import signals as module
    from omnisocial.media.audio import MediaError

    together, _ = measure_interaction(row(recording), corpus_speech(), None, *PARAMS)
    assert together["measure_ok"] is True and np.isfinite(together["av_lag_a_s"])

    def fails(paths, fps, size):
        raise MediaError(f"cannot decode video from {paths[0]}: simulated")

    monkeypatch.setattr(module, "video_motions", fails)  # the fallback: one ffmpeg per camera
    alone, _ = measure_interaction(row(recording), corpus_speech(), None, *PARAMS)
    assert alone == together


def test_measure_all_sorts_validates_and_completes_speech(recording, tmp_path):
    ids = ["V01_S0002_I00000001", "V00_S0001_I00000001", "V00_S0003_I00000001"]
    interactions = INTERACTIONS.validate(
        pd.DataFrame(
            [
                row(recording, ids[0]),
                row(recording, ids[1]),
                row(recording, ids[2], video_a=str(tmp_path / "gone.mp4")),
            ]
        )
    )
    speech_in = SPEECH.validate(corpus_speech(ids[1]))
    segments = SEGMENTS.validate(pd.concat([transcript(ids[0]), transcript(ids[1])]))
    serial = measure_all(interactions, speech_in, segments, *PARAMS, workers=1)
    parallel = measure_all(interactions, speech_in, segments, *PARAMS, workers=2)
    for left, right in zip(serial, parallel, strict=True):
        pd.testing.assert_frame_equal(left, right)
    signals, speech = serial
    SIGNALS.validate(signals)
    assert signals["interaction_id"].tolist() == sorted(ids)
    assert signals["measure_ok"].tolist() == [True, False, True]
    assert signals.set_index("interaction_id").loc[ids[0], "vad_source"] == "silero"
    assert signals.set_index("interaction_id").loc[ids[1], "vad_source"] == "corpus_vad"
    # The SPEECH table: the corpus rows as given, plus silero rows for the one without any.
    assert speech["interaction_id"].is_monotonic_increasing
    by_source = speech.groupby("interaction_id")["source"].agg(set).to_dict()
    assert by_source == {ids[1]: {"corpus_vad"}, ids[0]: {"silero"}}
    assert (speech["source"] == "corpus_vad").sum() == len(speech_in)


def test_envelope_of_a_real_recording_has_the_right_length(recording):
    audio = load_audio(recording["files"]["audio_a"], SR)
    assert envelope(audio, SR, 0.02).size == int(SECONDS / 0.02)
