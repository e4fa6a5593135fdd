"""Local Hugging Face models behind the `Backend` interface.

Five families, each a (model class, processor class, prompt layout) triple:

- ``qwen2_5_omni``: the *thinker* of Qwen2.5-Omni (text out only, no talker), with video
  frames and the audio track of the same video (``use_audio_in_video=True``), or audio,
  or text alone;
- ``qwen2_audio``: Qwen2-Audio(-Instruct), audio + text;
- ``voxtral``: Voxtral, audio + text through the processor's ``apply_chat_template``
  (needs the ``mistral-common`` package for its tokenizer);
- ``image_text``: any ``AutoModelForImageTextToText`` checkpoint with an ``AutoProcessor``
  and a chat template (LLaVA, Qwen2.5-VL, Gemma 3, ...): images + text; a video is sent as
  its frames (`VIDEO_FPS`, at most `IMAGE_TEXT_MAX_FRAMES`), as the OpenAI-compatible backend
  does in ``frames`` mode;
- ``chat``: any causal LM with a tokenizer (text only).

Frame lists: a request whose media are images (key ``image``, or ``image:000``,
``image:001``, ... = the frames of one window in time order, the layout the LLM judges send,
`judges.replies.FRAME_KEY`) goes to ``qwen2_5_omni`` and ``image_text`` as one image part per
frame, in key order, so temporal judging runs on a local judge as on API judges. Families
that take no images (``qwen2_audio``, ``voxtral``, ``chat``) refuse such a request with an
error reply. The entry's modalities say ``video`` for a frames judge (the schema has no
``image`` modality: frames are a video's).

Weights come from a local folder, or from the local Hugging Face cache when
`model_path` is a repo id; nothing is ever downloaded (``local_files_only=True`` and
``HF_HUB_OFFLINE=1``). Decoding is greedy (``do_sample=False``) with ``torch.manual_seed``
set before every batch. Requests are generated in batches of `batch_size` with left
padding; note that on a GPU, padding can change greedy outputs in the last bits relative to
batch size 1, so `batch_size` is part of the run's settings to record.

Streaming (`omnisocial.streaming`: the same clip asked again at t_1 < t_2 < ..., each step's
media the prefix [0, t_k]). What each family can reuse from one step to the next:
- ``image_text`` with ``options.reuse_prefix: true``: the KV cache of the prompt up to the
  last frame both steps share. Each frame is encoded on its own by the vision tower and the
  text model uses 1-D positions, so the keys and values of [system, frames 1..c] do not
  depend on what follows; a step prefills only its new frames and the prompt. Frames are
  matched by content (sha256 of the decoded pixels) and the tokens before them must be
  equal, so a changed frame, a sliding window that drops frames at the front, or a video
  long enough that its frame rate is lowered (more than `IMAGE_TEXT_MAX_FRAMES` frames at
  `VIDEO_FPS`) simply reuses less. Batches of one only, models whose processor gives one
  pixel tensor per frame and no image grid (LLaVA-like; Qwen2.5-VL's M-RoPE positions
  depend on the grid: no reuse, as without the option). The last `PREFIX_STREAMS` streams
  are kept; a step takes over the cache it extends, and copies one it only partly shares.
  Greedy replies equal those without reuse up to float rounding of the prefill (the option
  is part of the cache fingerprint). `benchmarks/bench_streaming_steps.py`
  measures the ratio.
- ``qwen2_audio``: nothing. Its Whisper encoder attends over the whole 30 s input window
  (padded), bidirectionally, so appending audio changes the encoding of every earlier
  frame; the audio tokens, and so every key and value after the first, differ per step.
- ``voxtral``: nothing in clips up to 30 s (the benchmarks' clips are up to 60 s): audio is
  encoded in 30 s chunks, bidirectionally within a chunk, so only complete earlier chunks
  would keep their encoding; not implemented.
- ``qwen2_5_omni``: nothing. With the audio of the video, audio and video tokens are
  interleaved in 2 s chunks under time-aligned M-RoPE positions, and the video's frames are
  merged two by two (temporal patch 2); appending media rewrites the last chunk and the
  positions of the prompt after it, and the processor runs only in .venv-omni.
- ``chat``: no media; a step's prompt is its text only.

Correctness guards: Qwen2.5-Omni needs transformers >= 5.23 (earlier releases silently drop
the audio track of a video: the prompt gets 0 audio tokens and generation runs anyway), and
every video batch is checked at run time to hold audio tokens; Voxtral fails at load, saying
what to install, when ``mistral-common`` is absent (without it every call would fail with a
misleading chat-template error). Greedy means greedy: the checkpoint's generation config is
replaced by one that keeps only its token ids, so a shipped ``repetition_penalty``, ``top_k``
etc. cannot act; what was dropped is recorded in each call's settings. The cache fingerprint
covers the weights, the checkpoint's configuration files (generation config, processor and
tokenizer configs, chat template) and the backend options, so editing any re-runs the calls.
``options.attn_implementation`` (eager, sdpa, flash_attention_2) picks the attention kernels.

Placement: ``device='auto'`` picks cuda when available (bfloat16 where supported), else cpu
(float32). The model goes to that device with ``.to(device)``; with ``device='auto'``, a GPU
and the ``accelerate`` package installed it is instead sharded with ``device_map='auto'``
(transformers requires accelerate for any device_map).

Audio is decoded at the processor's sampling rate, mono (`transformers_media`, with a video's
frames and a frame list's images); the checkpoint's folder, fingerprints, release and package
checks and the greedy generation config are `transformers_weights`; both are re-exported here.
A request that fails (bad media, out of memory, a model error) comes back as a `Reply`
with `error` set; the rest of its batch is retried one item at a time.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omnisocial.models.base import Reply, Request
from omnisocial.models.transformers_media import (
    SOUNDFILE_SUFFIXES,
    VIDEO_FPS,
    VIDEO_MAX_FRAMES,
    is_frame_key,
    load_audio,
    load_frames,
    load_video_frames,
    wav_base64,
)
from omnisocial.models.transformers_weights import (
    CONFIG_SUFFIXES,
    FAMILY_PACKAGES,
    KEPT_GENERATION_FIELDS,
    MIN_TRANSFORMERS,
    WEIGHT_SUFFIXES,
    check_audio_tokens,
    check_family_packages,
    check_transformers_version,
    config_files,
    config_fingerprint,
    greedy_generation_config,
    resolve_model_dir,
    weight_files,
    weights_fingerprint,
)

__all__ = [  # this module's API, the names it re-exports from its two parts included
    "ATTN_IMPLEMENTATIONS",
    "CONFIG_SUFFIXES",
    "DEFAULT_MAX_NEW_TOKENS",
    "DEFAULT_MODALITIES",
    "DEFAULT_SEED",
    "FAMILIES",
    "FAMILY_PACKAGES",
    "FRAME_FAMILIES",
    "IMAGE_TEXT_MAX_FRAMES",
    "KEPT_GENERATION_FIELDS",
    "MIN_TRANSFORMERS",
    "OPTIONS",
    "PREFIX_STREAMS",
    "QWEN_OMNI_SYSTEM",
    "SOUNDFILE_SUFFIXES",
    "VIDEO_FPS",
    "VIDEO_MAX_FRAMES",
    "WEIGHT_SUFFIXES",
    "TransformersBackend",
    "check_audio_tokens",
    "check_family_packages",
    "check_transformers_version",
    "config_files",
    "config_fingerprint",
    "frame_ends",
    "frame_hash",
    "greedy_generation_config",
    "is_frame_key",
    "load_audio",
    "load_frames",
    "load_video_frames",
    "resolve_model_dir",
    "shared_frames",
    "wav_base64",
    "weight_files",
    "weights_fingerprint",
]

FAMILIES = ("qwen2_5_omni", "qwen2_audio", "voxtral", "image_text", "chat")
DEFAULT_MODALITIES = {
    "qwen2_5_omni": ("text", "audio", "video"),
    "qwen2_audio": ("text", "audio"),
    "voxtral": ("text", "audio"),
    "image_text": ("text", "video"),
    "chat": ("text",),
}
FRAME_FAMILIES = ("qwen2_5_omni", "image_text")  # families that take images (frame lists)
IMAGE_TEXT_MAX_FRAMES = 32  # frames of a video for image_text (the OpenAI frames mode's default)
DEFAULT_SEED = 42
DEFAULT_MAX_NEW_TOKENS = 256
# Qwen2.5-Omni's model card asks for this exact system prompt when audio is in the input.
QWEN_OMNI_SYSTEM = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)
OPTIONS = ("family", "device", "dtype", "batch_size", "attn_implementation", "reuse_prefix")
PREFIX_STREAMS = 16  # reuse_prefix: KV caches of the last 16 streams (one per item) kept
ATTN_IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2")


# --- the backend ---------------------------------------------------------------------------


@dataclass
class _Prepared:
    """One request turned into model-ready pieces (media decoded, settings resolved)."""

    index: int
    request: Request
    kind: str  # "text", "audio", "video" or "frames"
    max_new_tokens: int
    audio: np.ndarray | None = None
    video: np.ndarray | None = None
    frames: list | None = None  # PIL images, in time order ("frames")


@dataclass
class _PrefixCache:
    """The KV cache of one stream's prompt up to its last frame (`reuse_prefix`)."""

    frames: tuple[str, ...]  # sha256 of each frame's pixels, in order
    ids: list[int]  # the prompt's token ids up to the end of the last frame
    cache: object  # a transformers DynamicCache holding exactly len(ids) positions


