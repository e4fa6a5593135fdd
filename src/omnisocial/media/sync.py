"""Duplicate and desync detection between tracks, and audio-video lag.

Both measures are a normalized cross-correlation: for every lag in [-max_lag, +max_lag]
the Pearson correlation of the two series over their overlapping part. The peak value
and its lag are the answer; the lag resolution is one hop (one video frame for the
audio-video lag), with ties going to the smallest |lag|.

Why it works on two-person recordings: each participant's microphone also picks up the
other person, quietly. In log-compressed envelopes (`envelope(..., log=True)`) that
cross-talk carries the same syllable-level shape as the other track, so two tracks
recorded together correlate best at lag 0; a copy of one track correlates ~1 at lag 0
(the duplicate signature); and a shifted track peaks at its shift. Tracks that share no
signal (each microphone hears only its owner) have no such peak, so `track_lag` reports a
lag only where the peak is strong and prominent enough (`docs/signals-and-filters.md`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from omnisocial.media.audio import _existing_file
from omnisocial.media.frames import decode_grey, decode_grey_together, frame_motion

# scipy.ndimage is imported where used (~0.5 s CPU per job start)


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x = x - x.mean()
    y = y - y.mean()
    denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
    if denominator <= 0.0 or not np.isfinite(denominator):
        return float("nan")
    return float(np.dot(x, y) / denominator)


def cross_correlation(
    a: np.ndarray, b: np.ndarray, max_lag: int, offset: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Pearson correlation of a[t] with b[t + k] over their overlap, for k in offset + [-max_lag, max_lag].

    Returns (lags, correlations). A positive k means b follows a by k samples. The series
    are cut to the shorter length first; lags that leave fewer than 3 overlapping samples,
    and lags where either part is constant, give NaN.
    """
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    n = min(x.size, y.size)
    x, y = x[:n], y[:n]
    lags = np.arange(int(offset) - int(max_lag), int(offset) + int(max_lag) + 1)
    correlations = np.full(lags.size, np.nan)
    for i, k in enumerate(lags.tolist()):
        if n - abs(k) < 3:
            continue
        correlations[i] = _pearson(x[: n - k], y[k:]) if k >= 0 else _pearson(x[-k:], y[: n + k])
    return lags, correlations


def _peak(lags: np.ndarray, correlations: np.ndarray) -> tuple[float, int | None]:
    if not np.any(np.isfinite(correlations)):
        return float("nan"), None
    best = np.nanmax(correlations)
    candidates = np.flatnonzero(correlations >= best - 1e-12)
    chosen = candidates[np.argmin(np.abs(lags[candidates]))]
    return float(correlations[chosen]), int(lags[chosen])


def highpass(env: np.ndarray, hop_s: float, window_s: float) -> np.ndarray:
    """`env` minus its centred moving average over `window_s`: keeps syllable-rate detail only."""
    x = np.asarray(env, dtype=np.float64).reshape(-1)
    width = int(round(window_s / hop_s))
    if width < 2 or x.size == 0:
        return x
    from scipy.ndimage import uniform_filter1d

    return x - uniform_filter1d(x, size=width, mode="nearest")


@dataclass(frozen=True)
class TrackLag:
    """What `track_lag` found: the similarity, the lag (NaN when not measurable) and the evidence."""

    similarity: float
    lag_s: float
    peak: float
    prominence: float

    @property
    def measurable(self) -> bool:
        return bool(np.isfinite(self.lag_s))


def _prominence(lags: np.ndarray, correlations: np.ndarray, at: int, exclusion: int) -> float:
    """Peak at lag `at` minus the best correlation more than `exclusion` lags away from it."""
    peak = correlations[lags == at]
    rest = correlations[np.abs(lags - at) > exclusion]
    rest = rest[np.isfinite(rest)]
    if peak.size == 0 or rest.size == 0:
        return float("nan")
    return float(peak[0] - rest.max())


def track_lag(
    env_a: np.ndarray,
    env_b: np.ndarray,
    hop_s: float,
    max_lag_s: float,
    detrend_s: float | None = 0.5,
    min_peak: float = 0.0,
    min_prominence: float = 0.0,
    exclusion_s: float = 0.1,
) -> TrackLag:
    """Similarity of two envelopes and the lag (s) of b behind a, gated on the evidence for the lag.

    `env_a`, `env_b`: envelopes on the same hop of `hop_s` seconds (use log envelopes for
    two microphones, see the module docstring). The lag is searched within ±`max_lag_s`
    and is positive when track b is late, i.e. b(t) ~ a(t - lag).

    Turn-taking gives two microphones opposite slow level profiles (loud while their owner
    talks, quiet while the other does), which can outweigh the shared syllable detail and
    pull the correlation peak to a turn-length lag. So the lag is taken where the
    *detail* correlates best: each envelope minus its moving average over `detrend_s`
    seconds (`detrend_s=None`: the plain envelopes).

    A lag is only evidence when the tracks share a signal (one microphone hears the other
    person). Two tracks that each hold only their own speaker (close-talk microphones,
    headsets, separated sources; digital silence or a noise floor elsewhere) share none:
    their detail correlation has no real peak, and the highest of its many small ones lies
    at an arbitrary lag. So the lag is NaN (not measurable) unless the peak is at least
    `min_peak` and stands at least `min_prominence` above the best correlation more than
    `exclusion_s` away from it (the peak's own lobe, about a syllable).

    The similarity is the plain Pearson correlation of the envelopes at the lag (at lag 0
    when the lag is not measurable): ~1 for a copy, clearly lower for two real
    microphones, whose slow profiles differ. Everything is NaN when either envelope is
    constant (e.g. a digitally silent track) or too short.
    """
    nan = float("nan")
    max_lag = int(round(max_lag_s / hop_s))
    a = np.asarray(env_a, dtype=np.float64).reshape(-1)
    b = np.asarray(env_b, dtype=np.float64).reshape(-1)
    if detrend_s:
        lags, correlations = cross_correlation(
            highpass(a, hop_s, detrend_s), highpass(b, hop_s, detrend_s), max_lag
        )
    else:
        lags, correlations = cross_correlation(a, b, max_lag)
    peak, lag = _peak(lags, correlations)
    if lag is None:
        return TrackLag(nan, nan, nan, nan)
    prominence = _prominence(lags, correlations, lag, max(1, int(round(exclusion_s / hop_s))))
    # a NaN prominence (a search range within the peak's lobe) cannot fail the gate
    measurable = peak >= min_peak and not prominence < min_prominence
    at = lag if measurable else 0
    similarity = (
        float(cross_correlation(a, b, 0, offset=at)[1][0])
        if detrend_s
        else float(correlations[lags == at][0])
    )
    if not np.isfinite(similarity):
        return TrackLag(nan, nan, peak, prominence)
    return TrackLag(similarity, lag * hop_s if measurable else nan, peak, prominence)


