"""Media cost per streaming step: assembling a step's prefix from segments vs re-cutting it each step.

    .venv/bin/python benchmarks/bench_streaming_media.py [--duration 60] [--step 1.0] [--size 640x360]

A synthetic clip (testsrc at 25 fps, a 440 Hz tone, H.264 + AAC, `--duration` s) is streamed
at `--step` s from the first step to its end, the whole prefix each step (the SocialOmni
protocol's context). Measured in the same run, per modality (audio_video, audio):
1. the one-time cut into segments (`streaming.media.cut_segments`);
2. per step, the prefix joined from the segments (`assemble`: concat demuxer, stream copy);
3. per step, the prefix re-cut from the source (`cut_prefix`: what a driver without segments
   does: decode and re-encode [0, t] every step).
Prints the mean and the last step's time of 2 and 3, their ratio, and the ratio with the
one-time cut spread over the steps; checks the joined files are bitexact across two joins.
PASS when the per-step ratio (re-cut / join, cut included) is at least 5.
"""

from __future__ import annotations

import argparse
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


def measure(item: StreamItem, folder: Path, modality: str) -> dict:
    started = time.perf_counter()
    cut_segments(item, None, folder / "segments", modality, threads=1)
    cut_s = time.perf_counter() - started
    paths = segment_paths(folder / "segments", modality, item, None)
    suffix = paths[0].suffix
    joined, recut, hashes = [], [], set()
    for t in item.schedule.times():
        parts = paths[step_segments(item, None, 0.0, t)]
        started = time.perf_counter()
        out = assemble(parts, folder / f"join{suffix}")
        joined.append(time.perf_counter() - started)
        if t == item.schedule.times()[-1]:
            hashes = {sha256_file(out), sha256_file(assemble(parts, folder / f"again{suffix}"))}
        started = time.perf_counter()
        cut_prefix(item, 0.0, t, folder / f"recut{suffix}", modality)
        recut.append(time.perf_counter() - started)
    steps = len(joined)
    per_step_join = statistics.mean(joined) + cut_s / steps
    return {
        "modality": modality,
        "steps": steps,
        "segments_cut_s": cut_s,
        "join_mean_ms": 1000 * statistics.mean(joined),
        "join_last_ms": 1000 * joined[-1],
        "recut_mean_ms": 1000 * statistics.mean(recut),
        "recut_last_ms": 1000 * recut[-1],
        "ratio_join": statistics.mean(recut) / statistics.mean(joined),
        "ratio_with_cut": statistics.mean(recut) / per_step_join,
        "bitexact": len(hashes) == 1,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--step", type=float, default=1.0)
    parser.add_argument("--size", default="640x360")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        folder = Path(tmp)
        clip = folder / "clip.mp4"
        make_clip(clip, args.duration, args.size)
        item = StreamItem("clip", clip, Schedule(args.step, args.duration, args.step))
        print(f"clip {args.duration:g} s {args.size} 25 fps + AAC, steps every {args.step:g} s, whole prefix")
        for modality in ("audio_video", "audio"):
            row = measure(item, folder / modality, modality)
            passed = row["ratio_with_cut"] >= TARGET_RATIO and row["bitexact"]
            ok &= passed
            print(
                f"{modality}: {row['steps']} steps; segments cut once in {row['segments_cut_s']:.2f} s; "
                f"join per step {row['join_mean_ms']:.0f} ms mean ({row['join_last_ms']:.0f} ms at the "
                f"last step); re-cut per step {row['recut_mean_ms']:.0f} ms mean ({row['recut_last_ms']:.0f} "
                f"ms at the last); re-cut / join {row['ratio_join']:.1f}x, with the one-time cut spread "
                f"over the steps {row['ratio_with_cut']:.1f}x (target >= {TARGET_RATIO:g}x); bitexact "
                f"joins: {row['bitexact']} -> {'PASS' if passed else 'FAIL'}"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
