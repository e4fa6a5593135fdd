"""Real voices on separate microphones: simultaneous speech, quiet speech and short backchannels.

The voices are the two speakers of the real call pyannote.audio ships, each on its own
microphone (`omnisocial.media.recorded.separate_mics`: the second speaker 6 dB softer and
0.6 s earlier, so that her turns start over the first speaker's ends; three short utterances
cut from the call laid inside the other's turns). Silero and the cross-talk attribution run
on the tracks directly (no files, no ffmpeg); `benchmarks/bench_separate_mics.py` runs the
whole stage on the same layouts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from omnisocial.config import load_config
from omnisocial.familiarity import recorded
from omnisocial.familiarity.intervals import union_seconds
from omnisocial.familiarity.turns import backchannels, overlap_seconds_by
from omnisocial.media import telephone
from omnisocial.media.crosstalk import attribute_speech, cancel_bleed, coherent_fraction
from omnisocial.media.recorded import BACKCHANNELS, sample_conversation, separate_mics
from omnisocial.media.vad import speech_and_short_segments
from omnisocial.settings import Signals, Vad

MIN_SPEECH_S = 0.25
BACKCHANNEL = (Signals.of().backchannel_max_s, Signals.of().backchannel_pause_s)  # the schema's
ROOT = Path(__file__).resolve().parents[1]


def _long(intervals):
    return [(s, e) for s, e in intervals if e - s > MIN_SPEECH_S]


@pytest.fixture(scope="module")
def recording():
    return sample_conversation()


def _attributed(mics, **options):
    """The built microphones through silero and the attribution (no bleed cancellation)."""
    return _heard(mics.tracks, mics.sr, cancel=False, **options)


@pytest.mark.parametrize("cross_db", [None, -20.0])
def test_simultaneous_speech_is_kept_on_both_microphones(recording, cross_db):
    mics = separate_mics(recording, cross_db=cross_db)
    reference = {k: _long(v) for k, v in mics.reference.items()}
    truth = overlap_seconds_by(reference["a"], reference["b"])[0]
    assert truth > 1.5  # each of b's turns starts over a's end
    kept = _attributed(mics)
    overlap = overlap_seconds_by(kept.segments["a"], kept.segments["b"])[0]
    assert overlap == pytest.approx(truth, rel=0.15)
    for speaker in ("a", "b"):
        assert union_seconds(kept.segments[speaker]) == pytest.approx(
            union_seconds(reference[speaker]), rel=0.03
        )
    assert kept.overlap_own_s["b"] > 0.3  # the softer speaker's own speech under the louder one
    # the former rule (all speech under the louder microphone is cross-talk) loses a third of it
    former = _attributed(mics, own_speech_excess_db=None)
    assert overlap_seconds_by(former.segments["a"], former.segments["b"])[0] < 0.7 * truth


def test_bleed_stays_bleed(recording):
    """Where only one person talks, the other microphone's copy of the voice is never kept."""
    mics = separate_mics(recording, cross_db=-10.0)
    kept = _attributed(mics)
    # a talks alone over 11.03-13.5 s (b's voice is silent there): b keeps nothing of it
    assert not any(s < 13.5 and e > 11.2 for s, e in kept.segments["b"])
    sr = mics.sr
    for start, end in ((11.2, 12.4), (12.8, 14.0)):  # around b's "Hel-" laid at 12.5 s
        piece = slice(int(start * sr), int(end * sr))
        assert coherent_fraction(mics.tracks["b"][piece], mics.tracks["a"][piece]) > 0.99
    # where b speaks over a (and hears a at -20 dB), b's microphone holds mostly her own voice
    quieter = separate_mics(recording, cross_db=-20.0)
    overlap = slice(int(14.1 * sr), int(14.45 * sr))
    assert coherent_fraction(quieter.tracks["b"][overlap], quieter.tracks["a"][overlap]) < 0.2


