"""The small social demo run locally and through SLURM (workflow/profiles/slurm) in one go.

    python benchmarks/bench_slurm.py              # timing: local s, slurm s and O_sub (below)
    python benchmarks/bench_slurm.py --demo full  # the same for the whole demo (make demo's config)
    python benchmarks/bench_slurm.py --check      # CI: also kills a job with scancel (it must be
                                                  # retried), compares every output byte for byte,
                                                  # requires `snakemake -n` to find nothing to do
                                                  # and runs the hang test (below)

O_sub = (T_cluster - T_local) / N_crit is the overhead per submission on the critical path
(N_crit: cluster submissions on the longest chain of the rule graph; localrules count none, a
group's chain once), split into queue wait (squeue's submit -> start), detection delay (squeue's
end -> the run log's "Finished jobid") and start-up, the rest (the job step's Snakemake, the
members of a group run in sequence, sbatch). The detection delay of every submission must stay
within the plugin's documented schedule (omnisocial.slurm.max_status_interval_s) plus 5 s: a
regression guard, it fails the run.

Hang test: with `slurm-status-command: squeue` a job that leaves squeue before the plugin's next
check is never seen. .ci/squeue-forgetful stands in for squeue and forgets finished jobs after
FORGET_AFTER_S, as a cluster with MinJobAge = FORGET_AFTER_S does; one job ends right after a
status check, once the plugin's interval has grown to 22 s or more. Forgetting after 5 s
(MinJobAge below the interval) must hang the run (the control: the job ended, the run still
waits); after 45 s (MinJobAge above the interval plus a margin, as 300 s is above the 180 s
cap) the run must complete. Both run at once, beside the scancel run.

Needs a running SLURM cluster (.ci/slurm-cluster.sh start) and snakemake-executor-plugin-slurm
importable by this Python (pip install '.[slurm]'). Exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from snakemake_log import FINISHED_LINE, JOBID_LINE, LOG_TIME, LOG_TIME_FORMAT, RULE_LINE, rule_needs  # noqa: E402

from omnisocial.slurm import max_status_interval_s  # noqa: E402

TARGETS = {"social": "social_all", "full": "all"}
# Logs, benchmark timings and caches record times and hosts; everything else must match.
SKIP_DIRS = {"logs", "benchmarks", "cache"}
SKIP_SUFFIXES = (".log", ".log.attempts")  # a log outside a logs folder (none today) is skipped too


def demo_config(demo: str) -> dict:
    """full: config/demo.yaml; social: the social demo of tests/test_social_pipeline.py (about a
    minute on two cores) with two baseline models that share the short rules' submission."""
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    if demo == "full":
        return config
    config["social"]["demo"].update(
        n_multiparty=2,
        who_items_per_clip=2,
        when_transitions_per_clip=1,
        visual_splits=["RTD_counting", "PR_event_reminder"],
    )
    config["social"]["streaming"]["caption_delay_s"] = 2.0
    # the models are not streamed here: the cluster mechanics (identity, scancel, hang) are the
    # same for the streaming rules, whose placement the profile's dry-run test checks, and the
    # CI step stays near five minutes
    config["social"]["when"]["stream_models"] = False
    config["social"]["streaming"]["stream_models"] = False
    av = {
        "backend": "baseline",
        "model": "chance",
        "modalities": ["audio", "video"],
        "cluster": {"group": "social_short"},
    }
    config["social"]["models"] = [{**av, "name": "chance-av-1"}, {**av, "name": "chance-av-2"}]
    return config


def base_command(workdir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
    ]


def slurm_args(cores: int) -> list[str]:
    # the profile as a user runs it; the CI node is small, so cap threads to its CPUs
    return [
        "--profile",
        str(ROOT / "workflow" / "profiles" / "slurm"),
        "--max-threads",
        str(cores),
        "--cores",
        str(cores),
    ]


def run(command: list[str], log: Path, timeout: int = 900) -> float:
    start = time.monotonic()
    with log.open("w") as handle:
        result = subprocess.run(
            command, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout, cwd=command[6]
        )
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        sys.stderr.write(log.read_text()[-6000:])
        raise SystemExit(f"failed ({result.returncode}): {' '.join(command)}")
    return elapsed


