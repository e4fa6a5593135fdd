"""OpenAI-compatible backend against a real loopback server: request shape, retries, limits, redaction."""

from __future__ import annotations

import base64
import logging
import subprocess
import time

import httpx
import pandas as pd
import pytest
from http_server import Action, FakeChatServer
from openai_sdk_types import sdk_problems

from omnisocial.models.base import Request
from omnisocial.models.openai_compat import OpenAICompatBackend, parse_response
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
        b.generate(
            [Request("d01", "q", settings={"response_schema": FAMILIARITY_SCHEMA, "max_new_tokens": 9})]
        )
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
    media = {"fps": 2.0, "max_frames": 3, "frame_width": 64, "video_audio": "separate_part"}
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
    video = entry(server, modalities=["video"], media={"video_audio": "separate_part"})
    with OpenAICompatBackend(video) as backend:
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


# --- every body the backend builds is one the SDK's request types accept ----------------


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    """Two JPEG stills (keys image:000, image:001: one request with several images)."""
    folder = tmp_path_factory.mktemp("stills")
    paths = {}
    for n in range(2):
        path = folder / f"still{n}.jpg"
        subprocess.run(
            [
                "ffmpeg",
                "-nostdin",
                "-v",
                "error",
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=64x48:rate=1:duration=1",
                "-frames:v",
                "1",
                str(path),
            ],
            check=True,
        )
        paths[f"image:{n:03d}"] = path
    return paths


OPENAI = "https://api.openai.com/v1"
BODY_CASES = {
    # name: (entry overrides, media kinds, json_mode, expected content part types)
    "text/off": ({"model": "gpt-4.1-mini", "base_url": OPENAI}, (), "off", None),
    "text/json_object": ({"model": "gpt-4o", "base_url": OPENAI}, (), "json_object", None),
    "text/json_schema": ({"model": "gpt-4o", "base_url": OPENAI}, (), "json_schema", None),
    "text/reasoning": ({"model": "o4-mini", "base_url": OPENAI}, (), "json_schema", None),
    "audio/gpt-audio": (
        {"model": "gpt-4o-audio-preview", "base_url": OPENAI, "modalities": ["audio"]},
        ("audio",),
        "json_object",
        ["input_audio", "text"],
    ),
    "video/frames, OpenAI (no audio)": (
        {
            "model": "gpt-4o",
            "base_url": OPENAI,
            "modalities": ["video"],
            "media": {"video_audio": "none", "max_frames": 2},
        },
        ("video",),
        "json_schema",
        ["image_url", "image_url", "text"],
    ),
    "video/frames, fine-tuned gpt-4o-mini (no audio)": (
        {
            "model": "ft:gpt-4o-mini-2024-07-18:my-org:familiarity:AbC123",
            "base_url": OPENAI,
            "modalities": ["video"],
            "media": {"video_audio": "none", "max_frames": 2},
        },
        ("video",),
        "json_schema",
        ["image_url", "image_url", "text"],
    ),
    "video/frames, Qwen2.5-VL (no audio input)": (
        {
            "model": "Qwen/Qwen2.5-VL-7B-Instruct",
            "modalities": ["video"],
            "media": {"video_audio": "none", "max_frames": 2},
        },
        ("video",),
        "json_schema",
        ["image_url", "image_url", "text"],
    ),
    "video/frames + track (vLLM)": (
        {"model": "Qwen/Qwen2.5-Omni-7B", "modalities": ["video"], "media": {"max_frames": 2}},
        ("video",),
        "json_schema",
        ["image_url", "image_url", "input_audio", "text"],
    ),
    "video/video_url in_video (vLLM)": (
        {"model": "Qwen/Qwen2.5-Omni-7B", "modalities": ["video"], "media": {"video_mode": "video_url"}},
        ("video",),
        "json_schema",
        ["video_url", "text"],
    ),
    "video/video_url + separate_part (vLLM)": (
        {
            "model": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
            "modalities": ["video"],
            "media": {"video_mode": "video_url", "video_audio": "separate_part"},
        },
        ("video",),
        "json_object",
        ["video_url", "input_audio", "text"],
    ),
    "images": (
        {"model": "gpt-5-mini", "base_url": OPENAI},
        ("image:000", "image:001"),
        "off",
        ["image_url", "image_url", "text"],
    ),
}


