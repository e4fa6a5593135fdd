"""Two-microphone cross-talk: whose is the speech silero finds on each of two microphones.

On a two-person recording each microphone also hears the other person (bleed: through the air
of a room, or a line's echo), and silero, which is nearly level-invariant, marks that bleed as
speech. `cancel_bleed` subtracts from each microphone its linear estimate of the other's voice
before silero runs; `attribute_speech` then gives silero's speech to the speaker whose
microphone leads by level, keeps a microphone's own speech under the other's louder voice, and
counts the speech heard on both at a similar level (`shared_s`). `separate_speakers` is the
whole path of one interaction: bleed cancelled, silero on each track, speech attributed.

Every function takes the config's `signals:` (and `vad:`) block whole, as
`omnisocial.settings.Signals` (`Vad`); `signals.crosstalk_margin_db` null turns attribution and
bleed cancelling off on every path (`Signals.attributes`, `Signals.cancels_bleed`).
docs/signals-and-filters.md gives the rules, and what was measured to choose them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from omnisocial.media.vad import speech_and_short_segments
from omnisocial.settings import Signals, Vad

SPEAKERS = ("a", "b")
SMOOTH_S = 0.06  # each microphone's power is averaged over three 20 ms hops (a longer one blurs turn changes)


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
    its floor is at least 3 dB over the bleed of the moment (`TAIL_MIN_HOPS` of them, or no tail:
    after cancellation a few hops of residue look like one)."""
    after = (envelope >= 10.0 * heard) & (coupling * envelope >= 4.0 * floor)
    if after.sum() < TAIL_MIN_HOPS:
        return False
    return bool(np.median(excess[after] / np.maximum(coupling * heard[after], 1e-30)) >= 2.0)


BLEED_FRAME_S = 0.032  # STFT frame of the bleed estimate: a line's echo or a room's early sound
MIN_BLEED_FRAMES = 20  # frames the other microphone must lead before a bleed path is estimated
EXPLAINED = 10.0  # a frame is bleed when the path explains all but a tenth (10 dB) of its energy
TAIL_MIN_HOPS = 100  # hops after the other's words needed to tell a room's tail (2 s at 20 ms)
MIN_EXPLAINED_SHARE = 0.25  # the share of the other's leading frames a path must explain to be bleed
LONG_PATH_MIN_SHARE = 0.1  # the share a path over `signals.bleed_path_s` must explain (and twice one frame's)
PATH_BINS_AT_ONCE = 32  # frequency bins fitted at once (bounds the memory of a long path)
THROUGH_FRAMES_AT_ONCE = 1024  # frames through a long path at once (kept in cache)
LONG_PATH_FIT_FRAMES = 4096  # leading frames a long path is fitted on, at most


