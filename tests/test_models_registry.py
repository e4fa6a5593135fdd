"""The model registry: schema validation that names the key, defaults, lazy backend imports."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

from omnisocial.models import registry
from omnisocial.models.registry import RegistryError, build_backend, load_entries, validate_entry

OPENAI = {"name": "gpt", "backend": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"}


def test_schema_is_valid_draft_2020_12_with_defaults():
    schema = registry.entry_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["generation"]["properties"]["temperature"]["default"] == 0
    assert schema["properties"]["generation"]["properties"]["seed"]["default"] == 42


def test_defaults_filled_and_input_untouched():
    entry = dict(OPENAI, generation={"max_new_tokens": 64})
    valid = validate_entry(entry)
    assert valid["generation"] == {"temperature": 0, "max_new_tokens": 64, "seed": 42, "top_p": 1.0}
    assert valid["modalities"] == ["text"]
    assert valid["concurrency"] == 4 and valid["max_retries"] == 5 and valid["timeout_s"] == 120
    assert valid["media"]["video_mode"] == "frames" and valid["media"]["fps"] == 1.0
    assert valid["api_key_env"] is None
    assert "modalities" not in entry and entry["generation"] == {"max_new_tokens": 64}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"base_url": None}, "base_url"),
        ({"generation": {"temperature": -0.5}}, "generation.temperature"),
        ({"generation": {"temprature": 0}}, "generation"),
        ({"modalities": ["text", "smell"]}, "modalities[1]"),
        ({"concurrency": 0}, "concurrency"),
        ({"backend": "llama"}, "backend"),
        ({"api_key_env": "MY-KEY"}, "api_key_env"),
        ({"media": {"video_mode": "gif"}}, "media.video_mode"),
        ({"timeout_s": 0}, "timeout_s"),
    ],
)
def test_invalid_entry_fails_naming_the_key(change, named):
    entry = {**OPENAI, **change}
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(RegistryError) as error:
        validate_entry(entry, position=2)
    message = str(error.value)
    assert message.startswith("model entry 'gpt' (models[2]): " + named + ":"), message


def test_literal_api_key_is_refused():
    with pytest.raises(RegistryError, match="api_key: keys never go in config"):
        validate_entry({**OPENAI, "api_key": "sk-live-abc"})


def test_gemini_needs_the_key_variable_name():
    with pytest.raises(RegistryError, match=r"api_key_env: 'api_key_env' is a required property"):
        validate_entry({"name": "g", "backend": "gemini", "model": "gemini-2.5-pro"})


def test_load_entries_keeps_order_and_rejects_duplicates():
    config = {"models": [OPENAI, {"name": "maj", "backend": "baseline", "model": "majority"}]}
    entries = load_entries(config)
    assert list(entries) == ["gpt", "maj"]
    assert registry.select(entries, ["maj"])[0]["model"] == "majority"
    with pytest.raises(RegistryError, match="unknown model 'nope'; known: gpt, maj"):
        registry.select(entries, ["nope"])
    with pytest.raises(RegistryError, match=r"models\[1\]\): name: duplicate model name 'gpt'"):
        load_entries([OPENAI, dict(OPENAI)])
    with pytest.raises(RegistryError, match="no 'models' list"):
        load_entries({})


def test_generation_settings_merge_and_reject_unknown_keys():
    entry = validate_entry(OPENAI)
    assert registry.generation_settings(entry, {"max_new_tokens": 8})["max_new_tokens"] == 8
    assert registry.generation_settings(entry)["seed"] == 42
    with pytest.raises(RegistryError, match="unknown setting 'temp'"):
        registry.generation_settings(entry, {"temp": 1})


def test_config_hash_changes_with_output_settings_only():
    a = validate_entry(OPENAI)
    b = validate_entry({**OPENAI, "concurrency": 32})
    c = validate_entry({**OPENAI, "generation": {"temperature": 0.7}})
    keys = ("model", "generation")
    assert registry.config_hash(a, keys) == registry.config_hash(b, keys)
    assert registry.config_hash(a, keys) != registry.config_hash(c, keys)


def test_importing_registry_imports_no_backend():
    code = (
        "import sys, json; import omnisocial.models.registry as r; r.load_entries(["
        + json.dumps(OPENAI)
        + "]);"
        "prefixes = ('omnisocial.models.', 'google.genai', 'torch');"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(prefixes))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    # capabilities: what known API families accept (stdlib only), read when an entry is validated
    assert loaded == [
        "omnisocial.models.base",
        "omnisocial.models.capabilities",
        "omnisocial.models.entries",
        "omnisocial.models.registry",
    ], loaded


@pytest.mark.parametrize(
    "module", sorted({target.partition(":")[0] for target in registry.BACKEND_FACTORIES.values()})
)
def test_backend_module_alone_does_not_import_the_registry(module):
    code = f"import sys, {module}; print('omnisocial.models.registry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", module


def test_backend_table_matches_the_schema_and_resolves():
    import importlib

    assert list(registry.BACKENDS) == registry.entry_schema()["properties"]["backend"]["enum"]
    for target in registry.BACKEND_FACTORIES.values():
        module, _, attribute = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attribute)), target


def test_build_backend_dispatches_by_name(monkeypatch):
    from omnisocial.models.openai_compat import OpenAICompatBackend

    backend = build_backend(OPENAI)
    assert isinstance(backend, OpenAICompatBackend)
    assert backend.entry["generation"]["seed"] == 42
    backend.close()

    seen = {}
    baselines = types.ModuleType("omnisocial.familiarity.baselines")
    baselines.build_baseline = lambda entry: seen.setdefault("baseline", entry)
    local = types.ModuleType("omnisocial.models.transformers_backend")
    local.TransformersBackend = lambda entry: seen.setdefault("transformers", entry)
    monkeypatch.setitem(sys.modules, "omnisocial.familiarity.baselines", baselines)
    monkeypatch.setitem(sys.modules, "omnisocial.models.transformers_backend", local)
    build_backend({"name": "maj", "backend": "baseline", "model": "majority"})
    build_backend(
        {"name": "qwen", "backend": "transformers", "model": "/models/qwen", "options": {"dtype": "bf16"}}
    )
    assert seen["baseline"]["model"] == "majority" and seen["baseline"]["generation"]["seed"] == 42
    assert seen["transformers"]["options"] == {"dtype": "bf16"}


def test_backend_reads_key_only_from_environment(monkeypatch):
    monkeypatch.delenv("OMNI_TEST_ABSENT_KEY", raising=False)
    with pytest.raises(RegistryError, match="environment variable OMNI_TEST_ABSENT_KEY is not set"):
        build_backend({**OPENAI, "api_key_env": "OMNI_TEST_ABSENT_KEY"})


def test_a_backend_modules_family_rules_run_at_validation(monkeypatch, caplog):
    """gemini.check_entry (when the module has one) fails a broken entry at startup, naming the key."""
    from omnisocial.models import gemini

    entry = {"name": "g", "backend": "gemini", "model": "gemini-2.5-flash", "api_key_env": "GEMINI_API_KEY"}
    seen = []

    def check_entry(valid, position):
        seen.append((valid["model"], position))
        if valid["model"].startswith("gemini-1"):
            raise RegistryError(f"model entry {valid['name']!r} (models[{position}]): model: too old")
        return [f"model entry {valid['name']!r}: a warning"]

    monkeypatch.setattr(gemini, "check_entry", check_entry, raising=False)
    caplog.set_level("WARNING")
    load_entries([entry])
    assert seen == [("gemini-2.5-flash", 0)] and "a warning" in caplog.text
    with pytest.raises(RegistryError, match=r"models\[0\]\): model: too old"):
        load_entries([{**entry, "model": "gemini-1.5-pro"}])
