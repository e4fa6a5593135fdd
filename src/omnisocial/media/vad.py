"""Speech detection with silero-vad, run through onnxruntime on the model the package ships.

The `silero-vad` PyPI package carries two exports of the same 16 kHz network:
`silero_vad.onnx`, the streaming model that takes one 512-sample window (plus the last
64 samples of the previous window as context) and an LSTM state per call, and
`silero_vad_16k_sequence.onnx`, which takes a whole block of such windows and carries the
state inside one call. Both give the same per-window probabilities (the package says
bit-exact; `tests/test_media.py` checks it); the sequence export avoids a Python-level
call per 32 ms window and is several times faster, so it is the default backend. The
streaming export is kept as `backend="stream"` (the reference path, as in the package's
`OnnxWrapper`).

Probabilities become segments with the same hysteresis state machine as the package's
`get_speech_timestamps_from_probs` (without the max-speech-length split, which is not
used here), reimplemented in numpy so that neither torch nor the package's torch-based
helpers are imported; the test suite checks both give the same segments. The study also
runs the network from a fresh state over short stretches and keeps each window's highest
probability (`restart_s`, config `vad.restart_s`; `_restarted` says why).

Sessions run on the CPU with one intra-op and one inter-op thread, so parallelism comes
from running interactions in separate processes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from omnisocial.media.audio import resample

SAMPLE_RATE = 16000
WINDOW = 512  # samples per model window at 16 kHz (32 ms)
CONTEXT = 64  # samples of the previous window prepended to each window
BLOCK_WINDOWS = 512  # windows per call of the sequence model (about 16 s)
MODEL_FILES = {"sequence": "silero_vad_16k_sequence.onnx", "stream": "silero_vad.onnx"}
RESTART_S = 8.0  # the config's default `vad.restart_s` (`_restarted`)


def model_path(backend: str = "sequence") -> str:
    """Path of the ONNX file shipped in the installed `silero_vad` package."""
    if backend not in MODEL_FILES:
        raise ValueError(f"unknown VAD backend {backend!r}; use one of {sorted(MODEL_FILES)}")
    return str(resources.files("silero_vad.data").joinpath(MODEL_FILES[backend]))


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
    audio: np.ndarray, sr: int = SAMPLE_RATE, backend: str = "sequence", restart_s: float | None = None
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


def restart_of(vad: Mapping) -> float | None:
    """The `restart_s` of a `vad:` config block (its default when absent, None when null)."""
    value = vad.get("restart_s", RESTART_S)
    return None if value is None else float(value)


def _restarted(blocks: np.ndarray, backend: str, restart_s: float) -> np.ndarray:
    """Per window, the highest probability of the runs from a fresh state over `restart_s`
    stretches that start every half of it (from the second half on; 0 where none covers it).

    Silero's LSTM carries its state over the whole signal, and after seconds of a steady
    hiss it can stay below threshold through a soft utterance that it calls speech with a
    few seconds of context: one real agent's 1.8 s "okay let me have a look" on a telephone
    line under a -60 dBFS floor scores 0.12 on average in one run over the call, 0.85 and
    0.72 in runs that start 1 s and 24 s before it, 0.24 in one that starts 9 s before (the
    state is the network's, not the noise's; `tests/data/spokenwoz`, SNG1640). Every window after
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
    threshold: float = 0.5,
    min_speech_s: float = 0.25,
    min_silence_s: float = 0.1,
    speech_pad_s: float = 0.03,
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
    audio: np.ndarray, sr: int, backend: str, restart_s: float | None = None
) -> tuple[np.ndarray | None, int]:
    """Silero's speech probabilities of a mono signal resampled to 16 kHz, and its length there
    (None and 0 for an empty signal)."""
    samples = np.asarray(audio, dtype=np.float32).reshape(-1)
    if sr != SAMPLE_RATE:
        samples = resample(samples, sr, SAMPLE_RATE)
    if samples.size == 0:
        return None, 0
    return speech_probabilities(samples, SAMPLE_RATE, backend=backend, restart_s=restart_s), samples.size


