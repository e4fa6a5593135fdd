"""Omni-DuplexEval as released: judge replies, response files, item files, and `omnisocial duplexeval`.

Every case is written from reading the released code (OpenBMB/Omni-DuplexEval); the comment
on each names the released function it mirrors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from omnisocial import cli
from omnisocial.duplexeval.description import temporal_sensitivity
from omnisocial.duplexeval.importers import load_stream_items, read_stream_response
from omnisocial.duplexeval.judged import parse_reply, parsers_differ, read_judge_replies
from omnisocial.importing import ImportErrorWithItem


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- judge replies --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "released", "strict"),
    [
        # real_time_description.parse_evaluation_response: int(float(temporal_score)), 2.6 -> 2
        ('{"temporal_score": 2.6, "temporal_reasoning": "ok", "is_relevant": 1}', (2, 1), (2, 1)),
        # ... keys read by name, any order
        ('{"is_relevant": 0, "temporal_reasoning": "filler", "temporal_score": 3}', (3, 0), (3, 0)),
        # ... reasoning first, then the JSON object: the object's score, not the first digit
        ('Event 2 starts at 4 s. {"temporal_score": 1, "is_relevant": 1}', (1, 1), (1, 1)),
        # ... trailing comma dropped before json.loads; a fenced block is found inside the text
        ('```json\n{"temporal_score": 2, "is_relevant": 1,}\n```', (2, 1), (2, 1)),
        # ... no decodable object: the quoted-key regexes ("temporal_score": (\d+))
        ('"temporal_score": 3, "is_relevant": 1, "temporal_reasoning": "cut off', (3, 1), (3, 1)),
        # ... evaluate_temporal_sentence: nothing parsed -> judged, is_relevant 0, score 0
        ("I cannot see the frames.", (0, 0), (None, None)),
        # ... a free-text verdict is not read by the release; strict reads the labelled number
        ("Event 2 is shown. Score: 3, relevant: 1", (0, 0), (3, 1)),
        # ... the first decodable object wins even without the keys (strict skips it)
        ('{"note": "x"} {"temporal_score": 3, "is_relevant": 1}', (0, 0), (3, 1)),
        # ... no range check in the release; strict: outside 0-3 is no score
        ('{"temporal_score": 5, "is_relevant": 1}', (5, 1), (None, None)),
        # ... is_relevant missing defaults to 0; strict needs it
        ('{"temporal_score": 2}', (2, 0), (None, None)),
    ],
)
def test_temporal_replies(reply, released, strict):
    for parser, expected in (("released", released), ("strict", strict)):
        parsed = parse_reply(reply, "temporal", parser)
        assert (parsed.score, parsed.is_relevant) == expected, parser
    assert parsers_differ(reply, "temporal") == (released != strict)


@pytest.mark.parametrize(
    ("reply", "released", "strict"),
    [
        # real_time_description.evaluate_content_accuracy: round(float(content_score), 2), decimals kept
        ('{"content_score": 2.456, "content_reasoning": "two errors"}', 2.46, 2.46),
        ('{"content_reasoning": "fine", "content_score": "1.5"}', 1.5, 1.5),
        # ... quoted-key regex keeps the decimals too
        ('"content_score": 2.75 and then garbage {', 2.75, 2.75),
        # ... nothing parsed -> 0.0
        ("No score.", 0.0, None),
        ("Final score: 2.5", 0.0, 2.5),
    ],
)
def test_content_replies(reply, released, strict):
    assert parse_reply(reply, "content", "released").score == released
    assert parse_reply(reply, "content", "strict").score == strict


@pytest.mark.parametrize(
    ("reply", "released", "strict"),
    [
        # proactive_reminder.parse_judge_response: first decodable object's success_score
        ('{"reasoning": "names the cup", "success_score": 1}', 1, 1),
        # ... reasoning first ("Event 2 ..."), JSON last: the score, not the first digit
        ('Event 2 happens at 20 s and the model says so.\n{"success_score": 1, "reasoning": "ok"}', 1, 1),
        # ... the quoted-key fallback "success_score": ([01])
        ('"success_score": 1, "reasoning": "unterminated', 1, 1),
        # ... free text only: 0 as released; strict reads the last labelled number
        ("Event 2 is reminded in time. Score: 1", 0, 1),
        # ... an object without success_score counts 0 (parsed.get(..., 0)); strict accepts "score"
        ('{"score": 1}', 0, 1),
        ("no idea", 0, None),
    ],
)
def test_reminder_replies(reply, released, strict):
    assert parse_reply(reply, "reminder", "released").score == released
    assert parse_reply(reply, "reminder", "strict").score == strict


# --- response files -------------------------------------------------------------------------


def test_each_split_reads_its_released_scorers_keys(tmp_path):
    entries = [
        {"sentence": "S", "text": "T", "start": "0:05", "end": "0:07", "current_time": 9},
        {"text": "point", "current_time": "0:12"},
    ]
    path = write_json(tmp_path / "r.json", {"sentences": entries})
    # real_time_description.normalize_response_items: sentence before text, start before current_time
    rtd = read_stream_response(path, "RTD_OCR", "x")
    assert rtd[["text", "start", "end", "is_point"]].values.tolist() == [
        ["S", 5.0, 7.0, False],
        ["point", 12.0, 12.0, True],
    ]
    # proactive_reminder.normalize_chunks: text before sentence, current_time before start
    pr = read_stream_response(path, "PR_event_reminder", "x")
    assert pr[["text", "start"]].values.tolist() == [["T", 9.0], ["point", 12.0]]


def test_null_or_missing_times_and_texts_as_released_and_noted(tmp_path):
    entries = [
        {"sentence": "null start", "start": None, "end": 3},  # float(None or 0.0) -> 0 s
        {"sentence": "no time"},  # no start/current_time/time -> 0 s
        {"sentence": None, "text": "ignored", "start": 1},  # first key present is null: skipped
        {"text": "   ", "start": 2},  # blank: skipped
        {"text": "kept", "current_time": None, "start": 4},  # pr: current_time present wins -> 0 s
    ]
    path = write_json(tmp_path / "r.json", entries)
    notes = []
    rtd = read_stream_response(path, "RTD_counting", "x", notes=notes)
    assert rtd[["text", "start", "end"]].values.tolist() == [
        ["null start", 0.0, 3.0],
        ["no time", 0.0, 0.0],
        ["kept", 4.0, 4.0],
    ]
    assert [n["field"] for n in notes] == ["[0].start", "[1].start", "[2].sentence", "[3].text"]
    notes = []
    pr = read_stream_response(path, "PR_correction", "x", notes=notes)
    assert pr[["text", "start"]].values.tolist() == [
        ["null start", 0.0],
        ["no time", 0.0],
        ["ignored", 1.0],  # the reminder scorer reads text before sentence
        ["kept", 0.0],
    ]
    assert "[4].current_time" in [n["field"] for n in notes]


def test_unreadable_time_still_names_file_item_and_field(tmp_path):
    path = write_json(
        tmp_path / "PR_correction" / "c9.json", {"chunks": [{"text": "x", "current_time": "soon"}]}
    )
    with pytest.raises(ImportErrorWithItem, match=r"c9\.json: item c9: field chunks\[0\]\.current_time"):
        read_stream_response(path, "PR_correction", "c9")


# --- item files -----------------------------------------------------------------------------


def released_rows():
    return [
        {
            "id": "r1",
            "question_text": "Describe what you see.",
            "answer1": "A sign reads EXIT.",
            "video_duration": 30.0,
            "video": {"bytes": b"fake-mp4-bytes", "path": "r1.mp4"},
        },
        {"id": "r2", "question_text": "Count the cups.", "video_duration": 12.0, "video": None},
    ]


def test_parquet_items_with_video_bytes_and_split_from_the_file_name(tmp_path):
    path = tmp_path / "RTD_OCR-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(released_rows()), path)
    items = load_stream_items(path, media_dir=tmp_path / "media")
    assert items["split"].tolist() == ["RTD_OCR", "RTD_OCR"]
    video = items["video"].iloc[0]
    assert video.startswith(str(tmp_path / "media")) and video.endswith(".mp4")
    assert Path(video).read_bytes() == b"fake-mp4-bytes"
    assert items["video"].iloc[1] == ""
    again = load_stream_items(path, media_dir=tmp_path / "media")  # same bytes -> same hashed file
    assert again["video"].iloc[0] == video


def _save_to_disk(folder, rows):
    """The `datasets` save_to_disk layout: dataset_info.json, state.json, data-*.arrow (IPC streams)."""
    folder.mkdir(parents=True)
    table = pa.Table.from_pylist(rows)
    arrow = str(folder / "data-00000-of-00001.arrow")
    with pa.OSFile(arrow, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (folder / "dataset_info.json").write_text("{}")
    (folder / "state.json").write_text(
        json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}]})
    )


def test_datasets_folder_and_dataset_dict(tmp_path):
    _save_to_disk(tmp_path / "RTD_counting", released_rows())
    items = load_stream_items(tmp_path / "RTD_counting", media_dir=tmp_path / "media")
    assert items[["split", "item_id"]].values.tolist() == [["RTD_counting", "r1"], ["RTD_counting", "r2"]]
    _save_to_disk(tmp_path / "dd" / "PR_correction", [{"id": "c1", "question_text": "It is blue, right?"}])
    _save_to_disk(tmp_path / "dd" / "RTD_OCR", [{"id": "o1", "question_text": "Read it."}])
    (tmp_path / "dd" / "dataset_dict.json").write_text('{"splits": ["PR_correction", "RTD_OCR"]}')
    both = load_stream_items(tmp_path / "dd")
    assert both[["split", "item_id"]].values.tolist() == [["PR_correction", "c1"], ["RTD_OCR", "o1"]]
    # no split in the rows nor the name: taken from the config value (default_split)
    _save_to_disk(tmp_path / "plain", [{"id": "p1", "question_text": "Remind me."}])
    assert load_stream_items(tmp_path / "plain", default_split="PR_event_reminder")["split"].tolist() == [
        "PR_event_reminder"
    ]
    with pytest.raises(ImportErrorWithItem, match=r"plain: item p1: field split: unknown split ''"):
        load_stream_items(tmp_path / "plain")


def test_media_bytes_without_a_media_folder_name_the_field(tmp_path):
    path = tmp_path / "RTD_OCR.parquet"
    pq.write_table(pa.Table.from_pylist(released_rows()), path)
    with pytest.raises(ImportErrorWithItem, match=r"item r1: field video: media given as bytes"):
        load_stream_items(path)


# --- omnisocial duplexeval rtd / pr ---------------------------------------------------------


def _write_replies(path, rows):
    if path.suffix == ".json":
        path.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    elif path.suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    else:
        pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture
def rtd_files(tmp_path):
    items = write_json(
        tmp_path / "items.json",
        {
            "RTD_OCR": [{"id": "r1", "question_text": "Read the signs.", "video_duration": 30}],
            "RTD_counting": [{"id": "r2", "question_text": "Count.", "video_duration": 10}],
        },
    )
    responses = tmp_path / "model-a"
    write_json(
        responses / "RTD_OCR" / "r1.json",
        {
            "sentences": [
                {"sentence": "A sign reads EXIT.", "start": 3, "end": 5},  # window [1, 3]
                {"sentence": "Um.", "start": 6, "end": 6.5},  # [4, 4.5]
                {"text": "A door opens.", "current_time": "0:10"},  # point: [8, 8.5]
            ]
        },
    )
    write_json(responses / "r2.json", [{"sentence": "Two cups.", "start": 11, "end": 14}])  # past the end
    replies = [
        {"item_id": "r1", "index": 0, "reply": '{"temporal_score": 2.6, "is_relevant": 1}'},
        {"item_id": "r1", "index": 1, "reply": 'filler {"is_relevant": 0, "temporal_score": 0}'},
        {"item_id": "r1", "index": 2, "reply": "It matches. Score: 3, relevant: 1"},
        {"item_id": "r1", "kind": "content", "reply": '{"content_score": 2.25}'},
    ]
    return tmp_path, items, responses, replies


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json"])
def test_cli_rtd_scores_released_files(rtd_files, suffix, capsys):
    tmp_path, items, responses, replies = rtd_files
    judged = _write_replies(tmp_path / f"judged{suffix}", replies)
    out = tmp_path / "metrics.csv"
    argv = ["duplexeval", "rtd", str(items), str(responses), "--judge-replies", str(judged), "-o", str(out)]
    assert cli.main(argv + ["--per-item", str(tmp_path / "items_out.csv")]) == 0
    metrics = pd.read_csv(out).set_index("split")
    r1 = pd.read_csv(tmp_path / "items_out.csv").set_index("item_id").loc["r1"]
    # released: the free-text reply is judged, irrelevant, 0 -> relevant scores [2]
    assert r1["temporal_score"] == 2.0 and r1["n_judged"] == 3 and r1["n_relevant"] == 1
    assert r1["irrelevant_duration_ratio"] == pytest.approx(0.5 / 2.5)
    assert r1["content_score"] == 2.25 and r1["n_unparsed"] == 1 and r1["n_parse_differ"] == 1
    assert metrics.loc["RTD_counting", "n_no_window"] == 1
    assert metrics.loc["all", "temporal_score"] == pytest.approx(1.0)
    assert metrics.loc["all", "temporal_fraction"] == pytest.approx(1 / 3)
    assert metrics.loc["all", "n_items"] == 2 and metrics.loc["all", "n_content"] == 1
    assert "1 replies read differently" in capsys.readouterr().err
    # the first relevant time: the earliest start of a judged relevant sentence (the sign at 3 s),
    # as the workflow's `description.temporal_sensitivity` computes it on the same judgements
    sentences = pd.DataFrame(
        {"start": [3, 6, 10], "end": [5, 6.5, 10], "is_relevant": [1, 0, 0], "judged_ok": True}
    ).assign(temporal_score=[2.0, 0.0, 0.0])
    assert r1["first_relevant_time"] == temporal_sensitivity(sentences)["first_relevant_time"] == 3.0
    r2 = pd.read_csv(tmp_path / "items_out.csv").set_index("item_id").loc["r2"]
    assert math.isnan(r2["first_relevant_time"])  # nothing judged
    assert metrics.loc["all", ["n_first_relevant", "first_relevant_time"]].tolist() == [1, 3.0]
    assert cli.main(argv + ["--parser", "strict"]) == 0
    strict = pd.read_csv(out).set_index("split")
    assert strict.loc["RTD_OCR", "temporal_score"] == pytest.approx(2.5)  # (2 + 3) / 2


def test_cli_pr_scores_released_files(tmp_path, capsys):
    items = write_json(
        tmp_path / "items.json",
        {
            "PR_event_reminder": [
                {
                    "id": "e1",
                    "question_text": "Tell me when the cup falls.",
                    "reminder1": 5,
                    "reminder2": "20",
                },
                {"id": "e2", "question_text": "No response for me.", "reminder1": 3},
            ],
            "PR_correction": [{"id": "c1", "question_text": "The car is blue?", "answer1": "It is red."}],
        },
    )
    responses = tmp_path / "model-b"
    write_json(
        responses / "PR_event_reminder" / "e1.json",
        {
            "chunks": [
                {"text": "Heads up, the cup fell!", "current_time": "0:07"},
                {"sentence": "Again!", "start": 25},
            ]
        },
    )
    write_json(responses / "pr_correction" / "c1.json", [{"text": "Actually the car is red.", "time": 2}])
    judged = _write_replies(
        tmp_path / "judged.csv",
        [
            {"split": "PR_event_reminder", "item_id": "e1", "index": 0, "reply": '{"success_score": 1}'},
            {
                "split": "PR_event_reminder",
                "item_id": "e1",
                "index": 1,
                "reply": "Event 2 is reminded. Score: 1",
            },
            {
                "split": "",
                "item_id": "c1",
                "index": 0,
                "reply": '```json\n{"reasoning": "ok", "success_score": 1}\n```',
            },
        ],
    )
    out = tmp_path / "pr.csv"
    argv = ["duplexeval", "pr", str(items), str(responses), "--judge-replies", str(judged), "-o", str(out)]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "left out:" in err and "item e2: field (file): response file not found" in err
    metrics = pd.read_csv(out).set_index("split")
    assert metrics.loc["all", "n_items"] == 2
    assert metrics.loc["all", "success_fraction"] == 0.5  # e1 fails on event 2 as released
    assert metrics.loc["all", "event_success_fraction"] == pytest.approx(2 / 3)
    assert metrics.loc["all", "n_parse_differ"] == 1
    assert cli.main(argv + ["--parser", "strict"]) == 0
    strict = pd.read_csv(out).set_index("split")
    assert strict.loc["all", "success_fraction"] == 1.0
    assert math.isclose(strict.loc["PR_event_reminder", "event_success_fraction"], 1.0)


def test_cli_pr_drops_reminder_times_the_released_scorer_cannot_read(tmp_path, capsys):
    """proactive_reminder.parse_float_or_none reads "0:15" as None and the time is dropped
    (the rest renumbered); a sample left without reminders is judged once on the whole
    response (evaluate_sample). released does the same and notes it; strict reads 15 s."""
    items = write_json(
        tmp_path / "items.json",
        {
            "PR_event_reminder": [
                {"id": "e1", "question_text": "Tell me when the cup falls.", "reminder1": "0:15"},
                {
                    "id": "e2",
                    "question_text": "Tell me when the door opens.",
                    "reminder1": "0:15",
                    "reminder2": 30,
                },
            ]
        },
    )
    responses = tmp_path / "model-c" / "PR_event_reminder"
    write_json(
        responses / "e1.json",
        [
            {"text": "Heads up, the cup fell!", "current_time": 17},
            {"text": "It is on the floor.", "current_time": 40},
        ],
    )
    write_json(
        responses / "e2.json",
        [{"text": "The door opened.", "current_time": 16}, {"text": "Nothing yet.", "current_time": 33}],
    )
    # the published judgements: e1 judged once (whole response), e2 once (its 30 s reminder);
    # strict's extra judgement of e2's 15 s reminder, and a reply for an item that is not there
    judged = write_json(
        tmp_path / "judged.json",
        {
            "replies": [
                {"id": "e1", "index": 0, "reply": '{"success_score": 1, "reasoning": "reminded"}'},
                {"id": "e2", "index": 0, "reply": '{"success_score": 0, "reasoning": "wrong event"}'},
                {"id": "e2", "index": 1, "reply": '{"success_score": 1, "reasoning": "door"}'},
                {"id": "e9", "index": 0, "reply": '{"success_score": 1}'},
            ]
        },
    )
    out, notes, per_item = tmp_path / "pr.csv", tmp_path / "notes.csv", tmp_path / "per_item.csv"
    argv = ["duplexeval", "pr", str(items), str(tmp_path / "model-c"), "--judge-replies", str(judged)]
    argv += ["-o", str(out), "--notes", str(notes), "--per-item", str(per_item)]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    metrics = pd.read_csv(out).set_index("split").loc["all"]
    # the released batch: e1 total_score 1, e2 0 -> success 1 / 2; event scores [1], [0] -> 1 / 2
    assert metrics[["n_items", "n_events", "n_judgements", "n_scored"]].tolist() == [2, 1, 2, 2]
    assert metrics["success_fraction"] == 0.5 and metrics["event_success_fraction"] == 0.5
    rows = pd.read_csv(per_item).set_index("item_id")
    assert rows.loc["e1", "n_events"] == 0 and rows.loc["e1", "sample_score"] == 1.0
    noted = pd.read_csv(notes)
    assert noted[["item_id", "field"]].values.tolist() == [
        ["e1", "reminder1"],
        ["e1", "reminder1"],
        ["e2", "reminder1"],
        ["e2", "index"],
        ["e9", "item_id"],
    ]
    assert (
        noted["message"].iloc[0]
        == "'0:15' is not a number the released scorer reads: reminder dropped, as released"
    )
    assert noted["message"].iloc[1] == "no reminder left: the whole response is judged once"
    assert noted["message"].iloc[3] == "no reminder judgement 1 in the item"
    assert noted["source"].iloc[4] == str(judged)
    assert "2 judge replies not scored (e.g. item e2: no reminder judgement 1 in the item)" in err
    assert "2 reminder times the released scorer cannot read dropped" in err
    assert cli.main(argv + ["--parser", "strict"]) == 0
    capsys.readouterr()
    strict = pd.read_csv(out).set_index("split").loc["all"]
    assert strict[["n_events", "n_judgements"]].tolist() == [3, 3]  # 0:15 read as 15 s
    assert strict["event_success_fraction"] == pytest.approx(2 / 3) and strict["success_fraction"] == 0.5
    assert pd.read_csv(notes)["item_id"].tolist() == ["e9"]


def test_cli_bad_judged_row_is_one_line(rtd_files, capsys):
    tmp_path, items, responses, _ = rtd_files
    judged = _write_replies(tmp_path / "judged.csv", [{"item_id": "r1", "index": "first", "reply": "3"}])
    argv = ["duplexeval", "rtd", str(items), str(responses), "--judge-replies", str(judged), "-o", "x.csv"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "judged.csv: item r1: field index" in err
    with pytest.raises(ImportErrorWithItem, match="needs its index"):
        read_judge_replies(_write_replies(tmp_path / "j.csv", [{"item_id": "r1", "reply": "x"}]), "temporal")


@pytest.mark.parametrize(("reading", "expected"), [("released", [None, 30.0]), ("strict", [15.0, 30.0])])
def test_workflow_import_reads_reminders_as_the_parser_setting_says(tmp_path, reading, expected):
    """The workflow's import (rule social_import, `social.parser`) drops "0:15" as the released
    reminder scorer does, with a note, and strict reads 15 s: the command and the workflow agree."""
    from omnisocial.duplexeval.importers import import_duplexeval

    item = {"id": "e2", "question_text": "Tell me when the door opens.", "reminder1": "0:15", "reminder2": 30}
    write_json(tmp_path / "items.json", {"PR_event_reminder": [item]})
    notes: list = []
    items = import_duplexeval(tmp_path, "items.json", reminders=reading, notes=notes)["stream_items"]
    row = items.iloc[0]
    got = [None if pd.isna(row["reminder1"]) else row["reminder1"], row["reminder2"]]
    assert got == expected
    assert [note["field"] for note in notes] == (["reminder1"] if reading == "released" else [])
