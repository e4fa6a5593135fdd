"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp server) over httpx.

A request becomes one user message: the media parts first, then the prompt text.
- audio: an `input_audio` part (base64 WAV, format 'wav');
- video, `media.video_mode: frames`: JPEG frames sampled with ffmpeg at `media.fps`
  as `image_url` data URLs;
- video, `media.video_mode: video_url`: one `video_url` part (servers that take video, e.g. vLLM);
- a video's audio (`media.video_audio`): `separate_part` = the track as its own
  `input_audio` part; `in_video` = inside the video_url part, with vLLM's
  `mm_processor_kwargs.use_audio_in_video` (the default for Qwen2.5/Qwen3-Omni); `none`.
  Each reply says which path the call used (`Reply.audio_path`; `no_track` when the video
  has no audio track), and the responses tables keep it;
- image (or several: keys `image:000`, `image:001`, ... in order): one `image_url` part each.
Text-only requests send the prompt as a plain string (what every server accepts).
`prepare_media` builds a coming request's media parts ahead of its call (the streaming
driver's prefetch), JSON-encoded too, so the call thread only puts the body around them and
sends it: the same bytes httpx's `json=` would send (`json_bytes`), without encoding a
megabyte of base64 on the call's path, 16 calls at a time under one interpreter lock.
Which parts a known model family accepts is checked when the entry is validated
(`models.capabilities`, docs/api-capabilities.md), as are reasoning models' settings (no
temperature or top_p, `max_completion_tokens`); a request the service would refuse that the
entry's modalities do not show (a text-only request to an audio model) fails unsent.
`json_schema` mode sends the answer schema in the strict-mode subset (`models.strict_schema`)
with `strict: true`.

A reply is an answer only when it has text and was not cut: `finish_reason: length` or
`content_filter`, or empty content (reasoning models that spent the limit on reasoning),
are failures that keep their finish reason (`transport.reply_attempt`).

Retries follow the official OpenAI client's rules (`_should_retry`,
`_calculate_retry_timeout` in openai-python's `_base_client.py`): `x-should-retry`
true/false from the server wins; else 408, 409, 429 and 5xx are retried; the wait honours
`retry-after-ms`, then `retry-after`. A 429 `insufficient_quota` is not retried (the quota
does not come back within a run). `timeout_s` bounds each attempt as a whole: connect,
wait and body. The hand-written client is kept (not the SDK) so the project's policy,
redaction, concurrency gate and the vLLM extensions (`video_url`, `mm_processor_kwargs`)
stay in one place; every body it builds is checked against the SDK's request types in tests.

The API key (from the environment variable the entry names) goes in the Authorization
header and nowhere else; every error message and log line is redacted. Calls are bounded
to `concurrency` in flight per backend, whichever threads they come from.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

from omnisocial.models import media_io
from omnisocial.models.base import Reply, Request
from omnisocial.models.capabilities import is_reasoning, request_problem
from omnisocial.models.entries import (
    RegistryError,
    api_key_from_env,
    config_hash,
    generation_settings,
    validate_entry,
)
from omnisocial.models.strict_schema import strict_schema
from omnisocial.models.transport import (
    Attempt,
    CallReply,
    Gate,
    Redactor,
    RetryPolicy,
    body_text,
    call_with_retries,
    map_bounded,
    reply_attempt,
    retry_after_from_headers,
    should_retry,
    snippet,
)

logger = logging.getLogger(__name__)

# Entry keys that change what the model is sent or how it decodes (hence its answers).
OUTPUT_KEYS = ("model", "generation", "media", "json_mode", "max_tokens_field", "extra_body")


PROBE_TIMEOUT_S = 10.0


