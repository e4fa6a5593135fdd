"""A real study's human half through the workflow: survey_materials builds the experiments, the
collection server collects (participants over HTTP), ratings.source experiment imports them.

The researcher writes no mapping: rule collect_ratings turns the sessions into exports and rule
import_ratings reads them with the built-in one; the import report loses nothing, counts the
incomplete session's unanswered trials, and the questionnaires become covariates.
"""

from __future__ import annotations

import json
import threading
import zipfile

import pandas as pd
import pytest
import yaml
from rating_study import JSPSYCH_DIR
from test_rating_collect import TOKEN, Client
from test_release import real_study_config, snakemake

from omnisocial.familiarity.ratings.collect import CollectionStore, make_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (JSPSYCH_DIR / "jspsych").is_dir(), reason="jsPsych not installed (make web-deps)"
    ),
]


def _collect(experiments, data_dir, questionnaires, finish_later: bool = False) -> dict:
    """Three participants per modality: two finish, one stops after the first trial
    (`finish_later`: that one comes back and finishes)."""
    store = CollectionStore(experiments, data_dir, TOKEN)
    server = make_server(store, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = Client(server.server_address[1])
    answered = {}
    try:
        for modality in ("text", "audio", "video"):
            for k in range(2, 3) if finish_later else range(3):
                pid = f"W{modality[0].upper()}{k}"
                status, session = client.start(modality, pid)
                assert status == 200, session
                trials = session["trials"] if k < 2 else session["trials"][:1]
                if finish_later:
                    trials = session["trials"][1:]
                for trial in trials:
                    response = "familiar" if k % 2 else "stranger"
                    assert client.rate(modality, session, pid, trial, response)[0] == 200
                    answered[(pid, trial["dyad_id"])] = response
                if k == 2 and not finish_later:
                    continue
                body = {"token": TOKEN, "session_id": session["session_id"], "PROLIFIC_PID": pid}
                for questionnaire in questionnaires:
                    answers = {item["id"]: 3 for item in questionnaire["items"]}
                    record = {"kind": "questionnaire", "name": questionnaire["name"], "answers": answers}
                    assert client.post(f"/{modality}/api/record", body | {"record": record})[0] == 200
                assert (
                    client.post(f"/{modality}/api/record", body | {"record": {"kind": "complete"}})[0] == 200
                )
    finally:
        server.shutdown()
        server.server_close()
        store.close()
    return answered


def test_survey_materials_build_the_experiment_and_collected_data_import(tmp_path):
    config = real_study_config(tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(tmp_path, "--cores", "2", "survey_materials")
    ratings = tmp_path / "results" / "familiarity" / "ratings"
    experiments = ratings / "experiment"
    assert sorted(p.name for p in experiments.iterdir()) == ["audio", "text", "video"]
    jzips = sorted((ratings / "jatos").glob("*.jzip"))  # rule rating_jatos: one JATOS study per modality
    assert [p.name for p in jzips] == ["audio.jzip", "text.jzip", "video.jzip"]
    with zipfile.ZipFile(jzips[1]) as archive:
        names = archive.namelist()
        jas = json.loads(archive.read("omnisocial_rating_text.jas"))
    assert jas["data"]["dirName"] == "omnisocial_rating_text" and "omnisocial_rating_text/index.html" in names
    assert "omnisocial_rating_text/app/jatos-backend.js" in names

    from omnisocial.config import validate_config

    questionnaires = validate_config({})["ratings"]["experiment"]["questionnaires"]
    answered = _collect(experiments, tmp_path / "collected", questionnaires)

    config["ratings"] |= {"source": "experiment", "experiment": {"collected": str(tmp_path / "collected")}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(tmp_path, "--cores", "2", "results/familiarity/ratings/trials.csv")
    report = pd.read_csv(ratings / "import_report.csv", keep_default_na=False)
    trials = pd.read_csv(ratings / "trials.csv", keep_default_na=False)
    lost = report[report["lost"].astype(str) == "True"]
    assert lost["n"].sum() == 0, report
    n = report.pivot(index="modality", columns="reason", values="n")
    assert n["imported"].sum() == len(answered) == len(trials)
    assert (n["unanswered"] > 0).all()  # the third participant's list, left unfinished
    unanswered = report.loc[report["reason"] == "unanswered", "example"]
    assert unanswered.str.startswith("3 session(s): 2 complete, 1 incomplete, 0 declined").all()
    got = dict(zip(zip(trials["rater_id"], trials["dyad_id"], strict=True), trials["response"], strict=True))
    assert got == answered
    covariates = pd.read_csv(ratings / "covariates.csv")
    # every TSIS answer 3, SIP_4 reverse-keyed (1 + 7 - 3 = 5): (6 * 3 + 5) / 7
    assert covariates["sip"].dropna().round(6).unique().tolist() == [round(23 / 7, 6)]
    sessions = pd.read_csv(ratings / "collected" / "sessions.csv")
    assert sorted(sessions["status"].value_counts().to_dict().items()) == [("complete", 6), ("incomplete", 3)]
    log = (tmp_path / "results" / "familiarity" / "logs" / "collect_ratings.log").read_text()
    # 2 x (consent, 2 ratings, 2 questionnaires, complete) + (consent, 1 rating)
    assert "text: read 3 session(s), 14 record(s)" in log, log

    # the third participants come back and finish after the import: a plain rerun imports them
    # (collect_ratings reads the server's manifest.json, rewritten on every stored record)
    answered |= _collect(experiments, tmp_path / "collected", questionnaires, finish_later=True)
    run = snakemake(tmp_path, "--cores", "2", "results/familiarity/ratings/trials.csv")
    assert "collect_ratings text: read 3 session(s), 18 record(s)" in run.stdout, run.stdout[-3000:]
    trials = pd.read_csv(ratings / "trials.csv", keep_default_na=False)
    got = dict(zip(zip(trials["rater_id"], trials["dyad_id"], strict=True), trials["response"], strict=True))
    assert got == answered and {"WT2", "WA2", "WV2"} <= set(trials["rater_id"])
    report = pd.read_csv(ratings / "import_report.csv", keep_default_na=False)
    assert report.loc[report["reason"] == "unanswered", "n"].sum() == 0
    assert set(report["source"]) == {"rating experiment"}
    shown = report[["modality", "reason", "n", "lost"]].to_string(index=False)
    print(f"\nimport report after the rerun:\n{shown}")

    # the text study run on JATOS instead: its plain-text result export (each session's records as
    # the JATOS page appends them) through ratings.experiment.jatos_results
    export = tmp_path / "jatos_text_results.txt"
    export.write_text(
        "".join(
            p.read_text() + "\n"
            for p in sorted((tmp_path / "collected" / "text" / "sessions").glob("*.jsonl"))
        )
    )
    config["ratings"]["experiment"]["jatos_results"] = {"text": str(export)}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run = snakemake(tmp_path, "--cores", "2", "results/familiarity/ratings/trials.csv")
    assert f"collect_ratings text: read 3 session(s), 18 record(s) from JATOS results {export}" in run.stdout
    again = pd.read_csv(ratings / "trials.csv", keep_default_na=False)
    pd.testing.assert_frame_equal(again, trials)
