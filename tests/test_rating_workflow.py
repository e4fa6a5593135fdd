"""A researcher's study from the README to the paper figures (issue 49), with the README's commands
as written, in a folder laid out like a checkout (the workflow linked in, `config/my_study.yaml`
copied from `config/seamless.example.yaml` and pointed at a small corpus in the Seamless layout):
`survey_materials` builds the experiments, the collection server collects (participants over
HTTP), `ratings.source: experiment` imports them, the whole study runs (models, statistics,
figures), `figures` redraws the figures alone, and the report is the study's.

The researcher writes no mapping: rule collect_ratings turns the sessions into exports and rule
import_ratings reads them with the built-in one; the import report loses nothing, counts the
incomplete session's unanswered trials, and the questionnaires become covariates. Participants
who finish after the import reach trials.csv on a plain rerun (the server's manifest is an input),
and the same sessions as a JATOS result export import to the same trials.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from doc_commands import REPO, find, run_in_clean_shell
from rating_study import JSPSYCH_DIR
from test_rating_collect import TOKEN, Client
from test_release import real_study_config

from omnisocial.familiarity.ratings.collect import CollectionStore, make_server
from omnisocial.familiarity.ratings.frozen import pseudonym_key, pseudonymizer

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


# the figure rules: the result figures in one job, the overview and the diagnostics in one each
FIGURE_RULES = {"fam_figures", "fam_figure_overview", "fam_figure_diagnostics"}


# what `make` reads besides the Makefile: its setup's inputs and stamps (up to date: nothing rebuilt)
MAKE_FILES = (
    "Makefile",
    ".ci",
    "src",
    "pyproject.toml",
    "requirements",
    "package.json",
    "package-lock.json",
    "node_modules",
)


def checkout(folder: Path, make: bool = False) -> Path:
    """A folder a documented command runs in as in the repository: the Snakefile, workflow and the
    venv `make setup` builds linked in (`make`: the Makefile and what its setup reads too), the
    shipped configs beside the study's own."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "workflow", ".venv", *(MAKE_FILES if make else ())):
        (folder / name).symlink_to(REPO / name)
    (folder / "config").mkdir()
    for path in sorted((REPO / "config").glob("*.yaml")):
        (folder / "config" / path.name).symlink_to(path)
    return folder


def run_documented(text: str, cwd: Path) -> str:
    """Run a command README.md or docs/ shows, exactly as shown, in a clean shell that has done
    only the README's setup (doc_commands.run_in_clean_shell); returns its console output."""
    command = find(text)
    result = run_in_clean_shell(command.text, cwd)
    said = result.stdout + result.stderr
    assert result.returncode == 0, f"{command.where}: {text} failed:\n{said[-6000:]}"
    return said


def ran_rules(said: str) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):", said, re.M))


def my_study(folder: Path) -> dict:
    """config/seamless.example.yaml, copied and pointed at the small corpus (README step 1), with a
    small design, panel and samplers."""
    example = yaml.safe_load((REPO / "config" / "seamless.example.yaml").read_text())
    small = real_study_config(folder)
    return example | {key: small[key] for key in small if key != "results"}


