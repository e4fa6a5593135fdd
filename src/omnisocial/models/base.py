"""The one interface every backend implements, and the records that cross it.

A backend turns `Request`s into `Reply`s. It never raises for a single item: a transport
or model failure is a `Reply` with `error` set (and no text), so the caller can record it
and retry it on the next run instead of scoring it as a wrong answer.
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

    @property
    def ok(self) -> bool:
        return self.error is None


class Backend(Protocol):
    name: str
    modalities: tuple[str, ...]

    def fingerprint(self) -> str:
        """Weights hash for local models, API model id + version for remote ones."""

    def generate(self, requests: list[Request]) -> list[Reply]:
        """One reply per request, in order; failures are replies with `error` set."""
