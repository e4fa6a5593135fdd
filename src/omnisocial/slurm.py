"""SLURM facts the workflow checks before it submits anything (workflow/profiles/slurm).

snakemake-executor-plugin-slurm 2.8.0 checks job status every `interval` seconds: 2 s
(`slurm-init-seconds-before-status-checks` in the profile) after a round that saw a job
finish, then 10 s more after every round that saw none, up to 180 s (`max_sleep_time`,
hard-coded). With `slurm-status-command: squeue` a finished job is visible only for the
cluster's MinJobAge after it ends, and the plugin takes a job missing from squeue's output
for one still queued. A MinJobAge shorter than the interval therefore loses jobs that end
between two checks, and the run waits for them for ever. MinJobAge must be at least the
longest interval plus a margin for the status query, the rate limiter and slurmctld's purge
cadence: 300 s, the value the plugin's own comment assumes (and SLURM's default).
"""

from __future__ import annotations

import re
import shutil
import subprocess

INIT_STATUS_INTERVAL_S = 2  # the profile's slurm-init-seconds-before-status-checks
STATUS_INTERVAL_STEP_S = 10  # the plugin adds this after a round in which no job finished
MAX_STATUS_INTERVAL_S = 180  # the plugin's cap (max_sleep_time)
SAFE_MIN_JOB_AGE_S = 300  # the cap plus a 120 s margin

_UNITS = {"": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
          "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}  # fmt: skip


def min_job_age_s(show_config: str) -> int:
    """MinJobAge in seconds from `scontrol show config` text (`MinJobAge = 300 sec`)."""
    for line in show_config.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "MinJobAge":
            match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", value.strip())
            if not match or match.group(2).lower() not in _UNITS:
                raise ValueError(f"scontrol show config: unreadable MinJobAge {value.strip()!r}")
            return int(match.group(1)) * _UNITS[match.group(2).lower()]
    raise ValueError("scontrol show config: no MinJobAge line")


def max_status_interval_s(elapsed_s: float) -> int:
    """The longest interval the plugin can have reached `elapsed_s` after its first check.

    Rounds come at least one interval apart and the interval grows by one step per round, so
    r rounds take at least r * init + step * r * (r - 1) / 2 seconds.
    """
    rounds = 0
    init, step = INIT_STATUS_INTERVAL_S, STATUS_INTERVAL_STEP_S
    while (rounds + 1) * init + step * (rounds + 1) * rounds / 2 <= elapsed_s:
        rounds += 1
    return min(INIT_STATUS_INTERVAL_S + STATUS_INTERVAL_STEP_S * rounds, MAX_STATUS_INTERVAL_S)


def check_min_job_age(status_command: str | None, run=subprocess.run) -> int | None:
    """Stop a squeue-status run on a cluster whose MinJobAge is below SAFE_MIN_JOB_AGE_S.

    Returns the cluster's MinJobAge (None when the check does not apply: sacct status, or no
    scontrol on this machine, i.e. no cluster). Raises ValueError naming the fix otherwise.
    """
    if status_command != "squeue":
        return None  # sacct reads slurmdbd, which keeps finished jobs
    if shutil.which("scontrol") is None:
        return None
    result = run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise ValueError(
            f"`scontrol show config` failed ({result.returncode}): {result.stderr.strip()[:500]}; "
            "the squeue status command needs the cluster's MinJobAge"
        )
    age = min_job_age_s(result.stdout)
    if age < SAFE_MIN_JOB_AGE_S:
        raise ValueError(
            f"the cluster's MinJobAge is {age} s, below {SAFE_MIN_JOB_AGE_S} s: with "
            f"slurm-status-command squeue, the plugin checks job status up to "
            f"{MAX_STATUS_INTERVAL_S} s apart and would wait for ever for a job that ends and "
            f"leaves squeue between two checks. Fix: set MinJobAge={SAFE_MIN_JOB_AGE_S} (or "
            "more) in slurm.conf and run `scontrol reconfigure`, or use "
            "`slurm-status-command: sacct` where slurmdbd runs"
        )
    return age
