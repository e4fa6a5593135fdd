"""Who / when / how and streaming metrics on hand-built cases with known answers.

The benchmarks: docs/benchmarks/socialomni.md, docs/benchmarks/duplexeval.md.
"""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from omnisocial.duplexeval.baselines import caption_stream, detect_events
from omnisocial.duplexeval.contracts import STREAM_RESPONSES
from omnisocial.duplexeval.description import (
    best_window_score,
    frame_times,
    judge_window,
    judge_windows,
    temporal_sensitivity,
    to_100,
)
from omnisocial.duplexeval.reminders import reminder_scores
from omnisocial.judges.calibration import judge_calibration
from omnisocial.media.frames import frame_motion, read_grey_frames
from omnisocial.socialomni.contracts import WHO_ITEMS
from omnisocial.socialomni.how import aggregate_how, parse_judge_score, released_how_score, snap_score
from omnisocial.socialomni.importers import extract_query_interval, split_said
from omnisocial.socialomni.when import (
    extract_yes_no,
    label_offset,
    response_time,
    score_when_single,
    score_when_streaming,
    silence_baseline,
    timing_rates,
)
from omnisocial.socialomni.who import build_who_items, extract_letter, mcnemar_models, score_who, who_prompt
from omnisocial.stats.sdt import wilson_interval
from omnisocial.stats.tolerance import tolerance_prf

# --- who: letters --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("A", "A"),
        ("(C)", "C"),
        ("B.", "B"),
        ("B)", "B"),
        ("**D**", "D"),
        ("b", "B"),
        ("D: Ann said goodbye", "D"),
        ("I think the answer is B.", "B"),
        ("Option D", "D"),
        ("The correct option is (A) because Tom speaks.", "A"),
        ("The answer: C", "C"),
        ("Between A and C, C", "C"),
        ("Based on the voice I pick B", "B"),
        ("None", None),
        ("I cannot tell who is speaking.", None),
        ("", None),
        (None, None),
        ("the answer is a bit unclear", "A"),  # released: the article "a" read as option A (strict: None)
    ],
)
def test_extract_letter(reply, letter):
    assert extract_letter(reply) == letter


# --- who: scoring --------------------------------------------------------------------------


def who_items():
    return pd.DataFrame(
        {
            "item_id": ["1", "2", "3", "4", "5", "6"],
            "correct_answer": ["A", "B", "C", "D", "A", "B"],
            "option_a": ["Tom said hi", "Tom said hi", "Tom said hi", "Tom said hi", "Tom said hi", "x"],
            "option_b": ["Ann said hi", "Ann said hi", "Ann said hi", "Ann said hi", "Ann said hi", "y"],
            "option_c": ["Tom said bye", "Tom said bye", "Tom said bye", "Tom said bye", "Tom said bye", "z"],
            "option_d": ["Ann said bye", "Ann said bye", "Ann said bye", "Ann said bye", "Ann said bye", "w"],
            "consistency": [
                "consistent",
                "consistent",
                "consistent",
                "inconsistent",
                "inconsistent",
                "unknown",
            ],
            "domain": ["work", "work", "family", "family", "family", ""],
        }
    )


