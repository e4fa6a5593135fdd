"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp server) over httpx.

A request becomes one user message: the media parts first, then the prompt text.
- audio: an `input_audio` part (base64 WAV, format 'wav');
- video, `media.video_mode: frames`: JPEG frames sampled with ffmpeg at `media.fps`
  as `image_url` data URLs, plus the audio track as `input_audio`;
- video, `media.video_mode: video_url`: one `video_url` part (servers that take video, e.g. vLLM);
- image (or several: keys `image:000`, `image:001`, ... in order): one `image_url` part each.
Text-only requests send the prompt as a plain string (what every server accepts).

The API key (from the environment variable the entry names) goes in the Authorization
header and nowhere else; every error message and log line is redacted. Calls are bounded
to `concurrency` in flight per backend, whichever threads they come from.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Mapping
from pathlib import Path

import httpx

from omnisocial.models import media_io
from omnisocial.models.base import Reply, Request
from omnisocial.models.entries import RegistryError, config_hash, generation_settings, validate_entry
from omnisocial.models.transport import (
    Attempt,
    CallReply,
    Gate,
    Redactor,
    RetryPolicy,
    body_text,
    call_with_retries,
    is_retryable_status,
    map_bounded,
    parse_retry_after,
    snippet,
)

logger = logging.getLogger(__name__)

# Entry keys that change what the model is sent or how it decodes (hence its answers).
OUTPUT_KEYS = ("model", "generation", "media", "json_mode", "max_tokens_field", "extra_body")


PROBE_TIMEOUT_S = 10.0


def api_key_from_env(entry: Mapping) -> str | None:
    """The key from the environment variable the entry names; None when it names none."""
    variable = entry.get("api_key_env")
    if not variable:
        return None
    value = os.environ.get(variable)
    if not value:
        raise RegistryError(
            f"model entry {entry.get('name')!r}: api_key_env: environment variable {variable} is not set"
        )
    return value.strip()


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

    # --- Backend protocol -----------------------------------------------------------------

    def fingerprint(self) -> str:
        """API model id plus a hash of every setting that changes the answers.

        The server's own version (response `model` + `system_fingerprint`) is recorded per
        reply as `model_version`; it is unknown before the first call.
        """
        return f"openai:{self.entry['model']}#{config_hash(self.entry, OUTPUT_KEYS)}"

    def settings_for(self, request: Request) -> dict:
        """The decoding settings a call for `request` uses (entry generation + request overrides)."""
        return generation_settings(self.entry, request.settings)

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
        media_cfg = self.entry["media"]
        parts: list[dict] = []
        for modality, path in request.media.items():
            path = Path(path)
            if modality == "audio":
                parts.append(_audio_part(media_io.audio_wav(path, media_cfg["audio_sample_rate"])))
            elif modality == "image" or modality.startswith("image:"):  # image:NNN = one of several frames
                parts.append(
                    {
                        "type": "image_url",
                        "image_url": {"url": _data_url(media_io.mime_type(path), path.read_bytes())},
                    }
                )
            elif modality == "video":
                parts.extend(self._video_parts(path))
            else:
                raise ValueError(f"unsupported media kind {modality!r}")
        if not parts:
            return request.prompt
        parts.append({"type": "text", "text": request.prompt})
        return parts

    def _video_parts(self, path: Path) -> list[dict]:
        cfg = self.entry["media"]
        if cfg["video_mode"] == "video_url":
            if not path.is_file():
                raise media_io.MediaError(f"{path}: no such file")
            if cfg["video_url_scheme"] == "file":
                url = path.resolve().as_uri()
            else:
                url = _data_url(media_io.mime_type(path), path.read_bytes())
            return [{"type": "video_url", "video_url": {"url": url}}]
        frames = media_io.sample_frames(
            path,
            fps=cfg["fps"],
            max_frames=cfg["max_frames"],
            width=cfg["frame_width"],
            quality=cfg["jpeg_quality"],
        )
        parts = [
            {"type": "image_url", "image_url": {"url": _data_url("image/jpeg", frame)}} for frame in frames
        ]
        if cfg["video_audio"]:
            track = media_io.video_audio_track(path, cfg["audio_sample_rate"])
            if track is not None:
                parts.append(_audio_part(track))
        return parts

    def body(self, request: Request) -> dict:
        """The chat-completions JSON body for `request`."""
        settings = generation_settings(self.entry, request.settings)
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": self.content_parts(request)})
        body = {
            "model": self.entry["model"],
            "messages": messages,
            "temperature": settings["temperature"],
            "top_p": settings["top_p"],
            "seed": settings["seed"],
            self.entry["max_tokens_field"]: settings["max_new_tokens"],
            "stream": False,
        }
        schema = settings.get("response_schema")
        if schema is not None and self.entry["json_mode"] == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif schema is not None and self.entry["json_mode"] == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema},
            }
        body.update(self.entry["extra_body"])
        return body

    # --- calling --------------------------------------------------------------------------

    def _generate_one(self, request: Request) -> Reply:
        label = f"{self.name} item {request.item_id}"
        try:
            body = self.body(request)
        except (media_io.MediaError, RegistryError, OSError, ValueError) as exc:
            message = self.redact(f"request not built: {exc}")
            logger.warning("%s: %s", label, message)
            return CallReply(text=None, error=message, attempts=0)
        kwargs = {}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        if self._rng is not None:
            kwargs["rng"] = self._rng
        return call_with_retries(lambda: self._attempt(body), self.policy, self.redact, label, **kwargs)

    def _attempt(self, body: dict) -> Attempt:
        with self._gate:
            try:
                response = self._client.post(
                    self.url, json=body, headers=self._headers, timeout=self._timeout
                )
            except httpx.TimeoutException as exc:
                return Attempt(
                    error=f"timeout after {self.entry['timeout_s']:g} s ({type(exc).__name__})",
                    retryable=True,
                )
            except httpx.TransportError as exc:
                return Attempt(error=f"connection error: {type(exc).__name__}: {exc}", retryable=True)
        return parse_response(response)


def parse_response(response: httpx.Response) -> Attempt:
    """One HTTP response -> an `Attempt` (text and model version, or an error and whether to retry)."""
    status = response.status_code
    if is_retryable_status(status):
        return Attempt(
            error=f"HTTP {status}: {body_text(response.text)}",
            retryable=True,
            retry_after=parse_retry_after(response.headers.get("retry-after")),
        )
    if status >= 400:
        return Attempt(error=f"HTTP {status}: {body_text(response.text)}", retryable=False)
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
    if content is None:
        content = message.get("refusal") or ""
    version = str(data.get("model") or "")
    if data.get("system_fingerprint"):
        version = f"{version}+{data['system_fingerprint']}"
    return Attempt(
        text=str(content), model_version=version, finish_reason=str(choices[0].get("finish_reason") or "")
    )
