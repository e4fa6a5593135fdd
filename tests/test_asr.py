"""ASR of untranscribed interactions: a tiny random-weight Whisper through the faster-whisper engine.

The model is built here from scratch (random weights, byte-level tokenizer with every special
token faster-whisper needs) and converted to CTranslate2, so nothing is downloaded. Its text
is garbage by construction: the tests check that the code path runs end to end and returns
well-formed SEGMENTS rows or recorded failures, never an exception.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from omnisocial.familiarity import asr
from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS

SAMPLE_RATE = 16000
N_TIMESTAMPS = 1501  # <|0.00|> .. <|30.00|> in 0.02 s steps
SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nospeech|>",
    "<|notimestamps|>",  # timestamps must follow it directly: timestamp_begin = notimestamps + 1
] + [f"<|{i * 0.02:.2f}|>" for i in range(N_TIMESTAMPS)]


def build_tiny_whisper(folder: Path) -> Path:
    """Random-weight Whisper (d_model 64, 2+2 layers) saved with its tokenizer, converted to CTranslate2."""
    import torch
    from ctranslate2.converters import TransformersConverter
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        GenerationConfig,
        PreTrainedTokenizerFast,
        WhisperConfig,
        WhisperForConditionalGeneration,
    )

    # Byte-level BPE over the 256 byte symbols: any text encodes (faster-whisper encodes " -", " '", ...).
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: i for i, symbol in enumerate(sorted(alphabet))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(SPECIALS)
    ids = {token: tokenizer.token_to_id(token) for token in SPECIALS}
    assert ids["<|endoftext|>"] == len(vocab)
    assert ids["<|0.00|>"] == ids["<|notimestamps|>"] + 1
    vocab_size = tokenizer.get_vocab_size()

    hf_dir = folder / "hf"
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    fast.save_pretrained(hf_dir)
    assert (hf_dir / "tokenizer.json").is_file()

    eot, sot = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    config = WhisperConfig(
        vocab_size=vocab_size,
        num_mel_bins=80,
        d_model=64,
        encoder_layers=2,
        encoder_attention_heads=2,
        decoder_layers=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_source_positions=1500,
        max_target_positions=448,
        pad_token_id=eot,
        bos_token_id=eot,
        eos_token_id=eot,
        decoder_start_token_id=sot,
        suppress_tokens=[],
        begin_suppress_tokens=[eot],
    )
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(config).eval()
    # Fields the CTranslate2 converter reads from the generation config.
    model.generation_config = GenerationConfig(
        decoder_start_token_id=sot,
        eos_token_id=eot,
        pad_token_id=eot,
        bos_token_id=eot,
        suppress_tokens=[],
        begin_suppress_tokens=[eot],
        no_timestamps_token_id=ids["<|notimestamps|>"],
        alignment_heads=[[1, 0], [1, 1]],
        is_multilingual=False,
        max_length=448,
    )
    model.save_pretrained(hf_dir)
    (hf_dir / "preprocessor_config.json").write_text(
        json.dumps(
            {
                "feature_extractor_type": "WhisperFeatureExtractor",
                "feature_size": 80,
                "sampling_rate": SAMPLE_RATE,
                "hop_length": 160,
                "chunk_length": 30,
                "n_fft": 400,
                "n_samples": 30 * SAMPLE_RATE,
                "nb_max_frames": 3000,
                "padding_side": "right",
                "padding_value": 0.0,
                "return_attention_mask": False,
            }
        ),
        encoding="utf-8",
    )
    out = folder / "ct2"
    TransformersConverter(str(hf_dir), copy_files=["tokenizer.json", "preprocessor_config.json"]).convert(
        str(out), quantization="float32"
    )
    return out


def espeak_wav(path: Path, text: str, seconds: float = 3.0) -> Path:
    """A `seconds`-long 16 kHz wav of espeak-ng reading `text` (padded or cut)."""
    raw = path.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-w", str(raw), text], check=True, capture_output=True)
    audio, rate = sf.read(raw, dtype="float32")
    if audio.ndim > 1:
        audio = audio.mean(axis=1)
    positions = np.arange(int(len(audio) * SAMPLE_RATE / rate)) * rate / SAMPLE_RATE
    audio = np.interp(positions, np.arange(len(audio)), audio).astype(np.float32)
    target = int(seconds * SAMPLE_RATE)
    audio = np.pad(audio, (0, max(0, target - len(audio))))[:target]
    sf.write(path, audio, SAMPLE_RATE, subtype="PCM_16")
    raw.unlink()
    return path


def interaction(interaction_id: str, audio_a: str, audio_b: str, has_transcript=False, ok=True) -> dict:
    row = {name: "" for name in INTERACTIONS.names}
    row.update(
        interaction_id=interaction_id,
        n_participants=2,
        participant_a="P0001",
        participant_b="P0002",
        audio_a=audio_a,
        audio_b=audio_b,
        has_transcript=has_transcript,
        ingest_ok=ok,
    )
    return row


def interactions_frame(rows: list[dict]) -> pd.DataFrame:
    return INTERACTIONS.validate(pd.DataFrame(rows, columns=INTERACTIONS.names))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_whisper(tmp_path_factory.mktemp("whisper"))


def params(model: Path | str, engine: str = "faster-whisper") -> dict:
    return {
        "engine": engine,
        "model": str(model),
        "device": "cpu",
        "compute_type": "float32",
        "language": "en",
        "batch_size": 1,
        "cpu_threads": 1,
        "local_files_only": True,
    }


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
@pytest.mark.heavy  # 7 CPU-s
def test_faster_whisper_end_to_end(tiny_model: Path, tmp_path: Path):
    wav_a = espeak_wav(tmp_path / "a.wav", "Would you rather fly or be invisible?")
    wav_b = espeak_wav(tmp_path / "b.wav", "I would rather fly, obviously.")
    frame = interactions_frame(
        [
            interaction("V00_S0001_I00000001", str(wav_a), str(wav_b)),
            # audio b is missing: a recorded failure, not an exception
            interaction("V00_S0002_I00000001", str(wav_a), str(tmp_path / "gone.wav")),
            # has a transcript or is unusable: not transcribed
            interaction("V00_S0003_I00000001", str(wav_a), str(wav_b), has_transcript=True),
            interaction("V00_S0004_I00000001", "", "", ok=False),
        ]
    )
    segments, failures = asr.transcribe_missing(frame, params(tiny_model))

    assert segments.columns.tolist() == SEGMENTS.names
    pd.testing.assert_frame_equal(segments, SEGMENTS.validate(segments))
    assert failures.columns.tolist() == ["interaction_id", "reason"]
    assert "V00_S0002_I00000001" in failures["interaction_id"].tolist()
    reason = failures.set_index("interaction_id").loc["V00_S0002_I00000001", "reason"]
    assert reason.startswith("audio file of speaker b not found")
    assert "V00_S0002_I00000001" not in set(segments["interaction_id"])
    # The random model produced rows for the good interaction, or its failure has a reason.
    good = segments[segments["interaction_id"] == "V00_S0001_I00000001"]
    failed_good = failures[failures["interaction_id"] == "V00_S0001_I00000001"]
    assert len(good) > 0 or (len(failed_good) == 1 and failed_good["reason"].iloc[0] != "")
    assert len(good) == 0 or len(failed_good) == 0
    assert set(segments["interaction_id"]) <= {"V00_S0001_I00000001"}
    assert (good["source"] == "asr").all()
    assert good["speaker"].isin(["a", "b"]).all()
    assert (good["start"] >= 0).all() and (good["end"] > good["start"]).all() and (good["end"] <= 3.0).all()
    assert good["text"].str.strip().str.len().gt(0).all()
    keys = list(zip(segments["interaction_id"], segments["start"], strict=True))
    assert keys == sorted(keys)


def test_nothing_missing_loads_no_model(monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded although nothing is missing")

    monkeypatch.setattr(asr, "load_engine", no_model)
    frame = interactions_frame(
        [
            interaction("V00_S0001_I00000001", "a.wav", "b.wav", has_transcript=True),
            interaction("V00_S0002_I00000001", "", "", ok=False),
        ]
    )
    for engine in asr.ENGINES:
        segments, failures = asr.transcribe_missing(frame, params("no-such-model", engine))
        assert segments.empty and segments.columns.tolist() == SEGMENTS.names
        assert failures.empty and failures.columns.tolist() == ["interaction_id", "reason"]


def test_engine_configuration_errors(tmp_path: Path):
    frame = interactions_frame([interaction("V00_S0001_I00000001", "a.wav", "b.wav")])
    with pytest.raises(asr.AsrError, match="not one of whisperx, faster-whisper"):
        asr.transcribe_missing(frame, params("x", "kaldi"))
    with pytest.raises(asr.AsrError, match="faster-whisper cannot load it"):
        asr.transcribe_missing(frame, params(tmp_path / "no-model-here"))


def test_whisperx_missing_is_a_clear_error(monkeypatch):
    try:
        import whisperx  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("whisperx is installed here")
    monkeypatch.setattr(asr, "asr_venv_python", lambda: None)  # no .venv-asr to hand the work to
    frame = interactions_frame([interaction("V00_S0001_I00000001", "a.wav", "b.wav")])
    with pytest.raises(asr.AsrError, match="whisperx is not installed"):
        asr.transcribe_missing(frame, params("large-v3", "whisperx"))


HAS_WHISPERX = importlib.util.find_spec("whisperx") is not None


def recorded_tracks(folder: Path) -> tuple[Path, Path, dict]:
    """The real recorded conversation as two isolated per-speaker wavs, and its reference turns."""
    from omnisocial.media.recorded import reference_turns, sample_conversation, speaker_tracks

    recording = sample_conversation()
    paths = []
    for speaker, track in speaker_tracks(recording).items():
        paths.append(folder / f"{speaker}.wav")
        sf.write(paths[-1], track, recording.sr, subtype="PCM_16")
    return paths[0], paths[1], reference_turns(recording)


@pytest.mark.local_models
@pytest.mark.skipif(
    not HAS_WHISPERX, reason="whisperx is not installed here: runs in .venv-asr (make venv-asr)"
)
def test_whisperx_transcribes_a_real_recording(tiny_model: Path, tmp_path: Path):
    """whisperx end to end in .venv-asr: its shipped pyannote VAD, batched CTranslate2 decoding."""
    wav_a, wav_b, reference = recorded_tracks(tmp_path)
    engine = asr.load_engine({**params(tiny_model, "whisperx"), "align": False})
    assert engine.describe().startswith("whisperx ")
    for wav, speaker in ((wav_a, "a"), (wav_b, "b")):
        segments, duration = engine.transcribe(wav)
        assert duration == pytest.approx(30.0)
        assert segments, f"no segment on track {speaker}"
        # the segments are whisperx's VAD chunks: they start where this speaker first speaks
        assert segments[0].start == pytest.approx(reference[speaker][0][0], abs=0.3)
        assert all(0 <= s.start < s.end <= 30.0 + 1e-6 for s in segments)
    frame = interactions_frame([interaction("V00_S0001_I00000001", str(wav_a), str(wav_b))])
    rows, failures = asr.transcribe_missing(frame, {**params(tiny_model, "whisperx"), "align": False})
    assert failures.empty
    pd.testing.assert_frame_equal(rows, SEGMENTS.validate(rows))


def build_tiny_wav2vec2(folder: Path) -> Path:
    """Random-weight wav2vec2 CTC (hidden 32, 2 layers) over lower-case letters, with its processor."""
    import torch
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2CTCTokenizer,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForCTC,
        Wav2Vec2Processor,
    )

    folder.mkdir(parents=True, exist_ok=True)
    symbols = ["<pad>", "|", *"abcdefghijklmnopqrstuvwxyz'"]
    (folder / "vocab.json").write_text(json.dumps({symbol: i for i, symbol in enumerate(symbols)}))
    tokenizer = Wav2Vec2CTCTokenizer(
        str(folder / "vocab.json"), pad_token="<pad>", unk_token="<pad>", word_delimiter_token="|"
    )
    extractor = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=SAMPLE_RATE, padding_value=0.0)
    Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer).save_pretrained(folder)
    config = Wav2Vec2Config(
        vocab_size=len(symbols),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(32,) * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    Wav2Vec2ForCTC(config).save_pretrained(folder)
    return folder


@pytest.mark.local_models
@pytest.mark.skipif(
    not HAS_WHISPERX, reason="whisperx is not installed here: runs in .venv-asr (make venv-asr)"
)
def test_whisperx_aligns_words_offline(tiny_model: Path, tmp_path: Path):
    """Word alignment from a local wav2vec2 folder (never downloaded) of the recording's human transcript."""
    from omnisocial.media.recorded import sample_file

    wav_a, _, _ = recorded_tracks(tmp_path)
    aligner = build_tiny_wav2vec2(tmp_path / "wav2vec2")
    engine = asr.load_engine({**params(tiny_model, "whisperx"), "align_model": str(aligner)})
    assert "with alignment" in engine.describe()
    segments, duration = engine.transcribe(wav_a)  # recognition, then alignment of what it found
    assert duration == pytest.approx(30.0)
    model, metadata = engine._aligner("en")
    utterances = [line.split(maxsplit=5) for line in sample_file("sample.stm").read_text().splitlines()]
    first = utterances[0][2]  # the first speaker's human transcript: words to place in time
    reference = [
        {"start": float(u[3]), "end": float(u[4]), "text": u[5]} for u in utterances if u[2] == first
    ]
    audio = engine.whisperx.load_audio(str(wav_a))
    aligned = engine.whisperx.align(reference, model, metadata, audio, "cpu", return_char_alignments=False)
    words = [w for segment in aligned["segments"] for w in segment.get("words", [])]
    assert len(words) == sum(len(u["text"].split()) for u in reference)
    for segment in aligned["segments"]:
        inside = [w for w in segment.get("words", []) if "start" in w]
        assert inside, segment
        starts = [w["start"] for w in inside]
        assert starts == sorted(starts)
        assert segment["start"] - 1e-6 <= starts[0] and inside[-1]["end"] <= segment["end"] + 1e-6


