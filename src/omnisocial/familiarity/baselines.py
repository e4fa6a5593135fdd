"""Offline baselines for the familiarity task: behavioural features, chance and majority.

Length (about 600 lines): the feature definitions, the cross-validated model and the
registry backend (`build_baseline`, named by `models.registry`) share one set of
definitions, listed below, and read as one unit.

`behavioural_features` turns one 20 s stimulus (one audio channel per participant plus the
timed transcript) into turn-taking and prosody numbers. `BehaviouralModel` standardizes
them and fits a logistic regression, predicting every dyad from a model that never saw it
(grouped, seeded cross-validation). `baseline_predictions` writes all three baselines in
the PREDICTIONS contract so they are scored exactly like the models and the people.

Definitions (times in seconds, inside the clip):

- turns: a speaker's consecutive segments separated by at most `merge_gap_s` form one turn
  (the same rule as filter F2); segments are ordered by start time;
- floor transfer offset (FTO) of a speaker change: next turn's start - previous turn's end
  (negative = the next speaker started before the previous one stopped);
- `gap_mean_s`, `gap_median_s`: mean / median of the positive FTOs (silent gaps); NaN
  when there are none; `fto_mean_s`: mean signed FTO over all speaker changes;
- `overlap_rate`: time both speak / time at least one speaks (from the segments);
  `overlap_mean_s`: mean duration of the overlap episodes (NaN when there are none);
- `turn_mean_s`: mean turn duration; `turns_per_min`: turns / clip duration * 60;
- `speech_rate_wps`: transcript words / summed segment duration;
- `f0_mean_hz`, `f0_sd_hz`: mean / sd of a YIN-style f0 estimate over voiced 10 ms frames
  inside each speaker's own segments on that speaker's own channel (so crosstalk is not
  counted), both speakers pooled;
- `energy_mean_db`, `energy_sd_db`: RMS level (dBFS) of the frames inside the segments.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.io import sha256_file
from omnisocial.models.base import Reply, Request
from omnisocial.tables import PREDICTIONS, RELATIONSHIPS

FEATURES = (
    "gap_mean_s",
    "gap_median_s",
    "fto_mean_s",
    "overlap_rate",
    "overlap_mean_s",
    "turn_mean_s",
    "turns_per_min",
    "speech_rate_wps",
    "f0_mean_hz",
    "f0_sd_hz",
    "energy_mean_db",
    "energy_sd_db",
)
BEHAVIOURAL_MODEL = "baseline_behavioural"
CHANCE_MODEL = "baseline_chance"
MAJORITY_MODEL = "baseline_majority"
FRAME_S = 0.04
HOP_S = 0.01


# --- f0 ------------------------------------------------------------------------------------


def _frames(signal: np.ndarray, length: int, hop: int) -> np.ndarray:
    if signal.size < length:
        return np.empty((0, length), dtype=np.float64)
    count = 1 + (signal.size - length) // hop
    index = np.arange(length)[None, :] + hop * np.arange(count)[:, None]
    return signal[index].astype(np.float64)


def estimate_f0(
    signal: np.ndarray,
    sr: int,
    fmin: float = 60.0,
    fmax: float = 400.0,
    frame_s: float = FRAME_S,
    hop_s: float = HOP_S,
    threshold: float = 0.15,
    silence_db: float = -50.0,
    within: Sequence[tuple[float, float]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """YIN f0 track: (frame centre times, f0 in Hz with NaN for unvoiced/silent frames).

    Per frame: the difference function d(tau) over a window of `frame_s` (computed with
    FFT cross-correlation), its cumulative-mean normalization d'(tau), the first tau in
    [sr/fmax, sr/fmin] with d' below `threshold` followed to its local minimum, refined by
    parabolic interpolation (de Cheveigne & Kawahara 2002, steps 1-5). Frames quieter than
    `silence_db` dBFS are unvoiced. With `within` (start, end) intervals in seconds, only
    frames whose centre lies inside one are analysed and the rest are NaN: each frame is
    analysed on its own, so those frames get the same f0 as without `within`.
    """
    signal = np.asarray(signal, dtype=np.float64).ravel()
    tau_min = max(2, int(np.floor(sr / fmax)))
    tau_max = int(np.ceil(sr / fmin))
    window = int(round(frame_s * sr))
    hop = max(1, int(round(hop_s * sr)))
    frames = _frames(signal, window + tau_max + 1, hop)
    times = (np.arange(len(frames)) * hop + window / 2) / sr
    f0 = np.full(len(frames), np.nan)
    analysed = np.arange(len(frames))  # the row of `f0` each row of `frames` fills
    if within is not None:
        analysed = np.flatnonzero(_inside(times, within))
        frames = frames[analysed]
    if len(frames) == 0:
        return times, f0
    head = frames[:, :window]
    n_fft = 1 << int(np.ceil(np.log2(frames.shape[1] + window)))
    spectrum = np.conj(np.fft.rfft(head, n_fft, axis=1)) * np.fft.rfft(frames, n_fft, axis=1)
    cross = np.fft.irfft(spectrum, n_fft, axis=1)[:, : tau_max + 1]  # r(tau) = sum_j x_j x_{j+tau}
    squares = np.concatenate([np.zeros((len(frames), 1)), np.cumsum(frames**2, axis=1)], axis=1)
    taus = np.arange(tau_max + 1)
    energy_shift = squares[:, taus + window] - squares[:, taus]  # sum_{j<W} x_{j+tau}^2
    diff = energy_shift[:, :1] + energy_shift - 2.0 * cross
    diff[:, 0] = 0.0
    diff = np.maximum(diff, 0.0)
    cumulative = np.cumsum(diff[:, 1:], axis=1)
    normalized = np.ones_like(diff)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized[:, 1:] = np.where(cumulative > 0, diff[:, 1:] * taus[1:] / cumulative, 1.0)
    rms = np.sqrt(np.mean(head**2, axis=1))
    loud = 20 * np.log10(np.maximum(rms, 1e-12)) > silence_db
    for row in np.flatnonzero(loud):
        curve = normalized[row]
        below = np.flatnonzero(curve[tau_min : tau_max + 1] < threshold)
        if below.size == 0:
            continue
        tau = tau_min + int(below[0])
        while tau + 1 <= tau_max and curve[tau + 1] < curve[tau]:
            tau += 1
        shift = 0.0
        if tau_min < tau < tau_max:
            left, centre, right = curve[tau - 1], curve[tau], curve[tau + 1]
            denominator = left - 2 * centre + right
            if denominator > 0:
                shift = 0.5 * (left - right) / denominator
        f0[analysed[row]] = sr / (tau + shift)
    return times, f0


def frame_energy_db(signal: np.ndarray, sr: int, frame_s: float = FRAME_S, hop_s: float = HOP_S):
    """(frame centre times, RMS level in dBFS) on the same frame grid as `estimate_f0`."""
    window = int(round(frame_s * sr))
    hop = max(1, int(round(hop_s * sr)))
    frames = _frames(np.asarray(signal, dtype=np.float64).ravel(), window, hop)
    times = (np.arange(len(frames)) * hop + window / 2) / sr
    rms = np.sqrt(np.mean(frames**2, axis=1)) if len(frames) else np.empty(0)
    return times, 20 * np.log10(np.maximum(rms, 1e-10))


# --- turn-taking ---------------------------------------------------------------------------


def _segments_frame(segments) -> pd.DataFrame:
    frame = pd.DataFrame(list(segments) if not isinstance(segments, pd.DataFrame) else segments)
    if frame.empty:
        return pd.DataFrame({"speaker": [], "start": [], "end": [], "text": []})
    if "text" not in frame:
        frame["text"] = ""
    frame = frame.assign(
        speaker=frame["speaker"].astype(str),
        start=frame["start"].astype(float),
        end=frame["end"].astype(float),
        text=frame["text"].fillna("").astype(str),
    )
    bad = frame[frame["end"] < frame["start"]]
    if len(bad):
        raise ValueError(f"segment ends before it starts: {bad.iloc[0].to_dict()}")
    return frame.sort_values(["start", "end"], kind="mergesort").reset_index(drop=True)


def merge_turns(segments, merge_gap_s: float = 0.3) -> list[tuple[str, float, float]]:
    """(speaker, start, end) turns: same-speaker segments within `merge_gap_s` are merged."""
    turns: list[list] = []
    for row in _segments_frame(segments).itertuples(index=False):
        if turns and turns[-1][0] == row.speaker and row.start - turns[-1][2] <= merge_gap_s:
            turns[-1][2] = max(turns[-1][2], row.end)
        else:
            turns.append([row.speaker, row.start, row.end])
    return [tuple(turn) for turn in turns]


def _union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _intersection(first, second) -> list[tuple[float, float]]:
    out, i, j = [], 0, 0
    while i < len(first) and j < len(second):
        start, end = max(first[i][0], second[j][0]), min(first[i][1], second[j][1])
        if end > start:
            out.append((start, end))
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return out


def turn_taking_features(segments, duration_s: float, merge_gap_s: float = 0.3) -> dict[str, float]:
    frame = _segments_frame(segments)
    turns = merge_turns(frame, merge_gap_s)
    offsets = np.array(
        [nxt[1] - prev[2] for prev, nxt in zip(turns, turns[1:], strict=False) if nxt[0] != prev[0]],
        dtype=float,
    )
    gaps = offsets[offsets > 0]
    by_speaker = {
        speaker: _union(zip(group["start"], group["end"], strict=True))
        for speaker, group in frame.groupby("speaker")
    }
    speakers = sorted(by_speaker)
    overlaps = _intersection(by_speaker[speakers[0]], by_speaker[speakers[1]]) if len(speakers) >= 2 else []
    union_s = sum(end - start for start, end in _union([iv for ivs in by_speaker.values() for iv in ivs]))
    overlap_s = sum(end - start for start, end in overlaps)
    talk_s = float((frame["end"] - frame["start"]).sum())
    words = int(frame["text"].str.split().str.len().sum()) if len(frame) else 0
    nan = float("nan")
    return {
        "gap_mean_s": float(gaps.mean()) if gaps.size else nan,
        "gap_median_s": float(np.median(gaps)) if gaps.size else nan,
        "fto_mean_s": float(offsets.mean()) if offsets.size else nan,
        "overlap_rate": overlap_s / union_s if union_s > 0 else nan,
        "overlap_mean_s": overlap_s / len(overlaps) if overlaps else nan,
        "turn_mean_s": float(np.mean([end - start for _, start, end in turns])) if turns else nan,
        "turns_per_min": len(turns) / duration_s * 60.0 if duration_s > 0 else nan,
        "speech_rate_wps": words / talk_s if talk_s > 0 else nan,
    }


def _inside(times: np.ndarray, intervals: Sequence[tuple[float, float]]) -> np.ndarray:
    mask = np.zeros(times.shape, dtype=bool)
    for start, end in intervals:
        mask |= (times >= start) & (times < end)
    return mask


def behavioural_features(
    audio_a: np.ndarray,
    audio_b: np.ndarray,
    sr: int,
    segments,
    merge_gap_s: float = 0.3,
    fmin: float = 60.0,
    fmax: float = 400.0,
) -> dict[str, float]:
    """Turn-taking and prosody features of one clip (see the module docstring).

    `audio_a`/`audio_b`: each participant's channel (pass the same mix twice for a mono
    stimulus); `segments`: records or a frame with speaker ('a'/'b'), start, end, text, in
    seconds from the clip start.
    """
    audio_a = np.asarray(audio_a, dtype=np.float64).ravel()
    audio_b = np.asarray(audio_b, dtype=np.float64).ravel()
    duration = max(audio_a.size, audio_b.size) / float(sr)
    frame = _segments_frame(segments)
    features = turn_taking_features(frame, duration, merge_gap_s)
    pitches, levels = [], []
    for speaker, channel in (("a", audio_a), ("b", audio_b)):
        own = frame[frame["speaker"] == speaker]
        intervals = list(zip(own["start"], own["end"], strict=True))
        if not intervals or channel.size == 0:
            continue
        times, f0 = estimate_f0(channel, sr, fmin=fmin, fmax=fmax, within=intervals)
        voiced = np.isfinite(f0)
        pitches.append(f0[voiced])
        energy_times, energy = frame_energy_db(channel, sr)
        levels.append(energy[_inside(energy_times, intervals)])
    pitch = np.concatenate(pitches) if pitches else np.empty(0)
    level = np.concatenate(levels) if levels else np.empty(0)
    nan = float("nan")
    features.update(
        f0_mean_hz=float(pitch.mean()) if pitch.size else nan,
        f0_sd_hz=float(pitch.std(ddof=1)) if pitch.size > 1 else nan,
        energy_mean_db=float(level.mean()) if level.size else nan,
        energy_sd_db=float(level.std(ddof=1)) if level.size > 1 else nan,
    )
    return features


def read_segments(source, clip_start: float = 0.0) -> pd.DataFrame:
    """Segments from a frame, records, or a CSV/JSON file; times shifted by -`clip_start`."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.suffix.lower() == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            records = data.get("segments", data) if isinstance(data, dict) else data
            frame = pd.DataFrame(records)
        else:
            frame = pd.read_csv(path, dtype={"speaker": str, "text": str}, keep_default_na=False)
    else:
        frame = pd.DataFrame(source)
    frame = _segments_frame(frame)
    if clip_start:
        frame = frame.assign(start=frame["start"] - clip_start, end=frame["end"] - clip_start)
    return frame


