"""The SLURM profile (workflow/profiles/slurm) plans every config: groups, local rules, placement.

A group is one submission whose members run one after another (the plugin runs it with
`--executor slurm-jobstep --jobs 1`), so only chains that run in sequence anyway share one;
the rules that take seconds are localrules and run on the login node.

Dry runs only (no scheduler needed): Snakemake forms the job groups and evaluates resources
when it plans, and it refuses a group that leaves and re-enters itself or whose jobs ask for
different partitions. The scheduler itself is exercised by `make test-slurm`
(benchmarks/bench_slurm.py --check).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_release import SNAKEMAKE, seamless_example, snakemake

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


# What runs where (issue 20): seconds of work (targets, imports, design, survey lists, scores,
# profiles, figures, tables) on the login node; media, models, judges, ASR, stimuli and the
# GLMM / Rasch / rater-test statistics on the cluster.
LOGIN_NODE = {
    "all", "social_all", "socialomni_all", "duplexeval_all", "survey_materials",
    "render_tables", "report_summary",
    "social_import", "import_release", "import_release_predictions", "import_ratings",
    "select_clip_candidates", "apply_filters", "sample_design", "rating_design", "simulate_ratings",
    "rating_experiment", "rating_jatos", "figures",
    "socialomni_how_baselines", "socialomni_score_who", "socialomni_score_when", "socialomni_profile",
    "socialomni_figures", "duplexeval_figures", "social_judge_calibration", "score_familiarity",
    "fam_figures", "fam_figure_overview", "fam_figure_diagnostics",
}  # fmt: skip
CLUSTER = {
    "make_demo_corpus", "ingest_corpus", "transcribe_missing", "measure_signals", "render_stimuli",
    "social_demo", "socialomni_who_baselines", "socialomni_when_baselines", "socialomni_cut_media",
    "duplexeval_baselines", "baseline_predictions", "infer_model", "socialomni_model_replies",
    "socialomni_llm_judge", "duplexeval_llm_judge", "socialomni_judge_how", "duplexeval_score",
    "rater_tests", "glmm", "rasch",
}  # fmt: skip
# issue 18: registry models streamed (segments cut once, one streaming job per model)
CLUSTER |= {"socialomni_stream_segments", "socialomni_stream_when"}
CLUSTER |= {"duplexeval_stream_segments", "duplexeval_stream_model"}
# issue 50: the results explorer reads every table and hashes and links every stimulus
CLUSTER |= {"explorer"}
# issue 63: the paper's numbers, read from a few tables (under a second each)
LOGIN_NODE |= {"paper", "paper_familiarity", "paper_socialomni", "paper_streaming"}

# The parsed workflow's rules and localrules, through Snakemake's API (a dry run runs every job
# locally, so its plan does not say which would stay on the login node; workflow.is_local says
# True for every rule outside a cluster run).
RULES_SCRIPT = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
snakefile, workdir, configfile = map(Path, sys.argv[1:4])
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(snakefile=snakefile, workdir=workdir, resource_settings=ResourceSettings(),
                            config_settings=ConfigSettings(configfiles=[configfile]))._workflow
    rules = {rule.name: rule.name in workflow._localrules for rule in workflow.rules}
print("RULES " + json.dumps(rules))
"""


def rule_placement(workdir: Path) -> dict[str, bool]:
    """Rule name -> whether a cluster run keeps it on the login node (the config in workdir)."""
    result = subprocess.run(
        [sys.executable, "-c", RULES_SCRIPT, SNAKEMAKE[-1], str(workdir), str(workdir / "config.yaml")],
        capture_output=True, text=True, timeout=300, cwd=workdir,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.split("RULES ", 1)[1])


def assert_placed(workdir: Path, said: str) -> None:
    """Every rule is classified; the short ones are localrules, never grouped; the rest go out."""
    placement = rule_placement(workdir)
    assert set(placement) <= LOGIN_NODE | CLUSTER, set(placement) - LOGIN_NODE - CLUSTER
    local = {name for name, is_local in placement.items() if is_local}
    assert local == set(placement) & LOGIN_NODE, local ^ (set(placement) & LOGIN_NODE)
    planned = set(re.findall(r"^\s*rule (\w+):", said, re.M))
    assert planned & LOGIN_NODE and planned & CLUSTER, planned
    grouped = set().union(*(rules_in(body) for body in group_bodies(said).values()))
    assert not grouped & LOGIN_NODE, grouped & LOGIN_NODE