def test_short_backchannels_are_kept_as_events(recording):
    mics = separate_mics(recording, cross_db=-20.0)
    kept = _attributed(mics)
    for owner, cut_start, cut_end, at in BACKCHANNELS:
        duration = cut_end - cut_start
        if duration >= MIN_SPEECH_S:
            continue
        # under silero's minimum duration: no speech segment, but a short event where it was laid
        assert not any(s < at + duration and e > at for s, e in kept.segments[owner])
        assert any(s < at + duration and e > at for s, e in kept.short[owner]), (owner, at, kept.short)
    other = {"a": "b", "b": "a"}
    counted = {
        k: backchannels([*kept.segments[k], *kept.short[k]], kept.segments[other[k]], *BACKCHANNEL)
        for k in ("a", "b")
    }
    expected = {
        k: backchannels(mics.reference[k], _long(mics.reference[other[k]]), *BACKCHANNEL) for k in ("a", "b")
    }
    assert (
        {k: len(v) for k, v in counted.items()}
        == {k: len(v) for k, v in expected.items()}
        == {"a": 1, "b": 2}
    )


def test_a_local_noise_floor_keeps_quiet_speech(recording):
    """Speech at -52 dBFS in a quiet stretch (-75 dBFS) of a track mostly under -45 dBFS of noise."""
    sr = recording.sr
    mics = separate_mics(recording)
    voice = mics.tracks["a"].astype(np.float64) * 10 ** (-20 / 20)
    track = np.concatenate((voice, np.zeros(60 * sr)))  # a long noisy rest: the quiet part is < 5%
    level = np.full(track.size, 10 ** (-45 / 20))
    level[int(10.8 * sr) : int(14.7 * sr)] = 10 ** (-75 / 20)
    track = (track + level * np.random.default_rng(1).standard_normal(track.size)).astype(np.float32)
    audio = {"a": track, "b": np.zeros_like(track)}
    segments = {"a": speech_and_short_segments(track, sr, Vad.of(restart_s=None))[0], "b": []}
    turn = next((s, e) for s, e in mics.reference["a"] if 10.8 < s < 14.7)  # 11.03-14.49 s

    def inside(found):
        return union_seconds(
            [(max(s, turn[0]), min(e, turn[1])) for s, e in found if e > turn[0] and s < turn[1]]
        )

    one_run = Vad.of(restart_s=None)
    local = attribute_speech(segments, audio, sr, Signals.of(noise_floor_window_s=3.0), one_run)
    whole = attribute_speech(segments, audio, sr, Signals.of(noise_floor_window_s=None), one_run)
    assert inside(whole.segments["a"]) == 0.0  # one floor for the track: the quiet turn is under it
    assert inside(local.segments["a"]) >= 0.75 * (turn[1] - turn[0])


def test_overlap_is_credited_to_the_one_who_joined():
    a = [(0.0, 5.0), (10.0, 12.0)]
    b = [(4.0, 8.0), (11.0, 11.5), (12.0, 13.0)]
    total, by_a, by_b = overlap_seconds_by(a, b)
    assert (total, by_a, by_b) == pytest.approx((1.5, 0.0, 1.5))
    assert backchannels(b, a, *BACKCHANNEL) == [
        (11.0, 11.5)
    ]  # inside a's talk, short; (4, 8) takes the floor
    assert backchannels([(5.5, 5.8)], [(0.0, 5.0), (5.9, 9.0)], *BACKCHANNEL) == [(5.5, 5.8)]  # in a's pause
    assert backchannels([(5.5, 5.8)], [(0.0, 5.0), (5.9, 9.0)], 1.0, 0.5) == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")
