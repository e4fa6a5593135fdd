"""The JATOS side of the rating experiment without a browser: the study archive against a port of
JATOS's import checks (tests/jatos_import.py, from JATOS v3.10.5's source), the study's own
uuids, and the result-export reader's refusals (nothing dropped silently). The pages run in
Chromium on JATOS's real jatos.js in tests/test_rating_browser.py."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from jatos_import import ImportRefused, JatosInstance, check_archive, is_uuid
from rating_study import JSPSYCH_DIR, build_study

from omnisocial.familiarity.ratings.collect import playback_flag
from omnisocial.familiarity.ratings.jatos import build_jatos_study, jatos_exports, jatos_sessions

pytestmark = pytest.mark.skipif(
    not (JSPSYCH_DIR / "jspsych").is_dir(), reason="jsPsych not installed (make web-deps)"
)


CONTROL = Path(__file__).resolve().parent / "data" / "jatos" / "potato_compass.jzip"  # JATOS's own


@pytest.fixture(scope="module")
def experiments(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("rating_jatos") / "study")["experiments"]


@pytest.fixture(scope="module")
def experiment(experiments):
    return experiments / "text"


@pytest.mark.heavy  # 6 CPU-s
def test_every_archive_passes_jatos_import_checks(experiments, tmp_path):
    """Each modality's archive, as the package builds it for rule rating_jatos, passes the port of
    JATOS 3.10.5's import checks; so does JATOS's own example archive (the control). The batch
    that named MTurk "MTWorker" (the archives before this fix) is refused since 3.10.1."""
    control = check_archive(CONTROL)
    assert control["title"] == "Potato Compass" and len(control["componentList"]) == 3
    for modality in ("text", "audio", "video"):
        folder = tmp_path / modality
        shutil.copytree(experiments / modality, folder)
        (folder / ".snakemake_timestamp").touch()  # Snakemake marks a finished folder output so
        build_jatos_study(folder, tmp_path / f"{modality}.jzip", tmp_path / "ids" / f"{modality}.json")
        study = check_archive(tmp_path / f"{modality}.jzip")
        batch = study["batchList"][0]
        assert set(batch["allowedWorkerTypes"]) == {
            "Jatos", "PersonalSingle", "PersonalMultiple", "GeneralSingle", "GeneralMultiple", "MT"
        }  # fmt: skip
        with zipfile.ZipFile(tmp_path / f"{modality}.jzip") as archive:
            assert not [n for n in archive.namelist() if n.endswith(".snakemake_timestamp")]
    # the archives before this fix: JATOS >= 3.10.1 answers "Batch is invalid" (HTTP 500)
    with (
        zipfile.ZipFile(tmp_path / "text.jzip") as archive,
        zipfile.ZipFile(tmp_path / "old.jzip", "w") as old,
    ):
        for info in archive.infolist():
            data = archive.read(info)
            if info.filename.endswith(".jas"):
                data = data.replace(b'"MT"', b'"MTWorker"')
            old.writestr(info, data)
    with pytest.raises(ImportRefused, match="batch 1: Invalid worker type: MTWorker"):
        check_archive(tmp_path / "old.jzip")


def test_the_port_refuses_what_jatos_refuses(experiment, tmp_path):
    """The ported checks are not a rubber stamp: each broken archive is refused with JATOS's reason."""
    build_jatos_study(experiment, tmp_path / "good.jzip", tmp_path / "ids.json")
    with zipfile.ZipFile(tmp_path / "good.jzip") as archive:
        entries = {i.filename: archive.read(i) for i in archive.infolist()}
    jas_name = next(n for n in entries if n.endswith(".jas"))
    jas = json.loads(entries[jas_name])

    def broken(change=None, extra=None, drop=()):
        data = json.loads(json.dumps(jas))
        if change:
            change(data)
        path = tmp_path / f"bad{len(list(tmp_path.glob('bad*.jzip')))}.jzip"
        with zipfile.ZipFile(path, "w") as archive:
            for name, content in entries.items():
                if name not in drop:
                    archive.writestr(name, json.dumps(data) if name == jas_name else content)
            for name, content in (extra or {}).items():
                archive.writestr(name, content)
        return path

    cases = [
        (broken(lambda d: d.update(version="4")), "newer version of JATOS"),
        (broken(lambda d: d.update(version="1")), "Unsupported study version"),
        (broken(drop={jas_name}), "File is not a valid JATOS study"),
        (broken(extra={"second.jas": b"{}"}), "File is not a valid JATOS study"),
        (broken(extra={"other/x.txt": b"x"}), "more than one directory"),
        (broken(lambda d: d["data"].update(dirName="study assets")), "Invalid study assets directory name"),
        (broken(lambda d: d["data"].update(dirName="publix")), "reserved"),
        (broken(lambda d: d["data"].update(title="<b>x</b>")), "study: title: no HTML allowed"),
        (
            broken(lambda d: d["data"]["componentList"][0].update(htmlFilePath="../index.html")),
            "not a valid path",
        ),
        (broken(lambda d: d["data"]["batchList"][0].update(maxTotalMembers=0)), "at least 1"),
        (broken(lambda d: d["data"]["batchList"][0].update(jsonData="{no")), "invalid JSON format"),
    ]
    for archive, reason in cases:
        with pytest.raises(ImportRefused, match=reason):
            check_archive(archive)


