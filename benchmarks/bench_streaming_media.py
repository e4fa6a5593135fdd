"""Media cost per streaming step: assembling a step's prefix from segments vs re-cutting it each step.

    .venv/bin/python benchmarks/bench_streaming_media.py [--duration 60] [--step 1.0] [--size 640x360]

A synthetic clip (testsrc at 25 fps, a 440 Hz tone, H.264 + AAC, `--duration` s) is streamed
at `--step` s from the first step to its end, the whole prefix each step (the SocialOmni
protocol's context). Measured in the same run, per modality (audio_video, audio):
1. the one-time cut into segments (`streaming.media.cut_segments`);
2. per step, the prefix joined from the segments (`assemble`: concat demuxer, stream copy);
3. per step, the prefix re-cut from the source (`cut_prefix`: what a driver without segments
   does: decode and re-encode [0, t] every step).
Each is timed as wall-clock and as CPU seconds (user + system of the ffmpeg processes plus
this process's own, where a wav join runs; on a shared, loaded machine the CPU figure is the
one to compare). Prints the
mean and the last step's time of 2 and 3, their ratio, and the ratio with the one-time cut
spread over the steps of one model (the segments are shared by every model, so with more
models it tends to the join's ratio); checks the joined files are bitexact across two joins.
PASS when, for audio_video, re-cut / join per step (CPU, the cut excluded: it is paid once for
all models) is at least 5 and every join is bitexact; audio is printed for information.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from omnisocial.io import sha256_file  # noqa: E402
from omnisocial.streaming import Schedule, StreamItem, assemble, cut_segments  # noqa: E402
from omnisocial.streaming.media import cut_prefix, segment_paths, step_segments  # noqa: E402

TARGET_RATIO = 5.0


def make_clip(path: Path, duration: float, size: str) -> None:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"testsrc=size={size}:rate=25",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", f"{duration}",
         "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", str(path)],
        check=True,
    )  # fmt: skip


def children_cpu() -> float:
    """CPU seconds of this process (a wav join runs in Python) and of its finished children (ffmpeg)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + time.process_time()


def timed(work) -> tuple[object, float, float]:
    """(result, wall s, CPU s of the child processes)."""
    wall, cpu = time.perf_counter(), children_cpu()
    result = work()
    return result, time.perf_counter() - wall, children_cpu() - cpu


def measure(item: StreamItem, folder: Path, modality: str) -> dict:
    _, cut_wall, cut_cpu = timed(lambda: cut_segments(item, None, folder / "segments", modality, threads=1))
    paths = segment_paths(folder / "segments", modality, item, None)
    suffix = paths[0].suffix
    join_wall, join_cpu, recut_wall, recut_cpu, digests = [], [], [], [], []
    for t in item.schedule.times():
        parts = paths[step_segments(item, None, 0.0, t)]
        out, wall, cpu = timed(lambda parts=parts: assemble(parts, folder / f"join{suffix}"))
        join_wall.append(wall)
        join_cpu.append(cpu)
        again = assemble(parts, folder / f"again{suffix}")
        digests.append(sha256_file(out) == sha256_file(again))
        _, wall, cpu = timed(lambda t=t: cut_prefix(item, 0.0, t, folder / f"recut{suffix}", modality))
        recut_wall.append(wall)
        recut_cpu.append(cpu)
    steps = len(join_cpu)
    mean = statistics.mean
    return {
        "modality": modality,
        "steps": steps,
        "cut_wall": cut_wall,
        "cut_cpu": cut_cpu,
        "join_wall_ms": 1000 * mean(join_wall),
        "join_cpu_ms": 1000 * mean(join_cpu),
        "join_last_cpu_ms": 1000 * join_cpu[-1],
        "recut_wall_ms": 1000 * mean(recut_wall),
        "recut_cpu_ms": 1000 * mean(recut_cpu),
        "recut_last_cpu_ms": 1000 * recut_cpu[-1],
        "ratio_cpu": mean(recut_cpu) / mean(join_cpu),
        "ratio_wall": mean(recut_wall) / mean(join_wall),
        "ratio_cpu_with_cut": mean(recut_cpu) / (mean(join_cpu) + cut_cpu / steps),
        "bitexact": all(digests),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--step", type=float, default=1.0)
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--modalities", default="audio_video,audio", help="comma-separated")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        folder = Path(tmp)
        clip = folder / "clip.mp4"
        make_clip(clip, args.duration, args.size)
        item = StreamItem("clip", clip, Schedule(args.step, args.duration, args.step))
        load = os.getloadavg()[0]
        print(
            f"clip {args.duration:g} s {args.size} 25 fps + AAC, steps every {args.step:g} s, whole prefix; "
            f"load average {load:.1f} on {os.cpu_count()} CPUs"
        )
        for modality in args.modalities.split(","):
            row = measure(item, folder / modality, modality)
            passed = row["ratio_cpu"] >= TARGET_RATIO and row["bitexact"]
            if modality == "audio_video":
                ok &= passed
            verdict = ("PASS" if passed else "FAIL") if modality == "audio_video" else "(information)"
            print(
                f"{modality}: {row['steps']} steps; segments cut once: {row['cut_cpu']:.1f} s CPU "
                f"({row['cut_wall']:.1f} s wall); per step, join {row['join_cpu_ms']:.0f} ms CPU "
                f"({row['join_last_cpu_ms']:.0f} at the last step, {row['join_wall_ms']:.0f} ms wall), "
                f"re-cut {row['recut_cpu_ms']:.0f} ms CPU ({row['recut_last_cpu_ms']:.0f} at the last, "
                f"{row['recut_wall_ms']:.0f} ms wall); re-cut / join {row['ratio_cpu']:.1f}x CPU "
                f"({row['ratio_wall']:.1f}x wall; target >= {TARGET_RATIO:g}x CPU), with the one-time cut "
                f"spread over one model's steps {row['ratio_cpu_with_cut']:.1f}x; bitexact joins: "
                f"{row['bitexact']} -> {verdict}"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
