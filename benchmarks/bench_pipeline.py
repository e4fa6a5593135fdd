"""Speed and memory of the whole demo workflow, setup excluded.

    .venv/bin/python benchmarks/bench_pipeline.py [--config config/demo.yaml] [--cores 2]

Runs `snakemake --cores N` on the config in a fresh temporary folder (the demo corpus is
generated there too), then a no-op `snakemake -n`, and prints:

- wall time and job count of the full run (target: 60 s for the default demo on 2 cores,
  issue 62), and the two floors no scheduling can beat: the run's CPU seconds (Snakemake and
  every job, user + sys) over the cores, and its critical path (the longest chain of rules in
  `--rulegraph`, each rule at its longest job's wall time in this run's log);
- wall time of the no-op dry run (target: under 3 s);
- where the run's CPU goes: each kind of job's CPU seconds (its process tree, with what it
  waited for, polled from /proc while the run goes), the costliest first, and Snakemake's own;
- per rule: wall seconds, sampled CPU seconds and peak memory (max_rss) from the rules'
  `benchmark:` files (target: no job above 4 GiB);
- signal measurement throughput: seconds of audio (both tracks) measured per wall second
  per thread of `measure_signals`.

Exits 1 when a target is missed. The VAD's own x-real-time is in bench_vad_filters.py.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from snakemake_log import FINISHED_LINE, JOBID_LINE, LOG_TIME, LOG_TIME_FORMAT, RULE_LINE, rule_needs  # noqa: E402

TARGETS = {"full_run_s": 60.0, "noop_s": 3.0, "max_rss_mb": 4096.0}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
    return [*command, "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), *args]


def make_environment() -> dict[str, str]:
    """This process's environment as `make demo` passes it on: the Makefile unexports
    PYTHONDONTWRITEBYTECODE, so jobs write the bytecode of their imports instead of compiling
    them anew in every job (which about doubles the demo's CPU time where the variable is set)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


SCRIPT = re.compile(r"\.snakemake/scripts/tmp[^/ ]*?\.([A-Za-z0-9_]+)\.py")
TICKS = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, own CPU s, CPU s of the children it waited for) from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # gone meanwhile
    ppid, utime, stime, cutime, cstime = int(fields[1]), *map(int, fields[11:15])
    return ppid, (utime + stime) / TICKS, (cutime + cstime) / TICKS


