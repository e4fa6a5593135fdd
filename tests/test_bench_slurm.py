"""benchmarks/bench_slurm.py's O_sub parts: the run log's submissions and the critical path.

The log excerpt is from a `make test-slurm` run (Snakemake 9.27, plugin 2.8.0): job infos are
printed before the submissions, which run in a thread pool, and a group's folder in the SLURM
log path carries its rules' names.
"""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_slurm", ROOT / "benchmarks" / "bench_slurm.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

LOG = """[Tue Dec  1 16:33:40 2026]
localrule socialomni_how_baselines:
    input: results/social/items/how_items.csv
    jobid: 11
    resources: tmpdir=/tmp

[Tue Dec  1 16:33:40 2026]
rule socialomni_cut_media:
    input: results/social/items/who_items.csv
    output: results/social/media/audio_video
    jobid: 6
    wildcards: modality=audio_video
    resources: tmpdir=<TBD>, mem_mb=2000, slurm_partition=main, runtime=30
Shell command: None

[Tue Dec  1 16:33:40 2026]
rule duplexeval_baselines:
    jobid: 14
    resources: tmpdir=<TBD>, mem_mb=2000, slurm_partition=main, runtime=30
Shell command: None
Job 6 has been submitted with SLURM jobid 2 (log: /tmp/w/logs/slurm/rule_socialomni_cut_media/audio_video/2.log).
Job 14 has been submitted with SLURM jobid 4 (log: /tmp/w/logs/slurm/rule_duplexeval_baselines/4.log).
[Tue Dec  1 16:33:44 2026]
Finished jobid: 11 (Rule: socialomni_how_baselines)
3 of 17 steps (18%) done
[Tue Dec  1 16:34:16 2026]
Finished jobid: 6 (Rule: socialomni_cut_media)
4 of 17 steps (24%) done
Select jobs to execute...
[Tue Dec  1 16:34:16 2026] Group job social_short (jobs in lexicogr. order):

    [Tue Dec  1 16:34:16 2026]
    rule socialomni_model_replies:
        output: results/social/replies/models/chance-av-1.csv
        jobid: 5
        wildcards: model=chance-av-1
Shell command: None

    [Tue Dec  1 16:34:16 2026]
    rule socialomni_model_replies:
        output: results/social/replies/models/chance-av-2.csv
        jobid: 7
        wildcards: model=chance-av-2
Shell command: None
Job 463122df-5264-577f-8e4b-2d6b271eb73a has been submitted with SLURM jobid 6 (log: /tmp/w/logs/slurm/group_social_short_socialomni_model_replies/6.log).
[Tue Dec  1 16:34:20 2026]
Finished jobid: 14 (Rule: duplexeval_baselines)
[Tue Dec  1 16:35:10 2026]
Finished jobid: 5 (Rule: socialomni_model_replies)
[Tue Dec  1 16:35:10 2026]
Finished jobid: 7 (Rule: socialomni_model_replies)
"""  # noqa: E501


def test_the_run_log_maps_each_submission_to_its_jobs_and_finish_times():
    submissions, jobs, finished = bench.parse_run_log(LOG)
    assert submissions == {"2": ["6"], "4": ["14"], "6": ["5", "7"]}  # the group: both members
    assert jobs["11"] == ("socialomni_how_baselines", True) and jobs["6"] == ("socialomni_cut_media", False)
    assert finished["6"] == datetime(2026, 12, 1, 16, 34, 16)
    assert finished["7"] == datetime(2026, 12, 1, 16, 35, 10) and "11" in finished


def test_the_critical_path_counts_cluster_submissions_and_a_group_chain_once():
    needs = {
        "social_demo": set(), "social_import": {"social_demo"}, "cut": {"social_import"},
        "replies": {"cut", "social_import"}, "score": {"replies"}, "judge": {"replies", "score"},
        "figures": {"judge"}, "baseline": {"social_import"},
    }  # fmt: skip
    submitted = {"social_demo", "cut", "replies", "judge", "baseline"}
    path = bench.critical_path(needs, submitted, {})
    assert path == ["social_demo", "social_import", "cut", "replies", "score", "judge", "figures"]
    # cut and replies in one group submission: their chain is one submission, another path ties
    path = bench.critical_path(needs, submitted, {"cut": {"replies"}, "replies": {"cut"}})
    assert sum(1 for rule in path if rule in submitted) - ("replies" in path and "cut" in path) == 3


def test_a_squeue_time_is_read_and_a_missing_one_is_none():
    assert bench.squeue_time("2026-12-01T16:34:16") == datetime(2026, 12, 1, 16, 34, 16)
    assert bench.squeue_time("N/A") is None and bench.squeue_time("Unknown") is None
