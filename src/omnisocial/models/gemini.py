"""Gemini through google-genai: `client.models.generate_content` with one user turn of parts.

Media go inline (`Part.from_bytes` with the MIME type Gemini lists) while the request as
sent, media base64-encoded, stays within `media.inline_max_mb` (Gemini's 20 MB request
limit); larger requests upload their media through the Files API. An upload is shared by
every request for the same content (keyed by sha256: concurrent callers wait for the first
upload), an upload still PROCESSING after `media.processing_timeout_s` is deleted and the
call retried, one within an hour of its 48 h expiry made again, and every upload is
deleted on `close`. Matroska (.mkv) and .m4a are not on Gemini's list: they are remuxed to
MP4 / AAC (streams copied, not re-encoded), or refused with the reason.

Thinking models (Gemini 2.5, 3) spend output tokens on thinking before the answer, so the
output limit sent is the answer's `generation.max_new_tokens` plus room for thinking unless
the entry sets `max_output_tokens`; `thinking_budget` (2.5) / `thinking_level` (3) go in
`ThinkingConfig`. A reply cut by the limit (MAX_TOKENS) or blocked (SAFETY and the other
filters, or a blocked prompt) is a failed call that keeps its finish reason, never an
empty answer (`transport.reply_attempt`).

`json_mode: json_schema` sends the answer schema as `responseJsonSchema` in the subset
Gemini documents (`strict_schema.gemini_schema`).

The API key comes from the environment variable the entry names; the SDK's own retries are
switched off so that this module's retry policy is the only one: the status codes the SDK
retries (408, 429, 500, 502, 503, 504), timeouts and network errors, with exponential
backoff and full jitter, never sooner than Retry-After or the API's RetryInfo.retryDelay;
a 429 for a per-day quota is not retried (it resets the next day, not in seconds). Every
error message is redacted. An `entry.base_url` overrides the endpoint (tests point it at a
loopback server).
"""

from __future__ import annotations

import json
import logging
import math
import re
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import ffmpeg
import httpx

from omnisocial.io import sha256_file
from omnisocial.models import media_io
from omnisocial.models.base import Reply, Request
from omnisocial.models.entries import (
    RegistryError,
    _where,
    api_key_from_env,
    config_hash,
    generation_settings,
    validate_entry,
)
from omnisocial.models.strict_schema import gemini_schema
from omnisocial.models.transport import (
    Attempt,
    CallReply,
    Gate,
    Redactor,
    RetryPolicy,
    body_text,
    call_with_retries,
    map_bounded,
    parse_retry_after,
    reply_attempt,
    snippet,
)

logger = logging.getLogger(__name__)

OUTPUT_KEYS = ("model", "generation", "json_mode", "max_output_tokens", "thinking_budget", "thinking_level")
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
# The HTTP codes google-genai's own retry retries (`_api_client._RETRY_HTTP_STATUS_CODES`);
# 501 and 505 are permanent, so not every 5xx.
RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)

# MIME types as Gemini lists them (ai.google.dev/gemini-api/docs: video, audio and image
# understanding), which are not always the IANA ones: video/mov, video/avi, audio/mp3.
GEMINI_MIME = {
    ".mp4": "video/mp4",
    ".mpeg": "video/mpeg",
    ".mpg": "video/mpg",
    ".mov": "video/mov",
    ".avi": "video/avi",
    ".flv": "video/x-flv",
    ".webm": "video/webm",
    ".wmv": "video/wmv",
    ".3gp": "video/3gpp",
    ".3gpp": "video/3gpp",
    ".wav": "audio/wav",
    ".mp3": "audio/mp3",
    ".aif": "audio/aiff",
    ".aiff": "audio/aiff",
    ".aac": "audio/aac",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".heic": "image/heic",
    ".heif": "image/heif",
    ".txt": "text/plain",
}
# Containers Gemini does not list, remuxed losslessly (streams copied) into one it does.
REMUX = {".mkv": ".mp4", ".m4a": ".aac"}

