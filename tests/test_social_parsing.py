"""Reply parsing as released (default) and strict, released timestamps, and `omnisocial socialomni ...`.

The reply cases were written from reading the released SocialOmni code; each names the
released function it mirrors (paths in MAC-AutoML/SocialOmni).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from omnisocial import cli
from omnisocial.importing import format_excel_time, read_timestamp
from omnisocial.socialomni.how import parse_judge_score, released_averages
from omnisocial.socialomni.importers import extract_query_interval, import_socialomni
from omnisocial.socialomni.parsing import parse_choice, parse_yes_no_letter

# --- who: models/pipeline/answer_extraction.py: extract_choice -----------------------------


@pytest.mark.parametrize(
    ("reply", "released", "strict"),
    [
        # _extract_from_region: the LAST "answer is X" beats an earlier "option X"
        ("Option B looks plausible, but the final answer is D", "D", "D"),
        # _final_answer_region: only the text after </think> counts
        ("<think>The voice sounds like B ... or B?</think> A", "A", "A"),
        # case-insensitive (the region is upper-cased): "answer is c"
        ("The answer is c", "C", "C"),
        # leading letter followed by ")"
        ("d) Tom said we should leave", "D", "D"),
        ("Final answer: d", "D", "D"),
        # last standalone letter
        ("**B**", "B", "B"),
        # the last assistant turn of a chat transcript (_last_assistant_region)
        ("user\nWho speaks? A, B, C or D\nassistant\nC.", "C", "C"),
        ("<|im_start|>assistant\nB<|im_end|>", "B", "B"),
        # "answer X" after "option X": keyword rule first, then option rule
        ("Option A. Answer: B", "B", "B"),
        ("I'd pick choice C", "C", "C"),
        # the released blind spot: the article "a" read as option A; strict fixes it
        ("the answer is a bit unclear", "A", None),
        ("A man in a red shirt is talking", "A", None),
        ("I think A is right", "A", "A"),
        # nothing to read
        ("I cannot tell.", None, None),
        ("", None, None),
    ],
)
def test_who_reply_parsing_released_and_strict(reply, released, strict):
    assert parse_choice(reply) == released
    assert parse_choice(reply, parser="strict") == strict


def test_who_probe_replies_parse_as_released():
    # the probe: the released extractor reads 3 of these 4 right where the old rule read 1
    probes = {
        "Option B is close, but the final answer is D": "D",
        "<think>maybe B</think> A": "A",
        "The answer is c": "C",
        "Final answer: d": "D",
    }
    assert all(parse_choice(reply) == letter for reply, letter in probes.items())


def test_fewer_options_limit_the_letters():
    assert parse_choice("The answer is D, no wait, B", "AB") == "B"
    assert parse_choice("D", "ABC") is None


# --- when: models/pipeline/level2_pipeline.py: _normalize_q1_prediction -------------------


@pytest.mark.parametrize(
    ("reply", "released", "strict"),
    [
        ("A", "A", "A"),
        ("B. NO", "B", "B"),
        ("Yes, she should.", "A", "A"),
        ("The answer is B", "B", "B"),
        # substring tests: "no" inside "know" / "not" reads NO as released; strict: unparsed
        ("I don't know", "B", None),
        ("maybe not", "B", None),
        # "yes" is tested before "no"
        ("Maybe yes, maybe no", "A", None),
        ("Absolutely", None, None),
    ],
)
def test_when_reply_parsing_released_and_strict(reply, released, strict):
    assert parse_yes_no_letter(reply) == released
    assert parse_yes_no_letter(reply, "strict") == strict


# --- how: level2_pipeline.py: _parse_judge_score, score_level2_q2_with_omni.py: _score_from_text


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("75", 75.0),
        ("Score: 60", 50.0),
        ("100/100", 100.0),
        ("-5", 0.0),
        ("130", 100.0),
        ("N/A", 0.0),
        ("", 0.0),
    ],
)
def test_judge_scores_as_released(text, score):
    assert parse_judge_score(text).score == score


def test_judge_failures_are_unparsed_when_strict():
    assert parse_judge_score("N/A", parser="strict").score is None
    assert parse_judge_score("", parser="strict").score is None


def test_released_averages_each_under_its_own_name():
    rows = pd.DataFrame(
        [
            # gold YES, when right, judged 75
            ("m", "j", "1", "YES", True, True, "Sure", 75.0),
            # gold YES, when right, judged 0 (N/A as released)
            ("m", "j", "2", "YES", True, True, "Hm", 0.0),
            # gold YES, when wrong: gated to 0
            ("m", "j", "3", "YES", False, True, "Ok", 50.0),
            # gold NO, when right, with a reference and no candidate: re-scoring counts it 0
            ("m", "j", "4", "NO", True, True, "", float("nan")),
        ],
        columns=["model", "judge", "item_id", "gold", "when_correct", "has_reference", "candidate", "score"],
    )
    row = released_averages(rows).iloc[0]
    assert (row["mean_pipeline"], row["n_pipeline"]) == (75.0, 1)  # scores > 0 only
    assert (row["mean_rescoring"], row["n_rescoring"]) == (25.0, 3)  # 75, 0, 0
    assert (row["mean_language_report"], row["n_language_report"]) == (37.5, 2)  # gold YES, when right
    assert row["response_coverage"] == 1.0 and row["n_yes"] == 3
    assert (row["large_gap_rate"], row["n_large_gap"]) == (0.5, 1)


# --- timestamps: level2_pipeline.py: _parse_timestamp_to_seconds ---------------------------


def test_excel_times_read_as_released():
    assert read_timestamp("00:17:00", "excel") == (
        17.0,
        "excel time '00:17:00' -> 17 s (H:MM:00 read as M:SS)",
    )
    assert read_timestamp("01:02:50", "excel")[0] == pytest.approx(62.5)
    assert read_timestamp("00:17:00", "clock") == (1020.0, "")
    assert read_timestamp("0:17", "excel") == (17.0, "")
    for seconds in (0.0, 5.8, 17.0, 62.5, 119.9):
        assert read_timestamp(format_excel_time(seconds), "excel")[0] == pytest.approx(seconds)
    assert format_excel_time(17) == "00:17:00"


@pytest.mark.parametrize(
    ("question", "interval"),
    [
        ("Who speaks in 00:04-00:08?", (4.0, 8.0)),
        ("Who speaks in [0:04 - 0:08]?", (4.0, 8.0)),
        ("Who is speaking around 0:04?", (4.0, 4.0)),
        ("Who is speaking in this video?", (None, None)),  # whole clip
    ],
)
def test_released_question_phrasings(question, interval):
    assert extract_query_interval(question) == interval


# --- the commands on released-format files ------------------------------------------------


def _level1(tmp_path):
    items = [
        {
            "id": 1,
            "video_path": "v1.mp4",
            "question": "Who is speaking in [0:04 - 0:08]?",
            "options": ["A. Ann said hi", "B. Bo said hi", "C. Ann said bye", "D. Bo said bye"],
            "correct_answer": "D",
            "metadata": {"consistency": "consistent", "domain": "family"},
        },
        {
            "id": 2,
            "video_path": "v2.mp4",
            "question": "Who is speaking around 0:03?",
            "options": ["A. Ann said hi", "B. Bo said hi", "C. Cy said hi"],
            "correct_answer": "A",
            "metadata": {"domain": "work"},  # no consistency: split "unknown"
        },
        {
            "id": 3,
            "video_path": "v3.mp4",
            "question": "Who is speaking?",
            "options": ["A. Ann said hi", "B. Bo said hi"],
            "correct_answer": "B",
            "metadata": {"consistency": "inconsistent"},
        },
    ]
    path = tmp_path / "data" / "level_1" / "dataset.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def _level2(tmp_path):
    def item(vid, stamp, answer, option_a="YES", option_b="NO", reference="Sure, let's go."):
        return {
            "video_id": vid,
            "video_file": f"{vid}.mp4",
            "question_1": {
                "question": "Should Ann speak now?",
                "timestamp": stamp,
                "option_A": option_a,
                "option_B": option_b,
                "correct_answer": answer,
            },
            "question_2": {"question": "What should Ann say?", "answer": reference},
            "metadata": {"domain": "friends"},
        }

    data = {
        "data": [
            item("a", "00:17:00", "A"),
            item("b", "00:05:00", "B"),
            item("c", "00:09:00", "A", "SÍ", "NO"),  # Spanish options: the letter decides
            item("d", "00:12:00", "A"),
        ]
    }
    path = tmp_path / "data" / "level_2" / "annotations.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_import_reads_excel_times_and_reports_each(tmp_path):
    _level1(tmp_path)
    _level2(tmp_path)
    social = import_socialomni(tmp_path)
    assert social["when_items"]["cut_time"].tolist() == [17.0, 5.0, 9.0, 12.0]
    assert social["when_items"]["gold"].tolist() == ["YES", "NO", "YES", "YES"]
    assert len(social["timestamp_readings"]) == 4
    assert social["who_items"]["consistency"].tolist() == ["consistent", "unknown", "inconsistent"]
    assert pd.isna(social["who_items"]["query_time"].iloc[2])


def test_cli_who_on_released_files(tmp_path):
    items = _level1(tmp_path)
    replies = tmp_path / "replies.jsonl"
    lines = [
        {"id": "1", "reply": "Option B is close, but the final answer is D"},
        {"id": "2", "reply": "a person says hi"},  # released: A (right); strict: unparsed
        {"id": "3", "reply": "<think>A?</think> B"},
    ]
    replies.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    out = tmp_path / "who.csv"
    assert cli.main(["socialomni", "who", str(items), str(replies), "-o", str(out)]) == 0
    table = pd.read_csv(out).set_index(["breakdown", "level"])
    assert table.loc[("overall", "all"), "accuracy"] == 1.0
    assert table.loc[("overall", "all"), "n_parser_differs"] == 1
    assert table.loc[("consistency", "unknown"), "n"] == 1
    assert (
        cli.main(["socialomni", "who", str(items), str(replies), "-o", str(out), "--parser", "strict"]) == 0
    )
    strict = pd.read_csv(out).set_index(["breakdown", "level"])
    assert strict.loc[("overall", "all"), ["n_correct", "n_unparsed"]].tolist() == [2, 1]
    assert strict.loc[("overall", "all"), "parser"] == "strict"


def test_cli_when_on_released_files(tmp_path):
    annotations = _level2(tmp_path)
    replies = tmp_path / "replies.csv"
    pd.DataFrame({"id": ["a", "b", "c", "d"], "reply": ["Yes.", "I don't know", "A", "B"]}).to_csv(
        replies, index=False
    )
    out = tmp_path / "when.csv"
    assert cli.main(["socialomni", "when", str(annotations), str(replies), "-o", str(out)]) == 0
    table = pd.read_csv(out).set_index(["breakdown", "level"])
    assert table.loc[("overall", "all"), ["n", "n_correct"]].tolist() == [4, 3]
    assert table.loc[("gold", "NO"), "accuracy"] == 1.0  # "I don't know" is NO as released


def test_cli_when_released_fails_a_right_answer_whose_how_answer_is_empty(tmp_path, capsys):
    """level2_pipeline: a gold-YES item answered right whose Q2 answer comes back empty raises
    ("empty model answer") and is recorded with q1_correct False; strict keeps it right."""
    annotations = _level2(tmp_path)
    replies = tmp_path / "replies.csv"
    pd.DataFrame(
        {
            "item_id": ["a", "b", "c", "d"],
            "reply": ["Yes.", "B", "A", "A"],
            "candidate": ["Sure, let's go!", "", "Claro", ""],  # d: right, but no how answer
        }
    ).to_csv(replies, index=False)
    out = tmp_path / "when.csv"
    argv = ["socialomni", "when", str(annotations), str(replies), "-o", str(out)]
    assert cli.main(argv) == 0
    table = pd.read_csv(out).set_index(["breakdown", "level"])
    # released: a, b, c right, d failed -> q1_accuracy 75.0 (3 / 4)
    assert table.loc[("overall", "all"), ["n", "n_correct"]].tolist() == [4, 3]
    assert table.loc[("gold", "YES"), ["n", "n_correct"]].tolist() == [3, 2]
    assert "1 right answers counted wrong for an empty how answer" in capsys.readouterr().err
    assert cli.main(argv + ["--parser", "strict"]) == 0
    assert pd.read_csv(out).set_index(["breakdown", "level"]).loc[("overall", "all"), "n_correct"] == 4


def test_cli_when_reproduces_the_released_level2_results_file(tmp_path):
    """The released results payload (`level2_pipeline._build_payload`) scored by the command
    gives its own q1_accuracy: rows keyed video_id with q1_response / q2_response, and the
    row of an item whose Q2 answer was empty recorded as failed (`run`'s except branch)."""
    annotations = _level2(tmp_path)

    def row(vid, q1, answer, correct, q2="", score=None):
        return {
            "video_id": vid,
            "timestamp": 17.0,
            "q1_correct": correct,
            "q1_prediction": q1[:1].upper() if correct else "",
            "q1_answer": answer,
            "q1_response": q1,
            "q2_score": score,
            "q2_response": q2,
            "q2_reference": "Sure, let's go.",
            "modality": "av",
        }

    results = [
        row("a", "A", "A", True, "Sure, let's go!", 100),
        row("b", "B. NO", "B", True),
        row("c", "B", "A", False, score=0),  # wrong: Q2 never asked, scored 0
        {**row("d", "", "A", False, score=0), "error": "empty model answer"},
    ]
    payload = {
        "model": "qwen-omni",
        "q1_accuracy": 50.0,
        "q1_correct": 2,
        "q1_total": 4,
        "q2_avg_score": 100.0,
        "q2_count": 1,
        "results": results,
    }
    replies = tmp_path / "level2_qwen-omni.json"
    replies.write_text(json.dumps(payload), encoding="utf-8")
    out = tmp_path / "when.csv"
    assert cli.main(["socialomni", "when", str(annotations), str(replies), "-o", str(out)]) == 0
    overall = pd.read_csv(out).set_index(["breakdown", "level"]).loc[("overall", "all")]
    assert overall["n"] == payload["q1_total"] and overall["n_correct"] == payload["q1_correct"]
    assert overall["accuracy"] * 100 == pytest.approx(payload["q1_accuracy"])


def test_cli_how_rescores_raw_judge_texts(tmp_path, capsys):
    annotations = _level2(tmp_path)
    replies = tmp_path / "replies.csv"
    pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "reply": ["Yes", "No", "A", "Yes"],
            "candidate": ["Sure, let's go!", "", "Claro", ""],
        }
    ).to_csv(replies, index=False)
    judged = tmp_path / "judged.jsonl"
    judged.write_text(
        "\n".join(json.dumps({"id": i, "judge_reply": t}) for i, t in [("a", "Score: 100"), ("c", "N/A")]),
        encoding="utf-8",
    )
    out = tmp_path / "how.csv"
    args = [
        "socialomni",
        "how",
        str(annotations),
        str(replies),
        "--judge-replies",
        str(judged),
        "-o",
        str(out),
    ]
    assert cli.main(args) == 0
    row = pd.read_csv(out).iloc[0]
    # d: empty how answer -> its right when answer counts wrong as released, and scores 0
    assert (row["mean_pipeline"], row["n_pipeline"]) == (100.0, 1)
    assert (row["mean_language_report"], row["n_language_report"]) == (50.0, 2)
    assert row["response_coverage"] == pytest.approx(2 / 3)
    # c: the judge's "N/A" (released 0, strict no score); d: the when rule (released only)
    assert row["n_parser_differs"] == 2
    assert "2 read differently by the released and strict parsers" in capsys.readouterr().err