@pytest.mark.parametrize("case", list(BODY_CASES))
def test_every_body_is_one_the_sdk_request_types_accept(case, clip, frames, monkeypatch):
    overrides, kinds, json_mode, part_types = BODY_CASES[case]
    monkeypatch.setenv("OMNI_TEST_API_KEY", FAKE_KEY)
    config = {
        "name": "m",
        "backend": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "OMNI_TEST_API_KEY",
        "json_mode": json_mode,
        **overrides,
    }
    files = {**clip, **frames}
    media = {kind: files[kind] for kind in kinds}
    request = Request(
        "d01",
        "Familiar or strangers?",
        system="Answer in JSON.",
        media=media,
        settings={"response_schema": FAMILIARITY_SCHEMA},
    )
    with OpenAICompatBackend(config) as backend:
        body = backend.body(request)
    assert sdk_problems(body) == []
    content = body["messages"][-1]["content"]
    if part_types is None:
        assert isinstance(content, str)
    else:
        assert [part["type"] for part in content] == part_types
    if json_mode == "json_schema":
        assert body["response_format"]["json_schema"]["strict"] is True
        assert strict_problems(body["response_format"]["json_schema"]["schema"]) == []
    if config["base_url"] == OPENAI:  # the modern field, the only one reasoning models take
        assert "max_completion_tokens" in body and "max_tokens" not in body
    else:
        assert "max_tokens" in body
    if overrides["model"] == "o4-mini":
        assert "temperature" not in body and "top_p" not in body
        assert body["max_completion_tokens"] == 25_000
    if "in_video" in case:
        assert body["mm_processor_kwargs"] == {"use_audio_in_video": True}
    else:
        assert "mm_processor_kwargs" not in body


def test_sdk_check_catches_what_the_api_refuses():
    """The checker itself: an unknown field, a wrong audio format and a missing key fail it."""
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}], "max_tokens_typo": 5}
    assert sdk_problems(body) == ["body.max_tokens_typo: not a field of CompletionCreateParamsNonStreaming"]
    ogg = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "ogg"}}
    assert sdk_problems({"model": "gpt-4o", "messages": [{"role": "user", "content": [ogg]}]})
    assert sdk_problems({"messages": [{"role": "user", "content": "q"}]}) == [
        "body.model: required by CompletionCreateParamsNonStreaming"
    ]


# --- a reply cut by the limit, blocked or empty is a failure with its finish reason ------


def _cut_responder(body, number):
    prompt = body["messages"][-1]["content"]
    if prompt == "cut":
        return Action.ok(content='{"relationship_label": "FAMI', finish_reason="length")
    if prompt == "reasoned away":  # a reasoning model that spent the limit thinking
        return Action.ok(content="", finish_reason="length")
    if prompt == "filtered":
        return Action.ok(content="", finish_reason="content_filter")
    return None