def features_from_stimulus(
    audio_stereo_wav: str | os.PathLike, transcript_segments, clip_start: float = 0.0, **options
) -> dict[str, float]:
    """Features of a rendered stimulus: channel 0 = participant a, channel 1 = b.

    A mono file is used for both speakers (prosody then comes from the mix, restricted to
    each speaker's segments). `transcript_segments`: see `read_segments`; give `clip_start`
    when the segment times are in interaction time rather than clip time.
    """
    import soundfile as sf

    data, sr = sf.read(str(audio_stereo_wav), dtype="float64", always_2d=True)
    audio_a = data[:, 0]
    audio_b = data[:, 1] if data.shape[1] > 1 else data[:, 0]
    segments = read_segments(transcript_segments, clip_start)
    return behavioural_features(audio_a, audio_b, int(sr), segments, **options)


# --- predictions ---------------------------------------------------------------------------


def _truth_series(truth) -> pd.Series:
    if isinstance(truth, pd.DataFrame):
        label_column = "truth" if "truth" in truth else "relationship"
        id_column = "item_id" if "item_id" in truth else "dyad_id"
        series = pd.Series(truth[label_column].to_numpy(), index=truth[id_column].astype(str).to_numpy())
    else:
        series = pd.Series(dict(truth))
    series.index = series.index.astype(str)
    bad = sorted(set(series) - set(RELATIONSHIPS))
    if bad:
        raise ValueError(f"truth labels must be {RELATIONSHIPS}, found {bad}")
    return series.astype(str)