def test_each_study_has_its_own_kept_uuids(experiment, tmp_path):
    """The uuids are made on the first build and kept (ids file): a rebuild is byte-identical and
    re-importing it updates the same study; another lab's build of the same experiment is a study
    of its own, so both labs import on one shared server (MindProbe)."""
    jas = build_jatos_study(experiment, tmp_path / "a.jzip", tmp_path / "lab1" / "text.json")
    ids = json.loads((tmp_path / "lab1" / "text.json").read_text())
    assert sorted(ids) == ["batch", "component", "study"] and all(is_uuid(v) for v in ids.values())
    assert jas["data"]["uuid"] == ids["study"] and jas["data"]["batchList"][0]["uuid"] == ids["batch"]
    again = build_jatos_study(experiment, tmp_path / "b.jzip", tmp_path / "lab1" / "text.json")
    assert (tmp_path / "a.jzip").read_bytes() == (tmp_path / "b.jzip").read_bytes()  # reproducible
    other = build_jatos_study(experiment, tmp_path / "c.jzip", tmp_path / "lab2" / "text.json")
    assert other["data"]["uuid"] != again["data"]["uuid"]
    assert other["data"]["componentList"][0]["uuid"] != again["data"]["componentList"][0]["uuid"]
    mindprobe = JatosInstance()
    assert mindprobe.import_study(tmp_path / "a.jzip", "lab1") == "new"
    assert mindprobe.import_study(tmp_path / "b.jzip", "lab1") == "overwrite"  # the same study, updated
    assert mindprobe.import_study(tmp_path / "c.jzip", "lab2") == "new"
    with pytest.raises(ImportRefused, match="not a member"):  # what one uuid for every lab met
        mindprobe.import_study(tmp_path / "a.jzip", "lab2")
    (tmp_path / "bad.json").write_text(json.dumps(ids | {"batch": "not-a-uuid"}))
    with pytest.raises(ValueError, match="'batch' is not a uuid"):
        build_jatos_study(experiment, tmp_path / "d.jzip", tmp_path / "bad.json")


def test_the_archive_is_jatos_export_layout(experiment, tmp_path):
    jas = build_jatos_study(experiment, tmp_path / "a.jzip", tmp_path / "ids.json")
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
    assert "GeneralMultiple" in data["batchList"][0]["allowedWorkerTypes"]


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
    # a JATOS on Windows ends each component result's data with \r\n (System.lineSeparator())
    good.write_bytes(good.read_bytes().replace(b"\n", b"\r\n"))
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
    # JATOS 3.8.1 starts the names in the results ZIP with "/" (IOUtils.getResultsPathForZip)
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as archive:
        archive.writestr("/study_result_3/comp-result_5/data.txt", _lines(HEADER))
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
