"""What known OpenAI-compatible model families accept, checked when an entry is validated.

The chat-completions content parts an entry will send follow from its modalities and
`media` settings (`parts_needed`); a known family that refuses one of them fails the
entry before any call, naming the part and what to change. Unknown models pass with one
warning: the server decides. The families and their limits, as the services document them:

- OpenAI chat models (gpt-4o, gpt-4o-mini, gpt-4.1*, gpt-5*, o1, o3, o4-mini) take text and
  `image_url`, and refuse `input_audio` (audio input needs an audio model);
  o1-mini, o1-preview and o3-mini take text only.
- OpenAI audio models (gpt-audio*, gpt-4o-audio-preview, gpt-4o-mini-audio-preview) take
  `input_audio` and refuse `image_url`. So no OpenAI model takes video frames with their
  audio track: a video entry for OpenAI sends frames with `media.video_audio: none`.
- No OpenAI model takes `video_url` (a vLLM extension).
- Qwen2.5-Omni and Qwen3-Omni (vLLM) take all four parts; with `video_url` they decode the
  video's own audio when asked (`mm_processor_kwargs.use_audio_in_video`), the default
  audio path for them (`media.video_audio: in_video`).

Reasoning models (o-series, gpt-5 except gpt-5-chat) refuse `max_tokens` and any
temperature or top_p but the default: their entries send `max_completion_tokens`, leave
temperature and top_p unset, and get a larger default output limit, since reasoning
tokens count against it (OpenAI advises reserving about 25 000 to start).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

logger = logging.getLogger(__name__)

PARTS = ("text", "image_url", "input_audio", "video_url")
VIDEO_AUDIO = ("in_video", "separate_part", "none")

# OpenAI's guidance for reasoning models: reserve about 25k tokens for reasoning and output.
REASONING_MAX_TOKENS = 25_000


@dataclass(frozen=True)
class Family:
    name: str
    pattern: re.Pattern
    accepts: frozenset[str]
    reasoning: bool = False
    openai: bool = True  # served by OpenAI: max_completion_tokens is its field
    audio_in_video: bool = False  # video_url parts carry their audio when asked (vLLM omni models)


def _family(name, pattern, accepts, **flags) -> Family:
    return Family(name, re.compile(pattern, re.IGNORECASE), frozenset(accepts), **flags)


# First match wins: the narrower patterns come first.
FAMILIES = (
    _family(
        "OpenAI audio models",
        r"^(gpt-audio|gpt-4o(-mini)?-audio-preview)([-.].*)?$",
        {"text", "input_audio"},
    ),
    _family("OpenAI gpt-5-chat", r"^gpt-5(\.\d+)?-chat([-.].*)?$", {"text", "image_url"}),
    _family(
        "OpenAI text-only reasoning", r"^(o1-mini|o1-preview|o3-mini)([-.].*)?$", {"text"}, reasoning=True
    ),
    _family(
        "OpenAI reasoning",
        r"^(o1|o3|o4-mini|o3-pro|o1-pro|gpt-5)([-.].*)?$",
        {"text", "image_url"},
        reasoning=True,
    ),
    _family("OpenAI chat", r"^(gpt-4o|gpt-4o-mini|gpt-4\.1)([-.].*)?$", {"text", "image_url"}),
    _family(
        "Qwen omni (vLLM)",
        r"^(.*/)?qwen(2\.5|2_5|3)[-_]omni([-_.].*)?$",
        set(PARTS),
        openai=False,
        audio_in_video=True,
    ),
)

_warned: set[str] = set()


def family_of(model: str) -> Family | None:
    model = str(model).strip()
    return next((family for family in FAMILIES if family.pattern.match(model)), None)


def is_openai_host(base_url: str | None) -> bool:
    host = urlparse(base_url or "").hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def default_video_audio(entry: Mapping) -> str | None:
    """The audio path of a video entry that names none: None when it must say."""
    media = entry.get("media") or {}
    family = family_of(entry.get("model", ""))
    if media.get("video_mode", "frames") == "frames":
        # OpenAI takes frames or audio, never both: the usual default would be refused.
        return None if family is not None and family.openai else "separate_part"
    return "in_video" if family is not None and family.audio_in_video else None


def parts_needed(entry: Mapping) -> dict[str, str]:
    """Content part -> why the entry sends it (from its modalities and media settings)."""
    media = entry.get("media") or {}
    needed = {"text": "the prompt"}
    modalities = entry.get("modalities") or ["text"]
    if "audio" in modalities:
        needed["input_audio"] = "modalities: audio"
    if "video" in modalities:
        mode = media.get("video_mode", "frames")
        needed["image_url" if mode == "frames" else "video_url"] = (
            f"modalities: video (media.video_mode {mode})"
        )
        if media.get("video_audio") == "separate_part":
            needed["input_audio"] = "media.video_audio: separate_part (the video's audio track)"
    return needed


def check_openai_entry(entry: dict, raw: Mapping, where: str) -> list[str]:
    """Problems of a validated openai entry (defaults filled) for its model family; fills the
    family-dependent defaults (video audio path, token field, reasoning settings) in place.

    `raw` is the entry as written, to tell a value left unset from one set to the default.
    """
    problems: list[str] = []
    family = family_of(entry["model"])
    media = entry["media"]
    generation = entry["generation"]
    raw_generation = raw.get("generation") or {}
    is_video = "video" in entry["modalities"]

    if media.get("video_audio") is None:
        choice = default_video_audio(entry)
        if choice is None and is_video:
            why = (
                f"{family.name} take frames or audio, never both"
                if family is not None and family.openai and media["video_mode"] == "frames"
                else f"model {entry['model']!r} is not a known omni family whose video_url carries its audio"
            )
            problems.append(
                f"{where}: media.video_audio: choose how the video's audio reaches the model ({why}): "
                "in_video (inside the video_url part: vLLM mm_processor_kwargs.use_audio_in_video), "
                "separate_part (the track as its own input_audio part) or none (a silent video)"
            )
        media["video_audio"] = choice
    if media.get("video_audio") == "in_video" and media["video_mode"] == "frames":
        problems.append(
            f"{where}: media.video_audio: in_video needs media.video_mode video_url (frames carry no audio)"
        )
    kwargs = entry["extra_body"].get("mm_processor_kwargs") or {}
    if media.get("video_audio") not in (None, "in_video") and kwargs.get("use_audio_in_video"):
        problems.append(
            f"{where}: extra_body.mm_processor_kwargs.use_audio_in_video contradicts "
            f"media.video_audio {media['video_audio']}"
        )

    if entry["max_tokens_field"] is None:
        openai_model = family is not None and family.openai
        entry["max_tokens_field"] = (
            "max_completion_tokens" if openai_model or is_openai_host(entry["base_url"]) else "max_tokens"
        )

    if family is None:
        if entry["name"] not in _warned:
            _warned.add(entry["name"])
            logger.warning(
                "%s: model %r is not a known family; which content parts it accepts (%s) is up to the server",
                where,
                entry["model"],
                ", ".join(parts_needed(entry)),
            )
        return problems

    for part, why in parts_needed(entry).items():
        if part not in family.accepts:
            problems.append(
                f"{where}: modalities: {family.name} ({entry['model']}) refuse {part} parts, "
                f"which {why} sends; they accept {', '.join(p for p in PARTS if p in family.accepts)}"
            )
    if family.reasoning:
        if entry["max_tokens_field"] != "max_completion_tokens":
            problems.append(
                f"{where}: max_tokens_field: {family.name} refuse max_tokens; use max_completion_tokens"
            )
        for key, default in (("temperature", 1), ("top_p", 1)):
            value = raw_generation.get(key)
            if value is None:
                generation[key] = None  # not sent: the model's own default
            elif float(value) != default:
                problems.append(
                    f"{where}: generation.{key}: {family.name} take only the default ({default}); "
                    "leave it unset"
                )
        if "max_new_tokens" not in raw_generation:
            generation["max_new_tokens"] = REASONING_MAX_TOKENS
    return problems


def is_reasoning(entry: Mapping) -> bool:
    family = family_of(entry.get("model", ""))
    return family is not None and family.reasoning
