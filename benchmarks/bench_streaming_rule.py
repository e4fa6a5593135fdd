"""The streaming rule's own path: jobs of `socialomni_stream_when` against a fixed-latency loopback model.

    .venv/bin/python benchmarks/bench_streaming_rule.py [--baseline REF] [--latency-ms 200]
        [--concurrency 1 4 16] [--entries audio audio_video] [--workdir DIR]

`benchmarks/bench_streaming_throughput.py` calls the driver on synthetic clips; this one runs
what a study runs: Snakemake on the demo's SocialOmni when stream items (`config/demo.yaml`:
19 items), one `socialomni_stream_when` job per (entry, concurrency), each with a fresh result
cache, against an OpenAI-compatible server in a process of its own that answers every call
"NO" after exactly `--latency-ms` (so every planned step is asked). Two servers (`--servers`):
`nodelay` sends each reply at once, as uvicorn (vLLM) and Go (Ollama) servers do; `nagle` leaves
Nagle's algorithm on, as Python's http.server and cpp-httplib (llama.cpp's server) do, so a
reply's body waits for the client's ACK of its headers (Linux delays it up to 40 ms). The
demo's items and their step segments (audio, audio_video) are built once first, not timed
(`--workdir` keeps them for the next run).

Calls per second are counted on the server's side, from the first call's arrival to the last
reply (the job's start-up, imports and store read left out), and printed against two limits:

- Little's law, concurrency / latency;
- the in-order bound: the most any driver can reach that asks each item's steps in order (step
  k+1 after step k's reply) with `concurrency` calls at a time, every call taking the latency:
  `in_order_steps` (highest-level-first, optimal for chains of unit jobs), so at concurrency 16
  the longest item's steps bound the job, not the slots.

`--baseline REF` runs the same jobs with the workflow and package of a git ref (`git archive`
into a temporary folder; the same demo, items and segments), alternating with this checkout's,
and checks that both write byte-identical responses tables. The target is >= 0.9 of the in-order
bound for this checkout at every (entry, concurrency); the exit status is 0 when all reach it.
The machine's load average is printed beside each row: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_streaming_throughput import LoopbackProcess  # noqa: E402

TARGET = 0.9
RESULTS = "results/social"
ENTRIES = {  # modalities and media settings of each entry (the demo's two model shapes)
    "audio": {"modalities": ["text", "audio"], "media": {"audio_sample_rate": 16000}},
    "audio_video": {
        "modalities": ["text", "audio", "video"],
        "media": {"video_mode": "video_url", "video_audio": "in_video", "audio_sample_rate": 16000},
    },
}
SEGMENTS = {"audio": "audio", "audio_video": "audio_video"}


def in_order_steps(steps: list[int], slots: int) -> int:
    """The fewest latency periods in which `slots` callers can ask chains of `steps[i]` calls,
    each chain in order: every period, the `slots` chains with the most calls left ask one
    (highest level first, optimal for chains of unit-time jobs)."""
    left = [-n for n in steps if n > 0]
    heapq.heapify(left)
    periods = 0
    while left:
        taken = [heapq.heappop(left) for _ in range(min(slots, len(left)))]
        periods += 1
        for n in taken:
            if n + 1 < 0:
                heapq.heappush(left, n + 1)
    return periods


def snakemake(snakefile: Path, workdir: Path, *targets: str, env: dict) -> subprocess.CompletedProcess:
    # only mtimes decide what is out of date: a baseline tree's other code reruns no upstream job
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), "--directory",
               str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2",
               "--rerun-triggers", "mtime", "--rerun-incomplete", "--", *targets]  # fmt: skip
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(targets)} failed:\n{result.stderr[-4000:]}")
    return result


def tree_env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree / "src")}


def export(ref: str, folder: Path) -> Path:
    """The repository at `ref` (its tracked files) written into `folder`."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], check=True, capture_output=True)  # the cwd's repository
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def write_config(workdir: Path, models: list[dict], tree: Path = ROOT) -> None:
    # the tree's own demo config: a baseline's schema may not know this tree's keys or values
    config = yaml.safe_load((tree / "config" / "demo.yaml").read_text())
    config["social"]["models"] = models
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def entry_for(name: str, url: str, concurrency: int) -> dict:
    return {"name": f"loop-{name.replace('_', '-')}", "backend": "openai", "model": "loopback",
            "base_url": url, "max_retries": 0, "concurrency": concurrency, "timeout_s": 60,
            **ENTRIES[name]}  # fmt: skip


def prepare(workdir: Path, entries: list[str]) -> None:
    """The demo's when stream items and their step segments (built once, not timed)."""
    workdir.mkdir(parents=True, exist_ok=True)
    write_config(workdir, [])
    targets = [f"{RESULTS}/items/when_stream_items.csv"]
    targets += [f"{RESULTS}/stream_media/{SEGMENTS[name]}" for name in entries]
    started = time.perf_counter()
    snakemake(ROOT / "Snakefile", workdir, *targets, env=tree_env(ROOT))
    print(f"demo items and segments ready in {workdir} ({time.perf_counter() - started:.0f} s)", flush=True)


def planned_steps(workdir: Path) -> list[int]:
    from omnisocial.socialomni.contracts import WHEN_STREAM_ITEMS
    from omnisocial.socialomni.stream import stream_items

    config = yaml.safe_load((workdir / "config.yaml").read_text())["social"]
    items = WHEN_STREAM_ITEMS.read(workdir / RESULTS / "items" / "when_stream_items.csv")
    root = workdir / config["demo_root"]
    return [len(item.schedule) for item in stream_items(items, root, float(config["when"]["stream_step_s"]))]


