"""GPU throughput of TransformersBackend on the released 7B shapes, through the real request path.

For Qwen2.5-Omni (thinker only: video frames + the video's audio track) and Qwen2-Audio (audio),
random-weight models with the released 7B configurations (Qwen2.5-Omni-7B thinker: 28-layer
3584-wide Qwen2.5 text model, 32-layer Whisper-large-v3 audio encoder, 32-layer vision encoder;
Qwen2-Audio-7B-Instruct: 32-layer 4096-wide Qwen text model, Whisper-large-v3 encoder) are built
directly on the GPU in bfloat16: no weights travel. The processors are the real classes
(Qwen2_5OmniProcessor, Qwen2AudioProcessor, 128 mel bins) over the byte-level tiny tokenizer, so
media token counts are the released ones while the prompt text costs ~4x its BPE tokens.

Requests are the demo's real stimulus (tests/data/demo_stimulus/D001: the 18 s side-by-side mp4
and its audio track) with the familiarity prompt, run through `TransformersBackend`
(`_prepare` -> `_inputs` -> `_run_batch`, then `generate` end to end). For each family x attention
implementation (sdpa, and flash_attention_2 where the flash-attn package imports) x batch size
(1, 4, 16) it prints:

- preprocess_s: media decoding (ffmpeg) + processor (features, frames, tokenization), per batch;
- prefill tok/s: prompt tokens / time of a 1-token generate (minus its preprocessing);
- decode tok/s: batch x (N - 1) / (time of N tokens - time of 1 token), EOS disabled so every
  row decodes N tokens;
- peak GiB: torch.cuda.max_memory_allocated, reset before each batch size;
- items/s of `backend.generate` end to end.

One prepared script for one H200 (`--budget-s`, default 420 s: configurations that would start
after it are skipped and said so; the whole run ends within 8 minutes). It uses the machine's own
torch. `--tiny` builds the tiny checkpoints of `omnisocial.models.tiny` instead (CPU smoke test:
same code path, meaningless figures); a family whose packages are missing is skipped and said so.

    python benchmarks/bench_transformers_gpu.py [--tiny] [--batch-sizes 1 4 16] [--new-tokens 32]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
STIMULUS = ROOT / "tests" / "data" / "demo_stimulus" / "D001.mp4"
FAMILIES = ("qwen2_5_omni", "qwen2_audio")
NEEDS = {"qwen2_5_omni": "torchvision", "qwen2_audio": None}


def omni_7b_config(tokenizer):
    """Qwen2.5-Omni-7B thinker (config.json thinker_config of the release)."""
    from transformers import Qwen2_5OmniThinkerConfig

    from omnisocial.models.tiny import thinker_token_ids

    ids = tokenizer.convert_tokens_to_ids
    return Qwen2_5OmniThinkerConfig(
        audio_config={
            "d_model": 1280,
            "encoder_layers": 32,
            "encoder_attention_heads": 20,
            "encoder_ffn_dim": 5120,
            "num_mel_bins": 128,
            "max_source_positions": 1500,
            "n_window": 100,
            "output_dim": 3584,
        },
        vision_config={
            "depth": 32,
            "hidden_size": 1280,
            "intermediate_size": 3420,
            "num_heads": 16,
            "out_hidden_size": 3584,
            "fullatt_block_indexes": [7, 15, 23, 31],
            "window_size": 112,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_channels": 3,
        },
        text_config={
            "vocab_size": 152064,
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "max_position_embeddings": 32768,
            "rms_norm_eps": 1e-6,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1000000.0,
                "mrope_section": [16, 24, 24],
            },
            "tie_word_embeddings": False,
            "pad_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id,
        },
        **thinker_token_ids(ids),
    )


def qwen2_audio_7b_config(tokenizer):
    """Qwen2-Audio-7B(-Instruct): Whisper-large-v3 encoder + Qwen-7B text model."""
    from transformers import Qwen2AudioConfig

    return Qwen2AudioConfig(
        audio_config={
            "d_model": 1280,
            "encoder_layers": 32,
            "encoder_attention_heads": 20,
            "encoder_ffn_dim": 5120,
            "num_mel_bins": 128,
            "max_source_positions": 1500,
        },
        text_config={
            "model_type": "qwen2",
            "vocab_size": 156032,
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "max_position_embeddings": 8192,
            "rms_norm_eps": 1e-5,
            "tie_word_embeddings": False,
            "pad_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id,
        },
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )


def build_7b(family: str, attn: str, device: str):
    """(model, processor, tokenizer): random bf16 weights initialised on `device`."""
    import torch
    import transformers

    from omnisocial.models import tiny

    if family == "qwen2_5_omni":
        tokenizer = tiny.build_tokenizer(tiny.CHATML_TEMPLATE, omni=True)
        processor = transformers.Qwen2_5OmniProcessor(
            image_processor=transformers.Qwen2VLImageProcessor(),
            video_processor=transformers.Qwen2VLVideoProcessor(),
            feature_extractor=transformers.WhisperFeatureExtractor(feature_size=128),
            tokenizer=tokenizer,
            chat_template=tiny.CHATML_TEMPLATE,
        )
        config, cls = omni_7b_config(tokenizer), transformers.Qwen2_5OmniThinkerForConditionalGeneration
    else:
        tokenizer = tiny.build_tokenizer(tiny.QWEN2_AUDIO_TEMPLATE)
        processor = transformers.Qwen2AudioProcessor(
            feature_extractor=transformers.WhisperFeatureExtractor(feature_size=128),
            tokenizer=tokenizer,
            chat_template=tiny.QWEN2_AUDIO_TEMPLATE,
        )
        config, cls = qwen2_audio_7b_config(tokenizer), transformers.Qwen2AudioForConditionalGeneration
    torch.manual_seed(0)
    with torch.device(device):
        model = cls._from_config(config, dtype=torch.bfloat16, attn_implementation=attn)
    return model.eval(), processor, tokenizer


def backend_for(family: str, attn: str, args, tmp: Path):
    from omnisocial.models import tiny
    from omnisocial.models.transformers_backend import TransformersBackend

    generation = {"max_new_tokens": args.new_tokens}
    if args.tiny:
        builder = {"qwen2_5_omni": tiny.build_tiny_qwen2_5_omni, "qwen2_audio": tiny.build_tiny_qwen2_audio}
        folder = builder[family](tmp / family)
        backend = TransformersBackend(
            folder, family, generation=generation, device=args.device, attn_implementation=attn
        )
        backend.load()
    else:
        backend = TransformersBackend(
            tmp / "in-memory", family, generation=generation, device=args.device, attn_implementation=attn
        )
        backend.attach(*build_7b(family, attn, args.device))
    backend._model.generation_config.eos_token_id = None  # decode exactly N tokens per row
    return backend


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def measure(backend, requests, args) -> dict:
    import torch

    cuda = args.device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    items = [backend._prepare(i, r) for i, r in enumerate(requests)]
    media_s = time.perf_counter() - started
    started = time.perf_counter()
    inputs, _ = backend._inputs(items)
    processor_s = time.perf_counter() - started
    prompt_tokens = int(inputs["attention_mask"].sum())
    one = [dataclasses.replace(item, max_new_tokens=1) for item in items]
    _sync(args.device)
    started = time.perf_counter()
    backend._run_batch(one)
    _sync(args.device)
    first_s = time.perf_counter() - started
    started = time.perf_counter()
    backend._run_batch(items)
    _sync(args.device)
    full_s = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
    started = time.perf_counter()
    replies = backend.generate(requests)
    _sync(args.device)
    end_to_end_s = time.perf_counter() - started
    prefill_s = max(first_s - processor_s, 1e-9)
    decode_s = max(full_s - first_s, 1e-9)
    return {
        "batch_size": len(requests),
        "prompt_tokens": prompt_tokens,
        "preprocess_s": round(media_s + processor_s, 3),
        "media_s": round(media_s, 3),
        "processor_s": round(processor_s, 3),
        "prefill_tok_s": round(prompt_tokens / prefill_s, 1),
        "decode_tok_s": round(len(requests) * (args.new_tokens - 1) / decode_s, 1),
        "peak_gib": round(peak, 2) if peak is not None else None,
        "items_s": round(len(requests) / end_to_end_s, 3),
        "errors": sum(not r.ok for r in replies),
        "first_error": next((r.error for r in replies if not r.ok), None),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tiny", action="store_true", help="tiny checkpoints (CPU smoke test)")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--budget-s", type=float, default=420.0, help="skip what would start later")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()

    import torch
    import transformers

    from omnisocial.models.base import Request
    from omnisocial.prompt_templates import render_prompt

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if not args.tiny and not args.device.startswith("cuda"):
        parser.error("the 7B shapes need a GPU (no CUDA device here); use --tiny for the CPU smoke test")
    attns = ["sdpa"] + (["flash_attention_2"] if importlib.util.find_spec("flash_attn") else [])
    summary = {
        "device": args.device,
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "shapes": "tiny" if args.tiny else "7B (random bf16)",
        "new_tokens": args.new_tokens,
        "attn_implementations": attns,
        "skipped": [],
        "results": [],
    }
    if "flash_attention_2" not in attns:
        summary["skipped"].append("flash_attention_2: the flash-attn package is not installed")
    print(f"# {summary['shapes']} on {summary['gpu'] or args.device}, torch {torch.__version__}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        video = tmp / "D001.mp4"
        shutil.copy(STIMULUS, video)
        wav = tmp / "D001.wav"
        subprocess.run(
            [
                "ffmpeg",
                "-nostdin",
                "-v",
                "error",
                "-i",
                str(video),
                "-vn",
                "-ac",
                "1",
                "-ar",
                "16000",
                str(wav),
            ],
            check=True,
        )
        for family in args.families:
            need = NEEDS[family]
            if need and importlib.util.find_spec(need) is None:
                summary["skipped"].append(f"{family}: {need} is not installed in this environment")
                print(f"# skip {family}: {need} not installed", flush=True)
                continue
            modality = "video" if family == "qwen2_5_omni" else "audio"
            prompt, _ = render_prompt("familiarity", modality, "v1")
            media = {modality: video if modality == "video" else wav}
            for attn in attns:
                if time.perf_counter() - started > args.budget_s:
                    summary["skipped"].append(f"{family} {attn}: over the time budget")
                    continue
                build_started = time.perf_counter()
                backend = backend_for(family, attn, args, tmp)
                build_s = time.perf_counter() - build_started
                warm = [Request("warm", prompt, media=media)]
                backend.generate(warm)  # kernels, allocator
                for batch_size in args.batch_sizes:
                    if time.perf_counter() - started > args.budget_s:
                        summary["skipped"].append(f"{family} {attn} batch {batch_size}: over the time budget")
                        continue
                    requests = [Request(f"D{i:03d}", prompt, media=media) for i in range(batch_size)]
                    try:
                        row = measure(backend, requests, args)
                    except torch.OutOfMemoryError as exc:
                        row = {"batch_size": batch_size, "error": f"out of memory: {str(exc)[:200]}"}
                    row.update(family=family, modality=modality, attn=attn, build_s=round(build_s, 1))
                    summary["results"].append(row)
                    print(
                        f"{family:13s} {attn:17s} batch {batch_size:>2}: "
                        + (
                            row["error"]
                            if "error" in row
                            else f"prompt {row['prompt_tokens']} tok, preprocess {row['preprocess_s']} s, "
                            f"prefill {row['prefill_tok_s']} tok/s, decode {row['decode_tok_s']} tok/s, "
                            f"peak {row['peak_gib']} GiB, {row['items_s']} items/s, {row['errors']} errors"
                        ),
                        flush=True,
                    )
                del backend
                if args.device.startswith("cuda"):
                    torch.cuda.empty_cache()
    summary["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


if __name__ == "__main__":
    main()