def coin_flip(item_id: str, seed: int = 42) -> str:
    """A fair coin for one item, seeded by (seed, item id): the same whatever the item order."""
    item_key = int.from_bytes(hashlib.sha256(str(item_id).encode()).digest()[:8], "big")
    return str(RELATIONSHIPS[int(np.random.default_rng([int(seed), item_key]).integers(2))])


def chance_predictions(items: Sequence[str], seed: int = 42) -> pd.DataFrame:
    """Seeded fair coin flips (see `coin_flip`), confidence 0.5."""
    labels = [coin_flip(item, seed) for item in items]
    return pd.DataFrame({"item_id": [str(i) for i in items], "label": labels, "confidence": 0.5})


def majority_predictions(train_truth, items: Sequence[str] | None = None, seed: int = 42) -> pd.DataFrame:
    """The most frequent label of `train_truth` for every item of `items` (default: its own).

    Confidence = that label's share in `train_truth`. A tie is broken by a seeded coin.
    """
    truth = _truth_series(train_truth)
    if truth.empty:
        raise ValueError("majority baseline needs at least one training label")
    counts = truth.value_counts().reindex(list(RELATIONSHIPS), fill_value=0)
    top = counts[counts == counts.max()].index.tolist()
    label = top[0] if len(top) == 1 else str(np.random.default_rng(seed).choice(top))
    targets = list(truth.index) if items is None else [str(i) for i in items]
    share = float(counts[label] / counts.sum())
    return pd.DataFrame({"item_id": targets, "label": label, "confidence": share})


