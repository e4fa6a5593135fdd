"""CPU of starting one tool from a job that holds a lot of memory: `processes.as_child` (setpriv,
vfork) against the former `preexec_fn` start (fork of the whole job), alternating in one run.

    .venv/bin/python benchmarks/bench_tool_start.py [--mb 480] [--starts 50] [--rounds 2]

The job's memory is many small numpy arrays it has touched, as a demo corpus worker holds a few
hundred MB in sentences and tracks (one large array would sit in huge pages, which a fork copies
cheaply); each start runs `true` to its end. Prints the job's own CPU, its children's CPU and the wall time
per start for each way, and the ratio of their totals. Target: as_child under half the
preexec_fn start's CPU.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from omnisocial.processes import as_child, die_with_parent  # noqa: E402


def cpu_s() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def start_preexec() -> None:
    subprocess.run(["true"], capture_output=True, check=True, preexec_fn=die_with_parent)


def start_as_child() -> None:
    command, options = as_child(["true"])
    subprocess.run(command, capture_output=True, check=True, **options)


def measure(start, starts: int) -> tuple[float, float, float]:
    """(own, children, wall) milliseconds per start."""
    own, children = cpu_s()
    began = time.perf_counter()
    for _ in range(starts):
        start()
    wall = time.perf_counter() - began
    own_after, children_after = cpu_s()
    return tuple(1000 * x / starts for x in (own_after - own, children_after - children, wall))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=480)
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    held = [np.ones(512) for _ in range(args.mb * 1024 * 1024 // 4096)]  # 4 KB each, touched
    if as_child(["true"])[1]:
        print("setpriv with --pdeathsig is not available here: as_child falls back to preexec_fn")
    totals = {"preexec_fn": 0.0, "as_child": 0.0}
    for round_ in range(1, args.rounds + 1):
        for name, start in (("preexec_fn", start_preexec), ("as_child", start_as_child)):
            own, children, wall = measure(start, args.starts)
            totals[name] += own + children
            print(
                f"round {round_} {name:>10}: {own:5.1f} ms own + {children:5.1f} ms children CPU, "
                f"{wall:5.1f} ms wall per start"
            )
    ratio = totals["as_child"] / totals["preexec_fn"]
    print(f"holding {sum(a.nbytes for a in held) / 2**20:.0f} MB: as_child / preexec_fn CPU = {ratio:.2f}")
    ok = ratio < 0.5
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
