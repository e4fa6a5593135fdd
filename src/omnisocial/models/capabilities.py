"""What known OpenAI-compatible model families accept, checked when an entry is validated.

The chat-completions content parts an entry will send follow from its modalities and
`media` settings (`parts_needed`); a known family that refuses one of them, or a setting
its service refuses, fails the entry before any call, naming the key and what to change.
Unknown models pass with one warning: the server decides. The families and their limits,
as the services document them (docs/api-capabilities.md cites the pages):

- OpenAI chat models (gpt-4o, gpt-4o-mini, gpt-4.1*, gpt-5*, o1, o3, o4-mini) take text and
  `image_url`, and refuse `input_audio` (audio input needs an audio model);
  o1-mini, o1-preview and o3-mini take text only.
- OpenAI audio models (gpt-audio*, gpt-4o-audio-preview, gpt-4o-mini-audio-preview) take
  `input_audio` and refuse `image_url`; their model pages list structured outputs as not
  supported (the service refuses `response_format` json_schema), and the service refuses a
  request whose input has no audio unless audio output is asked for, which this project
  never asks: an audio-model entry runs on audio only. So no OpenAI model takes video
  frames with their audio track: a video entry for OpenAI sends frames with
  `media.video_audio: none`.
- OpenAI realtime models (gpt-realtime*, gpt-4o(-mini)-realtime-preview) are served by the
  Realtime API only, not chat completions.
- No OpenAI model takes `video_url` (a vLLM extension).
- A fine-tuned OpenAI model (`ft:<base>:<org>:<suffix>:<id>`) has its base model's limits.
- Qwen2.5-Omni and Qwen3-Omni (vLLM) take all four parts; with `video_url` they decode the
  video's own audio when asked (`mm_processor_kwargs.use_audio_in_video`), the default
  audio path for them (`media.video_audio: in_video`); with frames, the track goes as its
  own `input_audio` part (`separate_part`).
- Qwen2-VL, Qwen2.5-VL and Qwen3-VL (vLLM) take text, images and video but no audio.
- A video entry of any other model names its audio path (`media.video_audio`): whether an
  unknown model hears an `input_audio` part beside its frames is not known here.

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
    json_schema: bool = True  # takes response_format json_schema (structured outputs)
    needs_audio: bool = False  # refuses a request whose input carries no audio
    chat_completions: bool = True  # served on /chat/completions at all


def _family(name, pattern, accepts, **flags) -> Family:
    return Family(name, re.compile(pattern, re.IGNORECASE), frozenset(accepts), **flags)


# The service's own words for what the audio models refuse (quoted in the errors).
NO_JSON_SCHEMA = "'response_format' of type 'json_schema' is not supported with this model"
NEEDS_AUDIO = "This model requires that either input content or output modality contain audio"

# First match wins: the narrower patterns come first.
FAMILIES = (
    _family(
        "OpenAI realtime models",
        r"^(gpt-realtime|gpt-4o(-mini)?-realtime-preview)([-.].*)?$",
        set(),
        chat_completions=False,
    ),
    _family(
        "OpenAI audio models",
        r"^(gpt-audio|gpt-4o(-mini)?-audio-preview)([-.].*)?$",
        {"text", "input_audio"},
        json_schema=False,
        needs_audio=True,
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
    _family(
        "Qwen VL (vLLM)",
        r"^(.*/)?qwen(2|2\.5|2_5|3)[-_]vl([-_.].*)?$",
        {"text", "image_url", "video_url"},
        openai=False,
    ),
)

_warned: set[str] = set()


def base_model(model: str) -> str:
    """The model id a family is known by: a fine-tuned OpenAI id
    (`ft:gpt-4o-2024-08-06:org:suffix:id`) is its base model's, any other id itself."""
    model = str(model).strip()
    if model.lower().startswith("ft:"):
        return model[3:].split(":", 1)[0]
    return model


def family_of(model: str) -> Family | None:
    model = base_model(model)
    return next((family for family in FAMILIES if family.pattern.match(model)), None)


