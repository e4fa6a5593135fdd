"""Reading structured answers out of free model text, and saying why when there is none.

Models wrap JSON in ```json fences, prose ("Sure! Here is my answer: {...}") or both.
`parse_json_reply` tries the whole reply, then every fenced block, then every JSON object
that starts at a `{` anywhere in the text (so nested and surrounding text are fine), and
returns the first one that validates against the schema. Nothing is ever guessed: a reply
without a valid object is a non-answer with its reason.
"""

from __future__ import annotations

import json
import re
from functools import cache

from jsonschema import Draft202012Validator

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
MAX_CANDIDATES = 200  # '{' positions tried; replies are short, this bounds pathological ones

FAMILIARITY_LABELS = ("FAMILIAR", "STRANGER")
FAMILIARITY_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "familiarity answer",
    "type": "object",
    "required": ["relationship_label"],
    "properties": {
        "relationship_label": {
            "type": "string",
            "pattern": r"^\s*(?i:familiar|stranger)\s*$",
            "description": "FAMILIAR (they know each other) or STRANGER (they just met); case-insensitive.",
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "rationale": {"type": "string"},
    },
}
# The label alone: an answer whose confidence is malformed still has its label.
_LABEL_ONLY_SCHEMA = {
    "type": "object",
    "required": ["relationship_label"],
    "properties": {"relationship_label": FAMILIARITY_SCHEMA["properties"]["relationship_label"]},
}


@cache
def _validator(schema_json: str) -> Draft202012Validator:
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _schema_error(value, validator: Draft202012Validator) -> str | None:
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    error = errors[0]
    where = ".".join(str(part) for part in error.absolute_path)
    return f"{where + ': ' if where else ''}{error.message}"


def _candidates(text: str):
    """(origin, decoded JSON value) for every JSON document found, in order of preference."""
    decoder = json.JSONDecoder()
    for origin, chunk in [("reply", text.strip())] + [
        ("fence", m.group(2).strip()) for m in FENCE.finditer(text)
    ]:
        try:
            value = json.loads(chunk)
        except ValueError:
            continue
        yield origin, value
    tried = 0
    for position, char in enumerate(text):
        if char != "{":
            continue
        tried += 1
        if tried > MAX_CANDIDATES:
            break
        try:
            value, _ = decoder.raw_decode(text, position)
        except ValueError:
            continue
        yield "embedded", value


def parse_json_reply(text: str | None, schema: dict) -> tuple[object | None, str]:
    """The first JSON value in `text` that validates against `schema`, and a reason.

    Returns (value, "") on success, else (None, reason): 'empty reply', 'no JSON found', or
    the schema error of the first JSON object found.
    """
    if text is None or not text.strip():
        return None, "empty reply"
    validator = _validator(json.dumps(schema, sort_keys=True))
    first_error = None
    found = False
    for _origin, value in _candidates(text):
        found = True
        error = _schema_error(value, validator)
        if error is None:
            return value, ""
        if first_error is None and isinstance(value, dict):
            first_error = error
    if not found:
        return None, "no JSON found"
    return (
        None,
        f"no JSON object matches the schema ({first_error})" if first_error else "no JSON object found",
    )


def parse_familiarity(text: str | None) -> dict:
    """A familiarity answer: relationship_label 'familiar' | 'stranger' | '' (non-answer).

    Returns {relationship_label, confidence (float | None), rationale, parse_error}. An empty
    label is a non-answer and parse_error says why. When the label is valid but the rest
    breaks the schema (e.g. confidence 85), the label is kept, confidence is None and
    parse_error says what was ignored: answered trials are those with a label.
    """
    value, reason = parse_json_reply(text, FAMILIARITY_SCHEMA)
    note = ""
    if value is None:
        value, fallback = parse_json_reply(text, _LABEL_ONLY_SCHEMA)
        if value is None:
            return {"relationship_label": "", "confidence": None, "rationale": "", "parse_error": reason}
        note = f"label kept, rest ignored: {reason}"
    label = value["relationship_label"].strip().lower()
    confidence = value.get("confidence")
    valid_confidence = isinstance(confidence, (int, float)) and not isinstance(confidence, bool)
    valid_confidence = valid_confidence and 0 <= confidence <= 1
    rationale = value.get("rationale")
    return {
        "relationship_label": label,
        "confidence": float(confidence) if valid_confidence else None,
        "rationale": rationale if isinstance(rationale, str) else "",
        "parse_error": note,
    }
