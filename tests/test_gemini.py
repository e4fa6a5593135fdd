"""Gemini backend: request building, replies that are failures, uploads, error mapping, and
google-genai against a loopback server."""

from __future__ import annotations

import base64
import json
import logging
import re
import subprocess
import threading
import time
import types as pytypes
from collections import Counter
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pandas as pd
import pytest
from google.genai import _api_client, errors, types
from http_server import Action, FakeChatServer, _prompt_of

from omnisocial.models import gemini
from omnisocial.models.base import Request
from omnisocial.models.gemini import GeminiBackend, check_entry, map_exception, reply_text
from omnisocial.models.media_io import probe
from omnisocial.models.registry import RegistryError, validate_entry
from omnisocial.models.runner import FailurePolicy, InferenceAborted, load_results, run_inference

FAKE_KEY = "AIzaOMNITEST-do-not-leak-91b2"
DEMO_VIDEO = "tests/data/demo_stimulus/D001.mp4"  # h264 + aac, 18.3 s


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
    """The Files API surface GeminiBackend uses, recording calls (no network).

    Each upload gets its own name; `polls_to_active` polls later it is ACTIVE (None: it
    stays PROCESSING); `upload_s` makes an upload take that long.
    """

    def __init__(self, polls_to_active: int | None = 1, upload_s: float = 0.0, final: str = "ACTIVE"):
        self.polls_to_active, self.upload_s, self.final = polls_to_active, upload_s, final
        self.uploads, self.gets, self.deleted = [], 0, []
        self._polls: dict[str, int] = {}
        self._lock = threading.Lock()

    def upload(self, *, file, config):
        time.sleep(self.upload_s)
        with self._lock:
            self.uploads.append((file, config["mime_type"]))
            name = f"files/up{len(self.uploads)}"
        return types.File(
            name=name, uri=f"https://files/{name}", mime_type=config["mime_type"], state="PROCESSING"
        )

    def get(self, *, name):
        with self._lock:
            self.gets += 1
            self._polls[name] = self._polls.get(name, 0) + 1
            done = self.polls_to_active is not None and self._polls[name] >= self.polls_to_active
        state = self.final if done else "PROCESSING"
        return types.File(name=name, uri=f"https://files/{name}", mime_type="video/mp4", state=state)

    def delete(self, *, name):
        with self._lock:
            self.deleted.append(name)


def answer(text: str = '{"relationship_label": "FAMILIAR"}', finish: str = "STOP"):
    return types.GenerateContentResponse(
        candidates=[
            types.Candidate(
                content=types.Content(role="model", parts=[types.Part(text=text)]), finish_reason=finish
            )
        ],
        model_version="gemini-2.5-flash-001",
    )


class FakeModels:
    """`client.models`: answers every generate_content with `reply` (a response, or an exception to raise)."""

    def __init__(self, reply=None):
        self.reply = reply if reply is not None else answer()
        self.calls = []

    def generate_content(self, *, model, contents, config):
        self.calls.append((model, contents, config))
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply


def offline_backend(files: FakeFiles | None = None, models: FakeModels | None = None, **overrides):
    client = pytypes.SimpleNamespace(files=files or FakeFiles(), models=models or FakeModels())
    return GeminiBackend(entry(**overrides), client=client, poll_s=0.0, sleep=lambda s: None)


class RawGeminiServer(FakeChatServer):
    """A loopback server whose Gemini 200 replies are whole generateContent bodies (Action.content)."""

    @staticmethod
    def _gemini_ok(action, content):
        return json.loads(content)


