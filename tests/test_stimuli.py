"""Rendering one dyad's stimuli in three modalities with real ffmpeg.

The specification: docs/benchmarks/familiarity.md#stimuli.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import ffmpeg
import numpy as np
import pandas as pd
import pytest
import soundfile

from omnisocial.familiarity.contracts import STIMULI_MANIFEST
from omnisocial.familiarity.stimuli import (
    StimulusError,
    balance_gains,
    clock,
    render_stimuli,
    transcript_text,
)
from omnisocial.io import sha256_file

PARAMS = {"sample_rate": 16000, "stereo": True, "video_height": 96, "video_fps": 10}
CAMERA_W, CAMERA_H = 64, 48


def make_participant(folder: Path, name: str, freq: int, volume: float, pattern: str) -> tuple[Path, Path]:
    video, audio = folder / f"{name}.mp4", folder / f"{name}.wav"
    base = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
    subprocess.run(
        [
            *base,
            *("-f", "lavfi", "-i", f"{pattern}=size={CAMERA_W}x{CAMERA_H}:rate=10:duration=30"),
            *("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(video)),
        ],
        check=True,
    )
    subprocess.run(
        [
            *base,
            *("-f", "lavfi", "-i", f"sine=frequency={freq}:sample_rate=48000:duration=30"),
            *("-af", f"volume={volume}", "-c:a", "pcm_s16le", str(audio)),
        ],
        check=True,
    )
    return video, audio


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("media")
    video_a, audio_a = make_participant(folder, "pa", 440, 0.5, "testsrc")
    video_b, audio_b = make_participant(folder, "pb", 660, 0.05, "testsrc2")  # 20 dB quieter
    interactions = pd.DataFrame(
        [
            {
                "interaction_id": "V00_S0001_I00000001",
                "participant_a": "P0001",
                "participant_b": "P0002",
                "video_a": video_a.name,
                "audio_a": audio_a.name,
                "video_b": video_b.name,
                "audio_b": audio_b.name,
            }
        ]
    )
    design = pd.DataFrame(
        [
            {
                "dyad_id": "D001",
                "interaction_id": "V00_S0001_I00000001",
                "clip_start": 5.0,
                "clip_end": 25.0,
            }
        ]
    )
    segments = pd.DataFrame(
        [
            ("V00_S0001_I00000001", "a", 3.0, 6.0, "so which one"),
            ("V00_S0001_I00000001", "b", 8.2, 10.0, "the  beach,\nobviously"),
            ("V00_S0001_I00000001", "a", 12.04, 14.0, "really?"),
            ("V00_S0001_I00000001", "b", 26.0, 27.0, "after the clip"),
            ("V00_S0001_I00000002", "a", 8.0, 9.0, "another interaction"),
        ],
        columns=["interaction_id", "speaker", "start", "end", "text"],
    )
    return folder, interactions, design, segments


@pytest.fixture(scope="module")
def rendered(corpus, tmp_path_factory):
    folder, interactions, design, segments = corpus
    out = tmp_path_factory.mktemp("stimuli")
    manifest = render_stimuli(design, interactions, segments, out, PARAMS, media_root=folder)
    return out, manifest


def test_manifest_rows_durations_and_hashes(rendered):
    out, manifest = rendered
    STIMULI_MANIFEST.validate(manifest)
    assert manifest[["modality", "variant", "path"]].values.tolist() == [
        ["text", "transcript", "text/D001.txt"],
        ["audio", "mix", "audio/D001.wav"],
        ["audio", "stereo", "audio_stereo/D001.wav"],
        ["video", "side_by_side", "video/D001.mp4"],
    ]
    assert (manifest["clip_start"] == 5.0).all() and (manifest["clip_end"] == 25.0).all()
    for row in manifest.itertuples():
        assert row.duration_s == pytest.approx(20.0, abs=0.1)
        assert sha256_file(out / row.path) == row.sha256
    assert not [p for p in out.rglob(".*") if p.is_file()]  # no temporary files left


def test_audio_files(rendered):
    out, _ = rendered
    mix, rate = soundfile.read(out / "audio" / "D001.wav")
    assert rate == 16000 and mix.ndim == 1 and len(mix) == 20 * 16000
    stereo, rate = soundfile.read(out / "audio_stereo" / "D001.wav")
    assert rate == 16000 and stereo.shape == (20 * 16000, 2)
    left, right = stereo[:, 0], stereo[:, 1]

    # A (440 Hz) is on the left, B (660 Hz) on the right, and both are balanced in level
    def peak_hz(x):
        return np.argmax(np.abs(np.fft.rfft(x))) * rate / len(x)

    assert peak_hz(left) == pytest.approx(440, abs=2) and peak_hz(right) == pytest.approx(660, abs=2)
    rms = [np.sqrt(np.mean(c**2)) for c in (left, right)]
    assert rms[0] == pytest.approx(rms[1], rel=0.05)
    assert np.max(np.abs(mix)) < 1.0


def test_video_side_by_side(rendered):
    out, _ = rendered
    info = ffmpeg.probe(str(out / "video" / "D001.mp4"))
    streams = {s["codec_type"]: s for s in info["streams"]}
    camera_w = round(CAMERA_W * PARAMS["video_height"] / CAMERA_H / 2) * 2
    assert int(streams["video"]["width"]) == 2 * camera_w
    assert int(streams["video"]["height"]) == PARAMS["video_height"]
    assert streams["video"]["codec_name"] == "h264" and streams["video"]["pix_fmt"] == "yuv420p"
    assert streams["video"]["avg_frame_rate"] == "10/1"
    assert streams["audio"]["codec_name"] == "aac" and int(streams["audio"]["channels"]) == 1


def test_transcript(rendered):
    out, _ = rendered
    lines = (out / "text" / "D001.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [
        "[00:00.0] A: so which one",
        "[00:03.2] B: the beach, obviously",
        "[00:07.0] A: really?",
    ]
    assert transcript_text(None, "x", 0.0, 1.0) == ""
    assert clock(61.26) == "01:01.3"
    assert clock(0.04) == "00:00.0" and clock(599.96) == "10:00.0"


def test_same_inputs_same_manifest(corpus, rendered, tmp_path):
    folder, interactions, design, segments = corpus
    _, first = rendered
    again = render_stimuli(design, interactions, segments, tmp_path, PARAMS, media_root=folder)
    pd.testing.assert_frame_equal(first, again)


def test_balance_gains_equalises_and_limits():
    t = np.linspace(0, 1, 16000, endpoint=False)
    loud, quiet = 0.8 * np.sin(2 * np.pi * 440 * t), 0.008 * np.sin(2 * np.pi * 660 * t)
    ga, gb = balance_gains(loud, quiet)
    assert ga * 0.8 == pytest.approx(gb * 0.008, rel=1e-3)  # equal level (within the 20 dB bound)
    assert np.max(np.abs(ga * loud + gb * quiet)) / 2 <= 0.98 + 1e-6
    assert balance_gains(loud, np.zeros(16000)) == (1.0, 1.0)  # a silent track is not boosted
    # a speaker who talks a quarter of the time at the same level is not boosted for the pauses
    sparse = np.where(t < 0.25, 0.8, 0.0) * np.sin(2 * np.pi * 660 * t)
    assert balance_gains(loud, sparse) == pytest.approx((1.0, 1.0), rel=0.02)


def test_missing_media_names_the_dyad(corpus, tmp_path):
    folder, interactions, design, segments = corpus
    broken = interactions.assign(audio_b="missing.wav")
    with pytest.raises(StimulusError, match=r"dyad D001: audio_b file .*missing\.wav does not exist"):
        render_stimuli(design, broken, segments, tmp_path, PARAMS, media_root=folder)
    (folder / "corrupt.wav").write_bytes(b"RIFF not really a wav")
    corrupt = interactions.assign(audio_b="corrupt.wav")
    with pytest.raises(StimulusError, match=r"dyad D001: ffmpeg failed .*corrupt\.wav"):
        render_stimuli(design, corrupt, segments, tmp_path, PARAMS, media_root=folder)


def test_wav_and_mp4_durations_are_ffprobes(rendered):
    """The audio rows' duration (from the WAV header) and the video's (from the MP4, probed in
    process) are ffprobe's container duration."""
    out, manifest = rendered
    media = manifest[manifest["modality"].isin(["audio", "video"])]
    assert len(media) == 3
    for row in media.itertuples():
        probed = round(float(ffmpeg.probe(str(out / row.path))["format"]["duration"]), 6)
        assert row.duration_s == probed


