"""Tiny local checkpoints streamed through the streaming driver (main venv, CPU): every step a
real generate call; gibberish replies are unparsed steps, counted, never read as silence."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from test_streaming import parse_yes_no

from omnisocial.streaming import (
    UNPARSED,
    Schedule,
    StreamItem,
    StreamProtocol,
    cut_segments,
    first_utterances,
    stream,
)

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> tuple[Path, Path]:
    """Two 5 s clips (testsrc / testsrc2, 64x48, 10 fps) with a 440 / 660 Hz sine, H.264 + AAC."""
    folder = tmp_path_factory.mktemp("clips")
    paths = []
    for source, hz in (("testsrc", 440), ("testsrc2", 660)):
        path = folder / f"{source}.mp4"
        subprocess.run(
            ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"{source}=size=64x48:rate=10",
             "-f", "lavfi", "-i", f"sine=frequency={hz}:sample_rate=16000", "-t", "5",
             "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", str(path)],
            check=True, capture_output=True,
        )  # fmt: skip
        paths.append(path)
    return tuple(paths)


def prompt(item, t, history):
    return "", f"The clip runs up to t = {t:.3f} s. Should you speak now? Answer YES or NO."


WHEN = StreamProtocol("when", prompt, parse_yes_no, stop_at_first=True, settings={"max_new_tokens": 4})


def _items(clips, root, modality):
    items = [StreamItem("c1", clips[0], Schedule(1, 4)), StreamItem("c2", clips[1], Schedule(2, 4))]
    for item in items:
        cut_segments(item, None, root, modality)
    return items


# 6.5 CPU-s in a fresh clone's make test, where it was its worker's first import of transformers
@pytest.mark.heavy
def test_tiny_qwen2_audio_streamed_unparsed_steps_counted(clips, tmp_path):
    from omnisocial.models.tiny import build_tiny_qwen2_audio
    from omnisocial.models.transformers_backend import TransformersBackend

    folder = build_tiny_qwen2_audio(tmp_path / "qwen2_audio")
    items = _items(clips, tmp_path / "seg", "audio")
    entry = {"name": "tiny-qwen2-audio", "max_calls": 10}
    backend = TransformersBackend(folder, "qwen2_audio", generation={"max_new_tokens": 4}, device="cpu")
    run = stream(backend, items, WHEN, modality="audio", segments_root=tmp_path / "seg",
                 cache_path=tmp_path / "c.jsonl", entry=entry, progress=False)  # fmt: skip
    steps = run.steps
    # random weights never say YES or NO: every step is unparsed, none silence, and a
    # stop-at-first stream without an utterance runs to the end of its schedule
    assert steps["kind"].tolist() == [UNPARSED] * 7 and (steps["reply"] != "").all()
    assert run.summary["n_unparsed"] == 7 and run.summary["n_silence"] == 0
    assert run.summary["n_calls"] == 7 and run.plan.calls == 7
    assert first_utterances(steps) == {"c1": None, "c2": None}
    assert steps.loc[steps["item_id"] == "c1", "t"].tolist() == [1.0, 2.0, 3.0, 4.0]
    again = stream(
        TransformersBackend(folder, "qwen2_audio", generation={"max_new_tokens": 4}, device="cpu"),
        items, WHEN, modality="audio", segments_root=tmp_path / "seg",
        cache_path=tmp_path / "c.jsonl", entry=entry, progress=False,
    )  # fmt: skip
    assert again.summary["n_calls"] == 0 and again.steps["reply"].tolist() == steps["reply"].tolist()


@pytest.mark.heavy  # 6 CPU-s
def test_tiny_image_text_streamed_with_and_without_prefix_reuse(clips, tmp_path):
    from omnisocial.models.tiny import build_tiny_image_text
    from omnisocial.models.transformers_backend import TransformersBackend

    folder = build_tiny_image_text(tmp_path / "image_text")
    items = _items(clips, tmp_path / "seg", "video")
    runs, backends = {}, {}
    for reuse in (False, True):
        backends[reuse] = TransformersBackend(
            folder, "image_text", generation={"max_new_tokens": 4}, device="cpu", reuse_prefix=reuse
        )
        cache = tmp_path / f"c{reuse}.jsonl"
        runs[reuse] = stream(backends[reuse], items, WHEN, modality="video", segments_root=tmp_path / "seg",
                             cache_path=cache, model="tiny-vlm", progress=False)  # fmt: skip
    plain, reused = runs[False].steps, runs[True].steps
    assert plain["kind"].eq(UNPARSED).all() and runs[True].summary["n_unparsed"] == 7
    # the reused KV cache gives the replies of a full prefill
    assert reused["reply"].tolist() == plain["reply"].tolist()
    stats = backends[True].prefix_stats
    # 2 fps: step t has 2t frames; from its second step each stream reuses its earlier frames
    assert stats["steps"] == 7 and stats["frames"] == 2 * (1 + 2 + 3 + 4) + 2 * (2 + 3 + 4)
    assert stats["reused_frames"] == 2 * (1 + 2 + 3) + 2 * (2 + 3)
    assert backends[False].prefix_stats["steps"] == 0
    assert backends[True].fingerprint() != backends[False].fingerprint()