def speech_segments(
    audio: np.ndarray,
    sr: int,
    threshold: float = 0.5,
    min_speech_s: float = 0.25,
    min_silence_s: float = 0.1,
    speech_pad_s: float = 0.03,
    backend: str = "sequence",
    restart_s: float | None = None,
) -> list[tuple[float, float]]:
    """Silero-vad speech segments of a mono signal, as (start_s, end_s) tuples in time order.

    `audio` at any rate is resampled to 16 kHz. The parameters mean what they mean in
    silero's `get_speech_timestamps` (see `probabilities_to_segments`); the defaults are
    silero's and match the `vad:` block of the config, except `restart_s` (the config's
    `vad.restart_s`; None here: silero's one run, `speech_probabilities`).
    """
    probs, n_samples = _probabilities_at_16k(audio, sr, backend, restart_s)
    if n_samples == 0:
        return []
    return probabilities_to_segments(
        probs,
        n_samples,
        threshold=threshold,
        min_speech_s=min_speech_s,
        min_silence_s=min_silence_s,
        speech_pad_s=speech_pad_s,
    )


def speech_and_short_segments(
    audio: np.ndarray,
    sr: int,
    threshold: float = 0.5,
    min_speech_s: float = 0.25,
    min_silence_s: float = 0.1,
    speech_pad_s: float = 0.03,
    backend: str = "sequence",
    restart_s: float | None = None,
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """`speech_segments`, and the stretches its `min_speech_s` drops (silero on the same probabilities).

    The second list holds the segments silero finds with no minimum duration that touch none
    of the first: short utterances (a "yeah", a "mm") that the speech segments leave out, kept
    so that attribution can count them as backchannel events.
    """
    probs, n_samples = _probabilities_at_16k(audio, sr, backend, restart_s)
    if n_samples == 0:
        return [], []
    settings = dict(threshold=threshold, min_silence_s=min_silence_s, speech_pad_s=speech_pad_s)
    segments = probabilities_to_segments(probs, n_samples, min_speech_s=min_speech_s, **settings)
    every = probabilities_to_segments(probs, n_samples, min_speech_s=0.0, **settings)
    short = [(s, e) for s, e in every if not any(s < end and e > start for start, end in segments)]
    return segments, short


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) index pairs of the True runs of a boolean array."""
    padded = np.concatenate(([False], np.asarray(mask, dtype=bool), [False]))
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True))


@dataclass(frozen=True)
class Attribution:
    """Speech per microphone after cross-talk attribution, and how much of it is shared.

    `segments`: each speaker's speech (stretches longer than the minimum duration);
    `shared_s`: speech on both microphones at a similar level (neither leads by the margin);
    `overlap_own_s`: per speaker, seconds of its own speech kept while the other microphone
    led (simultaneous speech told from bleed, see `attribute_speech`); `short`: per speaker,
    its own stretches not longer than the minimum duration (backchannel candidates, kept out
    of `segments`).
    """

    segments: dict[str, list[tuple[float, float]]]
    shared_s: float
    overlap_own_s: dict[str, float] = field(default_factory=dict)
    short: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


def _smoothed_power(audio: np.ndarray, sr: int, hop_s: float, smooth_s: float, n: int) -> np.ndarray:
    from omnisocial.media.audio import envelope

    env = envelope(audio, sr, hop_s)
    env = np.concatenate((env, np.zeros(max(0, n - env.size))))[:n]
    width = max(1, int(round(smooth_s / hop_s)))
    return np.convolve(env**2, np.ones(width) / width, mode="same")


def _inside(segments: list[tuple[float, float]], n: int, hop_s: float) -> np.ndarray:
    centres = (np.arange(n) + 0.5) * hop_s
    mask = np.zeros(n, dtype=bool)
    for start, end in segments:
        mask |= (centres >= start) & (centres < end)
    return mask


def _closed(mask: np.ndarray, hop_s: float, min_silence_s: float) -> list[tuple[float, float]]:
    """The True runs of `mask` in seconds, closed over gaps shorter than `min_silence_s`."""
    kept: list[list[float]] = []
    for first, stop in _runs(mask):
        start, end = first * hop_s, stop * hop_s
        if kept and start - kept[-1][1] < min_silence_s:
            kept[-1][1] = end
        else:
            kept.append([start, end])
    return [(start, end) for start, end in kept]


def _segments_of(mask: np.ndarray, hop_s: float, min_speech_s: float, min_silence_s: float):
    return [(s, e) for s, e in _closed(mask, hop_s, min_silence_s) if e - s > min_speech_s]


FLOOR_PERCENTILE = 5.0  # a microphone's noise floor: the level it is above 95% of the time


def noise_floor_db(power: np.ndarray, hop_s: float, window_s: float | None) -> np.ndarray:
    """Per hop, the microphone's noise floor (dB): the `FLOOR_PERCENTILE` of its level around the hop.

    Over a running window of `window_s` seconds (centred; None: the whole track, one floor).
    A floor that changes along the recording (a line whose hiss rises, a fan that starts) is
    followed, so a quiet stretch is judged against the noise beside it, not against the
    whole track's.
    """
    level_db = 10.0 * np.log10(np.maximum(power, 1e-12))
    width = 0 if window_s is None else int(round(window_s / hop_s)) | 1
    if width <= 1 or width >= level_db.size:
        return np.full(level_db.size, float(np.percentile(level_db, FLOOR_PERCENTILE)))
    # the window's percentile every `step` hops (a sixth of the window), linear in between:
    # a floor moves over seconds, and a per-hop running percentile costs seconds on a long track
    half, step = width // 2, max(1, width // 6)
    padded = np.pad(level_db, half, mode="edge")
    centres = np.arange(0, level_db.size, step)
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)[centres]
    floors = np.percentile(windows, FLOOR_PERCENTILE, axis=1)
    return np.interp(np.arange(level_db.size), centres, floors)


def _voiced(
    power: np.ndarray, kept: np.ndarray, below_level_db: float, above_floor_db: float, floor_db: np.ndarray
) -> np.ndarray:
    """Hops whose power is within `below_level_db` of the speech level and `above_floor_db` over the floor."""
    if not kept.any():
        return np.zeros(power.size, dtype=bool)
    level_db = 10.0 * np.log10(np.maximum(power, 1e-12))
    speech_level = float(np.median(level_db[kept]))
    return (level_db >= speech_level - below_level_db) & (level_db >= floor_db + above_floor_db)


def _align_edges(
    kept: np.ndarray, voiced: np.ndarray, allowed: np.ndarray, trimmable: np.ndarray | None = None
) -> np.ndarray:
    """Each run of `kept` trimmed to its first and last voiced hop, then grown over adjacent voiced
    `allowed` hops (a run of them touching kept speech joins it whole); nothing new starts here.

    Only `trimmable` hops are trimmed (None: all): an end keeps its unvoiced hops from the first
    one that is not trimmable on. A run with no voiced hop is dropped."""
    aligned = np.zeros(kept.size, dtype=bool)
    for first, stop in _runs(kept):
        inside = np.flatnonzero(voiced[first:stop])
        if not inside.size:
            continue
        start, end = first + inside[0], first + inside[-1] + 1
        if trimmable is not None:
            fixed = np.flatnonzero(~trimmable[first:stop])
            if fixed.size:
                start, end = min(start, first + fixed[0]), max(end, first + fixed[-1] + 1)
        aligned[start:end] = True
    grown = aligned.copy()
    for first, stop in _runs(voiced & allowed):
        if aligned[max(first - 1, 0) : stop + 1].any():
            grown[first:stop] = True
    return grown


def coherent_fraction(x: np.ndarray, y: np.ndarray, frame: int = 256) -> float:
    """Share of the energy of `x` that is a linear (per-frequency) function of `y`; NaN when too short.

    Short-time spectra (Hann, `frame` samples, half overlap); per frequency the magnitude
    squared coherence over the frames, weighted by the energy of `x` at that frequency. Bleed
    (the other track heard through the air or the line: a filtered copy) gives nearly 1; a
    microphone whose own speaker talks over the bleed gives about the bleed's share of its
    energy. Fewer than 8 frames give NaN (with n frames two unrelated signals already reach
    about 1/n).
    """
    n = min(x.size, y.size)
    hop = frame // 2
    count = (n - frame) // hop + 1 if n >= frame else 0
    if count < 8:
        return float("nan")
    index = np.arange(frame)[None, :] + hop * np.arange(count)[:, None]
    window = np.hanning(frame)
    spec_x = np.fft.rfft(np.asarray(x[:n], np.float64)[index] * window, axis=1)
    spec_y = np.fft.rfft(np.asarray(y[:n], np.float64)[index] * window, axis=1)
    energy_x = np.sum(np.abs(spec_x) ** 2, axis=0)
    energy_y = np.sum(np.abs(spec_y) ** 2, axis=0)
    cross = np.abs(np.sum(spec_x * np.conj(spec_y), axis=0)) ** 2
    coherence = cross / np.maximum(energy_x * energy_y, 1e-30)
    return float(np.sum(coherence * energy_x) / max(float(np.sum(energy_x)), 1e-30))


def _shifted(values: np.ndarray, shift: int) -> np.ndarray:
    """`values` delayed by `shift` items (advanced when negative), zeros where nothing is known."""
    out = np.zeros_like(values)
    if shift >= 0:
        out[shift:] = values[: values.size - shift] if shift else values
    else:
        out[:shift] = values[-shift:]
    return out


def _decaying_envelope(power: np.ndarray, decay_db: float) -> np.ndarray:
    """Per hop the larger of `power` there and the envelope of the hop before, `decay_db` lower.

    In dB the envelope at hop i is max over j <= i of (level[j] - decay_db * (i - j)): a
    running maximum of level[j] + decay_db * j, less decay_db * i (no loop over the hops).
    """
    slope = decay_db * np.arange(power.size)
    level_db = 10.0 * np.log10(np.maximum(power, 1e-30))
    return 10.0 ** ((np.maximum.accumulate(level_db + slope) - slope) / 10.0)


def _has_tail(
    excess: np.ndarray, heard: np.ndarray, envelope: np.ndarray, coupling: float, floor: np.ndarray
) -> bool:
    """Whether a microphone's bleed outlasts the other's voice (a room), by the hops just after the
    other's words (its power `heard` 10 dB under its decaying `envelope`, the bleed of that
    envelope 6 dB over this microphone's floor): there the median of this microphone's power over
    its floor is at least 3 dB over the bleed of the moment. On the real calls through a modelled
    room of RT60 0.2-0.5 s it is 5-18 dB over; on a line's echo 0-1 dB (`TAIL_MIN_HOPS` of them,
    or no tail: after cancellation a few hops of residue look like one)."""
    after = (envelope >= 10.0 * heard) & (coupling * envelope >= 4.0 * floor)
    if after.sum() < TAIL_MIN_HOPS:
        return False
    return bool(np.median(excess[after] / np.maximum(coupling * heard[after], 1e-30)) >= 2.0)


BLEED_FRAME_S = 0.032  # STFT frame of the bleed estimate: a line's echo or a room's early sound
MIN_BLEED_FRAMES = 20  # frames the other microphone must lead before a bleed path is estimated
EXPLAINED = 10.0  # a frame is bleed when the path explains all but a tenth (10 dB) of its energy
TAIL_MIN_HOPS = 100  # hops after the other's words needed to tell a room's tail (2 s at 20 ms)
MIN_EXPLAINED_SHARE = 0.25  # the share of the other's leading frames a path must explain to be bleed
LONG_PATH_MIN_SHARE = 0.1  # the share a path over `BLEED_PATH_S` must explain (and twice one frame's)
BLEED_PATH_S = 0.25  # the longest bleed path modelled: a room's sound arriving over this time
PATH_BINS_AT_ONCE = 32  # frequency bins fitted at once (bounds the memory of a long path)
THROUGH_FRAMES_AT_ONCE = 1024  # frames through a long path at once (kept in cache)
LONG_PATH_FIT_FRAMES = 4096  # leading frames a long path is fitted on, at most


def cancel_bleed(
    audio: dict[str, np.ndarray],
    sr: int,
    lag_s: float | None = None,
    margin_db: float = 6.0,
    min_share: float = MIN_EXPLAINED_SHARE,
    path_s: float | None = BLEED_PATH_S,
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Each microphone ("a", "b") minus its estimate of the other's voice; and, per microphone,
    the share of the frames where the other leads that are the other's voice.

    The other track, moved by the inter-track lag `lag_s` (as in `attribute_speech`), goes
    through a per-frequency path estimated by least squares over the frames (`BLEED_FRAME_S`,
    hops of half a frame) where the other microphone leads by `margin_db`, and is subtracted in
    the short-time spectrum. Subtracting a linear estimate of the bleed leaves what the other
    track cannot explain: the microphone's own speech, also where both talk at once, and its
    noise. So the speech detector and the attribution then see each voice where it is, not
    silero's answer to the other voice's bleed (on real telephone lines cross-mixed at -20 dB,
    silero on the raw lines missed 23-100% of the overlap and gave +4-6% speech to one speaker;
    `benchmarks/bench_separate_mics.py`).

    Two paths are fitted: one frame (a line's echo, a headset's leak: the other's sound now)
    and, with `path_s`, one over the frames of the last `path_s` seconds (a convolutive path:
    a room's reflections and tail arrive over hundreds of milliseconds, which one frame cannot
    hold; through a modelled room of RT60 0.2-0.5 s it removes 12-14 dB of the bleed away from
    the owner's speech, where one frame removes 1-2 dB and explains no frame). The long path is
    used where it explains at least `LONG_PATH_MIN_SHARE` of the frames and twice as many as one
    frame: bleed one frame cannot hold. Elsewhere one frame is used: a longer path also fits
    some of the microphone's own sound and noise in those frames, so on a plain echo one frame
    cancels more (31.6 dB against 26 dB on a real line cross-mixed at -20 dB), and under a loud
    floor the long path's few more frames are noise (-15.8% speech against -5.1%,
    `benchmarks/bench_real_sync.py`).

    Nothing is subtracted where it is not bleed: when fewer than `MIN_BLEED_FRAMES` frames have
    the other leading (two copies of one track never do: the duplicate filter judges those),
    or when the path explains (all but a tenth of the energy, `EXPLAINED`) fewer than
    `min_share` of those frames (separate lines or headsets whose coupling is under their
    noise; frames where both talk are not explained either, so the share is of frames, not of
    energy, which own speech would dominate). On the real separate lines the one-frame path
    explains 0-6% of them; cross-mixed at -20 dB, 34-84%; through the modelled rooms the long
    path explains 7-33%, where one frame explains none.
    """
    from scipy.signal import istft, stft

    frame = int(round(BLEED_FRAME_S * sr))
    taps = 1 if not path_s else max(1, int(np.ceil(path_s / (BLEED_FRAME_S / 2))))
    lag = 0 if lag_s is None or not np.isfinite(lag_s) else int(round(lag_s * sr))
    # single precision: a 10 min pair at 16 kHz holds four spectra of 150 MB each in double
    spectra = {name: stft(np.asarray(audio[name], np.float32), nperseg=frame)[2] for name in ("a", "b")}
    out, shares = {}, {}
    for name, other, shift in (("a", "b", -lag), ("b", "a", lag)):
        out[name], shares[name] = audio[name], 0.0
        x = spectra[name]
        y = (
            spectra[other]
            if shift == 0
            else stft(_shifted(np.asarray(audio[other], np.float32), shift), nperseg=frame)[2]
        )
        energy_x = np.sum(np.abs(x) ** 2, axis=0)
        leading = np.sum(np.abs(y) ** 2, axis=0) > energy_x * 10.0 ** (margin_db / 10.0)
        if leading.sum() < MIN_BLEED_FRAMES:
            continue
        frames = np.flatnonzero(leading)
        fitted = {}  # taps: (share of the leading frames explained, path)
        for length in (1, taps) if taps > 1 else (1,):
            if length > 1 and frames.size > LONG_PATH_FIT_FRAMES:
                # a long path is fitted (and its share counted) on evenly spread leading frames:
                # its taps per bin need thousands of frames, not every one of a long recording
                frames = frames[np.linspace(0, frames.size - 1, LONG_PATH_FIT_FRAMES).astype(int)]
            past = _past_frames(y, length)
            path = _bleed_path(x, past, frames)
            left = np.sum(np.abs(x[:, frames] - _through(path, past, frames)) ** 2, axis=0)
            fitted[length] = (float(np.mean(left * EXPLAINED < energy_x[frames])), path, past)
        long_share = fitted[taps][0] if taps > 1 else 0.0
        if long_share >= LONG_PATH_MIN_SHARE and long_share >= 2.0 * fitted[1][0]:
            shares[name], path, past = fitted[taps]
        else:
            shares[name], path, past = fitted[1]
            if shares[name] < min_share:
                continue
        cleaned = istft(x - _through(path, past, np.arange(x.shape[1])), nperseg=frame)[1][: audio[name].size]
        cleaned = np.concatenate((cleaned, np.zeros(audio[name].size - cleaned.size)))
        out[name] = cleaned.astype(np.asarray(audio[name]).dtype, copy=False)
    return out, shares


