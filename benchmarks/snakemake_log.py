"""What the benchmark scripts read from Snakemake's own output: the run log's time stamps and
`--rulegraph`'s rules (Snakemake 9.27's formats; tests/test_bench_*.py hold excerpts)."""

from __future__ import annotations

import re

# the line that opens each block of a run's log: "[Wed Dec  2 04:29:07 2026]"
LOG_TIME = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
LOG_TIME_FORMAT = "%a %b %d %H:%M:%S %Y"
# a job block's first line ("localrule NAME:" for a job run on this host), its id, its end
RULE_LINE = re.compile(r"^(local)?rule (\w+):$")
JOBID_LINE = re.compile(r"^jobid: (\d+)$")
FINISHED_LINE = re.compile(r"^Finished jobid: (\d+) ")


def rule_needs(dot: str) -> dict[str, set[str]]:
    """rule -> the rules it needs, from `snakemake --rulegraph dot`'s output."""
    names = dict(re.findall(r'^\s*(\d+)\[label = "(\w+)"', dot, re.M))
    needs: dict[str, set[str]] = {name: set() for name in names.values()}
    for upstream, downstream in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M):
        needs[names[downstream]].add(names[upstream])
    return needs