@pytest.mark.heavy  # the signals job on generated calls (about 3 CPU-s)
def test_the_signals_table_reports_overlap_and_backchannels_on_separate_mics(tmp_path):
    """The whole stage (files, silero, attribution, SIGNALS), as benchmarks/bench_separate_mics.py runs it."""
    config = recorded.study_config(load_config(ROOT / "config" / "demo.yaml"))
    layout = recorded.MicLayout("-20 dB cross-mix", cross_db=-20.0)
    row = recorded.evaluate_separate(tmp_path, [layout], config).iloc[0].to_dict()
    assert row["overlap_s"] == pytest.approx(row["ref_overlap_s"], rel=0.15)
    assert row["overlap_s_b"] == pytest.approx(row["overlap_s"])  # b starts over a every time
    for speaker in ("a", "b"):
        assert row[f"speech_s_{speaker}"] == pytest.approx(row[f"ref_speech_s_{speaker}"], rel=0.03)
        assert row[f"backchannels_{speaker}"] == row[f"ref_backchannels_{speaker}"]
    assert row["turns"] == row["ref_turns"] == 9


def test_a_soft_speaker_keeps_her_edges_away_from_the_other_voice(recording):
    """The second voice 12 dB softer (16 dB over a -60 dBFS floor): her decays lie under the floor."""
    mics = separate_mics(recording, noise_floor_db=-60.0, b_gain_db=-12.0)
    truth = union_seconds(_long(mics.reference["b"]))
    near_only = union_seconds(_attributed(mics).segments["b"])
    every_end = union_seconds(_attributed(mics, speech_edge_hangover_s=None).segments["b"])
    assert near_only == pytest.approx(truth, rel=0.03)
    assert every_end < 0.97 * truth  # trimming every unvoiced end cut her own speech


# --- a real telephone call recorded one line per talker (SpokenWOZ MUL1423, tests/data/spokenwoz) ---

CALLS = ROOT / "tests" / "data" / "spokenwoz"
VAD = Vad.of(threshold=0.5, min_speech_s=MIN_SPEECH_S, min_silence_s=0.1)  # restart_s: the schema's


@pytest.fixture(scope="module")
def call():
    return telephone.read_call(CALLS, "MUL1423")


@pytest.fixture(scope="module")
def call_truth(call):
    return {k: _long(v) for k, v in telephone.reference(call, VAD).items()}


def _heard(tracks, sr, cancel=True, **signals):
    """Silero (the `vad` block of the schema) and the attribution with the `signals` block of the
    schema, `signals` changed; the bleed cancelled first unless `cancel` is False."""
    settings = Signals.of(signals)
    heard = cancel_bleed(tracks, sr, settings)[0] if cancel else tracks
    found = {k: speech_and_short_segments(heard[k], sr, VAD) for k in ("a", "b")}
    segments, short = {k: found[k][0] for k in found}, {k: found[k][1] for k in found}
    return attribute_speech(segments, heard, sr, settings, VAD, short=short)


def test_the_real_call_is_two_separate_lines(call, call_truth):
    """Nothing of one line is on the other: cancellation leaves both as recorded."""
    cleaned, shares = cancel_bleed(call.tracks, call.sr, Signals.of())
    assert max(shares.values()) < 0.1
    assert all(cleaned[k] is call.tracks[k] for k in ("a", "b"))
    assert overlap_seconds_by(call_truth["a"], call_truth["b"])[0] > 2.0  # they talk over each other
    assert len(call.words) == 231 and {w.speaker for w in call.words} == {"a", "b"}


@pytest.mark.parametrize("cross_db, floor_db", [(None, None), (None, -60.0), (-20.0, None), (-20.0, -60.0)])
def test_a_real_call_keeps_its_simultaneous_speech(call, call_truth, cross_db, floor_db):
    kept = _heard(telephone.layout_tracks(call, cross_db, floor_db), call.sr)
    truth = overlap_seconds_by(call_truth["a"], call_truth["b"])[0]
    assert overlap_seconds_by(kept.segments["a"], kept.segments["b"])[0] == pytest.approx(truth, rel=0.15)
    assert recorded.turn_count(kept.segments, None) == recorded.turn_count(call_truth, None) == 34
    for speaker in ("a", "b"):
        # +2.7% to +2.8% for a: silero's unvoiced ends far from b's voice are kept
        # (signals.speech_edge_hangover_s), the reference trims every unvoiced end
        assert union_seconds(kept.segments[speaker]) == pytest.approx(
            union_seconds(call_truth[speaker]), rel=0.03
        )


