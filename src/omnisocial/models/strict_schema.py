r"""JSON schemas in the subsets the services accept: OpenAI's strict structured outputs (and
the grammar engines of vLLM and llama.cpp), and Gemini's `responseJsonSchema`.

`json_schema` mode sends an answer schema as `response_format.json_schema` with
`strict: true`. OpenAI's strict mode (platform.openai.com/docs/guides/structured-outputs,
"Supported schemas") takes only: an object at the root (not anyOf); every object with
`additionalProperties: false` and every property listed in `required`; the types string,
number, integer, boolean, object, array, null (a type list for nullable), enum, const,
anyOf, $defs/$ref; and per type only the documented keywords. vLLM's xgrammar backend and
llama.cpp's grammar converter take the same subset, but not inline regex flags such as
`(?i:...)` (xgrammar refuses the group). `strict_schema` turns an answer schema into that
subset without changing what it accepts, except that optional properties become required
(strict mode has no optional fields; the prompt asks for all of them anyway);
`strict_problems` is the checker the tests hold every sent schema to; the tests also
compile the sent schema with llguidance and outlines-core (vLLM's guidance and outlines
backends).

Gemini's `responseJsonSchema` takes another subset, the keywords google-genai's
`GenerateContentConfig.response_json_schema` documents ($id, $defs, $ref, $anchor, type,
format, title, description, enum, items, prefixItems, minItems, maxItems, minimum, maximum,
anyOf, oneOf, properties, additionalProperties, required, propertyOrdering); the service
ignores the rest. `gemini_schema` sends only those: `$schema`, `examples` and the other
keywords go, `const` becomes a one-value `enum`, and a `pattern` goes too, except a
caseless choice of words (`^\s*(?i:familiar|stranger)\s*$`), which becomes an `enum` of
the words in capitals and as written, spellings the pattern accepts. The sent schema can so
accept less than the original (only those spellings) or, where a keyword went, more; the
reply is still validated against the original by the parser.
"""

from __future__ import annotations

import copy
import re

# Keywords strict mode documents, per kind of schema node.
_COMMON = {"type", "description", "enum", "const", "anyOf", "$ref", "$defs", "default"}
_BY_TYPE = {
    "object": {"properties", "required", "additionalProperties"},
    "array": {"items", "minItems", "maxItems"},
    "string": {"pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "boolean": set(),
    "null": set(),
}
FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
MAX_DEPTH = 10  # nesting levels of objects
_INLINE_FLAGS = re.compile(r"\(\?[a-zA-Z]")
_CASELESS_GROUP = re.compile(r"\(\?i:([^()]*)\)")


def _caseless(match: re.Match) -> str:
    """`(?i:familiar|stranger)` -> `([Ff][Aa]...|[Ss]...)`: the same strings, no inline flag."""
    body = match.group(1)
    if not re.fullmatch(r"[A-Za-z0-9 _|-]*", body):
        raise ValueError(f"pattern group (?i:{body}) is not literal words; write it without (?i:")
    return "(" + "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in body) + ")"


