"""The one interface every backend implements, and the records that cross it.

A backend turns `Request`s into `Reply`s. It never raises for a single item: a transport
or model failure is a `Reply` with `error` set (and no text), so the caller can record it
and retry it on the next run instead of scoring it as a wrong answer.

A reply the service returned but that holds no usable answer (cut by the token limit,
blocked, or empty) is such a failure too, never an empty answer: `error` says why and
`finish_reason` keeps what the service said (on failures as on successes), so the report
can count finish reasons per model. `transport.reply_attempt` is the one place that decides.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Request:
    item_id: str
    prompt: str  # the user turn, already rendered from its template
    system: str = ""
    media: dict[str, Path] = field(default_factory=dict)  # modality -> file ('audio', 'video', 'image')
    settings: dict = field(default_factory=dict)  # temperature, max_new_tokens, seed, ...

    def key(self, model_fingerprint: str, media_hashes: dict[str, str]) -> str:
        """Cache key: model, item, prompt, settings and media content."""
        payload = {
            "model": model_fingerprint,
            "item": self.item_id,
            "system": self.system,
            "prompt": self.prompt,
            "settings": self.settings,
            "media": media_hashes,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Reply:
    text: str | None
    error: str | None = None  # set => the call failed; text is None
    latency_s: float = 0.0
    model_version: str = ""  # what the server says it ran, when it says
    # The service's own finish reason, verbatim ("stop", "length", "STOP", "MAX_TOKENS",
    # "SAFETY", "blocked:PROHIBITED_CONTENT", ...); "" when no reply came (HTTP error, timeout).
    finish_reason: str = ""
    # How the audio of the request's media reached the model (AUDIO_PATHS); "" when it has none.
    audio_path: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


# Values of `Reply.audio_path` (the responses tables' `audio_path` column):
# separate_part = its own input_audio part (an audio stimulus, or a video's track);
# in_video = inside the video part, decoded by the server (vLLM use_audio_in_video, Gemini);
# none = the entry chose not to send a video's audio; no_track = the video has no audio track.
AUDIO_PATHS = ("", "separate_part", "in_video", "none", "no_track")


class Backend(Protocol):
    name: str
    modalities: tuple[str, ...]

    def fingerprint(self) -> str:
        """Weights hash for local models, API model id + version for remote ones."""

    def generate(self, requests: list[Request]) -> list[Reply]:
        """One reply per request, in order; failures are replies with `error` set."""
