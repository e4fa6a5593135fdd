"""The model registry: model entries from config, validated, and the backend each one builds.

An entry (schema: `model_entry.schema.json`, draft 2020-12) names a model, its backend and
how to decode. Validation fails fast with the entry and key named; defaults are filled in,
so downstream code reads every key without `.get`. API keys never live in config: an entry
names the environment variable (`api_key_env`) and the backend reads it when it is built.

Entry validation and the helpers backends use (`RegistryError`, `validate_entry`,
`generation_settings`, `config_hash`) live in `models.entries` and are re-exported here;
the backends import `models.entries`, never this module, so there is no import cycle.
`BACKEND_FACTORIES` maps each backend name to a "module:attribute" string, resolved with
importlib only when an entry asks for it, so a text-only study never imports torch and a
local study never needs google-genai.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping

from omnisocial.models.base import Backend
from omnisocial.models.entries import (
    SCHEMA_RESOURCE,
    SETTING_KEYS,
    RegistryError,
    _where,
    config_hash,
    entry_schema,
    generation_settings,
    validate_entry,
)

__all__ = [
    "BACKENDS",
    "BACKEND_FACTORIES",
    "SCHEMA_RESOURCE",
    "SETTING_KEYS",
    "RegistryError",
    "build_backend",
    "config_hash",
    "entry_schema",
    "generation_settings",
    "load_entries",
    "select",
    "validate_entry",
]

# backend name -> "module:callable"; the callable receives the validated entry (defaults
# filled) and returns a Backend. The only place a backend's location is written down.
BACKEND_FACTORIES: dict[str, str] = {
    "transformers": "omnisocial.models.transformers_backend:TransformersBackend",
    "openai": "omnisocial.models.openai_compat:OpenAICompatBackend",
    "gemini": "omnisocial.models.gemini:GeminiBackend",
    # The familiarity study's offline baselines (chance, majority, behavioural) answer in its
    # JSON format; named here by path only, so the shared registry imports no benchmark
    # package unless an entry asks for this backend.
    "baseline": "omnisocial.familiarity.baselines:build_baseline",
}
BACKENDS = tuple(BACKEND_FACTORIES)


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


def build_backend(entry: Mapping) -> Backend:
    """Build the backend an entry names, importing its module only now (see BACKEND_FACTORIES).

    Every constructor receives the validated entry (defaults filled).
    """
    valid = validate_entry(entry)
    kind = valid["backend"]
    target = BACKEND_FACTORIES.get(kind)
    if target is None:  # the schema forbids it
        raise RegistryError(f"{_where(valid, None)}: backend: unknown backend {kind!r}")
    module_name, _, attribute = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attribute)
    return factory(valid)