@dataclass
class Fold:
    index: int
    train_groups: frozenset
    test_groups: frozenset
    test_items: tuple[str, ...]


@dataclass
class BehaviouralModel:
    """Standardized features + logistic regression, cross-validated by groups (dyads).

    `n_splits`: number of folds (seeded `StratifiedGroupKFold`, capped by the number of
    groups of the rarer class), or "loo" for leave-one-dyad-out. Missing feature values
    are imputed with the training fold's median; scaler, imputer and model are fitted on
    the training fold only.
    """

    features: Sequence[str] = FEATURES
    n_splits: int | str = 10
    seed: int = 42
    C: float = 1.0
    folds_: list[Fold] = field(default_factory=list, init=False)

    def _pipeline(self):
        from sklearn.impute import SimpleImputer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(
            SimpleImputer(strategy="median", keep_empty_features=True),
            StandardScaler(),
            LogisticRegression(C=self.C, max_iter=1000, random_state=self.seed),
        )

    def _splitter(self, y: np.ndarray, groups: np.ndarray):
        from sklearn.model_selection import LeaveOneGroupOut, StratifiedGroupKFold

        if self.n_splits == "loo":
            return LeaveOneGroupOut()
        per_class = [len(set(groups[y == label])) for label in np.unique(y)]
        n_splits = min(int(self.n_splits), *per_class)
        if n_splits < 2:
            raise ValueError("grouped cross-validation needs at least 2 groups of each class")
        return StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=self.seed)

    def cross_val_predict(
        self, table: pd.DataFrame, truth=None, group_col: str | None = None
    ) -> pd.DataFrame:
        """Out-of-fold predictions: item_id, truth, label, confidence, p_familiar, fold.

        `table`: one row per item with `item_id`, the feature columns and, unless `truth` is
        given, a `truth` column; `group_col` (default: `dyad_id` if present, else `item_id`)
        names the unit that must never be on both sides of a split.
        """
        frame = table.copy()
        frame["item_id"] = frame["item_id"].astype(str)
        if truth is not None:
            labels = _truth_series(truth)
            missing = sorted(set(frame["item_id"]) - set(labels.index))
            if missing:
                raise ValueError(f"no truth for item(s) {', '.join(missing[:5])}")
            frame["truth"] = frame["item_id"].map(labels)
        group_col = group_col or ("dyad_id" if "dyad_id" in frame else "item_id")
        absent = [name for name in self.features if name not in frame]
        if absent:
            raise ValueError(f"feature column(s) missing: {', '.join(absent)}")
        x = frame[list(self.features)].astype(float).to_numpy()
        y = (frame["truth"] == "familiar").astype(int).to_numpy()
        groups = frame[group_col].astype(str).to_numpy()
        p_familiar = np.full(len(frame), np.nan)
        fold_of = np.full(len(frame), -1)
        self.folds_ = []
        for number, (train, test) in enumerate(self._splitter(y, groups).split(x, y, groups)):
            train_groups, test_groups = frozenset(groups[train]), frozenset(groups[test])
            if train_groups & test_groups:  # the guarantee this baseline rests on
                raise AssertionError(
                    f"fold {number}: groups on both sides: {sorted(train_groups & test_groups)}"
                )
            if len(np.unique(y[train])) < 2:
                raise ValueError(f"fold {number}: training data hold one class only")
            model = self._pipeline().fit(x[train], y[train])
            p_familiar[test] = model.predict_proba(x[test])[:, list(model.classes_).index(1)]
            fold_of[test] = number
            self.folds_.append(Fold(number, train_groups, test_groups, tuple(frame["item_id"].iloc[test])))
        familiar = p_familiar >= 0.5
        return pd.DataFrame(
            {
                "item_id": frame["item_id"].to_numpy(),
                "truth": frame["truth"].to_numpy(),
                "label": np.where(familiar, "familiar", "stranger"),
                "confidence": np.where(familiar, p_familiar, 1.0 - p_familiar),
                "p_familiar": p_familiar,
                "fold": fold_of,
            }
        )