def test_length_reply_is_a_failure_counted_by_the_policy_and_not_retried(server, tmp_path):
    server.responder = _cut_responder
    requests = [
        Request("d01", "fine"),
        Request("d02", "cut"),
        Request("d03", "reasoned away"),
        Request("d04", "filtered"),
    ]
    cache = tmp_path / "cache.jsonl"
    policy = FailurePolicy(max_failed_share=0.75, probe=False)
    with OpenAICompatBackend(entry(server)) as backend:
        frame = run_inference(backend, requests, cache, progress=False, policy=policy)
    assert server.requests == 4  # one attempt each: the same limit would cut the reply again
    rows = frame.set_index("item_id")
    assert rows.loc["d01", "ok"] and rows.loc["d01", "finish_reason"] == "stop"
    for item, reason in (("d02", "length"), ("d03", "length"), ("d04", "content_filter")):
        row = rows.loc[item]
        assert not row["ok"] and pd.isna(row["text"]) and row["attempts"] == 1
        assert row["finish_reason"] == reason and f"finish_reason {reason}" in row["error"]
    assert "cut by the output token limit" in rows.loc["d02", "error"]
    assert "blocked" in rows.loc["d04", "error"]
    assert (
        rows.loc["d01", "model_version"]
        == rows.loc["d02", "model_version"]
        == "fake-model-2026-01-01+fp_test123"
    )

    # the failure policy counts them: 3 of 4 failed is over a 2 % budget
    with (
        OpenAICompatBackend(entry(server)) as backend,
        pytest.raises(InferenceAborted, match=r"3 of 4 requests failed: reply cut by the output token limit"),
    ):
        run_inference(backend, requests, cache, progress=False, policy=FailurePolicy(probe=False))
    assert server.requests == 7  # the rerun made exactly the three failed calls again


