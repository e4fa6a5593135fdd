"""Building the rating experiment (one folder per modality) from a real design and real stimuli."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from rating_study import JSPSYCH_DIR, build_study, experiment_settings

from omnisocial.familiarity.ratings import SURVEY_LIST
from omnisocial.familiarity.ratings.experiment import ExperimentError, build_experiment, read_lists
from omnisocial.io import sha256_file

pytestmark = pytest.mark.skipif(
    not (JSPSYCH_DIR / "jspsych").is_dir(), reason="jsPsych not installed (make web-deps)"
)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rating_experiment") / "study"
    return build_study(folder) | {"folder": folder}


@pytest.mark.heavy  # 4 CPU-s
def test_the_folder_holds_everything_the_page_loads(study):
    root = study["experiments"] / "video"
    page = (root / "index.html").read_text()
    for source in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert not source.startswith(("http:", "https:", "//")), source
        assert (root / source).is_file(), source
    for script in (root / "jspsych").glob("*.js"):
        assert "sourceMappingURL" not in script.read_text(), script  # the maps name a CDN
    build = json.loads((root / "build.json").read_text())
    assert build["jspsych"]["jspsych"] == "8.3.0"
    lock = json.loads((JSPSYCH_DIR.parent / "package-lock.json").read_text())
    assert {p: v for p, v in build["jspsych"].items()} == {
        p: lock["packages"][f"node_modules/{p}"]["version"] for p in build["jspsych"]
    }
    for path, digest in build["stimuli_sha256"].items():
        assert sha256_file(root / path) == digest
    assert build["server"] == {"raters_per_list": 1, "max_body_bytes": 65536}


def test_lists_follow_the_survey_lists(study):
    root = study["experiments"] / "audio"
    lists = json.loads((root / "lists.json").read_text())
    surveys = study["folder"] / "surveys" / "audio"
    assert sorted(lists) == sorted(p.stem for p in surveys.glob("*.csv"))
    for list_id, entry in lists.items():
        survey = SURVEY_LIST.read(surveys / f"{list_id}.csv")
        assert [t["dyad_id"] for t in entry["trials"]] == list(survey["dyad_id"])
        assigned = study["assignments"].query("rater_id == @list_id")["block"]
        assert entry["blocks"] == sorted(assigned)
    study_json = json.loads((root / "study.json").read_text())
    assert study_json["choices"] == [
        {"value": "familiar", "label": "Know each other", "key": "f"},
        {"value": "stranger", "label": "Strangers", "key": "j"},
    ]
    assert "either-or game" in study_json["instructions"]["pages"][0]
    assert "headphones" in study_json["instructions"]["pages"][1]  # the modality's page
    assert [q["name"] for q in study_json["questionnaires"]] == ["tsis_sip", "cue_use"]
    assert study_json["practice"] == [{"id": "P001", "stimulus": "stimuli/practice/P001.wav"}]


def _build(study, tmp_path, settings=None, lists=None, jspsych=JSPSYCH_DIR):
    assignments = study["assignments"].query("modality == 'text'")[["rater_id", "block"]]
    return build_experiment(
        "text",
        lists or read_lists(study["folder"] / "surveys", "text"),
        assignments,
        study["blocks"],
        study["folder"] / "stimuli",
        settings or study["settings"],
        jspsych,
        tmp_path / "text",
    )


def test_bad_inputs_name_the_reason(study, tmp_path):
    with pytest.raises(ExperimentError, match="make web-deps"):
        _build(study, tmp_path, jspsych=tmp_path / "no_node_modules")
    clash = tmp_path / "D001.txt"
    clash.write_text("a practice file named like a design dyad")
    with pytest.raises(ExperimentError, match="id of a design dyad"):
        _build(study, tmp_path, settings=experiment_settings(practice={"text": [str(clash)]}))
    same_keys = experiment_settings(choices={"familiar": {"key": "j"}, "stranger": {"key": "J"}})
    with pytest.raises(ExperimentError, match="the same key"):
        _build(study, tmp_path, settings=same_keys)
    lists = read_lists(study["folder"] / "surveys", "text")
    first = sorted(lists)[0]
    own = set(lists[first]["dyad_id"])
    other = next(d for table in lists.values() for d in table["dyad_id"] if d not in own)
    lists[first].loc[0, "dyad_id"] = other
    with pytest.raises(ExperimentError, match=f"survey list {first}: dyads of block"):
        _build(study, tmp_path, lists=lists)
    assert not (tmp_path / "text").exists()  # a failed build leaves nothing half-written


def test_a_rebuild_replaces_the_folder(study, tmp_path):
    _build(study, tmp_path)
    (tmp_path / "text" / "stale.txt").write_text("from an earlier build")
    _build(study, tmp_path)
    assert not (tmp_path / "text" / "stale.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".text.")]
    shutil.rmtree(tmp_path / "text")
