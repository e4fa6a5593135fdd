"""Inference throughput and cache speed against a loopback OpenAI-compatible server.

    .venv/bin/python benchmarks/bench_inference.py [--items 200] [--latency 0.2] [--concurrency 16]

1. N items at `--concurrency` and at concurrency 1, each call taking `--latency` seconds on
   the server: prints both wall times and their ratio (target >= 10x at 16).
2. The same N items again with everything cached: prints the number of requests the
   server saw (target 0) and the wall time (target < 2 s).
Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from http_server import Action, FakeChatServer  # noqa: E402

from omnisocial.models.base import Request  # noqa: E402
from omnisocial.models.openai_compat import OpenAICompatBackend  # noqa: E402
from omnisocial.models.runner import run_inference  # noqa: E402


def timed_run(
    server: FakeChatServer, concurrency: int, requests: list[Request], cache: Path
) -> tuple[float, int]:
    entry = {
        "name": f"bench-c{concurrency}",
        "backend": "openai",
        "model": "fake-model",
        "base_url": server.url,
        "concurrency": concurrency,
        "timeout_s": 30,
    }
    before = server.requests
    with OpenAICompatBackend(entry) as backend:
        started = time.perf_counter()
        frame = run_inference(backend, requests, cache, progress=False)
        elapsed = time.perf_counter() - started
    if not frame["ok"].all():
        raise SystemExit(f"benchmark run failed: {frame.loc[~frame['ok'], 'error'].iloc[0]}")
    return elapsed, server.requests - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2, help="server seconds per call")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    requests = [Request(f"d{i:04d}", f"Do they know each other? item {i}") for i in range(args.items)]
    failures = []
    with (
        FakeChatServer(default=Action.ok(delay_s=args.latency)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        tmp = Path(tmp)
        parallel, calls_parallel = timed_run(server, args.concurrency, requests, tmp / "parallel.jsonl")
        peak_parallel = server.peak
        server.peak = 0
        serial, calls_serial = timed_run(server, 1, requests, tmp / "serial.jsonl")
        ratio = serial / parallel
        print(f"items={args.items} server latency={args.latency:.3f} s/call")
        print(
            f"concurrency {args.concurrency:>2}: {parallel:7.2f} s  ({calls_parallel} requests, "
            f"peak {peak_parallel} in flight, {args.items / parallel:6.1f} items/s)"
        )
        print(
            f"concurrency  1: {serial:7.2f} s  ({calls_serial} requests, peak {server.peak} in flight, "
            f"{args.items / serial:6.1f} items/s)"
        )
        print(f"speed-up: {ratio:.1f}x (target >= 10x)")
        if ratio < 10:
            failures.append("speed-up below 10x")

        cached, calls_cached = timed_run(server, args.concurrency, requests, tmp / "parallel.jsonl")
        print(f"rerun, all cached: {cached:.3f} s, {calls_cached} requests (targets: < 2 s, 0 requests)")
        if calls_cached != 0:
            failures.append("cached rerun made requests")
        if cached >= 2:
            failures.append("cached rerun took 2 s or more")
    print("PASS" if not failures else "FAIL: " + "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
