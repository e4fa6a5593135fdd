"""benchmarks/bench_glmm.py's workflow-job mode (issue 62): the job it times is the rule's, with
the params and threads the rule's own expressions give on the schema's config, and the table
it hands the job is one the workflow's trials contract accepts."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from omnisocial.config import validate_config

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_glmm", ROOT / "benchmarks" / "bench_glmm.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_the_job_gets_the_rules_params_on_the_schemas_config():
    params, cores = bench.rule_settings()
    config = validate_config({})
    # whatever the rule passes: today analysis.glmm whole and the seed; the schema's values, no study's
    assert params["glmm"] == config["analysis"]["glmm"]
    assert params["seed"] == config["analysis"]["seed"]
    assert cores == config["threads"]["glmm"]


def test_a_rule_using_names_beyond_the_config_fails_naming_it(tmp_path):
    smk = tmp_path / "analysis.smk"
    smk.write_text(
        "rule glmm:\n    threads: THREADS['glmm']\n    params:\n        glmm=unknown_helper(),\n"
        "    script:\n        'x.py'\n\n\nrule other:\n    input: 'a'\n"
    )
    with pytest.raises(SystemExit, match="unknown_helper"):
        bench.rule_settings("glmm", smk)


def test_bench_tables_become_the_workflows_trials():
    frame = bench.shaped_trials("missing")
    trials = bench.workflow_trials(frame)
    answered = frame[frame["correct"].astype(str) != ""]
    assert len(trials) == len(answered)  # only the missing answers left out
    assert trials["correct"].tolist() == (answered["correct"].astype(int) == 1).tolist()
