"""Config layering (no demo setting leaks into a real study) and the released-data-set design source.

Unit tests: a release-shaped data set in CSV, JSONL and parquet imports alike, every row is
accounted for, a missing column names the file and the mapping key, and configs that mix real
and simulated inputs stop. Workflow tests (slow): the seamless example's dry run plans no demo
job; a tiny release (8 dyads) runs end to end and its metrics are those of its own predictions,
and the JSONL and parquet copies import to the same bytes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from omnisocial.config import ConfigError, check_study, load_config, validate_config
from omnisocial.familiarity.release import import_design, import_predictions

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
DEMO_RULES = {"make_demo_corpus", "simulate_ratings", "social_demo"}
FORMATS = ("csv", "jsonl", "parquet")
MODALITIES = ("text", "audio", "video")

DESIGN_MAPPING = {
    "dyad_id": "pair",
    "relationship": "rel",
    "relationship_values": {"familiar": ["Friends"], "stranger": ["Strangers"]},
    "site": "site",
    "gender_mix": "genders",
    "clip_start": "t0",
    "clip_end": "t1",
    "text": "transcript_file",
}
PREDICTIONS_MAPPING = {
    "model": "system",
    "modality": "input",
    "item_id": "pair",
    "label": "guess",
    "confidence": "p",
    "label_values": {"familiar": ["1"], "stranger": ["0"]},
    "empty_values": ["na"],
    "model_prefix": "release:",
}


def write_table(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)
    return path


def make_release(folder: Path, fmt: str, n_dyads: int = 8, seed: int = 3) -> dict[str, Path]:
    """A FriendBench-shaped release: metadata, human ratings (all modalities in one file), predictions.

    Extra prediction rows: one unknown dyad, one duplicate, one invalid label, one non-answer.
    """
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "transcripts").mkdir(exist_ok=True)
    dyads = [f"FB{i:03d}" for i in range(n_dyads)]
    rel = ["Friends" if i % 2 == 0 else "Strangers" for i in range(n_dyads)]
    for dyad in dyads:
        (folder / "transcripts" / f"{dyad}.txt").write_text(f"A: hello ({dyad})\nB: hi there\n")
    metadata = pd.DataFrame(
        {
            "pair": dyads,
            "rel": rel,
            "site": ["V00" if i < n_dyads // 2 else "V01" for i in range(n_dyads)],
            "genders": ["female-male"] * n_dyads,
            "t0": [5.0 + i for i in range(n_dyads)],
            "t1": [25.0 + i for i in range(n_dyads)],
            "transcript_file": [f"transcripts/{d}.txt" for d in dyads],
        }
    )
    truth = dict(zip(dyads, ["familiar" if r == "Friends" else "stranger" for r in rel], strict=True))
    ratings = pd.DataFrame(
        [
            {
                "rater_id": f"{m[0]}{r}",
                "dyad_id": d,
                "modality": m,
                "response": truth[d]
                if rng.random() < 0.7
                else ("stranger" if truth[d] == "familiar" else "familiar"),
            }
            for m in MODALITIES
            for r in range(4)
            for d in dyads
        ]
    )
    rows = []
    for model in ("alpha", "beta"):
        for m in MODALITIES:
            for d in dyads:
                right = rng.random() < 0.75
                label = truth[d] if right else ("stranger" if truth[d] == "familiar" else "familiar")
                guess = "1" if label == "familiar" else "0"
                p = round(float(rng.uniform(0.5, 1.0)), 3)
                rows.append({"system": model, "input": m, "pair": d, "guess": guess, "p": p})
    rows[0]["guess"] = "na"  # a non-answer: imported with an empty label
    rows.append({"system": "alpha", "input": "text", "pair": "NOPE", "guess": "1", "p": 0.9})
    rows.append({**rows[1]})  # duplicate
    rows.append({"system": "beta", "input": "video", "pair": "FB999", "guess": "1", "p": 0.6})
    rows.append({"system": "gamma", "input": "audio", "pair": dyads[0], "guess": "maybe", "p": 0.6})
    predictions = pd.DataFrame(rows)
    return {
        "metadata": write_table(metadata, folder / f"metadata.{fmt}"),
        "ratings": write_table(ratings, folder / f"human_ratings.{fmt}"),
        "predictions": write_table(predictions, folder / f"model_predictions.{fmt}"),
    }


# --- unit tests --------------------------------------------------------------------------------


def test_release_formats_import_alike(tmp_path):
    tables = {}
    for fmt in FORMATS:
        files = make_release(tmp_path / fmt, fmt)
        design, manifest, report = import_design(files["metadata"], DESIGN_MAPPING)
        predictions, pred_report = import_predictions(files["predictions"], PREDICTIONS_MAPPING, design)
        tables[fmt] = (
            design,
            manifest.drop(columns="path"),
            predictions,
            pred_report.drop(columns=["file", "example"]),
        )
        # where the first unknown dyad is: the CSV's line, the JSONL / parquet record (1-based)
        where = pred_report.set_index("reason").loc["unknown_dyad", "example"]
        assert where.startswith("row 50: " if fmt == "csv" else "record 49: "), where
        assert len(design) == 8 and set(design["relationship"]) == {"familiar", "stranger"}
        assert design["interaction_id"].tolist() == design["dyad_id"].tolist()
        assert (manifest["modality"] == "text").all() and len(manifest) == 8
        counts = pred_report.set_index("reason")["n"]
        assert counts["imported"] == 48 and counts["unknown_dyad"] == 2
        assert counts["duplicate"] == 1 and counts["invalid_label"] == 1
        assert counts.sum() == len(pd.read_parquet(files["predictions"]) if fmt == "parquet" else
                                   pd.read_csv(files["predictions"]) if fmt == "csv" else
                                   pd.read_json(files["predictions"], lines=True))  # fmt: skip
        assert (predictions["label"] == "").sum() == 1
        assert predictions["model"].str.startswith("release:").all()
    for fmt in FORMATS[1:]:
        for ours, theirs in zip(tables["csv"], tables[fmt], strict=True):
            pd.testing.assert_frame_equal(ours, theirs)


def test_missing_column_names_file_and_key(tmp_path):
    files = make_release(tmp_path, "csv")
    with pytest.raises(
        ValueError, match=r"metadata\.csv: no column 'relationship' for release\.mapping\.relationship"
    ):
        import_design(files["metadata"], {**DESIGN_MAPPING, "relationship": "relationship"})
    design, _, _ = import_design(files["metadata"], DESIGN_MAPPING)
    with pytest.raises(
        ValueError,
        match=r"model_predictions\.csv: no column 'label' for release\.predictions\.mapping\.label",
    ):
        import_predictions(files["predictions"], {**PREDICTIONS_MAPPING, "label": "label"}, design)


def test_schema_defaults_are_a_real_study():
    config = validate_config({})
    assert config["analysis"]["glmm"] == {"draws": 2000, "tune": 1000, "chains": 4}
    assert config["ratings"]["source"] == "exports" and config["corpus"]["source"] == "seamless"
    assert config["social"]["enabled"] is False and config["models"] == []
    assert config["ratings"]["raters_per_modality"] == {"text": 90, "audio": 90, "video": 90}


def test_mixing_real_and_simulated_inputs_stops_naming_the_keys():
    config = validate_config({"corpus": {"root": "/data/x"}, "ratings": {"source": "simulated"},
                              "social": {"enabled": True, "source": "demo"}})  # fmt: skip
    with pytest.raises(ConfigError) as error:
        check_study(config)
    text = str(error.value)
    assert "corpus.source=seamless" in text and "ratings.source=simulated" in text
    assert "social.source=demo" in text and "allow_simulated" in text
    check_study({**config, "allow_simulated": True})
    with pytest.raises(ConfigError, match="corpus.root: required"):
        check_study(validate_config({}))
    release = {"mapping": {"dyad_id": "pair", "relationship": "rel"}}
    with pytest.raises(ConfigError, match="release.metadata: required"):
        check_study(validate_config({"study": {"design_source": "release"}, "release": release}))
    load_config(ROOT / "config" / "demo.yaml")  # all demo: fine


# --- workflow tests ----------------------------------------------------------------------------


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [*SNAKEMAKE, "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
        )
    return result


def planned_jobs(workdir: Path, *args: str) -> set[str]:
    output = snakemake(workdir, "-n", *args).stdout
    stats = output.split("Job stats:")[1].split("total")[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+\s*$", stats, re.M)}


def seamless_example(tmp_path: Path) -> dict:
    """config/seamless.example.yaml with its data folders (empty) under tmp_path, written as config.yaml."""
    text = (ROOT / "config" / "seamless.example.yaml").read_text()
    config = yaml.safe_load(text.replace("/data/", f"{tmp_path}/data/"))
    Path(config["corpus"]["root"]).mkdir(parents=True)
    for path in config["ratings"]["exports"].values():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("ResponseId,stimulus,answer\n")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config


@pytest.mark.slow
def test_seamless_example_plans_no_demo_job(tmp_path):
    config = seamless_example(tmp_path)
    planned = planned_jobs(tmp_path)
    assert {"ingest_corpus", "import_ratings", "glmm"} <= planned
    assert not planned & DEMO_RULES, planned & DEMO_RULES
    assert not any(rule.startswith(("social", "socialomni", "duplexeval")) for rule in planned)
    # the same config with the demo's simulated panel stops before any job, naming the keys
    config["ratings"]["source"] = "simulated"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(tmp_path, "-n", check=False)
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "corpus.source=seamless" in said and "ratings.source=simulated" in said
    assert not (tmp_path / "results").exists()


def release_config(files: dict[str, Path], folder: Path) -> dict:
    per_modality = {
        m: {"rater_id": "rater_id", "dyad_id": "dyad_id", "response": "response",
            "require": {"modality": [m]},
            "response_values": {"familiar": ["familiar"], "stranger": ["stranger"]}}
        for m in MODALITIES
    }  # fmt: skip
    return {
        "results": "results/release",
        "study": {"design_source": "release"},
        "release": {
            "root": str(folder),
            "metadata": str(files["metadata"]),
            "mapping": DESIGN_MAPPING,
            "predictions": {"path": str(files["predictions"]), "mapping": PREDICTIONS_MAPPING},
        },
        "ratings": {
            "source": "exports",
            "n_blocks": 2,
            "blocks_per_rater": 1,
            "raters_per_modality": {"text": 4, "audio": 4, "video": 4},
            "exports": {m: str(files["ratings"]) for m in MODALITIES},
            "mapping": per_modality,
        },
        # a registry model beside the released predictions, on the release's transcripts
        "models": [{"name": "chance", "backend": "baseline", "model": "chance", "modalities": ["text"]}],
        "inference": {"modalities": ["text"], "prompt_variants": ["v1"]},
        "analysis": {
            "crowd_resamples": 20,
            "glmm": {"draws": 60, "tune": 60, "chains": 1},
            "rasch": {"draws": 60, "tune": 60, "chains": 1},
        },
    }


@pytest.mark.slow
def test_release_rebuilds_the_study_without_inference(tmp_path):
    tables = {}
    for fmt in FORMATS:
        workdir = tmp_path / fmt
        files = make_release(workdir / "release", fmt)
        (workdir / "config.yaml").write_text(
            yaml.safe_dump(release_config(files, workdir / "release"), sort_keys=False)
        )
        if fmt == "csv":
            planned = planned_jobs(workdir)
            assert {
                "import_release",
                "import_release_predictions",
                "import_ratings",
                "glmm",
                "rasch",
            } <= planned
            assert not planned & {*DEMO_RULES, "ingest_corpus", "sample_design", "baseline_predictions"}
            snakemake(workdir, "--cores", "2")
        else:  # the other formats: the imports only, compared byte for byte
            targets = ["design/design.csv", "release/predictions.csv", "ratings/trials.csv"]
            snakemake(workdir, "--cores", "2", *(f"results/release/{t}" for t in targets))
        results = workdir / "results" / "release"
        tables[fmt] = {
            name: (results / name).read_bytes()
            for name in ("design/design.csv", "release/predictions.csv", "ratings/trials.csv")
        }
        if fmt != "csv":
            continue
        metrics = pd.read_csv(results / "analysis" / "metrics.csv", keep_default_na=False)
        released = pd.read_csv(results / "release" / "predictions.csv", keep_default_na=False)
        answered = released[released["label"] != ""]
        expected = (
            (answered["label"] == answered["truth"]).groupby([answered["model"], answered["modality"]]).mean()
        )
        got = metrics.set_index(["model", "modality"])["accuracy"]
        for key, value in expected.items():
            assert got[key] == pytest.approx(value), key
        assert {"chance@v1"} <= set(metrics["model"])  # the registry model sits beside them
        report = pd.read_csv(results / "release" / "predictions_import_report.csv").set_index("reason")["n"]
        assert report.sum() == len(pd.read_csv(files["predictions"]))
        trials = pd.read_csv(results / "ratings" / "trials.csv")
        assert len(trials) == 3 * 4 * 8
        for name in ("metrics", "per_rater_sdt", "glmm_summary", "rasch_difficulty", "tost"):
            table = pd.read_csv(results / "analysis" / f"{name}.csv", keep_default_na=False)
            assert not table["source"].str.contains("simulated", case=False).any(), name
        for name in ("accuracy", "sdt", "crowds", "difficulty", "glmm", "calibration", "power"):
            assert (results / "figures" / f"{name}.png").stat().st_size > 0
        assert not (workdir / "data").exists()  # no demo corpus, no social demo
    for fmt in FORMATS[1:]:
        assert tables[fmt] == tables["csv"], fmt