def baseline_predictions(features_table: pd.DataFrame, truth, params: Mapping | None = None) -> pd.DataFrame:
    """All offline baselines as a PREDICTIONS table (model, modality, item_id, truth, label, confidence).

    params: `seed` (42), `n_splits` (10 or "loo"), `C` (1.0), `features` (all of FEATURES),
    `group_col`, `modality` ("audio": the features come from the audio and its timed
    transcript), `models` (which baselines; default all three). The majority baseline is
    computed per cross-validation fold from the training labels only (the same folds as
    the behavioural model), so it too never sees the item it predicts.
    """
    params = dict(params or {})
    seed = int(params.get("seed", 42))
    modality = params.get("modality", "audio")
    wanted = params.get("models", (BEHAVIOURAL_MODEL, CHANCE_MODEL, MAJORITY_MODEL))
    labels = _truth_series(truth)
    frame = features_table.copy()
    frame["item_id"] = frame["item_id"].astype(str)
    frame["truth"] = frame["item_id"].map(labels)
    if frame["truth"].isna().any():
        raise ValueError(f"no truth for item(s) {', '.join(frame.loc[frame['truth'].isna(), 'item_id'][:5])}")
    model = BehaviouralModel(
        features=tuple(params.get("features", FEATURES)),
        n_splits=params.get("n_splits", 10),
        seed=seed,
        C=float(params.get("C", 1.0)),
    )
    outputs = []
    behavioural = model.cross_val_predict(frame, group_col=params.get("group_col"))
    if BEHAVIOURAL_MODEL in wanted:
        outputs.append(behavioural.assign(model=BEHAVIOURAL_MODEL))
    if CHANCE_MODEL in wanted:
        chance = chance_predictions(frame["item_id"].tolist(), seed)
        outputs.append(chance.assign(model=CHANCE_MODEL, truth=frame["truth"].to_numpy()))
    if MAJORITY_MODEL in wanted:
        parts = []
        for fold in model.folds_:
            train_truth = frame.loc[~frame["item_id"].isin(fold.test_items), ["item_id", "truth"]]
            parts.append(majority_predictions(train_truth, fold.test_items, seed=seed + fold.index))
        majority = pd.concat(parts, ignore_index=True)
        majority["truth"] = majority["item_id"].map(labels)
        outputs.append(majority.assign(model=MAJORITY_MODEL))
    result = pd.concat(outputs, ignore_index=True).assign(modality=modality)
    result = result.sort_values(["model", "item_id"], kind="mergesort").reset_index(drop=True)
    return PREDICTIONS.validate(result[PREDICTIONS.names], source="baseline_predictions")


