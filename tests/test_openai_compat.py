"""OpenAI-compatible backend against a real loopback server: request shape, retries, limits, redaction."""

from __future__ import annotations

import base64
import logging
import subprocess
import time

import pytest
from http_server import Action, FakeChatServer
from openai_sdk_types import sdk_problems

from omnisocial.models.base import Request
from omnisocial.models.openai_compat import OpenAICompatBackend
from omnisocial.models.parsing import FAMILIARITY_SCHEMA
from omnisocial.models.runner import FailurePolicy, InferenceAborted, run_inference
from omnisocial.models.strict_schema import strict_problems
from omnisocial.models.transport import REDACTED, RetryPolicy, parse_retry_after

FAKE_KEY = "sk-omnitest-KEEPOUT-7f3a9c1e5b"


def entry(server: FakeChatServer, **overrides) -> dict:
    base = {
        "name": "fake",
        "backend": "openai",
        "model": "fake-model",
        "base_url": server.url,
        "concurrency": 4,
        "timeout_s": 5,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    return {**base, **overrides}


@pytest.fixture
def server():
    with FakeChatServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A 2 s 160x120 test video with a 440 Hz tone, and a 1 s WAV file."""
    folder = tmp_path_factory.mktemp("media")
    video, audio = folder / "clip.mp4", folder / "tone.wav"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=2",
         "-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-shortest", "-c:v", "mpeg4", "-c:a", "aac",
         str(video)],
        check=True,
    )  # fmt: skip
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=220:duration=1",
         "-ar", "16000", str(audio)],
        check=True,
    )  # fmt: skip
    return {"video": video, "audio": audio}


# --- request shape ------------------------------------------------------------------------


def test_text_request_body_and_reply(server):
    with OpenAICompatBackend(entry(server)) as backend:
        (reply,) = backend.generate([Request("d01", "Is it familiar?", system="Be brief.")])
    assert reply.ok and reply.text.startswith('{"relationship_label": "FAMILIAR"')
    assert reply.model_version == "fake-model-2026-01-01+fp_test123"
    assert reply.attempts == 1 and reply.finish_reason == "stop"
    body = server.bodies[0]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Is it familiar?"},
    ]
    assert (body["model"], body["temperature"], body["seed"], body["max_tokens"]) == (
        "fake-model",
        0,
        42,
        512,
    )
    assert "response_format" not in body
    assert server.auth == [""]  # keyless local server: no Authorization header at all


def test_schema_request_asks_for_strict_json(server):
    with OpenAICompatBackend(
        entry(server, json_mode="json_schema", max_tokens_field="max_completion_tokens")
    ) as b:
        b.generate([Request("d01", "q", settings={"response_schema": FAMILIARITY_SCHEMA, "max_new_tokens": 9})])
    body = server.bodies[0]
    sent = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema" and sent["strict"] is True
    assert sent["name"] == "answer" and strict_problems(sent["schema"]) == []
    assert sent["schema"]["required"] == ["relationship_label", "confidence", "rationale"]
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body
    assert sdk_problems(body) == []


def test_audio_goes_as_input_audio_wav(server, clip):
    with OpenAICompatBackend(entry(server, modalities=["audio"])) as backend:
        (reply,) = backend.generate([Request("d01", "Listen.", media={"audio": clip["audio"]})])
    assert reply.ok
    parts = server.bodies[0]["messages"][-1]["content"]
    assert [part["type"] for part in parts] == ["input_audio", "text"]
    assert parts[0]["input_audio"]["format"] == "wav"
    assert base64.b64decode(parts[0]["input_audio"]["data"]) == clip["audio"].read_bytes()
    assert parts[1]["text"] == "Listen."


def test_video_as_sampled_jpeg_frames_plus_audio_track(server, clip):
    media = {"fps": 2.0, "max_frames": 3, "frame_width": 64}
    with OpenAICompatBackend(entry(server, modalities=["video"], media=media)) as backend:
        (reply,) = backend.generate([Request("d01", "Watch.", media={"video": clip["video"]})])
    assert reply.ok, reply.error
    parts = server.bodies[0]["messages"][-1]["content"]
    kinds = [part["type"] for part in parts]
    assert kinds == ["image_url"] * 3 + ["input_audio", "text"]  # 2 s at 2 fps, capped at 3 frames
    frame = parts[0]["image_url"]["url"]
    assert frame.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(frame.split(",", 1)[1])[:2] == b"\xff\xd8"  # a JPEG
    wav = base64.b64decode(parts[3]["input_audio"]["data"])
    assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE"


def test_video_url_mode_for_servers_that_take_video(server, clip):
    media = {"video_mode": "video_url", "video_audio": "none"}
    with OpenAICompatBackend(entry(server, media=media)) as backend:
        (reply,) = backend.generate([Request("d01", "Watch.", media={"video": clip["video"]})])
    assert reply.audio_path == "none"
    parts = server.bodies[0]["messages"][-1]["content"]
    assert [part["type"] for part in parts] == ["video_url", "text"]
    assert "mm_processor_kwargs" not in server.bodies[0]
    url = parts[0]["video_url"]["url"]
    assert url.startswith("data:video/mp4;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == clip["video"].read_bytes()


def test_missing_media_is_an_error_reply_without_a_call(server, tmp_path):
    with OpenAICompatBackend(entry(server)) as backend:
        (reply,) = backend.generate([Request("d01", "Watch.", media={"video": tmp_path / "gone.mp4"})])
    assert not reply.ok and reply.text is None and "no such file" in reply.error
    assert server.requests == 0


# --- retries ------------------------------------------------------------------------------


def test_429_with_retry_after_is_honoured_then_succeeds(server, tmp_path):
    server.enqueue(Action.rate_limited(retry_after="1"))
    cache = tmp_path / "cache.jsonl"
    with OpenAICompatBackend(entry(server, backoff_base_s=0.0)) as backend:
        frame = run_inference(backend, [Request("d01", "q")], cache, progress=False)
    assert server.requests == 2
    assert server.arrivals[1] - server.arrivals[0] >= 1.0
    assert len(cache.read_text().splitlines()) == 1  # one record for the item, not one per attempt
    row = frame.iloc[0]
    assert row["ok"] and row["attempts"] == 2 and row["error"] is None


def test_retry_after_as_http_date(server):
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 2))
    server.enqueue(Action.rate_limited(retry_after=future))
    started = time.monotonic()
    with OpenAICompatBackend(entry(server, backoff_base_s=0.0)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.ok and reply.attempts == 2
    assert time.monotonic() - started >= 0.9  # the date has 1 s resolution


def test_5xx_garbage_and_timeouts_are_retried(server):
    server.enqueue(Action.error(503), Action.garbage())
    with OpenAICompatBackend(entry(server)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.ok and reply.attempts == 3 and server.requests == 3

    server.enqueue(Action.hang(2.0))
    with OpenAICompatBackend(entry(server, timeout_s=0.3)) as backend:
        (reply,) = backend.generate([Request("d02", "q")])
    assert reply.ok and reply.attempts == 2


def test_persistent_failure_becomes_an_error_reply_never_text(server):
    server.default = Action.error(500)
    with OpenAICompatBackend(entry(server, max_retries=3)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.text is None and not reply.ok
    assert reply.error.startswith("HTTP 500") and "gave up after 4 attempts" in reply.error
    assert server.requests == 4

    server.default = Action.hang(1.0)
    with OpenAICompatBackend(entry(server, timeout_s=0.2, max_retries=1)) as backend:
        (reply,) = backend.generate([Request("d02", "q")])
    assert reply.text is None and reply.error.startswith("timeout after 0.2 s") and reply.attempts == 2


def test_client_errors_are_not_retried(server):
    server.default = Action.error(400, body="bad request: unknown field")
    with OpenAICompatBackend(entry(server)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.attempts == 1 and server.requests == 1 and "HTTP 400" in reply.error


def test_connection_refused_is_an_error_reply():
    with FakeChatServer() as gone:
        url = gone.url
    backend = OpenAICompatBackend({**entry(gone, max_retries=1), "base_url": url})
    (reply,) = backend.generate([Request("d01", "q")])
    backend.close()
    assert reply.text is None and reply.error.startswith("connection error") and reply.attempts == 2


def test_retry_after_longer_than_max_wait_fails_now(server):
    server.enqueue(Action.rate_limited(retry_after="3600"))
    with OpenAICompatBackend(entry(server, max_wait_s=5)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.attempts == 1 and "exceeds max_wait_s 5" in reply.error


def test_backoff_is_full_jitter_and_capped():
    import random

    policy = RetryPolicy(max_retries=10, backoff_base_s=1.0, backoff_max_s=8.0)
    rng = random.Random(0)
    draws = {retry: [policy.backoff(retry, rng) for _ in range(300)] for retry in (1, 3, 6)}
    assert min(draws[1]) >= 0 and max(draws[1]) <= 1.0
    assert max(draws[3]) <= 4.0 and max(draws[3]) > 3.0  # spread over [0, 4]
    assert max(draws[6]) <= 8.0  # capped
    assert policy.delay(1, retry_after=5.0, rng=rng) >= 5.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("3", 3.0), ("0.5", 0.5), ("-2", 0.0), ("soon", None), (None, None), ("", None)],
)
def test_parse_retry_after(value, expected):
    assert parse_retry_after(value) == expected


# --- concurrency --------------------------------------------------------------------------


def test_concurrency_limit_is_respected(server, tmp_path):
    server.default = Action.ok(delay_s=0.15)
    requests = [Request(f"d{i:02d}", f"q{i}") for i in range(24)]
    with OpenAICompatBackend(entry(server, concurrency=3)) as backend:
        started = time.monotonic()
        frame = run_inference(backend, requests, tmp_path / "c.jsonl", progress=False)
        elapsed = time.monotonic() - started
        assert server.peak == 3  # reached, never exceeded
        server.peak = 0
        backend.generate([Request(f"e{i}", f"r{i}") for i in range(12)])  # direct use: same limit
    assert frame["ok"].all() and server.requests == 36
    assert server.peak <= 3
    assert elapsed >= 24 / 3 * 0.15 * 0.9


# --- the key never leaks ------------------------------------------------------------------


def test_api_key_is_sent_only_in_the_header_and_redacted_everywhere(server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OMNI_TEST_API_KEY", FAKE_KEY)
    caplog.set_level(logging.DEBUG)
    # The server echoes the credentials it got, as real APIs do for a wrong key.
    server.default = Action.error(500, body="Incorrect API key provided: {auth}. Check your key.")
    server.enqueue(Action.error(401, body="Unauthorized: {auth}"))
    cache = tmp_path / "cache.jsonl"
    requests = [Request("d01", "q1"), Request("d02", "q2")]
    with OpenAICompatBackend(entry(server, api_key_env="OMNI_TEST_API_KEY", max_retries=1)) as backend:
        frame = run_inference(backend, requests, cache, progress=False)
        assert backend.fingerprint().find(FAKE_KEY) == -1
    assert server.auth and all(auth == f"Bearer {FAKE_KEY}" for auth in server.auth)
    assert all(FAKE_KEY not in str(body) for body in server.bodies)
    assert not frame["ok"].any()
    for error in frame["error"]:
        assert FAKE_KEY not in error and REDACTED in error
    assert FAKE_KEY not in caplog.text and REDACTED in caplog.text
    assert FAKE_KEY.encode() not in cache.read_bytes()
    assert FAKE_KEY[-10:] not in cache.read_text() + caplog.text
