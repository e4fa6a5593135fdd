"""What remote backends share: retries with backoff, secret redaction, bounded concurrency.

A remote call is a sequence of attempts. An attempt that fails transiently (timeout,
connection error, HTTP 408/409/429/5xx unless the server says `x-should-retry: false`, a
garbled body) is retried after an exponential backoff with full jitter, never sooner than
the server's `retry-after-ms` / `Retry-After`; after
`max_retries` retries, or on a permanent failure (HTTP 4xx), the call becomes a
`Reply` with `error` set and no text. Every error message and log line goes through a
`Redactor` first, so an API key a server echoes back never reaches a log or a results file.
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from omnisocial.models.base import Reply, Request

logger = logging.getLogger(__name__)

REDACTED = "[REDACTED]"
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"',;]+")
_SNIPPET_CHARS = 300
_BODY_CHARS = 1 << 16


@dataclass(frozen=True)
class CallReply(Reply):
    """A `Reply` that also says how many attempts the call took."""

    attempts: int = 1


class Redactor:
    """Replace every secret, any fragment of one, and any `Bearer <token>` by [REDACTED].

    A fragment is a run of `FRAGMENT_CHARS` or more characters that also stands in a
    secret: what is left of a key that some layer cut (an error body shortened by a
    server or a proxy) is masked as surely as the whole key.
    """

    FRAGMENT_CHARS = 8

    def __init__(self, secrets: Iterable[str | None] = ()):
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        n = self.FRAGMENT_CHARS
        self._grams = {s[i : i + n] for s in self._secrets for i in range(len(s) - n + 1)}

    def __call__(self, text: object) -> str:
        out = str(text)
        for secret in self._secrets:
            out = out.replace(secret, REDACTED)
        out = self._mask_fragments(out)
        return _BEARER.sub(lambda m: m.group(1) + REDACTED, out)

    def _mask_fragments(self, text: str) -> str:
        if not self._grams:
            return text
        n = self.FRAGMENT_CHARS
        masked = [False] * len(text)
        for i in range(len(text) - n + 1):
            if text[i : i + n] in self._grams:
                masked[i : i + n] = [True] * n
        if not any(masked):
            return text
        pieces, i = [], 0
        while i < len(text):
            j = i
            while j < len(text) and masked[j] == masked[i]:
                j += 1
            pieces.append(REDACTED if masked[i] else text[i:j])
            i = j
        return "".join(pieces)


def _one_line(text: str | bytes | None) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return " ".join(text.split())


def body_text(text: str | bytes | None, limit: int = _BODY_CHARS) -> str:
    """A response body as one line for an error message, capped only against huge bodies.

    The short cut for logs and tables (`snippet`) comes after redaction, in
    `call_with_retries`: cutting first could leave a partial key that no mask matches.
    """
    return _one_line(text)[:limit]


def snippet(text: str | bytes | None, limit: int = _SNIPPET_CHARS) -> str:
    """A short, single-line excerpt of a (redacted) message."""
    flat = _one_line(text)
    return flat if len(flat) <= limit else flat[:limit] + "..."


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date; None if absent/bad."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN is not a delay
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max(0.0, (when - now).total_seconds())


def is_retryable_status(status: int) -> bool:
    """408 (request timeout), 409 (lock timeout), 429 (rate limit), 5xx: as the OpenAI client retries."""
    return status in (408, 409, 429) or 500 <= status <= 599


def retry_after_from_headers(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait as the server asks: `retry-after-ms` first, then `retry-after`
    (seconds or an HTTP date), as the official OpenAI client reads them; None when neither."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds)
        except ValueError:
            value = float("nan")
        if value == value:  # NaN: a bad header, fall through to retry-after
            return max(0.0, value / 1000.0)
    return parse_retry_after(headers.get("retry-after"))


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an HTTP error is worth retrying: `x-should-retry: true/false` from the server
    wins (OpenAI sends false for a 429 insufficient_quota), else `is_retryable_status`."""
    header = (headers.get("x-should-retry") or "").strip().lower()
    if header == "true":
        return True
    if header == "false":
        return False
    return is_retryable_status(status)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    max_wait_s: float = 300.0

    @classmethod
    def from_entry(cls, entry: Mapping) -> RetryPolicy:
        return cls(
            max_retries=int(entry.get("max_retries", 5)),
            backoff_base_s=float(entry.get("backoff_base_s", 1.0)),
            backoff_max_s=float(entry.get("backoff_max_s", 30.0)),
            max_wait_s=float(entry.get("max_wait_s", 300.0)),
        )

    def backoff(self, retry: int, rng: random.Random) -> float:
        """Full jitter: uniform(0, min(cap, base * 2^(retry-1))) for the retry-th retry (1-based)."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2 ** (retry - 1)))
        return rng.uniform(0.0, ceiling)

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds before the retry-th retry: the jittered backoff, but never less than Retry-After."""
        wait = self.backoff(retry, rng)
        return max(wait, retry_after) if retry_after is not None else wait


