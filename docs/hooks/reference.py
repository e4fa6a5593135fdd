"""MkDocs hook: the reference pages, generated on every build (omnisocial.docs_reference).

`reference/config.md` from workflow/schemas/config.schema.yaml, `reference/model-entry.md`
from the registry entry's schema and `reference/cli.md` from the parsers of `omnisocial`. They
are added to the site as generated files: nothing is written under docs/. The outputs page's list
of paper macros is generated from `omnisocial.paper.MACROS` in place of its marker
(`PAPER_MACROS_MARKER`).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from mkdocs.structure.files import File

from omnisocial import docs_reference, paper
from omnisocial.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
CONFIG_SCHEMA = "workflow/schemas/config.schema.yaml"
ENTRY_SCHEMA = "src/omnisocial/models/model_entry.schema.json"

CONFIG_INTRO = (
    "Every key a study's config file may set. A key left out takes the default shown here (a real "
    "study's); `config/demo.yaml` sets the demo's own values. A config that breaks a rule of this "
    "schema stops before any job, naming the key. Registry entries (`models`, `social.models`, "
    "`social.judges.*`) are described in [the model entry reference](model-entry.md)."
)
ENTRY_INTRO = (
    "One entry of a model registry (`models`, `social.models`, `social.judges.*` in the config). "
    "`name`, `backend` and `model` are required; `backend: openai` also needs `base_url`, "
    "`backend: gemini` `api_key_env`. See [models and judges](../models-and-judges.md)."
)


def pages() -> dict[str, str]:
    config_schema = yaml.safe_load((REPO / CONFIG_SCHEMA).read_text(encoding="utf-8"))
    entry_schema = json.loads((REPO / ENTRY_SCHEMA).read_text(encoding="utf-8"))
    return {
        "reference/config.md": docs_reference.config_reference(
            config_schema, title="Configuration reference", source=CONFIG_SCHEMA, intro=CONFIG_INTRO
        ),
        "reference/model-entry.md": docs_reference.config_reference(
            entry_schema, title="Model entry reference", source=ENTRY_SCHEMA, intro=ENTRY_INTRO
        ),
        "reference/cli.md": docs_reference.cli_reference(
            build_parser(), title="Command-line reference", source="src/omnisocial/cli.py"
        ),
    }


def on_files(files, config):
    generated = pages()
    assert tuple(generated) == docs_reference.REFERENCE_PAGES, (
        "docs_reference.REFERENCE_PAGES names these pages"
    )
    for src_uri, content in generated.items():
        files.append(File.generated(config, src_uri, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    """docs/outputs.md: the paper macros' list in place of its marker (omnisocial.paper)."""
    if page.file.src_uri != "outputs.md":
        return markdown
    return paper.with_macro_reference(markdown)