def is_openai_host(base_url: str | None) -> bool:
    host = urlparse(base_url or "").hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def default_video_audio(entry: Mapping) -> str | None:
    """The audio path of a video entry that names none: None when it must say.

    Only a family known to take the track that way gets a default: frames plus an
    `input_audio` part for a family that takes both, `in_video` for an omni family in
    video_url mode. Any other model (OpenAI, a vision-only model, an unknown one) chooses.
    """
    media = entry.get("media") or {}
    family = family_of(entry.get("model", ""))
    if family is None:
        return None
    if media.get("video_mode", "frames") == "frames":
        both = {"image_url", "input_audio"} <= family.accepts
        return "separate_part" if both else None
    return "in_video" if family.audio_in_video else None


def _why_choose(entry: Mapping, family: Family | None) -> str:
    """Why a video entry's audio path has no default (`default_video_audio` returned None)."""
    frames = entry["media"]["video_mode"] == "frames"
    if family is None:
        what = "hears an input_audio part beside its frames" if frames else "decodes a video_url's audio"
        return f"model {entry['model']!r} is not a known family: whether it {what} is unknown"
    if family.openai and frames:
        return f"{family.name} take frames or audio, never both"
    if "input_audio" not in family.accepts:
        return f"{family.name} take no audio input: none is the only path they accept"
    return f"{family.name} are not an omni family whose video_url carries its audio"


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

    if family is not None and not family.chat_completions:
        return [
            f"{where}: model: {family.name} ({entry['model']}) are served by the Realtime API only "
            "(v1/realtime), not chat completions; for audio through chat completions use an audio "
            "model (gpt-audio, gpt-4o-audio-preview)"
        ]
    if media.get("video_audio") is None:
        choice = default_video_audio(entry)
        if choice is None and is_video:
            problems.append(
                f"{where}: media.video_audio: choose how the video's audio reaches the model "
                f"({_why_choose(entry, family)}): "
                "in_video (inside the video_url part: vLLM mm_processor_kwargs.use_audio_in_video), "
                "separate_part (the track as its own input_audio part) or none (a silent video)"
            )
        media["video_audio"] = choice
    if media.get("video_audio") == "in_video" and media["video_mode"] == "frames":
        problems.append(
            f"{where}: media.video_audio: in_video needs media.video_mode video_url (frames carry no audio)"
        )
    elif media.get("video_audio") == "in_video" and family is not None and not family.audio_in_video:
        problems.append(
            f"{where}: media.video_audio: in_video: {family.name} ({entry['model']}) do not decode "
            "a video_url's audio; use none" + (" or separate_part" if "input_audio" in family.accepts else "")
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
    if entry["json_mode"] == "json_schema" and not family.json_schema:
        problems.append(
            f"{where}: json_mode: {family.name} ({entry['model']}) refuse structured outputs "
            f'(the service: "{NO_JSON_SCHEMA}"); use json_object or off'
        )
    if family.needs_audio and "text" in entry["modalities"]:
        problems.append(
            f"{where}: modalities: {family.name} ({entry['model']}) refuse a request without audio "
            f'(the service: "{NEEDS_AUDIO}"), which modalities: text sends (the prompt alone); '
            "list audio only"
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


def needs_audio(entry: Mapping) -> bool:
    """Whether every request of this entry must carry audio (OpenAI's audio models)."""
    family = family_of(entry.get("model", "")) if entry.get("backend") == "openai" else None
    return family is not None and family.needs_audio


def request_problem(model: str, content: str | list[dict]) -> str | None:
    """Why the service would refuse a request with this user content; None when it would not.

    The entry check stops entries whose modalities send a refused request; this catches
    the requests an entry's modalities do not say (a judge prompt, a transcript request).
    """
    family = family_of(model)
    if family is None or not family.needs_audio:
        return None
    parts = content if isinstance(content, list) else []
    if any(part.get("type") == "input_audio" for part in parts):
        return None
    return f'{family.name} ({model}) refuse a request without audio (the service: "{NEEDS_AUDIO}")'