def test_level_window_read_in_process_is_ffmpegs_decode(tmp_path):
    """A mono 16-bit WAV at the output rate is read without ffmpeg: the same samples as its decode."""
    from omnisocial.familiarity import stimuli

    rng = np.random.default_rng(3)
    path = tmp_path / "mic.wav"
    soundfile.write(path, rng.uniform(-0.5, 0.5, 3 * 16000), 16000, subtype="PCM_16")

    def ffmpeg_decode(start: float, duration: float) -> np.ndarray:
        stream = stimuli._window_input(str(path), start, duration).output(
            "pipe:", format="f32le", ac=1, ar=16000
        )
        return np.frombuffer(stimuli._run("D", "decode", stream), "<f4")

    for start, duration in ((0.0, 1.0), (1.237, 0.5), (2.5, 2.0)):  # the last runs past the end
        direct = stimuli._read_wav_window(str(path), start, duration, 16000)
        assert direct is not None and direct.dtype == np.float32
        assert np.array_equal(direct, ffmpeg_decode(start, duration)), (start, duration)
        assert np.array_equal(stimuli._decode("D", str(path), start, duration, 16000), direct)
    assert stimuli._read_wav_window(str(path), 1.00001, 0.5, 16000) is None  # between samples
    assert stimuli._read_wav_window(str(path), 0.0, 1.0, 48000) is None  # needs resampling
    assert len(stimuli._decode("D", str(path), 1.00001, 0.5, 16000)) == pytest.approx(8000, abs=1)