def test_score_who_hand_computed():
    replies = pd.DataFrame(
        {
            "item_id": ["1", "2", "3", "4", "5", "6"],
            "reply": ["A", "The answer is A", "C.", "no idea", "(A)", "C"],
        }
    )
    scores = score_who(who_items(), replies)
    items = scores.items.set_index("item_id")
    assert items["correct"].tolist() == [True, False, True, False, True, False]
    assert items["prediction"].tolist() == ["A", "A", "C", "", "A", "C"]
    # item 2: truth B "Ann said hi", chosen A "Tom said hi": right words, wrong speaker
    assert items["error_type"].tolist() == ["none", "speaker", "none", "unparsed", "none", "unknown"]
    summary = scores.summary.iloc[0]
    assert (summary["n"], summary["n_correct"], summary["n_unparsed"]) == (6, 3, 1)
    assert summary["accuracy"] == 0.5
    assert (summary["ci_low"], summary["ci_high"]) == pytest.approx(wilson_interval(3, 6))
    assert summary["acc_consistent"] == pytest.approx(2 / 3)
    assert summary["acc_inconsistent"] == pytest.approx(1 / 2)
    assert summary["consistency_gap"] == pytest.approx(2 / 3 - 1 / 2)
    breakdown = scores.breakdown.set_index(["breakdown", "level"])
    assert breakdown.loc[("correct_option", "A"), ["n", "n_correct"]].tolist() == [2, 2]
    assert breakdown.loc[("correct_option", "B"), ["n", "n_correct"]].tolist() == [2, 0]
    assert breakdown.loc[("correct_option", "D"), ["n", "n_unparsed", "n_correct"]].tolist() == [1, 1, 0]
    assert breakdown.loc[("domain", "family"), "accuracy"] == pytest.approx(2 / 3)
    assert ("consistency", "unknown") in breakdown.index  # released items without it: own row
    assert ("domain", "") not in breakdown.index
    confusion = scores.confusion.set_index("truth")[["A", "B", "C", "D", "unparsed"]]
    assert confusion.loc["A"].tolist() == [2, 0, 0, 0, 0]
    assert confusion.loc["B"].tolist() == [1, 0, 1, 0, 0]
    assert confusion.loc["C"].tolist() == [0, 0, 1, 0, 0]
    assert confusion.loc["D"].tolist() == [0, 0, 0, 0, 1]
    assert int(confusion.to_numpy().sum()) == 6


def test_score_who_error_types_and_unknown_items():
    items = who_items()
    scores = score_who(items, {"1": "C", "2": "D", "3": "B"})
    # 1: truth Tom/hi, chose Tom/bye -> content; 2: truth Ann/hi, chose Ann/bye -> content;
    # 3: truth Tom/bye, chose Ann/hi -> both
    assert scores.items["error_type"].tolist() == ["content", "content", "both"]
    with pytest.raises(ValueError, match="unknown item"):
        score_who(items, {"99": "A"})


def test_score_who_groups_models_and_mcnemar_matches_hand_counts():
    items = who_items().iloc[:5]
    truth = dict(zip(items["item_id"], items["correct_answer"], strict=True))
    right_a = {"1": True, "2": True, "3": True, "4": False, "5": True}
    right_b = {"1": False, "2": False, "3": True, "4": True, "5": False}
    rows = []
    for model, right in (("m1", right_a), ("m2", right_b)):
        for item_id, ok in right.items():
            wrong = "A" if truth[item_id] != "A" else "B"
            rows.append(
                {
                    "model": model,
                    "modality": "video",
                    "item_id": item_id,
                    "reply": truth[item_id] if ok else wrong,
                }
            )
    scores = score_who(items, pd.DataFrame(rows))
    assert scores.summary["accuracy"].tolist() == [0.8, 0.4]
    result = mcnemar_models(scores.items).iloc[0]
    # b: m1 right, m2 wrong = items 1, 2, 5; c: m1 wrong, m2 right = item 4
    assert (result["model_a"], result["model_b"], result["b"], result["c"], result["n_items"]) == (
        "m1",
        "m2",
        3,
        1,
        5,
    )
    assert result["p_value"] == pytest.approx(stats.binomtest(3, 4, 0.5).pvalue)
    assert (result["acc_a"], result["acc_b"]) == (0.8, 0.4)


def test_who_prompt_tells_each_modality_its_inputs():
    item = {
        "question": "Between 0:01.0 and 0:02.0, who is speaking?",
        "option_a": "Tom said hi",
        "option_b": "Ann said hi",
        "option_c": "Tom said bye",
        "option_d": "Ann said bye",
        "asr_content": "hi / bye",
    }
    prompts = {
        m: who_prompt(item, m, include_asr=True)
        for m in ("audio_video", "audio", "video", "audio_masked_video")
    }
    assert len(set(prompts.values())) == 4
    assert "with its audio track" in prompts["audio_video"]
    assert "There is no video" in prompts["audio"]
    assert "without any audio" in prompts["video"]
    assert "masked" in prompts["audio_masked_video"]
    for modality, prompt in prompts.items():
        assert "A. Tom said hi\nB. Ann said hi\nC. Tom said bye\nD. Ann said bye" in prompt
        assert ("hi / bye" in prompt) == (modality != "video")  # no transcript for video-only
    assert "hi / bye" not in who_prompt(item, "audio")
    with pytest.raises(ValueError, match="unknown modality"):
        who_prompt(item, "text")