# The request as sent is JSON: field names, generation config and the part wrappers around
# the base64 media and the (escaped) texts. Measured at well under 1 KB; this keeps a margin.
ENVELOPE_BYTES = 16 * 1024
FILES_API_MAX_BYTES = 2_000_000_000  # "2 GB per file" (Files API)
UPLOAD_RENEW_BEFORE = timedelta(hours=1)  # an upload this close to its expiry is made again

# Output tokens left for thinking when the entry sets no max_output_tokens and no positive
# thinking_budget: the largest budget any Gemini 2.5 model takes (2.5 Pro: 32768), so the
# default thinking of a 2.5 / 3 model never leaves the answer without room.
DEFAULT_THINKING_ROOM = 32768
# Gemini 2.5 thinking_budget ranges (thinking docs); -1 (dynamic) is always allowed.
_BUDGET_RANGES = (  # (model id pattern, lowest, highest, 0 allowed)
    (re.compile(r"gemini-2\.5-flash-lite"), 512, 24576, True),
    (re.compile(r"gemini-2\.5-flash"), 1, 24576, True),
    (re.compile(r"gemini-2\.5-pro"), 128, 32768, False),
)
_VERSION = re.compile(r"gemini-(\d+)(?:\.(\d+))?")

# Finish reasons: cut by the output limit; refused by a filter (the same input and settings
# are refused again, so neither is retried); a normal end. Any other reason (OTHER,
# MALFORMED_RESPONSE, ...) says nothing about the request, so that call is retried.
TRUNCATED = frozenset({"MAX_TOKENS", "CONTINUATION"})
BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "ESCALATION",
        "PUP_LIMITED_DISABLED",
    }
)
ANSWERED = frozenset({"STOP", ""})  # "": no reason given, the text decides


class RetryableError(RuntimeError):
    """A failure before the model answered that a later attempt may not meet (an upload)."""


def gemini_version(model: str) -> tuple[int, int] | None:
    """(major, minor) of a Gemini model id ('gemini-2.5-flash' -> (2, 5)); None for others."""
    match = _VERSION.search(model)
    return (int(match.group(1)), int(match.group(2) or 0)) if match else None


def thinks_by_default(model: str) -> bool:
    """Whether the model thinks unless told not to: Gemini 2.5 and later, or a *thinking* id."""
    version = gemini_version(model)
    return "thinking" in model or (version is not None and version >= (2, 5))


def check_entry(entry: Mapping, position: int | None = None) -> list[str]:
    """Gemini rules the schema cannot say, for a validated entry: warnings; RegistryError if broken."""
    where = _where(entry, position)
    model, version = str(entry["model"]), gemini_version(str(entry["model"]))
    budget, level = entry.get("thinking_budget"), entry.get("thinking_level")
    limit = entry.get("max_output_tokens")
    key = "thinking_budget" if budget is not None else "thinking_level"
    problem, warnings = None, []
    if budget is not None and level is not None:
        problem = "set thinking_budget (Gemini 2.5) or thinking_level (Gemini 3), not both"
    elif (budget, level) != (None, None) and version is not None and not thinks_by_default(model):
        problem = f"{model} is not a thinking model (Gemini 2.5 and later think)"
    elif level is not None and version is not None and version < (3, 0):
        problem = f"{model} takes thinking_budget; thinking_level is for Gemini 3"
    elif budget is not None and version is not None and version >= (3, 0):
        warnings.append(f"{where}: {key}: Gemini 3 takes it for compatibility; thinking_level is recommended")
    if problem is None and budget not in (None, -1):
        for pattern, low, high, zero in _BUDGET_RANGES:
            if pattern.search(model):
                if not (low <= budget <= high or (budget == 0 and zero)):
                    allowed = f"{low}-{high}, -1 (dynamic)" + (", 0 (off)" if zero else "")
                    problem = f"{budget} is outside what {model} takes: {allowed}"
                break
    if problem is None and limit is not None and budget is not None and budget > 0 and limit <= budget:
        key = "max_output_tokens"
        problem = f"{limit} leaves the answer no room after thinking_budget {budget} (thinking counts in it)"
    if problem is not None:
        raise RegistryError(f"{where}: {key}: {problem}")
    return warnings


