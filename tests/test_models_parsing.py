"""Parsing model replies: fenced, prose-wrapped, nested and invalid JSON; familiarity answers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnisocial.models.parsing import FAMILIARITY_SCHEMA, parse_familiarity, parse_json_reply

SCHEMA = {"type": "object", "required": ["score"], "properties": {"score": {"type": "integer"}}}


def test_bare_json():
    assert parse_json_reply('{"score": 3}', SCHEMA) == ({"score": 3}, "")


def test_fenced_json_with_prose():
    text = 'Sure! Here is my answer:\n```json\n{"score": 2}\n```\nHope that helps.'
    assert parse_json_reply(text, SCHEMA) == ({"score": 2}, "")


def test_prose_around_json_with_braces_in_strings():
    text = 'I think {maybe} the answer is {"note": "a } inside", "score": 1} -- final.'
    assert parse_json_reply(text, SCHEMA) == ({"note": "a } inside", "score": 1}, "")


def test_first_valid_object_wins_over_an_earlier_invalid_one():
    text = 'Format: {"score": "int"}. Answer: {"score": 4} or maybe {"score": 5}'
    assert parse_json_reply(text, SCHEMA) == ({"score": 4}, "")


def test_nested_object_is_found():
    assert parse_json_reply('{"answer": {"score": 7}}', SCHEMA) == ({"score": 7}, "")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "empty reply"),
        ("   ", "empty reply"),
        ("I cannot tell.", "no JSON found"),
        ("{'score': 3}", "no JSON found"),  # Python dict syntax is not JSON
        ('{"score": "high"}', "no JSON object matches the schema (score: 'high' is not of type 'integer')"),
    ],
)
def test_invalid_replies_give_reasons(text, reason):
    assert parse_json_reply(text, SCHEMA) == (None, reason)


def test_familiarity_valid_case_insensitive():
    out = parse_familiarity(
        '```json\n{"relationship_label": "Stranger", "confidence": 0.6, "rationale": "polite"}\n```'
    )
    assert out == {
        "relationship_label": "stranger",
        "confidence": 0.6,
        "rationale": "polite",
        "parse_error": "",
    }


def test_familiarity_prose_wrapped():
    out = parse_familiarity(
        'They laugh a lot. {"relationship_label":"FAMILIAR","confidence":1,"rationale":"x"} Done'
    )
    assert out["relationship_label"] == "familiar" and out["confidence"] == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "They are probably friends.",  # a label in prose is not an answer
        '{"relationship_label": "FRIENDS", "confidence": 0.9}',
        '{"relationship_label": "FAMILIAR or STRANGER"}',
        '{"confidence": 0.9, "rationale": "no label"}',
        '{"relationship_label": null}',
        "",
    ],
)
def test_familiarity_non_answers_never_guess(text):
    out = parse_familiarity(text)
    assert out["relationship_label"] == ""
    assert out["confidence"] is None
    assert out["parse_error"]


def test_familiarity_bad_confidence_keeps_label_and_says_so():
    out = parse_familiarity('{"relationship_label": "familiar", "confidence": 85, "rationale": "r"}')
    assert out["relationship_label"] == "familiar"
    assert out["confidence"] is None
    assert "label kept" in out["parse_error"] and "85" in out["parse_error"]


def test_familiarity_missing_confidence_is_still_an_answer():
    out = parse_familiarity('{"relationship_label": "STRANGER"}')
    assert out == {"relationship_label": "stranger", "confidence": None, "rationale": "", "parse_error": ""}


@settings(max_examples=60, deadline=None)
@given(
    label=st.sampled_from(["FAMILIAR", "STRANGER", "familiar", "Stranger"]),
    confidence=st.floats(min_value=0, max_value=1),
    before=st.text(alphabet=st.characters(blacklist_characters="{}`"), max_size=40),
    after=st.text(max_size=40),
    fenced=st.booleans(),
)
def test_familiarity_round_trips_through_any_wrapping(label, confidence, before, after, fenced):
    answer = json.dumps({"relationship_label": label, "confidence": confidence, "rationale": "r"})
    body = f"```json\n{answer}\n```" if fenced else answer
    out = parse_familiarity(f"{before}{body}{after}")
    assert out["relationship_label"] == label.lower()
    assert out["confidence"] == pytest.approx(confidence)


def test_schema_is_the_documented_one():
    assert FAMILIARITY_SCHEMA["required"] == ["relationship_label"]
    assert set(FAMILIARITY_SCHEMA["properties"]) == {"relationship_label", "confidence", "rationale"}