def test_without_cancellation_cross_mixed_lines_lose_their_overlap(call, call_truth):
    """On the raw lines silero hears the other voice at -20 dB, and the overlap is lost."""
    tracks = telephone.layout_tracks(call, -20.0)
    truth = overlap_seconds_by(call_truth["a"], call_truth["b"])[0]
    raw = _heard(tracks, call.sr, cancel=False)
    assert overlap_seconds_by(raw.segments["a"], raw.segments["b"])[0] < 0.85 * truth
    cleaned, shares = cancel_bleed(tracks, call.sr, Signals.of())
    assert min(shares.values()) > 0.5
    # what is left of b's line is b's own: the residual matches the clean line to -30 dB
    residual = cleaned["b"].astype(np.float64) - call.tracks["b"]
    assert 10 * np.log10(np.mean(residual**2) / np.mean(call.tracks["b"].astype(np.float64) ** 2)) < -30


def test_a_plain_echo_keeps_the_one_frame_path(call):
    """A line's echo (the other line at -20 dB, no room): the 0.25 s path explains no more frames
    than one frame (it also fits some of the line's own sound), so one frame is used, exactly."""
    tracks = telephone.layout_tracks(call, -20.0)
    cleaned, shares = cancel_bleed(tracks, call.sr, Signals.of())
    one_frame, one_shares = cancel_bleed(tracks, call.sr, Signals.of(bleed_path_s=None))
    assert shares == one_shares
    assert all(np.array_equal(cleaned[k], one_frame[k]) for k in ("a", "b"))


def test_bleed_at_a_lag_is_cancelled_and_a_duplicate_is_not(recording):
    """The built microphones with b 0.4 s late and -20 dB bleed; and two copies of one track."""
    mics = separate_mics(recording, cross_db=-20.0)
    sr, shift = mics.sr, int(0.4 * mics.sr)
    late = {
        "a": mics.tracks["a"],
        "b": np.concatenate((np.zeros(shift, np.float32), mics.tracks["b"][:-shift])),
    }
    alone = slice(int(11.2 * sr), int(12.4 * sr))  # a talks alone: b's microphone holds only bleed
    cleaned, shares = cancel_bleed(late, sr, Signals.of(), lag_s=0.4)
    before = np.mean(late["b"][shift:][alone].astype(np.float64) ** 2)
    after = np.mean(cleaned["b"][shift:][alone].astype(np.float64) ** 2)
    assert shares["b"] > 0.8 and 10 * np.log10(after / before) < -20
    unaligned = cancel_bleed(late, sr, Signals.of(), lag_s=0.0)[0]
    assert np.mean(unaligned["b"][shift:][alone].astype(np.float64) ** 2) > 0.5 * before
    copy = {"a": mics.tracks["a"], "b": mics.tracks["a"].copy()}
    same, _ = cancel_bleed(copy, sr, Signals.of())
    assert same["a"] is copy["a"] and same["b"] is copy["b"]  # the duplicate filter judges those


def _bleed_left_db(cancelled, tracks, clean, own_speech, sr, pad_s=0.6):
    """dB of a line's added bleed left after cancellation, away (`pad_s`) from its owner's speech:
    there the line holds only the other's voice (with the other line's own bleed subtracted too,
    the owner's voice leaves a trace of its own where it speaks)."""
    away = np.ones(clean.size, dtype=bool)
    for start, end in own_speech:
        away[max(0, int((start - pad_s) * sr)) : int((end + pad_s) * sr)] = False
    added = np.sum((tracks - clean).astype(float)[away] ** 2)
    return 10 * np.log10(np.sum((cancelled - clean).astype(float)[away] ** 2) / added)


