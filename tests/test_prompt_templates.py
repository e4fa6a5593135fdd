"""Prompt templates: every familiarity variant loads, hashes and renders; field mistakes fail."""

from __future__ import annotations

import hashlib

import pytest

from omnisocial.models.parsing import parse_familiarity
from omnisocial.prompt_templates import (
    TemplateError,
    list_variants,
    load_template,
    placeholders,
    render,
    render_prompt,
)


@pytest.mark.parametrize("modality", ["text", "audio", "video"])
def test_each_modality_has_two_variants_asking_for_the_json_answer(modality):
    assert list_variants("familiarity", modality) == ["v1", "v2"]
    for variant in ("v1", "v2"):
        text, digest = load_template("familiarity", modality, variant)
        assert digest == hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert "20" in text and "FAMILIAR" in text and "STRANGER" in text and "relationship_label" in text
        assert placeholders(text) == (["transcript"] if modality == "text" else [])


def test_variants_differ():
    assert load_template("familiarity", "audio", "v1")[1] != load_template("familiarity", "audio", "v2")[1]


def test_render_fills_transcript_and_keeps_json_braces():
    prompt, digest = render_prompt("familiarity", "text", "v1", transcript="A: {odd} braces\nB: ok")
    assert "A: {odd} braces\nB: ok" in prompt
    assert '{"relationship_label": "FAMILIAR" or "STRANGER"' in prompt
    assert digest == load_template("familiarity", "text", "v1")[1]


def test_render_rejects_missing_and_extra_fields():
    with pytest.raises(TemplateError, match="needs field"):
        render("Say {transcript}")
    with pytest.raises(TemplateError, match="no placeholder for transcrpt"):
        render("Say {transcript}", transcript="x", transcrpt="y")
    with pytest.raises(TemplateError, match="no placeholder"):
        render_prompt("familiarity", "audio", "v1", transcript="x")


def test_unknown_template_lists_known_variants():
    with pytest.raises(TemplateError, match=r"familiarity/video/v9 \(variants: v1, v2\)"):
        load_template("familiarity", "video", "v9")
    with pytest.raises(TemplateError, match="bad template path"):
        load_template("../etc", "text", "v1")


def test_the_example_in_the_prompt_is_not_itself_an_answer():
    """A model that echoes the format line must not be scored as answering."""
    text, _ = load_template("familiarity", "video", "v1")
    assert parse_familiarity(text)["relationship_label"] == ""
