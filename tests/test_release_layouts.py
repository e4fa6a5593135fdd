"""Both layouts the FriendBench release has been seen in (issue 49), each read by its preset:
`validation/` (CSV: metadata, human ratings, model predictions, released baselines) with
config/friendbench_release.example.yaml, and `val/` (JSON lines: metadata and human responses,
no predictions: a ratings-only study) with config/friendbench_val.example.yaml. Which layout a
folder holds is detected and said; each preset runs to its figures with the command
docs/friendbench-release.md shows, on files shaped like the layout.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from doc_commands import REPO, run_in_clean_shell
from test_rating_workflow import checkout, ran_rules, run_documented

from omnisocial.familiarity.release import detect_layout

MODALITIES = ("text", "audio", "video")
N_DYADS, N_RATERS = 8, 4


def _dyads() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dyad_id": [f"FB{i:03d}" for i in range(N_DYADS)],
            "relationship": ["Friends" if i % 2 == 0 else "strangers" for i in range(N_DYADS)],
            "site": ["V00" if i < N_DYADS // 2 else "V01" for i in range(N_DYADS)],
            "gender_mix": ["female-male"] * N_DYADS,
            "clip_start": [5.0 + i for i in range(N_DYADS)],
            "clip_end": [25.0 + i for i in range(N_DYADS)],
        }
    )


def _ratings(dyads: pd.DataFrame, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    truth = dict(zip(dyads["dyad_id"], dyads["relationship"].str.lower().str.startswith("f"), strict=True))
    rows = []
    for modality in MODALITIES:
        for rater in range(N_RATERS):
            for dyad, familiar in truth.items():
                right = rng.random() < 0.7
                rows.append(
                    {
                        "rater_id": f"{modality[0]}{rater}",
                        "dyad_id": dyad,
                        "modality": modality,
                        "response": "familiar" if familiar == right else "stranger",
                    }
                )
    return pd.DataFrame(rows)


def _predictions(dyads: pd.DataFrame, models: tuple[str, ...], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model in models:
        for modality in MODALITIES:
            for dyad, relationship in zip(dyads["dyad_id"], dyads["relationship"], strict=True):
                familiar = relationship.lower().startswith("f")
                right = rng.random() < 0.75
                rows.append(
                    {
                        "model": model,
                        "modality": modality,
                        "dyad_id": dyad,
                        "prediction": "familiar" if familiar == right else "stranger",
                        "confidence": round(float(rng.uniform(0.5, 1.0)), 3),
                    }
                )
    return pd.DataFrame(rows)


def validation_layout(root: Path) -> Path:
    """validation/data/metadata.csv (with stimulus paths), validation/ratings/{human_ratings,
    model_predictions}.csv and validation/baselines/results.csv."""
    dyads = _dyads()
    for modality, suffix in (("transcript", "txt"), ("audio", "wav"), ("video", "mp4")):
        folder = root / "validation" / "stimuli" / modality
        folder.mkdir(parents=True)
        for dyad in dyads["dyad_id"]:
            (folder / f"{dyad}.{suffix}").write_text(f"A: hello ({dyad})\nB: hi\n")
        dyads[f"{modality}_path"] = [f"validation/stimuli/{modality}/{d}.{suffix}" for d in dyads["dyad_id"]]
    for folder in ("data", "ratings", "baselines"):
        (root / "validation" / folder).mkdir(parents=True)
    dyads.to_csv(root / "validation" / "data" / "metadata.csv", index=False)
    _ratings(dyads).to_csv(root / "validation" / "ratings" / "human_ratings.csv", index=False)
    _predictions(dyads, ("gpt-4o", "gemini-2.5-pro"), 5).to_csv(
        root / "validation" / "ratings" / "model_predictions.csv", index=False
    )
    _predictions(dyads, ("behavioural", "chance"), 7).to_csv(
        root / "validation" / "baselines" / "results.csv", index=False
    )
    return root


def val_layout(root: Path) -> Path:
    """val/metadata.jsonl and val/human_responses.jsonl."""
    (root / "val").mkdir(parents=True)
    dyads = _dyads()
    dyads.to_json(root / "val" / "metadata.jsonl", orient="records", lines=True)
    _ratings(dyads).to_json(root / "val" / "human_responses.jsonl", orient="records", lines=True)
    return root


def test_the_layout_of_a_release_folder_is_detected_and_said(tmp_path):
    name, said = detect_layout(validation_layout(tmp_path / "a"))
    assert name == "validation/ (CSV)"
    assert said == (
        f"release.root {tmp_path / 'a'} holds the FriendBench layout validation/ (CSV): "
        "validation/data/metadata.csv, validation/ratings/human_ratings.csv, "
        "validation/ratings/model_predictions.csv, validation/baselines/results.csv; dyad metadata, "
        "human ratings, model predictions and the released baselines; preset "
        "config/friendbench_release.example.yaml"
    )
    (tmp_path / "a" / "validation" / "baselines" / "results.csv").unlink()
    assert "(not there: validation/baselines/results.csv)" in detect_layout(tmp_path / "a")[1]
    (tmp_path / "a" / "validation" / "ratings" / "human_ratings.csv").unlink()  # models only
    name, said = detect_layout(tmp_path / "a")
    assert name == "validation/ (CSV)" and "(not there: validation/ratings/human_ratings.csv, " in said
    name, said = detect_layout(val_layout(tmp_path / "b"))
    assert name == "val/ (JSON lines)" and "preset config/friendbench_val.example.yaml" in said
    assert "no model predictions (a ratings-only study)" in said
    name, said = detect_layout(tmp_path)
    assert name is None and "holds neither FriendBench layout (val/metadata.jsonl + " in said


def preset(name: str, root: Path | None = None) -> dict:
    """The preset (pointed at `root`, or at data/friendbench as shipped) with demo-sized samplers."""
    text = (REPO / "config" / name).read_text()
    if root is not None:
        text = text.replace("data/friendbench", str(root))
    config = yaml.safe_load(text)
    config["ratings"]["raters_per_modality"] = dict.fromkeys(MODALITIES, N_RATERS)
    config["ratings"] |= {"n_blocks": 2, "blocks_per_rater": 1}
    config["analysis"] = {
        "crowd_resamples": 20,
        "calibration_bootstrap": 20,
        "glmm": {"draws": 60, "tune": 60, "chains": 1},
        "rasch": {"draws": 60, "tune": 60, "chains": 1},
    }
    return config


FIGURES = [
    "accuracy",
    "sdt",
    "crowds",
    "difficulty",
    "glmm",
    "calibration",
    "power",
    "funnel",
    "coverage",
    "confusion",
    "cell_accuracy",
    "prompt_sensitivity",
    "person_item_map",
]


GENERATE = "omnisocial friendbench-demo data/friendbench"


@pytest.mark.slow
@pytest.mark.heavy  # two releases of their own to their figures and reports (~100 CPU-s)
def test_the_release_examples_run_to_their_figures(tmp_path):
    """Each layout's preset, run as docs/friendbench-release.md shows it, on the release the page's
    generator writes (issue 60: both layouts in data/friendbench, where the presets read): the
    validation/ one imports the models' predictions and the released baselines; the val/ one is
    ratings-only and its model figures say "no model predictions"; the validation/ one writes the
    paper's numbers beside the published ones. Only the samplers are shrunk."""
    study = checkout(tmp_path / "study", make=True)
    said = run_documented(GENERATE, study)
    root = study / "data" / "friendbench"
    assert f"a generated release (both layouts, {N_DYADS} dyads) in data/friendbench" in said
    for name in ("friendbench_release.example.yaml", "friendbench_val.example.yaml"):
        config = preset(name)
        assert config["release"]["root"] == "data/friendbench"  # as shipped
        (study / "config" / name).unlink()
        (study / "config" / name).write_text(yaml.safe_dump(config, sort_keys=False))
        said = run_documented(f"snakemake --cores all --configfile config/{name}", study)
        assert "omnisocial: release.root data/friendbench holds the FriendBench layout" in said
        assert "a small GENERATED release (omnisocial friendbench-demo), not the real data" in said
        assert "import_release" in ran_rules(said)
        results = study / config["results"]
        # the summary says the generated release is simulated, not a real data set
        assert "simulated (generated release: omnisocial friendbench-demo)" in said
        assert "SIMULATED DATA" in (results / "summary" / "summary.md").read_text()
        for figure in FIGURES:
            assert (results / "figures" / f"{figure}.png").stat().st_size > 0, (name, figure)
        metrics = pd.read_csv(results / "analysis" / "metrics.csv", keep_default_na=False)
        models = sorted(set(metrics.loc[metrics["rater_type"] == "model", "model"]))
        trials = pd.read_csv(results / "ratings" / "trials.csv")
        assert len(trials) == len(MODALITIES) * N_RATERS * N_DYADS
        manifest = pd.read_csv(results / "stimuli" / "manifest.csv")
        if name == "friendbench_val.example.yaml":
            assert "val/ (JSON lines)" in said
            assert models == [] and "import_release_predictions" not in ran_rules(said)
            log = (results / "logs" / "fam_figures.log").read_text()
            assert "Traceback" not in log
        else:
            assert "validation/ (CSV)" in said
            assert len(manifest) == len(MODALITIES) * N_DYADS  # the generated transcripts, audio, video
            stimuli = results / "stimuli"  # paths relative to the manifest's folder
            assert all((stimuli / path).resolve().is_relative_to(root.resolve()) for path in manifest["path"])
            assert all((stimuli / path).stat().st_size > 0 for path in manifest["path"])
            released = ["release:behavioural", "release:chance", "release:gemini-2.5-pro", "release:gpt-4o"]
            assert models == released
            report = pd.read_csv(results / "release" / "predictions_import_report.csv")
            imported = report.groupby("reason")["n"].sum()["imported"]  # one row per file and reason
            assert imported == 4 * 3 * N_DYADS and set(report.loc[report["n"] > 0, "reason"]) == {"imported"}
            assert report["file"].str.endswith("baselines/results.csv").any()
            # the paper's numbers (rule paper_familiarity, in `all`), beside the published ones
            tex = (results / "paper" / "numbers.tex").read_text()
            assert "\\newcommand{\\AudioOverTextPP}{" in tex and "\\newcommand{\\DesignDyads}{8} %" in tex
            draft = (results / "paper" / "results.md").read_text()
            assert (
                "| `\\DesignDyads` | 3 sites x 2 relationships x 2 gender mixes x 8 dyads | 96 | 8 |" in draft
            )
    reports_side_by_side(study)


