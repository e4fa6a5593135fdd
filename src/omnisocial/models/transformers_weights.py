"""The local checkpoint of a transformers model: where it is, its fingerprints (weights and the
configuration files that shape its replies), the releases and packages a family needs, and the
greedy generation config that replaces the checkpoint's own.

Nothing is downloaded: a repo id is looked up in the local Hugging Face cache only. Part of
`omnisocial.models.transformers_backend` (see its docstring for why each guard exists).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from omnisocial.io import sha256_file

WEIGHT_SUFFIXES = (".safetensors", ".bin")
# Releases that get a family right; below them the family is refused at load.
MIN_TRANSFORMERS = {"qwen2_5_omni": "5.23.0"}
# What each family needs beyond transformers + torch, and how to get it.
FAMILY_PACKAGES = {
    "qwen2_5_omni": ("torchvision", "torchvision (make .venv-omni, or envs/omni.yaml)"),
    "voxtral": ("mistral_common", "mistral-common[audio]==1.12.0 (make .venv-voxtral, or envs/voxtral.yaml)"),
}
# Checkpoint files besides the weights that change what a call returns (fingerprinted).
CONFIG_SUFFIXES = (".json", ".jinja", ".txt", ".model", ".tiktoken")
# Kept from the checkpoint's generation config: token ids only; every sampling or logits
# field (repetition_penalty, top_k, no_repeat_ngram_size, ...) falls back to the neutral default.
KEPT_GENERATION_FIELDS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


def resolve_model_dir(model_path: str | os.PathLike) -> Path:
    """A local folder as is; otherwise a repo id looked up in the local HF cache only."""
    path = Path(model_path).expanduser()
    if path.is_dir():
        return path.resolve()
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id=str(model_path), local_files_only=True))
    except Exception as exc:  # the hub raises several types for "not in the cache"
        raise FileNotFoundError(
            f"model {model_path!r} is neither a local folder nor in the local Hugging Face cache "
            f"(nothing is downloaded): {exc}"
        ) from exc


def weight_files(model_dir: str | os.PathLike) -> list[Path]:
    root = Path(model_dir)
    files = [
        p
        for p in root.rglob("*")
        if p.is_file()
        and p.name.endswith(WEIGHT_SUFFIXES)
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and p.name != "training_args.bin"
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def weights_fingerprint(model_dir: str | os.PathLike) -> str:
    """sha256 over (relative name, size, sha256 of content) of every weight file, sorted by name.

    Files are hashed in 1 MiB chunks, so a 15 GB checkpoint never sits in memory.
    """
    root = Path(model_dir)
    files = weight_files(root)
    if not files:
        raise FileNotFoundError(f"no weight files ({', '.join(WEIGHT_SUFFIXES)}) under {root}")
    digest = hashlib.sha256()
    for path in files:
        # resolve(): HF cache snapshots hold symlinks into blobs/
        real = path.resolve()
        record = {"name": path.relative_to(root).as_posix(), "size": real.stat().st_size}
        record["sha256"] = sha256_file(real)
        digest.update((json.dumps(record, sort_keys=True) + "\n").encode())
    return digest.hexdigest()


def config_files(model_dir: str | os.PathLike) -> list[Path]:
    """Top-level non-weight files that shape outputs: configs, processor, tokenizer, chat template."""
    root = Path(model_dir)
    return sorted(
        p
        for p in root.iterdir()
        if p.is_file()
        and p.suffix.lower() in CONFIG_SUFFIXES
        and not p.name.startswith(".")
        and not p.name.lower().startswith("readme")
    )


def config_fingerprint(model_dir: str | os.PathLike) -> dict[str, str]:
    """name -> sha256 of every file `config_files` lists."""
    return {p.name: sha256_file(p.resolve()) for p in config_files(model_dir)}


def _version_tuple(version: str) -> tuple[int, ...]:
    import re

    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def check_transformers_version(family: str, version: str) -> None:
    """Raise when this transformers release is known to get `family` wrong."""
    needed = MIN_TRANSFORMERS.get(family)
    if needed and _version_tuple(version) < _version_tuple(needed):
        raise RuntimeError(
            f"family {family} needs transformers>={needed} (found {version}): earlier releases drop "
            "the audio track of a video without an error (0 audio tokens in the prompt)"
        )


def check_family_packages(family: str) -> None:
    """Raise ImportError naming what to install when the family's extra package is missing."""
    import importlib.util

    if family not in FAMILY_PACKAGES:
        return
    module, install = FAMILY_PACKAGES[family]
    if importlib.util.find_spec(module) is None:
        raise ImportError(
            f"family {family} needs the {module} package, not installed here: install {install}"
        )


def check_audio_tokens(input_ids, audio_token_id: int, item_ids: Sequence[str]) -> None:
    """Every row of a video batch whose audio comes from the video must hold audio tokens."""
    counts = (input_ids == audio_token_id).sum(dim=-1).tolist()
    empty = [item for item, count in zip(item_ids, counts, strict=True) if count == 0]
    if empty:
        raise RuntimeError(
            f"the prompt of video item(s) {', '.join(map(str, empty))} holds 0 audio tokens although its "
            "audio should come from the video track: this transformers/processor drops it"
        )


def greedy_generation_config(checkpoint_config):
    """(clean GenerationConfig for greedy decoding, fields of the checkpoint's that were dropped)."""
    from transformers import GenerationConfig

    kept = {
        key: getattr(checkpoint_config, key, None)
        for key in KEPT_GENERATION_FIELDS
        if getattr(checkpoint_config, key, None) is not None
    }
    clean = GenerationConfig(**kept, do_sample=False, num_beams=1)
    reference = clean.to_dict()
    dropped = {}
    if checkpoint_config is not None:
        for key, value in checkpoint_config.to_diff_dict().items():
            if key in KEPT_GENERATION_FIELDS or key.startswith("_") or key == "transformers_version":
                continue
            if reference.get(key) != value:
                dropped[key] = value
    return clean, dropped
