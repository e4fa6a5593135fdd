"""The documentation (issue 40): every schema key described, every doc reference resolving, and the
generated reference pages listing every config key and every command-line flag.

`make docs-build` (CI) builds the site in strict mode, which fails on a broken link between pages;
these tests cover what the site build cannot see: the schema's descriptions, and references to
docs from code, docstrings, comments and config files.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
import yaml

from omnisocial import docs_reference
from omnisocial.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SCHEMAS = {
    "config": REPO / "workflow" / "schemas" / "config.schema.yaml",
    "model entry": REPO / "src" / "omnisocial" / "models" / "model_entry.schema.json",
}
# pages the docs build generates (docs/hooks/reference.py): they exist on the site, not in docs/
GENERATED = set(docs_reference.REFERENCE_PAGES)

# where a reference to a doc may stand: code, docstrings, comments, rules, configs, pages
SCANNED = ["src", "workflow", "tests", "benchmarks", "config", "docs", "envs", ".ci", "notebooks"]
SCANNED_FILES = ["README.md", "CHANGELOG.md", "Makefile", "Snakefile", "mkdocs.yml", "pyproject.toml"]
SUFFIXES = {".py", ".smk", ".yaml", ".yml", ".json", ".md", ".rst", ".txt", ".toml", ".sh", ".ipynb", ""}
# a file name ending in .md: a path of words and hyphens (not `{name}.md`, `rule.output.md`)
REFERENCE = re.compile(r"(?<![\w{}<>.\-/])((?:\.\.?/)*(?:[\w-]+/)*[\w-]+\.md)(#[\w-]+)?")
# .md names that are outputs the workflow writes, not docs
OUTPUT_NAMES = {"summary.md", "metrics.md", "results.md"}
# this file's examples, and the hook that writes the generated pages' own links
NOT_SCANNED = {"tests/test_docs.py", "docs/hooks/reference.py"}


def load_schema(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


# --- every schema key has a description ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_property_has_a_description(name):
    missing = docs_reference.missing_descriptions(load_schema(SCHEMAS[name]))
    assert not missing, f"{SCHEMAS[name].relative_to(REPO)}: keys without a description: {', '.join(missing)}"


def test_a_property_without_a_description_is_found_wherever_it_sits():
    schema = {
        "properties": {
            "a": {"type": "integer", "description": "described"},
            "b": {"type": "object", "description": "a block", "properties": {"c": {"type": "string"}}},
            "d": {
                "type": "array",
                "description": "a list",
                "items": {"properties": {"e": {"type": "number"}}},
            },
            "f": {"$ref": "#/$defs/column"},
            "g": {"description": "one or per modality", "else": {"$ref": "#/$defs/mapping"}},
        },
        "$defs": {
            "column": {"type": "string", "description": "a column"},
            "mapping": {"properties": {"h": {"type": "string"}}},
        },
    }
    # f: its $ref's description is the column's in general, not what f is; a key says itself
    assert docs_reference.missing_descriptions(schema) == ["b.c", "d[].e", "f", "g.h", "$defs.mapping.h"]


# --- every reference to a doc resolves ------------------------------------------------------------


def scanned_files(root: Path) -> list[Path]:
    files = [root / name for name in SCANNED_FILES if (root / name).is_file()]
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*")):
            skip = {"__pycache__", ".ipynb_checkpoints"} & set(path.parts) or ".egg-info" in str(path)
            if path.is_file() and path.suffix in SUFFIXES and not skip and rel(path, root) not in NOT_SCANNED:
                files.append(path)
    return files


def rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def heading_anchors(page: Path) -> set[str]:
    """The anchors of a page: explicit `{#id}`s and the toc extension's slugs of its headings."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            continue
        explicit = re.search(r"\{#([\w-]+)\}\s*$", line)
        if explicit:
            anchors.add(explicit.group(1))
            continue
        text = re.sub(r"[`*]", "", line.lstrip("#")).strip().lower()
        anchors.add(re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text)).strip("-"))
    return anchors


