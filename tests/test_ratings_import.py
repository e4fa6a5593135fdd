"""No silent loss in the ratings import (issue 19).

Unit tests: a FriendBench-shaped export (responses coded 1 / 0 with nulls for skipped
trials, all modalities in one file, ids like fb_0007) imports every answered trial in every
format; a lossy import fails with the reason counts and the first example; the lost share,
practice trials, the keep rule (first / last / error) and conflicts; record numbers per
format; reports list only reasons that apply; the exports read and the raters imported
against the plan; a failed script's error on the console. Workflow test (slow): a real
snakemake run imports such an export, and the same run with a wrong mapping fails with the
reasons on the console.
"""

from __future__ import annotations

import io
import json
import logging
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from omnisocial import summary
from omnisocial.config import ConfigError, validate_config
from omnisocial.familiarity.ratings import (
    LOST_REASONS,
    REASONS,
    ImportLossError,
    applicable_reasons,
    check_losses,
    export_plan,
    import_panel,
    import_ratings,
    loss_summary,
    panel,
    raters_vs_plan,
)
from omnisocial.tables import DESIGN
from omnisocial.workflow import console_excepthook

MODALITIES = ("text", "audio", "video")
DYADS = [f"fb_{i:04d}" for i in range(1, 9)]
RELATIONSHIP = {d: ("friends" if i % 2 else "strangers") for i, d in enumerate(DYADS)}
TRUTH = {d: ("familiar" if r == "friends" else "stranger") for d, r in RELATIONSHIP.items()}
CODED = {"familiar": [1], "stranger": [0]}  # as YAML gives `familiar: [1]`


def release_ratings() -> list[dict]:
    """Every rater rates every dyad in every modality; every fifth trial skipped (null)."""
    rows = []
    for m, modality in enumerate(MODALITIES):
        for rater in (101, 102, 103):
            for d, dyad in enumerate(DYADS):
                skipped = (rater + d + m) % 5 == 0
                right = (rater + 2 * d + m) % 3 != 0
                said = TRUTH[dyad] if right else ("stranger" if TRUTH[dyad] == "familiar" else "familiar")
                rows.append(
                    {
                        "rater_id": rater,
                        "dyad_id": dyad,
                        "modality": modality,
                        "label": RELATIONSHIP[dyad],
                        "response": None if skipped else int(said == "familiar"),
                    }
                )
    return rows


def write_records(rows: list[dict], path):
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif path.suffix == ".json":
        path.write_text(json.dumps(rows))
    elif path.suffix == ".parquet":  # int64 columns with nulls, as pyarrow writes them
        columns = {k: [r[k] for r in rows] for k in rows[0]}
        types = {"rater_id": pa.int64(), "response": pa.int64()}
        pq.write_table(pa.table({k: pa.array(v, types.get(k)) for k, v in columns.items()}), path)
    else:
        frame = pd.DataFrame(rows)
        frame["response"] = frame["response"].astype("Int64")
        frame.to_csv(path, index=False, sep="\t" if path.suffix == ".tsv" else ",")
    return path


def mapping_for(modality: str, **extra) -> dict:
    return {
        "rater_id": "rater_id",
        "dyad_id": "dyad_id",
        "response": "response",
        "require": {"modality": [modality]},
        "response_values": CODED,
        **extra,
    }


def report_counts(report: pd.DataFrame, modality: str | None = None) -> dict:
    part = report if modality is None else report[report["modality"] == modality]
    return dict(zip(part["reason"], part["n"], strict=True))


def design_frame() -> pd.DataFrame:
    return DESIGN.validate(
        pd.DataFrame(
            {
                "dyad_id": DYADS,
                "interaction_id": DYADS,
                "relationship": [TRUTH[d] for d in DYADS],
                "site": "V00",
                "gender_mix": "female-male",
                "participant_a": "a",
                "participant_b": "b",
                "clip_start": 0.0,
                "clip_end": 20.0,
                "stratum": "s",
                "cell": "c",
            }
        ).reindex(columns=DESIGN.names)
    )