@pytest.mark.heavy  # a reverberant room simulated and cancelled (about 3.5 CPU-s)
def test_a_rooms_bleed_is_cancelled_over_its_path_not_over_one_frame(call, call_truth):
    """The other line through a modelled room (RT60 0.5 s, -20 dB): its reflections and tail
    arrive over hundreds of milliseconds, so a path of one 32 ms frame explains none of the frames
    where the other leads and removes under 3 dB of the bleed; the path over 0.25 s
    (signals.bleed_path_s) removes over 10 dB, and the call keeps its simultaneous speech."""
    tracks = telephone.layout_tracks(call, -20.0, room_rt60_s=0.5)
    one_frame, one_share = cancel_bleed(tracks, call.sr, Signals.of(bleed_path_s=None), min_share=0.0)
    cleaned, shares = cancel_bleed(tracks, call.sr, Signals.of())
    assert max(one_share.values()) < 0.05 and min(shares.values()) > 0.1
    for k in ("a", "b"):
        left = [
            _bleed_left_db(c[k], tracks[k], call.tracks[k], call_truth[k], call.sr)
            for c in (one_frame, cleaned)
        ]
        assert left[0] > -3.0 and left[1] < -10.0
    kept = _heard(tracks, call.sr)
    truth = overlap_seconds_by(call_truth["a"], call_truth["b"])[0]
    assert overlap_seconds_by(kept.segments["a"], kept.segments["b"])[0] == pytest.approx(truth, rel=0.15)


@pytest.mark.heavy  # 4 CPU-s
def test_a_rooms_reverberant_bleed_is_not_taken_for_backchannels(call, call_truth):
    """The other line through a modelled room (RT60 0.5 s, -20 dB), not cancelled
    (signals.cancel_bleed false, or bleed no path explains): the microphones show a tail, so the
    bleed decays over `tail_s` (signals.bleed_tail_s), and the tail is bleed; without it the
    tail's fragments count as dozens of backchannels."""
    tracks = telephone.layout_tracks(call, -20.0, room_rt60_s=0.5)

    def counted(kept):
        other = {"a": "b", "b": "a"}
        return sum(
            len(backchannels([*kept.segments[k], *kept.short[k]], kept.segments[other[k]], *BACKCHANNEL))
            for k in other
        )

    truth = sum(
        len(backchannels(telephone.reference(call, VAD)[k], call_truth[o], *BACKCHANNEL))
        for k, o in (("a", "b"), ("b", "a"))
    )
    assert truth == 3
    assert (
        counted(_heard(tracks, call.sr, cancel=False, bleed_tail_s=None)) > 50
    )  # the bleed of the moment only
    with_tail = _heard(tracks, call.sr, cancel=False)  # signals.bleed_tail_s: 1 s, a tail shows
    assert counted(with_tail) <= truth + 5
    for speaker in ("a", "b"):  # speech stays within 5% either way
        assert union_seconds(with_tail.segments[speaker]) == pytest.approx(
            union_seconds(call_truth[speaker]), rel=0.05
        )


@pytest.mark.parametrize("seed", [0, 1])
def test_a_soft_utterance_under_a_noise_floor_is_found_by_a_fresh_run(seed):
    """SNG1640's agent says "okay let me have a look" (29.1-30.9 s, muffled, 20-30 dB over a
    -60 dBFS floor): silero's one run over the call misses it, a run from a fresh state finds it
    (`vad.restart_s`), and the line's speech is that of its clean reference again."""
    call = telephone.read_call(CALLS, "SNG1640")
    noisy = telephone.layout_tracks(call, noise_floor_db=-60.0, seed=seed)["b"]
    reference = union_seconds(telephone.reference(call, VAD)["b"])
    found = {}
    restart_s = VAD.restart_s
    for restart in (None, restart_s):
        segments, short = telephone.line_speech(noisy, call.sr, VAD.replace(restart_s=restart))
        found[restart] = [*segments, *short]
    assert union_seconds(found[None], lo=29.0, hi=31.0) < 0.3
    assert union_seconds(found[restart_s], lo=29.0, hi=31.0) > 1.7
    assert union_seconds(found[None]) < 0.95 * reference
    assert union_seconds(found[restart_s]) == pytest.approx(reference, rel=0.03)