def transcript():
    return pd.DataFrame(
        {
            "speaker": ["Tom", "Ann", "Tom", "Bo", "Ann", "Tom", "Bo", "Ann"],
            "start": [0.0, 2.0, 4.5, 7.0, 9.0, 11.0, 13.0, 13.5],
            "end": [1.8, 4.0, 6.5, 8.5, 10.5, 12.5, 14.0, 15.0],
            "text": [
                "hello all",
                "hi Tom",
                "how are you",
                "fine thanks",
                "me too",
                "great news",
                "wow",
                "overlap",
            ],
        }
    )


def test_build_who_items_crosses_speaker_and_content():
    items = build_who_items(
        transcript(), n_items=5, seed=3, clip_window=4.0, corpus_id="demo", video_path="v.mp4"
    )
    assert list(items.columns) == WHO_ITEMS.names
    assert len(items) == 5 and set(items["review_status"]) == {"unreviewed"}
    assert items["item_id"].tolist() == [f"demo_{k:04d}" for k in range(5)]
    source = transcript().set_index("text")
    for item in items.to_dict("records"):
        options = {letter: split_said(item[f"option_{letter.lower()}"]) for letter in "ABCD"}
        speaker, content = options[item["correct_answer"]]
        assert item["speaker"] == speaker
        assert sum(s == speaker for s, _ in options.values()) == 2
        assert sum(c == content for _, c in options.values()) == 2
        assert len(set(options.values())) == 4
        kinds = {letter: item[f"kind_{letter.lower()}"] for letter in "ABCD"}
        assert kinds[item["correct_answer"]] == "target"
        for letter, (s, c) in options.items():
            expected = {
                (True, True): "target",
                (True, False): "right_speaker_wrong_content",
                (False, True): "wrong_speaker_right_content",
                (False, False): "wrong_speaker_wrong_content",
            }[(s == speaker, c == content)]
            assert kinds[letter] == expected
        # the question's times are relative to the clip and point at the target utterance
        start, end = extract_query_interval(item["question"])
        assert (start, end) == (item["query_start"], item["query_time"])
        assert item["clip_start"] + end == pytest.approx(source.loc[content, "end"], abs=0.05)
        assert item["clip_start"] == pytest.approx(max(0.0, source.loc[content, "start"] - 4.0))
        # overlapped speech is never a target
        assert content not in ("wow", "overlap")
    again = build_who_items(
        transcript(), n_items=5, seed=3, clip_window=4.0, corpus_id="demo", video_path="v.mp4"
    )
    pd.testing.assert_frame_equal(items, again)
    other = build_who_items(transcript(), n_items=5, seed=4, clip_window=4.0, corpus_id="demo")
    assert not items[["option_a", "correct_answer"]].equals(other[["option_a", "correct_answer"]])


def test_build_who_items_fails_clearly_when_too_few_targets():
    with pytest.raises(ValueError, match=r"only 6 transcript segments can be who targets \(need 7\)"):
        build_who_items(transcript(), n_items=7, seed=0, clip_window=4.0)
    one_speaker = transcript().assign(speaker="Tom")
    with pytest.raises(ValueError, match="only 0"):
        build_who_items(one_speaker, n_items=1, seed=0)


# --- when: single cut ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Yes.", "YES"),
        ("no", "NO"),
        ("A", "YES"),
        ("B)", "NO"),
        ("The answer is no.", "NO"),
        ("I would say yes here", "YES"),
        ("I do not know", None),  # the released substring test read this as NO
        ("yes or no? hard to say", "YES"),  # leading answer wins
        ("Maybe yes, maybe no", None),
        ("Absolutely", None),
        ("", None),
    ],
)
def test_extract_yes_no(reply, answer):
    assert extract_yes_no(reply, parser="strict") == answer  # released cases: test_social_parsing.py


def test_extract_yes_no_maps_letters_through_options():
    assert extract_yes_no("A", option_a="NO", option_b="YES") == "NO"