def test_empty_reply_that_was_not_cut_is_retried(server):
    server.enqueue(Action.ok(content="", finish_reason="stop"), Action.ok(content=None))
    with OpenAICompatBackend(entry(server)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.ok and reply.attempts == 2 and reply.finish_reason == "stop"

    server.default = Action.ok(content="   ", finish_reason="stop")
    with OpenAICompatBackend(entry(server, max_retries=1)) as backend:
        (reply,) = backend.generate([Request("d02", "q")])
    assert not reply.ok and reply.attempts == 2 and reply.finish_reason == "stop"
    assert reply.error.startswith("empty reply (finish_reason stop)")


# --- retries as the official client defines them ----------------------------------------


def _status(status: int, body: str = "busy", **headers) -> Action:
    return Action(
        "status", status=status, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )


def test_retry_after_ms_is_honoured_and_preferred_over_retry_after(server):
    server.enqueue(_status(429, retry_after_ms="600"))
    with OpenAICompatBackend(entry(server, backoff_base_s=0.0)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.ok and reply.attempts == 2
    assert server.arrivals[1] - server.arrivals[0] >= 0.6

    # retry-after-ms wins: read as 30 s, Retry-After would exceed max_wait_s and fail now
    server.enqueue(_status(503, retry_after_ms="50", retry_after="30"))
    with OpenAICompatBackend(entry(server, backoff_base_s=0.0, max_wait_s=5)) as backend:
        (reply,) = backend.generate([Request("d02", "q")])
    assert reply.ok and reply.attempts == 2
    assert server.arrivals[3] - server.arrivals[2] < 5


def test_x_should_retry_false_on_insufficient_quota_is_obeyed(server):
    """OpenAI's 429 insufficient_quota says x-should-retry: false: one attempt, not four."""
    quota = (
        '{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", '
        '"code": "insufficient_quota"}}'
    )
    server.enqueue(_status(429, quota, x_should_retry="false", retry_after="1"))
    with OpenAICompatBackend(entry(server, max_retries=3)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.attempts == 1 and server.requests == 1 and reply.error.startswith("HTTP 429")

    server.enqueue(_status(429, "rate limited"))  # a plain 429 is a rate limit: retried
    with OpenAICompatBackend(entry(server, max_retries=3)) as backend:
        (reply,) = backend.generate([Request("d02", "q")])
    assert reply.ok and reply.attempts == 2


def test_insufficient_quota_body_without_header_is_not_retried():
    """A proxy may drop the header; the body's code alone stops the retries."""
    quota = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    attempt = parse_response(httpx.Response(429, json=quota))
    assert not attempt.retryable and "insufficient_quota: not retried" in attempt.error
    assert parse_response(httpx.Response(429, json={"error": {"code": "rate_limit_exceeded"}})).retryable


@pytest.mark.parametrize(
    ("status", "headers", "retried"),
    [
        (408, {}, True),
        (409, {}, True),  # lock timeout: the official client retries it
        (429, {}, True),
        (500, {}, True),
        (503, {"x_should_retry": "false"}, False),
        (400, {"x_should_retry": "true"}, True),  # the server's word wins both ways
        (400, {}, False),
        (404, {}, False),
    ],
)
def test_which_statuses_are_retried(server, status, headers, retried):
    server.enqueue(_status(status, **headers))
    with OpenAICompatBackend(entry(server, max_retries=1)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.ok is retried and server.requests == (2 if retried else 1)


def test_timeout_bounds_the_whole_attempt_not_each_read(server):
    """A body trickled over 3 s never trips a 1 s read timeout; the 1 s attempt deadline does."""
    server.default = Action.drip(3.0)
    started = time.monotonic()
    with OpenAICompatBackend(entry(server, timeout_s=1.0, max_retries=0)) as backend:
        (reply,) = backend.generate([Request("d01", "q")])
    elapsed = time.monotonic() - started
    assert not reply.ok and reply.error.startswith("timeout after 1 s") and elapsed < 2.0

    server.default = Action.drip(0.4)  # the same trickle inside the deadline is a reply
    with OpenAICompatBackend(entry(server, timeout_s=2.0, max_retries=0)) as backend:
        (reply,) = backend.generate([Request("d02", "q")])
    assert reply.ok, reply.error


# --- the vLLM video entry's audio path, in the responses table and the summary -----------


def test_vllm_omni_video_entry_records_its_audio_path_in_the_responses_table(server, clip, tmp_path):
    import shutil

    from test_familiarity import make_design, write_stimuli

    from omnisocial.familiarity import inference
    from omnisocial.familiarity.contracts import RESPONSES
    from omnisocial.summary import finish_reasons_section, read_optional

    design = make_design(sites=("s1",))  # D001..D004
    manifest = write_stimuli(tmp_path, design)
    videos = tmp_path / "media" / "video"
    for dyad in ("D001", "D002", "D003"):
        shutil.copy(clip["video"], videos / f"{dyad}.mp4")
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=160x120:rate=10:duration=1",
            "-c:v",
            "mpeg4",
            str(videos / "D004.mp4"),
        ],
        check=True,
    )  # D004: a video without an audio track
    entry = {
        "name": "qwen-omni",
        "backend": "openai",
        "model": "Qwen/Qwen2.5-Omni-7B",
        "base_url": server.url,
        "modalities": ["video"],
        "media": {"video_mode": "video_url"},
        "json_mode": "json_schema",
        "concurrency": 1,
    }
    # one call at a time, in design order: the third reply is cut by the token limit
    server.enqueue(Action.ok(), Action.ok(), Action.ok(content='{"relationship_', finish_reason="length"))
    _, responses = inference.infer_model(
        entry, manifest, design, tmp_path, ["video"], ["v1"], tmp_path / "cache.jsonl", progress=False
    )
    rows = responses.set_index("item_id")
    assert rows["audio_path"].to_dict() == {
        "D001": "in_video",
        "D002": "in_video",
        "D003": "in_video",
        "D004": "no_track",
    }
    assert [body.get("mm_processor_kwargs") for body in server.bodies] == [
        {"use_audio_in_video": True}
    ] * 3 + [None]
    assert all(sdk_problems(body) == [] for body in server.bodies)
    assert rows.loc["D003", "status"] == "failed" and rows.loc["D003", "finish_reason"] == "length"
    assert rows.loc["D001", "status"] == "answered" and rows.loc["D001", "finish_reason"] == "stop"

    # the tables as written and read back by the report: one count per finish reason per model
    RESPONSES.write(tmp_path / "responses" / "qwen-omni.csv", responses)
    baseline = responses.assign(
        name="chance", model="chance", prompt_variant="", finish_reason="", audio_path="", status="answered"
    )
    RESPONSES.write(tmp_path / "responses" / "chance.csv", baseline)
    paths = [
        tmp_path / "responses" / "qwen-omni.csv",
        tmp_path / "responses" / "chance.csv",
        tmp_path / "gone.csv",
    ]
    table = finish_reasons_section(read_optional(paths)).set_index("model")
    assert table.loc["qwen-omni"].to_dict() == {
        "calls": 4,
        "failed": 1,
        "length": 1,
        "stop": 3,
        "(not given)": 0,
        "audio paths": "in_video 3, no_track 1",
    }
    assert table.loc["chance", "(not given)"] == 4 and table.loc["chance", "audio paths"] == ""


def test_a_gzip_encoded_reply_is_read_once():
    """api.openai.com compresses its bodies; the streamed body is decoded exactly once."""
    import gzip
    import json

    payload = {
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "FAMILIAR"}}
        ],
    }

    def handler(request: httpx.Request) -> httpx.Response:
        data = gzip.compress(json.dumps(payload).encode())
        return httpx.Response(
            200, headers={"content-encoding": "gzip", "content-type": "application/json"}, content=data
        )

    config = {"name": "g", "backend": "openai", "model": "gpt-4o", "base_url": "https://api.openai.com/v1"}
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        backend = OpenAICompatBackend(config, client=client)
        (reply,) = backend.generate([Request("d01", "q")])
    assert reply.ok and reply.text == "FAMILIAR" and reply.finish_reason == "stop", reply.error


