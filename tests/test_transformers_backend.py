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
    assert first.fingerprint() == second.fingerprint()
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


# --- correctness checks ------------------------------------------------------------------


def test_qwen2_5_omni_needs_transformers_5_23():
    from omnisocial.models.transformers_backend import check_transformers_version

    with pytest.raises(RuntimeError, match=r"transformers>=5\.23\.0 \(found 5\.22\.1\).*0 audio tokens"):
        check_transformers_version("qwen2_5_omni", "5.22.1")
    with pytest.raises(RuntimeError, match="transformers>=5.23"):
        check_transformers_version("qwen2_5_omni", "4.57.6")
    check_transformers_version("qwen2_5_omni", "5.23.0")
    check_transformers_version("qwen2_5_omni", "5.24.0.dev0")
    check_transformers_version("qwen2_audio", "4.57.6")  # no floor for the others


def test_old_transformers_refused_at_load(monkeypatch, tmp_path):
    import transformers

    import omnisocial.models.transformers_backend as tb

    monkeypatch.setattr(transformers, "__version__", "5.22.0")
    monkeypatch.setattr(tb, "check_family_packages", lambda family: None)
    backend = TransformersBackend(tmp_path / "absent", "qwen2_5_omni", device="cpu")
    reply = backend.generate([Request(item_id="a", prompt="hi")])[0]
    assert not reply.ok and "needs transformers>=5.23.0" in reply.error


def test_video_prompt_without_audio_tokens_is_refused():
    import torch

    from omnisocial.models.transformers_backend import check_audio_tokens

    ids = torch.tensor([[5, 7, 7, 9], [5, 9, 9, 9]])
    check_audio_tokens(ids[:1], 7, ["D001"])
    with pytest.raises(RuntimeError, match="D002 holds 0 audio tokens"):
        check_audio_tokens(ids, 7, ["D001", "D002"])


def test_voxtral_without_mistral_common_fails_at_load_saying_what_to_install(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mistral_common" else real(name, *a)
    )
    backend = TransformersBackend(tmp_path / "absent", "voxtral", device="cpu")
    with pytest.raises(ImportError, match=r"mistral-common\[audio\]==1\.12\.0.*venv-voxtral"):
        backend.load()
    reply = backend.generate([Request(item_id="a", prompt="hi")])[0]
    assert not reply.ok and "mistral-common" in reply.error


def test_greedy_ignores_the_checkpoints_sampling_fields(qwen2_audio_dir, wavs):
    from omnisocial.models.tiny import RELEASED_SAMPLING

    backend = TransformersBackend(
        qwen2_audio_dir, "qwen2_audio", generation={"max_new_tokens": 3}, device="cpu"
    )
    backend.load()
    config = backend._model.generation_config
    assert config.do_sample is False and config.num_beams == 1
    assert (
        config.repetition_penalty in (None, 1.0)
        and config.top_k in (None, 50)
        and config.temperature in (None, 1.0)
    )
    assert config.eos_token_id == backend._tokenizer.eos_token_id  # token ids are kept
    assert backend.dropped_generation == RELEASED_SAMPLING
    settings = backend.settings_for(Request(item_id="x", prompt="p"))
    assert settings["checkpoint_generation_ignored"]["repetition_penalty"] == 1.1
    assert settings["do_sample"] is False and settings["attn_implementation"] == "default"


@pytest.mark.parametrize(
    "edit",
    ["generation_config.json", "processor_config.json", "chat_template.jinja", "tokenizer_config.json"],
)
def test_fingerprint_covers_generation_processor_and_template(qwen2_audio_dir, tmp_path, edit):
    folder = tmp_path / "copy"
    shutil.copytree(qwen2_audio_dir, folder)
    before = TransformersBackend(folder, "qwen2_audio").fingerprint()
    target = folder / edit
    assert target.is_file(), sorted(p.name for p in folder.iterdir())
    target.write_text(target.read_text().replace("}", ' , "edited": 1}', 1) if edit.endswith("json") else "x")
    after = TransformersBackend(folder, "qwen2_audio").fingerprint()
    assert before != after
    assert weights_fingerprint(folder) == weights_fingerprint(qwen2_audio_dir)  # only the config moved
    sdpa = TransformersBackend(folder, "qwen2_audio", attn_implementation="sdpa").fingerprint()
    assert sdpa != after