def test_score_when_single_counts_unparsed_as_wrong():
    items = pd.DataFrame({"item_id": ["a", "b", "c", "d"], "gold": ["YES", "YES", "NO", "NO"]})
    scored, breakdown = score_when_single(items, {"a": "Yes", "b": "hmm", "c": "No", "d": "A"})
    assert scored["correct"].tolist() == [True, False, True, False]
    assert scored["parsed"].tolist() == [True, False, True, True]
    overall = breakdown.set_index(["breakdown", "level"])
    assert overall.loc[("overall", "all"), ["n", "n_correct", "n_unparsed"]].tolist() == [4, 2, 1]
    assert overall.loc[("gold", "YES"), "accuracy"] == 0.5
    assert overall.loc[("gold", "NO"), "accuracy"] == 0.5


# --- when: streaming -----------------------------------------------------------------------


def test_response_time_is_the_first_speak_now():
    assert response_time([(3.0, True), (1.0, False), (2.0, True)]) == 2.0
    assert response_time([(1.0, False), (2.0, False)]) is None
    assert response_time([]) is None


@pytest.mark.parametrize(
    ("offset", "label"),
    [
        (-3.0, "Interrupted"),
        (-0.01, "Interrupted"),
        (0.0, "Perfect"),
        (0.5, "Perfect"),
        (1.0, "Perfect"),
        (1.001, "Delayed"),
        (2.0, "Delayed"),
        (2.001, "TooLate"),
        (5.0, "TooLate"),
        (5.001, "NoResponse"),
        (60.0, "NoResponse"),
        (None, "NoResponse"),
        (math.nan, "NoResponse"),
        (3.1 - 2.1, "Perfect"),  # 1.0000000000000004: float noise stays on the threshold
    ],
)
def test_label_offset_edges(offset, label):
    assert label_offset(offset) == label


ORDER = ["Interrupted", "Perfect", "Delayed", "TooLate", "NoResponse"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=10))
def test_label_offset_is_monotone_in_the_offset(offsets):
    ranks = [ORDER.index(label_offset(o)) for o in sorted(offsets)]
    assert ranks == sorted(ranks)


times = st.lists(st.floats(0, 30, allow_nan=False), max_size=8)


@settings(max_examples=200, deadline=None)
@given(times, times)
def test_tolerance_prf_is_bounded_and_one_to_one(predicted, truth):
    for _, row in tolerance_prf(predicted, truth).iterrows():
        assert 0 <= row["tp"] <= min(len(predicted), len(truth))
        assert 0 <= row["precision"] <= 1 and 0 <= row["recall"] <= 1 and 0 <= row["f1"] <= 1
        if row["tp"] == 0:
            assert row["f1"] == 0


def test_label_offset_custom_and_bad_thresholds():
    assert label_offset(0.4, thresholds=(0.5, 1, 2)) == "Perfect"
    assert label_offset(0.6, thresholds=(0.5, 1, 2)) == "Delayed"
    with pytest.raises(ValueError):
        label_offset(1.0, thresholds=(2, 1, 5))
    with pytest.raises(ValueError):
        label_offset(1.0, thresholds=(1, 2))


def test_timing_rates_over_all_items():
    labels = ["Perfect", "Perfect", "Interrupted", "Delayed", "TooLate", "NoResponse", "Perfect", "Delayed"]
    rates = timing_rates(labels)
    assert rates["n"] == 8
    assert (rates["on_time"], rates["early"], rates["late"], rates["no_response"]) == (
        3 / 8,
        1 / 8,
        3 / 8,
        1 / 8,
    )
    assert math.isnan(timing_rates([])["on_time"])
    with pytest.raises(ValueError):
        timing_rates(["Soon"])


def test_score_when_streaming_labels_items():
    frame = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "item_id": ["a", "b", "c", "d"],
            "turn_end": [10.0, 10.0, 10.0, 10.0],
            "response_time": [9.0, 11.0, 14.0, None],
        }
    )
    scored, rates = score_when_streaming(frame)
    assert scored["label"].tolist() == ["Interrupted", "Perfect", "TooLate", "NoResponse"]
    assert scored["offset"].iloc[:3].tolist() == [-1.0, 1.0, 4.0]
    assert rates.iloc[0][["on_time", "early", "late", "no_response"]].tolist() == [0.25, 0.25, 0.25, 0.25]