def resolve_reference(reference: str, source: Path, root: Path) -> Path | None:
    """Where a referenced doc lies: beside the source (a page's link), at the root, or under docs/."""
    candidates = [source.parent / reference, root / reference, root / "docs" / reference]
    for candidate in candidates:
        relative = (
            candidate.resolve().relative_to(root.resolve())
            if candidate.resolve().is_relative_to(root)
            else None
        )
        if candidate.is_file() or (relative and str(relative).removeprefix("docs/") in GENERATED):
            return candidate
    return None


def dangling_references(root: Path) -> list[str]:
    found = []
    for path in scanned_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for match in REFERENCE.finditer(line):
                reference, anchor = match.group(1), match.group(2)
                if Path(reference).name in OUTPUT_NAMES:
                    continue
                where = f"{path.relative_to(root)}:{number}: {reference}{anchor or ''}"
                target = resolve_reference(reference, path, root)
                if target is None:
                    found.append(f"{where} (no such doc)")
                elif anchor and target.is_file() and anchor[1:] not in heading_anchors(target):
                    found.append(f"{where} (no such section)")
    return found


def test_every_reference_to_a_doc_resolves():
    dangling = dangling_references(REPO)
    assert not dangling, "references to docs that do not exist:\n" + "\n".join(dangling)


def test_a_reference_to_a_missing_doc_or_section_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "statistics.md").write_text(
        "# Statistics\n\n## Crowd curves {#crowds}\n\n## d' and c\n"
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "module.py").write_text(
        '"""Crowds (docs/statistics.md#crowds), SDT (docs/statistics.md#d-and-c), see benchmarks.md 1.8.\n\n'
        "Layouts in docs/data-formats.md; the tables in docs/statistics.md#tables;\n"
        'summary.md is an output."""\n'
    )
    (tmp_path / "docs" / "index.md").write_text("[stats](statistics.md) and [config](reference/config.md)\n")
    assert dangling_references(tmp_path) == [
        "src/module.py:1: benchmarks.md (no such doc)",
        "src/module.py:3: docs/data-formats.md (no such doc)",
        "src/module.py:3: docs/statistics.md#tables (no such section)",
    ]


# --- the generated reference pages ----------------------------------------------------------------


def test_config_reference_shows_every_key_with_its_default_and_allowed_values():
    schema = load_schema(SCHEMAS["config"])
    page = docs_reference.config_reference(schema, title="Configuration reference", source="schema")
    keys = [key for key in docs_reference.schema_keys(schema) if not key.path.startswith("$defs.")]
    sections = {key.path for key in keys if key.has_keys}
    for key in keys:
        if key.path in sections:
            assert f"`{key.path}`" in page, key.path  # its own heading
        else:
            # a row: the key's name relative to its section (array items keep their parents)
            section = max((s for s in sections if key.path.startswith(s + ".")), key=len, default="")
            name = key.path[len(section) + 1 :] if section else key.path
            assert f"| `{name}` |" in page, key.path
    glmm = page.split("### `analysis.glmm`")[1].split("###")[0]
    assert "| `tune` | integer or null | `null` | >= 0 |" in glmm
    assert "| `chains` | integer | `4` | >= 1 |" in glmm
    assert 'one of `"released"`, `"strict"`' in page.split("| `parser` |")[1].split("\n")[0]
    assert "\n## `social`\n" in page and "\n### `social.when`\n" in page


def test_cli_reference_lists_every_subcommand_and_flag():
    parser = build_parser()
    page = docs_reference.cli_reference(parser, title="Command-line reference", source="cli")

    def walk(parser: argparse.ArgumentParser, path: str):
        yield path, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")

    commands = list(walk(parser, "omnisocial"))[1:]
    assert {"omnisocial score", "omnisocial glmm", "omnisocial rasch"} <= {path for path, _ in commands}
    for path, sub in commands:
        section = page.split(f"# `{path}`\n")[1].split("\n#")[0]
        assert sub.format_usage().strip().splitlines()[0] in section, path
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in section or f", {flag}" in section, (path, flag)