def track_similarity(
    env_a: np.ndarray, env_b: np.ndarray, hop_s: float, max_lag_s: float, detrend_s: float | None = 0.5
) -> tuple[float, float]:
    """(similarity, lag s) of `track_lag` without an evidence gate: the highest peak's lag, however weak."""
    found = track_lag(env_a, env_b, hop_s, max_lag_s, detrend_s)
    return found.similarity, found.lag_s


def video_motion(path: str | os.PathLike, fps: float, size: tuple[int, int] = (32, 24)) -> np.ndarray:
    """Motion energy per frame: mean absolute grey-level change (0-255 scale) from the previous frame.

    The first video stream is decoded by ffmpeg at `fps` frames per second and scaled to
    `size` = (width, height) grey pixels (area averaging). Value i belongs to frame i at
    time i / fps (from the stream start) and measures the change from frame i - 1; the
    first value is 0. Raises MediaError for an unreadable file or one without frames.
    """
    file = _existing_file(path)
    width, height = (int(v) for v in size)
    return frame_motion(decode_grey(file, fps, width, height, what="decode video from"))


def video_motions(
    paths: list[str | os.PathLike], fps: float, size: tuple[int, int] = (32, 24)
) -> list[np.ndarray]:
    """`video_motion` of each file, decoded in one ffmpeg process (`frames.decode_grey_together`).

    The same values as one call per file. MediaError when any file is missing or unreadable
    (the message may name another file than the bad one: call `video_motion` per file to
    attribute the failure).
    """
    files = [_existing_file(path) for path in paths]
    width, height = (int(v) for v in size)
    frames = decode_grey_together(files, fps, width, height, what="decode video from")
    return [frame_motion(grey) for grey in frames]


def audio_change(audio_env: np.ndarray, audio_hop_s: float, fps: float, n_frames: int) -> np.ndarray:
    """The audio counterpart of `video_motion`: |change| of the envelope from frame to frame.

    Frame i is on screen during [i / fps, (i + 1) / fps); its audio value is the mean of
    the envelope hops (hop `audio_hop_s`, hop j covering [j, j + 1) * hop) in that
    interval, and the result is the absolute difference from the previous frame's value
    (0 for the first frame). Frames past the end of the audio are left out, so the result
    can be shorter than `n_frames`.
    """
    env = np.asarray(audio_env, dtype=np.float64).reshape(-1)
    n = min(int(n_frames), int(np.floor(env.size * audio_hop_s * fps + 1e-9)))
    if n <= 0:
        return np.zeros(0)
    edges = np.minimum(np.round(np.arange(n + 1) / (fps * audio_hop_s)).astype(int), env.size)
    cumulative = np.concatenate([[0.0], np.cumsum(env)])
    per_frame = (cumulative[edges[1:]] - cumulative[edges[:-1]]) / np.maximum(np.diff(edges), 1)
    change = np.zeros(n)
    change[1:] = np.abs(np.diff(per_frame))
    return change


def av_lag(
    audio_env: np.ndarray,
    audio_hop_s: float,
    motion: np.ndarray,
    fps: float,
    max_lag_s: float,
    min_correlation: float = 0.0,
) -> float:
    """Lag (s) of the video behind the audio of one participant; NaN when not measurable.

    Correlates frame-to-frame change of the speaker's own (linear) audio envelope, from
    `audio_change`, with the video's motion energy from `video_motion`: a mouth that
    opens and closes with the voice moves the picture when the envelope changes. Positive
    means the picture follows the sound (motion(t) ~ audio(t - lag)). Resolution is one
    frame (1 / fps); the search covers ±`max_lag_s`. A peak correlation below
    `min_correlation` (a silent speaker, a picture that does not follow this voice) makes
    the lag NaN: the position of a weak peak says nothing about sync.
    """
    motion = np.asarray(motion, dtype=np.float64).reshape(-1)
    change = audio_change(audio_env, audio_hop_s, fps, motion.size)
    correlation, lag = track_similarity(change, motion[: change.size], 1.0 / fps, max_lag_s, detrend_s=None)
    measurable = np.isfinite(correlation) and correlation >= min_correlation
    return lag if measurable else float("nan")