@pytest.mark.local_models
@pytest.mark.skipif(HAS_WHISPERX, reason="whisperx is installed here: nothing to hand over")
@pytest.mark.skipif(asr.asr_venv_python() is None, reason=".venv-asr is not built (make venv-asr)")
@pytest.mark.heavy  # 15 CPU-s
def test_without_whisperx_the_work_goes_to_the_asr_venv(tiny_model: Path, tmp_path: Path, caplog):
    wav_a, wav_b, _ = recorded_tracks(tmp_path)
    frame = interactions_frame([interaction("V00_S0001_I00000001", str(wav_a), str(wav_b))])
    with caplog.at_level("INFO", logger=asr.log.name):
        rows, failures = asr.transcribe_missing(frame, {**params(tiny_model, "whisperx"), "align": False})
    assert failures.empty
    pd.testing.assert_frame_equal(rows, SEGMENTS.validate(rows))
    assert "transcribing in" in caplog.text and "with whisperx" in caplog.text  # the venv's own log
    # a configuration error over there is one here, with its message
    with pytest.raises(asr.AsrError, match="align_model must be a local folder"):
        asr.transcribe_missing(frame, params(tiny_model, "whisperx"))


def test_clean_segments_uses_word_times_and_clips():
    words = (asr.Word(1.2, 1.5, " hi"), asr.Word(1.6, 9.0, " there"), asr.Word(None, None, " 42"))
    raw = [
        asr.Segment(1.0, 2.0, "  hi \x0e  there 42 ", words),
        asr.Segment(2.5, 3.5, "   "),  # no text
        asr.Segment(-0.5, 0.5, "early"),
        asr.Segment(float("nan"), 1.0, "no time"),
        asr.Segment(4.0, 6.0, "past the end"),
        asr.Segment(2.0, 2.0, "no length"),
    ]
    cleaned = asr.clean_segments(raw, duration=4.0)
    assert [(s.start, s.end, s.text) for s in cleaned] == [(1.2, 4.0, "hi there 42"), (0.0, 0.5, "early")]
    assert [s.text for s in asr.clean_segments(raw[4:5], duration=None)] == ["past the end"]


