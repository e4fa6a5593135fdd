"""A model entry: its schema, validation that names the key, defaults, and the helpers
every backend uses to read one (decoding settings, fingerprint hash).

This module imports no backend and no registry; the backends import it, and the
registry (`models.registry`) re-exports its public names, so the backend modules and
the registry never import each other.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

logger = logging.getLogger(__name__)

SCHEMA_RESOURCE = "model_entry.schema.json"

# Backends whose module holds model-family rules the schema cannot say, as
# `check_entry(validated entry, position) -> warnings` (RegistryError naming the key when
# broken), run at validation so a bad entry fails at startup. API backends only: importing
# them is cheap (no torch). openai's rules live in `models.capabilities`.
ENTRY_CHECKS = {"gemini": "omnisocial.models.gemini"}

# Request.settings keys a backend understands; anything else is a typo and fails the call.
SETTING_KEYS = ("temperature", "max_new_tokens", "seed", "top_p", "response_schema")


class RegistryError(ValueError):
    """A model entry broke its schema, or the registry is inconsistent; the message names it."""


def api_key_from_env(entry: Mapping) -> str | None:
    """The key from the environment variable the entry names; None when it names none."""
    variable = entry.get("api_key_env")
    if not variable:
        return None
    value = os.environ.get(variable)
    if not value:
        raise RegistryError(
            f"model entry {entry.get('name')!r}: api_key_env: environment variable {variable} is not set"
        )
    return value.strip()


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
    if filled["backend"] == "openai":
        from omnisocial.models.capabilities import check_openai_entry

        problems = check_openai_entry(filled, raw, where)
        if problems:
            raise RegistryError("; ".join(problems))
    elif filled["backend"] in ENTRY_CHECKS:
        check = getattr(importlib.import_module(ENTRY_CHECKS[filled["backend"]]), "check_entry", None)
        if check is not None:  # optional: a backend module without family rules has none
            for warning in check(filled, position):
                logger.warning("%s", warning)
    return filled


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


# Local model families whose pins conflict with the shared inference env get their own
# (envs/*.yaml for --use-conda; without conda the Makefile's .venv-omni / .venv-voxtral):
# Qwen2.5-Omni needs torchvision (with torch 2.14.1, the first torch it has a build for here);
# Voxtral needs mistral-common, which caps numpy below 2.4 on Python 3.11.
FAMILY_ENVS = {"qwen2_5_omni": "omni.yaml", "voxtral": "voxtral.yaml"}
DEFAULT_MODEL_ENV = "inference.yaml"


def model_env_file(entry: Mapping) -> str:
    """The env file (a name under envs/) a registry entry's inference job runs in."""
    if entry.get("backend") != "transformers":
        return DEFAULT_MODEL_ENV
    family = (entry.get("options") or {}).get("family")
    return FAMILY_ENVS.get(family, DEFAULT_MODEL_ENV)
