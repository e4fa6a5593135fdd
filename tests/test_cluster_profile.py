"""The SLURM profile (workflow/profiles/slurm) plans every config: groups, local rules, placement.

Dry runs only (no scheduler needed): Snakemake forms the job groups and evaluates resources
when it plans, and it refuses a group that leaves and re-enters itself or whose jobs ask for
different partitions. The scheduler itself is exercised by `make test-slurm`
(benchmarks/bench_slurm.py --check).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml
from test_release import seamless_example, snakemake

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "workflow" / "profiles" / "slurm"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason="needs the slurm extra (pip install '.[slurm]'; make setup installs it)",
)

GPU_ENTRY = {
    "name": "omni-gpu",
    "backend": "transformers",
    "model": "/models/omni",
    "modalities": ["text", "audio", "video"],
    "cluster": {"partition": "gpu", "gpu_model": "a100", "cpus_per_gpu": 8},
}


def plan(workdir: Path, config: dict, *targets: str) -> str:
    """The dry run's console output under the profile (fails the test when Snakemake refuses)."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--profile", str(PROFILE), "-n", *targets)
    return result.stdout + result.stderr


def group_bodies(said: str) -> dict[str, str]:
    """Group name -> the planned text of its group jobs (the member jobs listed below each)."""
    groups: dict[str, str] = {}
    for block in said.split("Group job ")[1:]:
        name, _, rest = block.partition(" ")
        members = []
        for line in rest.splitlines()[1:]:
            if line.startswith(("[", "Job stats")):  # the next job outside the group
                break
            members.append(line)
        groups[name] = groups.get(name, "") + "\n".join(members)
    return groups


def rules_in(body: str) -> set[str]:
    return set(re.findall(r"^\s+rule (\w+):", body, re.M))


def job_block(said: str, rule: str, wildcard: str) -> str:
    """The planned job of `rule` whose text mentions `wildcard`."""
    blocks = re.split(r"\n(?=\s*(?:local)?rule \w+:)", said)
    found = [b for b in blocks if re.search(rf"^\s*rule {rule}:", b, re.M) and wildcard in b]
    assert found, f"no {rule} job for {wildcard}"
    return found[0]


@pytest.mark.slow
def test_the_whole_demo_plans_under_the_profile(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["social"]["models"] = [
        {"name": "chance-social", "backend": "baseline", "model": "chance",
         "modalities": ["audio", "video"], "cluster": {"group": "social_short"}},
        {**GPU_ENTRY, "name": "omni-social"},
    ]  # fmt: skip
    config["models"].append(GPU_ENTRY)
    said = plan(tmp_path, config)
    bodies = group_bodies(said)
    groups = {name: rules_in(body) for name, body in bodies.items()}
    # the baseline entries share the short rules' submission; the GPU models stay alone
    assert {"social_demo", "social_import", "socialomni_cut_media", "socialomni_model_replies"} <= groups[
        "social_short"
    ]
    assert {"baseline_predictions", "infer_model"} <= groups["fam_models"]
    assert {"select_clip_candidates", "sample_design", "import_ratings"} <= groups["fam_short"]
    assert "render_stimuli" not in groups["fam_short"]  # between sample_design and the models
    for rule, name in (("infer_model", "omni-gpu"), ("socialomni_model_replies", "omni-social")):
        block = job_block(said, rule, f"model={name}")
        assert not any(f"model={name}" in body for body in bodies.values()), name
        resources = block.split("resources:")[1].splitlines()[0]
        for expected in ("gpu=1", "slurm_partition=gpu", "gpu_model=a100", "cpus_per_gpu=8", "mem_mb=40000"):
            assert expected in resources, (expected, resources)
    # a baseline entry without a partition of its own takes the profile's default one
    resources = job_block(said, "infer_model", "model=chance").split("resources:")[1].splitlines()[0]
    assert "slurm_partition=main" in resources and "gpu=0" in resources, resources


@pytest.mark.slow
def test_the_seamless_study_plans_under_the_profile(tmp_path):
    config = seamless_example(tmp_path)
    config["models"].append(GPU_ENTRY)
    said = plan(tmp_path, config)
    groups = {name: rules_in(body) for name, body in group_bodies(said).items()}
    assert {"select_clip_candidates", "apply_filters", "sample_design", "import_ratings"} <= groups[
        "fam_short"
    ]
    assert "ingest_corpus" not in set().union(*groups.values())  # the corpus' heavy jobs stay alone
    resources = job_block(said, "infer_model", "model=omni-gpu").split("resources:")[1].splitlines()[0]
    assert "slurm_partition=gpu" in resources and "gpu=1" in resources, resources