def digests(results: Path) -> dict[str, str]:
    out = {}
    for path in sorted(results.rglob("*")):
        rel = path.relative_to(results)
        if path.is_file() and not (set(rel.parts[:-1]) & SKIP_DIRS) and not path.name.endswith(SKIP_SUFFIXES):
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def compare(local: Path, slurm: Path) -> None:
    a, b = digests(local / "results"), digests(slurm / "results")
    if not a:
        raise SystemExit("the local run wrote no outputs")
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    if differ:
        raise SystemExit(f"outputs differ between local and SLURM runs: {differ[:20]}")
    print(f"outputs identical: {len(a)} files")


def kill_one_job(stop: threading.Event, killed: list[str]) -> None:
    """scancel the first running job of this user but the hang test's (the rerun submits only ours)."""
    while not stop.is_set() and not killed:
        listing = subprocess.run(
            ["squeue", "--me", "-h", "-t", "RUNNING", "-o", "%i %k"], capture_output=True, text=True
        ).stdout.split("\n")
        for line in filter(None, listing):
            jobid, _, comment = line.partition(" ")
            if "long_job" in comment:
                continue  # the hang test's job, which runs meanwhile
            time.sleep(1.0)  # let it start writing, so its partial outputs must be cleaned up
            if subprocess.run(["scancel", jobid]).returncode == 0:
                killed.append(f"{jobid} ({comment})")
            break
        time.sleep(0.2)


DETECTION_SLACK_S = 5  # log and squeue times are whole seconds; the query and rate limiter take some
SUBMITTED = re.compile(r"^Job (\S+) has been submitted with SLURM jobid (\d+)")


class QueueRecorder(threading.Thread):
    """squeue's submit, start and end times of this user's jobs, sampled every second (squeue
    forgets a job MinJobAge after it ends, and without slurmdbd sacct knows none)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop, self.rows = threading.Event(), {}

    def run(self):
        while not self.stop.is_set():
            listing = subprocess.run(
                ["squeue", "--me", "--states=all", "-h", "-o", "%i|%V|%S|%e|%T"],
                capture_output=True,
                text=True,
            ).stdout
            for line in filter(None, listing.splitlines()):
                jobid, submit, start, end, state = line.split("|")
                self.rows[jobid] = {"submit": submit, "start": start, "end": end, "state": state}
            self.stop.wait(1.0)


def squeue_time(value: str) -> datetime | None:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S") if value[:1].isdigit() else None


def parse_run_log(text: str) -> tuple[dict, dict, dict]:
    """From a cluster run's log: SLURM id -> the Snakemake job ids it ran, job id -> (rule, local),
    job id -> when the run reported it finished. Job infos are printed before the submissions,
    which run in a thread pool: a group's members come from its "Group job NAME" block, matched
    to the submission by the group's folder in the SLURM log path."""
    now, rule, group = None, None, None
    jobs, groups, submissions, finished = {}, {}, {}, {}
    for line in text.splitlines():
        stripped = line.strip()
        if group is not None and RULE_LINE.match(line):
            group = None  # an unindented job: the group's (indented) member block ended
        if match := re.search(r"Group job (\S+) \(jobs in", stripped):
            group = []
            groups.setdefault(match.group(1), []).append(group)
        if match := LOG_TIME.match(stripped):
            now = datetime.strptime(match.group(1), LOG_TIME_FORMAT)
        elif match := RULE_LINE.match(stripped):
            rule = (match.group(2), bool(match.group(1)))
        elif (match := JOBID_LINE.match(stripped)) and rule:
            jobs[match.group(1)] = rule
            if group is not None:
                group.append(match.group(1))
            rule = None
        elif match := SUBMITTED.match(stripped):
            own, slurm_id = match.group(1), match.group(2)
            folder = re.search(r"/group_([^/]+)/", stripped)  # group_<group>_<its rules>
            names = [n for n in groups if folder and groups[n] and f"{folder.group(1)}_".startswith(f"{n}_")]
            if own in jobs:
                submissions[slurm_id] = [own]
            elif names:
                submissions[slurm_id] = groups[max(names, key=len)].pop(0)
        elif (match := FINISHED_LINE.match(stripped)) and now:
            finished[match.group(1)] = now
    return submissions, jobs, finished