def _past_frames(y: np.ndarray, taps: int) -> np.ndarray:
    """`y`'s spectrum with `taps - 1` silent frames before it: frame t - k of y is column
    t + taps - 1 - k (`_bleed_path`, `_through`); y itself for one tap."""
    return y if taps == 1 else np.pad(y, ((0, 0), (taps - 1, 0)))


def _bleed_path(x: np.ndarray, past: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """The least-squares path (bins x taps: per bin, over y's last `taps` frames, `past` from
    `_past_frames`) that best gives `x` from y on `frames` (indices): the path of the bleed in x."""
    bins, taps = past.shape[0], past.shape[1] - x.shape[1] + 1
    path = np.zeros((bins, taps), dtype=x.dtype)
    for first in range(0, bins, PATH_BINS_AT_ONCE):
        rows = slice(first, min(bins, first + PATH_BINS_AT_ONCE))
        lagged = np.stack([past[rows, frames + taps - 1 - k] for k in range(taps)], axis=1)  # bins, taps, n
        gram = np.conj(lagged) @ lagged.transpose(0, 2, 1)
        target = (np.conj(lagged) @ x[rows, frames][..., None])[..., 0]
        # a relative ridge keeps a bin with no signal (a line's band edge) from an arbitrary path
        scale = np.trace(gram, axis1=1, axis2=2).real / taps
        gram += (1e-6 * scale + 1e-30)[:, None, None] * np.eye(taps)
        path[rows] = np.linalg.solve(gram, target[..., None])[..., 0]
    return path


def _through(path: np.ndarray, past: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """y's spectrum (`past`, from `_past_frames`) through `path` (`_bleed_path`) at `frames` (indices)."""
    taps = path.shape[1]
    out = np.zeros((past.shape[0], frames.size), dtype=np.result_type(path, past))
    # in blocks of frames that stay in cache while each tap adds to them
    for first in range(0, frames.size, THROUGH_FRAMES_AT_ONCE):
        block = frames[first : first + THROUGH_FRAMES_AT_ONCE]
        for k in range(taps):
            out[:, first : first + block.size] += path[:, k, None] * past[:, block + taps - 1 - k]
    return out


def attribute_speech(
    segments: dict[str, list[tuple[float, float]]],
    audio: dict[str, np.ndarray],
    sr: int,
    margin_db: float = 6.0,
    smooth_s: float = 0.06,
    hop_s: float = 0.02,
    min_speech_s: float = 0.25,
    min_silence_s: float = 0.1,
    edge_below_level_db: float | None = 25.0,
    edge_above_floor_db: float = 6.0,
    *,
    short: dict[str, list[tuple[float, float]]] | None = None,
    lag_s: float | None = None,
    own_excess_db: float | None = 6.0,
    bleed_coherence: float = 0.5,
    floor_window_s: float | None = 3.0,
    hangover_s: float | None = 0.5,
    tail_s: float | None = 1.0,
) -> Attribution:
    """Attribute the silero speech of two microphones ("a", "b") to the speaker whose microphone leads.

    Silero is nearly level-invariant, so on a two-microphone recording it also marks the
    other person's voice leaking into a microphone as speech. Per hop of `hop_s`, with each
    microphone's power averaged over `smooth_s`:

    - a microphone *leads* when its power exceeds the other's by at least `margin_db`;
    - speech found on a microphone that the other one leads is cross-talk (removed) unless
      it is the microphone's own speech under the other's (below);
    - speech found on a microphone that leads is its speaker's;
    - where neither leads, speech found on one microphone only is its speaker's (a pause
      or soft speech of its own), and speech found on both is *shared*: both speakers keep
      it (it may be overlapping talk) and its duration is `shared_s`, so that the filters
      can tell an interaction dominated by cross-talk (strong bleed, or two copies of one
      track) from one with some overlap.

    Bleed or own speech, where the other microphone leads. When both people talk at once
    the louder one's microphone leads, and the quieter one's own speech (a backchannel, an
    overlapping start) is on its microphone too, over the louder voice's bleed. Bleed is the
    other track heard at the room's (or line's) coupling level: the *coupling* is the median
    power ratio of this microphone to the other where the other leads and has speech (mostly
    pure bleed), counting only this microphone's power over its noise floor there (separate
    lines, whose power there is their own noise whatever the other says, get none), and the
    bleed expected in a hop is the other's power there (at the measured inter-track lag
    `lag_s`) times the coupling. Where the microphone shows a room's tail (`_has_tail`: just
    after the other's words its power stays over that bleed) the other's power instead decays
    60 dB over `tail_s` from each hop, since a room's bleed outlasts the voice (under modelled
    room bleed of RT60 0.2-0.5 s at -20 dB, the bleed of the moment let the reverberant tail
    through as 65-111 "backchannels" per real call against 0-1; with the tail, 1-6;
    `benchmarks/bench_separate_mics.py`), and a hop where neither microphone leads whose power
    that tail explains to within `own_excess_db` is the tail. On a line's echo the tail model
    would take a soft start right after the other's words for tail, so it is not used there
    (`tail_s` None: never).
    A hop holds own speech when the power left after that bleed
    is at least `own_excess_db` over it and `edge_above_floor_db` over the noise floor; a
    stretch of such hops is then kept unless most of its energy (more than
    `bleed_coherence`, `coherent_fraction`) is coherent with the other track at the lag,
    which is what bleed louder than the usual coupling (a head turned to the other
    microphone) looks like. The kept seconds are `overlap_own_s`. `own_excess_db` None drops
    all speech the other microphone leads (the former rule).

    The smoothing is short (three 20 ms hops): a longer window blurs each turn change, and
    the blur is credited to the speaker whose silero segment spans it (on the shipped real
    conversation with -10 dB bleed, 0.2 s gave +3.8% speech to one speaker, 0.06 s +2.6%).
    Silero then says *whether* a microphone's owner speaks; the microphone's own level says
    *where* each stretch of it starts and ends (`_align_edges`, unless `edge_below_level_db` is
    None). A hop is *voiced* on a microphone when its power is within `edge_below_level_db` of
    that microphone's speech level (the median over its kept hops) and at least
    `edge_above_floor_db` above its noise floor (`noise_floor_db`: the 5th percentile of its
    level over a running window of `floor_window_s`; None: over the whole track). Each kept
    stretch loses the unvoiced hops at its ends that lie within `hangover_s` of hops the other
    microphone leads (silero's padding and hangover: after the other speaker's bleed it ran on
    into the silence before its owner spoke; None: every unvoiced end hop), keeping those
    farther from the other's voice (a soft speaker's decay or weak consonant under the floor:
    with the second voice of the call 18 dB softer, 10 dB over a -60 dBFS floor, trimming every
    end lost 13% of her speech, this 8%; `benchmarks/bench_separate_mics.py`), and grows over the
    voiced hops next to it that are its own (the other microphone does not lead, or the hop
    holds own speech; silero rises late on speech that begins in overlap or under a noise
    floor, and may drop a hop inside it). On the shipped real conversation with a -60 dBFS
    floor, silero alone started one turn 0.4 s late and split it (-4.0% speech, one turn
    lost), and with -10 dB bleed it gave one speaker +3.5%; aligned, every bleed level from
    none to -10 dB, with and without the floor, is within 1% (`benchmarks/bench_real_sync.py`).

    The kept parts are closed over gaps shorter than `min_silence_s`; parts not longer than
    `min_speech_s` go to `short` instead of `segments`, with the stretches of `short` (silero's
    segments under its minimum duration, `speech_and_short_segments`) that pass the same
    rules. Both signals share the rate `sr`.
    """
    names = ("a", "b")
    n = max(int(np.ceil(audio[name].size / round(hop_s * sr))) for name in names)
    power = {name: _smoothed_power(audio[name], sr, hop_s, smooth_s, n) for name in names}
    found = {name: _inside(segments.get(name, []), n, hop_s) for name in names}
    brief = {name: _inside((short or {}).get(name, []), n, hop_s) & ~found[name] for name in names}
    ratio = 10.0 ** (margin_db / 10.0)
    leads = {"a": power["a"] > power["b"] * ratio, "b": power["b"] > power["a"] * ratio}
    floor = {name: noise_floor_db(power[name], hop_s, floor_window_s) for name in names}
    lag_hops = 0 if lag_s is None or not np.isfinite(lag_s) else int(round(lag_s / hop_s))
    hop = int(round(hop_s * sr))
    own: dict[str, np.ndarray] = {}
    in_tail: dict[str, np.ndarray] = {}
    for name, other, shift in (("a", "b", -lag_hops), ("b", "a", lag_hops)):
        own[name], in_tail[name] = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        if own_excess_db is None:
            continue
        heard = _shifted(power[other], shift)  # the other's voice as it reaches this microphone
        pure = leads[other] & found[other] & (heard > 0)
        # the part of this microphone's power over its noise floor: separate lines, whose
        # power there is their own noise whatever the other says, get no coupling from it
        floor_power = 10.0 ** (floor[name] / 10.0)
        excess = np.maximum(power[name] - floor_power, 0.0)
        coupling = float(np.median(excess[pure] / heard[pure])) if pure.any() else 0.0
        # a room's bleed outlasts the voice: the other's power decaying 60 dB over `tail_s` from
        # each of its hops; on a line's echo (no tail) the bleed of the moment only
        reach = heard
        if tail_s is not None and coupling > 0:
            envelope = _decaying_envelope(heard, 60.0 * hop_s / tail_s)
            if _has_tail(excess, heard, envelope, coupling, floor_power):
                reach = envelope
        bleed = coupling * reach
        rest = power[name] - bleed
        level_db = 10.0 * np.log10(np.maximum(rest, 1e-12))
        candidate = (
            leads[other]
            & (rest >= bleed * 10.0 ** (own_excess_db / 10.0))
            & (level_db >= floor[name] + edge_above_floor_db)
        )
        other_audio = _shifted(np.asarray(audio[other], np.float64), shift * hop)
        for first, stop in _runs(candidate):
            x = audio[name][first * hop : stop * hop]
            y = other_audio[first * hop : stop * hop]
            if not coherent_fraction(x, y) > bleed_coherence:
                own[name][first:stop] = True
        if reach is not heard:
            # where neither microphone leads (the other's own level has fallen after a word) a
            # hop that the tail explains to within `own_excess_db` is tail, not this voice
            in_tail[name] = (
                ~leads[other] & (bleed > 0) & (power[name] < bleed * 10.0 ** (own_excess_db / 10.0))
            )
    allowed = {"a": (~leads["b"] | own["a"]) & ~in_tail["a"], "b": (~leads["a"] | own["b"]) & ~in_tail["b"]}
    kept = {name: found[name] & allowed[name] for name in names}
    if edge_below_level_db is not None:
        for name in names:
            voiced = _voiced(power[name], kept[name], edge_below_level_db, edge_above_floor_db, floor[name])
            other = "b" if name == "a" else "a"
            # silero's hangover follows the other's voice (its bleed); elsewhere an unvoiced end
            # is the speaker's own soft speech under the floor (a decay, a weak consonant)
            near = None
            if hangover_s is not None:
                width = 2 * int(round(hangover_s / hop_s)) + 1
                near = np.convolve(leads[other].astype(float), np.ones(width), mode="same") > 0
            kept[name] = _align_edges(kept[name], voiced, allowed[name], near)
    shared = kept["a"] & kept["b"] & ~leads["a"] & ~leads["b"]
    out_segments, out_short, overlap_own = {}, {}, {}
    for name, other in (("a", "b"), ("b", "a")):
        stretches = _closed(kept[name], hop_s, min_silence_s)
        out_segments[name] = [(s, e) for s, e in stretches if e - s > min_speech_s]
        level_db = 10.0 * np.log10(np.maximum(power[name], 1e-12))
        extra = brief[name] & allowed[name] & ~kept[name] & (level_db >= floor[name] + edge_above_floor_db)
        taken = _inside(out_segments[name], n, hop_s)
        out_short[name] = [
            (s, e) for s, e in _closed((kept[name] & ~taken) | extra, hop_s, min_silence_s) if e - s > 0
        ]
        overlap_own[name] = float((taken & leads[other]).sum() * hop_s)
    return Attribution(out_segments, float(shared.sum() * hop_s), overlap_own, out_short)