def test_cli_how_judge_column_by_flag_item_id_and_unknown_items(tmp_path, capsys):
    annotations = _level2(tmp_path)
    replies = tmp_path / "replies.jsonl"
    lines = [
        {"item_id": "a", "reply": "Yes", "candidate": "Sure, let's go!"},
        {"item_id": "c", "reply": "A", "candidate": "Claro"},
        {"item_id": "zz", "reply": "Yes", "candidate": "Hi"},  # not in the annotations
    ]
    replies.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    judged = tmp_path / "judged.csv"
    # the judge's text sits in `text`; `reply` holds something else and must not be read
    pd.DataFrame(
        {
            "item_id": ["a", "c", "yy"],
            "reply": ["100", "100", "100"],
            "text": ["Score: 75", "50 - close enough", "100"],
        }
    ).to_csv(judged, index=False)
    out = tmp_path / "how.csv"
    argv = [
        "socialomni",
        "how",
        str(annotations),
        str(replies),
        "--judge-replies",
        str(judged),
        "-o",
        str(out),
    ]
    assert cli.main(argv) == 2  # no judge_reply column: named, not guessed
    err = capsys.readouterr().err
    assert (
        "judged.csv: judge replies lack column judge_reply (has item_id, reply, text); --judge-column" in err
    )
    assert cli.main(argv + ["--judge-column", "text"]) == 0
    err = capsys.readouterr().err
    assert "replies.jsonl: 1 replies for items not in the items file left out (e.g. item zz)" in err
    assert "judged.csv: 1 judge replies for items not in the items file left out (e.g. item yy)" in err
    row = pd.read_csv(out).iloc[0]
    assert (row["mean_language_report"], row["n_language_report"]) == (62.5, 2)  # (75 + 50) / 2
    assert row["n_items"] == 2 and row["n_parser_differs"] == 0


