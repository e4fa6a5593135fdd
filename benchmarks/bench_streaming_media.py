"""Media cost per streaming step, and how long each step's audio and video last, in one run.

    .venv/bin/python benchmarks/bench_streaming_media.py [--duration 30] [--step 1.0] [--size 640x360]

A synthetic clip (testsrc at 30000/1001 fps, so step bounds fall between frames, and pink
noise as 44.1 kHz stereo AAC, `--duration` s) is streamed at `--step` s from `--start` to its
end, the whole prefix each step (the SocialOmni protocol's context). Measured in the same run,
per modality (audio_video, audio):
1. new: the one-time cut (`streaming.media.cut_segments`) and, per step, `assemble` (video
   segments remuxed in process with PyAV at their frames' durations, audio copied from the
   item's one AAC track; wav segments joined in Python);
2. old (audio_video only): what `streaming.media` did before, rebuilt here: each span cut
   with its own audio (`cut_clip(..., "audio_video")`) and the prefix joined by the concat
   demuxer with stream copy, AAC priming and padding at every join;
3. re-cut: the prefix cut afresh from the source each step (`cut_prefix`: the reference).
Each is timed as wall-clock and as CPU seconds (user + system of the ffmpeg processes plus
this process's own; on a shared, loaded machine the CPU figure is the one to compare). At the
last step it prints, for old, new and re-cut, ffprobe's audio and video durations and the
decoded audio's length; at every step, the new join's and the re-cut's audio decoded as a model
gets it (PyAV, mono 16 kHz, samples counted) against their video's shown length. PASS when,
for audio_video, the new join's audio lasts as long as the re-cut's to within one AAC frame
(1024 samples), its decoded audio within 0.01 s of its video at every step (issue 62), its
video ends at t (the re-cut's runs on to its last frame's end, up to a frame later), re-cut /
new join per step (CPU) is at least 5, and every join is bitexact; audio is printed for
information.
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

import av  # noqa: E402
import ffmpeg  # noqa: E402

from omnisocial.io import sha256_file  # noqa: E402
from omnisocial.media.audio import load_audio, probe  # noqa: E402
from omnisocial.media.cut import cut_clip  # noqa: E402
from omnisocial.media.ffmpeg_run import run_ffmpeg  # noqa: E402
from omnisocial.streaming import Schedule, StreamItem, assemble, cut_segments  # noqa: E402
from omnisocial.streaming.media import cut_prefix, segment_bounds, segment_paths, step_segments  # noqa: E402

TARGET_RATIO = 5.0
TARGET_DRIFT_S = 0.01  # decoded audio against video, every step (issue 62)
MODEL_RATE = 16000  # what a model's audio front end decodes to, mono
RATE = 44100
AAC_FRAME_S = 1024 / RATE


def make_clip(path: Path, duration: float, size: str) -> None:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"testsrc=size={size}:rate=30000/1001",
         "-f", "lavfi", "-i", f"anoisesrc=color=pink:sample_rate={RATE}:amplitude=0.3:seed=7",
         "-t", f"{duration}", "-c:v", "libx264", "-preset", "veryfast", "-g", "60",
         "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", str(path)],
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


def old_cut(item: StreamItem, folder: Path) -> list[Path]:
    """The previous design's segments: each span cut with its own audio (AAC primed per span)."""
    bounds = segment_bounds(item, None)
    paths = [folder / f"{i:05d}.mp4" for i in range(len(bounds) - 1)]
    for i, path in enumerate(paths):
        cut_clip(item.source, bounds[i], bounds[i + 1], path, "audio_video", bitexact=True)
    return paths


def old_join(segments: list[Path], destination: Path) -> Path:
    """The previous design's join: concat demuxer, stream copy of video and audio."""
    listing = destination.with_suffix(".txt")
    listing.write_text("".join(f"file '{path.resolve()}'\n" for path in segments), encoding="utf-8")
    joined = ffmpeg.input(str(listing), f="concat", safe=0, nostdin=None, v="error")
    options = {"c": "copy", "fflags": "+bitexact", "map_metadata": "-1", "format": "mp4"}
    run_ffmpeg(joined.output(str(destination), **options).overwrite_output(), file=segments[0], what="join")
    return destination


def lengths(path: Path) -> dict:
    """ffprobe's audio and video durations and the decoded audio's length (s)."""
    info = probe(path)
    decoded = len(load_audio(path, RATE)) / RATE
    return {"audio": info["audio_duration"], "video": info["video_duration"], "decoded": decoded}


def decoded_minus_video(path: Path) -> float:
    """The audio decoded as a model gets it (every frame, resampled to mono 16 kHz, samples
    counted) less the video's shown length (its last frame's end), in seconds."""
    samples, ends = 0, []
    with av.open(str(path)) as media:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=MODEL_RATE)
        for frame in media.decode(audio=0):
            samples += sum(part.samples for part in resampler.resample(frame))
        samples += sum(part.samples for part in resampler.resample(None))
    with av.open(str(path)) as media:
        stream = media.streams.video[0]
        ends = [(p.pts + p.duration) * p.time_base for p in media.demux(stream) if p.size]
    return samples / MODEL_RATE - float(max(ends))


def per_step(times: list[float]) -> tuple[float, float]:
    """(mean, last) in ms."""
    return 1000 * statistics.mean(times), 1000 * times[-1]


