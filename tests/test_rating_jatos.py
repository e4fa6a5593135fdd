"""The JATOS side of the rating experiment without a browser: the study archive's layout, and the
result-export reader's refusals (nothing dropped silently). The pages run in Chromium on a JATOS
stand-in in tests/test_rating_browser.py."""

from __future__ import annotations

import json
import zipfile

import pytest
from rating_study import JSPSYCH_DIR, build_study

from omnisocial.familiarity.ratings.collect import playback_flag
from omnisocial.familiarity.ratings.jatos import build_jatos_study, jatos_exports, jatos_sessions

pytestmark = pytest.mark.skipif(
    not (JSPSYCH_DIR / "jspsych").is_dir(), reason="jsPsych not installed (make web-deps)"
)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("rating_jatos") / "study")["experiments"] / "text"


def test_the_archive_is_jatos_export_layout(experiment, tmp_path):
    jas = build_jatos_study(experiment, tmp_path / "a.jzip")
    again = build_jatos_study(experiment, tmp_path / "b.jzip")
    assert (tmp_path / "a.jzip").read_bytes() == (tmp_path / "b.jzip").read_bytes()  # reproducible
    with zipfile.ZipFile(tmp_path / "a.jzip") as archive:
        names = archive.namelist()
        index = archive.read("omnisocial_rating_text/index.html").decode()
    assert [n for n in names if n.endswith(".jas")] == ["omnisocial_rating_text.jas"]
    assert all(n == "omnisocial_rating_text.jas" or n.startswith("omnisocial_rating_text/") for n in names)
    assert "omnisocial_rating_text/lists.json" in names and "omnisocial_rating_text/build.json" not in names
    assert index.index('src="jatos.js"') < index.index("jatos-backend.js") < index.index("app/experiment.js")
    data = jas["data"]
    assert (jas["version"], data["dirName"], data["componentList"][0]["htmlFilePath"]) == (
        "3",
        "omnisocial_rating_text",
        "index.html",
    )
    assert (
        data["uuid"] == again["data"]["uuid"]
        and "GeneralMultiple" in data["batchList"][0]["allowedWorkerTypes"]
    )


def _lines(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


HEADER = {
    "kind": "session",
    "session_id": "T001-7",
    "modality": "text",
    "list_id": "T001",
    "PROLIFIC_PID": "J1",
}


def test_the_reader_names_what_it_cannot_read(experiment, tmp_path):
    good = tmp_path / "good.txt"
    rating = {"kind": "rating", "session_id": "T001-7", "order": 1, "response": "familiar", "rt_ms": 500}
    good.write_text(_lines(HEADER, {"kind": "consent", "agreed": True, "session_id": "T001-7"}) + "\n")
    assert [len(s) for s in jatos_sessions(good, "text")] == [2]
    cases = {
        "not json\n": "line 1: not a record of the rating experiment",
        _lines(rating): "line 1: a record of session 'T001-7' before its header",
        _lines(HEADER | {"modality": "audio"}): "line 1: a 'audio' session in the text import",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.txt"
        bad.write_text(text)
        with pytest.raises(ValueError, match=message):
            jatos_sessions(bad, "text")
    bad.write_text(_lines(HEADER | {"list_id": "T999"}))
    with pytest.raises(ValueError, match="names list 'T999', not in the design"):
        jatos_exports(bad, experiment)
    # a results ZIP whose metadata.json lists data that the ZIP lacks
    metadata = {
        "data": [{"studyResults": [{"id": 3, "componentResults": [{"id": 5, "data": {"size": 10}}]}]}]
    }
    with zipfile.ZipFile(tmp_path / "results.zip", "w") as archive:
        archive.writestr("metadata.json", json.dumps(metadata))
    with pytest.raises(
        ValueError, match="metadata.json lists result data the ZIP lacks: study result 3, component"
    ):
        jatos_sessions(tmp_path / "results.zip", "text")
    # JATOS before 3.8 names the folders comp_result_{id}: read alike
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as archive:
        archive.writestr("study_result_3/comp_result_5/data.txt", _lines(HEADER))
        archive.writestr("metadata.json", json.dumps(metadata))
    assert [s[0]["session_id"] for s in jatos_sessions(tmp_path / "old.zip", "text")] == ["T001-7"]


@pytest.mark.parametrize(
    ("fields", "flag"),
    [
        ({"playback_rate": 1, "played_s": 1.2, "media_played_s": 1.2, "seeked": False}, ""),
        ({"playback_rate": 1, "played_s": 1.05, "media_played_s": 1.2, "seeked": False}, ""),  # event timing
        ({"playback_rate": 16, "played_s": 0.1, "media_played_s": 1.2, "seeked": False}, "fast"),
        (
            {"playback_rate": 1, "played_s": 9.0, "media_played_s": 18.0, "seeked": False},
            "fast",
        ),  # rate hidden
        ({"playback_rate": 1.5, "played_s": 12.0, "media_played_s": 18.0, "seeked": True}, "fast,seeked"),
        ({"media_ended": True}, ""),  # a page before these fields: never flagged
    ],
)
def test_playback_flag(fields, flag):
    assert playback_flag(fields) == flag
