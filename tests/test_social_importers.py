"""Importers of the released SocialOmni / Omni-DuplexEval formats on fixture files (docs/input-formats.md)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from omnisocial.duplexeval.contracts import STREAM_ITEMS
from omnisocial.duplexeval.importers import load_stream_items, load_stream_responses, read_stream_response
from omnisocial.importing import IMPORT_ERRORS, ImportErrorWithItem, parse_timestamp
from omnisocial.socialomni.contracts import WHEN_ITEMS, WHO_ITEMS
from omnisocial.socialomni.importers import (
    ReadOptions,
    extract_query_interval,
    format_clock,
    load_when_items,
    load_who_items,
    split_said,
)


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- timestamps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("17", 17.0),
        ("17.5", 17.5),
        ("12s", 12.0),
        (" 8 ", 8.0),
        ("1:05", 65.0),
        ("0:04.5", 4.5),
        ("0：08", 8.0),  # full-width colon
        ("00:01:05", 65.0),  # real clock time, not the released "middle field = seconds"
        ("0:01:05", 65.0),
        ("00:17:00", 1020.0),  # released level-2 code reads this as 17 s
        ("1:00:00", 3600.0),
        ("01:02:50", 3770.0),  # the hosted evaluator reads this as 62.5 s
        (65, 65.0),
        (2.25, 2.25),
    ],
)
def test_parse_timestamp_reads_clock_time(text, seconds):
    assert parse_timestamp(text) == seconds


@pytest.mark.parametrize(
    "bad", ["", "abc", "1:75", "00:60:00", "1:2:3:4", "-3", -1, math.inf, None, True, "5 min"]
)
def test_parse_timestamp_rejects_malformed(bad):
    with pytest.raises(ValueError):
        parse_timestamp(bad)


@pytest.mark.parametrize(
    ("question", "interval"),
    [
        ("What happened from 0：04 to 0:08 seconds?", (4.0, 8.0)),
        ("What happened at the 2th and 6th second of the video?", (2.0, 6.0)),
        ("Who was speaking at 0:05 in the video?", (5.0, 5.0)),
        ("Between second 3 and 7, who talks?", (3.0, 7.0)),
        ("At 12.5 seconds, who is speaking?", (12.5, 12.5)),
        ("From 0:00:10 to 0:00:14, who speaks and what do they say?", (10.0, 14.0)),
        ("Between 0:01.5 and 0:03.0 of the clip, who is speaking?", (1.5, 3.0)),
    ],
)
def test_query_interval_from_question_text(question, interval):
    assert extract_query_interval(question) == interval


@pytest.mark.parametrize(
    "question",
    [
        "At 0:05, and again at 0:09, who speaks?",  # two different times
        "What happened from 0:09 to 0:04?",  # reversed
        "Who speaks at 0:00?",  # nothing observed yet
    ],
)
def test_query_interval_rejects_missing_ambiguous_or_reversed(question):
    with pytest.raises(ValueError):
        extract_query_interval(question)


def test_format_clock_round_trips_through_the_question_parser():
    for seconds in (0.4, 4.5, 59.96, 61.25, 125.0):
        text = format_clock(seconds)
        assert extract_query_interval(f"at {text}")[1] == pytest.approx(round(seconds, 1))
    assert format_clock(59.96) == "1:00.0"


def test_split_said():
    assert split_said("Tom said I like tea") == ("Tom", "I like tea")
    assert split_said("The woman in red said: hello there") == ("The woman in red", "hello there")
    assert split_said("no verb here") is None


# --- SocialOmni level 1 ------------------------------------------------------------------


def level1_items():
    return [
        {
            "id": 1,
            "video_path": "clips/v1.mp4",
            "question": "What happened from 0:04 to 0:08 seconds?",
            "options": [
                "A. Tom said hello",
                "B. Ann said hello",
                "C. Tom said goodbye",
                "D. Ann said goodbye",
            ],
            "correct_answer": "A",
            "asr_content": "hello / goodbye",
            "metadata": {"consistency": "Consistent", "domain": "work", "subcategory": "meeting"},
        },
        {
            "id": "2",
            "video_path": "clips/v2.mp4",
            "question": "Who was speaking at 0:05 in the video?",
            "options": ["Tom said yes", "Ann said yes", "Tom said no", "Ann said no"],  # no prefixes
            "correct_answer": "(D)",
            "metadata": {"consistency": "inconsistent"},
        },
        {
            "id": "3",
            "video_path": "clips/v3.mp4",
            "question": "What happened at the 2th and 6th second of the video?",
            "options": {"A": "A) Bo said hi", "B": "Cy said hi", "C": "Bo said bye", "D": "Cy said bye"},
            "correct_answer": "c",
            "metadata": {"consistency": "consistent", "category": "family"},
        },
    ]


def test_load_who_items_reads_the_released_layout(tmp_path):
    path = write_json(tmp_path / "data/level_1/dataset.json", level1_items())
    items = load_who_items(path)
    assert list(items.columns) == WHO_ITEMS.names
    assert items["item_id"].tolist() == ["1", "2", "3"]
    first = items.iloc[0]
    assert (first["query_start"], first["query_time"]) == (4.0, 8.0)
    assert first["option_a"] == "Tom said hello"
    assert first["speaker"] == "Tom"
    assert first["consistency"] == "consistent"
    assert (first["domain"], first["subcategory"]) == ("work", "meeting")
    assert first["review_status"] == "released"
    assert json.loads(first["metadata_json"])["domain"] == "work"
    second = items.iloc[1]
    assert (second["correct_answer"], second["option_d"], second["speaker"]) == ("D", "Ann said no", "Ann")
    assert (second["query_start"], second["query_time"]) == (5.0, 5.0)
    assert second["consistency"] == "inconsistent"
    third = items.iloc[2]
    assert (third["correct_answer"], third["option_a"], third["domain"]) == ("C", "Bo said hi", "family")
    assert third["query_time"] == 6.0


def test_load_who_items_accepts_a_data_wrapper(tmp_path):
    path = write_json(tmp_path / "dataset.json", {"data": level1_items()[:1]})
    assert load_who_items(path)["item_id"].tolist() == ["1"]


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        (lambda item: item.pop("correct_answer"), "correct_answer", "expected a letter"),
        (lambda item: item.update(correct_answer="E"), "correct_answer", "expected one of"),
        (lambda item: item.update(question="What happened from 0:04 to 0:75?"), "question", "timestamp"),
        (lambda item: item.update(options=["A. x"]), "options", "2 to 4 options"),
        (
            lambda item: item.update(options=["A. x", "B. y", "C. z"], correct_answer="D"),
            "correct_answer",
            "one of",
        ),
        (lambda item: item.update(options=["A. x", "A. y", "C. z", "D. w"]), "options", "once each"),
        (lambda item: item.pop("video_path"), "video_path", "missing"),
        (
            lambda item: item.update(metadata={"consistency": "maybe"}),
            "metadata.consistency",
            "consistency_map",
        ),
        (lambda item: item.update(metadata="consistent"), "metadata", "object"),
    ],
)
def test_malformed_level1_item_names_file_item_and_field(tmp_path, change, field, fragment):
    items = level1_items()
    change(items[1])
    path = write_json(tmp_path / "dataset.json", items)
    with pytest.raises(ImportErrorWithItem) as caught:
        load_who_items(path)
    error = caught.value
    assert (error.item_id, error.field) == ("2", field)
    message = str(error)
    assert str(path) in message and "item 2" in message and f"field {field}" in message
    assert fragment in message


def test_item_without_id_is_named_by_position(tmp_path):
    items = level1_items()
    del items[2]["id"]
    path = write_json(tmp_path / "dataset.json", items)
    with pytest.raises(ImportErrorWithItem, match=r"item #2: field id"):
        load_who_items(path)


def test_collect_errors_keeps_the_good_items(tmp_path):
    items = level1_items()
    items[0]["correct_answer"] = "Z"
    items.append(dict(items[1]))  # duplicate id "2"
    path = write_json(tmp_path / "dataset.json", items)
    good, errors = load_who_items(path, collect_errors=True)
    assert good["item_id"].tolist() == ["2", "3"]
    assert list(errors.columns) == IMPORT_ERRORS.names
    assert errors[["item_id", "field"]].values.tolist() == [["1", "correct_answer"], ["2", "id"]]
    assert errors["message"].iloc[1] == "duplicate id"
    assert set(errors["source"]) == {str(path)}


def test_max_time_catches_times_beyond_the_clip(tmp_path):
    items = level1_items()
    items[0]["question"] = "What happened from 00:00:04 to 00:17:00?"  # 17 minutes as a clock time
    path = write_json(tmp_path / "dataset.json", items)
    assert load_who_items(path)["query_time"].iloc[0] == 1020.0
    with pytest.raises(ImportErrorWithItem, match=r"item 1: field question: 1020 s is beyond max_time_s=60"):
        load_who_items(path, max_time_s=60)


def test_file_level_errors_always_raise(tmp_path):
    bad = tmp_path / "dataset.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(ImportErrorWithItem, match=r"field \(file\): not valid JSON"):
        load_who_items(bad, collect_errors=True)
    with pytest.raises(ImportErrorWithItem, match="cannot read"):
        load_who_items(tmp_path / "missing.json")
    write_json(bad, {"items": []})
    with pytest.raises(ImportErrorWithItem, match="expected a list"):
        load_who_items(bad)


# --- SocialOmni level 2 --------------------------------------------------------------------


def level2_items():
    return [
        {
            "video_id": "v1",
            "video_file": "v1.mp4",
            "question_1": {
                "question": "Should Ann speak now?",
                "timestamp": "00:01:05",
                "option_A": "YES",
                "option_B": "NO",
                "correct_answer": "A",
            },
            "question_2": {"question": "What should Ann say?", "answer": "Sure, let's go."},
            "full_asr": "Tom: shall we go?",
            "metadata": {"domain": "friends", "subcategory": "planning"},
        },
        {
            "video_id": "v2",
            "video_file": "v2.mp4",
            "question_1": {"question": "Should Bo speak now?", "timestamp": "1:05", "correct_answer": "NO"},
        },
        {
            "video_id": "v3",
            "video_file": "v3.mp4",
            "question_1": {
                "question": "Should Cy speak now?",
                "timestamp": 17,
                "option_A": "NO",
                "option_B": "YES",
                "correct_answer": "B",
            },
            "question_2": {"question": "Cy's next words?", "answer": ""},
        },
    ]


def test_load_when_items_reads_the_released_layout(tmp_path):
    path = write_json(tmp_path / "data/level_2/annotations.json", {"data": level2_items()})
    items = load_when_items(path)
    assert list(items.columns) == WHEN_ITEMS.names
    # excel reading (default): "00:01:05" is H:MM:CC, 0 min 1 s and 5 hundredths
    assert items["cut_time"].tolist() == [1.05, 65.0, 17.0]
    clock = load_when_items(path, max_time_s=ReadOptions(timestamps="clock"))
    assert clock["cut_time"].tolist() == [65.0, 65.0, 17.0]
    assert items["timestamp_raw"].tolist() == ["00:01:05", "1:05", "17"]
    assert items["correct_answer"].tolist() == ["A", "B", "B"]
    assert items["gold"].tolist() == ["YES", "NO", "YES"]
    assert items["target"].tolist() == ["Ann", "", ""]
    assert items["how_reference"].tolist() == ["Sure, let's go.", "", ""]
    assert items.iloc[0]["domain"] == "friends"
    assert items.iloc[1][["option_a", "option_b"]].tolist() == ["YES", "NO"]  # defaults


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda item: item["question_1"].pop("timestamp"), "question_1.timestamp"),
        (lambda item: item["question_1"].update(timestamp="1:2:3:4"), "question_1.timestamp"),
        (lambda item: item["question_1"].update(timestamp="0:61"), "question_1.timestamp"),
        (lambda item: item["question_1"].update(correct_answer="C"), "question_1.correct_answer"),
        (lambda item: item.pop("question_1"), "question_1"),
        (lambda item: item.pop("video_file"), "video_file"),
        (lambda item: item.update(question_2="What should Bo say?"), "question_2"),
    ],
)
def test_malformed_level2_item_names_item_and_field(tmp_path, change, field):
    items = level2_items()
    change(items[1])
    path = write_json(tmp_path / "annotations.json", items)
    with pytest.raises(ImportErrorWithItem) as caught:
        load_when_items(path)
    assert (caught.value.item_id, caught.value.field) == ("v2", field)
    assert f"{path}: item v2: field {field}:" in str(caught.value)
    good, errors = load_when_items(path, collect_errors=True)
    assert good["item_id"].tolist() == ["v1", "v3"]
    assert errors[["item_id", "field"]].values.tolist() == [["v2", field]]


# --- Omni-DuplexEval items -----------------------------------------------------------------


def stream_rows():
    return [
        {
            "id": "e1",
            "question_text": "Remind me when the cup falls.",
            "answer1": "",
            "answer2": None,
            "reminder1": 12.5,
            "reminder2": "30",
            "video_type": "home",
            "video_duration": 45.0,
            "video": {"path": "videos/e1.mp4", "bytes": None},
            "question_audio": "audio/e1.wav",
        },
        {
            "id": 7,
            "question_text": "Tell me when the door opens.",
            "reminder1": None,
            "video_duration": "20",
            "video": "videos/7.mp4",
        },
    ]


def test_stream_items_from_json_with_split_argument(tmp_path):
    path = write_json(tmp_path / "items.json", stream_rows())
    items = load_stream_items(path, split="PR_event_reminder")
    assert list(items.columns) == STREAM_ITEMS.names
    assert items["item_id"].tolist() == ["e1", "7"]
    assert items["task"].tolist() == ["PR", "PR"]
    assert items.iloc[0][["reminder1", "reminder2", "video_duration"]].tolist() == [12.5, 30.0, 45.0]
    assert math.isnan(items.iloc[1]["reminder1"]) and math.isnan(items.iloc[1]["reminder2"])
    assert items["video"].tolist() == ["videos/e1.mp4", "videos/7.mp4"]
    assert items["answer2"].tolist() == ["", ""]


def test_stream_items_from_json_keyed_by_split(tmp_path):
    rtd = {
        "id": "r1",
        "question_text": "Describe what happens.",
        "answer1": "A man runs.",
        "video_duration": 30,
    }
    path = write_json(tmp_path / "items.json", {"RTD_counting": [rtd], "PR_correction": [stream_rows()[1]]})
    items = load_stream_items(path)
    assert items[["split", "item_id", "task"]].values.tolist() == [
        ["RTD_counting", "r1", "RTD"],
        ["PR_correction", "7", "PR"],
    ]
    assert load_stream_items(path, split="RTD_counting")["item_id"].tolist() == ["r1"]


def test_stream_items_from_csv(tmp_path):
    frame = pd.DataFrame(
        {
            "split": ["PR_post_event_reminder", "RTD_OCR"],
            "id": ["0012", "0013"],
            "question_text": ["Tell me after the car leaves.", "Read the signs."],
            "reminder1": ["8.0", ""],
            "reminder2": ["", ""],
            "video_duration": ["15", "20"],
            "video": ["a.mp4", "b.mp4"],
        }
    )
    path = tmp_path / "items.csv"
    frame.to_csv(path, index=False)
    items = load_stream_items(path)
    assert items["item_id"].tolist() == ["0012", "0013"]  # zeros kept
    assert items.iloc[0]["reminder1"] == 8.0 and math.isnan(items.iloc[1]["reminder1"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda row: row.pop("question_text"), "question_text"),
        (lambda row: row.update(reminder1="soon"), "reminder1"),
        (lambda row: row.update(reminder2=50), "reminder2"),  # after the 45 s video
        (lambda row: row.update(split="PR_unknown"), "split"),
        (lambda row: row.update(video=3), "video"),
    ],
)
def test_malformed_stream_item_names_item_and_field(tmp_path, change, field):
    rows = stream_rows()
    rows[0]["split"] = "PR_event_reminder"
    rows[1]["split"] = "PR_event_reminder"
    change(rows[0])
    path = write_json(tmp_path / "items.json", rows)
    with pytest.raises(ImportErrorWithItem) as caught:
        load_stream_items(path)
    assert (caught.value.item_id, caught.value.field) == ("e1", field)
    good, errors = load_stream_items(path, collect_errors=True)
    assert good["item_id"].tolist() == ["7"]
    assert errors["field"].tolist() == [field]


def test_stream_item_without_split_is_an_error(tmp_path):
    path = write_json(tmp_path / "items.json", stream_rows())
    with pytest.raises(ImportErrorWithItem, match="field split: unknown split ''"):
        load_stream_items(path)


# --- Omni-DuplexEval responses -------------------------------------------------------------


def test_response_list_of_intervals_and_points(tmp_path):
    path = write_json(
        tmp_path / "r.json",
        [
            {"sentence": "A man opens the door.", "start": 4.2, "end": 5.1},
            {"text": "Now he walks inside.", "current_time": 6.0},
            {"content": "He sits.", "time": "0:07"},
            {"sentence": "   ", "start": 8, "end": 9},  # blank: skipped
            {"sentence": "Backwards.", "start": 10, "end": 9.5},  # end < start -> end = start
            {"sentence": "Start only.", "start": 11},
            {"sentence": "Start and point.", "start": 12, "current_time": 12.8},
        ],
    )
    rows = read_stream_response(path, "RTD_OCR", "x1", model="m")
    assert rows["text"].tolist() == [
        "A man opens the door.",
        "Now he walks inside.",
        "He sits.",
        "Backwards.",
        "Start only.",
        "Start and point.",
    ]
    assert rows["sentence_index"].tolist() == [0, 1, 2, 3, 4, 5]
    assert rows["start"].tolist() == [4.2, 6.0, 7.0, 10.0, 11.0, 12.0]
    assert rows["end"].tolist() == [5.1, 6.0, 7.0, 10.0, 11.0, 12.8]
    assert rows["is_point"].tolist() == [False, True, True, False, False, False]
    assert set(rows["model"]) == {"m"} and set(rows["item_id"]) == {"x1"}


@pytest.mark.parametrize("key", ["chunks", "sentences"])
def test_response_object_with_chunks_or_sentences(tmp_path, key):
    path = write_json(tmp_path / "r.json", {key: [{"text": "Cup falls!", "current_time": 13}], "id": "e1"})
    rows = read_stream_response(path, "PR_event_reminder", "e1")
    assert rows[["text", "start", "end"]].values.tolist() == [["Cup falls!", 13.0, 13.0]]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([{"sentence": "bad", "start": "soon"}], "[0].start"),
        ({"chunks": [{"text": "x", "time": -2}]}, "chunks[0].time"),
        ({"sentences": ["just a string"]}, "sentences[0]"),
        ([{"text": 5, "start": 1}], "[0].text"),
        ({"chunks": [{"text": "a", "time": 1}], "sentences": [{"text": "b", "time": 1}]}, "sentences/chunks"),
        ({"answer": "x"}, "(file)"),
    ],
)
def test_malformed_response_names_file_item_and_field(tmp_path, data, field):
    path = write_json(tmp_path / "RTD_OCR" / "x9.json", data)
    with pytest.raises(ImportErrorWithItem) as caught:
        read_stream_response(path, "RTD_OCR", "x9")
    assert (caught.value.item_id, caught.value.field) == ("x9", field)
    assert str(path) in str(caught.value)


def test_load_stream_responses_over_items(tmp_path):
    items = pd.DataFrame({"split": ["RTD_OCR", "RTD_OCR", "PR_correction"], "item_id": ["a", "b", "c"]})
    root = tmp_path / "responses"
    write_json(root / "RTD_OCR" / "a.json", [{"sentence": "one", "start": 1, "end": 2}])
    write_json(root / "RTD_OCR" / "b.json", [{"sentence": "two"}])  # no time: 0 s as released, noted
    with pytest.raises(ImportErrorWithItem, match=r"item c: field \(file\)"):
        load_stream_responses(root, items, model="m")
    notes = []
    responses, errors = load_stream_responses(root, items, model="m", collect_errors=True, notes=notes)
    assert responses[["item_id", "text", "start"]].values.tolist() == [["a", "one", 1.0], ["b", "two", 0.0]]
    assert errors[["item_id", "field"]].values.tolist() == [["c", "(file)"]]
    assert errors["message"].iloc[0] == "response file not found"
    assert [(n["item_id"], n["field"]) for n in notes] == [("b", "[0].start")]