def test_tolerance_prf_hand_computed():
    table = tolerance_prf([1.0, 2.0, 5.0], [1.1, 2.6, 9.0]).set_index("delta")
    assert table.loc[0.2, ["tp", "precision", "recall", "f1"]].tolist() == pytest.approx(
        [1, 1 / 3, 1 / 3, 1 / 3]
    )
    assert table.loc[0.5, "tp"] == 1  # 2.0 vs 2.6 is 0.6 away
    assert table.loc[1.0, ["tp", "precision", "recall", "f1"]].tolist() == pytest.approx(
        [2, 2 / 3, 2 / 3, 2 / 3]
    )


def test_tolerance_prf_window_is_inclusive_and_one_to_one():
    assert tolerance_prf([1.5], [1.0], deltas=(0.5,))["tp"].iloc[0] == 1
    row = tolerance_prf([1.0, 1.05], [1.0], deltas=(0.2,)).iloc[0]
    assert (row["tp"], row["precision"], row["recall"]) == (1, 0.5, 1.0)
    assert row["f1"] == pytest.approx(2 / 3)
    # greedy by distance: the prediction goes to the closer truth
    row = tolerance_prf([1.0], [0.9, 1.05], deltas=(0.2,)).iloc[0]
    assert (row["tp"], row["precision"], row["recall"]) == (1, 1.0, 0.5)


@pytest.mark.parametrize(
    ("predicted", "truth", "expected"),
    [
        ([], [1.0, 2.0], (0.0, 0.0, 0.0)),  # no predictions: precision undefined -> 0
        ([1.0, 2.0], [], (0.0, 0.0, 0.0)),  # no truths: recall undefined -> 0
        ([], [], (0.0, 0.0, 0.0)),  # both empty: everything undefined -> 0
        ([5.0], [1.0], (0.0, 0.0, 0.0)),  # no match: F1 undefined (P + R = 0) -> 0
    ],
)
def test_tolerance_prf_undefined_ratios_are_zero(predicted, truth, expected):
    for _, row in tolerance_prf(predicted, truth).iterrows():
        assert (row["precision"], row["recall"], row["f1"]) == expected


def test_silence_baseline_speaks_after_the_pause():
    others = [(0.0, 2.0), (3.0, 5.0)]
    decisions = silence_baseline(others, pause_s=0.5, step_s=0.5, clip_end=7.0)
    assert [t for t, _ in decisions] == [k * 0.5 for k in range(15)]
    said = {t: speak for t, speak in decisions}
    assert not said[2.0]  # the segment ends exactly now: silence 0
    assert said[2.5] and not said[3.0] and not said[5.0] and said[5.5]
    assert response_time(decisions) == 2.5
    longer = silence_baseline(others, pause_s=1.5, step_s=0.5, clip_end=7.0)
    assert response_time(longer) == 6.5
    assert label_offset(response_time(longer) - 5.0) == "Delayed"


def test_silence_baseline_waits_for_speech_and_ignores_the_target():
    frame = pd.DataFrame({"speaker": ["Ann", "Tom"], "start": [0.0, 3.0], "end": [2.9, 4.0]})
    decisions = silence_baseline(frame, pause_s=1.0, step_s=1.0, clip_end=6.0, exclude_speaker="Ann")
    assert decisions == [
        (0.0, False),
        (1.0, False),
        (2.0, False),
        (3.0, False),
        (4.0, False),
        (5.0, True),
        (6.0, True),
    ]
    assert response_time(silence_baseline([], pause_s=1.0, step_s=1.0, clip_end=5.0)) is None


# --- how ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Score: 60", 50.0),
        ("62.5", 50.0),  # tie between 50 and 75 -> lower
        ("62.6", 75.0),
        ("87.5", 75.0),  # tie -> lower
        ("12.5", 0.0),
        ("100", 100.0),
        ("Rating 80/100", 75.0),
        ("-5", 0.0),
        ("250", 100.0),
        ("25", 25.0),
    ],
)
def test_parse_judge_score_snaps_the_first_number(reply, score):
    assert parse_judge_score(reply) == (score, "")