# --- a release-shaped export imports every answered trial --------------------------------


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json", "jsonl", "parquet"])
def test_release_shaped_export_with_codes_and_nulls_imports_every_answered_row(tmp_path, fmt):
    rows = release_ratings()
    path = write_records(rows, tmp_path / f"human_ratings.{fmt}")
    for modality in MODALITIES:
        trials, report = import_ratings(path, mapping_for(modality), modality, TRUTH)
        mine = [r for r in rows if r["modality"] == modality]
        answered = [r for r in mine if r["response"] is not None]
        assert report_counts(report) == {
            "imported": len(answered),
            "filtered": len(rows) - len(mine),  # the other modalities' rows: expected
            "missing_rater_id": 0,
            "unknown_dyad": 0,
            "empty_response": len(mine) - len(answered),  # skipped trials: the rater's non-answer
            "invalid_response": 0,
            "duplicate": 0,
            "conflict": 0,
        }
        check_losses(report)  # nothing lost: passes at the default max_lost_share 0
        assert sorted(trials["rater_id"].unique()) == ["101", "102", "103"]  # never "101.0"
        expected = sorted(
            (str(r["rater_id"]), r["dyad_id"], "familiar" if r["response"] == 1 else "stranger")
            for r in answered
        )
        assert (
            sorted(trials[["rater_id", "dyad_id", "response"]].itertuples(index=False, name=None)) == expected
        )
        assert trials["correct"].tolist() == [
            response == TRUTH[dyad]
            for response, dyad in zip(trials["response"], trials["dyad_id"], strict=True)
        ]


def test_release_import_is_the_same_in_every_format(tmp_path):
    rows = release_ratings()
    got = {}
    for fmt in ("csv", "jsonl", "parquet"):
        path = write_records(rows, tmp_path / f"r.{fmt}")
        trials, _, _ = import_panel(
            {m: path for m in MODALITIES}, design_frame(), "exports", {m: mapping_for(m) for m in MODALITIES}
        )
        got[fmt] = trials
    pd.testing.assert_frame_equal(got["csv"], got["jsonl"])
    pd.testing.assert_frame_equal(got["csv"], got["parquet"])


# --- a lossy import fails, naming the reasons -------------------------------------------------


