"""The small social demo (SocialOmni and Omni-DuplexEval parts), built once per test session.

Several modules read the same small demo (`SMALL`); building it costs about 3 CPU-s each time,
so it is a `conftest.shared_dir` folder, built by the first test that asks and read by the
others on every worker. Tests only read it: a test that changes files copies them first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_dir

from omnisocial.demo_kit import build_demo
from omnisocial.duplexeval.demo import write_duplexeval
from omnisocial.socialomni.demo import write_socialomni

SMALL = {"n_multiparty": 2, "who_items_per_clip": 3, "when_transitions_per_clip": 2}


def generate_social_demo(root, params=None) -> dict:
    """The demo as the social_demo rule builds it (workflow/scripts/social/demo.py); its manifest."""
    return build_demo(root, params, [("socialomni", write_socialomni), ("duplexeval", write_duplexeval)])


def small_social_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """(root, manifest) of the shared SMALL demo (module doc)."""
    folder = shared_dir(
        tmp_path_factory, "social-demo-small", lambda f: generate_social_demo(f / "demo", SMALL)
    )
    root = folder / "demo"
    return root, json.loads((root / "manifest.json").read_text(encoding="utf-8"))