def test_parse_judge_score_empty_candidate_and_unparseable():
    assert parse_judge_score("", candidate="") == (0.0, "empty candidate")
    assert parse_judge_score("75", candidate="   ") == (0.0, "empty candidate")
    assert parse_judge_score("75", candidate="Sure!") == (75.0, "")
    # strict: a judge failure is unparsed; released (default): 0, and the reason says so
    assert parse_judge_score("no idea", parser="strict") == (None, "no number in judge reply")
    assert parse_judge_score("", parser="strict") == (None, "empty judge reply")
    assert parse_judge_score(None, parser="strict").score is None
    assert parse_judge_score("N/A") == (0.0, "no number in judge reply (released: scored 0)")
    assert parse_judge_score("") == (0.0, "empty judge reply (released: scored 0)")
    assert snap_score(37.4) == 25.0 and snap_score(37.5) == 25.0 and snap_score(37.6) == 50.0


def test_aggregate_how_hand_computed():
    judgements = pd.DataFrame(
        {
            "item_id": ["i1", "i2", "i3"] * 2,
            "model": ["m"] * 6,
            "judge": ["j1"] * 3 + ["j2"] * 3,
            "score": [100, 0, 50, 50, 0, None],
        }
    )
    table = aggregate_how(judgements).set_index("judge")
    columns = ["n_items", "n_nonzero", "mean_with_zeros", "mean_without_zeros", "n_unparsed"]
    assert table.loc["j1", columns].tolist() == [3, 2, 50.0, 75.0, 0]
    assert table.loc["j2", columns].tolist() == [2, 1, 25.0, 50.0, 1]
    # per item over judges: i1 75, i2 0, i3 50 (j2 unparsed)
    assert table.loc["all", "mean_with_zeros"] == pytest.approx(125 / 3)
    assert table.loc["all", "mean_without_zeros"] == pytest.approx(62.5)
    assert table.loc["all", ["n_items", "n_nonzero", "n_unparsed"]].tolist() == [3, 2, 1]


def test_aggregate_how_rejects_bad_tables():
    base = {"item_id": ["i"], "model": ["m"], "judge": ["j"]}
    with pytest.raises(ValueError):
        aggregate_how(pd.DataFrame({**base, "score": [120]}))
    with pytest.raises(ValueError):
        aggregate_how(pd.DataFrame({k: v * 2 for k, v in {**base, "score": [50]}.items()}))


def test_released_how_score_rule():
    assert released_how_score("YES", True, 75.0) == 75.0
    assert released_how_score("YES", False, 75.0) == 0.0
    assert released_how_score("NO", False, None) == 0.0
    assert released_how_score("NO", True, None) is None


# --- streaming: windows and frames ---------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "duration", "window"),
    [
        (0.5, 1.0, None, (0.0, 0.5)),  # video start: ws = 0, at least 0.5 s wide
        (1.5, 4.0, None, (0.0, 2.0)),
        (2.0, 2.0, None, (0.0, 0.5)),
        (3.0, 3.0, None, (1.0, 1.5)),  # a point sentence
        (5.0, 9.0, None, (3.0, 7.0)),
        (5.0, 10.0, 8.0, (3.0, 8.0)),  # window end exactly at the video's end: kept
        (5.0, 11.0, 8.0, None),  # window end past the video's end: not judged
        (9.9, 10.0, 10.0, (7.9, 8.4)),
    ],
)
def test_judge_window_arithmetic(start, end, duration, window):
    result = judge_window(start, end, duration)
    if window is None:
        assert result is None
    else:
        assert result == pytest.approx(window)


def test_judge_window_clip_option_and_errors():
    assert judge_window(5.0, 11.0, 8.0, clip_to_duration=True) == (3.0, 8.0)
    assert judge_window(9.9, 12.0, 8.2, clip_to_duration=True) is None  # [7.9, 8.2] is under 0.5 s
    with pytest.raises(ValueError):
        judge_window(3.0, 2.0)
    frame = judge_windows(pd.DataFrame({"start": [0.5, 5.0], "end": [1.0, 11.0]}), video_duration=8.0)
    assert frame["judgeable"].tolist() == [True, False]
    assert frame["window_end"].iloc[0] == 0.5 and math.isnan(frame["window_end"].iloc[1])


