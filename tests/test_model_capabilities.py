"""Entry validation knows what known OpenAI-compatible families accept; strict-mode answer schemas."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import yaml

from omnisocial.models.capabilities import REASONING_MAX_TOKENS
from omnisocial.models.parsing import FAMILIARITY_SCHEMA
from omnisocial.models.registry import RegistryError, load_entries, validate_entry
from omnisocial.models.strict_schema import strict_problems, strict_schema

OPENAI = "https://api.openai.com/v1"
VLLM = "http://127.0.0.1:8000/v1"


def openai_entry(model: str, base_url: str = OPENAI, **overrides) -> dict:
    return {
        "name": re.sub(r"[^A-Za-z0-9._+-]", "_", model),
        "backend": "openai",
        "model": model,
        "base_url": base_url,
        "api_key_env": "OPENAI_API_KEY",
        **overrides,
    }


# --- which parts a family takes -----------------------------------------------------------


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-2024-08-06", "gpt-4.1-mini", "gpt-5", "o3", "GPT-4o"])
def test_chat_and_reasoning_models_refuse_input_audio(model):
    with pytest.raises(
        RegistryError, match=r"modalities: .*refuse input_audio parts, which modalities: audio"
    ):
        validate_entry(openai_entry(model, modalities=["text", "audio"]))


@pytest.mark.parametrize(
    "model", ["gpt-4o-audio-preview", "gpt-4o-mini-audio-preview-2024-12-17", "gpt-audio"]
)
def test_audio_models_take_audio_and_refuse_frames(model):
    entry = validate_entry(openai_entry(model, modalities=["audio"]))
    assert entry["max_tokens_field"] == "max_completion_tokens"
    with pytest.raises(RegistryError, match=r"refuse image_url parts, which modalities: video"):
        validate_entry(openai_entry(model, modalities=["video"], media={"video_audio": "none"}))


def test_no_openai_model_takes_frames_with_their_audio():
    """A gpt-4o video entry must say video_audio: none; separate_part is refused by name."""
    with pytest.raises(RegistryError, match=r"media\.video_audio: choose .*take frames or audio, never both"):
        validate_entry(openai_entry("gpt-4o", modalities=["video"]))
    with pytest.raises(
        RegistryError, match=r"refuse input_audio parts, which media\.video_audio: separate_part"
    ):
        validate_entry(openai_entry("gpt-4o", modalities=["video"], media={"video_audio": "separate_part"}))
    entry = validate_entry(
        openai_entry("gpt-4o", modalities=["text", "video"], media={"video_audio": "none"})
    )
    assert entry["media"]["video_audio"] == "none"
    with pytest.raises(RegistryError, match=r"refuse video_url parts"):
        validate_entry(
            openai_entry(
                "gpt-4o", modalities=["video"], media={"video_mode": "video_url", "video_audio": "none"}
            )
        )


def test_a_frames_video_entry_of_a_model_without_audio_input_must_choose_its_audio_path():
    """Qwen2.5-VL takes frames but no audio: no silent separate_part, and separate_part is refused."""
    vl = "Qwen/Qwen2.5-VL-7B-Instruct"
    with pytest.raises(
        RegistryError, match=r"media\.video_audio: choose .*Qwen VL \(vLLM\) take no audio input: none"
    ):
        validate_entry(openai_entry(vl, VLLM, api_key_env=None, modalities=["text", "video"]))
    with pytest.raises(
        RegistryError, match=r"refuse input_audio parts, which media\.video_audio: separate_part"
    ):
        validate_entry(openai_entry(vl, VLLM, modalities=["video"], media={"video_audio": "separate_part"}))
    silent = validate_entry(openai_entry(vl, VLLM, modalities=["video"], media={"video_audio": "none"}))
    assert silent["media"]["video_audio"] == "none" and silent["max_tokens_field"] == "max_tokens"
    with pytest.raises(RegistryError, match=r"media\.video_audio: in_video: Qwen VL .*do not decode"):
        validate_entry(
            openai_entry(
                vl, VLLM, modalities=["video"], media={"video_mode": "video_url", "video_audio": "in_video"}
            )
        )
    for model in ("Qwen/Qwen3-VL-8B-Instruct", "qwen2-vl-2b-instruct"):  # the family, any size or spelling
        with pytest.raises(RegistryError, match=r"Qwen VL \(vLLM\) take no audio input"):
            validate_entry(openai_entry(model, VLLM, modalities=["video"]))
    # an unknown model may not hear an input_audio part beside its frames: it chooses too
    with pytest.raises(RegistryError, match=r"media\.video_audio: choose .*'my/vlm' is not a known family"):
        validate_entry(openai_entry("my/vlm", VLLM, modalities=["video"]))
    # a family known to take frames and audio keeps its default
    omni = validate_entry(openai_entry("Qwen/Qwen2.5-Omni-7B", VLLM, modalities=["video"]))
    assert omni["media"]["video_audio"] == "separate_part"


def test_vllm_video_url_entry_must_name_its_audio_path_unless_omni():
    omni = validate_entry(
        openai_entry(
            "Qwen/Qwen2.5-Omni-7B",
            VLLM,
            api_key_env=None,
            modalities=["video"],
            media={"video_mode": "video_url"},
        )
    )
    assert omni["media"]["video_audio"] == "in_video" and omni["max_tokens_field"] == "max_tokens"
    with pytest.raises(RegistryError, match=r"media\.video_audio: choose .*decodes a video_url's audio"):
        validate_entry(
            openai_entry(
                "llava-hf/LLaVA-NeXT-Video-7B-hf",
                VLLM,
                modalities=["video"],
                media={"video_mode": "video_url"},
            )
        )
    with pytest.raises(RegistryError, match=r"in_video needs media\.video_mode video_url"):
        validate_entry(
            openai_entry("some/model", VLLM, modalities=["video"], media={"video_audio": "in_video"})
        )
    with pytest.raises(RegistryError, match=r"use_audio_in_video contradicts media\.video_audio none"):
        validate_entry(
            openai_entry(
                "Qwen/Qwen2.5-Omni-7B",
                VLLM,
                modalities=["video"],
                media={"video_mode": "video_url", "video_audio": "none"},
                extra_body={"mm_processor_kwargs": {"use_audio_in_video": True}},
            )
        )


# --- OpenAI audio, realtime and fine-tuned models ----------------------------------------

AUDIO_MODELS = [
    "gpt-4o-audio-preview",
    "gpt-4o-audio-preview-2025-06-03",
    "gpt-4o-mini-audio-preview",
    "gpt-4o-mini-audio-preview-2024-12-17",
    "gpt-audio",
    "gpt-audio-mini-2025-12-15",
    "gpt-audio-1.5",
]


@pytest.mark.parametrize("model", AUDIO_MODELS)
def test_audio_models_refuse_json_schema_and_text_only_entries_naming_the_key(model):
    """The model pages list structured outputs as not supported, and the service refuses a
    request without audio: both fail the entry at startup, with the service's words."""
    with pytest.raises(
        RegistryError,
        match=r"json_mode: OpenAI audio models .*refuse structured outputs "
        r"\(the service: \"'response_format' of type 'json_schema' is not supported with this model\"\); "
        r"use json_object or off",
    ):
        validate_entry(openai_entry(model, modalities=["audio"], json_mode="json_schema"))
    with pytest.raises(
        RegistryError,
        match=r"modalities: OpenAI audio models .*refuse a request without audio \(the service: "
        r"\"This model requires that either input content or output modality contain audio\"\), "
        r"which modalities: text sends",
    ):
        validate_entry(openai_entry(model, modalities=["text", "audio"]))
    with pytest.raises(RegistryError, match=r"modalities: .*refuse a request without audio"):
        validate_entry(openai_entry(model))  # the default modalities: text (e.g. a judge)
    entry = validate_entry(openai_entry(model, modalities=["audio"], json_mode="json_object"))
    assert entry["json_mode"] == "json_object" and entry["modalities"] == ["audio"]