def run_job(tree: Path, workdir: Path, server, name: str, concurrency: int) -> dict:
    entry = entry_for(name, server.url, concurrency)
    model = entry["name"]
    write_config(workdir, [entry], tree)
    results = workdir / RESULTS
    for path in [results / "cache" / f"stream_when_{model}.jsonl",
                 *(results / "stream" / "when").glob(f"{model}_*.csv")]:  # fmt: skip
        path.unlink(missing_ok=True)
    server.stats(reset=True)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    snakemake(tree / "Snakefile", workdir, f"{RESULTS}/stream/when/{model}_steps.csv", env=tree_env(tree))
    wall = time.perf_counter() - started
    seen = server.stats()
    summary = yaml.safe_load(
        subprocess.run([sys.executable, "-c", "import pandas as pd, sys, json; "
                        "print(json.dumps(pd.read_csv(sys.argv[1]).iloc[0].to_dict(), default=str))",
                        str(results / "stream" / "when" / f"{model}_summary.csv")],
                       check=True, capture_output=True, text=True).stdout
    )  # fmt: skip
    responses = (results / "stream" / "when" / f"{model}_responses.csv").read_bytes()
    return {
        "calls": int(seen["calls"]),
        "planned": int(summary["n_planned"]),
        "made": int(summary["n_calls"]),
        "wall_s": wall,
        "span_s": seen["last"] - seen["first"],
        "busy": seen["busy_s"] / (seen["last"] - seen["first"]),
        "responses": responses,
        "load": (load + os.getloadavg()[0]) / 2,
    }


def measure(args, trees: dict, workdir: Path, steps: list[int]) -> list[dict]:
    """Every (server, entry, concurrency) job of each tree, alternating trees; prints each row."""
    latency = args.latency_ms / 1000
    header = ["server", "tree", "entry", "c", "calls", "job_s", "server_s", "calls/s", "little",
              "in_order", "of_little", "of_order", "busy", "load"]  # fmt: skip
    print(" ".join(f"{h:>10}" for h in header), flush=True)
    rows = []
    for kind in args.servers:
        with LoopbackProcess(latency, nagle=kind == "nagle") as server:
            for name, concurrency in itertools.product(args.entries, args.concurrency):
                little = concurrency / latency
                bound = sum(steps) / (in_order_steps(steps, concurrency) * latency)
                for label, tree in trees.items():
                    row = run_job(tree, workdir, server, name, concurrency)
                    counts = (row["calls"], row["made"], row["planned"])
                    if counts != (sum(steps),) * 3:  # every planned step asked once, every call seen
                        raise SystemExit(f"{label} {name} c={concurrency}: calls seen, made, planned "
                                         f"{counts}, {sum(steps)} steps")  # fmt: skip
                    rate = row["calls"] / row["span_s"]
                    row.update(server=kind, tree=label, entry=name, c=concurrency, rate=rate,
                               of_little=rate / little, of_order=rate / bound)  # fmt: skip
                    rows.append(row)
                    cells = [kind, label, name, str(concurrency), str(row["calls"])]
                    values = [row["wall_s"], row["span_s"], rate, little, bound, row["of_little"],
                              row["of_order"], row["busy"], row["load"]]  # fmt: skip
                    print(" ".join([f"{c:>10}" for c in cells] + [f"{v:10.3f}" for v in values]), flush=True)
    return rows


def compare(rows: list[dict]) -> list[str]:
    """The new tree against the baseline per job: ratios, and whether the responses are the same."""
    failed = []
    print("\nof the in-order bound, baseline -> new (calls/s new / baseline); responses tables")
    for row in rows:
        if row["tree"] != "new":
            continue
        key = (row["server"], row["entry"], row["c"])
        other = next(r for r in rows if r["tree"] == "baseline" and (r["server"], r["entry"], r["c"]) == key)
        same = other["responses"] == row["responses"]
        print(f"  {row['server']:>7} {row['entry']:>11} c={row['c']:<3} {other['of_order']:.3f} -> "
              f"{row['of_order']:.3f} ({row['rate'] / other['rate']:.2f}x); "
              f"{'byte-identical' if same else 'DIFFER'}")  # fmt: skip
        if not same:
            failed.append(f"{' '.join(map(str, key))}: responses differ from the baseline's")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git ref whose workflow runs the same jobs, alternating")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--entries", nargs="+", default=list(ENTRIES), choices=list(ENTRIES))
    parser.add_argument("--servers", nargs="+", default=["nodelay", "nagle"], choices=["nodelay", "nagle"])
    parser.add_argument("--workdir", type=Path, help="the demo run to use (built there when missing)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rule-") as scratch:
        workdir = args.workdir or Path(scratch) / "run"
        prepare(workdir, args.entries)
        steps = planned_steps(workdir)
        trees = {"new": ROOT}
        if args.baseline:
            trees = {"baseline": export(args.baseline, Path(scratch) / "baseline"), "new": ROOT}
        print(f"load average {os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} cores; "
              f"loopback latency {args.latency_ms:g} ms; {len(steps)} items, {sum(steps)} planned steps "
              f"(longest {max(steps)}); target >= {TARGET} of the in-order bound"
              f"{f'; baseline {args.baseline}' if args.baseline else ''}")  # fmt: skip
        rows = measure(args, trees, workdir, steps)
    failed = compare(rows) if args.baseline else []
    failed += [f"{r['server']} {r['entry']} c={r['c']}: {r['of_order']:.3f} of the in-order bound"
               for r in rows if r["tree"] == "new" and r["of_order"] < TARGET]  # fmt: skip
    for line in failed:
        print(f"below target: {line}")
    print("PASS" if not failed else f"\n{len(failed)} problem(s)")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