def output_limit(entry: Mapping, settings: Mapping) -> int:
    """maxOutputTokens for a call: the entry's `max_output_tokens`, else answer + thinking room."""
    if entry.get("max_output_tokens") is not None:
        return int(entry["max_output_tokens"])
    answer = int(settings["max_new_tokens"])
    budget = entry.get("thinking_budget")
    if budget is not None and budget >= 0:
        return answer + int(budget)
    if budget == -1 or entry.get("thinking_level") is not None or thinks_by_default(str(entry["model"])):
        return answer + DEFAULT_THINKING_ROOM
    return answer


def gemini_mime(path: str | Path) -> str:
    """The MIME type Gemini lists for a file's suffix; MediaError for a format it does not take."""
    suffix = Path(path).suffix.lower()
    if suffix not in GEMINI_MIME:
        listed = ", ".join(sorted(set(GEMINI_MIME) | set(REMUX)))
        raise media_io.MediaError(
            f"{path}: Gemini does not take {suffix or 'files without a suffix'} ({listed})"
        )
    return GEMINI_MIME[suffix]


def encoded_size(n_bytes: int) -> int:
    """Bytes of the base64 text inline data travels as (4 characters for every 3 bytes)."""
    return 4 * math.ceil(n_bytes / 3)


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
    for item in _error_details(exc):
        if "retryDelay" in item:
            match = _DELAY.match(str(item["retryDelay"]))
            if match:
                return float(match.group(1))
    return None


def daily_quota(exc) -> str | None:
    """The per-day quota a 429 RESOURCE_EXHAUSTED names in its QuotaFailure, if any.

    Gemini answers every exhausted quota with 429 and lists the violated ones
    (`quotaId` GenerateRequestsPerMinutePerProjectPerModel, ...PerDay..., with a metric
    ending in _per_day for the latter): a per-minute one passes within the RetryInfo delay,
    a per-day one only the next day (midnight Pacific time).
    """
    for item in _error_details(exc):
        if not str(item.get("@type", "")).endswith("google.rpc.QuotaFailure"):
            continue
        for violation in item.get("violations") or []:
            quota = str(violation.get("quotaId") or violation.get("quotaMetric") or "")
            if "perday" in quota.lower().replace("_", ""):
                return quota
    return None