def measure(item: StreamItem, folder: Path, modality: str) -> dict:
    _, cut_wall, cut_cpu = timed(lambda: cut_segments(item, None, folder / "segments", modality, threads=1))
    paths = segment_paths(folder / "segments", modality, item, None)
    suffix = paths[0].suffix
    old = None
    if modality == "audio_video":
        old, old_wall, old_cpu_cut = timed(lambda: old_cut(item, folder / "old"))
    row = {"modality": modality, "steps": 0, "cut_wall": cut_wall, "cut_cpu": cut_cpu, "bitexact": True}
    cpu = {"new": [], "old": [], "recut": []}
    drift = {"new": [], "recut": []}  # decoded audio less video, per step (audio_video)
    wall = {"new": [], "old": [], "recut": []}
    for t in item.schedule.times():
        span = step_segments(item, None, item.media_start, t)
        out, w, c = timed(lambda span=span: assemble(paths[span], folder / f"new{suffix}"))
        wall["new"].append(w)
        cpu["new"].append(c)
        again = assemble(paths[span], folder / f"again{suffix}")
        row["bitexact"] &= sha256_file(out) == sha256_file(again)
        if old is not None:
            _, w, c = timed(lambda span=span: old_join(old[span], folder / "old.mp4"))
            wall["old"].append(w)
            cpu["old"].append(c)
        _, w, c = timed(
            lambda t=t: cut_prefix(item, item.media_start, t, folder / f"recut{suffix}", modality)
        )
        wall["recut"].append(w)
        cpu["recut"].append(c)
        if modality == "audio_video":
            drift["new"].append((t, decoded_minus_video(out)))
            drift["recut"].append((t, decoded_minus_video(folder / f"recut{suffix}")))
        row["steps"] += 1
    for name in ("new", "old", "recut"):
        if cpu[name]:
            row[f"{name}_cpu_ms"], row[f"{name}_last_cpu_ms"] = per_step(cpu[name])
            row[f"{name}_wall_ms"], _ = per_step(wall[name])
    row["ratio_cpu"] = statistics.mean(cpu["recut"]) / statistics.mean(cpu["new"])
    if modality == "audio_video":
        row["old_cut_cpu"] = old_cpu_cut
        row["drift"] = {name: max(values, key=lambda pair: abs(pair[1])) for name, values in drift.items()}
        row["lengths"] = {
            "new": lengths(folder / "new.mp4"),
            "old": lengths(folder / "old.mp4"),
            "recut": lengths(folder / "recut.mp4"),
        }
    return row


def report(row: dict, t_last: float) -> bool:
    modality = row["modality"]
    line = (
        f"{modality}: {row['steps']} steps; cut once: new {row['cut_cpu']:.1f} s CPU "
        f"({row['cut_wall']:.1f} s wall)"
    )
    if "old_cut_cpu" in row:
        line += f", old {row['old_cut_cpu']:.1f} s CPU"
    print(line)
    for name, label in (("old", "old join (per-span AAC)"), ("new", "new join"), ("recut", "re-cut")):
        if f"{name}_cpu_ms" in row:
            print(
                f"  per step {label}: {row[f'{name}_cpu_ms']:.0f} ms CPU mean, "
                f"{row[f'{name}_last_cpu_ms']:.0f} ms at the last step, "
                f"{row[f'{name}_wall_ms']:.0f} ms wall mean"
            )
    if "old_cpu_ms" in row:
        print(f"  new / old join per step (CPU): {row['new_cpu_ms'] / row['old_cpu_ms']:.2f}x")
    print(f"  re-cut / new join per step (CPU): {row['ratio_cpu']:.1f}x (target >= {TARGET_RATIO:g}x)")
    passed = row["ratio_cpu"] >= TARGET_RATIO and row["bitexact"]
    if "lengths" in row:
        print(f"  at the last step (t = {t_last:g} s): audio / video / decoded audio (s)")
        for name, values in row["lengths"].items():
            print(f"    {name:6s} {values['audio']:.4f} / {values['video']:.4f} / {values['decoded']:.4f}")
        new, ref = row["lengths"]["new"], row["lengths"]["recut"]
        same = all(abs(new[key] - ref[key]) <= AAC_FRAME_S for key in ("audio", "decoded"))
        # the new video ends at t with its audio; the re-cut's runs on to its last frame's end
        ends = abs(new["video"] - t_last) <= 1e-3 and 0 <= ref["video"] - new["video"] < 1001 / 30000 + 1e-3
        print(f"  new audio within one AAC frame ({1000 * AAC_FRAME_S:.1f} ms) of the re-cut: {same}")
        print(f"  new video ends at t, the re-cut's within a frame after: {ends}")
        for name, (t, worst) in row["drift"].items():
            print(
                f"  {name} decoded audio (mono 16 kHz) less video, worst step: "
                f"{1000 * worst:+.2f} ms at t = {t:g} s"
            )
        exact = abs(row["drift"]["new"][1]) <= TARGET_DRIFT_S
        print(f"  new decoded audio within {1000 * TARGET_DRIFT_S:g} ms of its video at every step: {exact}")
        passed &= same and ends and exact
    print(f"  bitexact joins: {row['bitexact']} -> {'PASS' if passed else 'FAIL'}")
    return passed if modality == "audio_video" else True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--start", type=float, default=1.4, help="the first query time (s)")
    parser.add_argument("--step", type=float, default=1.0)
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--modalities", default="audio_video,audio", help="comma-separated")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        folder = Path(tmp)
        clip = folder / "clip.mp4"
        make_clip(clip, args.duration, args.size)
        item = StreamItem("clip", clip, Schedule(args.start, args.duration, args.step))
        print(
            f"clip {args.duration:g} s {args.size} 29.97 fps + 44.1 kHz AAC, steps every {args.step:g} s "
            f"from {args.start:g} s, whole prefix; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        for modality in args.modalities.split(","):
            ok &= report(measure(item, folder / modality, modality), item.schedule.times()[-1])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
