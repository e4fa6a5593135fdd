from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from omnisocial.familiarity.baselines import (
    BEHAVIOURAL_MODEL,
    CHANCE_MODEL,
    FEATURES,
    MAJORITY_MODEL,
    BehaviouralModel,
    baseline_predictions,
    behavioural_features,
    chance_predictions,
    estimate_f0,
    features_from_stimulus,
    majority_predictions,
    merge_turns,
    turn_taking_features,
)
from omnisocial.tables import PREDICTIONS

SR = 16000


def _tone(freq, seconds, amplitude=0.3):
    t = np.arange(int(seconds * SR)) / SR
    return amplitude * np.sin(2 * np.pi * freq * t)


@pytest.mark.parametrize("freq", [100.0, 200.0, 310.0])
def test_f0_of_a_pure_tone(freq):
    times, f0 = estimate_f0(_tone(freq, 1.0), SR)
    voiced = f0[np.isfinite(f0)]
    assert voiced.size > 0.9 * f0.size
    assert abs(np.median(voiced) - freq) < 5.0
    assert np.all(np.abs(voiced - freq) < 5.0)
    assert np.all(np.diff(times) > 0)


def test_f0_silence_and_noise_are_unvoiced():
    _, silent = estimate_f0(np.zeros(SR), SR)
    assert np.isnan(silent).all()
    _, noisy = estimate_f0(np.random.default_rng(0).normal(0, 0.3, SR), SR)
    assert np.isnan(noisy).mean() > 0.8


