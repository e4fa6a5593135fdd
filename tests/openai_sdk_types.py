"""Check a request body against the official OpenAI SDK's request types, strictly.

pydantic's TypedDict validation ignores unknown keys and validates `Iterable[...]` fields
lazily, so a misspelt field or a wrong content part would pass it. `problems` walks the
SDK's typed dicts itself: every key must be declared, every required key present, every
Literal matched, every union satisfied by one branch.
"""

from __future__ import annotations

import collections.abc
import types
import typing

import typing_extensions
from openai.types.chat import completion_create_params

BODY_TYPE = completion_create_params.CompletionCreateParamsNonStreaming


def _strip(tp):
    while typing.get_origin(tp) in (
        typing.Required,
        typing.NotRequired,
        typing.Annotated,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        tp = typing.get_args(tp)[0]
    return tp


def _required(tp, hints: dict) -> list[str]:
    """Required keys, read from the annotations: the SDK's modules use postponed annotations,
    so `__required_keys__` misses the `Required[...]` ones on Python 3.11."""
    marks = {typing.Required, typing_extensions.Required}
    optional = {typing.NotRequired, typing_extensions.NotRequired}
    total = getattr(tp, "__total__", True)
    out = []
    for key, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is typing.Annotated:
            origin = typing.get_origin(typing.get_args(hint)[0])
        if origin in marks or (total and origin not in optional):
            out.append(key)
    return out


def problems(value, tp=BODY_TYPE, where: str = "body") -> list[str]:
    tp = _strip(tp)
    origin = typing.get_origin(tp)
    if tp is typing.Any or tp is object:
        return []
    if tp is type(None) or tp is None:
        return [] if value is None else [f"{where}: expected null"]
    if origin in (typing.Union, types.UnionType):
        branches = [problems(value, arg, where) for arg in typing.get_args(tp)]
        if any(not branch for branch in branches):
            return []
        return [f"{where}: matches no variant; closest: {min(branches, key=len)[:3]}"]
    if origin in (typing.Literal, typing_extensions.Literal):
        return [] if value in typing.get_args(tp) else [f"{where}: {value!r} not in {typing.get_args(tp)}"]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: expected an object for {tp.__name__}"]
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        out = [f"{where}.{key}: not a field of {tp.__name__}" for key in value if key not in hints]
        out += [
            f"{where}.{key}: required by {tp.__name__}" for key in _required(tp, hints) if key not in value
        ]
        for key, item in value.items():
            if key in hints:
                out += problems(item, hints[key], f"{where}.{key}")
        return out
    if origin in (collections.abc.Iterable, collections.abc.Sequence, list, typing.List):  # noqa: UP006
        if not isinstance(value, list):
            return [f"{where}: expected a list"]
        (item_type,) = typing.get_args(tp) or (typing.Any,)
        return [p for i, item in enumerate(value) for p in problems(item, item_type, f"{where}[{i}]")]
    if origin in (dict, collections.abc.Mapping, typing.Dict):  # noqa: UP006
        return [] if isinstance(value, dict) else [f"{where}: expected an object"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{where}: expected a string"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{where}: expected a boolean"]
    if tp is int:
        return (
            []
            if isinstance(value, int) and not isinstance(value, bool)
            else [f"{where}: expected an integer"]
        )
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [f"{where}: expected a number"]
    if isinstance(tp, type) and isinstance(value, tp):
        return []
    return [f"{where}: unchecked type {tp!r}"]


# vLLM's extensions to chat completions (docs.vllm.ai, "Multimodal inputs"; "Extra parameters"):
# a `video_url` content part and the `mm_processor_kwargs` body field. The SDK has no type for
# them; `sdk_problems` checks their documented shape and the rest of the body against the SDK.
VLLM_BODY_FIELDS = {"mm_processor_kwargs"}


def sdk_problems(body: dict) -> list[str]:
    body = dict(body)
    out = []
    for key in VLLM_BODY_FIELDS & set(body):
        if not isinstance(body.pop(key), dict):
            out.append(f"body.{key}: expected an object")
    messages = []
    for m, message in enumerate(body.get("messages", [])):
        content = message.get("content")
        if isinstance(content, list):
            kept = []
            for p, part in enumerate(content):
                if part.get("type") == "video_url":
                    url = (part.get("video_url") or {}).get("url")
                    if set(part) != {"type", "video_url"} or not isinstance(url, str):
                        out.append(f"body.messages[{m}].content[{p}]: not a vLLM video_url part")
                else:
                    kept.append(part)
            message = {**message, "content": kept}
        messages.append(message)
    body["messages"] = messages
    return out + problems(body)
