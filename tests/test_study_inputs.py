"""Errors that name the key and say what to do, before any job (issue 49): a corpus folder or
table that is not there, an API entry whose key is not set. (A design that cannot be filled:
tests/test_turns_sampling.py::test_design_error_names_ingest_reasons_once_and_what_to_change.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from omnisocial.config import ConfigError, check_inputs, validate_config

REPO = Path(__file__).resolve().parents[1]


def seamless(root: Path, **corpus) -> dict:
    return validate_config(
        {
            "corpus": {"source": "seamless", "root": str(root), **corpus},
            "ratings": {"source": "exports"},
        }
    )


def corpus_folder(root: Path) -> Path:
    (root / "naturalistic").mkdir(parents=True)
    (root / "interactions.csv").write_text("prompt_hash,interaction_key\n")
    (root / "relationships.csv").write_text("vendor,participant_a,participant_b,relationship\n")
    return root


def problems(config: dict, environ: dict | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        check_inputs(config, environ or {})
    return str(info.value)


def test_a_complete_corpus_passes(tmp_path):
    config = seamless(corpus_folder(tmp_path / "seamless"))
    assert check_inputs(config, {}) is config


def test_a_wrong_corpus_root_names_the_key_and_what_to_set(tmp_path):
    said = problems(seamless(tmp_path / "nowhere"))
    assert (
        f"corpus.root: {tmp_path / 'nowhere'} is not a folder: set it to your Seamless Interaction "
        "download (the folder holding naturalistic/ and interactions.csv, relationships.csv)"
    ) in said


def test_a_missing_label_folder_lists_what_is_there(tmp_path):
    root = corpus_folder(tmp_path / "seamless")
    said = problems(seamless(root, label="improvised"))
    assert "corpus.label: " in said and "(found: naturalistic)" in said


def test_a_missing_relationships_file_names_corpus_relationships_csv(tmp_path):
    root = corpus_folder(tmp_path / "seamless")
    (root / "relationships.csv").unlink()
    said = problems(seamless(root))
    assert (
        f"corpus.relationships_csv: {root / 'relationships.csv'} not found (corpus.relationships_csv "
        "is empty: the default {root}/relationships.csv): set corpus.relationships_csv to the "
        "corpus's relationships table"
    ) in said
    said = problems(seamless(root, relationships_csv=str(tmp_path / "rel.csv")))
    assert f"corpus.relationships_csv: {tmp_path / 'rel.csv'} not found: set corpus.relationships_csv" in said


def test_an_api_entry_without_its_key_names_the_entry_and_variable(tmp_path):
    config = seamless(corpus_folder(tmp_path / "seamless"))
    config["models"] = [
        {"name": "chance", "backend": "baseline", "model": "chance"},
        {"name": "gpt-4o", "backend": "openai", "model": "gpt-4o", "api_key_env": "OPENAI_API_KEY"},
    ]
    said = problems(config)
    assert (
        "models[1].api_key_env: the environment variable OPENAI_API_KEY of entry 'gpt-4o' is not set: "
        "export OPENAI_API_KEY=<your key> before running (keys never go in the config), or remove the entry"
    ) in said
    assert check_inputs(config, {"OPENAI_API_KEY": "sk-test"}) is config


@pytest.mark.slow
def test_the_workflow_stops_before_any_job(tmp_path):
    """On the console of `snakemake -n`: every problem at once, and no job planned."""
    config = {
        "corpus": {"source": "seamless", "root": str(tmp_path / "nowhere")},
        "ratings": {"source": "exports"},
        "models": [
            {"name": "g", "backend": "gemini", "model": "gemini-2.5-flash", "api_key_env": "NO_SUCH_KEY_49"}
        ],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile")]
        + ["--directory", str(tmp_path), "--configfile", str(tmp_path / "config.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = result.stdout + result.stderr
    assert result.returncode != 0
    assert "the study's inputs are not ready (2 problem(s))" in said, said[-3000:]
    assert (
        "corpus.root: " in said and "models[0].api_key_env: the environment variable NO_SUCH_KEY_49" in said
    )
    assert "Job stats" not in said and not (tmp_path / "results").exists()