def test_f0_within_intervals_matches_the_whole_track_there():
    """Only frames centred in `within` are analysed (the speaker's own turns), each with the
    f0 it gets when the whole track is analysed; every other frame is NaN."""
    rng = np.random.default_rng(3)
    signal = np.concatenate([_tone(140.0, 0.7), np.zeros(SR // 2), _tone(230.0, 0.8)])
    signal = signal + rng.normal(0.0, 0.01, signal.size)
    within = [(0.1, 0.5), (1.3, 1.9)]
    times, whole = estimate_f0(signal, SR)
    same_times, part = estimate_f0(signal, SR, within=within)
    np.testing.assert_array_equal(same_times, times)
    inside = np.zeros(times.shape, dtype=bool)
    for start, end in within:
        inside |= (times >= start) & (times < end)
    np.testing.assert_array_equal(part[inside], whole[inside])
    assert np.isfinite(part[inside]).mean() > 0.9
    assert np.isnan(part[~inside]).all() and np.isfinite(whole[~inside]).sum() > 30
    _, none = estimate_f0(signal, SR, within=[])
    assert np.isnan(none).all()


SEGMENTS = [
    # speaker, start, end, text
    ("a", 0.0, 2.0, "one two three four"),
    ("a", 2.1, 3.0, "five six"),  # merged with the previous one (gap 0.1 <= 0.3)
    ("b", 3.5, 5.0, "seven eight nine"),  # gap 0.5
    ("a", 4.5, 6.0, "ten"),  # overlap 0.5 s
    ("b", 7.0, 8.0, "eleven twelve"),  # gap 1.0
]


def _segments():
    return pd.DataFrame(SEGMENTS, columns=["speaker", "start", "end", "text"])


def test_turn_taking_by_hand():
    assert merge_turns(_segments()) == [("a", 0.0, 3.0), ("b", 3.5, 5.0), ("a", 4.5, 6.0), ("b", 7.0, 8.0)]
    f = turn_taking_features(_segments(), duration_s=10.0)
    assert f["gap_mean_s"] == pytest.approx(0.75)  # gaps 0.5 and 1.0
    assert f["gap_median_s"] == pytest.approx(0.75)
    assert f["fto_mean_s"] == pytest.approx((0.5 - 0.5 + 1.0) / 3)
    # union of speech: [0,2] [2.1,3] [3.5,6] [7,8] = 2 + 0.9 + 2.5 + 1 = 6.4; overlap 0.5
    assert f["overlap_rate"] == pytest.approx(0.5 / 6.4)
    assert f["overlap_mean_s"] == pytest.approx(0.5)
    assert f["turn_mean_s"] == pytest.approx((3.0 + 1.5 + 1.5 + 1.0) / 4)
    assert f["turns_per_min"] == pytest.approx(4 / 10 * 60)
    assert f["speech_rate_wps"] == pytest.approx(12 / (2.0 + 0.9 + 1.5 + 1.5 + 1.0))


def test_behavioural_features_from_two_channels(tmp_path):
    duration = 10.0
    audio_a = np.zeros(int(duration * SR))
    audio_b = np.zeros(int(duration * SR))
    for speaker, start, end, _ in SEGMENTS:
        channel, freq = (audio_a, 120.0) if speaker == "a" else (audio_b, 220.0)
        piece = _tone(freq, end - start)
        channel[int(start * SR) : int(start * SR) + piece.size] = piece
    audio_b += 0.02 * audio_a  # crosstalk must not leak into b's pitch
    features = behavioural_features(audio_a, audio_b, SR, _segments())
    assert set(features) == set(FEATURES)
    # frames of a: 6.0 s of 120 Hz; frames of b: 2.5 s of 220 Hz -> pooled mean between them
    assert 120 < features["f0_mean_hz"] < 220
    assert features["f0_sd_hz"] > 20
    assert -15 < features["energy_mean_db"] < -5  # a 0.3 sine is about -13 dBFS

    wav = tmp_path / "stimulus.wav"
    sf.write(wav, np.stack([audio_a, audio_b], axis=1).astype(np.float32), SR)
    csv = tmp_path / "segments.csv"
    shifted = _segments().assign(start=lambda f: f["start"] + 100.0, end=lambda f: f["end"] + 100.0)
    shifted.to_csv(csv, index=False)
    from_files = features_from_stimulus(wav, csv, clip_start=100.0)
    for name in FEATURES:
        assert from_files[name] == pytest.approx(features[name], rel=1e-3, abs=0.05), name


def _synthetic_table(n_dyads=40, seed=0):
    """Two clips (early, late) per dyad; familiar dyads answer faster and overlap more."""
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for d in range(n_dyads):
        familiar = d % 2 == 0
        for position in ("early", "late"):
            item = f"D{d:03d}_{position}"
            truth[item] = "familiar" if familiar else "stranger"
            row = {name: rng.normal() for name in FEATURES}
            row.update(
                item_id=item,
                dyad_id=f"D{d:03d}",
                gap_mean_s=rng.normal(0.25 if familiar else 0.9, 0.15),
                overlap_rate=rng.normal(0.12 if familiar else 0.03, 0.03),
            )
            rows.append(row)
    return pd.DataFrame(rows), truth


def test_behavioural_model_grouped_cv_beats_chance_and_never_sees_its_items():
    table, truth = _synthetic_table()
    model = BehaviouralModel(n_splits=5, seed=7)
    out = model.cross_val_predict(table, truth=truth, group_col="dyad_id")
    accuracy = (out["label"] == out["truth"]).mean()
    assert accuracy > 0.85
    assert out["confidence"].between(0.5, 1.0).all()
    # every item predicted exactly once, by a fold that did not train on its dyad
    assert sorted(item for fold in model.folds_ for item in fold.test_items) == sorted(table["item_id"])
    dyad_of = dict(zip(table["item_id"], table["dyad_id"], strict=True))
    for fold in model.folds_:
        assert not fold.train_groups & fold.test_groups
        assert all(dyad_of[item] not in fold.train_groups for item in fold.test_items)
    # both clips of a dyad are always in the same fold
    assert (out.assign(dyad=out["item_id"].str[:4]).groupby("dyad")["fold"].nunique() == 1).all()
    # seeded: same folds again
    again = BehaviouralModel(n_splits=5, seed=7).cross_val_predict(table, truth=truth, group_col="dyad_id")
    pd.testing.assert_frame_equal(out, again)


def test_leave_one_dyad_out():
    table, truth = _synthetic_table(n_dyads=16, seed=1)
    model = BehaviouralModel(n_splits="loo")
    out = model.cross_val_predict(table, truth=truth, group_col="dyad_id")
    assert len(model.folds_) == 16
    assert all(
        len(fold.test_groups) == 1 and not fold.train_groups & fold.test_groups for fold in model.folds_
    )
    assert (out["label"] == out["truth"]).mean() > 0.75


def test_uninformative_features_stay_near_chance():
    table, truth = _synthetic_table(n_dyads=60, seed=2)
    rng = np.random.default_rng(3)
    table["gap_mean_s"] = rng.normal(size=len(table))
    table["overlap_rate"] = rng.normal(size=len(table))
    out = BehaviouralModel(n_splits=5).cross_val_predict(table, truth=truth, group_col="dyad_id")
    assert 0.3 < (out["label"] == out["truth"]).mean() < 0.7


def test_chance_and_majority():
    items = [f"i{k}" for k in range(200)]
    first, second = chance_predictions(items, seed=5), chance_predictions(items, seed=5)
    pd.testing.assert_frame_equal(first, second)
    assert (first["confidence"] == 0.5).all()
    assert 0.35 < (first["label"] == "familiar").mean() < 0.65
    assert not first["label"].equals(chance_predictions(items, seed=6)["label"])

    majority = majority_predictions({"a": "stranger", "b": "stranger", "c": "familiar"}, items=["x", "y"])
    assert majority["label"].tolist() == ["stranger", "stranger"]
    assert majority["confidence"].iloc[0] == pytest.approx(2 / 3)
    tie = majority_predictions({"a": "stranger", "b": "familiar"}, seed=1)
    assert tie["label"].nunique() == 1 and tie["item_id"].tolist() == ["a", "b"]


def test_baseline_predictions_contract():
    table, truth = _synthetic_table(n_dyads=20)
    truth_frame = pd.DataFrame({"item_id": list(truth), "truth": list(truth.values())})
    out = baseline_predictions(table, truth_frame, {"seed": 3, "n_splits": 4, "group_col": "dyad_id"})
    assert list(out.columns) == PREDICTIONS.names
    PREDICTIONS.validate(out)
    assert set(out["model"]) == {BEHAVIOURAL_MODEL, CHANCE_MODEL, MAJORITY_MODEL}
    assert (out.groupby("model").size() == len(table)).all()
    assert (out["modality"] == "audio").all()
    behavioural = out[out["model"] == BEHAVIOURAL_MODEL]
    assert (behavioural["label"] == behavioural["truth"]).mean() > 0.8
    # per-fold majority of a balanced design leans against the test fold's class
    majority = out[out["model"] == MAJORITY_MODEL]
    assert (majority["label"] == majority["truth"]).mean() <= 0.6
    with pytest.raises(ValueError, match="no truth"):
        baseline_predictions(table, {"D000_early": "familiar"}, {})


def test_baselines_as_backends(tmp_path):
    from omnisocial.familiarity.baselines import build_baseline
    from omnisocial.models.base import Request
    from omnisocial.models.parsing import parse_familiarity

    items = [f"D{k:03d}" for k in range(30)]
    requests = [Request(item_id=item, prompt="Do they know each other?") for item in items]

    chance = build_baseline({"name": "coin", "model": "chance", "generation": {"seed": 9}})
    labels = [parse_familiarity(r.text)["relationship_label"] for r in chance.generate(requests)]
    assert labels == chance_predictions(items, seed=9)["label"].tolist()  # same coin, in or out of the runner
    assert labels[:5] == [
        parse_familiarity(r.text)["relationship_label"] for r in chance.generate(requests[:5])
    ]
    assert chance.fingerprint() == "baseline:chance:seed=9"

    fixed = build_baseline({"name": "maj", "model": "majority", "options": {"label": "stranger"}})
    assert {parse_familiarity(r.text)["relationship_label"] for r in fixed.generate(requests)} == {"stranger"}
    design = tmp_path / "design.csv"
    pd.DataFrame({"dyad_id": ["a", "b", "c"], "relationship": ["familiar", "familiar", "stranger"]}).to_csv(
        design, index=False
    )
    from_truth = build_baseline({"name": "maj", "model": "majority", "options": {"truth": str(design)}})
    answer = parse_familiarity(from_truth.generate(requests[:1])[0].text)
    assert answer["relationship_label"] == "familiar" and answer["confidence"] == pytest.approx(2 / 3)

    table, truth = _synthetic_table(n_dyads=12)
    predictions = baseline_predictions(table, truth, {"n_splits": 3, "group_col": "dyad_id"})
    path = tmp_path / "baseline_predictions.csv"
    PREDICTIONS.write(path, predictions)
    behavioural = build_baseline(
        {"name": "beh", "model": "behavioural", "options": {"predictions": str(path)}}
    )
    expected = predictions[predictions["model"] == BEHAVIOURAL_MODEL].set_index("item_id")
    asked = [Request(item_id=item, prompt="?") for item in [*expected.index[:4], "unknown"]]
    replies = behavioural.generate(asked)
    for request, reply in zip(asked[:4], replies[:4], strict=True):
        parsed = parse_familiarity(reply.text)
        assert parsed["relationship_label"] == expected.loc[request.item_id, "label"]
        assert parsed["confidence"] == pytest.approx(expected.loc[request.item_id, "confidence"], abs=1e-5)
    assert not replies[4].ok and "unknown" in replies[4].error
    with pytest.raises(ValueError, match="unknown baseline"):
        build_baseline({"name": "x", "model": "oracle"})
