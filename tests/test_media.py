"""Media measurements against signals whose answers are known by construction."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnisocial.familiarity.signals import union_seconds
from omnisocial.media.audio import (
    MediaError,
    complete_pcm_wav,
    envelope,
    load_audio,
    mp4_probe,
    probe,
    probe_with_ffprobe,
)
from omnisocial.media.crosstalk import _align_edges, attribute_speech
from omnisocial.media.sync import (
    audio_change,
    av_lag,
    cross_correlation,
    track_lag,
    track_similarity,
    video_motion,
    video_motions,
)
from omnisocial.media.vad import probabilities_to_segments, speech_probabilities, speech_segments
from omnisocial.settings import Signals, Vad

SR = 16000
HOP = 0.02
ONE_RUN = Vad.of(restart_s=None)  # silero's get_speech_timestamps: one run over the track


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def media_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="module")
def small_mp4(media_dir) -> Path:
    """2 s of testsrc (64x48, 10 fps) with a 440 Hz sine, H.264 + AAC."""
    path = media_dir / "small.mp4"
    _ffmpeg(
        "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
        "-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-threads", "1", str(path),
    )  # fmt: skip
    return path


@pytest.fixture(scope="module")
def utterance(media_dir) -> np.ndarray:
    """A real espeak-ng sentence at 16 kHz (espeak writes 22.05 kHz; load_audio resamples)."""
    path = media_dir / "utterance.wav"
    text = "Would you rather spend a week in the mountains or a week at the beach?"
    subprocess.run(["espeak-ng", "-w", str(path), text], check=True, capture_output=True)
    return load_audio(path, SR)


def _extent(audio: np.ndarray, sr: int = SR, fraction: float = 0.02) -> tuple[float, float]:
    """First and last sample louder than `fraction` of the peak, in seconds."""
    loud = np.flatnonzero(np.abs(audio) > fraction * np.abs(audio).max())
    return loud[0] / sr, (loud[-1] + 1) / sr


# ------------------------------------------------------------------ probe / load_audio


def test_probe_gives_stream_durations_of_a_small_mp4(small_mp4):
    info = probe(small_mp4)
    assert info["video_duration"] == pytest.approx(2.0, abs=0.05)
    assert info["audio_duration"] == pytest.approx(2.0, abs=0.1)
    assert (info["width"], info["height"], info["fps"]) == (64, 48, 10.0)
    assert info["n_audio_streams"] == info["n_video_streams"] == 1


def test_probe_of_a_wav_has_no_video(media_dir):
    path = media_dir / "tone.wav"
    sf.write(path, np.zeros(24000, dtype=np.float32), 48000)
    info = probe(path)
    assert info["audio_duration"] == pytest.approx(0.5)
    assert info["video_duration"] is None
    assert info["sample_rate"] == 48000


WAV_CODECS = [  # (ffmpeg codec, channels, rate): what recorders and sound libraries write
    ("pcm_s16le", 1, 16000), ("pcm_s16le", 2, 44100), ("pcm_s24le", 1, 48000),
    ("pcm_s32le", 1, 22050), ("pcm_f32le", 2, 16000), ("pcm_u8", 1, 8000), ("pcm_s16le", 3, 16000),
]  # fmt: skip


@pytest.fixture(scope="module")
def wav_variants(media_dir) -> dict[str, Path]:
    """WAVs whose header probe must equal ffprobe, and ones it must leave to ffprobe."""
    folder = media_dir / "wav_variants"
    folder.mkdir()
    files = {}
    for codec, channels, rate in WAV_CODECS:  # 3.3371 s: durations that do not round evenly
        path = folder / f"{codec}_{channels}_{rate}.wav"
        sine = f"sine=d=3.3371:r={rate}"
        _ffmpeg("-f", "lavfi", "-i", sine, "-ac", str(channels), "-c:a", codec, str(path))
        files[path.stem] = path
    tagged = folder / "tagged.wav"  # a LIST chunk before the data
    _ffmpeg("-f", "lavfi", "-i", "sine=d=2.5", "-metadata", "title=x", "-c:a", "pcm_s16le", str(tagged))
    files["tagged"] = tagged
    whole = files["pcm_s16le_1_16000"].read_bytes()
    size_at = whole.index(b"data") + 4
    for name, data in {
        "chunk_after_data": whole + b"LIST\x04\x00\x00\x00abcd",
        "cut_odd": whole[:-1001],  # the data chunk ends mid-sample
        "cut_even": whole[:-1000],
        "streamed": whole[:size_at] + b"\xff" * 4 + whole[size_at + 4 :],  # no length: a live recording
    }.items():
        files[name] = folder / f"{name}.wav"
        files[name].write_bytes(data)
    mp3 = files["mp3_in_riff"] = folder / "mp3_in_riff.wav"
    _ffmpeg("-f", "lavfi", "-i", "sine=d=1:r=16000", "-c:a", "libmp3lame", "-f", "wav", str(mp3))
    return files


def test_a_wav_probe_from_its_header_equals_ffprobe(wav_variants):
    from_header = {f"{c}_{n}_{r}" for c, n, r in WAV_CODECS} | {"tagged", "chunk_after_data"}
    for name, path in wav_variants.items():
        assert (complete_pcm_wav(path) is not None) == (name in from_header), name
        assert probe(path) == probe_with_ffprobe(path), name


MP4_VARIANTS = {  # name: ffmpeg arguments after the inputs (testsrc and a 16 kHz sine, below)
    # the demos' kind (H.264 + AAC), as a real corpus's, at 29.97 fps, one stream only, PCM in a MOV
    "h264_aac.mp4": ["-t", "3.3371", "-c:v", "libx264", "-c:a", "aac"],
    "aac_at_48k.mp4": ["-t", "2.7", "-c:v", "libx264", "-c:a", "aac", "-ar", "48000", "-b:a", "32k"],
    "ntsc.mp4": ["-r", "30000/1001", "-t", "2.2", "-c:v", "libx264", "-c:a", "aac"],
    "video_only.mp4": ["-t", "1.9", "-an", "-c:v", "libx264"],
    "audio_only.m4a": ["-t", "2.3", "-vn", "-c:a", "aac", "-ac", "2", "-ar", "44100"],
    "pcm.mov": ["-t", "1.25", "-c:v", "libx264", "-c:a", "pcm_s16le"],
}


@pytest.fixture(scope="module")
def mp4_variants(media_dir) -> dict[str, Path]:
    folder = media_dir / "mp4_variants"
    folder.mkdir()
    for name, options in MP4_VARIANTS.items():
        _ffmpeg(
            "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
            *options, "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-threads", "1", str(folder / name),
        )  # fmt: skip
    return {name: folder / name for name in MP4_VARIANTS}


def test_an_mp4_probe_in_process_equals_ffprobe(mp4_variants, small_mp4):
    """probe answers an MP4 / M4A / MOV in this process (PyAV), field for field as ffprobe does,
    except where FFmpeg releases disagree on the container's duration (the 29.97 fps file's
    movie header rounds its 2.2022 s up): that one goes to ffprobe."""
    for name, path in {**mp4_variants, "small.mp4": small_mp4}.items():
        in_process = mp4_probe(path)
        assert (in_process is None) == (name == "ntsc.mp4"), name
        assert probe(path) == (in_process or probe_with_ffprobe(path)) == probe_with_ffprobe(path), name


def test_an_mp4_the_libraries_cannot_open_goes_to_ffprobe(small_mp4, media_dir):
    cut = media_dir / "cut_for_ffprobe.mp4"
    cut.write_bytes(small_mp4.read_bytes()[:2048])
    assert mp4_probe(cut) is None  # so that the error below is ffprobe's own
    with pytest.raises(MediaError, match=r"cannot probe .*cut_for_ffprobe\.mp4: \S"):
        probe(cut)


def test_truncated_mp4_raises_with_a_reason(small_mp4, media_dir):
    cut = media_dir / "cut.mp4"
    cut.write_bytes(small_mp4.read_bytes()[:2048])
    motion = lambda path: video_motion(path, Signals.of().motion_fps)  # noqa: E731 (the schema's rate)
    for read in (probe, load_audio, motion):
        with pytest.raises(MediaError, match=r"cannot (probe|decode .* from) .*cut\.mp4: \S"):
            read(cut)


def test_garbage_and_missing_files_raise(media_dir):
    garbage = media_dir / "garbage.mp4"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    with pytest.raises(MediaError, match="cannot probe"):
        probe(garbage)
    garbage_wav = media_dir / "garbage.wav"
    garbage_wav.write_bytes(garbage.read_bytes())
    with pytest.raises(MediaError, match="cannot read WAV .*garbage.wav: "):
        load_audio(garbage_wav)
    with pytest.raises(MediaError, match="file not found"):
        probe(media_dir / "nowhere.mp4")
    with pytest.raises(MediaError, match="no file path"):
        load_audio("")
    empty = media_dir / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(MediaError, match="empty file"):
        probe(empty)


def test_empty_wav_raises_no_audio_samples(media_dir):
    header_only = media_dir / "header_only.wav"
    sf.write(header_only, np.zeros(0, dtype=np.float32), SR, subtype="PCM_16")
    assert header_only.stat().st_size > 0
    with pytest.raises(MediaError, match="no audio samples"):
        load_audio(header_only)
    zero_bytes = media_dir / "zero_bytes.wav"
    zero_bytes.write_bytes(b"")
    with pytest.raises(MediaError, match="no audio samples"):
        load_audio(zero_bytes)


def test_load_audio_mixes_to_mono_and_resamples(media_dir):
    t = np.arange(48000) / 48000
    left = 0.5 * np.sin(2 * np.pi * 200 * t)
    path = media_dir / "stereo48k.wav"
    sf.write(path, np.stack([left, left], axis=1).astype(np.float32), 48000, subtype="FLOAT")
    audio = load_audio(path, SR)
    assert audio.dtype == np.float32 and audio.shape == (16000,)
    assert np.sqrt(np.mean(audio[1000:-1000] ** 2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


def test_load_audio_decodes_other_containers_with_ffmpeg(small_mp4):
    audio = load_audio(small_mp4, SR)
    assert audio.size == pytest.approx(2 * SR, abs=0.05 * SR)
    # AAC-coded sine at the lavfi default amplitude 1/8: RMS about 0.088.
    assert np.sqrt(np.mean(audio[4000:-4000] ** 2)) == pytest.approx(0.125 / np.sqrt(2), rel=0.1)


def test_envelope_linear_and_log():
    t = np.arange(SR) / SR
    tone = 0.3 * np.sin(2 * np.pi * 250 * t)  # whole periods per 20 ms hop
    quiet = np.concatenate([tone, 0.01 * tone, np.zeros(SR)])
    linear = envelope(quiet, SR, HOP)
    assert linear.shape == (150,)
    assert linear[:50] == pytest.approx(0.3 / np.sqrt(2), rel=1e-6)
    assert linear[50:100] == pytest.approx(0.003 / np.sqrt(2), rel=1e-6)
    log = envelope(quiet, SR, HOP, log=True, floor_db=-60)
    assert log[:50] == pytest.approx(0.0, abs=1e-9)
    assert log[50:100] == pytest.approx(-40.0, abs=1e-6)
    assert np.all(log[100:] == -60.0)
    assert np.all(envelope(np.zeros(SR), SR, HOP, log=True) == -60.0)
    assert envelope(np.zeros(100), SR, HOP).size == 0  # shorter than one hop


# ------------------------------------------------------------------ track similarity


def _speaker(rng: np.random.Generator, seconds: float, active: np.ndarray) -> np.ndarray:
    """Noise bursts with a random syllable-rate envelope, only where `active` (per sample)."""
    n = int(seconds * SR)
    syllables = rng.uniform(0.1, 1.0, int(seconds * 5) + 2)
    shape = np.repeat(syllables, SR // 5)[:n] * (0.5 + 0.5 * np.sin(2 * np.pi * 5 * np.arange(n) / SR) ** 2)
    return 0.2 * rng.standard_normal(n) * shape * active


def _two_microphones(seconds: float = 40.0, crosstalk_db: float = -24.0, seed: int = 1):
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    turn = (np.arange(n) // int(2.5 * SR)) % 3  # a speaks, b speaks, both pause
    a = _speaker(rng, seconds, turn == 0)
    b = _speaker(rng, seconds, turn == 1)
    gain = 10 ** (crosstalk_db / 20)
    noise = 0.0015
    mic_a = a + gain * b + noise * rng.standard_normal(n)
    mic_b = b + gain * a + noise * rng.standard_normal(n)
    return mic_a, mic_b


def test_synced_tracks_peak_at_lag_zero_without_looking_duplicated():
    mic_a, mic_b = _two_microphones()
    similarity, lag = track_similarity(
        envelope(mic_a, SR, HOP, True), envelope(mic_b, SR, HOP, True), HOP, 2.0
    )
    assert lag == pytest.approx(0.0, abs=HOP)
    assert similarity < 0.9


def test_identical_tracks_are_duplicates_at_lag_zero():
    mic_a, _ = _two_microphones()
    env = envelope(mic_a, SR, HOP, True)
    similarity, lag = track_similarity(env, env.copy(), HOP, 2.0)
    assert similarity > 0.99
    assert lag == 0.0


@pytest.mark.parametrize("delay_s", [0.5, -0.5])
def test_a_delayed_track_peaks_at_its_delay(delay_s):
    mic_a, mic_b = _two_microphones()
    shift = int(abs(delay_s) * SR)
    pad = 0.0015 * np.random.default_rng(5).standard_normal(shift)
    if delay_s > 0:  # b late: b(t) = b0(t - 0.5)
        mic_b = np.concatenate([pad, mic_b[:-shift]])
    else:  # a late
        mic_a = np.concatenate([pad, mic_a[:-shift]])
    similarity, lag = track_similarity(
        envelope(mic_a, SR, HOP, True), envelope(mic_b, SR, HOP, True), HOP, 2.0
    )
    assert lag == pytest.approx(delay_s, abs=HOP)
    assert similarity < 0.98


def test_cross_correlation_of_a_known_shift_and_constant_tracks():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(500)
    y = np.roll(x, 7)
    lags, correlations = cross_correlation(x, y, 10)
    assert lags[np.nanargmax(correlations)] == 7
    assert np.nanmax(correlations) == pytest.approx(1.0)
    similarity, lag = track_similarity(np.ones(100), x[:100], HOP, 0.5)
    assert np.isnan(similarity) and np.isnan(lag)


def _recorded_envelopes(**layout) -> dict[str, np.ndarray]:
    from omnisocial.media.recorded import sample_conversation, speaker_tracks

    tracks = speaker_tracks(sample_conversation(), **layout)
    return {k: envelope(v, SR, HOP, True) for k, v in tracks.items()}


@pytest.mark.parametrize("layout", [{}, {"noise_floor_db": -60.0}, {"delay_b_s": 0.4}])
def test_isolated_real_tracks_have_no_measurable_lag(layout):
    """Each mic holds only its own speaker (the real recording's turns): no shared signal, no lag."""
    env = _recorded_envelopes(bleed_db=None, **layout)
    found = track_lag(env["a"], env["b"], HOP, 3.0, min_peak=0.22, min_prominence=0.05)
    assert not found.measurable and np.isnan(found.lag_s)
    assert found.peak < 0.22 and found.prominence < 0.05  # both gates hold it back
    assert np.isfinite(found.similarity)  # taken at lag 0: the duplicate test still has a value
    assert abs(track_similarity(env["a"], env["b"], HOP, 3.0)[1]) > 0.5  # the ungated peak invents one


@pytest.mark.parametrize(("bleed_db", "delay_s"), [(-45.0, 0.0), (-45.0, 0.4), (-10.0, 0.4)])
def test_shared_real_signal_gives_the_true_lag(bleed_db, delay_s):
    env = _recorded_envelopes(bleed_db=bleed_db, delay_b_s=delay_s)
    found = track_lag(env["a"], env["b"], HOP, 3.0, min_peak=0.22, min_prominence=0.05)
    assert found.measurable and found.lag_s == pytest.approx(delay_s, abs=0.04)


def _attributed(bleed_db):
    from omnisocial.media.recorded import sample_conversation, speaker_tracks

    tracks = speaker_tracks(sample_conversation(), bleed_db=bleed_db)
    return attribute_speech(
        {k: speech_segments(v, SR, ONE_RUN) for k, v in tracks.items()}, tracks, SR, Signals.of(), ONE_RUN
    )


def test_speech_goes_to_the_mic_that_leads_and_strong_bleed_is_shared():
    from omnisocial.media.recorded import reference_turns, sample_conversation

    reference = reference_turns(sample_conversation())
    clear = _attributed(-10.0)
    for speaker in ("a", "b"):
        truth = union_seconds(reference[speaker])
        assert union_seconds(clear.segments[speaker]) == pytest.approx(truth, rel=0.03)
    total = union_seconds([iv for ivs in clear.segments.values() for iv in ivs])
    assert clear.shared_s < 0.15 * total  # the recording's own overlap
    # 5 dB apart, neither mic leads by 6 dB: the speech is on both, shared, and so reported
    strong = _attributed(-5.0)
    total = union_seconds([iv for ivs in strong.segments.values() for iv in ivs])
    assert strong.shared_s > 0.9 * total


def test_speech_edges_follow_the_microphones_level():
    """Quiet ends are trimmed, voiced neighbours the other mic does not lead join, nothing new starts."""
    kept = np.array([0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    voiced = np.array([1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1], dtype=bool)
    allowed = np.ones(kept.size, dtype=bool)
    # the run 1-5 loses its quiet end (5), keeps its quiet inside (2), grows back to 0; 7-8 and
    # 10-11 are voiced but touch no speech: not speech
    assert _align_edges(kept, voiced, allowed).astype(int).tolist() == [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    bleed = allowed.copy()
    bleed[0] = False  # the other mic leads there: cross-talk is never grown into
    assert _align_edges(kept, voiced, bleed).astype(int).tolist() == [0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    silent = np.zeros(kept.size, dtype=bool)
    assert not _align_edges(kept, silent, allowed).any()  # a run with no voiced hop at all is gone


def test_a_turn_starting_in_overlap_under_a_noise_floor_starts_on_time():
    """Silero alone starts the last turn of a (27.85 s, begun in overlap) 0.4 s late under -60 dBFS."""
    from omnisocial.media.recorded import reference_turns, sample_conversation, speaker_tracks

    recording = sample_conversation()
    tracks = speaker_tracks(recording, bleed_db=None, noise_floor_db=-60.0)
    found = {k: speech_segments(v, SR, ONE_RUN) for k, v in tracks.items()}
    onset = reference_turns(recording)["a"][-1][0]
    silero_onset = min(start for start, end in found["a"] if end > onset)
    assert silero_onset > onset + 0.3  # what silero alone gives
    plain = attribute_speech(
        found, tracks, SR, Signals.of(speech_edge_below_level_db=None), ONE_RUN
    ).segments["a"]
    aligned = attribute_speech(found, tracks, SR, Signals.of(), ONE_RUN).segments["a"]
    assert min(start for start, end in plain if end > onset) > onset + 0.3
    assert min(start for start, end in aligned if end > onset) == pytest.approx(onset, abs=0.06)


@pytest.mark.parametrize("bleed_db", [-10.0, -5.0])
def test_a_silent_participant_is_not_credited_with_the_others_bleed(bleed_db):
    """b never speaks; b's mic hears a. Clear bleed goes to a; strong bleed is shared, not b's."""
    from omnisocial.media.recorded import sample_conversation, turn_mask

    recording = sample_conversation()
    own_a = turn_mask(recording.turns, recording.speakers[0], recording.audio.size, SR)
    mic_a = np.where(own_a, recording.audio, 0.0).astype(np.float32)
    mic_b = (10 ** (bleed_db / 20) * mic_a).astype(np.float32)
    tracks = {"a": mic_a, "b": mic_b}
    found = {k: speech_segments(v, SR, ONE_RUN) for k, v in tracks.items()}
    assert union_seconds(found["b"]) > 10.0  # silero alone hears a's voice on b's mic as speech
    result = attribute_speech(found, tracks, SR, Signals.of(), ONE_RUN)
    if bleed_db == -10.0:
        assert union_seconds(result.segments["b"]) < 0.5 and result.shared_s < 0.5
    else:  # neither mic leads by 6 dB: all of it is shared, which F4 excludes as cross-talk
        assert result.shared_s > 0.9 * union_seconds(result.segments["a"])


# ------------------------------------------------------------------ silero VAD


def test_silero_finds_an_espeak_utterance_inside_its_padding(utterance):
    padded = np.concatenate([np.zeros(2 * SR, np.float32), utterance, np.zeros(2 * SR, np.float32)])
    onset, offset = _extent(utterance)
    segments = speech_segments(
        padded, SR, ONE_RUN.replace(threshold=0.5, min_speech_s=0.25, min_silence_s=0.1)
    )
    assert segments, "no speech found"
    assert segments[0][0] == pytest.approx(2.0 + onset, abs=0.3)
    assert segments[-1][1] == pytest.approx(2.0 + offset, abs=0.3)
    assert sum(end - start for start, end in segments) > 0.7 * (offset - onset)
    assert speech_segments(np.zeros(3 * SR, np.float32), SR, ONE_RUN) == []
    assert speech_segments(np.zeros(0, np.float32), SR, ONE_RUN) == []


def test_silero_runs_its_shipped_onnx_files_without_importing_torch(tmp_path):
    """The VAD finds silero's ONNX files without running the package's `__init__`, which
    imports torch (about 1.5 CPU-s in every job that measures speech)."""
    import importlib.resources
    import sys

    from omnisocial.media import vad

    for backend in ("sequence", "stream"):
        shipped = importlib.resources.files("silero_vad.data").joinpath(vad.MODEL_FILES[backend])
        assert Path(vad.model_path(backend)).samefile(str(shipped))
    audio = tmp_path / "noise.npy"
    np.save(audio, np.random.default_rng(0).normal(0, 0.05, 2 * SR).astype(np.float32))
    script = (
        "import sys, numpy as np\n"
        "from omnisocial.media import vad\n"
        "from omnisocial.settings import Vad\n"
        f"print(vad.speech_segments(np.load({str(audio)!r}), {SR}, Vad.of({{}})))\n"
        "print(sorted(m for m in ('torch', 'silero_vad') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[-1] == "[]", run.stdout


def test_silero_resamples_other_rates(utterance):
    from omnisocial.media.audio import resample

    padded = np.concatenate([np.zeros(SR, np.float32), utterance, np.zeros(SR, np.float32)])
    at_48k = resample(padded, SR, 48000)
    onset, offset = _extent(utterance)
    segments = speech_segments(at_48k, 48000, ONE_RUN)
    assert segments[0][0] == pytest.approx(1.0 + onset, abs=0.3)
    assert segments[-1][1] == pytest.approx(1.0 + offset, abs=0.3)


def test_sequence_model_matches_the_streaming_model_and_the_package(utterance):
    """The fast path gives silero's own probabilities and silero's own segments."""
    from silero_vad.utils_vad import get_speech_timestamps_from_probs

    audio = np.concatenate([np.zeros(SR // 2, np.float32), utterance, np.zeros(SR, np.float32), utterance])
    fast = speech_probabilities(audio, SR, backend="sequence", restart_s=None)
    reference = speech_probabilities(audio, SR, backend="stream", restart_s=None)
    assert fast.shape == reference.shape == ((audio.size + 511) // 512,)
    np.testing.assert_allclose(fast, reference, atol=1e-5)
    for threshold, min_speech, min_silence in [(0.5, 0.25, 0.1), (0.3, 0.1, 0.3), (0.8, 0.5, 0.05)]:
        ours = probabilities_to_segments(fast, audio.size, threshold, min_speech, min_silence)
        theirs = get_speech_timestamps_from_probs(
            fast.tolist(),
            sampling_rate=SR,
            threshold=threshold,
            min_speech_duration_ms=min_speech * 1000,
            min_silence_duration_ms=min_silence * 1000,
            audio_length_samples=audio.size,
        )
        assert ours == [(t["start"] / SR, t["end"] / SR) for t in theirs]


def test_restarts_add_fresh_runs_and_keep_the_highest_probability(utterance):
    """`restart_s`: runs from a fresh state over stretches every half of it; each window takes its
    highest probability, the same on both exports; the first stretch is the one run's."""
    gap = np.zeros(SR, np.float32)
    audio = np.concatenate([gap, utterance, gap, gap, utterance, gap, utterance, gap])
    one_run = speech_probabilities(audio, SR, restart_s=None)
    restarted = speech_probabilities(audio, SR, restart_s=2.0)
    assert restarted.shape == one_run.shape
    assert np.all(restarted >= one_run)
    first = int(round(1.0 * SR / 512))  # the first restart is half of 2 s in
    np.testing.assert_array_equal(restarted[:first], one_run[:first])
    assert np.any(restarted[first:] > one_run[first:] + 0.01)  # a fresh state says something else
    streamed = speech_probabilities(audio, SR, backend="stream", restart_s=2.0)
    np.testing.assert_allclose(restarted, streamed, atol=1e-5)
    with pytest.raises(ValueError, match="vad.restart_s"):
        speech_probabilities(audio, SR, restart_s=0.0)


def test_crosstalk_is_not_counted_as_the_listeners_speech(utterance):
    n = utterance.size
    gap = np.zeros(SR, np.float32)
    own = np.concatenate([gap, utterance, gap, np.zeros(n, np.float32), gap])
    other = np.concatenate([gap, np.zeros(n, np.float32), gap, utterance, gap])
    leak = 10 ** (-24 / 20)
    mic_own, mic_other = own + leak * other, other + leak * own
    found = speech_segments(mic_own, SR, ONE_RUN)
    onset, offset = _extent(utterance)
    other_start = 2.0 + n / SR
    assert any(start >= other_start - 0.3 for start, _ in found), "silero hears the cross-talk as speech"
    kept = attribute_speech(
        {"a": found, "b": []}, {"a": mic_own, "b": mic_other}, SR, Signals.of(), ONE_RUN
    ).segments["a"]
    assert kept
    assert kept[0][0] == pytest.approx(1.0 + onset, abs=0.3)
    assert kept[-1][1] == pytest.approx(1.0 + offset, abs=0.3)
    copies = {"a": mic_own, "b": mic_own.copy()}  # two copies: neither mic leads, nothing is dropped
    as_found = attribute_speech(
        {"a": found, "b": []}, copies, SR, Signals.of(speech_edge_below_level_db=None), ONE_RUN
    ).segments["a"]
    assert union_seconds(as_found) == pytest.approx(union_seconds(found), abs=0.05)
    # aligned to the level, each stretch loses at most silero's quiet padding at its two ends
    # (here none: an unvoiced end is trimmed only near the other microphone's voice; the ends
    # move to the 20 ms hops)
    aligned = attribute_speech({"a": found, "b": []}, copies, SR, Signals.of(), ONE_RUN).segments["a"]
    assert -0.02 * 2 * len(found) <= union_seconds(found) - union_seconds(aligned) <= 0.1 * 2 * len(found)
    trimmed = attribute_speech(
        {"a": found, "b": []}, copies, SR, Signals.of(speech_edge_hangover_s=None), ONE_RUN
    ).segments["a"]
    assert 0 <= union_seconds(found) - union_seconds(trimmed) <= 0.1 * 2 * len(found)


# ------------------------------------------------------------------ video motion and A/V lag


def _syllable_envelope(seconds: float, seed: int) -> np.ndarray:
    """A speech-like envelope on the 20 ms hop: bursts of 0.1-0.4 s separated by pauses."""
    rng = np.random.default_rng(seed)
    env = np.zeros(int(seconds / HOP))
    i = 0
    while i < env.size:
        length = int(rng.integers(5, 20))
        env[i : i + length] = rng.uniform(0.2, 1.0) * np.hanning(length + 2)[1:-1][: env.size - i]
        i += length + int(rng.integers(0, 15))
    return env


def _brightness_video(path: Path, env: np.ndarray, shift_s: float, fps: int = 10) -> None:
    """Grey frames whose brightness follows `env` delayed by `shift_s`, as H.264 mp4."""
    per_frame = int(round(1 / (fps * HOP)))
    frame_env = env[: env.size // per_frame * per_frame].reshape(-1, per_frame).mean(axis=1)
    shift = int(round(shift_s * fps))
    shifted = np.concatenate([np.zeros(shift), frame_env[: frame_env.size - shift]]) if shift else frame_env
    frames = np.repeat((30 + 200 * shifted).astype(np.uint8)[:, None, None], 48, axis=1)
    frames = np.repeat(frames, 64, axis=2)
    command = [
        "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "64x48",
        "-framerate", str(fps), "-i", "pipe:0", "-c:v", "libx264", "-preset", "ultrafast", "-threads", "1",
        "-pix_fmt", "yuv420p", str(path),
    ]  # fmt: skip
    subprocess.run(command, input=frames.tobytes(), check=True, capture_output=True)


@pytest.mark.parametrize("shift_s", [0.4, 0.0])
def test_av_lag_recovers_a_known_video_delay(media_dir, shift_s):
    env = _syllable_envelope(20.0, seed=11)
    path = media_dir / f"brightness_{shift_s}.mp4"
    _brightness_video(path, env, shift_s)
    motion = video_motion(path, fps=10)
    assert motion.size == 200 and motion[0] == 0.0
    assert av_lag(env, HOP, motion, 10, 1.0) == pytest.approx(shift_s, abs=0.1)


def test_video_motion_of_a_static_and_a_moving_picture(small_mp4, media_dir):
    static = media_dir / "static.mp4"
    _ffmpeg("-f", "lavfi", "-i", "color=c=gray:size=64x48:rate=10", "-t", "1", "-c:v", "libx264", str(static))
    assert video_motion(static, fps=10).max() < 0.5
    moving = video_motion(small_mp4, fps=10)
    assert moving.size == 20 and moving[1:].mean() > 1.0


def test_video_motions_in_one_process_equal_one_call_per_file(small_mp4, media_dir):
    env = _syllable_envelope(5.0, seed=3)
    other = media_dir / "brightness_together.mp4"
    _brightness_video(other, env, 0.2)  # another size and length than small_mp4
    together = video_motions([small_mp4, other, small_mp4], fps=10, size=(16, 12))
    alone = [video_motion(path, fps=10, size=(16, 12)) for path in (small_mp4, other, small_mp4)]
    assert [m.size for m in together] == [20, 50, 20]
    for mine, reference in zip(together, alone, strict=True):
        np.testing.assert_array_equal(mine, reference)
    broken = media_dir / "broken_together.mp4"
    broken.write_bytes(small_mp4.read_bytes()[:300])
    for bad in (broken, media_dir / "gone.mp4"):
        with pytest.raises(MediaError):
            video_motions([small_mp4, bad], fps=10)


def test_audio_change_averages_each_frame_interval():
    env = np.repeat([0.0, 1.0, 1.0, 3.0], 5)  # 4 frames of 0.1 s at a 20 ms hop
    np.testing.assert_allclose(audio_change(env, HOP, 10, 10), [0.0, 1.0, 0.0, 2.0])
    # Fewer frames than audio (a truncated video): the last frame still averages its own interval only.
    np.testing.assert_allclose(audio_change(env, HOP, 10, 3), [0.0, 1.0, 0.0])
    assert np.isnan(av_lag(np.zeros(100), HOP, np.zeros(10), 10, 0.3))


def test_av_lag_is_nan_when_the_picture_does_not_follow_the_voice():
    rng = np.random.default_rng(3)
    hop_s, fps = 0.02, 10.0
    bursts = (rng.random(1500) < 0.05).astype(float)  # 30 s of speech-like on/off envelope
    audio_env = np.convolve(bursts, np.ones(20), mode="same")
    unrelated_motion = rng.random(300)  # 30 s of video whose motion is noise
    assert np.isfinite(av_lag(audio_env, hop_s, unrelated_motion, fps, 2.0))  # some peak always exists
    assert np.isnan(av_lag(audio_env, hop_s, unrelated_motion, fps, 2.0, min_correlation=0.3))


# --- ffmpeg-python commands: the same options as the former hand-written lists --------------


def _pairs(argv: list[str]) -> tuple[list[str], list[str], list[tuple[str, ...]]]:
    """(command and input part up to the file, output file, output options as a sorted list)."""
    cut = argv.index("-i") + 2
    options, i = [], cut
    while i < len(argv) - 1:
        takes_value = argv[i + 1] != argv[-1] and not argv[i + 1].startswith("-") or argv[i] == "-map"
        options.append(tuple(argv[i : i + 2]) if takes_value else (argv[i],))
        i += 2 if takes_value else 1
    return argv[:cut], argv[-1:], sorted(options)


def test_ffmpeg_python_commands_match_the_former_argument_lists(small_mp4, tmp_path):
    from omnisocial.media import audio, ffmpeg_run, frames
    from omnisocial.models import media_io, transformers_media

    f = str(small_mp4)
    head = ["ffmpeg", "-nostdin", "-v", "error", "-i", f]
    former = {
        "audio": [*head, "-map", "0:a:0", "-vn", "-ac", "1", "-ar", "16000", "-f", "f32le", "-"],
        "motion": [  # one decoder thread (frame threading only costs CPU on small frames)
            "ffmpeg", "-nostdin", "-threads", "1", "-v", "error", "-i", f,
            "-map", "0:v:0", "-an", "-vf", "fps=10,scale=32:24:flags=area,format=gray",
            "-f", "rawvideo", "-pix_fmt", "gray", "-",
        ],
        "wav": [*head, "-vn", "-ar", "16000", "-acodec", "pcm_s16le", "-f", "wav", "pipe:1"],
        "jpeg": [
            *head, "-vf", "fps=1.000000,scale=768:-2", "-frames:v", "32", "-q:v", "4",
            str(tmp_path / "frame_%05d.jpg"),
        ],
        "rgb": [
            *head, "-map", "0:v:0", "-vf", "fps=2.0", "-frames:v", "8",
            "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
        ],
    }  # fmt: skip
    graphs = {
        "audio": audio._audio_stream(small_mp4, 16000),
        "motion": frames.grey_frames_stream(small_mp4, 10, 32, 24),
        "wav": media_io._wav_stream(small_mp4, 16000),
        "jpeg": media_io._frames_stream(small_mp4, str(tmp_path / "frame_%05d.jpg"), 1.0, 32, 768, 4),
        "rgb": transformers_media._frames_stream(small_mp4, 2.0, 8),
    }
    for name, graph in graphs.items():
        argv = ffmpeg_run.compile_args(graph)
        assert _pairs(argv) == _pairs(former[name]), name
        if name == "jpeg":  # same frames written
            ffmpeg_run.run_ffmpeg(graph, file=small_mp4, what="decode")
            new = [p.read_bytes() for p in sorted(tmp_path.glob("frame_*.jpg"))]
            for p in tmp_path.glob("frame_*.jpg"):
                p.unlink()
            subprocess.run(former[name], capture_output=True, check=True)
            assert new and new == [p.read_bytes() for p in sorted(tmp_path.glob("frame_*.jpg"))]
        else:  # same bytes out
            assert (
                ffmpeg_run.run_ffmpeg(graph, file=small_mp4, what="decode")
                == subprocess.run(former[name], capture_output=True, check=True).stdout
            ), name
    default_threads = [*head, *former["motion"][len(head) + 2 :]]
    assert ffmpeg_run.run_ffmpeg(graphs["motion"], file=small_mp4, what="decode") == (
        subprocess.run(default_threads, capture_output=True, check=True).stdout
    )  # the single-threaded decode gives the frames the default (threaded) decoder gives
    assert ffmpeg_run.ffprobe_args(f, v="error") == [
        "ffprobe", "-show_format", "-show_streams", "-of", "json", "-v", "error", f
    ]  # fmt: skip
    import json

    former_probe = ["ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams", f]
    assert ffmpeg_run.probe_json(small_mp4, v="error") == json.loads(
        subprocess.run(former_probe, capture_output=True).stdout
    )


def test_demo_mp4_graph_has_the_former_options():
    """The demos' encoder graph (`pipe.raw_mp4_stream`) holds the options of their former lists."""
    from omnisocial.media import ffmpeg_run
    from omnisocial.media.pipe import raw_mp4_stream

    video = {"width": 160, "height": 120, "fps": 10}
    glob = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
    raw_in = [
        "ffmpeg", "-threads", "1", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "160x120",
        "-framerate", "10", "-i", "pipe:0",
    ]  # fmt: skip
    common = [
        "-c:v", "libx264", "-preset", "ultrafast", "-threads", "1", "-pix_fmt", "yuv420p",
        "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1", "-f", "mp4",
    ]  # fmt: skip
    familiarity = [
        *raw_in, "-i", "a.wav", "-map", "0:v:0", "-map", "1:a:0", "-t", "110.000000", *common,
        "-c:a", "aac", "-aac_coder", "fast", "-b:a", "32k", "-flags:a", "+bitexact", "out.mp4",
    ]  # fmt: skip
    silent = [*raw_in, "-map", "0:v:0", "-an", "-t", "20.000000", *common, "-qp", "4", "out.mp4"]
    graphs = {
        "familiarity": raw_mp4_stream(
            "out.mp4", video, 110.0, Path("a.wav"), audio_options={"aac_coder": "fast", "b:a": "32k"}
        ),
        "silent": raw_mp4_stream("out.mp4", video, 20.0, None, video_options={"qp": 4}),
    }
    for name, former in (("familiarity", familiarity), ("silent", silent)):
        argv = ffmpeg_run.compile_args(graphs[name])
        assert argv[-len(glob) :] == glob, name  # global options, after the output file
        argv = argv[: -len(glob)]

        def options(args: list[str]) -> list[tuple[str, str]]:
            pairs, i = [], 1
            while i < len(args) - 1:
                if args[i + 1].startswith("-") and args[i] != "-map_metadata" or args[i] == "-an":
                    pairs.append((args[i], ""))
                    i += 1
                else:
                    pairs.append((args[i], args[i + 1]))
                    i += 2
            return pairs

        # the same inputs in order, the same maps in order, the same set of options
        split_new, split_old = argv.index("pipe:0"), former.index("pipe:0")
        assert sorted(options(argv[: split_new + 1])) == sorted(options(former[: split_old + 1])), name
        tail_new, tail_old = options(argv[split_new:]), options(former[split_old:])
        assert [p for p in tail_new if p[0] in ("-i", "-map")] == [
            p for p in tail_old if p[0] in ("-i", "-map")
        ]
        assert sorted(tail_new) == sorted(tail_old), name
        assert argv[-1] == former[-1]


def test_several_mp4s_in_one_process_are_the_bytes_of_one_call_each(media_dir):
    """`pipe.encode_raw_mp4s` (the demo corpus: both cameras at once) = `encode_raw_mp4` per file."""
    from omnisocial.demo_kit import write_pcm_wav
    from omnisocial.media.ffmpeg_run import MediaError as RunError
    from omnisocial.media.pipe import RawMp4, encode_raw_mp4, encode_raw_mp4s

    video = {"width": 32, "height": 24, "fps": 10}
    rng = np.random.default_rng(5)
    files = []
    for index, n_frames in enumerate((30, 22)):  # two lengths, as a truncated camera
        frames = rng.integers(16, 235, size=n_frames * 32 * 24 * 3 // 2, dtype=np.uint8).tobytes()
        audio = media_dir / f"together_{index}.wav"
        write_pcm_wav(audio, rng.integers(-3000, 3000, 48000, dtype=np.int16).tobytes(), 16000)
        files.append(RawMp4(media_dir / f"together_{index}.mp4", frames, n_frames / 10, audio))
    options = {"aac_coder": "fast", "b:a": "32k"}
    encode_raw_mp4s(files, video, media_dir, audio_options=options)
    for file in files:
        alone = file.path.with_name(f"alone_{file.path.name}")
        log = media_dir / "alone.log"
        encode_raw_mp4(alone, file.frames, video, file.seconds, log, file.audio_path, audio_options=options)
        assert file.path.read_bytes() == alone.read_bytes()
    # a failed run names the first file and writes none of them
    bad = [RawMp4(media_dir / "never_0.mp4", b"", 1.0, media_dir / "no_such.wav"), files[1]]
    with pytest.raises(RunError, match="cannot encode .*never_0.mp4"):
        encode_raw_mp4s(bad, video, media_dir)
    assert not (media_dir / "never_0.mp4").exists()
    assert not list(media_dir.glob(".never_0.mp4.*"))


def test_ffmpeg_run_errors_name_the_file(media_dir):
    import ffmpeg

    from omnisocial.media import ffmpeg_run

    garbage = media_dir / "not_media.mp4"
    garbage.write_bytes(b"not a video" * 10)
    graph = ffmpeg.input(str(garbage), nostdin=None, v="error").output("-", format="f32le")
    with pytest.raises(MediaError, match=r"^cannot decode .*not_media\.mp4: "):
        ffmpeg_run.run_ffmpeg(graph, file=garbage, what="decode")
    with pytest.raises(MediaError, match="ffmpeg-missing is not installed"):
        ffmpeg_run.run_command(["ffmpeg-missing", "-i", str(garbage)], file=garbage, what="decode")
    slow = ["sh", "-c", "sleep 5", "-"]
    with pytest.raises(MediaError, match=r"^sh took over 0.2 s to decode "):
        ffmpeg_run.run_command(slow, file=garbage, what="decode", timeout_s=0.2)


def test_pipe_frames_encodes_raw_frames_like_the_former_command(tmp_path):
    import ffmpeg

    from omnisocial.media import ffmpeg_run
    from omnisocial.media.pipe import run_with_stdin, yuv420p

    rng = np.random.default_rng(0)
    frames = b"".join(yuv420p(rng.integers(0, 256, size=(48, 64, 3)).astype(np.uint8)) for _ in range(5))
    graph = ffmpeg.input("pipe:", format="rawvideo", pix_fmt="yuv420p", s="64x48", r=10).output(
        str(tmp_path / "new.y4m"), format="yuv4mpegpipe"
    )
    assert ffmpeg_run.pipe_frames(graph, frames, tmp_path / "new.log") == 0
    former = ["ffmpeg", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-r", "10", "-s", "64x48", "-i", "pipe:"]
    assert (
        run_with_stdin(
            [*former, "-f", "yuv4mpegpipe", str(tmp_path / "old.y4m")], frames, tmp_path / "old.log"
        )
        == 0
    )
    assert (tmp_path / "new.y4m").read_bytes() == (tmp_path / "old.y4m").read_bytes()
    assert run_with_stdin(["false"], frames, tmp_path / "false.log") == 1