@pytest.mark.slow
@pytest.mark.heavy  # 4 CPU-s
def test_the_whole_demo_plans_under_the_profile(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["social"]["models"] = [
        {"name": "chance-social", "backend": "baseline", "model": "chance",
         "modalities": ["audio", "video"], "cluster": {"group": "social_short"}},
        {**GPU_ENTRY, "name": "omni-social"},
    ]  # fmt: skip
    config["models"].append(GPU_ENTRY)
    said = plan(tmp_path, config)
    assert_placed(tmp_path, said)
    bodies = group_bodies(said)
    groups = {name: rules_in(body) for name, body in bodies.items()}
    # groups only for chains that run in sequence anyway: the demo corpus and its ingest, the
    # baseline entries (seconds each) with baseline_predictions; the social baselines share one
    assert groups == {
        "fam_corpus": {"make_demo_corpus", "ingest_corpus"},
        "fam_models": {"baseline_predictions", "infer_model"},
        # the entry's group holds its streams too (it takes audio and video)
        "social_short": {"socialomni_model_replies", "socialomni_stream_when", "duplexeval_stream_model"},
    }, groups
    assert bodies["fam_corpus"].count("rule ") == 2  # one submission: make_demo_corpus -> ingest
    assert said.count("Group job fam_corpus") == 1 and said.count("Group job social_short") == 1
    assert "model=chance-social" in bodies["social_short"]
    # work that can run side by side goes out alone: every GPU model, judge, GLMM and Rasch
    for rule in ("glmm", "rasch", "rater_tests", "render_stimuli", "measure_signals", "socialomni_cut_media"):
        assert re.search(rf"^rule {rule}:", said, re.M), rule
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
@pytest.mark.heavy  # 4 CPU-s
def test_the_seamless_study_plans_under_the_profile(tmp_path):
    config = seamless_example(tmp_path)
    config["models"].append(GPU_ENTRY)
    said = plan(tmp_path, config)
    assert_placed(tmp_path, said)
    groups = {name: rules_in(body) for name, body in group_bodies(said).items()}
    # the corpus' heavy jobs go out one by one: ingest's and baseline_predictions' groups have
    # no other member here (no demo corpus, no baseline entry), so each is a plain submission
    assert groups == {"fam_corpus": {"ingest_corpus"}, "fam_models": {"baseline_predictions"}}, groups
    for rule in ("ingest_corpus", "measure_signals", "render_stimuli", "glmm", "rasch"):
        assert re.search(rf"^\s*rule {rule}:", said, re.M), rule
    resources = job_block(said, "infer_model", "model=omni-gpu").split("resources:")[1].splitlines()[0]
    assert "slurm_partition=gpu" in resources and "gpu=1" in resources, resources


def test_the_profile_sets_no_status_interval_the_plugin_ignores():
    """The plugin sets the next status interval itself every round (seconds-between-status-checks
    has no effect) and starts from slurm-init-seconds-before-status-checks."""
    from omnisocial.slurm import INIT_STATUS_INTERVAL_S

    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert "seconds-between-status-checks" not in profile
    assert profile["slurm-init-seconds-before-status-checks"] == INIT_STATUS_INTERVAL_S


def test_a_cluster_that_forgets_jobs_too_soon_stops_the_run_before_any_submission(tmp_path):
    """The start-up check (omnisocial.slurm, onstart in common.smk) on the real profile and plugin,
    with `scontrol show config` answering MinJobAge = 120 sec and an sbatch that logs each call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        "#!/bin/sh\nprintf 'Configuration data as of 2026-12-01T16:40:12\\n"
        "MaxJobCount             = 10000\\nMinJobAge               = 120 sec\\n"
        "MpiDefault              = none\\n'\n"
    )
    for tool in ("sbatch", "squeue", "sinfo", "sacctmgr"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {tmp_path}/calls.log\nexit 1\n')
    for path in bin_dir.iterdir():
        path.chmod(0o755)
    (tmp_path / "config.yaml").write_text((ROOT / "config" / "demo.yaml").read_text())
    result = subprocess.run(
        [*SNAKEMAKE, "--directory", str(tmp_path), "--profile", str(PROFILE), "social_all"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )  # fmt: skip
    said = result.stdout + result.stderr
    assert result.returncode != 0, said[-3000:]
    assert "the cluster's MinJobAge is 120 s, below 300 s" in said, said[-3000:]
    assert "set MinJobAge=300 (or more) in slurm.conf" in said and "slurm-status-command: sacct" in said
    calls = (tmp_path / "calls.log").read_text() if (tmp_path / "calls.log").exists() else ""
    assert "sbatch" not in calls, calls
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.csv"))