def test_frame_times_two_per_second():
    assert frame_times((0.0, 0.5)).tolist() == [0.25]  # one frame, at the middle
    assert frame_times((0.0, 2.0)).tolist() == pytest.approx([0.0, 2 / 3, 4 / 3, 1.99])
    assert frame_times((1.0, 2.5)).tolist() == pytest.approx([1.0, 1.75, 2.49])
    assert frame_times((0.1, 1.6)).tolist() == pytest.approx(
        [0.1, 0.85, 1.59]
    )  # 1.5 s x 2 = 3 despite float noise
    assert len(frame_times((2.0, 2.0))) == 0


# --- streaming: temporal sensitivity -------------------------------------------------------


def sentences():
    return pd.DataFrame(
        {
            "start": [1.0, 2.0, 3.0, 7.0],
            "end": [2.0, 3.0, 7.0, 8.0],
            "temporal_score": [3, 1, 0, 2],
            "is_relevant": [1, 1, 0, 1],
            "judged_ok": [True, True, True, False],
        }
    )


def test_temporal_sensitivity_hand_computed():
    result = temporal_sensitivity(sentences())
    assert (result["n_sentences"], result["n_judged"], result["n_relevant"]) == (4, 3, 2)
    assert result["temporal_score"] == 2.0  # (3 + 1) / 2; the failed judgement is left out
    assert result["temporal_score_100"] == pytest.approx(200 / 3)
    assert result["irrelevant_duration_ratio"] == pytest.approx(4 / 6)
    assert result["first_relevant_time"] == 1.0


def test_temporal_sensitivity_without_relevant_sentences():
    frame = sentences().assign(is_relevant=0)
    result = temporal_sensitivity(frame)
    assert result["temporal_score"] == 0.0 and result["first_relevant_time"] is None
    assert result["irrelevant_duration_ratio"] == 1.0
    points = pd.DataFrame(
        {"start": [1.0], "end": [1.0], "temporal_score": [2], "is_relevant": [0], "judged_ok": [True]}
    )
    assert temporal_sensitivity(points)["irrelevant_duration_ratio"] == 0.0


def test_best_of_four_windows():
    assert best_window_score([1, None, 3, 2]) == 3.0
    assert best_window_score([None, math.nan]) is None
    frame = pd.DataFrame(
        {
            "start": [0.0, 2.0, 4.0],
            "end": [2.0, 4.0, 6.0],
            "is_relevant": [1, 1, 1],
            "window_scores": [[1, None, 3, 2], [None, None, None, None], [0, 0, 1, None]],
        }
    )
    result = temporal_sensitivity(frame, best_of_windows=True)
    assert (result["n_judged"], result["temporal_score"]) == (2, 2.0)


def test_to_100():
    assert to_100(3) == 100.0 and to_100(1.5) == 50.0 and to_100(0) == 0.0
    assert math.isnan(to_100(math.nan))
    with pytest.raises(ValueError):
        to_100(4)


# --- streaming: reminders ------------------------------------------------------------------


class RecordingJudge:
    def __init__(self, keyword="cup"):
        self.keyword = keyword
        self.calls = []

    def __call__(self, text, time):
        self.calls.append((text, time))
        return int(self.keyword in text)


def response(rows):
    return pd.DataFrame(rows, columns=["text", "start"])


def test_reminder_window_is_inclusive_and_empty_windows_score_zero():
    judge = RecordingJudge()
    sentences = response([("too early cup", 4.9), ("the cup fell", 5.0), ("edge cup", 15.0), ("late", 15.01)])
    result = reminder_scores([5.0, 20.0], sentences, judge)
    events = result["events"]
    assert events["text"].tolist() == ["the cup fell edge cup", ""]
    assert events["score"].tolist() == [1, 0]
    assert events["judged"].tolist() == [True, False]
    assert judge.calls == [("the cup fell edge cup", 5.0)]  # no judge call for an empty window
    assert result["sample_score"] == 0


def test_reminder_sample_passes_only_if_every_event_passes():
    sentences = response([("cup one", 3.0), ("cup two", 21.0), ("nothing", 41.0)])
    assert reminder_scores([2.0, 20.0], sentences, RecordingJudge())["sample_score"] == 1
    result = reminder_scores([2.0, 20.0, 40.0], sentences, RecordingJudge())
    assert result["events"]["score"].tolist() == [1, 1, 0]
    assert result["sample_score"] == 0
    # float edge: 5.1 + 10 is 15.1 within 1e-9 s
    assert reminder_scores([5.1], response([("cup", 15.1)]), RecordingJudge())["sample_score"] == 1


