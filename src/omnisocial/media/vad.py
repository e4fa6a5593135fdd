"""Speech detection with silero-vad, run through onnxruntime on the model the package ships.

The `silero-vad` PyPI package carries two exports of the same 16 kHz network:
`silero_vad.onnx`, the streaming model that takes one 512-sample window (plus the last
64 samples of the previous window as context) and an LSTM state per call, and
`silero_vad_16k_sequence.onnx`, which takes a whole block of such windows and carries the
state inside one call. Both give the same per-window probabilities (the package says
bit-exact; `tests/test_media.py` checks it); the sequence export avoids a Python-level
call per 32 ms window, so it is the default backend. The
streaming export is kept as `backend="stream"` (the reference path, as in the package's
`OnnxWrapper`).

Probabilities become segments with the same hysteresis state machine as the package's
`get_speech_timestamps_from_probs` (without the max-speech-length split, which is not
used here), reimplemented in numpy so that neither torch nor the package's torch-based
helpers are imported; the test suite checks both give the same segments. The study also
runs the network from a fresh state over short stretches and keeps each window's highest
probability (`restart_s`, config `vad.restart_s`; `_restarted` says why). Every function that detects speech
takes the `vad:` block whole, as `omnisocial.settings.Vad`. Two-microphone cross-talk (which of
two microphones' speech is whose) is `omnisocial.media.crosstalk`.

Sessions run on the CPU with one intra-op and one inter-op thread, so parallelism comes
from running interactions in separate processes.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np

from omnisocial.media.audio import resample
from omnisocial.settings import Vad

SAMPLE_RATE = 16000
WINDOW = 512  # samples per model window at 16 kHz (32 ms)
CONTEXT = 64  # samples of the previous window prepended to each window
BLOCK_WINDOWS = 512  # windows per call of the sequence model (about 16 s)
MODEL_FILES = {"sequence": "silero_vad_16k_sequence.onnx", "stream": "silero_vad.onnx"}
SPEECH_PAD_S = 0.03  # silero's padding of each segment (`get_speech_timestamps`; not configured)


def model_path(backend: str = "sequence") -> str:
    """Path of the ONNX file shipped in the installed `silero_vad` package.

    Found from the package's spec, without running its `__init__`: that imports torch (about
    1.5 CPU-s a job) for the PyTorch wrappers this module does not use (onnxruntime runs the file).
    """
    if backend not in MODEL_FILES:
        raise ValueError(f"unknown VAD backend {backend!r}; use one of {sorted(MODEL_FILES)}")
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("silero_vad is not installed (its ONNX models are the VAD)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / MODEL_FILES[backend]
    if not path.is_file():
        raise FileNotFoundError(f"silero_vad ships no {MODEL_FILES[backend]} (looked at {path})")
    return str(path)


@functools.cache
def _session(backend: str):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # the shipped graphs carry unused initializers; silence that warning
    return onnxruntime.InferenceSession(
        model_path(backend), sess_options=options, providers=["CPUExecutionProvider"]
    )


def _windows_with_context(audio: np.ndarray) -> np.ndarray:
    """(n_windows, 576) float32: each 512-sample window prefixed by the previous 64 samples.

    The first window gets zeros as context and the last window is zero-padded, exactly as
    the package's streaming wrapper and sequence front-end do.
    """
    n = (audio.size + WINDOW - 1) // WINDOW
    frames = np.zeros((n, WINDOW), dtype=np.float32)
    frames.reshape(-1)[: audio.size] = audio
    context = np.zeros((n, CONTEXT), dtype=np.float32)
    if n > 1:
        context[1:] = frames[:-1, -CONTEXT:]
    return np.concatenate((context, frames), axis=1)


def speech_probabilities(
    audio: np.ndarray, sr: int, backend: str = "sequence", *, restart_s: float | None
) -> np.ndarray:
    """Silero speech probability for each 32 ms window (512 samples at 16 kHz) of `audio`.

    Audio at another rate is resampled to 16 kHz first. Returns a float32 array with one
    value per window; window i covers [i * 0.032, (i + 1) * 0.032) s.

    With `restart_s` the network also runs from a fresh state over stretches of `restart_s`
    seconds starting every half of it, and each window takes the highest of its
    probabilities (`_restarted`); None: one run over the whole signal, as silero's
    `get_speech_timestamps` does.
    """
    if restart_s is not None and not restart_s > 0:
        raise ValueError(f"vad.restart_s must be positive or null, not {restart_s!r}")
    samples = np.asarray(audio, dtype=np.float32).reshape(-1)
    if sr != SAMPLE_RATE:
        samples = resample(samples, sr, SAMPLE_RATE)
    if samples.size == 0:
        return np.zeros(0, dtype=np.float32)
    blocks = _windows_with_context(samples)
    probs = _run(blocks, backend)
    if restart_s is not None:
        probs = np.maximum(probs, _restarted(blocks, backend, restart_s))
    return probs


def _restarted(blocks: np.ndarray, backend: str, restart_s: float) -> np.ndarray:
    """Per window, the highest probability of the runs from a fresh state over `restart_s`
    stretches that start every half of it (from the second half on; 0 where none covers it).

    Silero's LSTM carries its state over the whole signal, and after seconds of a steady
    hiss it can stay below threshold through a soft utterance that it calls speech with a
    few seconds of context (a real agent's short utterance on a telephone line under a
    -60 dBFS floor, `tests/data/spokenwoz` SNG1640: its probabilities in runs from different
    starts are on docs/performance.md#code; the state is the network's, not the noise's).
    Every window after
    the first `restart_s` is `restart_s / 2` to `restart_s` into one of these runs.
    """
    length = max(2, int(round(restart_s * SAMPLE_RATE / WINDOW)))
    step = length // 2
    out = np.zeros(len(blocks), dtype=np.float32)
    for first in range(step, len(blocks), step):
        probs = _run(blocks[first : first + length], backend)
        out[first : first + probs.size] = np.maximum(out[first : first + probs.size], probs)
    return out


def _run(blocks: np.ndarray, backend: str) -> np.ndarray:
    """Silero's probabilities of consecutive windows (`_windows_with_context`), from a fresh state."""
    session = _session(backend)
    if backend == "sequence":
        hidden = np.zeros((1, 1, 128), dtype=np.float32)
        cell = np.zeros((1, 1, 128), dtype=np.float32)
        parts = []
        for first in range(0, len(blocks), BLOCK_WINDOWS):
            probs, hidden, cell = session.run(
                ["speech_probs", "hn", "cn"],
                {"input": blocks[first : first + BLOCK_WINDOWS], "h": hidden, "c": cell},
            )
            parts.append(np.asarray(probs, dtype=np.float32).reshape(-1))
        return np.concatenate(parts)
    state = np.zeros((2, 1, 128), dtype=np.float32)
    rate = np.array(SAMPLE_RATE, dtype=np.int64)
    out = np.empty(len(blocks), dtype=np.float32)
    for i in range(len(blocks)):
        prob, state = session.run(None, {"input": blocks[i : i + 1], "state": state, "sr": rate})
        out[i] = prob[0, 0]
    return out


def probabilities_to_segments(
    probs: np.ndarray,
    n_samples: int,
    threshold: float,
    min_speech_s: float,
    min_silence_s: float,
    speech_pad_s: float = SPEECH_PAD_S,
    neg_threshold: float | None = None,
    sr: int = SAMPLE_RATE,
) -> list[tuple[float, float]]:
    """Turn per-window probabilities into (start, end) speech segments in seconds.

    Same rules as silero's `get_speech_timestamps_from_probs`: speech starts at the first
    window with probability >= `threshold`; it ends where the probability falls below
    `neg_threshold` (default `threshold - 0.15`, at least 0.01) and stays there for at
    least `min_silence_s`; segments not longer than `min_speech_s` are dropped; every
    segment is widened by `speech_pad_s` each side (or split the gap when two are closer
    than twice that). `n_samples` is the length of the 16 kHz audio the windows came from.
    """
    if neg_threshold is None:
        neg_threshold = max(threshold - 0.15, 0.01)
    min_speech = sr * min_speech_s
    min_silence = sr * min_silence_s
    pad = sr * speech_pad_s
    speeches: list[list[float]] = []
    triggered = False
    start = 0
    temp_end = 0
    for i, prob in enumerate(np.asarray(probs, dtype=np.float64).tolist()):
        current = WINDOW * i
        if prob >= threshold and temp_end:
            temp_end = 0
        if prob >= threshold and not triggered:
            triggered = True
            start = current
            continue
        if prob < neg_threshold and triggered:
            if not temp_end:
                temp_end = current
            if current - temp_end < min_silence:
                continue
            if temp_end - start > min_speech:
                speeches.append([start, temp_end])
            triggered = False
            temp_end = 0
    if triggered and n_samples - start > min_speech:
        speeches.append([start, n_samples])
    for i, speech in enumerate(speeches):
        if i == 0:
            speech[0] = int(max(0, speech[0] - pad))
        if i != len(speeches) - 1:
            gap = speeches[i + 1][0] - speech[1]
            if gap < 2 * pad:
                speech[1] += int(gap // 2)
                speeches[i + 1][0] = int(max(0, speeches[i + 1][0] - gap // 2))
            else:
                speech[1] = int(min(n_samples, speech[1] + pad))
                speeches[i + 1][0] = int(max(0, speeches[i + 1][0] - pad))
        else:
            speech[1] = int(min(n_samples, speech[1] + pad))
    return [(s / sr, e / sr) for s, e in speeches]


def _probabilities_at_16k(
    audio: np.ndarray, sr: int, backend: str, vad: Vad
) -> tuple[np.ndarray | None, int]:
    """Silero's speech probabilities of a mono signal resampled to 16 kHz, and its length there
    (None and 0 for an empty signal)."""
    samples = np.asarray(audio, dtype=np.float32).reshape(-1)
    if sr != SAMPLE_RATE:
        samples = resample(samples, sr, SAMPLE_RATE)
    if samples.size == 0:
        return None, 0
    return speech_probabilities(samples, SAMPLE_RATE, backend, restart_s=vad.restart_s), samples.size


def _segments(probs: np.ndarray, n_samples: int, vad: Vad, min_speech_s: float) -> list[tuple[float, float]]:
    return probabilities_to_segments(probs, n_samples, vad.threshold, min_speech_s, vad.min_silence_s)


def speech_segments(
    audio: np.ndarray, sr: int, vad: Vad, backend: str = "sequence"
) -> list[tuple[float, float]]:
    """Silero-vad speech segments of a mono signal, as (start_s, end_s) tuples in time order.

    `audio` at any rate is resampled to 16 kHz. `vad` (config `vad:`): `threshold`,
    `min_speech_s` and `min_silence_s` mean what they mean in silero's `get_speech_timestamps`
    (see `probabilities_to_segments`); `restart_s` as in `speech_probabilities`.
    """
    probs, n_samples = _probabilities_at_16k(audio, sr, backend, vad)
    return _segments(probs, n_samples, vad, vad.min_speech_s) if n_samples else []


def speech_and_short_segments(
    audio: np.ndarray, sr: int, vad: Vad, backend: str = "sequence"
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """`speech_segments`, and the stretches its `min_speech_s` drops (silero on the same probabilities).

    The second list holds the segments silero finds with no minimum duration that touch none
    of the first: short utterances (a "yeah", a "mm") that the speech segments leave out, kept
    so that attribution can count them as backchannel events.
    """
    probs, n_samples = _probabilities_at_16k(audio, sr, backend, vad)
    if n_samples == 0:
        return [], []
    segments = _segments(probs, n_samples, vad, vad.min_speech_s)
    every = _segments(probs, n_samples, vad, 0.0)
    short = [(s, e) for s, e in every if not any(s < end and e > start for start, end in segments)]
    return segments, short