def frame_hash(frame) -> str:
    return hashlib.sha256(frame.tobytes() + repr(frame.size).encode()).hexdigest()


def frame_ends(ids: list[int], image_token_id: int, n_frames: int) -> list[int] | None:
    """Position after each frame's last image token; None unless every frame has equally many."""
    positions = [k for k, token in enumerate(ids) if token == image_token_id]
    if not n_frames or not positions or len(positions) % n_frames:
        return None
    per = len(positions) // n_frames
    return [positions[(j + 1) * per - 1] + 1 for j in range(n_frames)]


def shared_frames(entry: _PrefixCache, frames: tuple[str, ...], ids: list[int], ends: list[int]) -> int:
    """How many leading frames `entry` shares with a request (their tokens equal up to there)."""
    count = 0
    for old, new in zip(entry.frames, frames, strict=False):
        if old != new:
            break
        count += 1
    while count and entry.ids[: ends[count - 1]] != ids[: ends[count - 1]]:
        count -= 1
    return count


def _keep(cache, length: int) -> None:
    """Cut a DynamicCache back to its first `length` positions (its crop takes what to remove)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


class TransformersBackend:
    """A local transformers model; see the module docstring for the four families.

    Built either from arguments, or from a validated registry entry (the registry calls
    ``TransformersBackend(entry)``): ``model`` is the path or cached repo id, ``modalities``
    and ``generation`` are read from the entry, and ``options`` holds ``family`` (required),
    ``device``, ``dtype``, ``batch_size`` and ``attn_implementation``.
    """

    concurrency = 1  # one generate call at a time: the model is not shared across threads

    def __init__(
        self,
        model_path: str | os.PathLike | Mapping,
        family: str | None = None,
        modalities: Sequence[str] | None = None,
        generation: dict | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int | None = None,
        name: str | None = None,
        attn_implementation: str | None = None,
        reuse_prefix: bool = False,
    ):
        if isinstance(model_path, Mapping):
            entry = model_path
            options = dict(entry.get("options") or {})
            unknown = sorted(set(options) - set(OPTIONS))
            if unknown:
                raise ValueError(f"model {entry.get('name')!r}: unknown transformers option(s) {unknown}")
            if "family" not in options:
                raise ValueError(
                    f"model {entry.get('name')!r}: options.family is required ({', '.join(FAMILIES)})"
                )
            model_path, family = entry["model"], options["family"]
            modalities = modalities or entry.get("modalities")
            generation = generation if generation is not None else entry.get("generation")
            device = options.get("device", device)
            dtype = options.get("dtype", dtype)
            batch_size = options.get("batch_size", batch_size)
            attn_implementation = options.get("attn_implementation", attn_implementation)
            reuse_prefix = options.get("reuse_prefix", reuse_prefix)
            name = name or entry.get("name")
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
        if attn_implementation is not None and attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ValueError(
                f"unknown attn_implementation {attn_implementation!r}; expected one of "
                f"{', '.join(ATTN_IMPLEMENTATIONS)}"
            )
        self.attn_implementation = attn_implementation
        if not isinstance(reuse_prefix, bool):
            raise ValueError(f"options.reuse_prefix must be true or false, got {reuse_prefix!r}")
        if reuse_prefix and family != "image_text":
            raise ValueError(f"options.reuse_prefix: family {family} reuses nothing across steps")
        self.reuse_prefix = reuse_prefix
        self._prefixes: OrderedDict[tuple, _PrefixCache] = OrderedDict()
        self.prefix_stats = {"steps": 0, "reused_frames": 0, "frames": 0}
        allowed = DEFAULT_MODALITIES[family]
        chosen = tuple(modalities) if modalities else allowed
        extra = [m for m in chosen if m not in allowed]
        if extra:
            raise ValueError(f"family {family} cannot take modality {', '.join(extra)} (it takes {allowed})")
        generation = dict(generation or {})
        if float(generation.get("temperature", 0.0) or 0.0) > 0:
            raise ValueError("local models decode greedily: generation.temperature must be 0")
        self.model_path = str(model_path)
        self.family = family
        self.modalities = chosen
        self.generation = generation
        self.seed = int(generation.get("seed", DEFAULT_SEED))
        self.max_new_tokens = int(generation.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))
        self.batch_size = int(batch_size if batch_size is not None else generation.get("batch_size", 1))
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.requested_device = device
        self.requested_dtype = dtype
        self.name = name or f"{family}:{Path(self.model_path).name}"
        self._model_dir: Path | None = None
        self._fingerprint: str | None = None
        self._model = None
        self._processor = None
        self._tokenizer = None
        self.device: str | None = None
        self.dtype = None
        self.dropped_generation: dict = {}  # the checkpoint's sampling fields greedy decoding ignores

    # -- identity ----------------------------------------------------------------------

    @property
    def model_dir(self) -> Path:
        if self._model_dir is None:
            self._model_dir = resolve_model_dir(self.model_path)
        return self._model_dir

    def fingerprint(self) -> str:
        """sha256 of the weights, the checkpoint's config files and the options that change outputs."""
        if self._fingerprint is None:
            payload = {
                "weights": weights_fingerprint(self.model_dir),
                "configs": config_fingerprint(self.model_dir),
                "family": self.family,
                "generation": self.generation,
                "attn_implementation": self.attn_implementation,
            }
            if self.reuse_prefix:  # prefill in two parts: equal up to float rounding, so its own key
                payload["reuse_prefix"] = True
            encoded = json.dumps(payload, sort_keys=True, default=str).encode()
            self._fingerprint = hashlib.sha256(encoded).hexdigest()
        return self._fingerprint

    def settings_for(self, request: Request) -> dict:
        """Effective settings of a call (recorded beside each reply by the runner)."""
        settings = {**self.generation, **request.settings}
        settings.update(
            seed=self.seed,
            max_new_tokens=int(settings.get("max_new_tokens", self.max_new_tokens)),
            do_sample=False,
            batch_size=self.batch_size,
            dtype=str(self.dtype or self.requested_dtype),
            device=str(self.device or self.requested_device),
            attn_implementation=str(self.attn_implementation or "default"),
        )
        if self.dropped_generation:
            settings["checkpoint_generation_ignored"] = dict(self.dropped_generation)
        return settings

    # -- loading -----------------------------------------------------------------------

    def _resolve_device_dtype(self):
        import torch

        device = self.requested_device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = self.requested_dtype
        if isinstance(dtype, torch.dtype):
            resolved = dtype
        elif dtype in (None, "auto"):
            if device.startswith("cuda") and torch.cuda.is_bf16_supported():
                resolved = torch.bfloat16
            elif device.startswith("cuda"):
                resolved = torch.float16
            else:
                resolved = torch.float32
        else:
            aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}
            resolved = getattr(torch, aliases.get(str(dtype), str(dtype)), None)
            if not isinstance(resolved, torch.dtype):
                raise ValueError(f"unknown dtype {dtype!r}")
        return device, resolved

    def load(self) -> None:
        """Load processor/tokenizer and weights (once) onto the chosen device."""
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import importlib.util

        check_family_packages(self.family)
        import transformers

        check_transformers_version(self.family, transformers.__version__)

        device, dtype = self._resolve_device_dtype()
        path = str(self.model_dir)
        common = {"local_files_only": True}
        load_kwargs = {"dtype": dtype, **common}
        if self.attn_implementation:
            load_kwargs["attn_implementation"] = self.attn_implementation
        # One device: place with .to(device). Several GPUs with device='auto' and accelerate
        # installed: shard with device_map='auto' (transformers requires accelerate for any
        # device_map).
        use_device_map = (
            self.requested_device == "auto"
            and device == "cuda"
            and importlib.util.find_spec("accelerate") is not None
        )
        if use_device_map:
            load_kwargs["device_map"] = "auto"

        if self.family == "chat":
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, **common)
            model = transformers.AutoModelForCausalLM.from_pretrained(path, **load_kwargs)
            processor = None
        elif self.family == "qwen2_audio":
            processor = transformers.AutoProcessor.from_pretrained(path, **common)
            tokenizer = processor.tokenizer
            model = transformers.Qwen2AudioForConditionalGeneration.from_pretrained(path, **load_kwargs)
        elif self.family == "voxtral":
            processor = transformers.AutoProcessor.from_pretrained(path, **common)
            tokenizer = processor.tokenizer
            model = transformers.VoxtralForConditionalGeneration.from_pretrained(path, **load_kwargs)
        elif self.family == "image_text":
            processor = transformers.AutoProcessor.from_pretrained(path, **common)
            tokenizer = processor.tokenizer
            model = transformers.AutoModelForImageTextToText.from_pretrained(path, **load_kwargs)
        else:  # qwen2_5_omni: the thinker alone, from a full Omni checkpoint or a thinker-only one
            processor = transformers.Qwen2_5OmniProcessor.from_pretrained(path, **common)
            tokenizer = processor.tokenizer
            config = transformers.AutoConfig.from_pretrained(path, **common)
            thinker_config = getattr(config, "thinker_config", config)
            model = transformers.Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(
                path, config=thinker_config, **load_kwargs
            )
        if not use_device_map:
            model = model.to(device)
        self._adopt(model, processor, tokenizer)
        self.device = str(next(model.parameters()).device) if use_device_map else device
        self.dtype = dtype

    def _adopt(self, model, processor, tokenizer) -> None:
        """Evaluation mode, greedy generation config (dropped sampling fields recorded), left padding."""
        model.eval()
        model.generation_config, self.dropped_generation = greedy_generation_config(
            getattr(model, "generation_config", None)
        )
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._model, self._processor, self._tokenizer = model, processor, tokenizer

    def attach(self, model, processor, tokenizer) -> None:
        """Use a model built in memory instead of loading `model_path` (benchmarks build random-weight
        models with the released shapes directly on the GPU). The same greedy and padding set-up."""
        self._adopt(model, processor, tokenizer)
        parameter = next(model.parameters())
        self.device, self.dtype = str(parameter.device), parameter.dtype
        self._fingerprint = f"in-memory:{type(model).__name__}"

    @property
    def sampling_rate(self) -> int:
        extractor = getattr(self._processor, "feature_extractor", None)
        return int(getattr(extractor, "sampling_rate", 16000))

    # -- requests ----------------------------------------------------------------------

    def _prepare(self, index: int, request: Request) -> _Prepared:
        settings = {**self.generation, **request.settings}
        if float(settings.get("temperature", 0.0) or 0.0) > 0:
            raise ValueError("local models decode greedily; temperature must be 0")
        max_new_tokens = int(settings.get("max_new_tokens", self.max_new_tokens))
        unknown = [m for m in request.media if m not in ("audio", "video") and not is_frame_key(m)]
        if unknown:
            raise ValueError(f"unknown media kind(s): {', '.join(unknown)}")
        frame_keys = sorted(m for m in request.media if is_frame_key(m))  # image:NNN sort in time order
        wanted = [m for m in request.media if m not in self.modalities and not is_frame_key(m)]
        if frame_keys and (self.family not in FRAME_FAMILIES or "video" not in self.modalities):
            wanted.append(f"images ({len(frame_keys)} frames)")
        if wanted:
            raise ValueError(f"{self.name} does not take {', '.join(wanted)} (it takes {self.modalities})")
        prepared = _Prepared(index=index, request=request, kind="text", max_new_tokens=max_new_tokens)
        media = request.media
        if frame_keys:
            if "video" in media:
                raise ValueError("a request holds either a video or a frame list, not both")
            prepared.kind = "frames"
            prepared.frames = load_frames([media[key] for key in frame_keys])
            if "audio" in media:  # only qwen2_5_omni takes audio (checked above)
                prepared.audio = load_audio(media["audio"], self.sampling_rate)
        elif self.family == "image_text" and "video" in media:
            # as the OpenAI frames mode: the rate lowered so a long clip gives IMAGE_TEXT_MAX_FRAMES
            # spread over all of it (a streamed prefix's newest frames are never cut off)
            from PIL import Image

            from omnisocial.models.media_io import sample_frames

            jpegs = sample_frames(media["video"], VIDEO_FPS, IMAGE_TEXT_MAX_FRAMES)
            prepared.kind = "frames"
            prepared.frames = [Image.open(io.BytesIO(jpeg)).convert("RGB") for jpeg in jpegs]
        elif self.family == "qwen2_5_omni" and "video" in media:
            prepared.kind = "video"
            prepared.video = load_video_frames(media["video"])
            prepared.audio = load_audio(media["video"], self.sampling_rate)
        elif "audio" in media or "video" in media:
            # audio-only families given a video take its audio track
            prepared.kind = "audio"
            prepared.audio = load_audio(media.get("audio", media.get("video")), self.sampling_rate)
        return prepared

    def _conversation(self, item: _Prepared) -> list[dict]:
        request = item.request
        if self.family == "chat":
            messages = [{"role": "system", "content": request.system}] if request.system else []
            return messages + [{"role": "user", "content": request.prompt}]
        if self.family == "voxtral":
            # The system text is folded into the user turn: Voxtral's template is user/assistant.
            text = f"{request.system}\n\n{request.prompt}" if request.system else request.prompt
            content: list[dict] = []
            if item.audio is not None:
                content.append({"type": "audio", "base64": wav_base64(item.audio, self.sampling_rate)})
            content.append({"type": "text", "text": text})
            return [{"role": "user", "content": content}]
        content = []
        if item.kind == "frames":
            content.extend({"type": "image"} for _ in item.frames)
            if item.audio is not None:
                content.append({"type": "audio", "audio": str(request.media["audio"])})
        elif item.kind == "video":
            content.append({"type": "video", "video": str(request.media["video"])})
        elif item.kind == "audio":
            source = str(request.media.get("audio", request.media.get("video")))
            content.append({"type": "audio", "audio": source, "audio_url": source})
        content.append({"type": "text", "text": request.prompt})
        messages = []
        if self.family == "qwen2_5_omni":
            system = request.system or QWEN_OMNI_SYSTEM
            messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
        elif self.family == "image_text" and request.system:  # HF multimodal templates: list contents
            messages.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
        elif request.system:  # without one, Qwen2-Audio's template adds its default system turn
            messages.append({"role": "system", "content": request.system})
        return messages + [{"role": "user", "content": content}]

    def _inputs(self, items: list[_Prepared]):
        """Tokenized, padded (left) model inputs for a homogeneous batch."""
        conversations = [self._conversation(item) for item in items]
        kind = items[0].kind
        if self.family == "chat":
            tokenizer = self._tokenizer
            if tokenizer.chat_template:
                texts = [
                    tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
                    for c in conversations
                ]
            else:
                texts = ["\n\n".join(m["content"] for m in c if m["content"]) + "\n" for c in conversations]
            return tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False), {}
        processor = self._processor
        if self.family == "voxtral":
            # VoxtralProcessor's defaults already tokenize, pad and return a dict of tensors
            return processor.apply_chat_template(conversations), {}
        texts = [
            processor.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
            for c in conversations
        ]
        kwargs = {"text": texts, "return_tensors": "pt", "padding": True}
        generate_kwargs = {}
        if kind == "frames":
            kwargs["images"] = [item.frames for item in items]
        if kind in ("audio", "video") or (kind == "frames" and items[0].audio is not None):
            kwargs["audio"] = [item.audio for item in items]
            kwargs["sampling_rate"] = self.sampling_rate
        if kind == "video":
            kwargs["videos"] = [item.video for item in items]
            kwargs["audio_from_video_indices"] = list(range(len(items)))
            kwargs["load_audio_from_video"] = True
            kwargs["videos_kwargs"] = {"fps": VIDEO_FPS}
            generate_kwargs["use_audio_in_video"] = True
        return processor(**kwargs), generate_kwargs

    def _run_batch(self, items: list[_Prepared]) -> list[str]:
        import torch

        inputs, generate_kwargs = self._inputs(items)
        if generate_kwargs.get("use_audio_in_video"):
            check_audio_tokens(
                inputs["input_ids"], self._model.config.audio_token_id, [i.request.item_id for i in items]
            )
        inputs = inputs.to(self.device)
        for key, value in inputs.items():
            if torch.is_tensor(value) and value.is_floating_point():
                inputs[key] = value.to(self.dtype)
        tokenizer = self._tokenizer
        reuse = self.reuse_prefix and len(items) == 1 and items[0].kind == "frames"
        torch.manual_seed(self.seed)
        with torch.inference_mode():
            if reuse:
                output = self._generate_reusing(items[0], inputs)
            else:
                output = self._model.generate(
                    **inputs,
                    **generate_kwargs,
                    max_new_tokens=items[0].max_new_tokens,
                    do_sample=False,
                    num_beams=1,
                    pad_token_id=tokenizer.pad_token_id,
                )
        sequences = output if torch.is_tensor(output) else output.sequences
        new_tokens = sequences[:, inputs["input_ids"].shape[1] :]
        return [text.strip() for text in tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]

    def _generate_reusing(self, item: _Prepared, inputs):
        """`generate` on top of the KV cache of the frames this stream already prefilled (module doc)."""
        from transformers import DynamicCache

        ids = inputs["input_ids"][0].tolist()
        frames = tuple(frame_hash(frame) for frame in item.frames)
        ends = frame_ends(ids, self._model.config.image_token_id, len(frames))
        pixels = inputs.get("pixel_values")
        options = {
            "max_new_tokens": item.max_new_tokens,
            "do_sample": False,
            "num_beams": 1,
            "pad_token_id": self._tokenizer.pad_token_id,
        }
        if ends is None or "image_grid_thw" in inputs or pixels is None or pixels.shape[0] != len(frames):
            return self._model.generate(**inputs, **options)  # this model's layout allows no reuse
        best, shared = None, 0
        for key, entry in self._prefixes.items():
            count = shared_frames(entry, frames, ids, ends)
            if count > shared:
                best, shared = key, count
        if best is not None:
            entry = self._prefixes[best]
            if shared == len(entry.frames):  # this step continues that stream: take its cache over
                cache = self._prefixes.pop(best).cache
            else:  # another stream, or a changed frame: copy, so that stream keeps its own
                cache = copy.deepcopy(entry.cache)
            _keep(cache, ends[shared - 1])
        else:
            cache = DynamicCache(config=self._model.config.get_text_config())
        rest = {k: v for k, v in inputs.items() if k != "pixel_values"}
        if shared < len(frames):
            rest["pixel_values"] = pixels[shared:]  # only the new frames go through the vision tower
        output = self._model.generate(**rest, cache=cache, **options)
        _keep(cache, ends[-1])
        self._prefixes[frames] = _PrefixCache(frames, ids[: ends[-1]], cache)
        while len(self._prefixes) > PREFIX_STREAMS:
            self._prefixes.popitem(last=False)
        self.prefix_stats["steps"] += 1
        self.prefix_stats["frames"] += len(frames)
        self.prefix_stats["reused_frames"] += shared
        return output

    def generate(self, requests: list[Request]) -> list[Reply]:
        replies: list[Reply | None] = [None] * len(requests)
        if not requests:
            return []
        try:
            self.load()
        except Exception as exc:
            message = f"loading {self.model_path} failed: {_error_text(exc)}"
            return [Reply(text=None, error=message) for _ in requests]
        prepared: list[_Prepared] = []
        for index, request in enumerate(requests):
            try:
                prepared.append(self._prepare(index, request))
            except Exception as exc:
                replies[index] = Reply(text=None, error=_error_text(exc))
        groups: dict[tuple[str, int], list[_Prepared]] = {}
        for item in prepared:
            # frames with and without audio do not share a processor call
            kind = f"{item.kind}+audio" if item.kind == "frames" and item.audio is not None else item.kind
            groups.setdefault((kind, item.max_new_tokens), []).append(item)
        try:
            version = f"{self.family}:{self.fingerprint()[:16]}"
        except Exception:  # weights in a format we do not hash: the replies still count
            version = self.family
        for group in groups.values():
            for start in range(0, len(group), self.batch_size):
                chunk = group[start : start + self.batch_size]
                for item, reply in self._generate_chunk(chunk, version):
                    replies[item.index] = reply
        return [r if r is not None else Reply(text=None, error="no reply produced") for r in replies]

    def _generate_chunk(self, chunk: list[_Prepared], version: str) -> list[tuple[_Prepared, Reply]]:
        started = time.perf_counter()
        try:
            texts = self._run_batch(chunk)
        except Exception as exc:
            if len(chunk) == 1:
                self._free_memory()
                return [(chunk[0], Reply(text=None, error=_error_text(exc), model_version=version))]
            # one bad item (or memory) must not sink the batch: retry one at a time
            self._free_memory()
            results = []
            for item in chunk:
                results.extend(self._generate_chunk([item], version))
            return results
        latency = (time.perf_counter() - started) / len(chunk)
        return [
            (item, Reply(text=text, latency_s=latency, model_version=version))
            for item, text in zip(chunk, texts, strict=True)
        ]

    @staticmethod
    def _free_memory() -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