class SizingServer(FakeChatServer):
    """A loopback server that also records each request's Content-Length: the bytes as sent."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lengths: list[int] = []

    def _handle(self, handler):
        self.lengths.append(int(handler.headers.get("Content-Length") or 0))
        super()._handle(handler)


def camel(fields: dict) -> dict:
    """REST names: google-genai sends some nested fields in proto snake_case, which the API also takes."""
    return {re.sub(r"_(\w)", lambda m: m.group(1).upper(), name): value for name, value in fields.items()}


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


# --- request building: decoding, thinking, output limit -----------------------------------------


def test_config_carries_decoding_settings_json_mode_and_room_for_thinking():
    backend = offline_backend()
    config = backend.config(
        Request("d1", "q", system="Be brief.", settings={"response_schema": {"type": "object"}})
    )
    # gemini-2.5-flash thinks by default: the 512 answer tokens plus the thinking room
    assert (config.temperature, config.seed, config.top_p) == (0, 42, 1.0)
    assert config.max_output_tokens == 512 + gemini.DEFAULT_THINKING_ROOM and config.thinking_config is None
    assert config.system_instruction == "Be brief."
    assert config.response_mime_type == "application/json" and config.response_json_schema is None
    plain = backend.config(Request("d1", "q"))
    assert plain.response_mime_type is None and plain.system_instruction is None
    strict = offline_backend(json_mode="json_schema").config(
        Request("d1", "q", settings={"response_schema": {}})
    )
    assert strict.response_json_schema == {}
    # a model that does not think gets the answer's limit only; a short judge answer stays short
    assert offline_backend(model="gemini-2.0-flash").config(Request("d1", "q")).max_output_tokens == 512
    judge = offline_backend(model="gemini-2.0-flash").config(
        Request("d1", "q", settings={"max_new_tokens": 32})
    )
    assert judge.max_output_tokens == 32
    assert backend.settings_for(Request("d1", "q"))["max_output_tokens"] == 512 + gemini.DEFAULT_THINKING_ROOM


@pytest.mark.parametrize(
    ("overrides", "thinking", "limit"),
    [
        ({"thinking_budget": 1024}, {"thinkingBudget": 1024}, 512 + 1024),
        ({"thinking_budget": 0}, {"thinkingBudget": 0}, 512),
        ({"thinking_budget": -1}, {"thinkingBudget": -1}, 512 + gemini.DEFAULT_THINKING_ROOM),
        ({"thinking_budget": 2048, "max_output_tokens": 4096}, {"thinkingBudget": 2048}, 4096),
        ({"model": "gemini-3-pro-preview", "thinking_level": "low"}, {"thinkingLevel": "LOW"}, 512 + 32768),
        ({"model": "gemini-2.5-pro"}, None, 512 + gemini.DEFAULT_THINKING_ROOM),
        ({"model": "gemini-2.0-flash", "max_output_tokens": 2000}, None, 2000),
    ],
)
def test_thinking_config_and_output_limit_in_the_request_body(overrides, thinking, limit):
    """What google-genai puts on the wire: generationConfig.thinkingConfig and maxOutputTokens."""
    with FakeChatServer() as server:
        backend = GeminiBackend(entry(base_url=server.root, **overrides))
        (reply,) = backend.generate([Request("d1", "q")])
        config = server.bodies[0]["generationConfig"]
    assert reply.ok
    assert config["maxOutputTokens"] == limit
    sent = config.get("thinkingConfig", config.get("thinking_config"))
    assert (camel(sent) if sent is not None else None) == thinking
    assert backend.settings_for(Request("d1", "q"))["max_output_tokens"] == limit


def test_thinking_settings_change_the_fingerprint_so_calls_are_made_again():
    prints = {
        offline_backend().fingerprint(),
        offline_backend(thinking_budget=1024).fingerprint(),
        offline_backend(max_output_tokens=9000).fingerprint(),
        offline_backend(model="gemini-3-flash-preview", thinking_level="low").fingerprint(),
        offline_backend(model="gemini-3-flash-preview", thinking_level="high").fingerprint(),
    }
    assert len(prints) == 5


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"thinking_budget": 512, "thinking_level": "low"},
            "thinking_budget: set thinking_budget .Gemini 2.5. or thinking_level",
        ),
        ({"thinking_level": "high"}, "thinking_level: gemini-2.5-flash takes thinking_budget"),
        (
            {"model": "gemini-2.5-pro", "thinking_budget": 0},
            "thinking_budget: 0 is outside what gemini-2.5-pro",
        ),
        (
            {"model": "gemini-2.5-flash-lite", "thinking_budget": 100},
            "thinking_budget: 100 is outside what gemini-2.5-flash-lite takes: 512-24576",
        ),
        (
            {"thinking_budget": 30000},
            "thinking_budget: 30000 is outside what gemini-2.5-flash takes: 1-24576",
        ),
        (
            {"model": "gemini-2.0-flash", "thinking_budget": 1024},
            "thinking_budget: gemini-2.0-flash is not a thinking model",
        ),
        (
            {"thinking_budget": 4096, "max_output_tokens": 4096},
            "max_output_tokens: 4096 leaves the answer no room",
        ),
    ],
)
def test_entry_thinking_settings_the_api_would_refuse_fail_naming_the_key(overrides, message):
    with pytest.raises(RegistryError, match=f"model entry 'gemini-test': {message}"):
        offline_backend(**overrides)


def test_thinking_keys_are_gemini_only_and_checked_by_the_schema():
    with pytest.raises(RegistryError, match="thinking_budget"):
        validate_entry(
            {
                "name": "o",
                "backend": "openai",
                "model": "gpt-4o",
                "base_url": "http://x",
                "thinking_budget": 5,
            }
        )
    with pytest.raises(RegistryError, match="thinking_level: 'HIGH' is not one of"):
        validate_entry(entry(thinking_level="HIGH"))
    with pytest.raises(RegistryError, match="thinking_budget: -2 is less than the minimum"):
        validate_entry(entry(thinking_budget=-2))
    # accepted with a warning: Gemini 3 takes a budget for compatibility
    warnings = check_entry(validate_entry(entry(model="gemini-3-pro-preview", thinking_budget=2048)))
    assert warnings and "thinking_level is recommended" in warnings[0]
    assert check_entry(validate_entry(entry(model="gemini-2.5-pro", thinking_budget=128))) == []


# --- replies that are failures: cut by the limit, blocked -----------------------------------------

USAGE = {"promptTokenCount": 310, "totalTokenCount": 33590, "thoughtsTokenCount": 33280}
SAFETY_RATINGS = [
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True},
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
]
# generateContent bodies as Gemini 2.5 sends them (REST field names)
CUT = {  # thinking used every output token: a candidate with no parts
    "candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}],
    "usageMetadata": USAGE,
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r-cut",
}
UNSAFE = {
    "candidates": [{"finishReason": "SAFETY", "index": 0, "safetyRatings": SAFETY_RATINGS}],
    "usageMetadata": {"promptTokenCount": 310, "totalTokenCount": 310},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r-safety",
}
BLOCKED_PROMPT = {  # the prompt itself refused: no candidate at all
    "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": SAFETY_RATINGS},
    "usageMetadata": {"promptTokenCount": 310, "totalTokenCount": 310},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r-blocked",
}
FINE = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"text": '{"relationship_label": "FAMILIAR"}'}]},
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r-ok",
}


def test_cut_and_blocked_replies_over_loopback_are_failures_with_their_finish_reason(tmp_path):
    bodies = {"cut": CUT, "unsafe": UNSAFE, "blocked": BLOCKED_PROMPT, "fine": FINE}

    def respond(body, number):
        return Action.ok(content=json.dumps(bodies[_prompt_of(body)]))

    cache = tmp_path / "gemini.jsonl"
    requests = [Request(name, name) for name in bodies]
    with RawGeminiServer(responder=respond) as server:
        backend = GeminiBackend(entry(base_url=server.root))
        policy = FailurePolicy(max_failed_share=0.5, probe=False)
        with pytest.raises(InferenceAborted, match="3 of 4 requests failed"):
            run_inference(backend, requests, cache, progress=False, policy=policy)
        assert server.requests == 4  # none of the three is retried: the same request fails the same way
        rows = load_results(cache).set_index("item_id")
        assert not rows.loc["cut", "ok"] and rows.loc["cut", "finish_reason"] == "MAX_TOKENS"
        assert "max_output_tokens 33280, 33280 of them on thinking" in rows.loc["cut", "error"]
        assert not rows.loc["unsafe", "ok"] and rows.loc["unsafe", "finish_reason"] == "SAFETY"
        assert "reply blocked" in rows.loc["unsafe", "error"]
        assert not rows.loc["blocked", "ok"] and rows.loc["blocked", "finish_reason"] == "blocked:SAFETY"
        assert rows.loc["fine", "ok"] and rows.loc["fine", "finish_reason"] == "STOP"
        assert set(rows["attempts"]) == {1} and pd.isna(rows.loc["cut", "text"])
        # a larger limit is another fingerprint: the cut item is asked again, the rest stay cached
        bodies["cut"] = FINE
        bigger = GeminiBackend(entry(base_url=server.root, max_output_tokens=60000))
        frame = run_inference(bigger, [requests[0]], cache, progress=False)
        assert server.requests == 5 and frame.iloc[0]["ok"]
        assert server.bodies[-1]["generationConfig"]["maxOutputTokens"] == 60000


def test_empty_and_other_endings_are_retried_then_answered():
    with FakeChatServer() as server:
        server.enqueue(Action.ok(content=""), Action.ok(content="partial", finish_reason="OTHER"))
        (reply,) = GeminiBackend(entry(base_url=server.root)).generate([Request("d1", "q")])
    assert reply.ok and reply.attempts == 3 and reply.finish_reason == "STOP" and server.requests == 3


def test_reply_text_skips_thoughts_and_names_a_blocked_prompt():
    blocked = types.GenerateContentResponse(
        prompt_feedback=types.GenerateContentResponsePromptFeedback(block_reason="PROHIBITED_CONTENT")
    )
    assert reply_text(blocked) == ("", "blocked:PROHIBITED_CONTENT")
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
    # only thoughts, cut by the limit: a failure with MAX_TOKENS, not an empty answer
    only_thoughts = answer(text="", finish="MAX_TOKENS")
    only_thoughts.candidates[0].content.parts = [types.Part(text="let me think", thought=True)]
    (reply,) = offline_backend(models=FakeModels(only_thoughts)).generate([Request("d1", "q")])
    assert not reply.ok and reply.finish_reason == "MAX_TOKENS" and reply.attempts == 1


# --- inline size: the request as sent, base64 and all ------------------------------------------


def test_inline_limit_counts_the_base64_request_not_the_raw_bytes(tmp_path):
    big, fits = tmp_path / "big.mp4", tmp_path / "fits.mp4"
    with open(big, "wb") as handle:  # sparse: sizes as the issue's 16.2 MiB video, no disk used
        handle.truncate(int(16.2 * 1024 * 1024))
    with open(fits, "wb") as handle:
        handle.truncate(14 * 1024 * 1024)
    backend = offline_backend()
    size = backend.request_bytes(Request("d1", "Watch.", media={"video": big}))
    assert size > 22_600_000  # 16.2 MiB travels as about 22.65 MB of base64
    assert not backend.inline(
        Request("d1", "Watch.", media={"video": big})
    )  # raw 16.2 MiB < 20 MB, sent 22.7 MB
    assert backend.inline(Request("d1", "Watch.", media={"video": fits}))  # 14 MiB -> 19.6 MB
    assert gemini.encoded_size(3) == 4 and gemini.encoded_size(4) == 8 and gemini.encoded_size(0) == 0


def test_request_size_estimate_bounds_what_google_genai_sends(tmp_path):
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF" + bytes(range(256)) * 120)  # 30 724 bytes
    prompt = 'Listen to "both" speakers.\nAnswer in JSON: {"relationship_label": ...}\t\u00e9'
    request = Request(
        "d1", prompt, system="You rate dyads.", settings={"response_schema": {"type": "object"}}
    )
    request = Request(request.item_id, request.prompt, request.system, {"audio": audio}, request.settings)
    with SizingServer() as server:
        backend = GeminiBackend(entry(base_url=server.root, media={"inline_max_mb": 0.1}))
        (reply,) = backend.generate([request])
        sent = server.lengths[0]
        inline = server.bodies[0]["contents"][0]["parts"][0]["inlineData"]
    assert reply.ok and base64.urlsafe_b64decode(inline["data"]) == audio.read_bytes()  # the SDK's alphabet
    estimate = backend.request_bytes(request)
    assert sent <= estimate <= sent + gemini.ENVELOPE_BYTES  # an upper bound, and a tight one
    assert sent > gemini.encoded_size(audio.stat().st_size)


def test_media_over_the_limit_go_through_the_files_api(tmp_path):
    audio, video = tmp_path / "a.wav", tmp_path / "v.mp4"
    audio.write_bytes(b"RIFF" + b"\0" * 1000)
    video.write_bytes(b"\0" * 4000)
    limit_mb = (gemini.ENVELOPE_BYTES + 3000) / 1e6  # the wav's 1.4 KB of base64 fit, the video's 5.3 KB not
    backend = offline_backend(media={"inline_max_mb": limit_mb})
    parts = backend.contents(Request("d1", "Listen.", media={"audio": audio}))
    assert parts[0].inline_data.mime_type == "audio/wav" and parts[0].inline_data.data == audio.read_bytes()
    assert parts[-1].text == "Listen."
    parts = backend.contents(Request("d1", "Watch.", media={"video": video}))
    assert (
        parts[0].file_data.file_uri == "https://files/files/up1"
        and parts[0].file_data.mime_type == "video/mp4"
    )
    backend.contents(Request("d1", "Watch again.", media={"video": video}))
    files = backend._client.files
    assert files.uploads == [(str(video), "video/mp4")] and files.gets == 1  # polled to ACTIVE, reused
    backend.close()
    assert files.deleted == ["files/up1"]


# --- MIME types --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("clip.mov", "video/mov"),
        ("CLIP.MOV", "video/mov"),
        ("clip.avi", "video/avi"),
        ("clip.mpg", "video/mpg"),
        ("clip.mpeg", "video/mpeg"),
        ("clip.flv", "video/x-flv"),
        ("clip.wmv", "video/wmv"),
        ("clip.3gp", "video/3gpp"),
        ("clip.webm", "video/webm"),
        ("clip.mp4", "video/mp4"),
        ("talk.mp3", "audio/mp3"),
        ("talk.aiff", "audio/aiff"),
        ("talk.wav", "audio/wav"),
        ("face.webp", "image/webp"),
    ],
)
def test_mime_types_as_gemini_lists_them(tmp_path, name, mime):
    path = tmp_path / name
    path.write_bytes(b"\0" * 64)
    parts = offline_backend().contents(Request("d1", "q", media={"video": path}))
    assert parts[0].inline_data.mime_type == mime


def test_a_format_gemini_does_not_take_fails_before_any_call(tmp_path):
    odd = tmp_path / "clip.ogv"
    odd.write_bytes(b"\0" * 64)
    models = FakeModels()
    (reply,) = offline_backend(models=models).generate([Request("d1", "q", media={"video": odd})])
    assert not reply.ok and reply.attempts == 0 and models.calls == []
    assert f"{odd}: Gemini does not take .ogv" in reply.error and ".mkv" in reply.error


def test_mkv_is_remuxed_to_mp4_without_reencoding(tmp_path):
    mkv = tmp_path / "dyad.mkv"
    ffmpeg("-i", DEMO_VIDEO, "-c", "copy", str(mkv))
    backend = offline_backend()
    (part, _) = backend.contents(Request("d1", "Watch.", media={"video": mkv}))
    assert part.inline_data.mime_type == "video/mp4"
    sent = tmp_path / "sent.mp4"
    sent.write_bytes(part.inline_data.data)
    info = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "format=format_name:stream=codec_name",
            "-of",
            "json",
            str(sent),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    described = json.loads(info.stdout)
    assert "mp4" in described["format"]["format_name"]
    assert sorted(s["codec_name"] for s in described["streams"]) == ["aac", "h264"]  # copied, not re-encoded
    assert probe(sent)["duration_s"] == pytest.approx(probe(DEMO_VIDEO)["duration_s"], abs=0.1)
    remuxed = next(iter(backend._remuxed.done.values()))
    backend.close()
    assert not remuxed.exists()


def test_m4a_is_remuxed_to_aac(tmp_path):
    m4a = tmp_path / "talk.m4a"
    ffmpeg("-i", DEMO_VIDEO, "-vn", "-c:a", "copy", str(m4a))
    (part, _) = offline_backend().contents(Request("d1", "Listen.", media={"audio": m4a}))
    assert part.inline_data.mime_type == "audio/aac"
    sent = tmp_path / "sent.aac"
    sent.write_bytes(part.inline_data.data)
    assert probe(sent)["has_audio"] and not probe(sent)["has_video"]


def test_mkv_whose_streams_mp4_cannot_hold_is_refused_with_the_reason(tmp_path):
    mkv = tmp_path / "pcm.mkv"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "pcm_s16le", str(mkv))
    models = FakeModels()
    (reply,) = offline_backend(models=models).generate([Request("d1", "q", media={"video": mkv})])
    assert not reply.ok and models.calls == [] and reply.attempts == 1  # a MediaError is not retried
    assert "Gemini does not take .mkv and its streams do not fit .mp4 without re-encoding" in reply.error
    assert "ffmpeg -i IN -c:v libx264 -c:a aac OUT.mp4" in reply.error


# --- uploads: shared, cleaned up ---------------------------------------------------------------


def test_two_prompt_variants_share_one_upload_of_the_same_video(tmp_path):
    video, copy = tmp_path / "D001.mp4", tmp_path / "copy" / "D001.mp4"
    video.write_bytes(b"\x00\x01" * 3000)
    copy.parent.mkdir()
    copy.write_bytes(video.read_bytes())  # same content elsewhere: the same upload too
    inside = []  # the calls inside GeminiBackend._upload

    class Held(FakeFiles):
        def upload(self, *, file, config):  # held until all three calls are in: they overlap
            deadline = time.monotonic() + 5
            while len(inside) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            return super().upload(file=file, config=config)

    files = Held()
    models = FakeModels()
    backend = offline_backend(files=files, models=models, concurrency=4, media={"inline_max_mb": 0.001})
    upload = backend._upload
    backend._upload = lambda path, mime: inside.append(path) or upload(path, mime)
    requests = [
        Request("D001", "v1: Are they friends?", media={"video": video}),
        Request("D001", "v2: Do they know each other?", media={"video": video}),
        Request("D001", "v3: Strangers or friends?", media={"video": copy}),
    ]
    replies = backend.generate(requests)
    assert all(reply.ok for reply in replies) and len(inside) == 3
    # three calls at once, one upload: the other two waited for it
    assert files.uploads == [(str(video), "video/mp4")] or files.uploads == [(str(copy), "video/mp4")]
    uris = {contents[0].file_data.file_uri for _, contents, _ in models.calls}
    assert uris == {"https://files/files/up1"} and len(models.calls) == 3
    backend.close()
    assert files.deleted == ["files/up1"]


def test_an_upload_stuck_processing_is_deleted_and_retried(tmp_path):
    video = tmp_path / "v.mp4"
    video.write_bytes(b"\0" * 4000)
    files = FakeFiles(polls_to_active=None)  # never leaves PROCESSING
    media = {"inline_max_mb": 0.001, "processing_timeout_s": 0.05}
    backend = offline_backend(files=files, media=media, max_retries=1)
    (reply,) = backend.generate([Request("d1", "q", media={"video": video})])
    assert not reply.ok and reply.attempts == 2 and "still PROCESSING after 0.05 s" in reply.error
    assert [name for name, _ in files.uploads] == [str(video)] * 2
    assert files.deleted == ["files/up1", "files/up2"]  # each stuck upload deleted, none left behind
    backend.close()
    assert files.deleted == ["files/up1", "files/up2"]


def test_a_stuck_upload_that_recovers_on_retry_is_used_and_deleted_at_close(tmp_path):
    video = tmp_path / "v.mp4"
    video.write_bytes(b"\0" * 4000)

    class SlowFirst(FakeFiles):
        def get(self, *, name):
            file = super().get(name=name)
            return file if name != "files/up1" else types.File(name=name, uri=file.uri, state="PROCESSING")

    files = SlowFirst()
    backend = offline_backend(files=files, media={"inline_max_mb": 0.001, "processing_timeout_s": 0.05})
    (reply,) = backend.generate([Request("d1", "q", media={"video": video})])
    assert reply.ok and reply.attempts == 2 and files.deleted == ["files/up1"]
    backend.close()
    assert files.deleted == ["files/up1", "files/up2"]


def test_an_upload_about_to_expire_is_made_again(tmp_path, monkeypatch):
    video = tmp_path / "v.mp4"
    video.write_bytes(b"\0" * 4000)

    class Expiring(FakeFiles):
        def get(self, *, name):  # the first upload expires in 2 h, later ones in 48 h
            file = super().get(name=name)
            left = timedelta(hours=2) if name == "files/up1" else timedelta(hours=48)
            return file.model_copy(update={"expiration_time": datetime.now(UTC) + left})

    files = Expiring()
    backend = offline_backend(files=files, media={"inline_max_mb": 0.001})
    first = backend.contents(Request("d1", "v1", media={"video": video}))[0].file_data.file_uri
    monkeypatch.setattr(gemini, "UPLOAD_RENEW_BEFORE", timedelta(hours=3))  # as if an hour went by
    second = backend.contents(Request("d1", "v2", media={"video": video}))[0].file_data.file_uri
    third = backend.contents(Request("d1", "v3", media={"video": video}))[0].file_data.file_uri
    assert (first, second, third) == (
        "https://files/files/up1",
        "https://files/files/up2",
        "https://files/files/up2",
    )
    assert files.deleted == ["files/up1"]
    backend.close()
    assert files.deleted == ["files/up1", "files/up2"]


def test_failed_processing_and_errors_while_polling_leave_no_upload_behind(tmp_path):
    video = tmp_path / "v.mp4"
    video.write_bytes(b"\0" * 4000)
    media = {"inline_max_mb": 0.001}
    files = FakeFiles(final="FAILED")
    (reply,) = offline_backend(files=files, media=media).generate(
        [Request("d1", "q", media={"video": video})]
    )
    assert not reply.ok and reply.attempts == 1 and "processing FAILED" in reply.error  # not retried
    assert files.deleted == ["files/up1"]

    class Flaky(FakeFiles):
        def get(self, *, name):
            raise httpx.ConnectError("connection refused")

    files = Flaky()
    backend = offline_backend(files=files, media=media, max_retries=1)
    (reply,) = backend.generate([Request("d1", "q", media={"video": video})])
    assert not reply.ok and reply.attempts == 2 and reply.error.startswith("connection error")
    assert files.deleted == ["files/up1", "files/up2"]


class FilesApiServer:
    """A loopback Gemini API with the Files API as google-genai drives it: a resumable upload
    (POST upload/v1beta/files, then the session URL with `upload, finalize`), GET files/NAME
    to poll, DELETE files/NAME, and generateContent answering FINE.

    `polls_to_active`: polls before a file is ACTIVE (None: it stays PROCESSING).
    """

    def __init__(self, polls_to_active: int | None = 1, upload_s: float = 0.0):
        self.polls_to_active, self.upload_s = polls_to_active, upload_s
        self.started, self.uploaded, self.polls, self.deleted, self.generated = [], [], Counter(), [], []
        self.mimes: dict[str, str] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(200)
                for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802 - http.server API
                path = self.path.split("?")[0]
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if re.fullmatch(r"/upload/v1\w*/files", path):  # v1 or v1beta, as the SDK is set
                    with server._lock:
                        server.started.append((dict(self.headers), json.loads(raw)))
                        number = len(server.started)
                    self._reply({}, {"x-goog-upload-url": f"{server.root}/upload-session/{number}"})
                elif path.startswith("/upload-session/"):
                    time.sleep(server.upload_s)
                    number = path.rsplit("/", 1)[1]
                    with server._lock:
                        server.uploaded.append((self.headers.get("X-Goog-Upload-Command"), raw))
                    mime = camel(server.started[int(number) - 1][1]["file"])["mimeType"]
                    server.mimes[f"files/f{number}"] = mime
                    file = {
                        "name": f"files/f{number}",
                        "uri": f"{server.root}/files/f{number}",
                        "mimeType": mime,
                        "state": "PROCESSING",
                        "sizeBytes": str(len(raw)),
                    }
                    self._reply({"file": file}, {"x-goog-upload-status": "final"})
                else:  # models/...:generateContent
                    with server._lock:
                        server.generated.append(json.loads(raw))
                    self._reply(FINE)

            def do_GET(self):  # noqa: N802
                name = re.sub(r"^/v1\w*/", "", self.path.split("?")[0])
                with server._lock:
                    server.polls[name] += 1
                    done = server.polls_to_active is not None and server.polls[name] >= server.polls_to_active
                self._reply(
                    {
                        "name": name,
                        "uri": f"{server.root}/{name}",
                        "mimeType": server.mimes[name],
                        "state": "ACTIVE" if done else "PROCESSING",
                    }
                )

            def do_DELETE(self):  # noqa: N802
                with server._lock:
                    server.deleted.append(re.sub(r"^/v1\w*/", "", self.path.split("?")[0]))
                self._reply({})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.root = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> FilesApiServer:
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def test_files_api_over_loopback_one_shared_upload_deleted_at_close(tmp_path):
    video = tmp_path / "D001.mov"
    video.write_bytes(bytes(range(256)) * 40)
    requests = [
        Request("D001", f"{variant}: Do they know each other?", media={"video": video})
        for variant in ("v1", "v2")
    ]
    with FilesApiServer(polls_to_active=2, upload_s=0.3) as server:
        backend = GeminiBackend(
            entry(base_url=server.root, concurrency=2, media={"inline_max_mb": 0.001}), poll_s=0.01
        )
        replies = backend.generate(requests)
        assert all(reply.ok for reply in replies)
        assert len(server.started) == 1 and server.uploaded == [("upload, finalize", video.read_bytes())]
        headers, start = server.started[0]
        assert (
            headers["X-Goog-Upload-Protocol"] == "resumable"
            and camel(start["file"])["mimeType"] == "video/mov"
        )
        uris = set()
        for body in server.generated:
            part = camel(body["contents"][0]["parts"][0]["fileData"])
            uris.add((part["fileUri"], part["mimeType"]))
        assert uris == {(f"{server.root}/files/f1", "video/mov")} and len(server.generated) == 2
        assert server.deleted == []
        backend.close()
        assert server.deleted == ["files/f1"]


def test_files_api_over_loopback_a_stuck_upload_is_deleted(tmp_path):
    video = tmp_path / "v.mp4"
    video.write_bytes(b"\0" * 5000)
    with FilesApiServer(polls_to_active=None) as server:
        media = {"inline_max_mb": 0.001, "processing_timeout_s": 0.1}
        backend = GeminiBackend(entry(base_url=server.root, media=media, max_retries=1), poll_s=0.02)
        (reply,) = backend.generate([Request("d1", "q", media={"video": video})])
        assert not reply.ok and reply.attempts == 2 and "still PROCESSING" in reply.error
        assert server.generated == [] and server.deleted == ["files/f1", "files/f2"]
        backend.close()
        assert server.deleted == ["files/f1", "files/f2"]


# --- errors and retries as google-genai defines them --------------------------------------------


@pytest.mark.parametrize(
    ("code", "retryable"),
    [
        (408, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (504, True),
        (501, False),
        (400, False),
        (403, False),
        (404, False),
        (409, False),
    ],
)
def test_api_errors_are_retried_as_google_genai_retries_them(code, retryable):
    exc = errors.APIError.raise_error  # the SDK's own constructor picks ClientError / ServerError
    with pytest.raises(errors.APIError) as raised:
        exc(code, {"error": {"code": code, "message": "nope", "status": "X"}}, None)
    attempt = map_exception(raised.value)
    assert attempt.retryable is retryable and attempt.error.startswith(f"HTTP {code} X: nope")
    assert set(gemini.RETRY_STATUS_CODES) == set(_api_client._RETRY_HTTP_STATUS_CODES)


def quota_error(quota_id: str, metric: str, delay: str) -> errors.ClientError:
    """A 429 as the Gemini API sends it: QuotaFailure violations, Help, RetryInfo."""
    return errors.ClientError(
        429,
        {
            "error": {
                "code": 429,
                "message": "You exceeded your current quota, please check your plan and billing details."
                f" * Quota exceeded for metric: {metric}, limit: 50. Please retry in {delay}.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": metric,
                                "quotaId": quota_id,
                                "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"},
                                "quotaValue": "50",
                            }
                        ],
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.Help",
                        "links": [{"url": "https://ai.google.dev"}],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
                ],
            }
        },
    )


def test_a_rate_limit_waits_for_retry_delay_a_daily_quota_is_not_retried():
    metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
    minute = quota_error("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", metric, "20.04466179s")
    attempt = map_exception(minute)
    assert attempt.retryable and attempt.retry_after == pytest.approx(20.04466179)
    day = quota_error("GenerateRequestsPerDayPerProjectPerModel-FreeTier", metric, "41s")
    attempt = map_exception(day)
    assert (
        not attempt.retryable
        and "per-day quota GenerateRequestsPerDayPerProjectPerModel-FreeTier" in attempt.error
    )
    paid_day = quota_error("", "generativelanguage.googleapis.com/generate_requests_per_model_per_day", "41s")
    assert not map_exception(paid_day).retryable
    # the whole call: one attempt for the daily quota; the rate limit waits the RetryInfo delay
    (failed,) = offline_backend(models=FakeModels(day)).generate([Request("d1", "q")])
    assert not failed.ok and failed.attempts == 1
    waits = []
    models = FakeModels(minute)
    backend = offline_backend(models=models, max_retries=1)
    backend._sleep = waits.append
    (limited,) = backend.generate([Request("d1", "q")])
    assert limited.attempts == 2 and waits == [pytest.approx(20.04466179)]


def test_network_errors_timeouts_and_garbled_bodies_are_retried():
    assert map_exception(httpx.ReadTimeout("slow")).retryable
    assert map_exception(httpx.ConnectError("refused")).retryable
    assert map_exception(errors.UnknownApiResponseError("not JSON")).retryable
    assert not map_exception(ValueError("bad part")).retryable
    with FakeChatServer() as server:
        server.enqueue(Action.garbage())
        (reply,) = GeminiBackend(entry(base_url=server.root)).generate([Request("d1", "q")])
    assert reply.ok and reply.attempts == 2


def test_missing_key_variable_fails_fast(monkeypatch):
    monkeypatch.delenv("OMNI_TEST_GEMINI_KEY")
    with pytest.raises(RegistryError, match="OMNI_TEST_GEMINI_KEY is not set"):
        GeminiBackend(entry())


def test_audio_path_says_how_the_audio_reached_the_model(tmp_path):
    silent = tmp_path / "silent.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=duration=1:size=64x48:rate=5", "-pix_fmt", "yuv420p", str(silent))
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF" + b"\0" * 100)
    backend = offline_backend()
    replies = backend.generate(
        [
            Request("d1", "q", media={"video": DEMO_VIDEO}),
            Request("d2", "q", media={"video": silent}),
            Request("d3", "q", media={"audio": audio}),
            Request("d4", "q"),
        ]
    )
    assert [reply.audio_path for reply in replies] == ["in_video", "no_track", "separate_part", ""]


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
    assert row["audio_path"] == "separate_part"
    config = body["generationConfig"]
    assert (config["temperature"], config["seed"], config["maxOutputTokens"]) == (0, 42, 512 + 32768)
    inline = body["contents"][0]["parts"][0]["inlineData"]
    assert inline.get("mimeType", inline.get("mime_type")) == "audio/wav"  # the SDK's own spelling
    assert base64.b64decode(inline["data"]) == b"RIFF-tiny-wav"
    assert not failed.iloc[0]["ok"] and failed.iloc[0]["attempts"] == 1  # 401 is not retried
    assert failed.iloc[0]["finish_reason"] == ""  # no reply came
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


# --- json_schema mode: the subset Gemini documents ---------------------------------------------


def _documented_keywords() -> set[str]:
    """The keywords google-genai documents for GenerateContentConfig.response_json_schema."""
    text = " ".join(types.GenerateContentConfig.model_fields["response_json_schema"].description.split())
    listed = text[text.index("only the following properties are supported") : text.index("Cyclic")]
    return set(re.findall(r"`(\$?\w+)`", listed))


def _keywords(node) -> set[str]:
    """Every keyword used in a schema (property and definition names are not keywords)."""
    if isinstance(node, list):
        return set().union(*(_keywords(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = set(node)
    for key, value in node.items():
        subs = value.values() if key in ("properties", "$defs") else [value]
        found |= set().union(*(_keywords(sub) for sub in subs)) if subs else set()
    return found


def test_json_schema_mode_sends_only_the_keywords_gemini_documents():
    """The familiarity schema as google-genai puts it on the wire: no $schema, no inline-flag
    pattern (Gemini ignores pattern), the label as an enum of spellings the parser takes."""
    from pydantic import ValidationError

    from omnisocial.models.parsing import FAMILIARITY_SCHEMA, parse_familiarity
    from omnisocial.models.strict_schema import GEMINI_KEYWORDS

    documented = _documented_keywords()
    assert documented == GEMINI_KEYWORDS  # the module's list is the SDK's
    request = Request("d1", "q", settings={"response_schema": FAMILIARITY_SCHEMA})
    with FakeChatServer() as server:
        backend = GeminiBackend(entry(base_url=server.root, json_mode="json_schema"))
        (reply,) = backend.generate([request])
        config = server.bodies[0]["generationConfig"]
    assert reply.ok and config["responseMimeType"] == "application/json"
    sent = config["responseJsonSchema"]
    assert _keywords(sent) <= documented, _keywords(sent) - documented
    assert {"$schema", "pattern"} <= _keywords(FAMILIARITY_SCHEMA)  # what went out untouched before
    assert not {"$schema", "pattern"} & _keywords(sent)
    assert sent["title"] == "familiarity answer"  # on Gemini's list, unlike OpenAI strict mode
    labels = sent["properties"]["relationship_label"]["enum"]
    assert labels == ["FAMILIAR", "familiar", "STRANGER", "stranger"]
    for label in labels:  # every answer the sent schema allows parses
        assert parse_familiarity(json.dumps({"relationship_label": label}))["relationship_label"] in (
            "familiar",
            "stranger",
        )
    assert sent["properties"]["confidence"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert sent["required"] == ["relationship_label"]  # Gemini keeps optional fields optional
    types.JSONSchema.model_validate(sent)  # the SDK's own JSON Schema type (extra keys forbidden)
    with pytest.raises(ValidationError, match=r"\$schema"):
        types.JSONSchema.model_validate(FAMILIARITY_SCHEMA)  # the check is real: the raw schema fails it
    assert backend.request_bytes(request) - len(json.dumps(sent)) == backend.request_bytes(
        Request("d1", "q")
    )  # the size estimate counts the schema as sent


def test_gemini_schema_keeps_the_documented_keywords_and_converts_or_drops_the_rest():
    from omnisocial.models.strict_schema import gemini_schema

    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "kind": {"const": "turn"},
            "who": {"type": "string", "pattern": r"^(?i:left|right)$"},
            "code": {"type": "string", "pattern": r"^[A-Z]{3}\d+$", "minLength": 4},
            "times": {
                "type": "array",
                "items": {"type": "number", "exclusiveMinimum": 0, "examples": [1.5]},
                "minItems": 1,
            },
            "note": {"anyOf": [{"type": "string", "maxLength": 9}, {"type": "null"}]},
            "properties": {"type": "string"},  # a property named like a keyword stays
        },
        "required": ["kind", "who"],
        "additionalProperties": False,
    }
    out = gemini_schema(schema)
    assert "$schema" not in out and out["additionalProperties"] is False
    assert out["properties"]["kind"] == {"enum": ["turn"]}
    assert out["properties"]["who"] == {"type": "string", "enum": ["LEFT", "left", "RIGHT", "right"]}
    assert out["properties"]["code"] == {"type": "string"}  # not a word choice: dropped (Gemini ignores it)
    assert out["properties"]["times"] == {"type": "array", "items": {"type": "number"}, "minItems": 1}
    assert out["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert out["properties"]["properties"] == {"type": "string"}
    assert _keywords(out) <= _documented_keywords()
    assert schema["properties"]["who"]["pattern"] == r"^(?i:left|right)$"  # the input is left as it is