def reports_side_by_side(study: Path) -> None:
    """Issue 60: `make report CONFIG=...` writes each study's report into its own results folder
    (the second does not overwrite the first), says what that study ran, and prints no "Loading
    script code" line per rule."""
    written = {}
    for name, results in (
        ("friendbench_release.example.yaml", "friendbench_release"),
        ("friendbench_val.example.yaml", "friendbench_val"),
    ):
        result = run_in_clean_shell(f"make report CONFIG=config/{name}", study, setup=None, timeout=900)
        said = result.stdout + result.stderr
        assert result.returncode == 0, said[-4000:]
        assert not re.search("^Loading script code", said, re.M) and f"results/{results}/report.html" in said
        written[results] = (study / "results" / results / "report.html").read_bytes()
    assert not (study / "results" / "report.html").exists()
    release, val = written["friendbench_release"], written["friendbench_val"]
    assert (study / "results" / "friendbench_release" / "report.html").read_bytes() == release  # kept
    assert b"model predictions are imported" in release and b"model predictions are imported" not in val
    for page in (release, val):
        assert b"the familiarity benchmark alone" in page and b"SocialOmni-style" not in page


@pytest.mark.slow
@pytest.mark.heavy  # a release of its own to its figures (~25 CPU-s)
def test_a_models_only_release_runs_to_its_figures(tmp_path):
    """The validation/ layout without human ratings, read with ratings.raters_per_modality: {}:
    every figure is drawn, from the models' predictions, and says "no human ratings" where it
    needs them (the GLMM is fitted to human trials only)."""
    study = checkout(tmp_path / "study")
    root = validation_layout(tmp_path / "download")
    (root / "validation" / "ratings" / "human_ratings.csv").unlink()
    name = "friendbench_release.example.yaml"
    config = preset(name, root)
    config["ratings"] |= {"raters_per_modality": {}, "exports": {}, "mapping": {}}
    (study / "config" / name).unlink()
    (study / "config" / name).write_text(yaml.safe_dump(config, sort_keys=False))
    said = run_documented(f"snakemake --cores all --configfile config/{name}", study)
    assert "(not there: validation/ratings/human_ratings.csv)" in said
    results = study / config["results"]
    for figure in FIGURES:
        assert (results / "figures" / f"{figure}.png").stat().st_size > 0, figure
    assert pd.read_csv(results / "ratings" / "trials.csv").empty
    assert pd.read_csv(results / "ratings" / "assignments.csv").empty
    surveys = results / "ratings" / "surveys"
    assert [p.name for p in surveys.rglob("*") if not p.name.startswith(".")] == []  # no survey list
    assert pd.read_csv(results / "analysis" / "glmm_contrasts.csv").empty
    metrics = pd.read_csv(results / "analysis" / "metrics.csv", keep_default_na=False)
    assert set(metrics["rater_type"]) == {"model"}
    assert len(metrics) == 4 * len(MODALITIES)  # 2 models and 2 released baselines
    rasch = pd.read_csv(results / "analysis" / "rasch_difficulty.csv")
    assert set(rasch["rater_type"]) == {"model"} and len(rasch) == len(MODALITIES) * N_DYADS
    log = (results / "logs" / "glmm.log").read_text()
    assert "no human trials (a models-only study): no GLMM fit" in log