def test_a_lossy_import_fails_with_the_reason_counts_and_the_first_example(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    path = write_records(release_ratings(), tmp_path / "human_ratings.parquet")
    words = {"familiar": ["familiar"], "stranger": ["stranger"]}  # the README's text labels: match no code
    mappings = {m: mapping_for(m, response_values=words) for m in MODALITIES}
    mappings["audio"] = mapping_for("audio")  # audio is mapped right
    with pytest.raises(ImportLossError) as error:
        import_panel({m: path for m in MODALITIES}, design_frame(), "exports", mappings)
    message = str(error.value)
    first, *lines = message.splitlines()
    assert first.startswith("ratings import of text, video failed")
    assert "ratings.max_lost_share = 0" in first
    text = [line for line in lines if line.startswith("  text")]
    assert text == [f"  text ({path}): no trial imported; 20 of 24 trial(s) lost"]
    assert "    reasons: filtered 48, empty_response 4, invalid_response 20" in lines
    assert "    first invalid_response: record 1: rater='101' dyad='fb_0001' response='0'" in lines
    assert not any(line.startswith("  audio") for line in lines)
    assert "lost = missing_rater_id, unknown_dyad, invalid_response, conflict" in message
    # the whole report went to the log before the error
    assert "import report:" in caplog.text and "invalid_response (lost)" in caplog.text


def export_with_losses(tmp_path):
    """10 answered text trials of which one invalid, plus expected exclusions that do not count."""
    path = tmp_path / "text.csv"
    lines = ["ResponseId,stimulus,answer,Finished"]
    code = {"familiar": "1", "stranger": "0"}
    lines += [f"R{i},{DYADS[i % 8]},{code[TRUTH[DYADS[i % 8]]]},True" for i in range(9)]
    lines += [
        "R9,fb_0002,maybe,True",  # row 11: invalid, the only loss
        "R9,fb_0003,,True",  # empty_response: expected
        "R9,practice_1,1,True",  # practice: expected, outside the share
        "R8,fb_0001,1,False",  # filtered: outside the share
        f"R1,{DYADS[1]},1,True",  # a repeat of R1's answer: duplicate, expected
    ]
    path.write_text("\n".join(lines) + "\n")
    mapping = {
        "response_values": CODED,
        "require": {"Finished": [True]},
        "practice_dyads": ["practice_1"],
    }
    return import_ratings(path, mapping, "text", TRUTH)


def test_the_lost_share_counts_only_lost_answers_against_the_threshold(tmp_path):
    _, report = export_with_losses(tmp_path)
    assert report_counts(report) == {
        "imported": 9,
        "filtered": 1,
        "practice": 1,
        "missing_rater_id": 0,
        "unknown_dyad": 0,
        "empty_response": 1,
        "invalid_response": 1,
        "duplicate": 1,
        "conflict": 0,
    }
    losses = loss_summary(report).iloc[0]
    # considered: everything but not_shown / filtered / practice = 9 + 1 + 1 + 1
    assert (losses["imported"], losses["lost"], losses["considered"]) == (9, 1, 12)
    assert losses["lost_share"] == pytest.approx(1 / 12)
    with pytest.raises(ImportLossError, match=r"text: 8\.3% lost; 1 of 12 trial\(s\) lost") as error:
        check_losses(report)
    assert "first invalid_response: row 11: rater='R9' dyad='fb_0002' response='maybe'" in str(error.value)
    with pytest.raises(ImportLossError):
        check_losses(report, 0.08)
    check_losses(report, 0.09)
    with pytest.raises(ValueError, match="within"):
        check_losses(report, 1.5)


def test_a_modality_with_no_imported_trial_always_fails(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    _, report = import_ratings(empty, {"response_values": CODED}, "audio", TRUTH)
    with pytest.raises(ImportLossError, match=r"audio: no trial imported; 0 of 0") as error:
        check_losses(report, 1.0)
    assert "reasons: the export holds no trial" in str(error.value)
    # every row filtered out (a `require` value spelt differently): nothing lost, still fails
    path = write_records(release_ratings(), tmp_path / "r.csv")
    _, report = import_ratings(path, mapping_for("Text"), "text", TRUTH)  # matched case-insensitively
    check_losses(report)
    _, report = import_ratings(path, mapping_for("txt"), "text", TRUTH)
    with pytest.raises(ImportLossError, match="no trial imported") as error:
        check_losses(report, 1.0)
    assert "first filtered: row 2: rater='101' dyad='fb_0001' response='0'" in str(error.value)


# --- record numbers, reasons that apply, duplicates and conflicts ---------------------------------


@pytest.mark.parametrize(("fmt", "first"), [("csv", "row 2"), ("tsv", "row 2"), ("jsonl", "record 1"),
                                            ("json", "record 1"), ("parquet", "record 1")])  # fmt: skip
def test_examples_name_rows_in_csv_and_records_in_jsonl_and_parquet(tmp_path, fmt, first):
    rows = release_ratings()
    rows[0]["dyad_id"] = "fb_9999"  # record 1 / CSV row 2
    rows[5]["response"] = 7  # record 6 / CSV row 7
    path = write_records(rows, tmp_path / f"r.{fmt}")
    _, report = import_ratings(path, mapping_for("text"), "text", TRUTH)
    examples = dict(zip(report["reason"], report["example"], strict=True))
    assert examples["unknown_dyad"] == f"{first}: rater='101' dyad='fb_9999' response='0'"
    sixth = "row 7" if fmt in ("csv", "tsv") else "record 6"
    assert examples["invalid_response"] == f"{sixth}: rater='101' dyad='fb_0006' response='7'"


def test_skipped_rows_keep_their_file_numbers(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("rid,stim,ans\nRater,Stimulus,Answer\n{},{},{}\nR1,fb_0001,bad\n")
    _, report = import_ratings(
        path, {"rater_id": "rid", "dyad_id": "stim", "response": "ans", "skip_rows": 2}, "text", TRUTH
    )
    assert report_counts(report)["invalid_response"] == 1
    assert report.set_index("reason").loc["invalid_response", "example"].startswith("row 4:")


def test_reports_list_only_the_reasons_that_can_apply():
    long = applicable_reasons({})
    assert long == ("imported", "missing_rater_id", "unknown_dyad", "empty_response", "invalid_response",
                    "duplicate", "conflict")  # fmt: skip
    assert "not_shown" in applicable_reasons({"wide": True}) and "empty_response" not in applicable_reasons(
        {"wide": True}
    )
    assert "empty_response" in applicable_reasons({"wide": True, "empty_values": ["-99"]})
    declared = {"require": {"a": ["x"]}, "practice_dyads": ["p"]}
    assert {"filtered", "practice"} <= set(applicable_reasons(declared))
    assert not {"duplicate", "conflict"} & set(applicable_reasons({"keep": "error"}))
    assert set(REASONS) >= set(LOST_REASONS)


def test_the_keep_rule_and_conflicts(tmp_path):
    path = tmp_path / "r.jsonl"
    records = [
        {"rater": "R1", "dyad": "fb_0001", "answer": 1},  # record 1
        {"rater": "R1", "dyad": "fb_0001", "answer": 0},  # record 2: differs from record 1
        {"rater": "R1", "dyad": "fb_0001", "answer": 1},  # record 3: same as record 1
        {"rater": "R2", "dyad": "fb_0002", "answer": 0},  # record 4
    ]
    write_records(records, path)
    base = {"rater_id": "rater", "dyad_id": "dyad", "response": "answer", "response_values": CODED}
    trials, report = import_ratings(path, base, "video", TRUTH)  # keep: first (the default)
    assert report_counts(report) | {} == {**dict.fromkeys(applicable_reasons(base), 0), "imported": 2,
                                          "duplicate": 1, "conflict": 1}  # fmt: skip
    examples = report.set_index("reason")["example"]
    assert examples["conflict"] == "record 2: rater='R1' dyad='fb_0001' response='0' (kept record 1: '1')"
    assert examples["duplicate"] == "record 3: rater='R1' dyad='fb_0001' response='1' (kept record 1: '1')"
    assert trials.set_index("dyad_id").loc["fb_0001", "response"] == "familiar"
    with pytest.raises(ImportLossError, match="conflict 1"):
        check_losses(report)  # a conflict loses an answer; the duplicate does not

    trials, report = import_ratings(path, {**base, "keep": "last"}, "video", TRUTH)
    assert trials.set_index("dyad_id").loc["fb_0001", "response"] == "familiar"  # record 3
    examples = report.set_index("reason")["example"]
    assert examples["conflict"] == "record 2: rater='R1' dyad='fb_0001' response='0' (kept record 3: '1')"
    assert examples["duplicate"] == "record 1: rater='R1' dyad='fb_0001' response='1' (kept record 3: '1')"

    with pytest.raises(ValueError, match=r"r\.jsonl: 3 ratings repeat a \(rater, dyad\) pair") as error:
        import_ratings(path, {**base, "keep": "error"}, "video", TRUTH)
    assert "record 1 ('1'), record 2 ('0'), record 3 ('1')" in str(error.value)
    with pytest.raises(ValueError, match="keep must be one of first, last, error"):
        import_ratings(path, {**base, "keep": "newest"}, "video", TRUTH)


def test_practice_trials_in_long_and_wide_exports(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text("rid,fb_0001_r,P1_r,fb_0002_r\nR1,1,0,\nR2,,1,0\n")
    mapping = {"rater_id": "rid", "wide": True, "column_pattern": "{dyad_id}_r", "response_values": CODED,
               "practice_dyads": ["P1"]}  # fmt: skip
    _, report = import_ratings(wide, mapping, "audio", TRUTH)
    assert report_counts(report) == {
        **dict.fromkeys(("missing_rater_id", "unknown_dyad", "invalid_response", "duplicate", "conflict"), 0),
        "imported": 2,
        "not_shown": 2,
        "practice": 2,
    }
    assert report.set_index("reason").loc["practice", "example"].startswith("row 2, column 'P1_r':")
    check_losses(report)
    long = tmp_path / "long.csv"
    long.write_text("ResponseId,stimulus,answer\nR1,clips/practice.mp4,1\nR1,clips/fb_0001.mp4,1\n")
    long_mapping = {"response_values": CODED, "dyad_pattern": "clips/{dyad_id}.mp4"}
    as_written = {**long_mapping, "practice_dyads": ["clips/practice.mp4"]}
    _, report = import_ratings(long, as_written, "video", TRUTH)
    assert report_counts(report)["practice"] == 1 and report_counts(report)["unknown_dyad"] == 0
    _, report = import_ratings(long, {**long_mapping, "practice_dyads": ["practice"]}, "video", TRUTH)
    assert report_counts(report)["practice"] == 1  # the id after dyad_pattern matches too
    with pytest.raises(ValueError, match=r"practice_dyads names design dyad\(s\) \['fb_0001'\]"):
        import_ratings(long, {**long_mapping, "practice_dyads": ["fb_0001"]}, "video", TRUTH)


def test_the_schema_checks_the_ratings_mapping_and_the_loss_budget():
    config = validate_config({"ratings": {"mapping": {"text": {"response_values": CODED, "keep": "last"}}}})
    assert config["ratings"]["max_lost_share"] == 0
    validate_config({"ratings": {"mapping": {"rater_id": "pid", "require": {"Finished": True}}}})
    cases = [
        ({"mapping": {"text": {"keep": "newest"}}}, "ratings.mapping.text.keep: 'newest' is not one of"),
        ({"mapping": {"kep": "first"}}, "ratings.mapping: Additional properties are not allowed ('kep'"),
        ({"mapping": {"audio": {"response_values": {"familiar": [1]}}}},
         "ratings.mapping.audio.response_values: 'stranger' is a required property"),
        ({"mapping": {"dyad_pattern": "a.mp4"}}, "ratings.mapping.dyad_pattern: 'a.mp4' does not match"),
        ({"max_lost_share": 1.5}, "ratings.max_lost_share: 1.5 is greater than the maximum of 1"),
    ]  # fmt: skip
    for ratings, said in cases:
        with pytest.raises(ConfigError) as error:
            validate_config({"ratings": ratings})
        assert said in str(error.value)


# --- the exports read and the raters imported against the plan ---------------------------------


def test_the_plan_says_which_exports_are_read_and_the_raters_against_it():
    plan = export_plan("exports", {"text": 3, "audio": 2}, {"text": "t.csv", "audio": "", "video": "v.csv"})
    assert plan.to_dict("records") == [
        {"modality": "text", "planned": 3, "export": "t.csv", "read": True, "note": ""},
        {"modality": "audio", "planned": 2, "export": "", "read": False,
         "note": "not read: ratings.exports.audio names no export"},
        {"modality": "video", "planned": None, "export": "v.csv", "read": False,
         "note": "not read: ratings.raters_per_modality plans no video raters"},
    ]  # fmt: skip
    trials = pd.DataFrame({"rater_id": ["R1", "R2", "R1"], "modality": ["text", "text", "text"]})
    raters = raters_vs_plan(plan, trials)[
        ["modality", "planned raters", "raters imported", "difference", "note"]
    ]
    assert raters.to_dict("records") == [
        {"modality": "text", "planned raters": 3, "raters imported": 2, "difference": -1,
         "note": "1 fewer raters than planned"},
        {"modality": "audio", "planned raters": 2, "raters imported": 0, "difference": -2,
         "note": "not read: ratings.exports.audio names no export"},
        {"modality": "video", "planned raters": None, "raters imported": 0, "difference": None,
         "note": "not read: ratings.raters_per_modality plans no video raters"},
    ]  # fmt: skip
    simulated = export_plan("simulated", {"text": 2}, {})
    assert simulated.to_dict("records") == [
        {"modality": "text", "planned": 2, "export": "simulated panel", "read": True, "note": ""}
    ]
    assert raters_vs_plan(simulated, trials)["note"].tolist() == ["as planned"]
    assert raters_vs_plan(simulated, None)["note"].tolist() == ["no trial table"]


def test_the_summary_page_shows_the_raters_against_the_plan(tmp_path):
    config = {
        "corpus": {"source": "seamless"},
        "ratings": {"source": "exports", "raters_per_modality": {"text": 3, "video": 2},
                    "exports": {"text": "t.csv", "audio": "", "video": "v.csv"}},
        "social": {"enabled": False},
    }  # fmt: skip
    trials = pd.DataFrame({"rater_id": [1, 2, 3, 7], "modality": ["text", "text", "text", "video"]})
    raters = panel.raters_section(config["ratings"], trials)
    sections = summary.build_summary(config, {"raters": raters})
    raters = sections["raters"].set_index("modality")
    assert raters.loc["text", "note"] == "as planned" and raters.loc["text", "difference"] == 0
    assert raters.loc["video", "difference"] == -1
    assert raters.loc["video", "note"] == "1 fewer raters than planned"
    summary.write_summary(sections, tmp_path)
    text = (tmp_path / "summary.md").read_text()
    assert "**Raters differ from the plan** for video (see Raters)." in text
    assert "## Raters: imported against the plan (ratings.raters_per_modality)" in text
    assert "Raters differ from the plan for video" in (tmp_path / "summary.html").read_text()
    assert pd.read_csv(tmp_path / "summary_raters.csv")["raters imported"].tolist() == [3, 1]


# --- a failed script's error reaches the console -------------------------------------------------


def test_the_excepthook_sends_the_errors_first_lines_to_the_console(monkeypatch):
    log, console = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    hook = console_excepthook("import_ratings", "results/logs/import_ratings.log", console)
    try:
        raise ImportLossError("ratings import of text failed\n" + "\n".join(f"  line {i}" for i in range(40)))
    except ImportLossError as error:
        hook(type(error), error, error.__traceback__)
    shown = console.getvalue().splitlines()
    assert shown[0] == "omnisocial: rule import_ratings failed"
    assert shown[1].endswith(".ImportLossError: ratings import of text failed")
    assert shown[2] == "      line 0"
    assert shown[-2] == "    ... (16 more line(s) in the log)"
    assert shown[-1] == "    (full traceback: results/logs/import_ratings.log)"
    assert "Traceback (most recent call last)" in log.getvalue() and "line 39" in log.getvalue()


# --- workflow: a real snakemake run ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.heavy  # 4 CPU-s
def test_workflow_imports_a_coded_release_and_a_lossy_import_fails_on_the_console(tmp_path):
    from test_release import make_release, release_config, snakemake

    files = make_release(tmp_path / "release", "parquet")
    design = pd.read_parquet(files["metadata"])
    truth = {
        p: ("familiar" if r == "Friends" else "stranger")
        for p, r in zip(design["pair"], design["rel"], strict=True)
    }
    rows = [
        {
            "rater_id": 100 + r,
            "dyad_id": dyad,
            "modality": m,
            "response": None if (r + i) % 4 == 0 else int((truth[dyad] == "familiar") == ((r + i) % 3 != 0)),
        }
        for m in ("text", "audio")
        for r in range(4)
        for i, dyad in enumerate(design["pair"])
    ]
    write_records(rows, files["ratings"])
    config = release_config(files, tmp_path / "release")
    ratings = config["ratings"]
    ratings["raters_per_modality"] = {"text": 4, "audio": 5}
    ratings["exports"] = {"text": str(files["ratings"]), "audio": str(files["ratings"]), "video": ""}
    ratings["mapping"] = {m: {**ratings["mapping"][m], "response_values": CODED} for m in ("text", "audio")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    results = tmp_path / "results" / "release"
    snakemake(tmp_path, "--cores", "1", "results/release/ratings/trials.csv")
    trials = pd.read_csv(results / "ratings" / "trials.csv", dtype=str)
    answered = [r for r in rows if r["response"] is not None]
    assert len(trials) == len(answered) and set(trials["rater_id"]) == {"100", "101", "102", "103"}
    log = (results / "logs" / "import_ratings.log").read_text()
    assert "audio: 4 raters imported, 5 planned: 1 fewer raters than planned" in log
    report = pd.read_csv(results / "ratings" / "import_report.csv").set_index(["modality", "reason"])["n"]
    skipped = sum(r["response"] is None for r in rows if r["modality"] == "text")
    assert report[("text", "empty_response")] == skipped

    # the same export read with the README's text labels: every answer lost, the job fails
    ratings["mapping"]["text"]["response_values"] = {"familiar": ["familiar"], "stranger": ["stranger"]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(tmp_path, "--cores", "1", "results/release/ratings/trials.csv", check=False)
    assert result.returncode != 0
    console = result.stdout + result.stderr
    assert "omnisocial: rule import_ratings failed" in console
    assert "ImportLossError: ratings import of text failed" in console
    assert "text (" in console and "no trial imported; 24 of 32 trial(s) lost" in console
    assert "reasons: filtered 32, empty_response 8, invalid_response 24" in console
    assert "first invalid_response: record 2: rater='100' dyad='FB001'" in console
    assert "(full traceback: results/release/logs/import_ratings.log)" in console