def _error_details(exc) -> list[dict]:
    details = getattr(exc, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    return [item for item in items or [] if isinstance(item, dict)]


def map_exception(exc: BaseException) -> Attempt:
    """An exception from the SDK -> a failed `Attempt` saying whether to retry."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        code = int(exc.code or 0)
        status = f" {exc.status}" if exc.status else ""
        message = f"HTTP {code}{status}: {body_text(exc.message or str(exc))}"
        quota = daily_quota(exc) if code == 429 else None
        if quota:
            message += f" [per-day quota {quota} exhausted: not retried, it resets the next day]"
        return Attempt(
            error=message,
            retryable=code in RETRY_STATUS_CODES and not quota,
            retry_after=retry_delay_from_error(exc),
        )
    if isinstance(exc, (errors.UnknownApiResponseError, json.JSONDecodeError)):  # a garbled body
        return Attempt(error=f"unreadable response: {exc}", retryable=True)
    if isinstance(exc, _TIMEOUTS):
        return Attempt(error=f"timeout ({type(exc).__name__})", retryable=True)
    if isinstance(exc, _NETWORK):
        return Attempt(error=f"connection error: {type(exc).__name__}: {exc}", retryable=True)
    if isinstance(exc, RetryableError):
        return Attempt(error=str(exc), retryable=True)
    return Attempt(error=f"{type(exc).__name__}: {exc}", retryable=False)


def reply_text(response) -> tuple[str, str]:
    """(text, finish reason) of the first candidate, thought parts left out.

    A blocked prompt has no candidate: its reason is 'blocked:<prompt_feedback.block_reason>'.
    """
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        feedback = getattr(response, "prompt_feedback", None)
        reason = getattr(feedback, "block_reason", None)
        return "", f"blocked:{getattr(reason, 'value', reason)}" if reason else ""
    candidate = candidates[0]
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    text = "".join(
        part.text for part in parts if getattr(part, "text", None) and not getattr(part, "thought", False)
    )
    reason = getattr(candidate, "finish_reason", None)
    return text, str(getattr(reason, "value", reason) or "")


def reply_outcome(response, limit: int, fallback_version: str = "") -> Attempt:
    """A generateContent response -> the `Attempt` it is: an answer, or a failure with its reason."""
    text, finish = reply_text(response)
    version = str(getattr(response, "model_version", None) or fallback_version)
    if finish in TRUNCATED:
        attempt = reply_attempt(text, finish, version, truncated=True)
        usage = getattr(response, "usage_metadata", None)
        thoughts = getattr(usage, "thoughts_token_count", None)
        spent = f", {thoughts} of them on thinking" if thoughts else ""
        return replace(
            attempt,
            error=f"{attempt.error}: max_output_tokens {limit}{spent}; raise max_output_tokens"
            " or lower thinking_budget / thinking_level",
        )
    if finish.startswith("blocked:") or finish in BLOCKED:
        return reply_attempt(text, finish, version, blocked=True)
    if finish in ANSWERED:
        return reply_attempt(text, finish, version)
    return Attempt(
        error=f"reply ended with finish_reason {finish}",
        retryable=True,
        finish_reason=finish,
        model_version=version,
    )


class _OncePerKey:
    """`make()` runs once per key however many threads ask at once; the others wait for it.

    A failure is handed to those waiting and not kept, so a later call tries again.
    """

    def __init__(self):
        self.done: dict = {}
        self._pending: dict[object, Future] = {}
        self._lock = threading.Lock()

    def forget(self, key, value) -> bool:
        """Drop `key` if it still holds `value` (another thread may have renewed it); whether it did."""
        with self._lock:
            if self.done.get(key) is not value:
                return False
            del self.done[key]
            return True

    def get(self, key, make: Callable[[], object]):
        with self._lock:
            if key in self.done:
                return self.done[key]
            pending = self._pending.get(key)
            first = pending is None
            if first:
                pending = self._pending[key] = Future()
        if not first:
            return pending.result()
        try:
            value = make()
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            pending.set_exception(exc)
            raise
        with self._lock:
            self.done[key] = value
            del self._pending[key]
        pending.set_result(value)
        return value


class GeminiBackend:
    """`Backend` for Gemini models through google-genai."""

    def __init__(self, entry: Mapping, *, client=None, sleep=None, rng=None, poll_s: float = 2.0):
        self.entry = validate_entry(entry)
        if self.entry["backend"] != "gemini":
            raise RegistryError(f"model entry {self.entry['name']!r}: backend is {self.entry['backend']!r}")
        for warning in check_entry(self.entry):
            logger.warning("%s", warning)
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
        self._uploads = _OncePerKey()  # (sha256, mime) -> active types.File
        self._remuxed = _OncePerKey()  # sha256 -> remuxed copy in _workdir
        self._audio = _OncePerKey()  # sha256 -> has an audio track
        self._digests: dict[tuple, str] = {}
        self._workdir: tempfile.TemporaryDirectory | None = None
        self._workdir_lock = threading.Lock()

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
        # the output limit the entry's own generation settings give, so that a change of
        # DEFAULT_THINKING_ROOM reruns the calls made under the old one
        entry = {**self.entry, "output_limit": output_limit(self.entry, generation_settings(self.entry))}
        return f"gemini:{self.entry['model']}#{config_hash(entry, (*OUTPUT_KEYS, 'output_limit'))}"

    def settings_for(self, request: Request) -> dict:
        """The decoding settings a call for `request` uses (entry generation + request overrides)."""
        settings = generation_settings(self.entry, request.settings)
        settings["max_output_tokens"] = output_limit(self.entry, settings)
        for key in ("thinking_budget", "thinking_level"):
            if self.entry.get(key) is not None:
                settings[key] = self.entry[key]
        return settings

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
        """Delete every upload of this backend and the remuxed copies."""
        for file in list(self._uploads.done.values()):
            self._delete(file)
        self._uploads.done.clear()
        self._remuxed.done.clear()
        with self._workdir_lock:
            if self._workdir is not None:
                self._workdir.cleanup()
                self._workdir = None

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
            "max_output_tokens": output_limit(self.entry, settings),
        }
        budget, level = self.entry.get("thinking_budget"), self.entry.get("thinking_level")
        if budget is not None or level is not None:
            fields["thinking_config"] = types.ThinkingConfig(thinking_budget=budget, thinking_level=level)
        if request.system:
            fields["system_instruction"] = request.system
        schema = settings.get("response_schema")
        if schema is not None and self.entry["json_mode"] != "off":
            fields["response_mime_type"] = "application/json"
            if self.entry["json_mode"] == "json_schema":
                fields["response_json_schema"] = gemini_schema(schema)
        return types.GenerateContentConfig(**fields)

    def request_bytes(self, request: Request, media: list[Path] | None = None) -> int:
        """The size of the request as sent inline: base64 media, JSON-escaped texts, envelope."""
        media = [Path(path) for path in request.media.values()] if media is None else media
        texts = [request.prompt, request.system]
        schema = generation_settings(self.entry, request.settings).get("response_schema")
        if schema is not None and self.entry["json_mode"] == "json_schema":
            schema = gemini_schema(schema)  # the schema as sent
        sized = sum(encoded_size(path.stat().st_size) for path in media)
        sized += sum(len(json.dumps(text)) for text in texts if text)
        sized += len(json.dumps(schema)) if schema is not None else 0
        return sized + ENVELOPE_BYTES

    def inline(self, request: Request, media: list[Path] | None = None) -> bool:
        """Whether the request, media base64-encoded, fits Gemini's inline request limit."""
        limit = float(self.entry["media"]["inline_max_mb"]) * 1_000_000
        return self.request_bytes(request, media) <= limit

    def contents(self, request: Request, *, upload: bool | None = None) -> list:
        """The parts of the one user turn: media first, then the prompt."""
        from google.genai import types

        for path in request.media.values():
            if not Path(path).is_file():
                raise media_io.MediaError(f"{path}: no such file")
        media = [self._sendable(Path(path)) for path in request.media.values()]
        use_files = not self.inline(request, [path for path, _ in media]) if upload is None else upload
        parts = []
        for path, mime in media:
            if use_files:
                file = self._upload(path, mime)
                parts.append(types.Part.from_uri(file_uri=file.uri, mime_type=file.mime_type or mime))
            else:
                parts.append(types.Part.from_bytes(data=path.read_bytes(), mime_type=mime))
        parts.append(types.Part.from_text(text=request.prompt))
        return parts

    def _digest(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in self._digests:
            self._digests[key] = sha256_file(path)
        return self._digests[key]

    def _sendable(self, path: Path) -> tuple[Path, str]:
        """(file to send, its Gemini MIME type): the file itself, or its remuxed copy."""
        target = REMUX.get(path.suffix.lower())
        if target is None:
            return path, gemini_mime(path)
        copy = self._remuxed.get(self._digest(path), lambda: self._remux(path, target))
        return copy, gemini_mime(copy)

    def _remux(self, path: Path, suffix: str) -> Path:
        """ffmpeg -i PATH -map 0:v? -map 0:a? -c copy OUT: a container Gemini lists, streams as they are."""
        with self._workdir_lock:
            if self._workdir is None:
                self._workdir = tempfile.TemporaryDirectory(prefix="omni-gemini-")
            folder = Path(self._workdir.name)
        out = folder / f"{self._digest(path)[:16]}{suffix}"
        source = ffmpeg.input(str(path), nostdin=None, v="error")
        if suffix == ".mp4":
            streams, options = [source["v?"], source["a?"]], {"c": "copy", "movflags": "+faststart"}
            hint = "ffmpeg -i IN -c:v libx264 -c:a aac OUT.mp4"
        else:  # .aac: the AAC stream of an .m4a as ADTS
            streams, options, hint = [source["a:0"]], {"c": "copy", "f": "adts"}, "ffmpeg -i IN OUT.wav"
        try:
            media_io._run(ffmpeg.output(*streams, str(out), **options).overwrite_output(), path)
        except media_io.MediaError as exc:
            out.unlink(missing_ok=True)
            raise media_io.MediaError(
                f"{path}: Gemini does not take {path.suffix.lower()} and its streams do not fit {suffix} "
                f"without re-encoding; convert it (e.g. {hint}). " + str(exc).removeprefix(f"{path}: ")
            ) from None
        return out

    def _upload(self, path: Path, mime: str):
        """The Files API file for this content: uploaded once, shared by every request for it."""
        if path.stat().st_size > FILES_API_MAX_BYTES:
            raise media_io.MediaError(
                f"{path}: {path.stat().st_size} bytes, over the Files API's 2 GB per file"
            )
        key = (self._digest(path), mime)
        file = self._uploads.get(key, lambda: self._upload_active(path, mime))
        if _expiring(file):
            if self._uploads.forget(key, file):
                self._delete(file)
            file = self._uploads.get(key, lambda: self._upload_active(path, mime))
        return file

    def _upload_active(self, path: Path, mime: str):
        """Upload and wait until ACTIVE; an upload that does not get there is deleted, never left behind."""
        try:
            file = self._client.files.upload(file=str(path), config={"mime_type": mime})
        except (KeyError, ValueError) as exc:  # the SDK's "upload URL not returned" / "not finalized"
            raise RetryableError(f"{path}: upload interrupted: {exc}") from None
        timeout = float(self.entry["media"]["processing_timeout_s"])
        deadline = time.monotonic() + timeout
        try:
            while _state(file) == "PROCESSING":
                if time.monotonic() > deadline:
                    raise RetryableError(
                        f"{path}: upload {file.name} still PROCESSING after {timeout:g} s "
                        "(media.processing_timeout_s); deleted, uploaded again on retry"
                    )
                time.sleep(self._poll_s)
                file = self._client.files.get(name=file.name)
            if _state(file) == "FAILED":
                raise media_io.MediaError(f"{path}: Files API processing FAILED: {file.error}")
        except BaseException:
            self._delete(file)
            raise
        return file

    def _delete(self, file) -> None:
        try:
            self._client.files.delete(name=file.name)
        except Exception as exc:  # best effort: uploads expire on their own after 48 h
            logger.warning("%s: could not delete upload %s: %s", self.name, file.name, self.redact(exc))

    def audio_path(self, request: Request) -> str:
        """How the request's audio reaches Gemini (`base.AUDIO_PATHS`): a video part carries its own."""
        if "audio" in request.media:
            return "separate_part"
        video = request.media.get("video")
        if video is None:
            return ""
        path = Path(video)
        try:
            has_audio = self._audio.get(self._digest(path), lambda: media_io.probe(path)["has_audio"])
        except (media_io.MediaError, OSError) as exc:
            logger.warning("%s: %s: audio track unknown (%s); recorded as in_video", self.name, path, exc)
            return "in_video"
        return "in_video" if has_audio else "no_track"

    # --- calling --------------------------------------------------------------------------

    def _generate_one(self, request: Request) -> Reply:
        label = f"{self.name} item {request.item_id}"
        try:
            config = self.config(request)
            for path in request.media.values():
                if not Path(path).is_file():
                    raise media_io.MediaError(f"{path}: no such file")
                if Path(path).suffix.lower() not in REMUX:
                    gemini_mime(path)  # a format Gemini does not take fails now, naming the file
        except (media_io.MediaError, RegistryError, OSError, ValueError) as exc:
            message = self.redact(f"request not built: {exc}")
            logger.warning("%s: %s", label, message)
            return CallReply(text=None, error=message, attempts=0)
        kwargs = {}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        if self._rng is not None:
            kwargs["rng"] = self._rng
        reply = call_with_retries(
            lambda: self._attempt(request, config), self.policy, self.redact, label, **kwargs
        )
        return replace(reply, audio_path=self.audio_path(request))

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
        return reply_outcome(response, config.max_output_tokens, self.entry["model"])


def _expiring(file) -> bool:
    """Whether an upload expires within UPLOAD_RENEW_BEFORE (uploads live 48 h; a long run outlives them)."""
    expires = getattr(file, "expiration_time", None)
    if expires is None:
        return False
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    return expires - datetime.now(UTC) < UPLOAD_RENEW_BEFORE


def _state(file) -> str:
    state = getattr(file, "state", None)
    return str(getattr(state, "value", state) or "")
