"""A dead model host fails fast, and a plain rerun after it comes back makes exactly the failed calls.

    .venv/bin/python benchmarks/bench_failures.py [--config config/demo.yaml]

Runs the real workflow (`snakemake`, the demo config plus one OpenAI-compatible registry
entry at a loopback port) in a temporary folder:
1. nothing listens on the port: the `infer_model` job must fail, in under 30 s, at its
   reachability probe (prints the job's time from its log, and the whole snakemake call's,
   which includes building the DAG);
2. a server answers, but HTTP 500 for a tenth of the stimuli: the job makes every call,
   writes its cache and fails (failed share above `inference.max_failed_share`);
3. the server is healthy again: a plain `snakemake` rerun (no --forcerun) must make exactly
   the calls that failed in step 2, and succeed.
Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from http_server import Action, FakeChatServer  # noqa: E402

from omnisocial.workflow import HEADER  # noqa: E402

MODEL = "remote"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def snakemake(folder: Path, *targets: str) -> tuple[int, float, str]:
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
    command += ["--directory", str(folder), "--configfile", str(folder / "config.yaml"), "--cores", "2"]
    started = time.perf_counter()
    done = subprocess.run([*command, *targets], capture_output=True, text=True, cwd=folder)
    return done.returncode, time.perf_counter() - started, done.stdout + done.stderr


def job_seconds(rule_log: Path) -> float:
    """From the job's start (its attempt header) to its log's last write, in whole seconds."""
    header = next(line for line in rule_log.read_text().splitlines() if line.startswith(HEADER))
    started = datetime.strptime(header.split("started ")[1].split(" ")[0], "%Y-%m-%dT%H:%M:%SZ")
    return rule_log.stat().st_mtime - started.replace(tzinfo=UTC).timestamp()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "config" / "demo.yaml"))
    args = parser.parse_args()
    port = free_port()
    config = yaml.safe_load(Path(args.config).read_text())
    config["models"] = [
        *config["models"],
        {
            "name": MODEL,
            "backend": "openai",
            "model": "fake-model",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "modalities": ["text"],
            "concurrency": 4,
            "max_retries": 2,
            "backoff_base_s": 0.05,
            "backoff_max_s": 0.2,
        },
    ]
    config["social"]["enabled"] = False
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-failures-") as tmp:
        folder = Path(tmp)
        (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        results = Path(config["results"])
        stimuli = str(results / "stimuli" / "manifest.csv")
        target = str(results / "predictions" / f"{MODEL}.csv")
        code, seconds, log = snakemake(folder, stimuli)
        if code != 0:
            print(log[-3000:])
            return 1
        print(f"upstream (demo corpus to stimuli): {seconds:.1f} s")

        code, seconds, log = snakemake(folder, target)
        rule_log = folder / results / "logs" / f"infer_model_{MODEL}.log"
        job_s = job_seconds(rule_log)
        probed = "no call was made" in rule_log.read_text()
        print(
            f"1. dead host: rc {code}, the job failed at its probe ({probed}) after {job_s:.0f} s "
            f"(target < 30 s); the whole snakemake call took {seconds:.1f} s"
        )
        ok &= code != 0 and probed and job_s < 30

        def flaky(body: dict, number: int) -> Action | None:
            text = str(body.get("messages", [{}])[-1].get("content", ""))
            return Action.error(500) if zlib.crc32(text.encode()) % 10 == 0 else None

        with FakeChatServer(responder=flaky, port=port) as server:
            code, seconds, log = snakemake(folder, target)
            attempts = server.requests
        text = rule_log.read_text()
        refused = "requests failed" in text and "max_failed_share" in text
        print(f"2. flaky host: rc {code}, {attempts} HTTP attempts in {seconds:.1f} s")
        print(f"   the job failed on inference.max_failed_share after caching: {refused}")
        ok &= code != 0 and refused

        cache = folder / results / "cache" / f"{MODEL}.jsonl"
        records = [json.loads(line) for line in cache.read_text().splitlines() if line.strip()]
        failed_keys = {r["key"] for r in records if not r["ok"]} - {r["key"] for r in records if r["ok"]}
        with FakeChatServer(port=port) as healthy:
            code, seconds, log = snakemake(folder, target)
            rerun_calls = healthy.requests
        print(
            f"3. host back: rc {code}, plain rerun made {rerun_calls} calls for {len(failed_keys)} "
            f"failed ones in {seconds:.1f} s (target: equal)"
        )
        ok &= code == 0 and rerun_calls == len(failed_keys) > 0
    print("all targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
