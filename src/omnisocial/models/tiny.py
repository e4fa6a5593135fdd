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
)
WORDS = (
    "[UNK]",
    "system",
    "user",
    "assistant",
    "You",
    "are",
    "a",
    "helpful",
    "assistant.",
    "Audio",
    "1:",
    "Do",
    "the",
    "two",
    "people",
    "know",
    "each",
    "other",
    "?",
    "Answer",
    "in",
    "JSON",
    "with",
    "relationship_label",
    "confidence",
    "and",
    "rationale",
    "FAMILIAR",
    "STRANGER",
    "familiar",
    "strangers",
    "{",
    "}",
    '"relationship_label":',
    '"confidence":',
    '"rationale":',
    '"FAMILIAR"',
    '"STRANGER"',
    ",",
    "0.5",
    "0.8",
    "they",
    "laugh",
    "talk",
    "fast",
    "slow",
    "pause",
    "A:",
    "B:",
    "yes",
    "no",
    "speaker",
    "voice",
    "tone",
    "friends",
    "met",
    "just",
    "I",
    "think",
    "so",
)
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tokenizer():
    """A word-level fast tokenizer with the ChatML and Qwen2-Audio special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {word: index for index, word in enumerate(WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        bos_token=None,
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def _text_config(tokenizer, model_type: str = "qwen2") -> dict:
    return {
        "model_type": model_type,
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 1024,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": None,
        "tie_word_embeddings": False,
    }


def build_tiny_qwen2_audio(folder: str | os.PathLike, seed: int = 0) -> Path:
    """Save a random-weight Qwen2-Audio model and its processor to `folder`; return it.

    Audio encoder: 1 layer, d_model 16, 80 mel bins (the WhisperFeatureExtractor default),
    1500 positions (= 30 s of mel frames, what the encoder checks its input against).
    """
    import torch
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    folder = Path(folder)
    tokenizer = build_tokenizer()
    processor = Qwen2AudioProcessor(feature_extractor=WhisperFeatureExtractor(), tokenizer=tokenizer)
    config = Qwen2AudioConfig(
        audio_config={
            "d_model": 16,
            "encoder_layers": 1,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 32,
            "num_mel_bins": 80,
            "max_source_positions": 1500,
        },
        text_config=_text_config(tokenizer),
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )
    torch.manual_seed(seed)
    model = Qwen2AudioForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


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
    model.save_pretrained(folder)
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