def test_attn_implementation_is_a_registry_option(qwen2_audio_dir):
    from omnisocial.models.registry import validate_entry

    entry = {
        "name": "tiny",
        "backend": "transformers",
        "model": str(qwen2_audio_dir),
        "options": {"family": "qwen2_audio", "attn_implementation": "sdpa", "device": "cpu"},
    }
    validate_entry(entry)
    backend = TransformersBackend(entry)
    assert backend.attn_implementation == "sdpa"
    backend.load()
    assert backend._model.config._attn_implementation == "sdpa"
    with pytest.raises(Exception, match="flash_attention_3|attn_implementation"):
        validate_entry(
            {**entry, "options": {"family": "qwen2_audio", "attn_implementation": "flash_attention_3"}}
        )
    with pytest.raises(ValueError, match="attn_implementation"):
        TransformersBackend(qwen2_audio_dir, "qwen2_audio", attn_implementation="fast")


def test_chat_prompt_tokens_survive(tmp_path):
    """The familiarity prompt reaches the model whole (the old word-level fixture mapped it to [UNK]s)."""
    from omnisocial.prompt_templates import render_prompt

    folder = build_tiny_chat(tmp_path / "chat", seed=3)
    backend = TransformersBackend(folder, "chat", generation={"max_new_tokens": 2}, device="cpu")
    backend.load()
    prompt, _ = render_prompt("familiarity", "text", "v1", transcript="[00:00.0] A: Hi there.")
    request = Request(item_id="t", prompt=prompt, system="You are a helpful assistant.")
    inputs, _ = backend._inputs([backend._prepare(0, request)])
    ids = inputs["input_ids"][0].tolist()
    prompt_ids = backend._tokenizer.encode(prompt, add_special_tokens=False)
    assert len(prompt_ids) == len(prompt.encode("utf-8"))  # byte-level: nothing is lost
    assert any(ids[i : i + len(prompt_ids)] == prompt_ids for i in range(len(ids)))
    assert prompt in backend._tokenizer.decode(ids)


# --- frame lists (local judges of the streaming tasks) ----------------------------------


@pytest.fixture(scope="module")
def image_text_dir(tmp_path_factory):
    from omnisocial.models.tiny import build_tiny_image_text

    return build_tiny_image_text(tmp_path_factory.mktemp("tiny_image_text"), seed=0)


def _frame_request(paths, item_id="w1", reverse_keys=False):
    from omnisocial.judges.replies import FRAME_KEY

    keyed = [(FRAME_KEY.format(k), path) for k, path in enumerate(paths)]
    if reverse_keys:  # a dict built in another order: the frames still go in key (time) order
        keyed = keyed[::-1]
    return Request(item_id=item_id, prompt="Is the sentence true of these frames?", media=dict(keyed))


def test_image_text_takes_a_frame_list_in_time_order(image_text_dir, tmp_path):
    from PIL import Image

    from omnisocial.models.tiny import write_frames

    paths = write_frames(tmp_path / "frames", 3)
    settings = {"max_new_tokens": 5}
    backend = TransformersBackend(image_text_dir, "image_text", generation=settings, device="cpu")
    prepared = backend._prepare(0, _frame_request(paths, reverse_keys=True))
    assert prepared.kind == "frames" and len(prepared.frames) == 3
    for frame, path in zip(prepared.frames, paths, strict=True):
        assert np.array_equal(np.asarray(frame), np.asarray(Image.open(path).convert("RGB")))
    backend.load()
    inputs, _ = backend._inputs([prepared])
    image_token = backend._tokenizer.convert_tokens_to_ids("<|IMAGE|>")
    # 3 frames x 4 patch tokens (28 px / 14 px patches, CLS dropped): every frame reached the prompt
    assert int((inputs["input_ids"] == image_token).sum()) == 3 * 4
    assert tuple(inputs["pixel_values"].shape) == (3, 3, 28, 28)

    requests = [_frame_request(paths, "w1"), _frame_request(paths[:2], "w2")]
    replies = backend.generate(requests)
    assert [r.error for r in replies] == [None, None] and all(isinstance(r.text, str) for r in replies)
    again = TransformersBackend(image_text_dir, "image_text", generation=settings, device="cpu", batch_size=2)
    assert [r.text for r in again.generate(requests)] == [r.text for r in replies]