def json_bytes(data) -> bytes:
    """`data` as httpx's `json=` sends it (httpx._content.encode_json)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


_BASE64_TOKEN = "\x00omnisocial-base64\x00"


def _part_json(part: dict) -> bytes:
    """`json_bytes(part)` of a media part `_media_parts` built, its base64 payload (an
    `_audio_part`'s data, a `_data_url`'s after ';base64,', b64encode's output both) copied in
    rather than scanned by the JSON encoder: base64's characters need no escaping, so the bytes
    are the same, for a fraction of the CPU (a megabyte a step, 16 calls under one lock)."""
    kind = part.get("type")
    inner = part.get(kind) if kind in ("input_audio", "image_url", "video_url") else None
    field = "data" if kind == "input_audio" else "url"
    value = inner.get(field) if isinstance(inner, dict) else None
    if not isinstance(value, str):
        return json_bytes(part)
    head, marker, payload = ("", "", value) if kind == "input_audio" else value.partition(";base64,")
    if kind != "input_audio" and not (marker and head.startswith("data:")):
        return json_bytes(part)  # a file:// URL
    skeleton = {**part, kind: {**inner, field: head + marker + _BASE64_TOKEN}}
    before, _, after = json_bytes(skeleton).partition(json_bytes(_BASE64_TOKEN)[1:])
    return b"".join((before, payload.encode("ascii"), b'"', after))


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _audio_part(wav: bytes) -> dict:
    return {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(wav).decode("ascii"), "format": "wav"},
    }


class OpenAICompatBackend:
    """`Backend` for any server that speaks OpenAI chat completions."""

    def __init__(self, entry: Mapping, *, client: httpx.Client | None = None, sleep=None, rng=None):
        self.entry = validate_entry(entry)
        if self.entry["backend"] != "openai":
            raise RegistryError(f"model entry {self.entry['name']!r}: backend is {self.entry['backend']!r}")
        self.name: str = self.entry["name"]
        self.modalities: tuple[str, ...] = tuple(self.entry["modalities"])
        self.concurrency: int = self.entry["concurrency"]
        self.batch_size = 1
        self.url = self.entry["base_url"].rstrip("/") + "/chat/completions"
        api_key = api_key_from_env(self.entry)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.redact = Redactor([api_key])
        self.policy = RetryPolicy.from_entry(self.entry)
        timeout = float(self.entry["timeout_s"])
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._own_client = client is None
        self._client = client or httpx.Client(
            limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
            timeout=self._timeout,
        )
        self._gate = Gate(self.concurrency)
        self._sleep = sleep
        self._rng = rng
        self._reasoning = is_reasoning(self.entry)
        self._prepared: dict[tuple, _Prepared] = {}  # `prepare_media`
        self._prepared_keys: dict[tuple[str, str], tuple] = {}  # (modality, path as given) -> key
        self._prepared_lock = threading.Lock()
        # a placeholder for a prepared part in the body's skeleton: no prompt holds it
        self._token = f"\x00omnisocial-part-{uuid.uuid4().hex}-"

    # --- Backend protocol -----------------------------------------------------------------

    def fingerprint(self) -> str:
        """API model id plus a hash of every setting that changes the answers.

        The server's own version (response `model` + `system_fingerprint`) is recorded per
        reply as `model_version`; it is unknown before the first call.
        """
        return f"openai:{self.entry['model']}#{config_hash(self.entry, OUTPUT_KEYS)}"

    def settings_for(self, request: Request) -> dict:
        """The decoding settings a call for `request` uses (entry generation + request overrides).

        Reasoning models take no temperature or top_p (a request's are dropped: the model
        cannot honour them), and a request's output limit never goes below the entry's,
        since their reasoning tokens count against it (a judge's 32 tokens would leave
        nothing for the answer).
        """
        settings = generation_settings(self.entry, request.settings)
        if self._reasoning:
            settings["temperature"] = None
            settings["top_p"] = None
            floor = int(self.entry["generation"]["max_new_tokens"])
            settings["max_new_tokens"] = max(int(settings["max_new_tokens"]), floor)
        return settings

    def generate(self, requests: list[Request]) -> list[Reply]:
        return map_bounded(self._generate_one, list(requests), self.concurrency)

    def probe(self) -> str | None:
        """One GET of `{base_url}/models`: None when the server answers and takes the key, else why not.

        Only an unreachable host, a timeout or HTTP 401/403 count: a server without a
        models list (404) or with a passing error still serves chat completions.
        """
        url = self.entry["base_url"].rstrip("/") + "/models"
        seconds = min(float(self.entry["timeout_s"]), PROBE_TIMEOUT_S)
        try:
            response = self._client.get(url, headers=self._headers, timeout=seconds)
        except httpx.TimeoutException:
            return f"probe: {url} did not answer within {seconds:g} s"
        except httpx.TransportError as exc:
            return snippet(self.redact(f"probe: {url} is unreachable ({type(exc).__name__}: {exc})"))
        if response.status_code in (401, 403):
            body = snippet(self.redact(body_text(response.text)))
            return f"probe: {url} refused the credentials (HTTP {response.status_code}: {body})"
        return None

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> OpenAICompatBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- request building -----------------------------------------------------------------

    def content_parts(self, request: Request) -> str | list[dict]:
        """The user message content for `request` (media parts first, then the prompt)."""
        return self._content(request)[0]

    def _content(self, request: Request) -> tuple[str | list[dict], str, dict[int, bytes]]:
        """(user message content, audio path: a `base.AUDIO_PATHS` value, the JSON of the
        parts `prepare_media` built, by the part's id)."""
        parts: list[dict] = []
        audio_path = ""
        encoded: dict[int, bytes] = {}
        for modality, path in request.media.items():
            path = Path(path)
            prepared = self._take_prepared(modality, path)
            if prepared is not None:
                encoded.update(zip(map(id, prepared.parts), prepared.encoded, strict=True))
                built = (prepared.parts, prepared.audio_path)
            else:
                built = self._media_parts(modality, path)
            parts.extend(built[0])
            audio_path = built[1] or audio_path
        if not parts:
            return request.prompt, audio_path, encoded
        parts.append({"type": "text", "text": request.prompt})
        return parts, audio_path, encoded

    def _media_parts(
        self, modality: str, path: Path, known: media_io.Known | None = None
    ) -> tuple[list[dict], str]:
        """(the message parts of one media file, its audio path: '' when it carries no audio)."""
        if modality == "audio":
            return [
                _audio_part(media_io.audio_wav(path, self.entry["media"]["audio_sample_rate"]))
            ], "separate_part"
        if modality == "image" or modality.startswith("image:"):  # image:NNN = one of several frames
            url = _data_url(media_io.mime_type(path), path.read_bytes())
            return [{"type": "image_url", "image_url": {"url": url}}], ""
        if modality == "video":
            return self._video_parts(path, known)
        raise ValueError(f"unsupported media kind {modality!r}")

    # --- media prepared ahead of the call (the streaming driver's prefetch) -------------------

    def prepare_media(
        self, media: Mapping[str, str | os.PathLike], known: Mapping[str, media_io.Known] | None = None
    ) -> None:
        """Build the message parts of a coming request's media now (frames sampled, audio
        extracted, files base64-encoded), so its call only sends them; kept until that request
        is built or `release_media`. A file that cannot be prepared is left to the call, which
        records why it failed. Keyed by path, size and mtime: a changed file is built afresh.
        `known[key]` answers `probe` and `sample_frames` for that file as `media_io` would (a
        streamed step: from its segments, `streaming.media.StepMedia`), sparing a probe and a
        decode per step."""
        for modality, path in media.items():
            path = Path(path)
            try:
                parts, audio_path = self._media_parts(modality, path, (known or {}).get(modality))
                key = _prepared_key(modality, path)
            except (media_io.MediaError, RegistryError, OSError, ValueError):
                continue
            prepared = _Prepared(parts, audio_path, [_part_json(part) for part in parts])
            with self._prepared_lock:
                self._prepared[key] = prepared
                self._prepared_keys[(modality, str(path))] = key

    def release_media(self, media: Mapping[str, str | os.PathLike]) -> None:
        """Drop what `prepare_media` built for `media` and no request used (a cached step).
        Found by the path as given (no stat: the driver releases every answered step's media,
        on the path from a reply to the next call)."""
        if not self._prepared_keys:
            return
        with self._prepared_lock:
            for modality, path in media.items():
                key = self._prepared_keys.pop((modality, str(Path(path))), None)
                if key is not None:
                    self._prepared.pop(key, None)

    def _take_prepared(self, modality: str, path: Path) -> _Prepared | None:
        if not self._prepared:
            return None
        key = _prepared_key(modality, path, missing_ok=True)
        with self._prepared_lock:
            prepared = self._prepared.pop(key, None)
            if prepared is not None:
                self._prepared_keys.pop((modality, str(path)), None)
            return prepared

    def _video_parts(self, path: Path, known: media_io.Known | None = None) -> tuple[list[dict], str]:
        cfg = self.entry["media"]
        choice = cfg["video_audio"]
        if choice is None:  # the entry's modalities leave out video, so validation let it pass
            raise RegistryError(
                f"model entry {self.name!r}: media.video_audio: a video request needs the entry to "
                "say how its audio is sent (in_video, separate_part or none)"
            )
        if not path.is_file():
            raise media_io.MediaError(f"{path}: no such file")
        if cfg["video_mode"] == "video_url":
            if cfg["video_url_scheme"] == "file":
                url = path.resolve().as_uri()
            else:
                url = _data_url(media_io.mime_type(path), path.read_bytes())
            parts = [{"type": "video_url", "video_url": {"url": url}}]
        else:
            sample = known.sample_frames if known is not None else partial(media_io.sample_frames, path)
            frames = sample(
                fps=cfg["fps"],
                max_frames=cfg["max_frames"],
                width=cfg["frame_width"],
                quality=cfg["jpeg_quality"],
            )
            parts = [
                {"type": "image_url", "image_url": {"url": _data_url("image/jpeg", frame)}}
                for frame in frames
            ]
        if choice == "none":
            return parts, "none"
        if choice == "in_video":
            info = known.probe() if known is not None else media_io.probe(path)
            return parts, "in_video" if info["has_audio"] else "no_track"
        track = media_io.video_audio_track(path, cfg["audio_sample_rate"])
        if track is None:
            return parts, "no_track"
        return [*parts, _audio_part(track)], "separate_part"

    def body(self, request: Request) -> dict:
        """The chat-completions JSON body for `request`."""
        return self._build(request)[0]

    def _build(self, request: Request) -> tuple[dict, str, dict[int, bytes]]:
        """(chat-completions body, audio path, the prepared parts' JSON) for `request`."""
        settings = self.settings_for(request)
        content, audio_path, encoded = self._content(request)
        refused = request_problem(self.entry["model"], content)
        if refused is not None:  # a call the service refuses is not made
            raise RegistryError(f"model entry {self.name!r}: {refused}")
        messages = []
        if request.system:
            # reasoning models take the system turn as `developer` (OpenAI maps it for them)
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": content})
        body = {"model": self.entry["model"], "messages": messages}
        for key in ("temperature", "top_p"):  # None: not sent, the model's own default
            if settings.get(key) is not None:
                body[key] = settings[key]
        body["seed"] = settings["seed"]
        body[self.entry["max_tokens_field"]] = settings["max_new_tokens"]
        body["stream"] = False
        schema = settings.get("response_schema")
        if schema is not None and self.entry["json_mode"] == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif schema is not None and self.entry["json_mode"] == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": strict_schema(schema), "strict": True},
            }
        extra = json.loads(json.dumps(self.entry["extra_body"]))  # a deep copy, never the entry's
        if audio_path == "in_video":
            kwargs = extra.setdefault("mm_processor_kwargs", {})
            kwargs["use_audio_in_video"] = True
        body.update(extra)
        return body, audio_path, encoded

    def _encode(self, body: dict, encoded: Mapping[int, bytes]) -> bytes:
        """`json_bytes(body)`, with the prepared parts' JSON put in as built ahead: the body is
        encoded with a placeholder string in each one's place, and each placeholder's JSON is
        replaced by the part's (JSON encodes a list's items independently, so the bytes are the
        same)."""
        content = body["messages"][-1]["content"]
        if not encoded or not isinstance(content, list):
            return json_bytes(body)
        pieces, skeleton = [], []
        for part in content:
            raw = encoded.get(id(part))
            if raw is None:
                skeleton.append(part)
            else:
                skeleton.append(f"{self._token}{len(pieces)}")
                pieces.append(raw)
        messages = [*body["messages"][:-1], {**body["messages"][-1], "content": skeleton}]
        rest = json_bytes({**body, "messages": messages})
        out = []
        for index, raw in enumerate(pieces):
            before, found, rest = rest.partition(json_bytes(f"{self._token}{index}"))
            if not found:  # cannot happen: the skeleton holds each placeholder once
                return json_bytes(body)
            out += [before, raw]
        out.append(rest)
        return b"".join(out)

    # --- calling --------------------------------------------------------------------------

    def _generate_one(self, request: Request) -> Reply:
        label = f"{self.name} item {request.item_id}"
        try:
            body, audio_path, encoded = self._build(request)
            data = self._encode(body, encoded)
        except (media_io.MediaError, RegistryError, OSError, ValueError, TypeError) as exc:
            message = self.redact(f"request not built: {exc}")
            logger.warning("%s: %s", label, message)
            return CallReply(text=None, error=message, attempts=0)
        kwargs = {}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        if self._rng is not None:
            kwargs["rng"] = self._rng
        reply = call_with_retries(lambda: self._attempt(data), self.policy, self.redact, label, **kwargs)
        return dataclasses.replace(reply, audio_path=audio_path)

    def _attempt(self, data: bytes) -> Attempt:
        """One POST of the encoded body `data` (`json_bytes`)."""
        seconds = float(self.entry["timeout_s"])
        headers = {**self._headers, "Content-Type": "application/json"}
        with self._gate:
            deadline = time.monotonic() + seconds
            try:
                # Streamed so the deadline bounds the whole attempt: httpx's timeouts bound
                # each connect and read, and a server that trickles its body never trips them.
                with self._client.stream(
                    "POST", self.url, content=data, headers=headers, timeout=self._timeout
                ) as response:
                    ack_now(response)
                    chunks = []
                    for chunk in response.iter_bytes():
                        chunks.append(chunk)
                        if time.monotonic() > deadline:
                            raise httpx.ReadTimeout(f"body still arriving after {seconds:g} s")
                    content = b"".join(chunks)
            except httpx.TimeoutException as exc:
                return Attempt(
                    error=f"timeout after {seconds:g} s ({type(exc).__name__})",
                    retryable=True,
                )
            except httpx.TransportError as exc:
                return Attempt(error=f"connection error: {type(exc).__name__}: {exc}", retryable=True)
        # iter_bytes decoded any gzip/br already: the new Response must not decode it again
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DECODED_HEADERS]
        return parse_response(httpx.Response(response.status_code, headers=headers, content=content))


