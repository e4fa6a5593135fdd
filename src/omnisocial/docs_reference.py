"""Reference pages of the documentation site, generated from the sources they describe.

The config reference is built from a JSON schema (`workflow/schemas/config.schema.yaml`, the
registry entry `models/model_entry.schema.json`) and the command-line reference from the
argparse parser of `omnisocial`, so neither can drift from what the workflow validates or what
`--help` prints. `docs/hooks/reference.py` calls these on every `mkdocs build`.

Which keys a schema has (`schema_keys`) is also what `tests/test_docs.py` checks for
descriptions: every key reached through `properties`, array `items` and `$defs`, and through
`then` / `else` where a key has no properties of its own (`ratings.mapping`: one mapping, or one
per modality). The constraints under a top-level `if` / `then` or `allOf` declare no keys.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

# the pages `docs/hooks/reference.py` adds to the site on every build (they are not under docs/)
REFERENCE_PAGES = ("reference/config.md", "reference/model-entry.md", "reference/cli.md")


@dataclass(frozen=True)
class SchemaKey:
    path: str  # dotted, "[]" for an array's items: release.predictions.path[].model
    node: dict  # the key's schema, its $ref resolved (its own keywords win)
    described: bool  # the key's schema carries its own description
    has_keys: bool  # an object with keys of its own (a section of the reference)


def resolve(node: dict, root: dict) -> dict:
    """`node` with its local `$ref` (#/$defs/...) merged in; the node's own keywords win."""
    ref = node.get("$ref")
    if not ref:
        return node
    if not ref.startswith("#/"):
        raise ValueError(f"only local $refs are supported, not {ref}")
    target: dict = root
    for part in ref[2:].split("/"):
        target = target[part]
    merged = dict(resolve(target, root))
    merged.update({key: value for key, value in node.items() if key != "$ref"})
    return merged


def _child_properties(node: dict, root: dict) -> dict:
    """The keys under `node`: its properties, or those of its else / then branch when it has none."""
    if node.get("properties"):
        return node["properties"]
    for branch in ("else", "then"):
        sub = node.get(branch)
        if isinstance(sub, dict):
            sub = resolve(sub, root)
            if sub.get("properties"):
                return sub["properties"]
    return {}


def _walk(node: dict, root: dict, prefix: str) -> Iterator[SchemaKey]:
    for name, raw in _child_properties(node, root).items():
        if not isinstance(raw, dict):
            continue
        path = f"{prefix}.{name}" if prefix else name
        resolved = resolve(raw, root)
        has_keys = bool(_child_properties(resolved, root))
        yield SchemaKey(path, resolved, bool(raw.get("description")), has_keys)
        yield from _walk(resolved, root, path)
        items = resolved.get("items")
        if isinstance(items, dict):
            yield from _walk(resolve(items, root), root, f"{path}[]")


def schema_keys(schema: dict) -> list[SchemaKey]:
    """Every key of the schema, in its order (the `$defs` last, as `$defs.<name>.<key>`)."""
    keys = list(_walk(schema, schema, ""))
    for name, definition in (schema.get("$defs") or {}).items():
        keys.extend(_walk(definition, schema, f"$defs.{name}"))
    return keys


def missing_descriptions(schema: dict) -> list[str]:
    return [key.path for key in schema_keys(schema) if not key.described]


# --- formatting -------------------------------------------------------------------------------

_MARKDOWN_SPECIAL = str.maketrans({"|": r"\|", "*": r"\*", "_": r"\_", "[": r"\[", "]": r"\]", "`": r"\`"})


def _cell(text: str) -> str:
    """Plain text as one table cell: one line, no markup, no HTML."""
    text = " ".join(str(text).split()).replace("\\", "\\\\").translate(_MARKDOWN_SPECIAL)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _code(value: str) -> str:
    value = " ".join(value.split()).replace("|", r"\|")
    fence = "``" if "`" in value else "`"
    return f"{fence}{value}{fence}" if value else ""


def _literal(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def _type_of(node: dict, root: dict) -> str:
    node = resolve(node, root)
    declared = node.get("type")
    if isinstance(declared, list):
        names = list(declared)
    elif declared:
        names = [declared]
    elif "const" in node:
        names = [_json_type(node["const"])]
    elif "enum" in node:
        names = sorted({_json_type(value) for value in node["enum"]})
    elif "oneOf" in node or "anyOf" in node:
        return " or ".join(_type_of(sub, root) for sub in node.get("oneOf", node.get("anyOf")))
    else:
        names = ["any"]
    items = node.get("items")
    if "array" in names and isinstance(items, dict):
        names[names.index("array")] = f"array of {_type_of(items, root)}"
    return " or ".join(names)


def _json_type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "any")


_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))


def _allowed(node: dict, root: dict) -> list[str]:
    """What the schema accepts besides the type, as short phrases."""
    node = resolve(node, root)
    found = []
    if "enum" in node:
        found.append("one of " + ", ".join(_code(_literal(value)) for value in node["enum"]))
    if "const" in node:
        found.append("exactly " + _code(_literal(node["const"])))
    for keyword, sign in _BOUNDS:
        if keyword in node:
            found.append(f"{sign} {node[keyword]}")
    if "multipleOf" in node:
        found.append(f"a multiple of {node['multipleOf']}")
    if node.get("minLength"):
        found.append(f"at least {node['minLength']} character(s)")
    if "pattern" in node:
        found.append("matches " + _code(node["pattern"]))
    if "minItems" in node or "maxItems" in node:
        low, high = node.get("minItems"), node.get("maxItems")
        found.append(
            f"{low} items" if low == high else f"{low or 0} to {high if high else 'any number of'} items"
        )
    if node.get("uniqueItems"):
        found.append("no repeats")
    if node.get("required"):
        found.append("requires " + ", ".join(_code(name) for name in node["required"]))
    names = node.get("propertyNames")
    if isinstance(names, dict) and "enum" in names:
        found.append("keys " + ", ".join(_code(name) for name in names["enum"]))
    for sub in node.get("oneOf", []) or []:
        found.extend(_allowed(sub, root))
    items = node.get("items")
    if isinstance(items, dict):
        found.extend(f"each item: {phrase}" for phrase in _allowed(items, root) if "requires" not in phrase)
    values = node.get("additionalProperties")
    if isinstance(values, dict):
        inner = _allowed(values, root)
        found.append("values: " + (", ".join(inner) if inner else _type_of(values, root)))
    return found


