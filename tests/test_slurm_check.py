"""omnisocial.slurm: the MinJobAge start-up check of squeue-status cluster runs."""

from __future__ import annotations

import subprocess

import pytest

from omnisocial import slurm

# `scontrol show config` of SLURM 22.05 (Debian), trimmed around the line the check reads
SHOW_CONFIG = """Configuration data as of 2026-12-01T16:40:12
AccountingStorageBackupHost = (null)
AccountingStorageType   = accounting_storage/none
MaxJobCount             = 10000
MaxStepCount            = 40000
MinJobAge               = {age}
MpiDefault              = none
SchedulerType           = sched/backfill

Cgroup Support Configuration:
AllowedKernelMemorySpace = (null)
"""


def scontrol(stdout: str, returncode: int = 0, stderr: str = ""):
    calls = []

    def run(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, returncode, stdout, stderr)

    return run, calls


@pytest.mark.parametrize(
    ("value", "seconds"), [("300 sec", 300), ("120 sec", 120), ("600", 600), ("5 min", 300), ("1h", 3600)]
)
def test_min_job_age_is_read_in_seconds(value, seconds):
    assert slurm.min_job_age_s(SHOW_CONFIG.format(age=value)) == seconds


def test_an_unreadable_or_missing_min_job_age_is_an_error():
    with pytest.raises(ValueError, match="unreadable MinJobAge '300 fortnights'"):
        slurm.min_job_age_s(SHOW_CONFIG.format(age="300 fortnights"))
    with pytest.raises(ValueError, match="no MinJobAge line"):
        slurm.min_job_age_s("MaxJobCount = 10000\n")


def test_a_low_min_job_age_stops_a_squeue_run_naming_the_fix(monkeypatch):
    monkeypatch.setattr(slurm.shutil, "which", lambda name: f"/usr/bin/{name}")
    run, calls = scontrol(SHOW_CONFIG.format(age="120 sec"))
    with pytest.raises(ValueError) as caught:
        slurm.check_min_job_age("squeue", run=run)
    message = str(caught.value)
    assert "MinJobAge is 120 s, below 300 s" in message
    assert "MinJobAge=300" in message and "scontrol reconfigure" in message
    assert "slurm-status-command: sacct" in message
    assert calls == [["scontrol", "show", "config"]]


def test_a_safe_min_job_age_passes(monkeypatch):
    monkeypatch.setattr(slurm.shutil, "which", lambda name: f"/usr/bin/{name}")
    for value, seconds in (("300 sec", 300), ("1h", 3600)):
        run, _ = scontrol(SHOW_CONFIG.format(age=value))
        assert slurm.check_min_job_age("squeue", run=run) == seconds


def test_sacct_status_and_machines_without_scontrol_skip_the_check(monkeypatch):
    run, calls = scontrol(SHOW_CONFIG.format(age="2 sec"))
    monkeypatch.setattr(slurm.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert slurm.check_min_job_age("sacct", run=run) is None
    monkeypatch.setattr(slurm.shutil, "which", lambda name: None)  # no cluster: a local run
    assert slurm.check_min_job_age("squeue", run=run) is None
    assert calls == []


def test_a_failing_scontrol_is_an_error_with_its_message(monkeypatch):
    monkeypatch.setattr(slurm.shutil, "which", lambda name: f"/usr/bin/{name}")
    error = "slurm_load_ctl_conf error: Unable to contact slurm controller"
    run, _ = scontrol("", returncode=1, stderr=error)
    with pytest.raises(ValueError, match="Unable to contact slurm controller"):
        slurm.check_min_job_age("squeue", run=run)


def test_the_safe_age_exceeds_the_longest_status_interval():
    assert slurm.SAFE_MIN_JOB_AGE_S >= slurm.MAX_STATUS_INTERVAL_S + 60


def test_the_status_interval_bound_follows_the_plugins_schedule():
    # the plugin's checks without a finished job: 0, 2, 14, 36, 68 s (intervals 2, 12, 22, 32)
    assert [slurm.max_status_interval_s(t) for t in (0, 1.9, 2, 13.9, 14, 36, 67.9, 68)] == [
        2, 2, 12, 12, 22, 32, 32, 42,
    ]  # fmt: skip
    assert slurm.max_status_interval_s(10_000) == slurm.MAX_STATUS_INTERVAL_S