def test_a_text_only_request_to_an_audio_model_fails_unsent(tmp_path):
    """A request the entry's modalities do not show (a transcript ablation, a judge prompt):
    failed before any call, with the reason; an audio request is built."""
    import wave

    from omnisocial.models.base import Request
    from omnisocial.models.openai_compat import OpenAICompatBackend

    audio = tmp_path / "tone.wav"
    with wave.open(str(audio), "wb") as out:  # 0.1 s of 16 kHz mono PCM
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x01" * 1600)
    entry = openai_entry("gpt-audio", "http://127.0.0.1:9/v1", api_key_env=None, modalities=["audio"])
    with OpenAICompatBackend(entry) as backend:
        (reply,) = backend.generate([Request("i1", "What do they say?")])
        body = backend.body(Request("i2", "Listen.", media={"audio": audio}))
    assert not reply.ok and reply.attempts == 0
    assert "request not built" in reply.error and "refuse a request without audio" in reply.error
    assert [part["type"] for part in body["messages"][-1]["content"]] == ["input_audio", "text"]


def test_a_transcript_ablation_of_an_audio_model_plans_no_requests():
    """who / when / how: the transcript run of an audio model would be all refused calls."""
    from omnisocial.socialomni.runs import run_modality

    audio = validate_entry(openai_entry("gpt-audio", modalities=["audio"]))
    assert run_modality(audio) == "audio" and run_modality(audio, "transcript") is None
    chat = validate_entry(openai_entry("gpt-4o", modalities=["video"], media={"video_audio": "none"}))
    assert run_modality(chat, "transcript") == "transcript"


