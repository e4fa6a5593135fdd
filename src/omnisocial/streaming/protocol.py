"""What a benchmark tells the streaming driver: the items, how to ask at t, how to read a reply."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from omnisocial.streaming.schedule import Schedule

SILENCE = "silence"
UTTERANCE = "utterance"
UNPARSED = "unparsed"
FAILED = "failed"  # the call failed (no reply): the item's stream ends there, visibly
STEP_KINDS = (SILENCE, UTTERANCE, UNPARSED, FAILED)


@dataclass(frozen=True)
class Parsed:
    """A reply read by the benchmark's parser: silence, an utterance (its text), or unparsed."""

    kind: str
    text: str = ""

    def __post_init__(self):
        if self.kind not in (SILENCE, UTTERANCE, UNPARSED):
            raise ValueError(f"a parsed reply is silence, utterance or unparsed, got {self.kind!r}")


@dataclass(frozen=True)
class Said:
    """An utterance the model made earlier in the stream (the history a prompt may carry)."""

    t: float
    text: str


@dataclass(frozen=True)
class StreamItem:
    """One clip to stream: its file, its query times and what the benchmark's prompt needs.

    The media of step t is the clip from `media_start` (the whole prefix) or from
    max(media_start, t - window_s) (a sliding window) up to t.
    """

    item_id: str
    source: Path
    schedule: Schedule
    media_start: float = 0.0
    context: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "source", Path(os.fspath(self.source)))
        if self.schedule.start <= self.media_start:
            raise ValueError(
                f"stream item {self.item_id}: first query time {self.schedule.start} s is not after the "
                f"media start {self.media_start} s (a step needs media to show)"
            )


# (item, t, what the model said before t) -> (system, prompt)
PromptBuilder = Callable[[StreamItem, float, tuple[Said, ...]], tuple[str, str]]


@dataclass(frozen=True)
class StreamProtocol:
    """How a benchmark streams: prompts, the reply parser, the stop rule and the media context.

    `stop_at_first`: stop an item at its first utterance (SocialOmni's when: the response
    time); otherwise run to the schedule's end (Omni-DuplexEval's RTD / PR). `window_s`:
    None sends the whole prefix [media_start, t], a number the last `window_s` seconds.
    `carries_history`: the prompt gets the earlier utterances (else an empty tuple, and the
    steps of an item do not depend on each other's text, only on the stop rule).
    """

    name: str
    prompt: PromptBuilder
    parse: Callable[[str], Parsed]
    stop_at_first: bool
    window_s: float | None = None
    carries_history: bool = False
    settings: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.window_s is not None and not self.window_s > 0:
            raise ValueError(f"protocol {self.name}: window_s must be > 0 or None, got {self.window_s}")

    def window_start(self, item: StreamItem, t: float) -> float:
        """Where step t's media starts."""
        if self.window_s is None:
            return item.media_start
        return round(max(item.media_start, t - self.window_s), 6)