def cancel_bleed(
    audio: dict[str, np.ndarray],
    sr: int,
    signals: Signals,
    lag_s: float | None = None,
    min_share: float = MIN_EXPLAINED_SHARE,
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Each microphone ("a", "b") minus its estimate of the other's voice; and, per microphone,
    the share of the frames where the other leads that are the other's voice.

    The other track, moved by the inter-track lag `lag_s` (as in `attribute_speech`), goes
    through a per-frequency path estimated by least squares over the frames (`BLEED_FRAME_S`,
    hops of half a frame) where the other microphone leads by `signals.crosstalk_margin_db`,
    and is subtracted in the short-time spectrum. Subtracting a linear estimate of the bleed
    leaves what the other track cannot explain: the microphone's own speech, also where both
    talk at once, and its noise. So the speech detector and the attribution then see each voice
    where it is, not silero's answer to the other voice's bleed.

    Two paths are fitted: one frame (a line's echo, a headset's leak: the other's sound now)
    and, with `signals.bleed_path_s`, one over the frames of the last that many seconds (a
    convolutive path: a room's reflections and tail arrive over hundreds of milliseconds,
    which one frame cannot hold; None: one frame only). The long path is used where it
    explains at least `LONG_PATH_MIN_SHARE` of the frames and twice as many as one frame:
    bleed one frame cannot hold. Elsewhere one frame is used: a longer path also fits some of
    the microphone's own sound and noise in those frames.

    Nothing is subtracted where it is not bleed: when fewer than `MIN_BLEED_FRAMES` frames have
    the other leading (two copies of one track never do: the duplicate filter judges those),
    or when the path explains (all but a tenth of the energy, `EXPLAINED`) fewer than
    `min_share` of those frames (separate lines or headsets whose coupling is under their
    noise; frames where both talk are not explained either, so the share is of frames, not of
    energy, which own speech would dominate). docs/signals-and-filters.md gives what each
    choice was measured against. `signals.crosstalk_margin_db` null: nothing leads, a
    ValueError (`Signals.cancels_bleed` says whether to call this).
    """
    from scipy.signal import istft, stft

    if not signals.attributes:
        raise ValueError("signals.crosstalk_margin_db is null: no microphone leads, no bleed to cancel")
    ratio = 10.0 ** (signals.crosstalk_margin_db / 10.0)
    frame = int(round(BLEED_FRAME_S * sr))
    path_s = signals.bleed_path_s  # None: one frame only
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
        leading = np.sum(np.abs(y) ** 2, axis=0) > energy_x * ratio
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
    signals: Signals,
    vad: Vad,
    *,
    short: dict[str, list[tuple[float, float]]] | None = None,
    lag_s: float | None = None,
) -> Attribution:
    """Attribute the silero speech of two microphones ("a", "b") to the speaker whose microphone leads.

    Per hop of `signals.hop_s`, with each microphone's power averaged over `SMOOTH_S`:

    - a microphone *leads* when its power exceeds the other's by `signals.crosstalk_margin_db`
      (which must not be None: null turns attribution off, `Signals.attributes`);
    - speech found on a microphone that the other one leads is cross-talk (removed) unless
      it is the microphone's own speech under the other's (`_own_under_other`);
    - speech found on a microphone that leads is its speaker's;
    - where neither leads, speech found on one microphone only is its speaker's (a pause
      or soft speech of its own), and speech found on both is *shared*: both speakers keep
      it (it may be overlapping talk) and its duration is `shared_s`, so that the filters
      can tell an interaction dominated by cross-talk (strong bleed, or two copies of one
      track) from one with some overlap.

    Silero then says *whether* a microphone's owner speaks; the microphone's own level says
    *where* each stretch of it starts and ends (`_aligned_to_level`, unless
    `signals.speech_edge_below_level_db` is None). The kept parts are closed over gaps shorter
    than `vad.min_silence_s`; parts not longer than `vad.min_speech_s` go to `short` instead of
    `segments`, with the stretches of `short` (silero's segments under its minimum duration,
    `speech_and_short_segments`) that pass the same rules. `lag_s`: the inter-track lag (the
    other's voice reaches a microphone that much later). Both signals share the rate `sr`.
    """
    if not signals.attributes:
        raise ValueError("signals.crosstalk_margin_db is null: attribution is off")
    hop_s = signals.hop_s
    n = max(int(np.ceil(audio[name].size / round(hop_s * sr))) for name in SPEAKERS)
    power = {name: _smoothed_power(audio[name], sr, hop_s, SMOOTH_S, n) for name in SPEAKERS}
    found = {name: _inside(segments.get(name, []), n, hop_s) for name in SPEAKERS}
    ratio = 10.0 ** (signals.crosstalk_margin_db / 10.0)
    leads = {"a": power["a"] > power["b"] * ratio, "b": power["b"] > power["a"] * ratio}
    floor = {name: noise_floor_db(power[name], hop_s, signals.noise_floor_window_s) for name in SPEAKERS}
    lag_hops = 0 if lag_s is None or not np.isfinite(lag_s) else int(round(lag_s / hop_s))
    allowed = {}
    for name, other, shift in (("a", "b", -lag_hops), ("b", "a", lag_hops)):
        heard = _Heard(power[name], floor[name], _shifted(power[other], shift), leads[other], found[other])
        own, in_tail = _own_under_other(
            heard, audio[name], _shifted_audio(audio[other], shift, sr, hop_s), sr, signals
        )
        allowed[name] = (~leads[other] | own) & ~in_tail
    kept = {name: found[name] & allowed[name] for name in SPEAKERS}
    if signals.speech_edge_below_level_db is not None:
        for name, other in (("a", "b"), ("b", "a")):
            kept[name] = _aligned_to_level(
                kept[name], power[name], floor[name], allowed[name], leads[other], signals
            )
    brief = {name: _inside((short or {}).get(name, []), n, hop_s) & ~found[name] for name in SPEAKERS}
    shared = kept["a"] & kept["b"] & ~leads["a"] & ~leads["b"]
    out_segments, out_short, overlap_own = {}, {}, {}
    for name, other in (("a", "b"), ("b", "a")):
        # short stretches of silero's own that pass the same rules join what attribution left short
        level_db = 10.0 * np.log10(np.maximum(power[name], 1e-12))
        extra = brief[name] & allowed[name] & ~kept[name]
        extra &= level_db >= floor[name] + signals.speech_edge_above_floor_db
        out_segments[name], out_short[name] = _long_and_short(kept[name], extra, n, hop_s, vad)
        taken = _inside(out_segments[name], n, hop_s)
        overlap_own[name] = float((taken & leads[other]).sum() * hop_s)
    return Attribution(out_segments, float(shared.sum() * hop_s), overlap_own, out_short)


def _shifted_audio(audio: np.ndarray, shift_hops: int, sr: int, hop_s: float) -> np.ndarray:
    return _shifted(np.asarray(audio, np.float64), shift_hops * int(round(hop_s * sr)))


@dataclass(frozen=True)
class _Heard:
    """One microphone beside the other, per hop: its power and noise floor (dB), the other's power
    as it reaches this microphone (at the lag), where the other leads, and where the other has speech."""

    power: np.ndarray
    floor_db: np.ndarray
    other: np.ndarray
    other_leads: np.ndarray
    other_found: np.ndarray


def _own_under_other(
    heard: _Heard, audio: np.ndarray, other_audio: np.ndarray, sr: int, signals: Signals
) -> tuple[np.ndarray, np.ndarray]:
    """(own, in_tail) per hop: the microphone's own speech where the other leads, and the hops
    where neither leads that the other's reverberant tail explains.

    Bleed is the other track heard at the room's (or line's) coupling level: the *coupling* is
    the median power ratio of this microphone to the other where the other leads and has speech
    (mostly pure bleed), counting only this microphone's power over its noise floor there
    (separate lines, whose power there is their own noise, get none); the bleed expected in a hop
    is the other's power there times the coupling. Where the microphone shows a room's tail
    (`_has_tail`) the other's power instead decays 60 dB over `signals.bleed_tail_s` from each
    hop (a room's bleed outlasts the voice; None: never), and a hop where neither leads whose
    power that tail explains to within `signals.own_speech_excess_db` is the tail. A hop holds
    own speech when the power left after the bleed is `own_speech_excess_db` over it and
    `speech_edge_above_floor_db` over the noise floor; a stretch of such hops is kept unless more
    than `bleed_coherence` of its energy is coherent with the other track (`coherent_fraction`:
    bleed louder than the usual coupling, a head turned to the other microphone).
    `own_speech_excess_db` None: no own speech where the other leads (and no tail).
    """
    n = heard.power.size
    own, in_tail = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if signals.own_speech_excess_db is None:
        return own, in_tail
    hop_s = signals.hop_s
    pure = heard.other_leads & heard.other_found & (heard.other > 0)
    floor_power = 10.0 ** (heard.floor_db / 10.0)
    excess = np.maximum(heard.power - floor_power, 0.0)
    coupling = float(np.median(excess[pure] / heard.other[pure])) if pure.any() else 0.0
    reach = heard.other
    if signals.bleed_tail_s is not None and coupling > 0:
        envelope = _decaying_envelope(heard.other, 60.0 * hop_s / signals.bleed_tail_s)
        if _has_tail(excess, heard.other, envelope, coupling, floor_power):
            reach = envelope
    bleed = coupling * reach
    over = 10.0 ** (signals.own_speech_excess_db / 10.0)
    rest = heard.power - bleed
    level_db = 10.0 * np.log10(np.maximum(rest, 1e-12))
    candidate = (
        heard.other_leads
        & (rest >= bleed * over)
        & (level_db >= heard.floor_db + signals.speech_edge_above_floor_db)
    )
    hop = int(round(hop_s * sr))
    for first, stop in _runs(candidate):
        x, y = audio[first * hop : stop * hop], other_audio[first * hop : stop * hop]
        if not coherent_fraction(x, y) > signals.bleed_coherence:
            own[first:stop] = True
    if reach is not heard.other:
        # where neither microphone leads (the other's own level has fallen after a word) a
        # hop that the tail explains to within `own_speech_excess_db` is tail, not this voice
        in_tail = ~heard.other_leads & (bleed > 0) & (heard.power < bleed * over)
    return own, in_tail


def _aligned_to_level(
    kept: np.ndarray,
    power: np.ndarray,
    floor_db: np.ndarray,
    allowed: np.ndarray,
    other_leads: np.ndarray,
    signals: Signals,
) -> np.ndarray:
    """Kept speech with its edges where the microphone is voiced (`_voiced`, `_align_edges`).

    A hop is voiced when its power is within `speech_edge_below_level_db` of the microphone's
    speech level (the median over its kept hops) and `speech_edge_above_floor_db` over its noise
    floor. Each stretch loses the unvoiced hops at its ends that lie within
    `speech_edge_hangover_s` of hops the other microphone leads (silero's hangover follows the
    other's bleed; None: every unvoiced end), keeping those farther away (a soft speaker's decay
    or weak consonant under the floor), and grows over the voiced hops next to it that are its
    own (silero rises late on speech that begins in overlap or under a noise floor).
    """
    voiced = _voiced(
        power, kept, signals.speech_edge_below_level_db, signals.speech_edge_above_floor_db, floor_db
    )
    near = None
    if signals.speech_edge_hangover_s is not None:
        width = 2 * int(round(signals.speech_edge_hangover_s / signals.hop_s)) + 1
        near = np.convolve(other_leads.astype(float), np.ones(width), mode="same") > 0
    return _align_edges(kept, voiced, allowed, near)


def _long_and_short(
    kept: np.ndarray, extra: np.ndarray, n: int, hop_s: float, vad: Vad
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The kept hops closed over gaps under `vad.min_silence_s`: the stretches longer than
    `vad.min_speech_s`, and the rest with the `extra` short hops (every non-empty stretch)."""
    stretches = _closed(kept, hop_s, vad.min_silence_s)
    segments = [(s, e) for s, e in stretches if e - s > vad.min_speech_s]
    taken = _inside(segments, n, hop_s)
    short = [(s, e) for s, e in _closed((kept & ~taken) | extra, hop_s, vad.min_silence_s) if e - s > 0]
    return segments, short


def separate_speakers(
    audio: dict[str, np.ndarray], sr: int, lag_s: float | None, signals: Signals, vad: Vad
) -> tuple[dict[str, list], dict[str, list], float | None]:
    """Each speaker's silero speech on a two-microphone recording: (segments, short, shared_s).

    Bleed is cancelled first (`cancel_bleed`, where `signals.cancels_bleed`), silero runs on each
    track (`speech_and_short_segments`), and the speech is attributed by level
    (`attribute_speech`, where `signals.attributes`; else silero's speech is each speaker's as
    found and `shared_s` is None: not measured).
    """
    heard = cancel_bleed(audio, sr, signals, lag_s)[0] if signals.cancels_bleed else audio
    found = {speaker: speech_and_short_segments(heard[speaker], sr, vad) for speaker in SPEAKERS}
    segments = {speaker: found[speaker][0] for speaker in SPEAKERS}
    short = {speaker: found[speaker][1] for speaker in SPEAKERS}
    if not signals.attributes:
        return segments, short, None
    attribution = attribute_speech(segments, heard, sr, signals, vad, short=short, lag_s=lag_s)
    return attribution.segments, attribution.short, attribution.shared_s
