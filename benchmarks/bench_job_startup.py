"""CPU seconds a workflow job spends importing, per script, and the heavy modules it loads (issue 21).

    .venv/bin/python benchmarks/bench_job_startup.py [--repeats 3] [--baseline main] [--jobs 1]

Every Snakemake `script:` job is a fresh Python process that runs its script's top-level
imports before any work. For every script under workflow/scripts, a probe program made of
those imports (the script's own `import` statements, with the tree's src/ first on sys.path)
runs in a fresh interpreter `--repeats` times; the table shows the median CPU seconds
(user + sys of the probe process, interpreter start included: robust to other load, unlike
wall time) and which heavy modules (scipy.stats, matplotlib, torch...) were loaded.

--baseline REV measures the same in a temporary `git worktree` of REV in the same run (the two
trees' probes alternate, so load drifts hit both alike) and adds the ratio (this tree / REV)
per script and for the total over the scripts both trees have.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_import_cost import HEAVY  # noqa: E402 - the modules the import test guards, one list

REPORT = """
import resource, sys
usage = resource.getrusage(resource.RUSAGE_SELF)
heavy = [m for m in {heavy!r} if m in sys.modules]
print(usage.ru_utime + usage.ru_stime, " ".join(heavy) or "-")
"""


def probe_source(script: Path, tree: Path) -> str:
    """The script's top-level imports after `sys.path.insert(0, tree/src)`, then the CPU report."""
    source = script.read_text(encoding="utf-8")
    imports = [
        ast.get_source_segment(source, node)
        for node in ast.parse(source).body
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    head = f"import sys\nsys.path.insert(0, {str(tree / 'src')!r})"
    return "\n".join([head, *imports, REPORT.format(heavy=HEAVY)])


def scripts(tree: Path) -> dict[str, Path]:
    base = tree / "workflow" / "scripts"
    return {str(path.relative_to(base)): path for path in sorted(base.rglob("*.py"))}


def run_probe(source: str, cwd: Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the tree's src/ only
    result = subprocess.run(
        [sys.executable, "-c", source], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        raise RuntimeError(f"probe failed in {cwd}:\n{result.stderr[-2000:]}")
    cpu, heavy = result.stdout.strip().splitlines()[-1].split(" ", 1)
    return float(cpu), heavy


def measure(trees: dict[str, Path], repeats: int, jobs: int) -> dict[str, dict[str, tuple[float, str]]]:
    """{tree label: {script: (median CPU s, heavy modules)}}; each repetition alternates the trees."""
    for tree in trees.values():  # compile once, so no repetition pays for the .pyc files
        subprocess.run([sys.executable, "-m", "compileall", "-q", "src"], cwd=tree, check=True)
    tasks = []
    for label, tree in trees.items():
        for name, path in scripts(tree).items():
            tasks.append((label, name, probe_source(path, tree), tree))
    samples: dict[tuple[str, str], list[tuple[float, str]]] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for _ in range(repeats):
            # one repetition of every (tree, script) before the next: drifting load hits all alike
            results = pool.map(lambda task: (task[0], task[1], run_probe(task[2], task[3])), tasks)
            for label, name, sample in results:
                samples.setdefault((label, name), []).append(sample)
    out: dict[str, dict[str, tuple[float, str]]] = {label: {} for label in trees}
    for (label, name), values in samples.items():
        out[label][name] = (statistics.median(cpu for cpu, _ in values), values[-1][1])
    return out


def print_table(result: dict[str, dict[str, tuple[float, str]]], baseline: str | None) -> dict:
    here = result["here"]
    base = result.get(baseline, {}) if baseline else {}
    rows = sorted(here, key=lambda name: -here[name][0])
    if base:
        print(f"{'script':42} {'CPU s':>6} {baseline + ' CPU s':>12} {'ratio':>6}  heavy here | {baseline}")
    else:
        print(f"{'script':42} {'CPU s':>6}  heavy modules")
    for name in rows:
        cpu, heavy = here[name]
        if base and name in base:
            old, old_heavy = base[name]
            print(f"{name:42} {cpu:6.2f} {old:12.2f} {cpu / old:6.2f}  {heavy} | {old_heavy}")
        else:
            print(f"{name:42} {cpu:6.2f}  {heavy}")
    summary = {"scripts": len(here), "total_cpu_s": round(sum(cpu for cpu, _ in here.values()), 2)}
    print(f"\ntotal over {len(here)} scripts: {summary['total_cpu_s']:.2f} CPU s")
    if base:
        common = sorted(set(here) & set(base))
        new = sum(here[name][0] for name in common)
        old = sum(base[name][0] for name in common)
        summary.update(common=len(common), here_cpu_s=round(new, 2), baseline_cpu_s=round(old, 2))
        summary["ratio"] = round(new / old, 3)
        both = f"over the {len(common)} scripts in both"
        print(f"{both}: {new:.2f} CPU s here, {old:.2f} at {baseline}, ratio {new / old:.3f}")
    return summary


def main(argv=None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--repeats", type=int, default=3, help="probes per script and tree (median)")
    parser.add_argument("--baseline", help="a git revision to compare with (in a temporary worktree)")
    parser.add_argument("--jobs", type=int, default=1, help="probes run at once (CPU time is per probe)")
    parser.add_argument("--json", type=Path, help="also write the medians and the summary here")
    args = parser.parse_args(argv)
    trees, label = {"here": ROOT}, None
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        if args.baseline:
            worktree = Path(tmp) / "baseline"
            add = ["git", "worktree", "add", "--detach", "--quiet", str(worktree), args.baseline]
            subprocess.run(add, cwd=ROOT, check=True)
            label = args.baseline if len(args.baseline) <= 12 else args.baseline[:10]  # a hash: short
            trees[label] = worktree
        try:
            result = measure(trees, args.repeats, args.jobs)
        finally:
            if args.baseline:
                subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=True)
    summary = print_table(result, label)
    if args.json:
        args.json.write_text(json.dumps({"medians": result, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