def rule_graph(workdir: Path, cores: int, target: str) -> tuple[set[str], dict[str, set[str]]]:
    """Rules and rule -> the rules it needs, from `snakemake --rulegraph` (dot) before the run."""
    dot = subprocess.run(
        [*base_command(workdir), *slurm_args(cores), "--rulegraph", "dot", target],
        capture_output=True,
        text=True,
        cwd=workdir,
    )
    if dot.returncode != 0:
        raise SystemExit(f"snakemake --rulegraph failed:\n{dot.stderr[-3000:]}")
    needs = rule_needs(dot.stdout)
    return set(needs), needs


def critical_path(
    needs: dict[str, set[str]], submitted: set[str], grouped_with: dict[str, set[str]]
) -> list[str]:
    """The chain of rules with the most cluster submissions: a submitted rule counts one, unless
    it follows a rule of its own group submission (the group's chain counts once); local none."""
    best: dict[str, tuple[int, list[str]]] = {}

    def longest(rule: str) -> tuple[int, list[str]]:
        if rule not in best:
            count, path = max((longest(up) for up in needs[rule]), default=(0, []))
            upstream_in_group = bool(needs[rule] & grouped_with.get(rule, set()))
            own = 1 if rule in submitted and not upstream_in_group else 0
            best[rule] = (count + own, [*path, rule])
        return best[rule]

    return max((longest(rule) for rule in needs), default=(0, []))[1]


def overhead(log: Path, graph, queue: dict, started: datetime, local_s: float, slurm_s: float) -> None:
    """Print O_sub and its three parts; fail when a detection delay exceeds the plugin's schedule."""
    submissions, jobs, finished = parse_run_log(log.read_text())
    if not submissions:
        raise SystemExit(f"no submission found in {log}")
    submitted = {jobs[j][0] for members in submissions.values() for j in members if j in jobs}
    grouped_with: dict[str, set[str]] = {}
    for members in submissions.values():
        rules = {jobs[j][0] for j in members if j in jobs}
        for rule in rules:
            grouped_with.setdefault(rule, set()).update(rules - {rule})
    path = critical_path(graph[1], submitted, grouped_with)
    on_path = [r for r in path if r in submitted and not graph[1][r] & grouped_with.get(r, set())]
    n_crit = len(on_path)
    waits, delays, over = [], [], []
    for slurm_id, members in submissions.items():
        row = queue.get(slurm_id)
        reported = [finished[j] for j in members if j in finished]
        if not row or not reported:
            continue  # retried or cancelled (a job the kill test scancels), or unseen by the sampler
        submit, start, end = (squeue_time(row[k]) for k in ("submit", "start", "end"))
        if not (submit and start and end) or row["state"] != "COMPLETED":
            continue
        rules = sorted({jobs[j][0] for j in members if j in jobs})
        delay = (max(reported) - end).total_seconds()
        bound = max_status_interval_s((end - started).total_seconds()) + DETECTION_SLACK_S
        if delay > bound:
            over.append(
                f"SLURM job {slurm_id} ({', '.join(rules)}): seen {delay:.0f} s after it ended,"
                f" bound {bound} s"
            )
        if set(rules) & set(on_path):
            waits.append((start - submit).total_seconds())
            delays.append(delay)
    if not waits:
        raise SystemExit("no critical-path submission was timed: see the run log and squeue")
    o_sub = (slurm_s - local_s) / max(n_crit, 1)
    queue_s, detect_s = median(waits), median(delays)
    print(f"bench_slurm: critical path {n_crit} submissions: {' -> '.join(on_path)}")
    print(
        f"bench_slurm: O_sub {o_sub:.1f} s per critical-path submission = queue wait {queue_s:.1f} s"
        f" + start-up {o_sub - queue_s - detect_s:.1f} s + detection delay {detect_s:.1f} s"
        f" (medians over {len(waits)} critical-path submissions; start-up is the rest; target <= 45 s:"
        f" {'met' if o_sub <= 45 else 'NOT met'})"
    )
    if over:
        raise SystemExit("detection delay above the plugin's schedule (regression):\n" + "\n".join(over))
    print(f"bench_slurm: every detection delay within the plugin's schedule (+{DETECTION_SLACK_S} s)")


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# The job ends right after a status check (it waits for the next call in the forgetful squeue's
# log), so a whole interval passes before the next one: 22 s when it starts within the plugin's
# first 12 s interval, 32 s when it starts later. Its age at that check is then well above
# HANG_FORGET_S and below SAFE_FORGET_S, whatever the node's load.
HANG_SNAKEFILE = """
rule all:
    input:
        "done.txt",


rule long_job:
    output:
        "done.txt",
    resources:
        runtime=5,
    shell:
        "calls={calls}; n=$(grep -c call $calls); "
        "for i in $(seq 600); do [ $(grep -c call $calls) -gt $n ] && break; sleep 0.2; done; "
        "touch {{output}}"
"""
HANG_FORGET_S, SAFE_FORGET_S = 5, 45  # below the 22-32 s interval the job ends in; above it plus a margin