def _label(pid: int) -> str:
    """A job's name: its script's (a `script:` job runs .snakemake/scripts/tmp<random>.<script>.py),
    else the start of its command line."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"
    found = SCRIPT.search(command)
    return f"script {found.group(1)}" if found else " ".join(command.split())[:60]


def sample_jobs(
    process: subprocess.Popen, every_s: float = 0.1
) -> tuple[dict[int, str], dict[int, float], float]:
    """Polls snakemake's jobs (its direct children) while it runs: each job's label and the CPU
    seconds of its process tree (every live process in it, each with the children it has waited
    for: a worker's CPU moves into its parent's when it is reaped, so the sum goes on), and
    snakemake's own CPU seconds (its `run:` rules and scheduling). A job's last `every_s` before it
    exits is not seen (the table's "not seen" row says how much)."""
    labels: dict[int, str] = {}
    cpu: dict[int, float] = {}
    own = 0.0
    while process.poll() is None:
        stats = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and (stat := _proc_cpu(int(entry.name))) is not None:
                stats[int(entry.name)] = stat
        if process.pid in stats:
            own = stats[process.pid][1]
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        for job in children.get(process.pid, []):
            if job not in labels:
                labels[job] = _label(job)
            tree, total = [job], 0.0
            while tree:
                pid = tree.pop()
                total += stats[pid][1] + stats[pid][2]
                tree.extend(children.get(pid, []))
            cpu[job] = max(cpu.get(job, 0.0), total)
        time.sleep(every_s)
    return labels, cpu, own


def snakemake(workdir: Path, *args: str, jobs: dict | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s of snakemake and every job it ran, its log) of one snakemake call; `jobs`,
    where given, gets each job's CPU seconds by label (sample_jobs) and snakemake's own."""
    cpu = children_cpu_s()
    started = time.perf_counter()
    command = snakemake_command(workdir, *args)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True, env=make_environment())
        if jobs is not None:
            labels, job_cpu, own = sample_jobs(process)
            jobs["snakemake itself (scheduling, run: rules)"] = [own]
            for pid, seconds in job_cpu.items():
                jobs.setdefault(labels[pid], []).append(seconds)
        returncode = process.wait()
        elapsed = time.perf_counter() - started
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if returncode != 0:
        sys.exit(f"snakemake {' '.join(args)} failed:\n{stdout[-3000:]}\n{stderr[-3000:]}")
    return elapsed, children_cpu_s() - cpu, stdout + stderr


def job_cpu_table(jobs: dict[str, list[float]], total: float) -> pd.DataFrame:
    """Where the run's CPU went: each job kind's CPU seconds (sum, jobs, the costliest job), the
    costliest first, and what sampling did not see."""
    rows = [
        {"job": label, "cpu_s": sum(seconds), "jobs": len(seconds), "max_job_cpu_s": max(seconds)}
        for label, seconds in jobs.items()
    ]
    seen = sum(row["cpu_s"] for row in rows)
    unseen = {"job": "not seen (jobs' last moments)", "cpu_s": total - seen, "jobs": 0, "max_job_cpu_s": 0.0}
    rows.append(unseen)
    table = pd.DataFrame(rows).sort_values("cpu_s", ascending=False)
    table["share"] = (table["cpu_s"] / total).map("{:.0%}".format)
    return table


def job_walls(log: str) -> list[tuple[str, float]]:
    """(rule, wall s) of each job the run's log shows started and finished (1 s resolution)."""
    now, rule, started, finished, rules = None, None, {}, {}, {}
    for line in log.splitlines():
        stripped = line.strip()
        if match := LOG_TIME.match(stripped):
            now = datetime.strptime(match.group(1), LOG_TIME_FORMAT)
        elif match := RULE_LINE.match(stripped):
            rule = match.group(2)
        elif (match := JOBID_LINE.match(stripped)) and rule and now:
            rules[match.group(1)], started[match.group(1)], rule = rule, now, None
        elif (match := FINISHED_LINE.match(stripped)) and now:
            finished[match.group(1)] = now
    return [
        (rules[job], (finished[job] - started[job]).total_seconds()) for job in started if job in finished
    ]


def critical_path(needs: dict[str, set[str]], walls: list[tuple[str, float]]) -> tuple[float, list[str]]:
    """The chain of rules with the most wall time, each rule at its longest job (0 if none ran)."""
    longest_job: dict[str, float] = {}
    for rule, wall in walls:
        longest_job[rule] = max(wall, longest_job.get(rule, 0.0))
    best: dict[str, tuple[float, list[str]]] = {}

    def longest(rule: str) -> tuple[float, list[str]]:
        if rule not in best:
            upstream, path = max((longest(up) for up in sorted(needs[rule])), default=(0.0, []))
            best[rule] = (upstream + longest_job.get(rule, 0.0), [*path, rule])
        return best[rule]

    return max((longest(rule) for rule in sorted(needs)), default=(0.0, []))


def rule_benchmarks(workdir: Path) -> pd.DataFrame:
    rows = []
    for path in sorted(workdir.rglob("*.tsv")):
        if "benchmarks" not in path.parts:
            continue
        table = pd.read_csv(path, sep="\t")
        rows.append(
            {
                "rule": path.stem,
                "cpu_s": table["cpu_time"].iloc[0],
                "wall_s": table["s"].iloc[0],
                "max_rss_mb": table["max_rss"].iloc[0],
            }
        )
    return pd.DataFrame(rows)


def audio_seconds(workdir: Path, results: str) -> float:
    signals = pd.read_csv(workdir / results / "signals" / "signals.csv")
    return float(signals[["duration_audio_a", "duration_audio_b"]].fillna(0).to_numpy().sum())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=str(ROOT / "config" / "demo.yaml"))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    config = yaml.safe_load(Path(args.config).read_text())
    workdir = Path(tempfile.mkdtemp(prefix="omnisocial-bench-"))
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    graph = subprocess.run(snakemake_command(workdir, "--rulegraph", "dot"), capture_output=True, text=True)
    if graph.returncode != 0:
        sys.exit(f"snakemake --rulegraph failed:\n{graph.stderr[-3000:]}")
    jobs: dict[str, list[float]] = {}
    full, cpu, log = snakemake(workdir, "--cores", str(args.cores), jobs=jobs)
    noop = snakemake(workdir, "-n")[0]
    walls = job_walls(log)
    path_s, path = critical_path(rule_needs(graph.stdout), walls)
    rules = rule_benchmarks(workdir)
    results = config.get("results", "results/familiarity")
    measure = rules.loc[rules["rule"] == "measure_signals", "wall_s"]
    throughput = None
    if len(measure):
        throughput = audio_seconds(workdir, results) / float(measure.iloc[0]) / args.cores

    print(f"workdir: {workdir}")
    print(
        f"full run on {args.cores} cores: {full:7.1f} s, {len(walls)} jobs, {cpu:.0f} CPU-s"
        f"   (target < {TARGETS['full_run_s']:.0f} s)"
    )
    print(f"floor from CPU:          {cpu / args.cores:7.1f} s   ({cpu:.0f} CPU-s / {args.cores} cores)")
    print(f"floor from the chain:    {path_s:7.1f} s   (critical path: {' -> '.join(path)})")
    print(f"no-op dry run:           {noop:7.2f} s   (target < {TARGETS['noop_s']:.0f} s)")
    print(f"where the {cpu:.0f} CPU-s go, by job (each job's process tree, polled from /proc):")
    print(job_cpu_table(jobs, cpu).to_string(index=False, float_format="%.1f"))
    # snakemake's benchmark: files sample a job once a second and leave out what it waited for
    print("per rule (from benchmark: files; their CPU sampled, so a lower bound):")
    print(rules.sort_values("wall_s", ascending=False).to_string(index=False, float_format="%.1f"))
    peak = float(rules["max_rss_mb"].max()) if len(rules) else float("nan")
    print(f"peak job memory: {peak:.0f} MB   (target < {TARGETS['max_rss_mb']:.0f} MB)")
    if throughput is not None:
        print(f"measure_signals: {throughput:.0f}x real time per thread (audio of both tracks)")
    ok = full < TARGETS["full_run_s"] and noop < TARGETS["noop_s"] and peak < TARGETS["max_rss_mb"]
    print("PASS" if ok else "FAIL")
    if not args.keep:
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
