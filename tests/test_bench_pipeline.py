"""benchmarks/bench_pipeline.py's floors: job walls from a local run's log, the critical path.

The log excerpt is shaped as a `make demo` run prints it (Snakemake 9.27, local executor): each
job's block opens with its start time, its "Finished jobid" line follows a time stamp.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_pipeline", ROOT / "benchmarks" / "bench_pipeline.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

LOG = """Select jobs to execute...
Execute 1 jobs...

[Wed Dec  2 04:29:07 2026]
localrule make_demo_corpus:
    output: data/demo/seamless
    jobid: 3
    threads: 2
Select jobs to execute...
[Wed Dec  2 04:29:47 2026]
Finished jobid: 3 (Rule: make_demo_corpus)
1 of 5 steps (20%) done
Execute 2 jobs...

[Wed Dec  2 04:29:47 2026]
localrule ingest_corpus:
    input: data/demo/seamless
    jobid: 2
[Wed Dec  2 04:29:47 2026]
localrule social_demo:
    output: data/demo/social
    jobid: 29
[Wed Dec  2 04:29:48 2026]
Finished jobid: 2 (Rule: ingest_corpus)
2 of 5 steps (40%) done
[Wed Dec  2 04:29:56 2026]
Finished jobid: 29 (Rule: social_demo)
3 of 5 steps (60%) done

[Wed Dec  2 04:29:56 2026]
localrule infer_model:
    jobid: 7
    wildcards: model=a
[Wed Dec  2 04:29:56 2026]
localrule infer_model:
    jobid: 8
    wildcards: model=b
[Wed Dec  2 04:29:58 2026]
Finished jobid: 7 (Rule: infer_model)
[Wed Dec  2 04:30:01 2026]
Finished jobid: 8 (Rule: infer_model)
5 of 5 steps (100%) done
[Wed Dec  2 04:30:02 2026]
localrule never_finished:
    jobid: 9
"""

RULEGRAPH = """digraph snakemake_dag {
    graph[bgcolor=white, margin=0];
	0[label = "all", color = "0.00 0.6 0.85", style="rounded"];
	1[label = "infer_model", color = "0.1 0.6 0.85", style="rounded"];
	2[label = "ingest_corpus", color = "0.2 0.6 0.85", style="rounded"];
	3[label = "make_demo_corpus", color = "0.3 0.6 0.85", style="rounded"];
	4[label = "social_demo", color = "0.4 0.6 0.85", style="rounded"];
	1 -> 0
	4 -> 0
	2 -> 1
	3 -> 2
}
"""


def test_job_walls_are_read_per_job_and_unfinished_jobs_left_out():
    walls = bench.job_walls(LOG)
    assert sorted(walls) == [
        ("infer_model", 2.0),
        ("infer_model", 5.0),
        ("ingest_corpus", 1.0),
        ("make_demo_corpus", 40.0),
        ("social_demo", 9.0),
    ]


def test_critical_path_takes_each_rule_at_its_longest_job():
    needs = bench.rule_needs(RULEGRAPH)
    assert needs["all"] == {"infer_model", "social_demo"} and needs["make_demo_corpus"] == set()
    seconds, path = bench.critical_path(needs, bench.job_walls(LOG))
    # corpus 40 + ingest 1 + the slower infer_model job 5; social_demo's 9 s chain is shorter
    assert seconds == pytest.approx(46.0)
    assert path == ["make_demo_corpus", "ingest_corpus", "infer_model", "all"]


def test_the_benchmark_runs_snakemake_as_make_demo_does_writing_bytecode(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("OMNISOCIAL_BENCH_PROBE", "kept")
    environment = bench.make_environment()
    assert "PYTHONDONTWRITEBYTECODE" not in environment
    assert environment["OMNISOCIAL_BENCH_PROBE"] == "kept"