_DECODED_HEADERS = ("content-encoding", "content-length", "transfer-encoding")


@dataclass(frozen=True)
class _Prepared:
    """A media file's message parts built ahead (`prepare_media`): each part's JSON too."""

    parts: list[dict]
    audio_path: str
    encoded: list[bytes]


_QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux


def ack_now(response: httpx.Response) -> None:
    """Acknowledge the reply's headers at once (TCP_QUICKACK), before reading its body.

    A server that writes a reply's headers and body apart with Nagle's algorithm on (Python's
    http.server, cpp-httplib as in llama.cpp's server) holds the body until the client ACKs
    the headers, and Linux delays that ACK up to 40 ms, on every call (what it cost the
    streaming rule: docs/performance.md#models). Asking for a quick ACK here sends the pending
    one now; with a server that sends both together (uvicorn, Go) nothing is pending and it
    costs one system call."""
    if _QUICKACK is None:
        return
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


def _prepared_key(modality: str, path: Path, missing_ok: bool = False) -> tuple:
    try:
        stat = path.stat()
    except FileNotFoundError:
        if not missing_ok:
            raise
        return (modality, str(path.resolve()), None, None)
    return (modality, str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def _error_code(data) -> str:
    """The `error.code` (or `error.type`) of an OpenAI error body; '' when there is none."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return ""
    return str(error.get("code") or error.get("type") or "")


# A 429 with one of these codes is a billing state, not a rate: retrying cannot help.
NOT_RETRIED_CODES = ("insufficient_quota", "billing_hard_limit_reached")


def parse_response(response: httpx.Response) -> Attempt:
    """One HTTP response -> an `Attempt` (text and model version, or an error and whether to retry)."""
    status = response.status_code
    if status >= 400:
        try:
            code = _error_code(response.json())
        except ValueError:
            code = ""
        retryable = should_retry(status, response.headers) and code not in NOT_RETRIED_CODES
        suffix = f" ({code}: not retried)" if code in NOT_RETRIED_CODES else ""
        return Attempt(
            error=f"HTTP {status}: {body_text(response.text)}{suffix}",
            retryable=retryable,
            retry_after=retry_after_from_headers(response.headers) if retryable else None,
        )
    try:
        data = response.json()
    except ValueError:
        return Attempt(
            error=f"unreadable response body (HTTP {status}): {body_text(response.text)}", retryable=True
        )
    if not isinstance(data, dict):
        return Attempt(error=f"unexpected response body: {body_text(response.text)}", retryable=True)
    if data.get("error"):
        return Attempt(error=f"server error in body: {body_text(str(data['error']))}", retryable=True)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Attempt(error=f"response has no choices: {body_text(response.text)}", retryable=True)
    message = choices[0].get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if content is None:  # a structured-outputs refusal is the model's answer, scored as a non-answer
        content = message.get("refusal") or ""
    version = str(data.get("model") or "")
    if data.get("system_fingerprint"):
        version = f"{version}+{data['system_fingerprint']}"
    finish = str(choices[0].get("finish_reason") or "")
    return reply_attempt(
        str(content), finish, version, truncated=finish == "length", blocked=finish == "content_filter"
    )
