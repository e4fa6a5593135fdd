"""The model registry: model entries from config, validated, and the backend each one builds.

An entry (schema: `model_entry.schema.json`, draft 2020-12) names a model, its backend and
how to decode. Validation fails fast with the entry and key named; defaults are filled in,
so downstream code reads every key without `.get`. API keys never live in config: an entry
names the environment variable (`api_key_env`) and the backend reads it when it is built.

Backends are imported only when an entry asks for them, so a text-only study never
imports torch and a local study never needs google-genai.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

from omnisocial.models.base import Backend

SCHEMA_RESOURCE = "model_entry.schema.json"
BACKENDS = ("transformers", "openai", "gemini", "baseline")

# Request.settings keys a backend understands; anything else is a typo and fails the call.
SETTING_KEYS = ("temperature", "max_new_tokens", "seed", "top_p", "response_schema")


class RegistryError(ValueError):
    """A model entry broke its schema, or the registry is inconsistent; the message names it."""


@cache
def entry_schema() -> dict:
    text = resources.files("omnisocial.models").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return schema


def _with_defaults(validator_class):
    """A validator class that also writes each property's `default` into the instance."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(prop, copy.deepcopy(subschema["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_DefaultingValidator = _with_defaults(Draft202012Validator)


def _where(entry: Any, position: int | None) -> str:
    name = entry.get("name") if isinstance(entry, Mapping) else None
    label = f"model entry {name!r}" if isinstance(name, str) else "model entry"
    return f"{label} (models[{position}])" if position is not None else label


def _path(error: jsonschema.ValidationError) -> str:
    parts = []
    for part in error.absolute_path:
        parts.append(f"[{part}]" if isinstance(part, int) else (f".{part}" if parts else str(part)))
    return "".join(parts)


def validate_entry(entry: Mapping, position: int | None = None) -> dict:
    """Return a validated copy of `entry` with every default filled in.

    Raises RegistryError naming the entry and the offending key.
    """
    where = _where(entry, position)
    if not isinstance(entry, Mapping):
        raise RegistryError(f"{where}: must be a mapping, got {type(entry).__name__}")
    if "api_key" in entry:
        raise RegistryError(
            f"{where}: api_key: keys never go in config; name the environment variable in api_key_env"
        )
    raw = copy.deepcopy(dict(entry))
    error = jsonschema.exceptions.best_match(Draft202012Validator(entry_schema()).iter_errors(raw))
    if error is not None:
        key = _path(error)
        if error.validator == "required":
            missing = [name for name in error.validator_value if name not in (error.instance or {})]
            key = ".".join(filter(None, [key, *missing[:1]]))
        raise RegistryError(f"{where}: {key or '<entry>'}: {error.message}")
    filled = copy.deepcopy(raw)
    _DefaultingValidator(entry_schema()).validate(filled)
    return filled


def load_entries(config: Mapping | Iterable[Mapping]) -> dict[str, dict]:
    """Validate a registry: a list of entries, or a mapping with a `models` list.

    Returns name -> validated entry, in config order. Names must be unique.
    """
    entries = config.get("models") if isinstance(config, Mapping) else config
    if entries is None:
        raise RegistryError("model registry: no 'models' list")
    if isinstance(entries, (str, bytes, Mapping)):
        raise RegistryError("model registry: 'models' must be a list of entries")
    registry: dict[str, dict] = {}
    for position, entry in enumerate(entries):
        valid = validate_entry(entry, position)
        if valid["name"] in registry:
            raise RegistryError(f"{_where(valid, position)}: name: duplicate model name {valid['name']!r}")
        registry[valid["name"]] = valid
    return registry


def select(registry: Mapping[str, dict], names: Iterable[str] | None) -> list[dict]:
    """The entries named in `names` (all when None); unknown names fail listing the known ones."""
    if names is None:
        return list(registry.values())
    chosen = []
    for name in names:
        if name not in registry:
            raise RegistryError(f"unknown model {name!r}; known: {', '.join(registry) or '(none)'}")
        chosen.append(registry[name])
    return chosen


def generation_settings(entry: Mapping, overrides: Mapping | None = None) -> dict:
    """Effective decoding settings: the entry's `generation`, then `overrides` (a Request's settings).

    Raises RegistryError for a setting no backend understands (a typo would otherwise be
    silently ignored while still changing the cache key).
    """
    settings = dict(entry.get("generation") or {})
    for key, value in (overrides or {}).items():
        if key not in SETTING_KEYS:
            raise RegistryError(f"unknown setting {key!r}; known: {', '.join(SETTING_KEYS)}")
        settings[key] = value
    return settings


def config_hash(entry: Mapping, keys: Iterable[str]) -> str:
    """Short hash of the entry keys that change a model's output (part of its fingerprint)."""
    payload = {key: entry.get(key) for key in keys}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]


def build_backend(entry: Mapping) -> Backend:
    """Build the backend an entry names, importing its module only now.

    transformers -> omnisocial.models.transformers_backend.TransformersBackend(entry)
    openai       -> omnisocial.models.openai_compat.OpenAICompatBackend(entry)
    gemini       -> omnisocial.models.gemini.GeminiBackend(entry)
    baseline     -> omnisocial.models.baselines.build_baseline(entry)
    Every constructor receives the validated entry (defaults filled).
    """
    valid = validate_entry(entry)
    kind = valid["backend"]
    if kind == "openai":
        from omnisocial.models.openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(valid)
    if kind == "gemini":
        from omnisocial.models.gemini import GeminiBackend

        return GeminiBackend(valid)
    if kind == "transformers":
        module = importlib.import_module("omnisocial.models.transformers_backend")
        return module.TransformersBackend(valid)
    if kind == "baseline":
        module = importlib.import_module("omnisocial.models.baselines")
        return module.build_baseline(valid)
    raise RegistryError(f"{_where(valid, None)}: backend: unknown backend {kind!r}")  # schema forbids it