@pytest.mark.heavy  # a whole study of its own, run four times (~140 CPU-s)
def test_a_study_from_the_readme_to_the_figures_and_report(tmp_path):
    study = checkout(tmp_path / "study")
    config = my_study(tmp_path)
    (study / "config" / "my_study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    results = study / config["results"]  # results/friendbench, the example's
    # README step 1: what the survey needs
    said = run_documented("snakemake survey_materials --cores all --configfile config/my_study.yaml", study)
    assert {"ingest_corpus", "sample_design", "render_stimuli", "rating_experiment"} <= ran_rules(said)
    ratings = results / "ratings"
    experiments = ratings / "experiment"
    assert sorted(p.name for p in experiments.iterdir()) == ["audio", "text", "video"]
    jzips = sorted((ratings / "jatos").glob("*.jzip"))  # rule rating_jatos: one JATOS study per modality
    assert [p.name for p in jzips] == ["audio.jzip", "text.jzip", "video.jzip"]
    with zipfile.ZipFile(jzips[1]) as archive:
        names = archive.namelist()
        jas = json.loads(archive.read("omnisocial_rating_text.jas"))
    assert jas["data"]["dirName"] == "omnisocial_rating_text" and "omnisocial_rating_text/index.html" in names
    assert "omnisocial_rating_text/app/jatos-backend.js" in names
    from jatos_import import check_archive  # the port of JATOS 3.10.5's import checks

    for jzip in jzips:
        modality = jzip.stem
        ids = json.loads((ratings / "jatos" / "ids" / f"{modality}.json").read_text())  # kept: not remade
        assert check_archive(jzip)["uuid"] == ids["study"]
        assert not [n for n in zipfile.ZipFile(jzip).namelist() if n.endswith(".snakemake_timestamp")]

    from omnisocial.config import validate_config

    questionnaires = validate_config({})["ratings"]["experiment"]["questionnaires"]
    answered = _collect(experiments, tmp_path / "collected", questionnaires)

    # README step 2: ratings.source experiment, then everything
    config["ratings"] |= {"source": "experiment", "experiment": {"collected": str(tmp_path / "collected")}}
    (study / "config" / "my_study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    said = run_documented("snakemake --cores all --configfile config/my_study.yaml", study)
    assert {"collect_ratings", "import_ratings", "glmm", "rasch", "fam_figures"} <= ran_rules(said)
    assert not ran_rules(said) & {"ingest_corpus", "sample_design", "render_stimuli"}  # kept
    report = pd.read_csv(ratings / "import_report.csv", keep_default_na=False)
    trials = pd.read_csv(ratings / "trials.csv", keep_default_na=False)
    lost = report[report["lost"].astype(str) == "True"]
    assert lost["n"].sum() == 0, report
    n = report.pivot(index="modality", columns="reason", values="n")
    assert n["imported"].sum() == len(answered) == len(trials)
    assert (n["unanswered"] > 0).all()  # the third participant's list, left unfinished
    unanswered = report.loc[report["reason"] == "unanswered", "example"]
    assert unanswered.str.startswith("3 session(s): 2 complete, 1 incomplete, 0 declined").all()
    # raters are the study's pseudonyms (the key in the collected folder), no Prolific id
    alias = pseudonymizer(pseudonym_key(tmp_path / "collected"))
    got = dict(zip(zip(trials["rater_id"], trials["dyad_id"], strict=True), trials["response"], strict=True))
    assert got == {(alias(pid), dyad): answer for (pid, dyad), answer in answered.items()}
    covariates = pd.read_csv(ratings / "covariates.csv")
    # every TSIS answer 3, SIP_4 reverse-keyed (1 + 7 - 3 = 5): (6 * 3 + 5) / 7
    assert covariates["sip"].dropna().round(6).unique().tolist() == [round(23 / 7, 6)]
    sessions = pd.read_csv(ratings / "collected" / "sessions.csv")
    assert sorted(sessions["status"].value_counts().to_dict().items()) == [("complete", 6), ("incomplete", 3)]
    assert "text: read 3 session(s), 14 record(s)" in said, said[-3000:]

    # the third participants come back and finish after the import: a plain rerun imports them
    # (collect_ratings reads the server's manifest.json, rewritten on every stored record)
    answered |= _collect(experiments, tmp_path / "collected", questionnaires, finish_later=True)
    said = run_documented("snakemake --cores all --configfile config/my_study.yaml", study)
    assert "collect_ratings text: read 3 session(s), 18 record(s)" in said, said[-3000:]
    trials = pd.read_csv(ratings / "trials.csv", keep_default_na=False)
    got = dict(zip(zip(trials["rater_id"], trials["dyad_id"], strict=True), trials["response"], strict=True))
    assert got == {(alias(pid), dyad): answer for (pid, dyad), answer in answered.items()}
    assert {alias("WT2"), alias("WA2"), alias("WV2")} <= set(trials["rater_id"])
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
    (study / "config" / "my_study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    said = run_documented("snakemake --cores all --configfile config/my_study.yaml", study)
    assert f"collect_ratings text: read 3 session(s), 18 record(s) from JATOS results {export}" in said
    again = pd.read_csv(ratings / "trials.csv", keep_default_na=False)
    pd.testing.assert_frame_equal(again, trials)

    # a figure setting changed: `figures` redraws every paper figure, and nothing else
    figures = sorted(p.name for p in (results / "figures").iterdir())
    assert len(figures) == 26  # 13 figures, PNG and PDF
    before = {name: (results / "figures" / name).stat().st_mtime_ns for name in figures}
    config["figures"] = {"dpi": 120, "font_size": 9}
    (study / "config" / "my_study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    said = run_documented("snakemake figures --cores all --configfile config/my_study.yaml", study)
    ran = ran_rules(said)
    assert ran == FIGURE_RULES | {"figures"}, ran
    assert all((results / "figures" / name).stat().st_mtime_ns > before[name] for name in figures)
    # another format: the figure rules' declared outputs follow figures.formats, only they rerun
    config["figures"]["formats"] = ["png", "svg"]
    (study / "config" / "my_study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    planned = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "figures", "--configfile", "config/my_study.yaml"],
        cwd=study,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert ran_rules(planned.stdout) == FIGURE_RULES | {"figures"}
    assert "figures/person_item_map.svg" in planned.stdout and "accuracy.pdf" not in planned.stdout
    del config["figures"]["formats"]
    (study / "config" / "my_study.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    # the study's report (not the demo's), and a dry run of the demo as the docs show it
    run_documented(
        f"snakemake --report {config['results']}/report.html --configfile config/my_study.yaml", study
    )
    report = (results / "report.html").read_text(errors="replace")
    assert "results/friendbench" in report and "results/familiarity/" not in report
    said = run_documented("snakemake -n", study)
    assert "make_demo_corpus" in said  # no config file: the demo, planned
