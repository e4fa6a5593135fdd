"""Collected answers stay bound to what their raters saw (issue 58), and raters are pseudonyms.

Every rating the collection server stores carries what its trial showed (interaction, clip
window, stimulus SHA-256); the import gives it to the current design's dyad showing the same,
so a relabelled design moves the answer with its clip, and a clip no longer shown is lost,
never re-pointed. The server refuses an experiment rebuilt on another design for a collection,
and the workflow stops at parse time (before any job, `snakemake -n` too) when a design key
changes after answers were collected, naming the sessions, the keys and the ways forward;
analysis settings rerun as before. The same holds for survey exports (`ratings.exports`).
Outside the collected folder no Prolific id appears: raters are HMAC pseudonyms.
"""

from __future__ import annotations

import copy
import json
import shutil
import stat
import threading
from pathlib import Path

import pandas as pd
import pytest
import yaml
from rating_study import JSPSYCH_DIR, build_study
from test_rating_collect import TOKEN, Client

from omnisocial.config import validate_config
from omnisocial.familiarity.ratings import import_ratings
from omnisocial.familiarity.ratings.collect import (
    CollectionStore,
    collected_exports,
    experiment_mapping,
    make_server,
)
from omnisocial.familiarity.ratings.experiment import build_experiment, read_lists
from omnisocial.familiarity.ratings.frozen import (
    DesignChangedError,
    check_design,
    design_keys,
    pseudonym,
    pseudonym_key,
    pseudonymizer,
)
from omnisocial.familiarity.ratings.importing import ImportLossError, check_losses

pytestmark = pytest.mark.skipif(
    not (JSPSYCH_DIR / "jspsych").is_dir(), reason="jsPsych not installed (make web-deps)"
)
MODALITIES = ("text", "audio", "video")
SUFFIX = {"text": "txt", "audio": "wav", "video": "mp4"}


def _config(collected: Path, **changes) -> dict:
    config = {
        "ratings": {
            "source": "experiment",
            "raters_per_modality": {"text": 2, "audio": 2},
            "experiment": {"collected": str(collected)},
        }
    }
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = config
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return validate_config(config)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rating_frozen")
    keys = design_keys(_config(folder / "collected"))
    return build_study(folder / "study", raters=2, design_keys=keys) | {"folder": folder}