@pytest.mark.parametrize(
    "model",
    [
        "gpt-realtime",
        "gpt-realtime-mini-2025-10-06",
        "gpt-4o-realtime-preview",
        "gpt-4o-mini-realtime-preview-2024-12-17",
    ],
)
def test_realtime_models_are_refused_on_chat_completions(model):
    with pytest.raises(RegistryError, match=r"model: OpenAI realtime models .*Realtime API only"):
        validate_entry(openai_entry(model, modalities=["audio"]))


def test_fine_tuned_ids_have_their_base_models_limits():
    from omnisocial.models.capabilities import base_model, family_of

    assert base_model("ft:gpt-4o-2024-08-06:my-org::AbC123") == "gpt-4o-2024-08-06"
    assert base_model("ft:gpt-4o-mini-2024-07-18:my-org:judge:XyZ9") == "gpt-4o-mini-2024-07-18"
    assert base_model("gpt-4o") == "gpt-4o"
    assert family_of("ft:gpt-4o-2024-08-06:my-org::AbC123").name == "OpenAI chat"
    with pytest.raises(
        RegistryError, match=r"OpenAI chat \(ft:gpt-4o-2024-08-06:my-org::AbC123\) refuse input_audio"
    ):
        validate_entry(openai_entry("ft:gpt-4o-2024-08-06:my-org::AbC123", modalities=["text", "audio"]))
    with pytest.raises(RegistryError, match=r"media\.video_audio: choose .*take frames or audio, never both"):
        validate_entry(openai_entry("ft:gpt-4o-mini-2024-07-18:my-org:judge:XyZ9", modalities=["video"]))
    tuned = validate_entry(
        openai_entry("ft:gpt-4o-mini-2024-07-18:my-org:judge:XyZ9", json_mode="json_schema")
    )
    assert tuned["max_tokens_field"] == "max_completion_tokens" and tuned["generation"]["temperature"] == 0
    reasoning = validate_entry(openai_entry("ft:o4-mini-2025-04-16:my-org::RfT1"))
    assert reasoning["generation"]["temperature"] is None
    assert reasoning["generation"]["max_new_tokens"] == REASONING_MAX_TOKENS
    with pytest.raises(
        RegistryError, match=r"generation\.temperature: OpenAI reasoning take only the default"
    ):
        validate_entry(openai_entry("ft:o4-mini-2025-04-16:my-org::RfT1", generation={"temperature": 0}))


def test_unknown_models_pass_with_one_warning(caplog):
    caplog.set_level(logging.WARNING)
    registry = {"models": [openai_entry("my-local-llm", VLLM, name="local", modalities=["text", "audio"])]}
    load_entries(registry)
    load_entries(registry)
    warnings = [r.message for r in caplog.records if "not a known family" in r.message]
    assert len(warnings) == 1 and "'my-local-llm'" in warnings[0] and "input_audio" in warnings[0]


def test_schema_refuses_the_old_boolean_video_audio():
    with pytest.raises(RegistryError, match=r"media\.video_audio: True is not one of"):
        validate_entry(openai_entry("some/model", VLLM, media={"video_audio": True}))