class FakeWhisperX:
    """Records the calls the whisperx engine makes; returns whisperx-shaped results (segments of dicts)."""

    def __init__(self, align_fails: bool = False):
        self.calls: list[tuple] = []
        self.align_fails = align_fails

    def load_model(self, model, device, **kwargs):
        self.calls.append(("load_model", model, device, kwargs))
        fake = self

        class Pipeline:
            def transcribe(self, audio, batch_size=None):
                fake.calls.append(("transcribe", len(audio), batch_size))
                return {
                    "segments": [{"start": 0.0, "end": 2.9, "text": " would you rather"}],
                    "language": "en",
                }

        return Pipeline()

    def load_audio(self, path):
        self.calls.append(("load_audio", Path(path).name))
        return np.zeros(3 * SAMPLE_RATE, dtype=np.float32)

    def load_align_model(self, language_code, device, model_name=None):
        self.calls.append(("load_align_model", language_code, device, model_name))
        if self.align_fails:
            raise OSError("no alignment model offline")
        return object(), {"language": language_code}

    def align(self, segments, model, metadata, audio, device, return_char_alignments=False):
        self.calls.append(("align", len(segments), device, return_char_alignments))
        words = [
            {"word": "would", "start": 0.4, "end": 0.6, "score": 0.9},
            {"word": "you", "start": 0.7, "end": 0.8, "score": 0.9},
            {"word": "rather"},  # whisperx leaves unalignable words untimed
        ]
        return {"segments": [dict(segments[0], words=words)], "word_segments": words}


