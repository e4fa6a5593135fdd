"""The social workflow tests' common start: one small social demo, its import and the baselines
every test's models and judges are scored beside, built once per session (conftest.shared_dir)
and copied into each test's own folder, so that each test runs only the jobs its own models,
judges or parameters add.

The copy keeps the files' mtimes and the `.snakemake` metadata, so Snakemake sees the copied
jobs as done; the build checks that in a copy (a dry run there has nothing to do).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import shared_dir

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
RESULTS = "results/social"
# What the tests' own jobs read and none of them rebuilds (relative to the run folder): the demo
# and its import (implied), the who / when / how and streaming baselines, and the streaming
# benchmark's video segments (one set for every model that streams video).
BASE_TARGETS = [
    f"{RESULTS}/replies/who_baselines.csv",
    f"{RESULTS}/replies/when_baselines.csv",
    f"{RESULTS}/replies/how_baselines.csv",
    f"{RESULTS}/baselines/stream_baseline_responses.csv",
    f"{RESULTS}/duplexeval_stream_media/video",
]


def social_config() -> dict:
    """The demo config with one small social demo that answers every social workflow test: one
    multi-party clip, a counting and a reminder clip of 20-24 s, captions 2 s after each event."""
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["social"]["demo"].update(
        n_multiparty=1, who_items_per_clip=2, when_transitions_per_clip=1,
        visual_splits=["RTD_counting", "PR_event_reminder"], visual_duration_s=[20, 24],
    )  # fmt: skip
    config["social"]["streaming"]["caption_delay_s"] = 2.0
    return config


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake_command(workdir: Path) -> list[str]:
    """Snakemake on the workflow in `workdir`, with its config.yaml."""
    return [*SNAKEMAKE, "--directory", str(workdir), "--configfile", str(workdir / "config.yaml")]


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    # the workflow parses with this checkout's package (as test_streaming_workflow's runs)
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    command = [*snakemake_command(workdir), *args]
    env = {**os.environ, "PYTHONPATH": path}
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=workdir, env=env)
    assert result.returncode == 0, f"snakemake {' '.join(args)} failed:\n{result.stderr[-4000:]}"
    return result


def _build(folder: Path) -> None:
    write_config(folder, social_config())
    _snakemake(folder, "--cores", "2", *BASE_TARGETS)
    # the copies the tests run in must see every job above as done
    check = folder.parent / f"{folder.name}-copy-check"
    shutil.rmtree(check, ignore_errors=True)
    copy_run(folder, check)
    dry = _snakemake(check, "-n", *BASE_TARGETS)
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]
    shutil.rmtree(check)


def copy_run(source: Path, workdir: Path) -> Path:
    """`source`'s run into `workdir`: every file with its mtime, the .snakemake metadata too."""
    shutil.copytree(source, workdir, symlinks=True, dirs_exist_ok=True)  # copy2: mtimes kept
    return workdir


def social_run(tmp_path_factory: pytest.TempPathFactory, workdir: Path) -> Path:
    """The shared start (built once per session) copied into `workdir`, with its config.yaml."""
    return copy_run(shared_dir(tmp_path_factory, "social", _build), workdir)
