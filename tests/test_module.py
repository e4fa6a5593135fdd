"""omnisocial used by another workflow through Snakemake's `module` directive (and snakedeploy)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

OUTER = """\
configfile: "config/config.yaml"


module omnisocial:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from omnisocial as omnisocial_*
"""


def outer_workflow(tmp_path: Path) -> list[str]:
    """A tiny outer workflow in tmp_path (its own config, outside this repository)."""
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["social"]["demo"].update(n_multiparty=2, who_items_per_clip=2, when_transitions_per_clip=1)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (tmp_path / "Snakefile").write_text(OUTER.format(snakefile=ROOT / "Snakefile"))
    return [sys.executable, "-m", "snakemake", "--snakefile", str(tmp_path / "Snakefile"), "--cores", "1"]


def test_module_plans_every_job_of_the_workflow(tmp_path):
    command = outer_workflow(tmp_path)
    dry = subprocess.run([*command, "-n"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-4000:]
    out = dry.stdout + dry.stderr
    for rule in ("omnisocial_make_demo_corpus", "omnisocial_infer_model", "omnisocial_socialomni_profile"):
        assert rule in out, rule
    assert "Nothing to be done" not in out


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("ffmpeg") is None or shutil.which("espeak-ng") is None, reason="needs ffmpeg and espeak-ng"
)
@pytest.mark.heavy  # 7 CPU-s
def test_module_runs_a_real_target(tmp_path):
    command = outer_workflow(tmp_path)
    target = "results/social/items/who_items.csv"
    result = subprocess.run([*command, target], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / target).stat().st_size > 0