@pytest.mark.parametrize("align_fails", [False, True])
def test_whisperx_engine_calls(monkeypatch, tmp_path: Path, align_fails: bool):
    fake = FakeWhisperX(align_fails)
    monkeypatch.setitem(sys.modules, "whisperx", fake)
    for name in ("a.wav", "b.wav"):
        sf.write(tmp_path / name, np.zeros(SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE)
    frame = interactions_frame(
        [interaction("V00_S0001_I00000001", str(tmp_path / "a.wav"), str(tmp_path / "b.wav"))]
    )
    aligner = tmp_path / "wav2vec2-en"
    aligner.mkdir()
    config = params("large-v3", "whisperx") | {
        "batch_size": 4,
        "compute_type": "int8",
        "align_model": str(aligner),
    }
    if align_fails:  # the local alignment model cannot be loaded: an error, not segment times
        with pytest.raises(asr.AsrError, match="alignment model .* cannot be loaded"):
            asr.transcribe_missing(frame, config)
        assert not any(c[0] == "align" for c in fake.calls)
        return
    segments, failures = asr.transcribe_missing(frame, config)

    assert failures.empty
    greedy = {
        "beam_size": 1,
        "best_of": 1,
        "patience": 1,
        "temperatures": [0.0],
        "condition_on_previous_text": False,
    }
    assert fake.calls[0] == (
        "load_model",
        "large-v3",
        "cpu",
        {
            "compute_type": "int8",
            "language": "en",
            "asr_options": greedy,
            "local_files_only": True,
            "threads": 1,
        },
    )
    assert ("transcribe", 3 * SAMPLE_RATE, 4) in fake.calls
    # The alignment model is loaded once per language, not once per track, from the local folder.
    assert [c for c in fake.calls if c[0] == "load_align_model"] == [
        ("load_align_model", "en", "cpu", str(aligner.resolve()))
    ]
    assert segments["speaker"].tolist() == ["a", "b"]
    assert segments["text"].tolist() == ["would you rather"] * 2
    # word-level times from the aligned words that have them
    assert segments[["start", "end"]].values.tolist() == [[0.4, 0.8], [0.4, 0.8]]
    assert ("align", 1, "cpu", False) in fake.calls


def test_whisperx_needs_a_local_alignment_folder(monkeypatch, tmp_path: Path):
    monkeypatch.setitem(sys.modules, "whisperx", FakeWhisperX())
    base = params("large-v3", "whisperx")
    for align_model in (None, "WAV2VEC2_ASR_BASE_960H", str(tmp_path / "absent")):
        with pytest.raises(asr.AsrError, match="must be a local folder"):
            asr.WhisperXEngine(base | {"align_model": align_model})
    asr.WhisperXEngine(base | {"align": False})  # segment times only, said in the config


def test_whisperx_alignment_failure_is_recorded(monkeypatch, tmp_path: Path):
    fake = FakeWhisperX()

    def broken_align(*args, **kwargs):
        raise RuntimeError("alignment diverged")

    fake.align = broken_align
    monkeypatch.setitem(sys.modules, "whisperx", fake)
    for name in ("a.wav", "b.wav"):
        sf.write(tmp_path / name, np.zeros(SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE)
    frame = interactions_frame(
        [interaction("V00_S0001_I00000001", str(tmp_path / "a.wav"), str(tmp_path / "b.wav"))]
    )
    (tmp_path / "al").mkdir()
    segments, failures = asr.transcribe_missing(
        frame, params("large-v3", "whisperx") | {"align_model": str(tmp_path / "al")}
    )
    assert segments.empty and failures["reason"].str.contains("alignment diverged").all()