def test_frame_lists_refused_where_a_family_takes_no_images(qwen2_audio_dir, tmp_path):
    from omnisocial.models.tiny import write_frames

    paths = write_frames(tmp_path / "frames", 2)
    audio = TransformersBackend(qwen2_audio_dir, "qwen2_audio", device="cpu")
    with pytest.raises(ValueError, match=r"does not take images \(2 frames\)"):
        audio._prepare(0, _frame_request(paths))
    text_only = TransformersBackend(tmp_path, "image_text", modalities=["text"], device="cpu")
    with pytest.raises(ValueError, match="images"):
        text_only._prepare(0, _frame_request(paths))
    missing = TransformersBackend(tmp_path, "image_text", device="cpu")
    with pytest.raises(FileNotFoundError, match="frame file not found"):
        missing._prepare(0, _frame_request([tmp_path / "nope.jpg"]))


def test_qwen2_5_omni_frame_list_layout(tmp_path):
    """The omni thinker gets one image part per frame, then the prompt (its processor runs in
    .venv-omni: tests/test_local_models.py generates from it)."""
    from omnisocial.models.tiny import write_frames
    from omnisocial.models.transformers_backend import QWEN_OMNI_SYSTEM

    paths = write_frames(tmp_path / "frames", 3)
    backend = TransformersBackend(tmp_path, "qwen2_5_omni", device="cpu")
    prepared = backend._prepare(0, _frame_request(paths))
    assert prepared.kind == "frames" and prepared.audio is None
    system, user = backend._conversation(prepared)
    assert system["content"][0]["text"] == QWEN_OMNI_SYSTEM
    assert [part["type"] for part in user["content"]] == ["image", "image", "image", "text"]


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")
def test_local_judge_scores_rtd_temporal_windows_from_frames(image_text_dir, tmp_path):
    """The judges' own request path (stream_jobs -> run_judge -> runner) on a local frames judge."""
    import pandas as pd

    from omnisocial.duplexeval.judge_requests import judge_specs
    from omnisocial.judges.llm import run_judge, stream_jobs

    video = tmp_path / "clip.mp4"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=6",
         "-pix_fmt", "yuv420p", str(video)],
        check=True,
    )  # fmt: skip
    entry = {
        "name": "tiny-vlm-judge",
        "backend": "transformers",
        "model": str(image_text_dir),
        "modalities": ["text", "video"],
        "generation": {"max_new_tokens": 4},
        "options": {"family": "image_text", "device": "cpu"},
    }
    items = pd.DataFrame(
        [{"split": "RTD_counting", "item_id": "c1", "video": str(video), "video_duration": 6.0,
          "question_text": "Count the squares.", "answer1": "", "answer2": ""}]
    )  # fmt: skip
    responses = pd.DataFrame(
        [{"model": "m", "split": "RTD_counting", "item_id": "c1", "sentence_index": k, "start": s, "end": e,
          "text": f"sentence {k}"} for k, (s, e) in enumerate([(1.0, 3.0), (3.0, 5.0)])]
    )  # fmt: skip
    specs = judge_specs(["rtd_temporal"], responses, items, tmp_path, fps=2.0)
    jobs = stream_jobs(specs, entry, tmp_path / "frames")
    # judge windows (max(0, s - 2), max(ws + 0.5, e - 2)): (0, 1) and (1, 3) s, at 2 fps
    assert [len(job.request.media) for job in jobs] == [2, 4]
    table = run_judge(entry, jobs, tmp_path / "judge.jsonl")
    assert table["ok"].all() and table["n_media"].tolist() == [2, 4]
    assert not table["cached"].any()
    again = run_judge(entry, jobs, tmp_path / "judge.jsonl")
    assert again["cached"].all() and again["reply"].tolist() == table["reply"].tolist()


def test_reuse_prefix_is_an_image_text_registry_option(image_text_dir):
    from omnisocial.models.entries import validate_entry
    from omnisocial.models.registry import build_backend

    entry = {
        "name": "tiny-vlm",
        "backend": "transformers",
        "model": str(image_text_dir),
        "modalities": ["text", "video"],
        "options": {"family": "image_text", "device": "cpu", "reuse_prefix": True},
    }
    backend = build_backend(validate_entry(entry))
    assert backend.reuse_prefix and backend.family == "image_text"
    plain = build_backend(validate_entry({**entry, "options": {"family": "image_text", "device": "cpu"}}))
    assert not plain.reuse_prefix and plain.fingerprint() != backend.fingerprint()
    with pytest.raises(ValueError, match="reuses nothing"):
        TransformersBackend(image_text_dir, "qwen2_audio", reuse_prefix=True)
    with pytest.raises(ValueError, match="true or false"):
        TransformersBackend({**entry, "options": {"family": "image_text", "reuse_prefix": "yes"}})
