"""Prompt templates, stored as package files: `prompts/<task>/<modality>/<variant>.txt`.

A template's sha256 (of its bytes) goes into results, so a reworded prompt is a new
prompt. Placeholders are `{name}` with a lowercase identifier; every other brace is kept
as is (templates show the JSON answer format literally). Rendering fails when a
placeholder has no value or a value has no placeholder, so a typo cannot slip through.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources

PACKAGE = "omnisocial"
FOLDER = "prompts"
PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class TemplateError(ValueError):
    """A template is missing, or rendering it lacks or has extra fields."""


def _folder(*parts: str):
    node = resources.files(PACKAGE).joinpath(FOLDER)
    for part in parts:
        if not _PART.match(part):
            raise TemplateError(f"bad template path part {part!r}")
        node = node.joinpath(part)
    return node


def load_template(task: str, modality: str, variant: str = "v1") -> tuple[str, str]:
    """(template text, sha256 of its bytes) for one task, modality and variant."""
    node = _folder(task, modality, f"{variant}.txt")
    if not node.is_file():
        known = ", ".join(list_variants(task, modality)) or "none"
        raise TemplateError(f"no prompt template {task}/{modality}/{variant} (variants: {known})")
    data = node.read_bytes()
    return data.decode("utf-8"), hashlib.sha256(data).hexdigest()


def list_variants(task: str, modality: str) -> list[str]:
    node = _folder(task, modality)
    if not node.is_dir():
        return []
    return sorted(child.name[:-4] for child in node.iterdir() if child.name.endswith(".txt"))


def placeholders(template: str) -> list[str]:
    """The placeholder names in `template`, in order of first appearance."""
    return list(dict.fromkeys(PLACEHOLDER.findall(template)))


def render(template: str, **fields: object) -> str:
    """Fill every `{name}` placeholder; missing or unused fields raise TemplateError."""
    names = placeholders(template)
    missing = [name for name in names if name not in fields]
    if missing:
        raise TemplateError(f"template needs field(s) {', '.join(missing)}")
    unused = [name for name in fields if name not in names]
    if unused:
        raise TemplateError(f"template has no placeholder for {', '.join(unused)}")
    return PLACEHOLDER.sub(lambda match: str(fields[match.group(1)]), template)


def render_prompt(task: str, modality: str, variant: str = "v1", **fields: object) -> tuple[str, str]:
    """(rendered prompt, template sha256) for one task, modality and variant."""
    template, digest = load_template(task, modality, variant)
    return render(template, **fields), digest
