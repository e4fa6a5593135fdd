"""Tiny random-weight models, built offline, for tests and throughput benchmarks.

They exercise the real loading and generation code of `TransformersBackend` (save to a
folder, load back with ``local_files_only=True``, process audio, generate) in seconds on a
CPU. Their replies are gibberish by design: random weights, a 60-word vocabulary.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|AUDIO|>",
    "<|audio_bos|>",
    "<|audio_eos|>",
    "<|IMAGE|>",
    "<|VIDEO|>",
    "<|vision_bos|>",
    "<|vision_eos|>",
)
# Qwen2.5-Omni's processor reads these names off its tokenizer (as the released one has them).
OMNI_TOKEN_NAMES = {
    "audio_token": "<|AUDIO|>",
    "audio_bos_token": "<|audio_bos|>",
    "audio_eos_token": "<|audio_eos|>",
    "image_token": "<|IMAGE|>",
    "video_token": "<|VIDEO|>",
    "vision_bos_token": "<|vision_bos|>",
    "vision_eos_token": "<|vision_eos|>",
}
# Released models' mel bins: Qwen2.5-Omni, Qwen2-Audio and Voxtral all use 128 (Whisper-large-v3).
MEL_BINS = 128
# The released checkpoints ship sampling defaults in generation_config.json (Qwen2-Audio-Instruct:
# do_sample, top_k 20, top_p 0.5, repetition_penalty 1.1); the tiny ones carry the same so the
# tests see that greedy decoding really overrides them.
RELEASED_SAMPLING = {
    "do_sample": True,
    "temperature": 0.7,
    "top_k": 20,
    "top_p": 0.5,
    "repetition_penalty": 1.1,
}
_PARTS = (
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}{{ audio_prefix }}<|audio_bos|><|AUDIO|><|audio_eos|>\n"
    "{% elif part['type'] == 'video' %}<|vision_bos|><|VIDEO|><|vision_eos|>"
    "{% elif part['type'] == 'image' %}<|vision_bos|><|IMAGE|><|vision_eos|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}"
)
_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}" + _PARTS + "{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# ChatML with list contents (the layout of Qwen2.5-Omni's own template: media parts, then text).
CHATML_TEMPLATE = "{% set audio_prefix = '' %}" + _TEMPLATE
# Qwen2-Audio's layout: "Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>" and a default system turn.
QWEN2_AUDIO_TEMPLATE = (
    "{% set audio_prefix = 'Audio 1: ' %}"
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}" + _TEMPLATE
)


def thinker_token_ids(ids) -> dict:
    """The Qwen2.5-Omni thinker's special-token ids, from `ids(token) -> id` of its tokenizer."""
    return {
        "audio_token_index": ids("<|AUDIO|>"),
        "image_token_index": ids("<|IMAGE|>"),
        "video_token_index": ids("<|VIDEO|>"),
        "audio_start_token_id": ids("<|audio_bos|>"),
        "audio_end_token_id": ids("<|audio_eos|>"),
        "vision_start_token_id": ids("<|vision_bos|>"),
        "vision_end_token_id": ids("<|vision_eos|>"),
        "user_token_id": ids("u"),
    }


