"""Gemini through google-genai: `client.models.generate_content` with one user turn of parts.

Media go inline (`Part.from_bytes` with their MIME type) while a request's media total at
most `media.inline_max_mb`; larger requests upload their media through the Files API
(uploads are reused for the same file within a run and deleted on `close`). The API key
comes from the environment variable the entry names; the SDK's own retries are switched
off so that this module's retry policy (exponential backoff with full jitter, Retry-After
or the API's RetryInfo honoured, 408/429/5xx and network errors retried) is the only one,
and every error message is redacted. An `entry.base_url` overrides the endpoint (tests
point it at a loopback server).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from omnisocial.models import media_io
from omnisocial.models.base import Reply, Request
from omnisocial.models.entries import RegistryError, config_hash, generation_settings, validate_entry
from omnisocial.models.openai_compat import api_key_from_env
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

OUTPUT_KEYS = ("model", "generation", "json_mode")
# google-genai talks through httpx or its fork httpx2, depending on the version: catch both.
_TRANSPORT = [httpx]
try:
    import httpx2

    _TRANSPORT.append(httpx2)
except ImportError:  # pragma: no cover - older google-genai
    pass
_TIMEOUTS = tuple(module.TimeoutException for module in _TRANSPORT)
_NETWORK = tuple(module.TransportError for module in _TRANSPORT)
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


PROBE_TIMEOUT_S = 10.0


def retry_delay_from_error(exc) -> float | None:
    """Seconds to wait from a google-genai APIError: Retry-After header, else RetryInfo.retryDelay."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        try:
            seconds = parse_retry_after(headers.get("retry-after"))
        except AttributeError:
            seconds = None
        if seconds is not None:
            return seconds
    details = getattr(exc, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details", []) if isinstance(error, dict) else []:
        if isinstance(item, dict) and "retryDelay" in item:
            match = _DELAY.match(str(item["retryDelay"]))
            if match:
                return float(match.group(1))
    return None


def map_exception(exc: BaseException) -> Attempt:
    """An exception from the SDK -> a failed `Attempt` saying whether to retry."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        code = int(exc.code or 0)
        status = f" {exc.status}" if exc.status else ""
        message = exc.message or str(exc)
        return Attempt(
            error=f"HTTP {code}{status}: {body_text(message)}",
            retryable=is_retryable_status(code),
            retry_after=retry_delay_from_error(exc),
        )
    if isinstance(exc, _TIMEOUTS):
        return Attempt(error=f"timeout ({type(exc).__name__})", retryable=True)
    if isinstance(exc, _NETWORK):
        return Attempt(error=f"connection error: {type(exc).__name__}: {exc}", retryable=True)
    return Attempt(error=f"{type(exc).__name__}: {exc}", retryable=False)


def reply_text(response) -> tuple[str, str]:
    """(text, finish reason) of the first candidate, thought parts left out; ('', why) when blocked."""
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        feedback = getattr(response, "prompt_feedback", None)
        reason = getattr(feedback, "block_reason", None)
        return "", f"blocked:{getattr(reason, 'value', reason)}" if reason else "no_candidates"
    candidate = candidates[0]
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    text = "".join(
        part.text for part in parts if getattr(part, "text", None) and not getattr(part, "thought", False)
    )
    reason = getattr(candidate, "finish_reason", None)
    return text, str(getattr(reason, "value", reason) or "")


class GeminiBackend:
    """`Backend` for Gemini models through google-genai."""

    def __init__(self, entry: Mapping, *, client=None, sleep=None, rng=None, poll_s: float = 2.0):
        self.entry = validate_entry(entry)
        if self.entry["backend"] != "gemini":
            raise RegistryError(f"model entry {self.entry['name']!r}: backend is {self.entry['backend']!r}")
        self.name: str = self.entry["name"]
        self.modalities: tuple[str, ...] = tuple(self.entry["modalities"])
        self.concurrency: int = self.entry["concurrency"]
        self.batch_size = 1
        api_key = api_key_from_env(self.entry)
        self.redact = Redactor([api_key])
        self.policy = RetryPolicy.from_entry(self.entry)
        self._client = client if client is not None else self._make_client(api_key)
        self._gate = Gate(self.concurrency)
        self._sleep = sleep
        self._rng = rng
        self._poll_s = poll_s
        self._uploads: dict[tuple, object] = {}
        self._upload_lock = threading.Lock()

    def _make_client(self, api_key: str):
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=self.entry["base_url"],
            timeout=int(float(self.entry["timeout_s"]) * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours
        )
        return genai.Client(api_key=api_key, http_options=options)

    # --- Backend protocol -----------------------------------------------------------------

    def fingerprint(self) -> str:
        return f"gemini:{self.entry['model']}#{config_hash(self.entry, OUTPUT_KEYS)}"

    def settings_for(self, request: Request) -> dict:
        """The decoding settings a call for `request` uses (entry generation + request overrides)."""
        return generation_settings(self.entry, request.settings)

    def generate(self, requests: list[Request]) -> list[Reply]:
        return map_bounded(self._generate_one, list(requests), self.concurrency)

    def probe(self) -> str | None:
        """One `models.get` of the entry's model: None when the endpoint answers and takes the key.

        Only an unreachable endpoint, a timeout, or a refused key (HTTP 401/403, or 400 that
        names the API key, as Gemini answers a bad key) count.
        """
        from google.genai import errors, types

        options = types.HttpOptions(timeout=int(min(float(self.entry["timeout_s"]), PROBE_TIMEOUT_S) * 1000))
        try:
            self._client.models.get(
                model=self.entry["model"], config=types.GetModelConfig(http_options=options)
            )
        except errors.APIError as exc:
            code, message = int(exc.code or 0), str(exc.message or exc)
            if code in (401, 403) or (code == 400 and "api key" in message.lower()):
                return snippet(self.redact(f"probe: Gemini refused the credentials (HTTP {code}: {message})"))
            return None
        except Exception as exc:
            attempt = map_exception(exc)
            if attempt.retryable:
                return snippet(self.redact(f"probe: the Gemini endpoint is unreachable ({attempt.error})"))
        return None

    def close(self) -> None:
        for file in list(self._uploads.values()):
            try:
                self._client.files.delete(name=file.name)
            except Exception as exc:  # best effort: uploads expire on their own after 48 h
                logger.info("%s: could not delete upload %s: %s", self.name, file.name, self.redact(exc))
        self._uploads.clear()

    def __enter__(self) -> GeminiBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- request building -----------------------------------------------------------------

    def config(self, request: Request):
        from google.genai import types

        settings = generation_settings(self.entry, request.settings)
        fields = {
            "temperature": settings["temperature"],
            "top_p": settings["top_p"],
            "seed": settings["seed"],
            "max_output_tokens": settings["max_new_tokens"],
        }
        if request.system:
            fields["system_instruction"] = request.system
        schema = settings.get("response_schema")
        if schema is not None and self.entry["json_mode"] != "off":
            fields["response_mime_type"] = "application/json"
            if self.entry["json_mode"] == "json_schema":
                fields["response_json_schema"] = schema
        return types.GenerateContentConfig(**fields)

    def inline(self, request: Request) -> bool:
        """Whether the request's media are small enough to go inline."""
        total = sum(Path(path).stat().st_size for path in request.media.values())
        return total <= float(self.entry["media"]["inline_max_mb"]) * 1024 * 1024

    def contents(self, request: Request, *, upload: bool | None = None) -> list:
        """The parts of the one user turn: media first, then the prompt."""
        from google.genai import types

        for path in request.media.values():
            if not Path(path).is_file():
                raise media_io.MediaError(f"{path}: no such file")
        use_files = not self.inline(request) if upload is None else upload
        parts = []
        for path in request.media.values():
            path = Path(path)
            mime = media_io.mime_type(path)
            if use_files:
                file = self._upload(path, mime)
                parts.append(types.Part.from_uri(file_uri=file.uri, mime_type=file.mime_type or mime))
            else:
                parts.append(types.Part.from_bytes(data=path.read_bytes(), mime_type=mime))
        parts.append(types.Part.from_text(text=request.prompt))
        return parts

    def _upload(self, path: Path, mime: str):
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        with self._upload_lock:
            if key in self._uploads:
                return self._uploads[key]
        file = self._client.files.upload(file=str(path), config={"mime_type": mime})
        deadline = time.monotonic() + float(self.entry["timeout_s"])
        while str(getattr(file.state, "value", file.state)) == "PROCESSING":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path}: upload still processing after {self.entry['timeout_s']:g} s")
            time.sleep(self._poll_s)
            file = self._client.files.get(name=file.name)
        if str(getattr(file.state, "value", file.state)) == "FAILED":
            raise media_io.MediaError(f"{path}: Files API processing failed: {file.error}")
        with self._upload_lock:
            self._uploads[key] = file
        return file

    # --- calling --------------------------------------------------------------------------

    def _generate_one(self, request: Request) -> Reply:
        label = f"{self.name} item {request.item_id}"
        try:
            config = self.config(request)
            for path in request.media.values():
                if not Path(path).is_file():
                    raise media_io.MediaError(f"{path}: no such file")
        except (media_io.MediaError, RegistryError, OSError, ValueError) as exc:
            message = self.redact(f"request not built: {exc}")
            logger.warning("%s: %s", label, message)
            return CallReply(text=None, error=message, attempts=0)
        kwargs = {}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        if self._rng is not None:
            kwargs["rng"] = self._rng
        return call_with_retries(
            lambda: self._attempt(request, config), self.policy, self.redact, label, **kwargs
        )

    def _attempt(self, request: Request, config) -> Attempt:
        with self._gate:
            try:
                contents = self.contents(request)
                response = self._client.models.generate_content(
                    model=self.entry["model"], contents=contents, config=config
                )
            except media_io.MediaError as exc:
                return Attempt(error=str(exc), retryable=False)
            except Exception as exc:
                return map_exception(exc)
        text, finish = reply_text(response)
        version = str(getattr(response, "model_version", None) or self.entry["model"])
        return Attempt(text=text, model_version=version, finish_reason=finish)
