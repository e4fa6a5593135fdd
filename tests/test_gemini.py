"""Gemini backend: request building, error mapping, and google-genai against a loopback server."""

from __future__ import annotations

import base64
import logging
import types as pytypes

import httpx
import pytest
from google.genai import errors, types
from http_server import Action, FakeChatServer

from omnisocial.models.base import Request
from omnisocial.models.gemini import GeminiBackend, map_exception, reply_text
from omnisocial.models.registry import RegistryError
from omnisocial.models.runner import run_inference

FAKE_KEY = "AIzaOMNITEST-do-not-leak-91b2"


def entry(**overrides) -> dict:
    base = {
        "name": "gemini-test",
        "backend": "gemini",
        "model": "gemini-2.5-flash",
        "api_key_env": "OMNI_TEST_GEMINI_KEY",
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "timeout_s": 5,
    }
    return {**base, **overrides}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OMNI_TEST_GEMINI_KEY", FAKE_KEY)


class FakeFiles:
    """The Files API surface GeminiBackend uses, recording calls (no network)."""

    def __init__(self):
        self.uploads, self.gets, self.deleted = [], 0, []

    def upload(self, *, file, config):
        self.uploads.append((file, config["mime_type"]))
        return types.File(
            name="files/abc", uri="https://files/abc", mime_type=config["mime_type"], state="PROCESSING"
        )

    def get(self, *, name):
        self.gets += 1
        return types.File(name=name, uri="https://files/abc", mime_type="video/mp4", state="ACTIVE")

    def delete(self, *, name):
        self.deleted.append(name)


def offline_backend(**overrides) -> GeminiBackend:
    client = pytypes.SimpleNamespace(files=FakeFiles(), models=None)
    return GeminiBackend(entry(**overrides), client=client, poll_s=0.0)


def test_config_carries_decoding_settings_and_json_mode():
    backend = offline_backend()
    config = backend.config(
        Request("d1", "q", system="Be brief.", settings={"response_schema": {"type": "object"}})
    )
    assert (config.temperature, config.seed, config.max_output_tokens, config.top_p) == (0, 42, 512, 1.0)
    assert config.system_instruction == "Be brief."
    assert config.response_mime_type == "application/json" and config.response_json_schema is None
    plain = backend.config(Request("d1", "q"))
    assert plain.response_mime_type is None and plain.system_instruction is None
    strict = offline_backend(json_mode="json_schema").config(
        Request("d1", "q", settings={"response_schema": {}})
    )
    assert strict.response_json_schema == {}


def test_small_media_inline_large_media_uploaded_once(tmp_path):
    audio, video = tmp_path / "a.wav", tmp_path / "v.mp4"
    audio.write_bytes(b"RIFF" + b"\0" * 1000)
    video.write_bytes(b"\0" * 4000)
    backend = offline_backend(media={"inline_max_mb": 0.002})  # ~2 KB
    parts = backend.contents(Request("d1", "Listen.", media={"audio": audio}))
    assert parts[0].inline_data.mime_type == "audio/wav" and parts[0].inline_data.data == audio.read_bytes()
    assert parts[-1].text == "Listen."
    parts = backend.contents(Request("d1", "Watch.", media={"video": video}))
    assert parts[0].file_data.file_uri == "https://files/abc" and parts[0].file_data.mime_type == "video/mp4"
    backend.contents(Request("d1", "Watch again.", media={"video": video}))
    files = backend._client.files
    assert files.uploads == [(str(video), "video/mp4")] and files.gets == 1  # polled to ACTIVE, reused
    backend.close()
    assert files.deleted == ["files/abc"]


@pytest.mark.parametrize(
    ("code", "retryable"), [(429, True), (500, True), (503, True), (504, True), (400, False), (403, False)]
)
def test_api_errors_map_to_retry_or_not(code, retryable):
    exc = errors.APIError(code, {"error": {"code": code, "message": "nope", "status": "X"}})
    attempt = map_exception(exc)
    assert attempt.retryable is retryable and attempt.error.startswith(f"HTTP {code} X: nope")


def test_retry_info_delay_and_network_errors():
    details = {
        "error": {
            "code": 429,
            "message": "quota",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}],
        }
    }
    assert map_exception(errors.ClientError(429, details)).retry_after == 17.0
    assert map_exception(httpx.ReadTimeout("slow")).retryable
    assert map_exception(httpx.ConnectError("refused")).retryable
    assert not map_exception(ValueError("bad part")).retryable


def test_blocked_prompt_is_an_empty_answer_with_its_reason():
    blocked = types.GenerateContentResponse(
        prompt_feedback=types.GenerateContentResponsePromptFeedback(block_reason="SAFETY")
    )
    assert reply_text(blocked) == ("", "blocked:SAFETY")
    thought = types.GenerateContentResponse(
        candidates=[
            types.Candidate(
                content=types.Content(
                    role="model", parts=[types.Part(text="thinking", thought=True), types.Part(text="ok")]
                ),
                finish_reason="STOP",
            )
        ]
    )
    assert reply_text(thought) == ("ok", "STOP")


def test_missing_key_variable_fails_fast(monkeypatch):
    monkeypatch.delenv("OMNI_TEST_GEMINI_KEY")
    with pytest.raises(RegistryError, match="OMNI_TEST_GEMINI_KEY is not set"):
        GeminiBackend(entry())


def test_end_to_end_over_loopback_with_retries_and_redaction(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF-tiny-wav")
    cache = tmp_path / "gemini.jsonl"
    with FakeChatServer() as server:
        server.enqueue(Action.rate_limited(retry_after="1"), Action.error(503, body="key {auth} overloaded"))
        with GeminiBackend(entry(base_url=server.root)) as backend:
            frame = run_inference(
                backend, [Request("d1", "Listen.", media={"audio": audio})], cache, progress=False
            )
            server.default = Action.error(401, body="API key not valid: {auth}")
            failed = run_inference(backend, [Request("d2", "Listen.")], cache, progress=False)
        assert server.arrivals[1] - server.arrivals[0] >= 1.0
        body = server.bodies[0]
        assert server.auth[0] == FAKE_KEY and FAKE_KEY not in str(server.bodies)
    row = frame.iloc[0]
    assert row["ok"] and row["attempts"] == 3 and row["model_version"] == "fake-model-2026-01-01"
    assert row["text"].startswith('{"relationship_label"') and row["finish_reason"] == "STOP"
    config = body["generationConfig"]
    assert (config["temperature"], config["seed"], config["maxOutputTokens"]) == (0, 42, 512)
    inline = body["contents"][0]["parts"][0]["inlineData"]
    assert inline.get("mimeType", inline.get("mime_type")) == "audio/wav"  # the SDK's own spelling
    assert base64.b64decode(inline["data"]) == b"RIFF-tiny-wav"
    assert not failed.iloc[0]["ok"] and failed.iloc[0]["attempts"] == 1  # 401 is not retried
    assert "[REDACTED]" in failed.iloc[0]["error"]
    assert FAKE_KEY not in caplog.text and FAKE_KEY.encode() not in cache.read_bytes()


def test_timeouts_over_loopback_are_retried_then_recorded():
    with FakeChatServer() as server:
        server.enqueue(Action.hang(2.0))
        with GeminiBackend(entry(base_url=server.root, timeout_s=0.3, max_retries=1)) as backend:
            (recovered,) = backend.generate([Request("d1", "q")])
            server.default = Action.hang(2.0)
            (failed,) = backend.generate([Request("d2", "q")])
    assert recovered.ok and recovered.attempts == 2
    assert failed.text is None and failed.attempts == 2 and failed.error.startswith("timeout")
