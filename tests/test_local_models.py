"""The study's three local model families end to end on tiny random-weight checkpoints.

Each family runs the real request path (`build_requests` with the familiarity prompt
templates -> `run_inference` -> `TransformersBackend`) on one dyad of the demo's real stimuli
(tests/data/demo_stimulus: the workflow's side-by-side mp4 and transcript of dyad D001; the
mix WAV is the mp4's audio track, decoded here with ffmpeg). The checkpoints are built with
the released models' processor classes and 128 mel bins (`omnisocial.models.tiny`).

Where each family runs (`make test-local-models`):
- Qwen2-Audio: the main venv (`make test`) and .venv-omni;
- Qwen2.5-Omni: .venv-omni (torchvision; torch 2.14.1 + torchvision 0.29.1);
- Voxtral: .venv-voxtral (mistral-common 1.12.0, numpy 2.3.5).
A family whose package is missing in the running venv is skipped, never faked.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from omnisocial.models.base import Request
from omnisocial.models.transformers_backend import TransformersBackend

pytestmark = [
    pytest.mark.local_models,
    pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed"),
]
DATA = Path(__file__).parent / "data" / "demo_stimulus"
HAS_TORCHVISION = importlib.util.find_spec("torchvision") is not None
HAS_MISTRAL = importlib.util.find_spec("mistral_common") is not None


def _sha(path: Path) -> str:
    from omnisocial.io import sha256_file

    return sha256_file(path)


@pytest.fixture(scope="module")
def stimuli(tmp_path_factory):
    """A one-dyad stimuli folder in the workflow's layout (manifest.csv + media/), and its design."""
    root = tmp_path_factory.mktemp("stimuli")
    media = {"text": root / "media/text/D001.txt", "audio": root / "media/audio/D001.wav"}
    media["video"] = root / "media/video/D001.mp4"
    for path in media.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "D001.txt", media["text"])
    shutil.copy(DATA / "D001.mp4", media["video"])
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", str(media["video"]), "-vn", "-ac", "1", "-ar", "16000",
         "-c:a", "pcm_s16le", str(media["audio"])],
        check=True,
    )  # fmt: skip
    variants = {"text": "transcript", "audio": "mix", "video": "side_by_side"}
    manifest = pd.DataFrame(
        [
            {
                "dyad_id": "D001",
                "modality": modality,
                "variant": variants[modality],
                "path": path.relative_to(root).as_posix(),
                "duration_s": 18.3,
                "sha256": _sha(path),
                "clip_start": 84.972,
                "clip_end": 103.246,
            }
            for modality, path in media.items()
        ]
    )
    design = pd.DataFrame(
        [
            {
                "dyad_id": "D001",
                "interaction_id": "V00_S2503_I00000589",
                "cell": "V00|familiar|female-female",
                "site": "V00",
                "relationship": "familiar",
                "gender_mix": "female-female",
                "position": "late",
                "clip_start": 84.972,
                "clip_end": 103.246,
                "n_turns": 7,
                "participant_a": "P1675",
                "participant_b": "P6435",
            }
        ]
    )
    return root, manifest, design


def _run_family(folder: Path, family: str, modalities, stimuli, tmp_path, batch_size: int = 2):
    from omnisocial.familiarity.inference import build_requests
    from omnisocial.models.runner import run_inference

    root, manifest, design = stimuli
    entry = {
        "name": f"tiny-{family}",
        "backend": "transformers",
        "model": str(folder),
        "modalities": list(modalities),
        "generation": {"max_new_tokens": 4},
        "options": {"family": family, "device": "cpu", "batch_size": batch_size},
    }
    planned = build_requests(entry, manifest, design, root, modalities, ["v1", "v2"])
    requests = [request for _, request in planned]
    assert sorted({p.modality for p, _ in planned}) == sorted(modalities)
    backend = TransformersBackend(entry)
    frame = run_inference(backend, requests, tmp_path / "cache.jsonl", progress=False)
    errors = frame.loc[~frame["ok"], "error"].tolist()
    assert frame["ok"].all(), errors
    again = run_inference(TransformersBackend(entry), requests, tmp_path / "cache.jsonl", progress=False)
    assert again["cached"].all()  # same weights, configs and options: the cache answers
    return backend, requests, frame


def _prompt_survives(backend: TransformersBackend, request: Request, kind: str) -> dict:
    """The rendered familiarity prompt's own tokens are in the model input, in order."""
    item = backend._prepare(0, request)
    assert item.kind == kind
    inputs, generate_kwargs = backend._inputs([item])
    ids = inputs["input_ids"][0].tolist()
    prompt_ids = backend._tokenizer.encode(request.prompt, add_special_tokens=False)
    assert len(prompt_ids) > 50  # the whole prompt, not a couple of unknown-word tokens
    assert any(ids[i : i + len(prompt_ids)] == prompt_ids for i in range(len(ids))), (
        f"prompt tokens missing from the input ({len(ids)} ids)"
    )
    return {"inputs": inputs, "generate_kwargs": generate_kwargs}


@pytest.mark.heavy  # a tiny Qwen2-Audio built and run (about 5 CPU-s)
def test_qwen2_audio_end_to_end(tmp_path_factory, stimuli, tmp_path):
    from omnisocial.models.tiny import MEL_BINS, build_tiny_qwen2_audio

    folder = build_tiny_qwen2_audio(tmp_path_factory.mktemp("qwen2_audio"))
    backend, requests, frame = _run_family(folder, "qwen2_audio", ["text", "audio"], stimuli, tmp_path)
    assert type(backend._processor).__name__ == "Qwen2AudioProcessor"
    assert backend._processor.feature_extractor.feature_size == MEL_BINS
    audio_request = next(r for r in requests if "audio" in r.media)
    pieces = _prompt_survives(backend, audio_request, "audio")
    audio_id = backend._model.config.audio_token_id
    assert int((pieces["inputs"]["input_ids"] == audio_id).sum()) > 100  # 18 s of audio tokens
    text_request = next(r for r in requests if not r.media)
    _prompt_survives(backend, text_request, "text")