def strict_schema(schema: dict) -> dict:
    """A copy of `schema` in the strict subset (module docstring); ValueError when it cannot be."""

    def convert(node, top: bool):
        if isinstance(node, list):
            return [convert(item, False) for item in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key in ("$schema", "title", "$id", "examples"):
                continue  # annotations strict mode refuses; they do not constrain the answer
            if key in ("properties", "$defs"):
                out[key] = {name: convert(sub, False) for name, sub in value.items()}
            elif key == "pattern" and isinstance(value, str):
                out[key] = _CASELESS_GROUP.sub(_caseless, value)
                if _INLINE_FLAGS.search(out[key]):
                    raise ValueError(
                        f"pattern {value!r}: inline flags other than (?i:words) cannot be converted"
                    )
            else:
                out[key] = convert(value, False)
        if out.get("type") == "object" or "properties" in out:
            out["required"] = list(out.get("properties", {}))
            out["additionalProperties"] = False
        return out

    return convert(copy.deepcopy(schema), True)


def _types(node: dict) -> list[str]:
    kind = node.get("type")
    if kind is None:
        return []
    return list(kind) if isinstance(kind, list) else [kind]


def strict_problems(schema: dict) -> list[str]:
    """What in `schema` OpenAI's strict mode (and xgrammar) would refuse; [] when nothing."""
    problems: list[str] = []
    if not isinstance(schema, dict) or "object" not in _types(schema) or "anyOf" in schema:
        problems.append("root: must be an object schema (not anyOf)")

    def walk(node, where: str, depth: int):
        if not isinstance(node, dict):
            problems.append(f"{where}: not a schema object")
            return
        kinds = _types(node)
        allowed = set(_COMMON)
        for kind in kinds:
            if kind not in _BY_TYPE:
                problems.append(f"{where}: type {kind!r} is not supported")
            allowed |= _BY_TYPE.get(kind, set())
        if not kinds and not ({"enum", "const", "anyOf", "$ref"} & set(node)):
            problems.append(f"{where}: no type")
        for key in node:
            if key not in allowed:
                problems.append(
                    f"{where}: keyword {key!r} is not supported for type {'/'.join(kinds) or '-'}"
                )
        if "object" in kinds:
            if depth > MAX_DEPTH:
                problems.append(f"{where}: objects nested deeper than {MAX_DEPTH} levels")
            properties = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties must be false")
            missing = [name for name in properties if name not in node.get("required", [])]
            if missing:
                problems.append(f"{where}: every property must be required; not: {', '.join(missing)}")
            for name, sub in properties.items():
                walk(sub, f"{where}.{name}", depth + 1)
        if "array" in kinds and "items" in node:
            walk(node["items"], f"{where}[]", depth)
        for position, sub in enumerate(node.get("anyOf", [])):
            walk(sub, f"{where}.anyOf[{position}]", depth)
        for name, sub in node.get("$defs", {}).items():
            walk(sub, f"$defs.{name}", depth)
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            if _INLINE_FLAGS.search(pattern):
                problems.append(
                    f"{where}: pattern {pattern!r} has an inline flag group (?...); grammars refuse it"
                )
            try:
                re.compile(pattern)
            except re.error as exc:
                problems.append(f"{where}: pattern {pattern!r} is not a regex ({exc})")
        if "format" in node and node["format"] not in FORMATS:
            problems.append(f"{where}: format {node['format']!r} is not supported")

    if isinstance(schema, dict):
        walk(schema, "root", 1)
    return problems


# --- Gemini's responseJsonSchema subset ----------------------------------------------------

GEMINI_KEYWORDS = frozenset(
    {
        "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum",
        "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf",
        "properties", "additionalProperties", "required", "propertyOrdering",
    }
)  # fmt: skip
_WORD_CHOICE = re.compile(r"^\^(?:\\s\*)?\(\?i:([A-Za-z0-9 _-]+(?:\|[A-Za-z0-9 _-]+)*)\)(?:\\s\*)?\$$")


def _word_enum(pattern: str) -> list[str] | None:
    """`^\\s*(?i:familiar|stranger)\\s*$` -> [FAMILIAR, familiar, STRANGER, stranger]; None otherwise."""
    match = _WORD_CHOICE.match(pattern)
    if match is None:
        return None
    words = []
    for word in match.group(1).split("|"):
        words += [spelling for spelling in (word.upper(), word) if spelling not in words]
    return [word for word in words if re.search(pattern, word)]


def gemini_schema(schema: dict) -> dict:
    """A copy of `schema` with only the keywords Gemini's responseJsonSchema takes (module docstring)."""

    def convert(node):
        if isinstance(node, list):
            return [convert(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key in ("properties", "$defs"):
                out[key] = {name: convert(sub) for name, sub in value.items()}
            elif key == "const" and "enum" not in node:
                out["enum"] = [value]
            elif key == "pattern" and isinstance(value, str) and "enum" not in node:
                words = _word_enum(value)
                if words:
                    out["enum"] = words
            elif key in GEMINI_KEYWORDS:
                out[key] = (
                    convert(value)
                    if key in ("items", "additionalProperties", "anyOf", "oneOf", "prefixItems")
                    else value
                )
        return out

    return convert(copy.deepcopy(schema))