@dataclass(frozen=True)
class Attempt:
    """The outcome of one try: text on success, else an error and whether to try again.

    `finish_reason` and `model_version` are kept on failures too (a reply cut by the token
    limit is a failure that still says "length"); the final `CallReply` carries the last
    attempt's.
    """

    text: str | None = None
    model_version: str = ""
    finish_reason: str = ""
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None


def reply_attempt(
    text: str | None,
    finish_reason: str,
    model_version: str = "",
    *,
    truncated: bool = False,
    blocked: bool = False,
) -> Attempt:
    """A reply the service returned -> a successful `Attempt`, or a failure keeping its finish reason.

    The backend says what its service's finish reason means (`truncated`: cut by the output
    token limit, e.g. OpenAI "length", Gemini MAX_TOKENS; `blocked`: refused by a safety
    filter, e.g. "content_filter", SAFETY). Neither is retried: the same request at the same
    limit and temperature 0 is cut or blocked again, so a retry only spends tokens; raise the
    limit (which changes the cache key) or change the input. An empty reply that was neither
    cut nor blocked (a reasoning model that returned no content) is retried, since nothing
    in the request forces it.
    """
    reason = finish_reason or "unknown"
    if truncated:
        return Attempt(
            error=f"reply cut by the output token limit (finish_reason {reason}); raise the entry's limit",
            finish_reason=finish_reason,
            model_version=model_version,
        )
    if blocked:
        return Attempt(
            error=f"reply blocked (finish_reason {reason})",
            finish_reason=finish_reason,
            model_version=model_version,
        )
    if text is None or not str(text).strip():
        return Attempt(
            error=f"empty reply (finish_reason {reason})",
            retryable=True,
            finish_reason=finish_reason,
            model_version=model_version,
        )
    return Attempt(text=str(text), finish_reason=finish_reason, model_version=model_version)


def call_with_retries(
    attempt: Callable[[], Attempt],
    policy: RetryPolicy,
    redact: Redactor,
    label: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> CallReply:
    """Run `attempt` until it succeeds, fails permanently or runs out of retries."""
    rng = rng or random.Random()
    tries = 0
    while True:
        tries += 1
        started = time.perf_counter()
        try:
            outcome = attempt()
        except Exception as exc:  # a bug in request handling: permanent, but still a Reply
            outcome = Attempt(error=f"{type(exc).__name__}: {exc}", retryable=False)
        latency = time.perf_counter() - started
        if outcome.error is None:
            return CallReply(
                text=outcome.text if outcome.text is not None else "",
                latency_s=latency,
                model_version=outcome.model_version,
                attempts=tries,
                finish_reason=outcome.finish_reason,
            )
        reason = snippet(redact(outcome.error), limit=_SNIPPET_CHARS + 100)
        retry = tries  # the number of the retry we would make next
        if outcome.retryable and retry <= policy.max_retries:
            wait = policy.delay(retry, outcome.retry_after, rng)
            if outcome.retry_after is not None and outcome.retry_after > policy.max_wait_s:
                limit = f"max_wait_s {policy.max_wait_s:g}"
                reason = f"{reason}; Retry-After {outcome.retry_after:g} s exceeds {limit}"
            else:
                logger.warning(
                    "%s: %s; retry %d/%d in %.2f s", label, reason, retry, policy.max_retries, wait
                )
                sleep(wait)
                continue
        plural = "s" if tries != 1 else ""
        message = f"{reason} (gave up after {tries} attempt{plural})"
        logger.warning("%s: %s", label, message)
        return CallReply(
            text=None,
            error=message,
            latency_s=latency,
            model_version=outcome.model_version,
            finish_reason=outcome.finish_reason,
            attempts=tries,
        )


class Gate:
    """At most `limit` calls in flight per backend, whichever threads the calls come from."""

    def __init__(self, limit: int):
        self.limit = max(1, int(limit))
        self._semaphore = threading.BoundedSemaphore(self.limit)

    def __enter__(self) -> Gate:
        self._semaphore.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self._semaphore.release()


def map_bounded(fn: Callable[[Request], Reply], requests: list[Request], limit: int) -> list[Reply]:
    """`fn` over `requests` in at most `limit` threads; replies in request order."""
    if len(requests) <= 1 or limit <= 1:
        return [fn(request) for request in requests]
    with ThreadPoolExecutor(max_workers=min(limit, len(requests)), thread_name_prefix="omni-call") as pool:
        return list(pool.map(fn, requests))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