@pytest.mark.skipif(not HAS_TORCHVISION, reason="Qwen2.5-Omni needs torchvision: runs in .venv-omni")
def test_qwen2_5_omni_end_to_end(tmp_path_factory, stimuli, tmp_path):
    from omnisocial.models.tiny import MEL_BINS, build_tiny_qwen2_5_omni

    folder = build_tiny_qwen2_5_omni(tmp_path_factory.mktemp("qwen2_5_omni"))
    backend, requests, frame = _run_family(
        folder, "qwen2_5_omni", ["text", "audio", "video"], stimuli, tmp_path, batch_size=1
    )
    assert type(backend._processor).__name__ == "Qwen2_5OmniProcessor"
    assert backend._processor.feature_extractor.feature_size == MEL_BINS
    assert type(backend._model).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    config = backend._model.config
    video_request = next(r for r in requests if "video" in r.media)
    pieces = _prompt_survives(backend, video_request, "video")
    ids = pieces["inputs"]["input_ids"]
    assert pieces["generate_kwargs"] == {"use_audio_in_video": True}
    # the audio track of the video reaches the prompt: ~25 audio tokens per second of the 18 s clip
    assert int((ids == config.audio_token_id).sum()) > 300
    assert int((ids == config.video_token_id).sum()) > 0
    audio_request = next(r for r in requests if "audio" in r.media)
    _prompt_survives(backend, audio_request, "audio")
    _prompt_survives(backend, next(r for r in requests if not r.media), "text")


@pytest.mark.skipif(not HAS_TORCHVISION, reason="Qwen2.5-Omni needs torchvision: runs in .venv-omni")
def test_qwen2_5_omni_refuses_a_video_prompt_without_audio(tmp_path_factory, stimuli, monkeypatch):
    """What transformers < 5.23 did: the processor drops the video's audio; the call must fail."""
    from omnisocial.models.tiny import build_tiny_qwen2_5_omni

    root, _, _ = stimuli
    folder = build_tiny_qwen2_5_omni(tmp_path_factory.mktemp("qwen2_5_omni_noaudio"))
    backend = TransformersBackend(folder, "qwen2_5_omni", generation={"max_new_tokens": 2}, device="cpu")
    backend.load()
    processor = backend._processor
    original = type(processor).__call__

    def dropping(self, *args, **kwargs):
        kwargs.pop("audio", None)
        kwargs["load_audio_from_video"] = False
        kwargs.pop("audio_from_video_indices", None)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(processor), "__call__", dropping)
    request = Request("D001", "Do they know each other?", media={"video": root / "media/video/D001.mp4"})
    reply = backend.generate([request])[0]
    assert not reply.ok and "0 audio tokens" in reply.error


@pytest.mark.skipif(not HAS_MISTRAL, reason="Voxtral needs mistral-common: runs in .venv-voxtral")
def test_voxtral_end_to_end(tmp_path_factory, stimuli, tmp_path):
    from omnisocial.models.tiny import MEL_BINS, build_tiny_voxtral

    folder = build_tiny_voxtral(tmp_path_factory.mktemp("voxtral"))
    backend, requests, frame = _run_family(folder, "voxtral", ["text", "audio"], stimuli, tmp_path)
    assert type(backend._processor).__name__ == "VoxtralProcessor"
    assert backend._processor.feature_extractor.feature_size == MEL_BINS
    assert type(backend._tokenizer).__name__ == "MistralCommonBackend"
    audio_request = next(r for r in requests if "audio" in r.media)
    pieces = _prompt_survives(backend, audio_request, "audio")
    audio_id = backend._model.config.audio_token_id
    assert int((pieces["inputs"]["input_ids"] == audio_id).sum()) > 100
    _prompt_survives(backend, next(r for r in requests if not r.media), "text")


@pytest.mark.skipif(not HAS_TORCHVISION, reason="Qwen2.5-Omni needs torchvision: runs in .venv-omni")
def test_qwen2_5_omni_judges_a_frame_list(tmp_path_factory, tmp_path):
    """A judge window's frames (image:000, ...) reach the omni thinker as images and it answers."""
    from omnisocial.judges.replies import FRAME_KEY
    from omnisocial.models.tiny import build_tiny_qwen2_5_omni, write_frames

    folder = build_tiny_qwen2_5_omni(tmp_path_factory.mktemp("qwen2_5_omni_frames"))
    paths = write_frames(tmp_path / "frames", 4)
    media = {FRAME_KEY.format(k): path for k, path in enumerate(paths)}
    request = Request(item_id="w", prompt="Is the sentence true of these frames?", media=media)
    backend = TransformersBackend(folder, "qwen2_5_omni", generation={"max_new_tokens": 4}, device="cpu")
    reply = backend.generate([request])[0]
    assert reply.error is None and isinstance(reply.text, str)
    inputs, _ = backend._inputs([backend._prepare(0, request)])
    assert int((inputs["input_ids"] == backend._model.config.image_token_id).sum()) > 0
    assert inputs["image_grid_thw"].shape[0] == 4  # one grid per frame