def test_cli_who_counts_and_names_replies_for_unknown_items(tmp_path, capsys):
    items = _level1(tmp_path)
    replies = tmp_path / "replies.json"
    rows = [{"item_id": "1", "reply": "D"}, {"item_id": "2", "reply": "A"}, {"item_id": "9", "reply": "B"}]
    replies.write_text(json.dumps(rows), encoding="utf-8")
    out = tmp_path / "who.csv"
    assert cli.main(["socialomni", "who", str(items), str(replies), "-o", str(out)]) == 0
    assert "1 replies for items not in the items file left out (e.g. item 9)" in capsys.readouterr().err
    overall = pd.read_csv(out).set_index(["breakdown", "level"]).loc[("overall", "all")]
    assert overall[["n", "n_correct"]].tolist() == [2, 2]


def test_cli_names_file_item_and_field(tmp_path, capsys):
    items = _level1(tmp_path)
    replies = tmp_path / "replies.csv"
    pd.DataFrame({"id": ["9"], "reply": ["A"]}).to_csv(replies, index=False)
    assert cli.main(["socialomni", "who", str(items), str(replies), "-o", str(tmp_path / "x.csv")]) == 2
    message = capsys.readouterr().err.strip()
    assert "replies.csv" in message and "item 9" in message and "field id" in message
    assert len(message.splitlines()) == 1


def test_who_protocol_whole_clip_by_default():
    from omnisocial.socialomni.requests import media_cuts

    who = pd.DataFrame({"item_id": ["1", "2"], "video_path": ["v.mp4", "w.mp4"], "query_time": [8.0, None]})
    when = pd.DataFrame({"item_id": ["a"], "video_path": ["v.mp4"], "cut_time": [17.0]})
    assert media_cuts(who, when) == {
        ("who", "1"): ("v.mp4", None),
        ("who", "2"): ("w.mp4", None),
        ("when", "a"): ("v.mp4", 17.0),
    }
    causal = media_cuts(who, when, "causal")
    assert causal[("who", "1")] == ("v.mp4", 8.0) and causal[("who", "2")] == ("w.mp4", None)
