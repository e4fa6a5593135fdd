"""`--parser released` against numbers the released scorers produced (issue 39), per kind of input.

The inputs (tests/data/released_scorers/cases.json) are replies, judge outputs and item files
shaped unlike the usual fixtures; expected.json holds what MAC-AutoML/SocialOmni@0fab46a and
OpenBMB/Omni-DuplexEval@962cec4 computed on them (generate.py, README.md there). Each test
writes the case files the way a user would hand them to `omnisocial`, runs the public command
and compares with the released numbers; strict mode is checked to leave out (and count) what
it does not score.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_release import ROOT, snakemake

from omnisocial import cli
from omnisocial.socialomni.contracts import (
    WHEN_ITEMS,
    WHO_COPIES,
    WHO_ITEMS,
    WRITTEN_ANSWERS,
    reply_row,
)
from omnisocial.socialomni.importers import import_socialomni
from omnisocial.socialomni.when import score_when_replies
from omnisocial.socialomni.who import score_who_replies

DATA = Path(__file__).parent / "data" / "released_scorers"
CASES = json.loads((DATA / "cases.json").read_text(encoding="utf-8"))
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))


def _jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    return path


def _json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _reasons(out: Path) -> pd.DataFrame:
    return pd.read_csv(out.with_name(f"{out.stem}.item_reasons.csv")).set_index("reason")


# --- who ----------------------------------------------------------------------------------


@pytest.fixture
def who_files(tmp_path):
    case = CASES["who"]
    items = _json(tmp_path / "dataset.json", case["dataset"])
    replies = _jsonl(tmp_path / "replies.jsonl", [{"id": k, "reply": v} for k, v in case["replies"].items()])
    return tmp_path, items, replies


def test_model_and_modality_fill_the_metrics_columns(who_files):
    """`--model` / `--modality` name who made the replies (issue 49): the output's model and
    modality columns are filled, for who and for when."""
    tmp_path, items, replies = who_files
    out = tmp_path / "who.csv"
    argv = ["socialomni", "who", str(items), str(replies), "-o", str(out), "--model", "gpt-4o"]
    assert cli.main([*argv, "--modality", "video"]) == 0
    table = pd.read_csv(out, keep_default_na=False)
    assert set(table["model"]) == {"gpt-4o"} and set(table["modality"]) == {"video"}
    case = CASES["when_how"]
    annotations = _json(tmp_path / "annotations.json", case["annotations"])
    when_replies = _jsonl(tmp_path / "when.jsonl", [{"id": k, **v} for k, v in case["replies"].items()])
    out = tmp_path / "when.csv"
    argv = ["socialomni", "when", str(annotations), str(when_replies), "-o", str(out), "--model", "m"]
    assert cli.main(argv) == 0
    assert set(pd.read_csv(out, keep_default_na=False)["model"]) == {"m"}


def test_who_released_matches_the_released_analysis(who_files, capsys):
    tmp_path, items, replies = who_files
    out = tmp_path / "who.csv"
    assert cli.main(["socialomni", "who", str(items), str(replies), "-o", str(out)]) == 0
    table = pd.read_csv(out, keep_default_na=False).set_index(["breakdown", "level"])
    analysis, pipeline = EXPECTED["who"]["analysis"], EXPECTED["who"]["pipeline"]
    # gold "B." / "(A)" never match; "C or D? I'd say D" reads D on a 3-option item; both
    # copies of the duplicated id 7 are scored (reply D: the first copy, gold D, right; the
    # last, gold A, wrong) and counted, as the released pipeline counts them: 3 of 8
    overall = table.loc[("overall", "all")]
    assert (overall["n"], overall["n_correct"]) == (pipeline["total"], pipeline["correct"]) == (8, 3)
    assert 100 * overall["accuracy"] == pytest.approx(pipeline["accuracy"])
    # the consistency split is the released analysis's, keyed by id (the last copy of 7);
    # "Consistent" and "INCONSISTENT" are groups of their own there
    for group in ("consistent", "inconsistent", "Consistent", "INCONSISTENT"):
        row = table.loc[("consistency", group)]
        assert (row["n"], row["n_correct"]) == (analysis[group]["total"], analysis[group]["correct"]), group
        assert 100 * row["accuracy"] == pytest.approx(analysis[group]["accuracy"])
    # the per-option breakdown counts both copies too (gold D: the first copy, right)
    assert tuple(table.loc[("correct_option", "D"), ["n", "n_correct"]]) == (1, 1)
    # the analysis script's own accuracy keys by id: 2 of 7 (issue 62)
    by_id = table.loc[("analysis", "all")]
    assert (
        (by_id["n"], by_id["n_correct"]) == (analysis["all"]["total"], analysis["all"]["correct"]) == (7, 2)
    )
    assert 100 * by_id["accuracy"] == pytest.approx(analysis["all"]["accuracy"])
    err = capsys.readouterr().err
    reasons = _reasons(out)
    duplicate = next(r for r in reasons.index if r.startswith("duplicate id"))
    assert reasons.loc[duplicate, "n_items"] == 1 and "every copy counted" in duplicate
    assert f"socialomni who: scored as released: {duplicate}: 1 item (e.g. item 7)" in err
    written = next(r for r in reasons.index if r.startswith("correct answer not a bare letter"))
    assert reasons.loc[written, "n_items"] == 2


def assert_duplicated_who_id_figures(table: pd.DataFrame) -> None:
    """The released figures of the duplicated-id who case in a who breakdown (by breakdown,
    level): `overall` the released evaluation's 3 of 5 (60.0, every copy counted), `analysis`
    the released analysis script's 2 of 4 (50.0, the last copy of id 4), and its consistency
    split on that last copy."""
    pipeline, analysis = EXPECTED["who_duplicate"]["pipeline"], EXPECTED["who_duplicate"]["analysis"]
    overall = table.loc[("overall", "all")]
    assert (overall["n"], overall["n_correct"]) == (pipeline["total"], pipeline["correct"]) == (5, 3)
    assert 100 * overall["accuracy"] == pytest.approx(pipeline["accuracy"]) == 60.0
    by_id = table.loc[("analysis", "all")]
    assert (
        (by_id["n"], by_id["n_correct"]) == (analysis["all"]["total"], analysis["all"]["correct"]) == (4, 2)
    )
    assert 100 * by_id["accuracy"] == pytest.approx(analysis["all"]["accuracy"]) == 50.0
    for group in ("consistent", "inconsistent"):
        row = table.loc[("consistency", group)]
        assert (row["n"], row["n_correct"]) == (analysis[group]["total"], analysis[group]["correct"]), group


@pytest.mark.parametrize("parser", ["released", "strict"])
def test_who_duplicated_id_gives_each_released_script_its_own_figure(tmp_path, parser, capsys):
    """Issue 62: a plain dataset.json whose id 4 is written twice (the first copy's answer D,
    the last one's A; the reply D). The released evaluation (level1_pipeline) scores and
    counts both copies: 3 of 5, 60.0. The released analysis script (analyze_level1_ablation)
    reads the results keyed by id, so it holds the last copy only: 2 of 4, 50.0. Released mode
    reports both, each under its own name; strict keeps the first copy and counts the other."""
    case = CASES["who_duplicate"]
    items = _json(tmp_path / "data" / "level_1" / "dataset.json", case["dataset"])
    replies = _jsonl(tmp_path / "replies.jsonl", [{"id": k, "reply": v} for k, v in case["replies"].items()])
    out = tmp_path / "who.csv"
    argv = ["socialomni", "who", str(items), str(replies), "-o", str(out), "--parser", parser]
    assert cli.main(argv) == 0
    table = pd.read_csv(out, keep_default_na=False).set_index(["breakdown", "level"])
    overall = table.loc[("overall", "all")]
    if parser == "strict":
        assert (overall["n"], overall["n_correct"]) == (4, 3)  # the first copy of 4 (answer D): right
        assert "analysis" not in table.index.get_level_values("breakdown")
        assert "socialomni who: excluded: field id: 1 item (e.g. item 4)" in capsys.readouterr().err
        return
    assert_duplicated_who_id_figures(table)
    assert "every copy counted" in capsys.readouterr().err


def test_who_strict_reads_the_meaning_and_counts_the_duplicate_it_leaves_out(who_files, capsys):
    tmp_path, items, replies = who_files
    out = tmp_path / "who.csv"
    assert (
        cli.main(["socialomni", "who", str(items), str(replies), "-o", str(out), "--parser", "strict"]) == 0
    )
    table = pd.read_csv(out, keep_default_na=False).set_index(["breakdown", "level"])
    # items 1-7, the first copy of 7; "B." and "(A)" read as letters; C on the 3-option item
    assert (table.loc[("overall", "all"), "n"], table.loc[("overall", "all"), "n_correct"]) == (7, 6)
    assert set(table.loc["consistency"].index) == {"consistent", "inconsistent"}
    assert "socialomni who: excluded: field id: 1 item (e.g. item 7)" in capsys.readouterr().err


# --- when / how ---------------------------------------------------------------------------


@pytest.fixture
def level2_files(tmp_path):
    case = CASES["when_how"]
    annotations = _json(tmp_path / "annotations.json", case["annotations"])
    replies = _jsonl(tmp_path / "replies.jsonl", [{"id": k, **v} for k, v in case["replies"].items()])
    judged = _jsonl(
        tmp_path / "judged.jsonl", [{"id": k, "judge_reply": v} for k, v in case["judge"].items()]
    )
    return tmp_path, annotations, replies, judged


def test_when_released_matches_the_released_pipeline(level2_files, capsys):
    tmp_path, annotations, replies, _ = level2_files
    out = tmp_path / "when.csv"
    assert cli.main(["socialomni", "when", str(annotations), str(replies), "-o", str(out)]) == 0
    overall = pd.read_csv(out).set_index("breakdown").loc["overall"]
    pipeline = EXPECTED["when_how"]["pipeline"]
    # gold "YES" / "NO" never match; empty and unreadable timestamps are 0 s and scored; the
    # second copy of w1 is skipped, as the released run loop does
    assert (overall["n"], overall["n_correct"]) == (pipeline["q1_total"], pipeline["q1_correct"])
    assert 100 * overall["accuracy"] == pytest.approx(pipeline["q1_accuracy"])
    assert [EXPECTED["when_how"]["rows"][i]["timestamp"] for i in ("w7", "w8")] == [0.0, 0.0]
    err = capsys.readouterr().err
    assert (
        "socialomni when: scored as released: question_1.timestamp empty or unreadable (0 s, as released): "
        "2 items" in err
    )
    assert (
        "socialomni when: scored as released: duplicate video_id (first copy kept, as released): 1 item"
        in err
    )
    assert "counted wrong for an empty how answer" not in err


def test_when_strict_leaves_out_unreadable_times_and_duplicates_counted(level2_files, capsys):
    tmp_path, annotations, replies, _ = level2_files
    out = tmp_path / "when.csv"
    argv = ["socialomni", "when", str(annotations), str(replies), "-o", str(out), "--parser", "strict"]
    assert cli.main(argv) == 0
    overall = pd.read_csv(out).set_index("breakdown").loc["overall"]
    assert (overall["n"], overall["n_correct"]) == (6, 6)  # w1-w6, "YES" / "NO" read by meaning
    reasons = _reasons(out)
    assert reasons.loc["field question_1.timestamp", "n_items"] == 2
    assert reasons.loc["field video_id", "n_items"] == 1
    assert reasons.loc["replies for an excluded item", "n_items"] == 2
    assert (
        "socialomni when: excluded: field question_1.timestamp: 2 items (e.g. item w7)"
        in capsys.readouterr().err
    )


def test_how_released_matches_pipeline_rescoring_and_language_report(level2_files, capsys):
    tmp_path, annotations, replies, judged = level2_files
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
    assert cli.main(argv) == 0
    row = pd.read_csv(out).set_index("breakdown").loc["overall"]
    expected = EXPECTED["when_how"]
    # pipeline: gated on the letter A (w4's option A is "NO"), scores > 0 averaged
    assert (row["mean_pipeline"], row["n_pipeline"]) == (
        expected["pipeline"]["q2_avg_score"],
        expected["pipeline"]["q2_count"],
    )
    # re-scoring: the gold-NO w6 was never asked its how question -> 0; w5 (no reference) unscored
    assert (row["mean_rescoring"], row["n_rescoring"]) == (
        expected["rescoring"]["q2_avg_score"],
        expected["rescoring"]["q2_count"],
    )
    # language report: items the pipeline asks (letter A), when right, scored: w5 left out
    report = expected["language_report"]
    assert (row["mean_language_report"], row["n_language_report"]) == (report["q2_avg"], report["q2_scored"])
    assert row["n_yes"] == report["need_q2"]
    err = capsys.readouterr().err
    assert "never asks it of (0 when re-scored): 4 items" in err


def test_how_strict_differs_where_the_release_gates_on_letters(level2_files):
    tmp_path, annotations, replies, judged = level2_files
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
    assert cli.main(argv + ["--parser", "strict"]) == 0
    row = pd.read_csv(out).set_index("breakdown").loc["overall"]
    # w1, w2 (gold YES read by meaning), w5 (kept without a reference); w4 is a NO item by meaning
    assert row["n_language_report"] == 3 and row["mean_language_report"] == pytest.approx(
        (75 + 100 + 100) / 3
    )
    assert row["n_rescoring"] == 5  # w1, w2, w3, w4, w6: when right by meaning, candidates judged as given


# --- duplexeval ---------------------------------------------------------------------------


def _stream_files(tmp_path: Path, task: str):
    case = CASES[task]
    items = _json(tmp_path / "items.json", case["items"])
    shutil.copy(DATA / "clip12.mp4", tmp_path / "clip12.mp4")
    for key, data in case["responses"].items():
        _json(tmp_path / "model" / f"{key}.json", data)
    judged = _jsonl(
        tmp_path / "judged.jsonl", [{k: v for k, v in j.items() if k != "text"} for j in case["judge"]]
    )
    return items, tmp_path / "model", judged


def _run_stream(tmp_path, task, parser):
    items, responses, judged = _stream_files(tmp_path, task)
    out, per_item = tmp_path / "metrics.csv", tmp_path / "per_item.csv"
    argv = ["duplexeval", task, str(items), str(responses), "--judge-replies", str(judged), "-o", str(out)]
    assert cli.main(argv + ["--per-item", str(per_item), "--parser", parser]) == 0
    return out, pd.read_csv(per_item).set_index("item_id")


def test_rtd_released_matches_the_released_scorer(tmp_path, capsys):
    out, per_item = _run_stream(tmp_path, "rtd", "released")
    for item_id, expected in EXPECTED["rtd"].items():
        row = per_item.loc[item_id]
        assert row["temporal_score"] == pytest.approx(expected["avg_temporal_score"]), item_id
        assert row["n_judged"] == expected["evaluated_sentences"], item_id
        assert row["n_relevant"] == expected["relevant_sentences_count"], item_id
        assert row["irrelevant_duration_ratio"] == pytest.approx(expected["irrelevant_duration_ratio"]), (
            item_id
        )
        assert row["content_score"] == pytest.approx(expected["content_score"]), item_id
        first = expected["first_relevant_time"]
        assert (
            math.isnan(row["first_relevant_time"]) if first is None else row["first_relevant_time"] == first
        )
    # r1: video_duration 20 s, clip 12 s: the sentence at 15-16 s has no window; its nested JSON
    # reply is read from the inner object (no score, irrelevant). r2: a number text, a null and
    # a string entry skipped, a negative start kept, is_relevant 2 neither relevant nor irrelevant.
    assert per_item.loc["r1", "n_no_window"] == 1
    err = capsys.readouterr().err
    for line in (
        "duplexeval rtd: scored as released: video_duration differs from the clip: the clip's length used, "
        "as released: 1 item (e.g. item r1)",
        "duplexeval rtd: scored as released: no video_duration: the clip's length used, as released: 1 item",
        "duplexeval rtd: scored as released: non-text sentence skipped, as released: 1 item (e.g. item r2)",
        "duplexeval rtd: scored as released: non-object entry skipped, as released: 1 item (e.g. item r2)",
        "duplexeval rtd: scored as released: negative time kept, as released: 1 item (e.g. item r2)",
    ):
        assert line in err
    assert _reasons(out).loc["the scorer's own list of sentences / chunks read, as released", "n_items"] == 1


def test_rtd_strict_leaves_out_the_files_it_refuses_and_counts_them(tmp_path, capsys):
    out, per_item = _run_stream(tmp_path, "rtd", "strict")
    assert list(per_item.index) == ["r1"]
    assert per_item.loc["r1", "temporal_score"] == 3.0  # the outer object's score
    reasons = _reasons(out)
    assert reasons.loc["response file field sentences/chunks", "n_items"] == 1
    assert reasons.loc["response file field sentences[0].sentence", "n_items"] == 1
    assert "duplexeval rtd: excluded: response file field sentences/chunks: 1 item (e.g. item r3)" in (
        capsys.readouterr().err
    )


def test_pr_released_matches_the_released_scorer(tmp_path, capsys):
    out, per_item = _run_stream(tmp_path, "pr", "released")
    for item_id, expected in EXPECTED["pr"].items():
        row = per_item.loc[item_id]
        # reminders "1e1" (10 s) and -2 read by float(); a success_score of 2 summed; a reminder
        # after the clip's end kept (no text: 0); the correction judged on its whole response
        assert row["sample_score"] == expected["total_score"], item_id
        assert row["n_judgements"] == expected["num_events"], item_id
        assert row["n_passed"] == expected["successful_events"], item_id
    assert per_item.loc["p2", "n_events"] == 2  # the first copy of the duplicated p2
    # p5: a PR_correction item without reminders, judged {"success_score": 2}: released's
    # total_score is that score as it is (its task from the split name)
    assert per_item.loc["p5", "sample_score"] == EXPECTED["pr"]["p5"]["total_score"] == 2
    assert per_item.loc["p5", "n_events"] == 0 and per_item.loc["p4", "n_events"] == 1
    err = capsys.readouterr().err
    assert (
        "duplexeval pr: scored as released: whole-response judgement's success_score taken as the "
        "sample score, as released: 1 item (e.g. item p5)" in err
    )
    assert (
        "duplexeval pr: scored as released: duplicate id, first copy kept, as released: 1 item (e.g. item p2)"
        in err
    )
    assert (
        "duplexeval pr: scored as released: reminder read by float(), as released: 1 item (e.g. item p1)"
        in err
    )


def test_pr_strict_leaves_out_unreadable_reminders_counted(tmp_path, capsys):
    out, per_item = _run_stream(tmp_path, "pr", "strict")
    assert "p1" not in per_item.index and "p3" not in per_item.index
    # a success_score of 2 is off the 0/1 scale: no score, the sample left empty (never 2)
    assert math.isnan(per_item.loc["p5", "sample_score"]) and per_item.loc["p5", "n_scored"] == 0
    reasons = _reasons(out)
    assert reasons.loc["field reminder1", "n_items"] == 2  # "1e1"; 30 s after the 12 s video
    assert "duplexeval pr: excluded: field reminder1: 2 items (e.g. item p1)" in capsys.readouterr().err


# --- an empty judge file ------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json"])
@pytest.mark.parametrize("command", ["how", "rtd", "pr"])
def test_an_empty_judge_file_fails_with_one_line(tmp_path, capsys, command, suffix):
    empty = tmp_path / f"empty_judged{suffix}"
    empty.write_bytes(b"")
    out = tmp_path / "metrics.csv"
    if command == "how":
        annotations, replies = _level2(tmp_path)
        argv = ["socialomni", "how", str(annotations), str(replies)]
    else:
        items, responses, _ = _stream_files(tmp_path, command)
        argv = ["duplexeval", command, str(items), str(responses)]
    assert cli.main(argv + ["--judge-replies", str(empty), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"{empty}: empty file, no judge replies") or err[-1].endswith(
        f"{empty}: item ?: field (file): empty file, no judge replies"
    )
    assert not any("Traceback" in line for line in err) and not out.exists()


@pytest.mark.parametrize("command", ["who", "when"])
def test_an_empty_replies_file_fails_with_one_line(tmp_path, capsys, command):
    empty = tmp_path / "replies.csv"
    empty.write_bytes(b"")
    if command == "who":
        items = _json(tmp_path / "dataset.json", CASES["who"]["dataset"])
    else:
        items = _level2(tmp_path)[0]
    assert cli.main(["socialomni", command, str(items), str(empty), "-o", str(tmp_path / "m.csv")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{empty}: empty file, no replies")


def _level2(tmp_path):
    case = CASES["when_how"]
    annotations = _json(tmp_path / "annotations.json", case["annotations"])
    replies = _jsonl(tmp_path / "replies.jsonl", [{"id": k, **v} for k, v in case["replies"].items()])
    return annotations, replies


# --- the workflow's path: rule social_import's tables, read back by the score rules (issue 62) ---


def _workflow_tables(root: Path, parser: str, folder: Path) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The tables rule social_import writes for the score rules, read back as those rules read
    them (workflow/scripts/social/import.py, socialomni/score_who.py, score_when.py); and the
    import's errors (bad items skipped: social.skip_bad_items)."""
    social = import_socialomni(root, skip_bad=True, released=parser == "released")
    contracts = {
        "who_items": WHO_ITEMS,
        "who_copies": WHO_COPIES,
        "written_answers": WRITTEN_ANSWERS,
        "when_items": WHEN_ITEMS,
    }
    for name, contract in contracts.items():
        contract.write(folder / f"{name}.csv", social[name])
    return {name: contract.read(folder / f"{name}.csv") for name, contract in contracts.items()}, social[
        "errors"
    ]


def _workflow_who(tmp_path: Path, case: dict, parser: str):
    """A case's who breakdown as the workflow computes it, by (breakdown, level); the errors."""
    _json(tmp_path / "data" / "level_1" / "dataset.json", case["dataset"])
    tables, errors = _workflow_tables(tmp_path, parser, tmp_path)
    replies = pd.DataFrame([reply_row("m", "audio_video", "who", k, v) for k, v in case["replies"].items()])
    scores = score_who_replies(
        tables["who_items"], replies, parser, tables["written_answers"], tables["who_copies"]
    )
    return scores.breakdown.set_index(["breakdown", "level"]), errors


@pytest.mark.parametrize("parser", ["released", "strict"])
def test_the_workflow_scores_a_duplicated_who_id_as_the_released_scripts(tmp_path, parser):
    """Issue 62 through the workflow's tables: the import writes the earlier copy of id 4
    (who_copies.csv) and the score rule counts it, so `overall` is the released evaluation's
    60.0 and `analysis` the released analysis script's 50.0; strict keeps the first copy and
    lists the other as an import error."""
    table, errors = _workflow_who(tmp_path, CASES["who_duplicate"], parser)
    overall = table.loc[("overall", "all")]
    if parser == "strict":
        assert (overall["n"], overall["n_correct"]) == (4, 3)
        assert "analysis" not in table.index.get_level_values("breakdown")
        assert errors[["item_id", "field"]].values.tolist() == [["4", "id"]]
        return
    assert errors.empty
    assert_duplicated_who_id_figures(table)


def test_the_workflow_scores_who_answers_as_written_as_released(tmp_path):
    """The workflow's who figures on the released-scorer case: gold "B." and "(A)" never match
    (written_answers.csv), the duplicated id 7 counted twice: the released code's 3 of 8 and,
    keyed by id, 2 of 7, and its consistency groups."""
    table, _ = _workflow_who(tmp_path, CASES["who"], "released")
    pipeline, analysis = EXPECTED["who"]["pipeline"], EXPECTED["who"]["analysis"]
    overall = table.loc[("overall", "all")]
    assert (overall["n"], overall["n_correct"]) == (pipeline["total"], pipeline["correct"])
    assert 100 * overall["accuracy"] == pytest.approx(pipeline["accuracy"])
    for group in ("all", "consistent", "inconsistent", "Consistent", "INCONSISTENT"):
        row = table.loc[("analysis", "all") if group == "all" else ("consistency", group)]
        assert (row["n"], row["n_correct"]) == (analysis[group]["total"], analysis[group]["correct"]), group


def test_the_workflow_scores_when_answers_as_written_as_released(tmp_path):
    """The workflow's single-cut when figure on the released-scorer case: gold "YES" / "NO"
    written instead of a letter never match (written_answers.csv), as in the released pipeline."""
    case = CASES["when_how"]
    _json(tmp_path / "data" / "level_2" / "annotations.json", case["annotations"])
    tables, _ = _workflow_tables(tmp_path, "released", tmp_path)
    rows = [reply_row("m", "audio_video", "when", k, v["reply"]) for k, v in case["replies"].items()]
    rows += [reply_row("m", "audio_video", "how", k, v["candidate"]) for k, v in case["replies"].items()]
    _, breakdown = score_when_replies(
        tables["when_items"], pd.DataFrame(rows), "released", tables["written_answers"]
    )
    overall = breakdown.set_index("breakdown").loc["overall"]
    pipeline = EXPECTED["when_how"]["pipeline"]
    assert (overall["n"], overall["n_correct"]) == (pipeline["q1_total"], pipeline["q1_correct"])
    assert 100 * overall["accuracy"] == pytest.approx(pipeline["q1_accuracy"])
    assert set(tables["written_answers"]["task"]) == {"when"}


@pytest.mark.slow
@pytest.mark.heavy  # 3 CPU-s
def test_a_workflow_run_scores_a_duplicated_who_id_as_the_command(tmp_path):
    """The rules wired: a released-shaped SocialOmni root whose id 4 is written twice, through
    social_import, the who baselines and socialomni_score_who. The import writes the earlier
    copy; the score rule counts it in `overall` (5 rows) and not in `analysis` (4 ids), with the
    same figures as `omnisocial socialomni who` on the same replies (tested above against the
    released code)."""
    dataset = _json(
        tmp_path / "socialomni" / "data" / "level_1" / "dataset.json", CASES["who_duplicate"]["dataset"]
    )
    _json(tmp_path / "duplexeval" / "items.json", [])  # no streaming items
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["social"].update(
        source="released",
        socialomni_root=str(tmp_path / "socialomni"),
        duplexeval_root=str(tmp_path / "duplexeval"),
    )
    config["allow_simulated"] = True  # the demo's other parts stay simulated; only social runs here
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(tmp_path, "--cores", "2", "results/social/metrics/who_breakdown.csv")
    copies = WHO_COPIES.read(tmp_path / "results" / "social" / "items" / "who_copies.csv")
    assert copies[["item_id", "correct_answer", "written"]].values.tolist() == [["4", "D", "D"]]
    written = WRITTEN_ANSWERS.read(tmp_path / "results" / "social" / "items" / "written_answers.csv")
    assert written[written["item_id"] == "4"]["written"].tolist() == ["A"]  # the last copy, the item's
    breakdown = pd.read_csv(
        tmp_path / "results" / "social" / "metrics" / "who_breakdown.csv", keep_default_na=False
    )
    replies = pd.read_csv(
        tmp_path / "results" / "social" / "replies" / "who_baselines.csv", keep_default_na=False
    )
    runs = replies.groupby(["model", "modality"])
    assert len(runs) >= 1
    for (model, modality), own in runs:
        workflow = breakdown[(breakdown["model"] == model) & (breakdown["modality"] == modality)]
        workflow = workflow.set_index(["breakdown", "level"])
        assert workflow.loc[("overall", "all"), "n"] == 5 and workflow.loc[("analysis", "all"), "n"] == 4
        lines = _jsonl(
            tmp_path / f"{model}.jsonl", [{"id": r.item_id, "reply": r.reply} for r in own.itertuples()]
        )
        out = tmp_path / f"{model}.csv"
        argv = ["socialomni", "who", str(dataset), str(lines), "-o", str(out), "--model", model]
        assert cli.main([*argv, "--modality", modality]) == 0
        command = pd.read_csv(out, keep_default_na=False).set_index(["breakdown", "level"])
        for key in (("overall", "all"), ("analysis", "all")):
            assert tuple(workflow.loc[key, ["n", "n_correct"]]) == tuple(
                command.loc[key, ["n", "n_correct"]]
            ), key
            assert workflow.loc[key, "accuracy"] == pytest.approx(command.loc[key, "accuracy"]), key
    log = (tmp_path / "results" / "social" / "logs" / "social_score_who.log").read_text()
    assert "the released analysis's accuracy" in log