# --- baselines behind the Backend interface (for the registry and the inference runner) -------


def _answer(label: str, confidence: float, rationale: str) -> str:
    """The reply a model is asked for (section 1.7), so baselines go through the same parser."""
    return json.dumps(
        {
            "relationship_label": label.upper(),
            "confidence": round(float(confidence), 6),
            "rationale": rationale,
        }
    )


class BaselineBackend:
    """A baseline answering each request by its item id, as a `Backend`.

    kinds: ``chance`` (seeded `coin_flip`), ``majority`` (a fixed label: `label`, or the
    majority of a `truth` table), ``behavioural`` (reads out-of-fold predictions written by
    `baseline_predictions`, so the cross-validation runs once over the whole design and each
    reply is a prediction from a model that never saw the item).
    """

    concurrency = 1
    batch_size = 64

    def __init__(self, kind: str, name: str, seed: int = 42, options: Mapping | None = None):
        options = dict(options or {})
        self.kind, self.name, self.seed = kind, name, int(seed)
        self.modalities = tuple(options.pop("modalities", ("text", "audio", "video")))
        self._answers: dict[str, tuple[str, float]] = {}
        self._source = ""
        if kind == "chance":
            pass
        elif kind == "majority":
            if "label" in options:
                label = str(options["label"]).lower()
                if label not in RELATIONSHIPS:
                    raise ValueError(f"majority baseline label must be one of {RELATIONSHIPS}, not {label!r}")
                self._fixed = (label, float(options.get("confidence", 0.5)))
            elif "truth" in options:
                path = Path(options["truth"])
                table = pd.read_csv(path, dtype=str, keep_default_na=False)
                majority = majority_predictions(table, items=["_"], seed=self.seed)
                self._fixed = (str(majority["label"].iloc[0]), float(majority["confidence"].iloc[0]))
                self._source = sha256_file(path)
            else:
                raise ValueError("majority baseline needs options.label or options.truth (a CSV of labels)")
        elif kind == "behavioural":
            if "predictions" not in options:
                raise ValueError("behavioural baseline needs options.predictions (from baseline_predictions)")
            path = Path(options["predictions"])
            table = pd.read_csv(path, dtype=str, keep_default_na=False)
            if "model" in table:
                table = table[table["model"] == BEHAVIOURAL_MODEL]
            if "modality" in table and options.get("modality"):
                table = table[table["modality"] == options["modality"]]
            self._answers = {
                str(row.item_id): (str(row.label), float(row.confidence))
                for row in table.itertuples(index=False)
            }
            self._source = sha256_file(path)
        else:
            raise ValueError(f"unknown baseline {kind!r}; expected chance, majority or behavioural")

    def fingerprint(self) -> str:
        extra = f"#{self._source[:16]}" if self._source else ""
        fixed = getattr(self, "_fixed", None)
        label = f":{fixed[0]}" if fixed and not self._source else ""
        return f"baseline:{self.kind}{label}:seed={self.seed}{extra}"

    def _reply(self, request: Request) -> Reply:
        if self.kind == "chance":
            return Reply(text=_answer(coin_flip(request.item_id, self.seed), 0.5, "coin flip"))
        if self.kind == "majority":
            label, confidence = self._fixed
            return Reply(text=_answer(label, confidence, "majority class"))
        if request.item_id not in self._answers:
            return Reply(text=None, error=f"no behavioural prediction for item {request.item_id!r}")
        label, confidence = self._answers[request.item_id]
        return Reply(text=_answer(label, confidence, "turn-taking and prosody features"))

    def generate(self, requests: list[Request]) -> list[Reply]:
        return [self._reply(request) for request in requests]


def build_baseline(entry: Mapping) -> BaselineBackend:
    """The registry's constructor: ``model`` names the baseline, ``options`` its parameters."""
    options = dict(entry.get("options") or {})
    options.setdefault("modalities", tuple(entry.get("modalities") or ("text", "audio", "video")))
    seed = int(options.pop("seed", (entry.get("generation") or {}).get("seed", 42)))
    return BaselineBackend(str(entry["model"]), str(entry.get("name") or entry["model"]), seed, options)
