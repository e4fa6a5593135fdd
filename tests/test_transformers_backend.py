"""TransformersBackend on tiny random-weight models built offline in the test (CPU, seconds)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import soundfile as sf

from omnisocial.models.base import Request
from omnisocial.models.tiny import build_tiny_chat, build_tiny_qwen2_audio, write_tone_wav
from omnisocial.models.transformers_backend import (
    TransformersBackend,
    load_audio,
    load_video_frames,
    weights_fingerprint,
)

PROMPT = "Do the two people know each other ? Answer in JSON with relationship_label and confidence"


@pytest.fixture(scope="module")
def qwen2_audio_dir(tmp_path_factory):
    return build_tiny_qwen2_audio(tmp_path_factory.mktemp("tiny_qwen2_audio"), seed=0)


@pytest.fixture(scope="module")
def wavs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wavs")
    return [
        write_tone_wav(folder / "a.wav", seconds=1.5, frequency=220.0),
        write_tone_wav(folder / "b.wav", seconds=2.0, frequency=440.0),
    ]


def _audio_requests(wavs):
    return [
        Request(item_id="d1", prompt=PROMPT, media={"audio": wavs[0]}),
        Request(item_id="d2", prompt=PROMPT, media={"audio": wavs[1]}),
        Request(
            item_id="d3",
            prompt="they talk fast",
            system="You are a helpful assistant.",
            media={"audio": wavs[0]},
        ),
    ]


def test_qwen2_audio_generates_deterministic_strings(qwen2_audio_dir, wavs):
    settings = {"max_new_tokens": 6, "seed": 42}
    first = TransformersBackend(
        qwen2_audio_dir, "qwen2_audio", generation=settings, device="cpu", batch_size=2
    )
    replies = first.generate(_audio_requests(wavs))
    assert [r.error for r in replies] == [None, None, None]
    assert all(isinstance(r.text, str) for r in replies)
    assert all(r.model_version.startswith("qwen2_audio:") for r in replies)
    assert first.sampling_rate == 16000 and first.device == "cpu"

    # a fresh instance loads the same folder again and must say exactly the same things
    second = TransformersBackend(
        qwen2_audio_dir, "qwen2_audio", generation=settings, device="cpu", batch_size=2
    )
    again = second.generate(_audio_requests(wavs))
    assert [r.text for r in again] == [r.text for r in replies]
    assert first.fingerprint() == second.fingerprint() == weights_fingerprint(qwen2_audio_dir)
    # left padding is right: one at a time gives the same greedy text as batches of two
    single = TransformersBackend(
        qwen2_audio_dir, "qwen2_audio", generation=settings, device="cpu", batch_size=1
    )
    assert [r.text for r in single.generate(_audio_requests(wavs))] == [r.text for r in replies]
    assert len(first.fingerprint()) == 64


def test_fingerprint_tracks_weights(qwen2_audio_dir, tmp_path):
    other = build_tiny_qwen2_audio(tmp_path / "other", seed=1)
    assert weights_fingerprint(other) != weights_fingerprint(qwen2_audio_dir)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError):
        weights_fingerprint(empty)  # no weight files there


def test_bad_item_is_an_error_reply_not_a_crash(qwen2_audio_dir, wavs, tmp_path):
    backend = TransformersBackend(
        qwen2_audio_dir, "qwen2_audio", generation={"max_new_tokens": 4}, device="cpu", batch_size=4
    )
    requests = [
        Request(item_id="ok", prompt=PROMPT, media={"audio": wavs[0]}),
        Request(item_id="missing", prompt=PROMPT, media={"audio": tmp_path / "nope.wav"}),
        Request(item_id="video", prompt=PROMPT, media={"video": tmp_path / "x.mp4"}),
        Request(item_id="hot", prompt=PROMPT, media={"audio": wavs[1]}, settings={"temperature": 0.7}),
        Request(item_id="text", prompt=PROMPT),
    ]
    replies = backend.generate(requests)
    assert replies[0].ok and isinstance(replies[0].text, str)
    assert not replies[1].ok and "FileNotFoundError" in replies[1].error and replies[1].text is None
    assert not replies[2].ok and "does not take video" in replies[2].error
    assert not replies[3].ok and "temperature" in replies[3].error
    assert replies[4].ok and isinstance(replies[4].text, str)  # text-only through the audio model


def test_unloadable_model_gives_error_replies(tmp_path):
    backend = TransformersBackend(tmp_path / "absent", "chat", device="cpu")
    replies = backend.generate([Request(item_id="a", prompt="hi"), Request(item_id="b", prompt="yo")])
    assert [r.ok for r in replies] == [False, False]
    assert all("loading" in r.error for r in replies)


@pytest.mark.parametrize("architecture", ["qwen2", "llama"])
def test_chat_family(tmp_path, architecture):
    folder = build_tiny_chat(tmp_path / architecture, seed=3, architecture=architecture)
    requests = [
        Request(item_id="t1", prompt="A: they laugh B: yes " + PROMPT, system="You are a helpful assistant."),
        Request(item_id="t2", prompt="A: I think so B: no"),
    ]
    runs = []
    for _ in range(2):
        backend = TransformersBackend(
            folder, "chat", generation={"max_new_tokens": 5}, device="cpu", batch_size=2
        )
        replies = backend.generate(requests)
        assert all(r.ok and isinstance(r.text, str) for r in replies)
        runs.append(([r.text for r in replies], backend.fingerprint()))
    assert runs[0] == runs[1]


def test_constructor_rejects_bad_settings(tmp_path):
    with pytest.raises(ValueError, match="family"):
        TransformersBackend(tmp_path, "gpt")
    with pytest.raises(ValueError, match="cannot take modality"):
        TransformersBackend(tmp_path, "chat", modalities=("audio",))
    with pytest.raises(ValueError, match="temperature"):
        TransformersBackend(tmp_path, "chat", generation={"temperature": 1.0})


def test_load_audio_downmixes_and_resamples(tmp_path):
    rate = 48000
    t = np.arange(rate) / rate
    stereo = np.stack([0.5 * np.sin(2 * np.pi * 300 * t), np.zeros_like(t)], axis=1)
    sf.write(tmp_path / "s.wav", stereo.astype(np.float32), rate)
    mono = load_audio(tmp_path / "s.wav", 16000)
    assert mono.dtype == np.float32 and mono.ndim == 1 and abs(mono.size - 16000) <= 1
    assert 0.2 < np.abs(mono).max() < 0.3  # the average of a 0.5 tone and silence


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")
def test_audio_track_of_an_mp4(tmp_path, wavs):
    mp4 = tmp_path / "clip.mp4"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "color=c=gray:s=64x48:r=10:d=2",
         "-i", str(wavs[1]), "-shortest", "-c:v", "mpeg4", "-c:a", "aac", str(mp4)],
        check=True,
    )  # fmt: skip
    signal = load_audio(mp4, 16000)
    assert abs(signal.size / 16000 - 2.0) < 0.1
    # the 440 Hz tone survives the AAC round trip
    window = signal[2000:18000]
    peak_hz = np.argmax(np.abs(np.fft.rfft(window))) * 16000 / window.size
    assert abs(peak_hz - 440) < 5
    frames = load_video_frames(mp4, fps=2.0)
    assert frames.dtype == np.uint8 and frames.shape[1:] == (48, 64, 3)
    assert frames.shape[0] % 2 == 0 and 4 <= frames.shape[0] <= 6


def test_registry_entry_and_runner(qwen2_audio_dir, wavs, tmp_path):
    from omnisocial.models.registry import build_backend
    from omnisocial.models.runner import run_inference

    entry = {
        "name": "tiny-qwen2-audio",
        "backend": "transformers",
        "model": str(qwen2_audio_dir),
        "modalities": ["text", "audio"],
        "generation": {"max_new_tokens": 4},
        "options": {"family": "qwen2_audio", "device": "cpu", "batch_size": 2},
    }
    backend = build_backend(entry)
    assert isinstance(backend, TransformersBackend)
    assert (backend.name, backend.family, backend.batch_size, backend.modalities) == (
        "tiny-qwen2-audio",
        "qwen2_audio",
        2,
        ("text", "audio"),
    )
    requests = _audio_requests(wavs)
    first = run_inference(backend, requests, tmp_path / "replies.jsonl", progress=False)
    assert first["ok"].all() and not first["cached"].any()
    again = run_inference(backend, requests, tmp_path / "replies.jsonl", progress=False)
    assert again["cached"].all() and again["text"].tolist() == first["text"].tolist()
    with pytest.raises(ValueError, match="options.family"):
        TransformersBackend({**entry, "options": {}})
