"""Cost of one streamed step against its prefix length, per local family, on the tiny checkpoints (CPU).

A streaming run asks the same clip again at t = 1, 2, ... s, each time with the prefix [0, t]
(`omnisocial.streaming`), so a step's cost grows with t. For each local family that runs in
the main venv it streams one synthetic clip (testsrc + a sine, `--prefix-s` long) through the
backend's request path (`TransformersBackend.generate`, one step per call, as the driver's
runner sends them) and prints, per query time t:

- media_s: `streaming.assemble` of the step's prefix from the item's segments (cut once);
- step_s: the step's generate call (media decoding, processor, prefill, `--new-tokens` decode);
- for ``image_text``, step_reuse_s: the same step with ``reuse_prefix`` (the KV cache of the
  frames an earlier step prefilled), measured in the same run, the two interleaved step by
  step, and the ratio step_s / step_reuse_s; replies of the two must be equal.

Each stream runs `--passes` times (fresh prefix caches each pass) and each step's time is its
median over the passes. The summary gives, per family, the linear slope of step_s against t
(seconds per prefix second) and the mean and last-step ratios. Families: ``qwen2_audio`` (the
clip's audio), ``image_text`` (a tiny LLaVA: frames at 2 fps). ``chat`` takes no media, and
``qwen2_5_omni`` / ``voxtral`` need their own venvs (torchvision / mistral-common): skipped
and said so. Tiny random weights: the figures show how cost scales with the prefix and what
reuse saves in the backend's own path, not a 7B model's seconds. Reuse saves prefill only:
each step still decodes its whole prefix into frames and runs the processor on all of them.

    python benchmarks/bench_streaming_steps.py [--prefix-s 16] [--step-s 1] [--passes 3] [--scaled]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from omnisocial.models.base import Request  # noqa: E402
from omnisocial.streaming import Schedule, StreamItem, assemble, cut_segments  # noqa: E402
from omnisocial.streaming.media import segment_paths, step_segments  # noqa: E402

FAMILIES = {"qwen2_audio": "audio", "image_text": "video"}  # family -> streamed modality
PROMPT = "The clip runs up to t = {t:.3f} s. Should you speak now? Answer YES or NO."


def make_clip(path: Path, seconds: float) -> Path:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000", "-t", f"{seconds:g}",
         "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", str(path)],
        check=True, capture_output=True,
    )  # fmt: skip
    return path


def build(family: str, folder: Path, scaled: bool) -> Path:
    from omnisocial.models import tiny

    if family == "qwen2_audio":
        return tiny.build_tiny_qwen2_audio(folder)
    if scaled:  # 112 px frames (64 tokens each), a 256-wide 4-layer text model: prefill measurable
        return tiny.build_tiny_image_text(folder, image_size=112, hidden_size=256, layers=4)
    return tiny.build_tiny_image_text(folder)


def step_media(item: StreamItem, root: Path, modality: str, t: float, out: Path) -> tuple[Path, float]:
    paths = segment_paths(root, modality, item, None)
    parts = paths[step_segments(item, None, item.media_start, t)]
    started = time.perf_counter()
    joined = assemble(parts, out / f"{modality}@{t:.3f}{paths[0].suffix}")
    return joined, time.perf_counter() - started


def timed(backend, request: Request) -> tuple[float, str]:
    started = time.perf_counter()
    reply = backend.generate([request])[0]
    if reply.error:
        raise RuntimeError(f"{backend.name}: {reply.error}")
    return time.perf_counter() - started, reply.text


def warm_up(backend, folder: Path) -> None:
    """One call on unrelated media (random frames / a tone) so loading is not timed."""
    from omnisocial.judges.replies import FRAME_KEY
    from omnisocial.models.tiny import write_frames, write_tone_wav

    if backend.family == "image_text":
        media = {FRAME_KEY.format(k): p for k, p in enumerate(write_frames(folder / "warm", 2))}
    else:
        media = {"audio": write_tone_wav(folder / "warm.wav", seconds=1.0)}
    timed(backend, Request("warm", "warm up", media=media, settings={"max_new_tokens": 2}))


def bench_family(family: str, args, work: Path, clip: Path) -> dict:
    from omnisocial.models.transformers_backend import TransformersBackend

    modality = FAMILIES[family]
    folder = build(family, work / family, args.scaled)
    item = StreamItem("bench", clip, Schedule(args.step_s, args.prefix_s, args.step_s))
    cut_segments(item, None, work / "segments", modality)
    generation = {"max_new_tokens": args.new_tokens}
    variants = {"plain": TransformersBackend(folder, family, generation=generation, device="cpu")}
    if family == "image_text":
        variants["reuse"] = TransformersBackend(
            folder, family, generation=generation, device="cpu", reuse_prefix=True
        )
    for backend in variants.values():
        warm_up(backend, work)
    times = {name: {t: [] for t in item.schedule.times()} for name in variants}
    media_s = {t: [] for t in item.schedule.times()}
    mismatches = 0
    for _ in range(args.passes):
        for backend in variants.values():
            backend._prefixes.clear()  # each pass streams the clip afresh
        for t in item.schedule.times():
            path, seconds = step_media(item, work / "segments", modality, t, work)
            media_s[t].append(seconds)
            request = Request(
                f"bench@{t:.3f}",
                PROMPT.format(t=t),
                media={"video" if modality == "video" else "audio": path},
            )
            texts = {}
            for name, backend in variants.items():
                seconds, texts[name] = timed(backend, request)
                times[name][t].append(seconds)
            mismatches += int(len(set(texts.values())) > 1)
    rows = []
    for t in item.schedule.times():
        row = {
            "t": t,
            "media_s": statistics.median(media_s[t]),
            "step_s": statistics.median(times["plain"][t]),
        }
        if "reuse" in times:
            row["step_reuse_s"] = statistics.median(times["reuse"][t])
            row["ratio"] = row["step_s"] / row["step_reuse_s"]
        rows.append(row)
    stats = variants["reuse"].prefix_stats if "reuse" in variants else None
    return {"rows": rows, "mismatches": mismatches, "prefix_stats": stats}


def slope(xs, ys) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix-s", type=float, default=16.0, help="longest prefix (s)")
    parser.add_argument("--step-s", type=float, default=1.0)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=4)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument(
        "--scaled",
        action="store_true",
        help="image_text: 112 px frames (64 tokens) and a 256-wide 4-layer text model, not the tiny one",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1: a shared machine is not oversubscribed)"
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    print("skipped: chat (no media: a step is its prompt only); qwen2_5_omni (needs torchvision: "
          ".venv-omni); voxtral (needs mistral-common: .venv-voxtral)")  # fmt: skip
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as scratch:
        work = Path(scratch)
        clip = make_clip(work / "clip.mp4", args.prefix_s + 1)
        for family in args.families:
            if family == "image_text" and importlib.util.find_spec("PIL") is None:
                print(f"{family}: skipped (Pillow missing)")
                continue
            result = bench_family(family, args, work, clip)
            rows = result["rows"]
            print(f"\n{family} (median of {args.passes} passes, {args.new_tokens} new tokens)")
            header = ["t_s", "media_s", "step_s"] + (["step_reuse_s", "ratio"] if "ratio" in rows[0] else [])
            print(" ".join(f"{h:>12}" for h in header))
            for row in rows:
                values = [row["t"], row["media_s"], row["step_s"]]
                values += [row["step_reuse_s"], row["ratio"]] if "ratio" in row else []
                print(" ".join(f"{v:12.4f}" for v in values))
            ts, steps = [r["t"] for r in rows], [r["step_s"] for r in rows]
            line = (f"{family}: step {steps[0]:.3f} s at t = {ts[0]:g} s, {steps[-1]:.3f} s at {ts[-1]:g} s; "
                    f"slope {slope(ts, steps) * 1000:.1f} ms per prefix second; "
                    f"media {statistics.fmean(r['media_s'] for r in rows) * 1000:.1f} ms a step")  # fmt: skip
            if "ratio" in rows[0]:
                ratios = [r["ratio"] for r in rows[1:]]  # step 0 has nothing to reuse
                reused = [r["step_reuse_s"] for r in rows]
                mean_ratio = statistics.fmean(ratios)
                line += (f"; reuse: slope {slope(ts, reused) * 1000:.1f} ms/s, ratio mean {mean_ratio:.2f}x "
                         f"(steps 2+), {rows[-1]['ratio']:.2f}x at {ts[-1]:g} s; reused frames "
                         f"{result['prefix_stats']['reused_frames']} of {result['prefix_stats']['frames']}; "
                         f"replies differing {result['mismatches']}")  # fmt: skip
                failed |= result["mismatches"] > 0
            print(line)
    print("\nFAIL: reuse changed a reply" if failed else "\nPASS: no reused step changed a reply")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