def test_reminder_without_events_judges_the_whole_response():
    judge = RecordingJudge(keyword="white")
    sentences = response([("the ship is", 2.0), ("white", 1.0)])
    result = reminder_scores([], sentences, judge)
    assert judge.calls == [("white the ship is", None)]
    assert result["sample_score"] == 1
    with pytest.raises(ValueError, match="0 or 1"):
        reminder_scores([1.0], response([("x", 1.0)]), lambda text, time: 0.5)


def test_judge_calibration_is_spearman():
    auto = [1, 2, 3, 4, 5, None]
    human = [2, 1, 4, 3, 5, 4]
    result = judge_calibration(auto, human)
    expected = stats.spearmanr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert result["n"] == 5
    assert result["rho"] == pytest.approx(expected.statistic) and result["rho"] == pytest.approx(0.8)
    assert result["p_value"] == pytest.approx(expected.pvalue)
    aligned = judge_calibration(
        pd.Series([3, 1, 2], index=["c", "a", "b"]), pd.Series([1, 2, 3], index=["a", "b", "c"])
    )
    assert aligned["rho"] == pytest.approx(1.0)
    assert math.isnan(judge_calibration([1, 2], [1, 2])["rho"])
    assert math.isnan(judge_calibration([1, 1, 1], [1, 2, 3])["rho"])


# --- baselines -----------------------------------------------------------------------------


def test_detect_events_on_rising_edges():
    frames = np.zeros((20, 4, 6), dtype=np.uint8)
    frames[5:10] = 100  # change in at 0.5 s, back out at 1.0 s (10 fps)
    motion = frame_motion(frames)
    assert motion[5] == 100 and motion[10] == 100 and motion[6] == 0
    assert detect_events(frames, fps=10, threshold=50) == [0.5, 1.0]
    assert detect_events(frames, fps=10, threshold=50, min_gap_s=0.6) == [0.5]
    assert detect_events(frames, fps=10, threshold=150) == []
    frames[5:8] = np.arange(3)[:, None, None] * 60 + 100  # a sustained change is one event
    assert detect_events(frames, fps=10, threshold=50)[0] == 0.5


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")
def test_read_grey_frames_finds_a_cut(tmp_path):
    video = tmp_path / "cut.mp4"
    command = [
        "ffmpeg", "-nostdin", "-v", "error", "-y",
        "-f", "lavfi", "-i", "color=c=black:s=64x48:r=10:d=1",
        "-f", "lavfi", "-i", "color=c=white:s=64x48:r=10:d=1",
        "-filter_complex", "[0:v][1:v]concat=n=2:v=1[v]", "-map", "[v]",
        "-c:v", "mpeg4", "-q:v", "2", str(video),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    frames = read_grey_frames(video, fps=10, size=(16, 12))
    assert frames.shape[1:] == (12, 16) and 19 <= len(frames) <= 21
    assert frames[:5].mean() < 30 and frames[-5:].mean() > 220
    assert detect_events(frames, fps=10, threshold=100) == pytest.approx([1.0], abs=0.11)


def test_caption_stream_with_delay_feeds_reminders():
    events = pd.DataFrame({"t": [8.0, 2.0], "text": ["the cup falls", "the cup is lifted"]})
    stream = caption_stream(events, delay_s=1.5, video_duration=9.0, item_id="e1")
    assert list(stream.columns) == STREAM_RESPONSES.names
    assert stream[["text", "start", "end", "is_point"]].values.tolist() == [
        ["the cup is lifted", 3.5, 3.5, True]
    ]
    full = caption_stream(events, delay_s=1.5)
    assert full["start"].tolist() == [3.5, 9.5] and full["sentence_index"].tolist() == [0, 1]
    assert reminder_scores([2.0, 8.0], full, RecordingJudge())["sample_score"] == 1
    too_slow = caption_stream(events, delay_s=10.5)
    assert reminder_scores([2.0, 8.0], too_slow, RecordingJudge())["sample_score"] == 0
    with pytest.raises(ValueError):
        caption_stream(events, delay_s=-1)
