"""The committed notebook carries no outputs (they are never committed) and is valid nbformat."""

from __future__ import annotations

import json
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "familiarity.ipynb"


def test_committed_notebook_has_no_outputs():
    notebook = json.loads(NOTEBOOK.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code
    dirty = [
        i for i, cell in enumerate(code) if cell.get("outputs") or cell.get("execution_count") is not None
    ]
    assert not dirty, f"code cells {dirty} have outputs: run `make notebook-strip` before committing"