def hang_test(top: Path, cores: int) -> None:
    """The hang and its fix at a scale of seconds (see the module's docstring)."""
    bin_dir = top / "forgetful-bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "squeue").unlink(missing_ok=True)
    (bin_dir / "squeue").symlink_to(ROOT / ".ci" / "squeue-forgetful")
    runs = {}
    for forget in (HANG_FORGET_S, SAFE_FORGET_S):
        work = top / f"hang-{forget}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        (work / "Snakefile").write_text(HANG_SNAKEFILE.format(calls=work / "squeue.calls"))
        env = {
            **os.environ,
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "REAL_SQUEUE": shutil.which("squeue"),
            "SQUEUE_CALLS": str(work / "squeue.calls"),
            "FORGET_AFTER_S": str(forget),
        }
        command = [sys.executable, "-m", "snakemake", "--snakefile", str(work / "Snakefile"),
                   "--directory", str(work), *slurm_args(cores)]  # fmt: skip
        log = (work / "run.log").open("w")
        runs[forget] = (
            work,
            log,
            subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work),
        )
    try:
        work, _, proc = runs[HANG_FORGET_S]
        deadline = time.monotonic() + 150

        def lost() -> bool:  # the forgetful squeue left this run's own job out
            own = re.search(r"submitted with SLURM jobid (\d+)", read(work / "run.log"))
            return bool(own) and f"hid {own.group(1)}\n" in read(work / "squeue.calls")

        while not lost() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        if proc.poll() is not None or not lost():
            raise SystemExit(
                f"hang control: squeue forgetting after {HANG_FORGET_S} s did not lose the job"
                f" (the test shows nothing):\n{read(work / 'run.log')[-3000:]}"
            )
        time.sleep(5)  # the next round took the missing job for one still queued
        if proc.poll() is not None or not (work / "done.txt").exists():
            raise SystemExit(
                f"hang control: expected a finished job and a waiting run:\n{read(work / 'run.log')[-3000:]}"
            )
        print(
            f"hang test: squeue forgetting after {HANG_FORGET_S} s: the job ended,"
            " the run waits for ever (stopped)"
        )
        work, _, proc = runs[SAFE_FORGET_S]
        if proc.wait(timeout=150) != 0 or not (work / "done.txt").exists():
            raise SystemExit(f"hang test: the run failed:\n{read(work / 'run.log')[-3000:]}")
        slurm_id = re.search(r"submitted with SLURM jobid (\d+)", read(work / "run.log")).group(1)
        row = subprocess.run(
            ["squeue", "--states=all", "-h", "-j", slurm_id, "-o", "%e"],
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        end = squeue_time(row).timestamp()
        calls = [
            int(line.split()[0]) for line in read(work / "squeue.calls").splitlines() if line.endswith("call")
        ]
        before, after = max(t for t in calls if t <= end), min(t for t in calls if t > end)
        if after - before < 12 or after - end <= HANG_FORGET_S:
            raise SystemExit(f"hang test: the job did not end in a long interval ({before}, {end}, {after})")
        print(
            f"hang test: squeue forgetting after {SAFE_FORGET_S} s: the job ended in a {after - before} s"
            f" status interval, was seen {after - end:.0f} s later (the {HANG_FORGET_S} s one had lost it),"
            " run completed"
        )
    finally:
        for _, log, proc in runs.values():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            log.close()


def catching(function, failed: list, took: list, *args) -> None:
    """Run function(*args) in a thread, keeping what it raised (SystemExit included) for the caller
    and how long it took."""
    start = time.monotonic()
    try:
        function(*args)
    except BaseException as error:  # noqa: BLE001 - re-raised by the main thread
        failed.append(error)
    finally:
        took.append(time.monotonic() - start)


def read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="kill/retry, identity and -n checks")
    parser.add_argument("--demo", choices=sorted(TARGETS), default="social", help="which demo to run")
    parser.add_argument("--cores", type=int, default=2, help="local --cores (and SLURM --max-threads)")
    parser.add_argument("--workdir", type=Path, help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args()
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        raise SystemExit("no SLURM client on PATH: start one with .ci/slurm-cluster.sh start")
    top = args.workdir or Path(tempfile.mkdtemp(prefix="omnisocial-slurm-"))
    local, slurm = top / "local", top / "slurm"
    for folder in (local, slurm):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text(yaml.safe_dump(demo_config(args.demo), sort_keys=False))

    local_s = run([*base_command(local), "--cores", str(args.cores), TARGETS[args.demo]], top / "local.log")
    graph = rule_graph(slurm, args.cores, TARGETS[args.demo])
    recorder = QueueRecorder()
    recorder.start()
    started = datetime.now()
    try:
        slurm_s = run([*base_command(slurm), *slurm_args(args.cores), TARGETS[args.demo]], top / "slurm.log")
    finally:
        recorder.stop.set()
        recorder.join()
    compare(local, slurm)
    print(f"bench_slurm: local {local_s:.1f} s, slurm {slurm_s:.1f} s")
    overhead(top / "slurm.log", graph, recorder.rows, started, local_s, slurm_s)

    if args.check:
        # a job killed with scancel is retried (profile retries) and loses nothing. Only one
        # output of a cluster rule that no other cluster rule reads goes (socialomni_judge_how's),
        # so the rerun is that job, its retry and the login-node rules after it: the shortest
        # rerun that still has a job to kill.
        (slurm / "results" / "social" / "metrics" / "how_agreement.csv").unlink()
        stop, killed = threading.Event(), []
        killer = threading.Thread(target=kill_one_job, args=(stop, killed))
        # the hang test runs meanwhile (its job mostly waits): the step stays short
        hang_failed: list[BaseException] = []
        hang_took: list[float] = []
        hang = threading.Thread(target=catching, args=(hang_test, hang_failed, hang_took, top, args.cores))
        hang.start()
        killer.start()
        try:
            kill_s = run(
                [*base_command(slurm), *slurm_args(args.cores), TARGETS[args.demo]], top / "slurm-kill.log"
            )
        finally:
            stop.set()
            killer.join()
            hang.join()
        if hang_failed:
            raise hang_failed[0]
        if not killed:
            raise SystemExit("no running job was seen to scancel")
        log = (top / "slurm-kill.log").read_text()
        if "CANCELLED" not in log and "failed" not in log.lower():
            raise SystemExit("the killed job was not reported as failed: see slurm-kill.log")
        print(f"killed {killed[0]} with scancel: retried, run completed")
        print(f"bench_slurm: scancel rerun {kill_s:.1f} s, hang test {hang_took[0]:.1f} s (side by side)")
        compare(local, slurm)
        dry = subprocess.run(
            [*base_command(slurm), *slurm_args(args.cores), "-n", TARGETS[args.demo]],
            capture_output=True,
            text=True,
            cwd=slurm,
        )
        if dry.returncode != 0 or "Nothing to be done" not in dry.stdout + dry.stderr:
            raise SystemExit(f"snakemake -n after the SLURM run still plans jobs:\n{dry.stdout[-3000:]}")
        print("snakemake -n: nothing to be done")
        left = subprocess.run(["squeue", "--me", "-h"], capture_output=True, text=True).stdout.strip()
        if left:
            raise SystemExit(f"jobs left in the queue:\n{left}")
    if not args.workdir:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
