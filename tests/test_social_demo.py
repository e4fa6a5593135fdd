"""The who / when / how and streaming demo generator: formats, ground truth, determinism."""

from __future__ import annotations

import json
import shutil
import wave

import numpy as np
import pandas as pd
import pytest
from social_demo import SMALL, generate_social_demo, small_social_demo

from omnisocial.demo_kit import DEMO_SPLITS, text_mask, validate_params
from omnisocial.duplexeval.importers import load_stream_items
from omnisocial.media.audio import probe
from omnisocial.media.frames import read_grey_frames
from omnisocial.socialomni.contracts import LETTERS
from omnisocial.socialomni.importers import load_when_items, load_who_items, split_said

pytestmark = pytest.mark.skipif(
    shutil.which("ffmpeg") is None or shutil.which("espeak-ng") is None, reason="needs ffmpeg and espeak-ng"
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return small_social_demo(tmp_path_factory)  # built once per session, read only


def _truth(root, name):
    return pd.read_csv(root / "socialomni" / "truth" / name, keep_default_na=False)


def test_released_formats_load_through_the_importers(demo):
    root, manifest = demo
    who = load_who_items(root / "socialomni" / "data" / "level_1" / "dataset.json", max_time_s=60)
    when = load_when_items(root / "socialomni" / "data" / "level_2" / "annotations.json", max_time_s=60)
    stream = load_stream_items(root / "duplexeval" / "items.json")
    counts = manifest["counts"]
    assert len(who) == counts["who_items"] == 2 * SMALL["who_items_per_clip"]
    assert len(when) == counts["when_items"] == 2 * 2 * SMALL["when_transitions_per_clip"]
    assert len(stream) == counts["stream_items"] == len(DEMO_SPLITS)
    assert set(stream["split"]) == set(DEMO_SPLITS)
    assert (who["source"] == "socialomni").all() and set(who["consistency"]) == {"consistent", "inconsistent"}
    assert set(when["gold"]) == {"YES", "NO"} and (when["gold"] == "YES").sum() == len(when) / 2
    for path in list(who["video_path"]) + list(when["video_path"]):
        assert (root / "socialomni" / path).is_file()
    for path in list(stream["video"]) + list(stream["question_audio"]):
        assert (root / "duplexeval" / path).is_file()
    assert set(manifest["files"]) == {
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != "manifest.json"
    }


def test_turns_are_clean_turn_taking_and_match_the_media(demo):
    root, manifest = demo
    turns = _truth(root, "turns.csv")
    panels = _truth(root, "panels.csv")
    lo, hi = validate_params(SMALL)["multiparty_duration_s"]
    for clip, own in turns.groupby("clip_id"):
        own = own.sort_values("start")
        assert (own["end"] > own["start"]).all()
        assert (own["start"].to_numpy()[1:] > own["end"].to_numpy()[:-1]).all()  # nobody overlaps
        assert (own["speaker"].to_numpy()[1:] != own["speaker"].to_numpy()[:-1]).all()
        speakers = set(panels.loc[panels["clip_id"] == clip, "speaker"])
        assert set(own["speaker"]) == speakers and len(speakers) in (3, 4)
        info = probe(root / "socialomni" / "videos" / f"{clip}.mp4")
        duration = info["video_duration"]
        assert lo - 0.05 <= duration <= hi + 0.05 and own["end"].max() < duration
        assert info["audio_duration"] == pytest.approx(duration, abs=0.1)
        with wave.open(str(root / "socialomni" / "audio" / f"{clip}.wav")) as handle:
            assert handle.getnframes() / handle.getframerate() == pytest.approx(duration, abs=0.05)
    shown = panels[panels["on_screen"].astype(str) == "True"]
    assert (shown[["x0", "y0"]].astype(int) >= 0).all().all()
    assert (shown["x1"].astype(int) <= 160).all() and (shown["y1"].astype(int) <= 120).all()
    hidden = panels[panels["on_screen"].astype(str) == "False"]
    assert list(hidden["clip_id"]) == ["mp01"]  # every second clip has one off-screen speaker


def test_who_items_point_at_a_true_turn(demo):
    root, _ = demo
    turns = _truth(root, "turns.csv")
    panels = _truth(root, "panels.csv")
    on_screen = {(r.clip_id, r.speaker): str(r.on_screen) == "True" for r in panels.itertuples()}
    who = load_who_items(root / "socialomni" / "data" / "level_1" / "dataset.json")
    for item in who.to_dict("records"):
        clip = json.loads(item["metadata_json"])["clip_id"]
        speaker, text = split_said(item[f"option_{item['correct_answer'].lower()}"])
        turn = turns[(turns["clip_id"] == clip) & (turns["text"] == text)]
        assert len(turn) == 1 and turn["speaker"].iloc[0] == speaker == item["speaker"]
        assert item["query_start"] == pytest.approx(turn["start"].iloc[0], abs=0.051)
        assert item["query_time"] == pytest.approx(turn["end"].iloc[0], abs=0.051)
        assert item["consistency"] == ("consistent" if on_screen[(clip, speaker)] else "inconsistent")
        options = [split_said(item[f"option_{letter.lower()}"]) for letter in LETTERS]
        assert len({s for s, _ in options}) == 2 and len({t for _, t in options}) == 2  # 2 x 2 design


def test_when_items_cut_at_a_turn_end_and_mid_turn(demo):
    root, manifest = demo
    cut_lag = validate_params(SMALL)["cut_lag_s"]
    turns = _truth(root, "turns.csv")
    when = load_when_items(root / "socialomni" / "data" / "level_2" / "annotations.json")
    references = _truth(root, "how_references.csv")
    for item in when.to_dict("records"):
        meta = json.loads(item["metadata_json"])
        clip = turns[turns["clip_id"] == meta["clip_id"]].sort_values("start").reset_index(drop=True)
        k = int(np.flatnonzero(np.isclose(clip["end"], meta["turn_end"]))[0])
        following = clip.iloc[k + 1]
        assert item["target"] == following["speaker"] and item["how_reference"] == following["text"]
        if item["gold"] == "YES":
            assert meta["turn_end"] + cut_lag - 1e-6 <= item["cut_time"] <= meta["turn_end"] + cut_lag + 0.1
            assert item["cut_time"] < following["start"]  # inside the silent gap
        else:
            assert clip["start"][k] < item["cut_time"] < clip["end"][k]
        lines = [line.split(": ", 1)[1] for line in item["full_asr"].splitlines()]
        done = clip[clip["end"] <= item["cut_time"]]["text"].tolist()
        assert lines == done
        refs = references[references["item_id"] == item["item_id"]].sort_values("ref_index")
        assert refs["kind"].tolist() == ["true", "paraphrase", "paraphrase"]
        assert refs["text"].iloc[0] == following["text"] and refs["text"].nunique() == 3
    stream = _truth(root, "when_stream.csv")
    assert len(stream) == manifest["counts"]["when_stream_items"] == len(turns) - turns["clip_id"].nunique()
    assert (stream["stream_start"] < stream["turn_end"]).all() and (
        stream["turn_end"] < stream["next_start"]
    ).all()


def test_visual_events_match_reminders_frames_and_pixels(demo):
    root, _ = demo
    params = validate_params(SMALL)
    fps = params["video"]["fps"]
    events = pd.read_csv(root / "duplexeval" / "truth" / "events.csv")
    stream = load_stream_items(root / "duplexeval" / "items.json")
    for item in stream.to_dict("records"):
        own = events[(events["split"] == item["split"]) & (events["item_id"] == item["item_id"])]
        times = own["t"].to_numpy()
        assert len(times) >= 3 and (np.diff(times) >= params["min_event_gap_s"] - 1e-9).all()
        assert np.allclose(times * fps, np.round(times * fps))  # on frame boundaries
        assert times.max() <= item["video_duration"] - 3
        reminders = {int(r): t for r, t in zip(own["reminder"], own["t"], strict=True) if r}
        if item["task"] == "PR":
            assert reminders == {1: item["reminder1"], 2: item["reminder2"]}
        else:
            assert not reminders and pd.isna(item["reminder1"])
        frames = read_grey_frames(root / "duplexeval" / item["video"], fps=fps, size=(160, 120)).astype(int)
        assert len(frames) == pytest.approx(item["video_duration"] * fps, abs=1)
        for t in times:  # the picture changes exactly at each event and not in the frame before
            i = int(round(t * fps))
            assert np.abs(frames[i] - frames[i - 1]).mean() > 0.2
            assert np.abs(frames[i - 1] - frames[i - 2]).mean() < 0.05


@pytest.mark.heavy  # 6 CPU-s
def test_generation_is_deterministic_and_seeded(demo, tmp_path):
    root, manifest = demo
    again = generate_social_demo(tmp_path / "again", SMALL)
    assert again["files"] == manifest["files"]
    other = generate_social_demo(
        tmp_path / "other", {**SMALL, "seed": 1, "n_multiparty": 1, "visual_per_split": 0}
    )
    first = json.loads((root / "socialomni" / "data" / "level_1" / "dataset.json").read_text())
    changed = json.loads(
        (tmp_path / "other" / "socialomni" / "data" / "level_1" / "dataset.json").read_text()
    )
    assert changed != first[: len(changed)]
    assert other["counts"]["stream_items"] == 0 and not (tmp_path / "other.tmp").exists()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"speakers": [2]}, "speakers"),
        ({"multiparty_duration_s": [20, 15]}, "multiparty_duration_s"),
        ({"visual_splits": ["RTD_unknown"]}, "unknown visual split"),
        ({"video": {"width": 150}}, "multiples of 4"),
        ({"cut_lag_s": 0.3}, "cut_lag_s"),
        ({"colour": "red"}, "unknown parameter"),
    ],
)
def test_bad_parameters_are_named(params, message):
    with pytest.raises(ValueError, match=message):
        validate_params(params)


def test_text_mask_draws_the_5x7_font():
    mask = text_mask("AB", scale=2)
    assert mask.shape == (14, 22)  # 2 glyphs of 5 columns + 1 spacer, doubled
    assert mask[0, :10].tolist() == [False] * 2 + [True] * 6 + [False] * 2  # ".###." of A, doubled
    assert not mask[:, 10:12].any()  # the spacer