def test_a_reply_body_held_by_nagles_algorithm_is_released_by_a_quick_ack(monkeypatch):
    """A server with Nagle's algorithm on (http.server's default, cpp-httplib's) sends a reply's
    body only once the client ACKs its headers, which Linux delays 40 ms: every call took
    40 ms more than the model (issue 53). The backend ACKs the headers at once (ack_now)."""
    import statistics

    from omnisocial.models import openai_compat

    def latencies() -> list[float]:
        with (
            FakeChatServer(default=Action.ok("NO"), nagle=True) as server,
            OpenAICompatBackend(entry(server, concurrency=1, max_retries=0)) as backend,
        ):
            replies = [backend.generate([Request(f"d{i}", f"q{i}")])[0] for i in range(12)]
        assert all(reply.ok for reply in replies)
        return [reply.latency_s for reply in replies[2:]]  # a connection ACKs its first segments at once

    assert statistics.median(latencies()) < 0.025
    monkeypatch.setattr(openai_compat, "ack_now", lambda response: None)
    assert statistics.median(latencies()) >= 0.035  # the server does hold the body without it


def test_prepared_media_are_sent_as_the_same_json_bytes(tmp_path):
    """Media parts prepared ahead (the streaming prefetch) are JSON-encoded there; the body the
    call sends is byte for byte what httpx's json= sends for the same request built at call time."""
    import json
    import wave

    clip = tmp_path / "a.wav"
    with wave.open(str(clip), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(bytes(range(256)) * 125)
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        message = {"role": "assistant", "content": "NO"}
        return httpx.Response(
            200, json={"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        )

    config = {"name": "p", "backend": "openai", "model": "m", "base_url": "http://loopback/v1",
              "modalities": ["text", "audio"], "extra_body": {"top_k": 5}}  # fmt: skip
    request = Request("d01", 'say "é" \\ \x00 then NO', system="be brief", media={"audio": clip})
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        backend = OpenAICompatBackend(config, client=client)
        expected = json.dumps(backend.body(request), ensure_ascii=False, separators=(",", ":"))
        backend.prepare_media({"audio": clip})
        assert backend._prepared  # taken by the next request
        (reply,) = backend.generate([request])
        (again,) = backend.generate([request])  # built at call time
    assert reply.ok and again.ok and not backend._prepared
    assert sent[0].content == sent[1].content == expected.encode("utf-8")
    assert sent[0].headers["content-type"] == "application/json"