def build_tokenizer(chat_template: str = CHATML_TEMPLATE, omni: bool = False):
    """A byte-level fast tokenizer (256 byte tokens, no merges) with the Qwen special tokens.

    Any text survives it unchanged (one token per UTF-8 byte), so a test can check that a
    prompt's tokens reach the model; `omni` adds the named tokens Qwen2.5-Omni's processor reads.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    alphabet = ByteLevel.alphabet()
    vocab = {symbol: index for index, symbol in enumerate(sorted(alphabet))}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    kwargs = {"extra_special_tokens": dict(OMNI_TOKEN_NAMES)} if omni else {}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        bos_token=None,
        **kwargs,
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def _text_config(tokenizer, model_type: str = "qwen2", vocab_size: int | None = None) -> dict:
    return {
        "model_type": model_type,
        "vocab_size": vocab_size or len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": None,
        "tie_word_embeddings": False,
    }


def _save_generation_config(model, tokenizer, folder: Path) -> None:
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(
        **RELEASED_SAMPLING,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(folder)


def _audio_encoder(**extra) -> dict:
    return {
        "d_model": 16,
        "encoder_layers": 1,
        "encoder_attention_heads": 2,
        "encoder_ffn_dim": 32,
        "num_mel_bins": MEL_BINS,
        "max_source_positions": 1500,
        **extra,
    }


def build_tiny_qwen2_audio(folder: str | os.PathLike, seed: int = 0) -> Path:
    """Save a random-weight Qwen2-Audio model and its real processor to `folder`; return it.

    Qwen2AudioProcessor with a WhisperFeatureExtractor of 128 mel bins (the released model's),
    Qwen2-Audio's prompt layout; audio encoder: 1 layer, d_model 16, 1500 positions (= 30 s
    of mel frames, what the encoder checks its input against).
    """
    import torch
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    folder = Path(folder)
    tokenizer = build_tokenizer(QWEN2_AUDIO_TEMPLATE)
    processor = Qwen2AudioProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=MEL_BINS),
        tokenizer=tokenizer,
        chat_template=QWEN2_AUDIO_TEMPLATE,
    )
    config = Qwen2AudioConfig(
        audio_config=_audio_encoder(),
        text_config=_text_config(tokenizer),
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )
    torch.manual_seed(seed)
    model = Qwen2AudioForConditionalGeneration(config).eval()
    _save_generation_config(model, tokenizer, folder)
    processor.save_pretrained(folder)
    return folder


def build_tiny_qwen2_5_omni(folder: str | os.PathLike, seed: int = 0) -> Path:
    """Save a random-weight Qwen2.5-Omni *thinker* and its real Qwen2_5OmniProcessor to `folder`.

    The processor is the released one's (Qwen2VL image + video processors, WhisperFeatureExtractor
    with 128 mel bins); needs torchvision (the video processor), so it runs in .venv-omni.
    """
    import torch
    from transformers import (
        Qwen2_5OmniProcessor,
        Qwen2_5OmniThinkerConfig,
        Qwen2_5OmniThinkerForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        WhisperFeatureExtractor,
    )

    folder = Path(folder)
    tokenizer = build_tokenizer(CHATML_TEMPLATE, omni=True)
    processor = Qwen2_5OmniProcessor(
        image_processor=Qwen2VLImageProcessor(),
        video_processor=Qwen2VLVideoProcessor(),
        feature_extractor=WhisperFeatureExtractor(feature_size=MEL_BINS),
        tokenizer=tokenizer,
        chat_template=CHATML_TEMPLATE,
    )
    ids = tokenizer.convert_tokens_to_ids
    text = _text_config(tokenizer, "qwen2_5_omni_text")
    text.update(num_attention_heads=2, num_key_value_heads=1)  # head_dim 16: mrope 2+3+3 = 8 pairs
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [2, 3, 3]}
    config = Qwen2_5OmniThinkerConfig(
        audio_config=_audio_encoder(output_dim=32, n_window=100),
        vision_config={
            "depth": 1,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": 32,
            "fullatt_block_indexes": [0],
        },
        text_config=text,
        **thinker_token_ids(ids),
    )
    torch.manual_seed(seed)
    model = Qwen2_5OmniThinkerForConditionalGeneration(config).eval()
    _save_generation_config(model, tokenizer, folder)
    processor.save_pretrained(folder)
    return folder


TEKKEN_SPECIALS = 100  # the released tekken.json has 1000; ranks below 35 are what Voxtral uses
VOXTRAL_SPECIALS = {24: "[AUDIO]", 25: "[BEGIN_AUDIO]", 34: "[TRANSCRIBE]"}  # released ranks


def write_tiny_tekken(path: str | os.PathLike) -> Path:
    """A tekken.json in the released Voxtral layout: 100 special tokens (ranks as released:
    [AUDIO] 24, the id VoxtralProcessor hard-codes), 256 byte tokens, the 16 kHz / 12.5 Hz /
    128-mel audio section, 30 s chunks."""
    import base64
    import json

    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    specials = {
        info["rank"]: str(getattr(info["token_str"], "value", info["token_str"]))
        for info in Tekkenizer.DEPRECATED_SPECIAL_TOKENS
    }
    specials.update(VOXTRAL_SPECIALS)
    special_tokens = [
        {"rank": rank, "token_str": specials.get(rank, f"<SPECIAL_{rank}>"), "is_control": True}
        for rank in range(TEKKEN_SPECIALS)
    ]
    vocab = [
        {"rank": byte, "token_bytes": base64.b64encode(bytes([byte])).decode(), "token_str": None}
        for byte in range(256)
    ]
    data = {
        "config": {
            "pattern": r"\s+|\S+",
            "num_vocab_tokens": 256,
            "default_vocab_size": TEKKEN_SPECIALS + 256,
            "default_num_special_tokens": TEKKEN_SPECIALS,
            "version": "v7",
        },
        "vocab": vocab,
        "special_tokens": special_tokens,
        "audio": {
            "sampling_rate": 16000,
            "frame_rate": 12.5,
            "audio_encoding_config": {"num_mel_bins": MEL_BINS, "hop_length": 160, "window_size": 400},
            "chunk_length_s": 30.0,
        },
    }
    path = Path(path)
    path.write_text(json.dumps(data))
    return path


def build_tiny_voxtral(folder: str | os.PathLike, seed: int = 0) -> Path:
    """Save a random-weight Voxtral and its real VoxtralProcessor (mistral-common tokenizer) to `folder`.

    The tokenizer is MistralCommonBackend over a tiny tekken.json (`write_tiny_tekken`); the
    feature extractor WhisperFeatureExtractor with 128 mel bins; needs mistral-common, so it
    runs in .venv-voxtral.
    """
    import torch
    from transformers import (
        MistralCommonBackend,
        VoxtralConfig,
        VoxtralForConditionalGeneration,
        VoxtralProcessor,
        WhisperFeatureExtractor,
    )

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tekken = write_tiny_tekken(folder / "tekken.json")
    tokenizer = MistralCommonBackend(tokenizer_path=str(tekken))
    processor = VoxtralProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=MEL_BINS), tokenizer=tokenizer
    )
    text = {
        "model_type": "llama",
        "vocab_size": TEKKEN_SPECIALS + 256,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "max_position_embeddings": 32768,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "pad_token_id": 11,
        "tie_word_embeddings": False,
    }
    config = VoxtralConfig(
        audio_config=_audio_encoder(encoder_ffn_dim=4 * 16),  # = intermediate_size: 4 frames per token
        text_config=text,
        audio_token_id=24,
    )
    torch.manual_seed(seed)
    model = VoxtralForConditionalGeneration(config).eval()

    class _Ids:
        eos_token_id, pad_token_id = 2, 11

    _save_generation_config(model, _Ids, folder)
    processor.save_pretrained(folder)
    return folder


def build_tiny_image_text(
    folder: str | os.PathLike, seed: int = 0, image_size: int = 28, hidden_size: int = 32, layers: int = 2
) -> Path:
    """Save a random-weight LLaVA (CLIP vision tower, Qwen2 text model) and its real LlavaProcessor.

    The family ``image_text`` on a CPU in the main venv: CLIPImageProcessor falls back to its
    PIL implementation without torchvision. By default 28 px images, 14 px patches: 4 image
    tokens per frame (the CLS feature dropped, the released LLaVA's ``default`` strategy);
    `image_size`, `hidden_size` and `layers` (of the text model) scale it up for benchmarks.
    """
    import torch
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    folder = Path(folder)
    tokenizer = build_tokenizer(CHATML_TEMPLATE)
    size = int(image_size)
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": size}, crop_size={"height": size, "width": size}
        ),
        tokenizer=tokenizer,
        chat_template=CHATML_TEMPLATE,
        patch_size=14,
        vision_feature_select_strategy="default",
        image_token="<|IMAGE|>",
        num_additional_image_tokens=1,
    )
    vision = {
        "model_type": "clip_vision_model",
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": size,
        "patch_size": 14,
        "projection_dim": 16,
    }
    text = _text_config(tokenizer)
    if hidden_size != 32 or layers != 2:
        text.update(hidden_size=hidden_size, intermediate_size=2 * hidden_size, num_hidden_layers=layers)
        text.update(
            num_attention_heads=max(4, hidden_size // 64), num_key_value_heads=max(2, hidden_size // 128)
        )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<|IMAGE|>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    _save_generation_config(model, tokenizer, folder)
    processor.save_pretrained(folder)
    return folder


def write_frames(folder: str | os.PathLike, count: int, size: tuple[int, int] = (48, 64)) -> list[Path]:
    """`count` JPEG frames (distinct seeded noise images) named as a judge window's frames."""
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(count)
    paths = []
    for k in range(count):
        path = folder / f"{k:03d}.jpg"
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(path, quality=90)
        paths.append(path)
    return paths


def build_tiny_chat(folder: str | os.PathLike, seed: int = 0, architecture: str = "qwen2") -> Path:
    """Save a random-weight causal LM (`qwen2` or `llama`) and the tiny tokenizer to `folder`."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    folder = Path(folder)
    tokenizer = build_tokenizer()
    settings = _text_config(tokenizer, architecture)
    settings.pop("model_type")
    config_class = {"qwen2": Qwen2Config, "llama": LlamaConfig}[architecture]
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config_class(**settings)).eval()
    _save_generation_config(model, tokenizer, folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_tone_wav(
    path: str | os.PathLike, seconds: float = 1.5, sampling_rate: int = 16000, frequency: float = 220.0
) -> Path:
    """A mono sine tone with a little seeded noise, as a 16-bit WAV."""
    import soundfile as sf

    t = np.arange(int(seconds * sampling_rate)) / sampling_rate
    noise = np.random.default_rng(0).normal(0, 0.01, t.size)
    signal = 0.3 * np.sin(2 * np.pi * frequency * t) + noise
    sf.write(str(path), signal.astype(np.float32), sampling_rate, subtype="PCM_16")
    return Path(path)
