"""Throughput of TransformersBackend (tiny random Qwen2-Audio) at batch sizes 1 and 8.

Builds the tiny model offline in a temporary folder, then times `generate` on 20 s audio
items (the familiarity stimulus length) on cuda when available, else cpu. Prints one line
per batch size and a JSON summary; `--json PATH` also writes the summary to a file.

    python benchmarks/bench_transformers_gpu.py [--items 32] [--max-new-tokens 16]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0, help="audio length per item")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    import torch

    from omnisocial.models.base import Request
    from omnisocial.models.tiny import build_tiny_qwen2_audio, write_tone_wav
    from omnisocial.models.transformers_backend import TransformersBackend

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    summary = {
        "device": device,
        "gpu": torch.cuda.get_device_name(0) if device.startswith("cuda") else None,
        "torch": torch.__version__,
        "items": args.items,
        "max_new_tokens": args.max_new_tokens,
        "audio_seconds": args.seconds,
        "results": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny_qwen2_audio(Path(tmp) / "model", seed=0)
        wavs = [
            write_tone_wav(Path(tmp) / f"item{i}.wav", seconds=args.seconds, frequency=150.0 + 10 * i)
            for i in range(4)
        ]
        requests = [
            Request(
                item_id=f"d{i}", prompt="Do the two people know each other ?", media={"audio": wavs[i % 4]}
            )
            for i in range(args.items)
        ]
        outputs = {}
        for batch_size in args.batch_sizes:
            backend = TransformersBackend(
                folder,
                "qwen2_audio",
                generation={"max_new_tokens": args.max_new_tokens},
                device=device,
                dtype="float32",
                batch_size=batch_size,
            )
            backend.load()
            backend.generate(requests[:batch_size])  # warm-up: kernels, allocator
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            started = time.perf_counter()
            replies = backend.generate(requests)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - started
            errors = [r.error for r in replies if not r.ok]
            outputs[batch_size] = [r.text for r in replies]
            row = {
                "batch_size": batch_size,
                "seconds": round(elapsed, 4),
                "items_per_s": round(len(requests) / elapsed, 3),
                "errors": len(errors),
                "first_error": errors[0] if errors else None,
                "peak_gpu_mib": (
                    round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.startswith("cuda") else None
                ),
            }
            summary["results"].append(row)
            print(
                f"{device} batch_size={batch_size}: {row['items_per_s']} items/s "
                f"({len(requests)} items in {row['seconds']} s, {row['errors']} errors)",
                flush=True,
            )
            del backend
        sizes = list(outputs)
        if len(sizes) > 1:
            same = sum(a == b for a, b in zip(outputs[sizes[0]], outputs[sizes[-1]], strict=True))
            summary["same_text_batch_vs_single"] = f"{same}/{len(requests)}"
            print(f"replies identical between batch sizes {sizes[0]} and {sizes[-1]}: {same}/{len(requests)}")
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


if __name__ == "__main__":
    main()