# --- reasoning models -----------------------------------------------------------------------


@pytest.mark.parametrize("model", ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-nano-2025-08-07"])
def test_reasoning_models_leave_temperature_unset_and_use_max_completion_tokens(model):
    entry = validate_entry(openai_entry(model))
    assert entry["generation"]["temperature"] is None and entry["generation"]["top_p"] is None
    assert entry["max_tokens_field"] == "max_completion_tokens"
    assert entry["generation"]["max_new_tokens"] == REASONING_MAX_TOKENS
    assert validate_entry(entry) == entry  # validating again changes nothing
    kept = validate_entry(openai_entry(model, generation={"max_new_tokens": 8000, "temperature": 1}))
    assert kept["generation"]["max_new_tokens"] == 8000


def test_reasoning_models_refuse_a_temperature_and_max_tokens():
    with pytest.raises(RegistryError, match=r"generation\.temperature: .*take only the default \(1\)"):
        validate_entry(openai_entry("o3", generation={"temperature": 0}))
    with pytest.raises(RegistryError, match=r"max_tokens_field: .*refuse max_tokens"):
        validate_entry(openai_entry("gpt-5-mini", max_tokens_field="max_tokens"))
    chat = validate_entry(openai_entry("gpt-5-chat-latest"))  # not a reasoning model
    assert chat["generation"]["temperature"] == 0


def test_a_reasoning_request_keeps_room_for_the_answer():
    """A judge asks temperature 0 and 32 tokens: a reasoning model sends neither as such."""
    from omnisocial.models.base import Request
    from omnisocial.models.openai_compat import OpenAICompatBackend

    backend = OpenAICompatBackend({**openai_entry("o4-mini"), "api_key_env": None})
    body = backend.body(Request("j1", "Score it.", settings={"temperature": 0.0, "max_new_tokens": 32}))
    assert "temperature" not in body and body["max_completion_tokens"] == REASONING_MAX_TOKENS
    assert backend.settings_for(Request("j1", "q", settings={"temperature": 0.0}))["temperature"] is None
    backend.close()


def test_other_servers_keep_max_tokens_and_openai_gets_the_modern_field():
    assert (
        validate_entry(openai_entry("llama3.1:8b", "http://localhost:11434/v1"))["max_tokens_field"]
        == "max_tokens"
    )
    assert (
        validate_entry(openai_entry("ft:custom-model", OPENAI))["max_tokens_field"] == "max_completion_tokens"
    )
    assert (
        validate_entry(openai_entry("gpt-4o", OPENAI, max_tokens_field="max_tokens"))["max_tokens_field"]
        == "max_tokens"
    )


# --- the strict-mode subset ----------------------------------------------------------------


def test_the_familiarity_schema_as_written_is_not_strict():
    problems = "\n".join(strict_problems(FAMILIARITY_SCHEMA))
    for expected in (
        "keyword '$schema'",
        "keyword 'title'",
        "inline flag group",
        "additionalProperties must be false",
        "every property must be required; not: confidence, rationale",
    ):
        assert expected in problems


def test_strict_schema_is_strict_and_accepts_the_same_labels():
    strict = strict_schema(FAMILIARITY_SCHEMA)
    assert strict_problems(strict) == []
    assert strict["additionalProperties"] is False
    assert strict["required"] == ["relationship_label", "confidence", "rationale"]
    pattern = strict["properties"]["relationship_label"]["pattern"]
    original = FAMILIARITY_SCHEMA["properties"]["relationship_label"]["pattern"]
    for label in ("FAMILIAR", "familiar", " Stranger ", "sTrAnGeR", "friend", "familiars", "", "STRANGER\n"):
        assert bool(re.search(pattern, label)) == bool(re.search(original, label)), label
    assert FAMILIARITY_SCHEMA["$schema"]  # the parser's schema is left as it is


def test_grammar_engines_compile_the_strict_schema_and_hold_answers_to_it():
    """llguidance (vLLM guidance backend, llama.cpp LLGuidance) and outlines-core (vLLM outlines
    backend) compile the schema as sent; the grammar takes every spelling of a label the parser
    takes, and no answer with a field missing or added."""
    import json

    import llguidance
    from outlines_core import json_schema

    def llguidance_error(schema: str) -> str:
        return llguidance.LLMatcher.validate_grammar(llguidance.grammar_from("json_schema", schema))

    strict = json.dumps(strict_schema(FAMILIARITY_SCHEMA))
    assert llguidance_error(strict) == ""
    broken = json.dumps({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=x)a"}}})
    assert "look-around" in llguidance_error(broken)  # the check is real: it names what it refuses
    grammar = re.compile(json_schema.build_regex_from_schema(strict))

    def takes(answer: dict) -> bool:
        return grammar.fullmatch(json.dumps(answer, separators=(",", ":"))) is not None

    full = {"relationship_label": "FAMILIAR", "confidence": 0.75, "rationale": "They joke."}
    for label in ("FAMILIAR", "familiar", "Stranger", " stranger "):
        assert takes({**full, "relationship_label": label}), label
    assert not takes({**full, "relationship_label": "friends"})
    assert not takes({k: v for k, v in full.items() if k != "confidence"})
    assert not takes({**full, "extra": 1})


def test_strict_checker_rules():
    ok = {
        "type": "object",
        "properties": {"a": {"type": ["string", "null"]}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert strict_problems(ok) == []
    assert strict_problems({"anyOf": [ok]}) == ["root: must be an object schema (not anyOf)"]
    bad = {**ok, "properties": {"a": {"type": "string", "minLength": 2, "format": "colour"}}}
    assert strict_problems(bad) == [
        "root.a: keyword 'minLength' is not supported for type string",
        "root.a: format 'colour' is not supported",
    ]
    nested = {**ok, "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}}}
    assert strict_problems(nested) == [
        "root.a: additionalProperties must be false",
        "root.a: every property must be required; not: b",
    ]
    assert strict_problems(strict_schema(nested)) == []
    with pytest.raises(ValueError, match=r"not literal words"):
        strict_schema({"type": "string", "pattern": r"(?i:[a-z]+)"})


# --- the examples in config, the docs and README are entries the real services accept ------

ROOT = Path(__file__).resolve().parents[1]


def _markdown_examples(path: Path) -> list[tuple[str, dict]]:
    """The entries of every ```yaml block with a `models:` list in a Markdown page."""
    found = []
    for code in re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S):
        data = yaml.safe_load(code)
        if isinstance(data, dict) and isinstance(data.get("models"), list):
            found += [(path.name, entry) for entry in data["models"]]
    return found


def _config_examples() -> list[tuple[str, dict]]:
    """The commented registry entries of config/demo.yaml and the entries on the docs pages."""
    demo = (ROOT / "config" / "demo.yaml").read_text()
    block = re.search(r"# Model registry:.*?\nmodels:", demo, re.S).group(0)
    entries = re.findall(r"#   - (\{.*?\})\n(?!#      )", block + "\n", re.S)
    found = [("config/demo.yaml", yaml.safe_load(re.sub(r"\n#\s+", " ", e))) for e in entries]
    for page in sorted((ROOT / "docs").glob("*.md")):
        found += _markdown_examples(page)
    return found


def _check_examples(examples: list[tuple[str, dict]]) -> None:
    for where, entry in examples:
        valid = validate_entry(entry)  # raises naming the key for a request the service refuses
        if valid["name"] == "gpt-4o":
            assert "audio" not in valid["modalities"], where
        if valid["name"] == "gpt-audio":
            assert valid["modalities"] == ["audio"], where
        if valid["name"] == "qwen3-omni-vllm":
            assert valid["media"]["video_audio"] == "in_video", where


def test_the_config_and_docs_api_examples_validate_against_known_families():
    examples = _config_examples()
    apis = [entry for _, entry in examples if entry["backend"] == "openai"]
    names = {entry["name"] for entry in apis}
    assert len(apis) >= 8 and {"gpt-4o", "gpt-audio", "qwen3-omni-vllm", "qwen2.5-vl-vllm"} <= names
    assert any(entry["model"].startswith("ft:") for entry in apis)
    assert any(
        entry.get("json_mode") == "json_schema" for _, entry in examples if entry["backend"] == "gemini"
    )
    _check_examples(examples)


def test_the_readme_api_examples_validate_against_known_families():
    examples = _markdown_examples(ROOT / "README.md")
    _check_examples(examples)