def _serve(experiments: Path, data: Path, answer) -> dict:
    """One participant per modality rates every trial of their list: answer(dyad)."""
    store = CollectionStore(experiments, data, TOKEN)
    server = make_server(store, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client, given = Client(server.server_address[1]), {}
    try:
        for modality in MODALITIES:
            pid = f"5f0c{modality}1a2b3c4d5e6f7a8b"  # a Prolific id's shape: 24 hex digits
            status, session = client.start(modality, pid)
            assert status == 200, session
            for trial in session["trials"]:
                assert client.rate(modality, session, pid, trial, answer(trial["dyad_id"]))[0] == 200
                given[(modality, pid, trial["dyad_id"])] = answer(trial["dyad_id"])
    finally:
        server.shutdown()
        server.server_close()
        store.close()
    return given


def _relabelled(study, folder: Path, swap=("D001", "D002"), touch: str = "") -> Path:
    """The experiments rebuilt on a design where two dyad ids name each other's clips (the same
    lists by label), and optionally one stimulus changed (`touch`: its dyad id)."""
    a, b = swap
    rename = {a: b, b: a}
    stimuli = folder / "stimuli"
    for modality in MODALITIES:
        (stimuli / modality).mkdir(parents=True)
        for path in (study["stimuli"] / modality).iterdir():
            target = stimuli / modality / path.name.replace(path.stem, rename.get(path.stem, path.stem))
            shutil.copyfile(path, target)
            if path.stem == touch:
                with open(stimuli / modality / path.name, "ab") as handle:
                    handle.write(b" ")
    design = study["design"].assign(dyad_id=study["design"]["dyad_id"].map(lambda d: rename.get(d, d)))
    experiments = folder / "experiment"
    for modality in MODALITIES:
        build_experiment(
            modality,
            read_lists(study["surveys"], modality),
            study["assignments"][study["assignments"]["modality"] == modality][["rater_id", "block"]],
            study["blocks"],
            stimuli,
            study["settings"],
            JSPSYCH_DIR,
            experiments / modality,
            design=design.sort_values("dyad_id"),
        )
    return experiments, design


@pytest.mark.heavy  # 5 CPU-s
def test_answers_follow_the_clip_they_were_given_on(study, tmp_path):
    data = tmp_path / "collected"
    truth = dict(zip(study["design"]["dyad_id"], study["design"]["relationship"], strict=True))
    given = _serve(study["experiments"], data, lambda dyad: truth[dyad])  # every answer right
    session = next((data / "text" / "sessions").glob("*.jsonl"))
    lists = json.loads((study["experiments"] / "text" / "lists.json").read_text())
    shown = {t["dyad_id"]: t["shown"] for e in lists.values() for t in e["trials"]}
    for record in map(json.loads, session.read_text().splitlines()[1:]):
        if record["kind"] == "rating":
            assert record["shown"] == shown[record["dyad_id"]]
            assert record["shown"].startswith("I001@") and len(record["shown"].split("#")[1]) == 64

    # the design rebuilt: D001 and D002 now name each other's clips
    experiments, design = _relabelled(study, tmp_path / "rebuilt")
    with pytest.raises(ValueError, match=r"lists .* show other clips than the lists 1 session\(s\)"):
        CollectionStore(experiments, data, TOKEN)
    exports, _, _ = collected_exports(data, experiments / "text")
    export = tmp_path / "text.csv"
    exports.to_csv(export, index=False)
    trials, report = import_ratings(export, experiment_mapping({"practice": []}), "text", design)
    # every answer is right against the clip it was given on, under that clip's new label
    assert len(trials) == sum(1 for m, *_ in given if m == "text") and trials["correct"].all()
    relabelled = {"D001": "D002", "D002": "D001"}
    rated = {relabelled.get(d, d) for (m, _, d) in given if m == "text"}
    assert set(trials["dyad_id"]) == rated


def test_an_answer_on_a_clip_no_longer_shown_is_lost_not_repointed(study, tmp_path):
    data = tmp_path / "collected"
    given = _serve(study["experiments"], data, lambda dyad: "familiar")
    touched = sorted(dyad for modality, _, dyad in given if modality == "text")[0]
    # the same labels, but one text stimulus is no longer the bytes the rater read
    experiments, design = _relabelled(study, tmp_path / "rebuilt", swap=("X", "Y"), touch=touched)
    exports, _, _ = collected_exports(data, experiments / "text")
    export = tmp_path / "text.csv"
    exports.to_csv(export, index=False)
    trials, report = import_ratings(export, experiment_mapping({"practice": []}), "text", design)
    n = report.set_index("reason")["n"]
    assert touched not in set(trials["dyad_id"]) and n["unknown_dyad"] == 1
    example = report.set_index("reason").loc["unknown_dyad", "example"]
    assert f"{touched} (shown I001@" in example and "not in this design" in example
    with pytest.raises(ImportLossError, match="unknown_dyad 1"):
        check_losses(report)


def test_a_design_change_after_collection_stops_naming_sessions_keys_and_ways_forward(study, tmp_path):
    data = tmp_path / "collected"
    check_design(_config(data, **{"sampling.seed": 43}))  # nothing collected yet: no stop
    _serve(study["experiments"], data, lambda dyad: "familiar")
    check_design(_config(data))  # the collected design
    for key, value, said in (
        ("sampling.seed", 43, "sampling.seed: 42 -> 43"),
        ("filters.min_turns", 6, "filters.min_turns: 4 -> 6"),
        ("clips.duration_s", 30.0, "clips.duration_s: 20.0 -> 30.0"),
    ):
        with pytest.raises(DesignChangedError) as stop:
            check_design(_config(data, **{key: value}))
        message = str(stop.value)
        assert said in message
        assert f"text: 1 session(s) in {data}" in message and f"audio: 1 session(s) in {data}" in message
        assert "set the keys above back to their collected values" in message
        assert "a new `results` folder and a new, empty" in message
    # analysis, model and figure settings are not the design
    check_design(_config(data, **{"analysis.seed": 12, "figures.dpi": 100}))


def test_raters_are_pseudonyms_outside_the_collected_folder(study, tmp_path):
    data = tmp_path / "collected"
    given = _serve(study["experiments"], data, lambda dyad: "familiar")
    key_file = data / "pseudonym.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600  # made by the server, owner-only
    key = pseudonym_key(data)
    assert pseudonym_key(data) == key  # made once
    alias = pseudonymizer(key)
    pids = {pid for _, pid, _ in given}
    exports, covariates, sessions = collected_exports(data, study["experiments"] / "audio", alias)
    for frame in (exports, covariates, sessions):
        text = frame.to_csv(index=False)
        assert not any(pid in text for pid in pids)
    assert set(exports["rater_id"]) == {alias(pid) for pid in pids if "audio" in pid}
    assert pseudonym(b"another study's key" * 2, "5f0c") != pseudonym(key, "5f0c")
    assert {"STUDY_ID", "SESSION_ID"}.isdisjoint(sessions.columns)


# --- the workflow: a study with collected data --------------------------------------------------


def _scan(folder: Path, ids, skip: Path) -> list[str]:
    """Files under `folder` (not under `skip`) that hold one of `ids`."""
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_relative_to(skip):
            data = path.read_bytes()
            hits += [f"{path}: {pid}" for pid in ids if pid.encode() in data]
    return hits


DESIGN_CHANGES = (("sampling", "seed", 43), ("filters", "min_turns", 6), ("clips", "duration_s", 30.0))


def _analysis_only(config: dict) -> dict:
    """The config with one analysis setting changed (no design key)."""
    changed = copy.deepcopy(config)
    analysis = changed.setdefault("analysis", {})
    analysis["crowd_resamples"] = analysis.get("crowd_resamples", 1000) + 1
    return changed


def _collected_run(tmp_path_factory, tmp_path: Path) -> tuple[Path, dict, Path, dict, dict]:
    """The shared demo study copied, one participant per modality collected through the server on
    its experiments, and its config reading them (ratings.source experiment): (run, config, data
    folder, {dyad: truth}, the answers given)."""
    from social_workflow import copy_run
    from test_workflow import shared_study, write_config

    run = copy_run(shared_study(tmp_path_factory), tmp_path / "run")
    results = run / "results" / "familiarity"
    config = yaml.safe_load((run / "config.yaml").read_text())
    data = tmp_path / "collected"
    design = pd.read_csv(results / "design" / "design.csv")
    truth = dict(zip(design["dyad_id"], design["relationship"], strict=True))
    given = _serve(results / "ratings" / "experiment", data, lambda dyad: truth[dyad])
    config["ratings"]["source"] = "experiment"
    config["allow_simulated"] = True  # the demo corpus, with real collected ratings
    config["ratings"].setdefault("experiment", {})["collected"] = str(data)
    write_config(run, config)
    return run, config, data, truth, given


@pytest.mark.slow
@pytest.mark.heavy  # the whole study again on the collected ratings (~45 CPU-s)
def test_no_output_of_a_collected_study_holds_a_prolific_id(tmp_path_factory, tmp_path):
    from test_workflow import snakemake

    run, _, data, _, given = _collected_run(tmp_path_factory, tmp_path)
    snakemake(run, "--cores", "2")
    results = run / "results" / "familiarity"
    trials = pd.read_csv(results / "ratings" / "trials.csv")
    pids = sorted({pid for _, pid, _ in given})
    assert len(trials) == len(given) and trials["correct"].all()
    assert set(trials["rater_id"]) == {pseudonym(pseudonym_key(data), pid) for pid in pids}
    per_rater = pd.read_csv(results / "analysis" / "per_rater_sdt.csv")
    assert set(per_rater["rater_id"]) >= set(trials["rater_id"])  # the analysis names pseudonyms
    outputs = [p for p in run.rglob("*") if p.is_file() and not p.is_relative_to(run / ".snakemake")]
    assert len(outputs) > 100  # tables, figures, explorer pages, logs, report
    assert _scan(run, pids, skip=data) == []  # every output, .snakemake's logs too


def _stops(run: Path, changed: dict, said: str, collected: str, new_value: str) -> None:
    """`snakemake -n` on the changed config stops before any job, naming the collection and key."""
    from test_workflow import snakemake, write_config

    write_config(run, changed)
    result = snakemake(run, "-n", check=False)
    message = result.stdout + result.stderr
    assert result.returncode != 0, message[-2000:]
    assert "DesignChangedError" in message and said in message, message[-3000:]
    changed_line = next(line for line in message.splitlines() if said in line)
    assert changed_line.endswith(new_value), changed_line
    assert collected in message and "Ways forward" in message
    assert "Job stats" not in message  # before any job
    print(f"\n{message[message.index('DesignChangedError') :][:1500]}")


def _analysis_reruns_as_before(run: Path, config: dict) -> None:
    from test_workflow import planned_jobs, write_config

    write_config(run, _analysis_only(config))
    planned = planned_jobs(run)
    assert "score_familiarity" in planned, planned
    assert not planned & {"sample_design", "render_stimuli", "collect_ratings", "import_ratings"}


@pytest.mark.slow
@pytest.mark.heavy  # 11 CPU-s
def test_a_collected_study_stops_on_a_design_change_and_shares_no_prolific_id(tmp_path_factory, tmp_path):
    from test_workflow import snakemake

    run, config, data, _, given = _collected_run(tmp_path_factory, tmp_path)
    results = run / "results" / "familiarity"
    pids = sorted({pid for _, pid, _ in given})
    snakemake(run, "--cores", "2", "results/familiarity/ratings/trials.csv")
    trials = pd.read_csv(results / "ratings" / "trials.csv")
    assert len(trials) == len(given) and trials["correct"].all()
    assert set(trials["rater_id"]) == {pseudonym(pseudonym_key(data), pid) for pid in pids}
    assert _scan(results, pids, skip=data) == []  # the collected exports, trials, report, logs
    for section, key, value in DESIGN_CHANGES:  # each alone
        changed = copy.deepcopy(config)
        changed.setdefault(section, {})[key] = value
        _stops(run, changed, f"{section}.{key}: ", f"text: 1 session(s) in {data}", f"-> {json.dumps(value)}")
    _analysis_reruns_as_before(run, config)


@pytest.mark.slow
@pytest.mark.heavy  # 6 CPU-s
def test_survey_exports_stop_on_a_design_change_and_name_raters_by_pseudonym(tmp_path_factory, tmp_path):
    from social_workflow import copy_run
    from test_workflow import shared_study, snakemake, write_config

    run = copy_run(shared_study(tmp_path_factory), tmp_path / "run")
    results = run / "results" / "familiarity"
    config = yaml.safe_load((run / "config.yaml").read_text())
    design = pd.read_csv(results / "design" / "design.csv")
    truth = dict(zip(design["dyad_id"], design["relationship"], strict=True))
    # long CSVs naming the raters by their Prolific ids, read with the default mapping
    exports_dir = tmp_path / "exports"
    exports_dir.mkdir()
    survey_ids = {m: f"5f0cexport{m}0123456789ab" for m in ("text", "audio")}
    label = {"familiar": "Know each other", "stranger": "Strangers"}
    exports = {}
    for modality, pid in survey_ids.items():
        rows = [(pid, dyad, label[truth[dyad]]) for dyad in sorted(truth)]
        exports[modality] = str(exports_dir / f"{modality}.csv")
        frame = pd.DataFrame(rows, columns=["ResponseId", "stimulus", "answer"])
        frame.to_csv(exports[modality], index=False)
    config["ratings"] |= {"source": "exports", "exports": {**exports, "video": ""}}
    config["allow_simulated"] = True  # the demo corpus, with real survey exports
    write_config(run, config)
    snakemake(run, "--cores", "2", "results/familiarity/ratings/trials.csv")
    trials = pd.read_csv(results / "ratings" / "trials.csv")
    assert len(trials) == 2 * len(truth) and trials["correct"].all()
    assert set(trials["rater_id"]) == {pseudonym(pseudonym_key(exports_dir), p) for p in survey_ids.values()}
    recorded = json.loads((exports_dir / "text.csv.design.json").read_text())
    assert set(recorded["shown"]["text"]) == set(truth) and recorded["keys"]["sampling.seed"] == 42
    assert _scan(results, list(survey_ids.values()), skip=exports_dir) == []
    changed = copy.deepcopy(config)
    changed.setdefault("sampling", {})["seed"] = 43
    _stops(run, changed, "sampling.seed: ", f"text: survey export {exports['text']}", "-> 43")
    _analysis_reruns_as_before(run, config)


def test_git_ignores_collected_data_by_default():
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    private = [
        "collected/text/sessions/T001-0a1b2c.jsonl",
        "studies/friendbench/collected/manifest.json",
        "jatos_results_20260101120000.zip",
        "jatos_results_data_20260101120000.txt",
        "exports/pseudonym.key",
        "data/exports/text.csv",
    ]
    for path in private:
        result = subprocess.run(["git", "-C", str(repo), "check-ignore", "--no-index", "-q", path])
        assert result.returncode == 0, f"{path} is not ignored by git"
    shared = subprocess.run(["git", "-C", str(repo), "check-ignore", "--no-index", "-q", "docs/outputs.md"])
    assert shared.returncode == 1