def _default(node: dict) -> str:
    if "default" not in node or (node.get("properties") and node["default"] == {}):
        return ""
    return _code(_literal(node["default"]))


def _key_row(key: SchemaKey, root: dict, section_path: str) -> str:
    name = key.path[len(section_path) + 1 :] if section_path and key.path != section_path else key.path
    cells = [
        _code(name),
        _cell(_type_of(key.node, root)),
        _default(key.node),
        "; ".join(_allowed(key.node, root)),
        _cell(key.node.get("description", "")),
    ]
    return "| " + " | ".join(cells) + " |"


_TABLE_HEAD = "| key | type | default | allowed | description |\n|---|---|---|---|---|"


def _groups(keys: list[SchemaKey]) -> list[tuple[str, list[SchemaKey]]]:
    """(section, its leaf and list keys) in schema order; an object with keys opens its own group."""
    objects = {key.path for key in keys if key.has_keys}
    groups: dict[str, list[SchemaKey]] = {}
    for key in keys:
        if key.path in objects:
            groups.setdefault(key.path, [])
            continue
        parent = key.path.rpartition(".")[0]
        while parent and parent not in objects:
            parent = parent.rpartition(".")[0]
        groups.setdefault(parent, []).append(key)
    return list(groups.items())


def config_reference(schema: dict, *, title: str, source: str, intro: str = "") -> str:
    """Markdown: every key of `schema` with its type, default, allowed values and description.

    One section per top-level key (the top-level settings first, together), one table per
    object within it; `$defs` keys appear where they are used (`$ref`), so they are not repeated.
    """
    keys = list(_walk(schema, schema, ""))
    by_path = {key.path: key for key in keys}
    lines = [f"# {title}", "", f"Generated from `{source}` on every documentation build; do not edit."]
    if schema.get("description"):
        lines += ["", _cell(schema["description"])]
    if intro:
        lines += ["", intro]
    for section, members in _groups(keys):
        if not section and not members:
            continue
        depth = "##" if "." not in section.replace("[]", "") else "###"
        lines += ["", f"{depth} {_code(section) if section else 'General'}", ""]
        if section and by_path[section].node.get("description"):
            lines += [_cell(by_path[section].node["description"]), ""]
        if members:
            lines += [_TABLE_HEAD, *(_key_row(key, schema, section) for key in members)]
    return "\n".join(lines) + "\n"


# --- command line -----------------------------------------------------------------------------


@contextlib.contextmanager
def _columns(width: int):
    """argparse wraps usage and help at $COLUMNS: fix it so the page is the same on every machine."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias maps to the same parser
                    seen.add(id(sub))
                    found.append((name, helps.get(name, ""), sub))
    return found


def _argument_row(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = parser._get_formatter()
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            name += " " + formatter._format_args(action, action.dest.upper())
    else:
        name = formatter._metavar_formatter(action, action.dest)(1)[0]
    help_text = formatter._expand_help(action) if action.help and action.help != argparse.SUPPRESS else ""
    if action.required and action.option_strings:
        help_text = f"(required) {help_text}"
    default = action.default
    shown_default = (
        "" if default in (None, argparse.SUPPRESS, False) or action.nargs == 0 else _code(_literal(default))
    )
    choices = ", ".join(_code(str(choice)) for choice in action.choices) if action.choices else ""
    return f"| {_code(name)} | {shown_default} | {choices} | {_cell(help_text)} |"


def _command_section(path: str, summary: str, parser: argparse.ArgumentParser, depth: int) -> list[str]:
    lines = ["", f"{'#' * depth} `{path}`", ""]
    if parser.description or summary:
        lines += [_cell(parser.description or summary), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    rows = [
        _argument_row(parser, action)
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    ]
    if rows:
        lines += ["| argument | default | choices | help |", "|---|---|---|---|", *rows]
    for name, sub_summary, sub in _subcommands(parser):
        lines += _command_section(f"{path} {name}", sub_summary, sub, min(depth + 1, 4))
    return lines


def cli_reference(parser: argparse.ArgumentParser, *, title: str, source: str, width: int = 88) -> str:
    """Markdown: every subcommand of `parser` (recursively) with its usage and every argument."""
    with _columns(width):
        lines = [
            f"# {title}",
            "",
            f"Generated from the argparse parsers of `{source}` on every documentation build.",
        ]
        if parser.description:
            lines += ["", _cell(parser.description)]
        subcommands = _subcommands(parser)
        if subcommands:
            lines += ["", "| command | what it does |", "|---|---|"]
            lines += [f"| `{parser.prog} {name}` | {_cell(summary)} |" for name, summary, _ in subcommands]
        for name, summary, sub in subcommands:
            lines += _command_section(f"{parser.prog} {name}", summary, sub, 2)
    return "\n".join(lines) + "\n"
