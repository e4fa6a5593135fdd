"""The familiarity study's glue (omnisocial.familiarity): requests, results, ratings, analysis, figures.

Small hand-built frames throughout; the MCMC tests use tiny sampler settings and are marked slow.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from scipy import stats
from statsmodels.stats.multitest import multipletests
from test_glmm_rasch import assert_pp_contrasts_match_bambi
from test_ratings import GENDERS, SITES
from test_ratings import make_design as ratings_design

from omnisocial.familiarity import analysis, inference
from omnisocial.familiarity import figures as fam_figures
from omnisocial.familiarity import ratings as fam_ratings
from omnisocial.familiarity.baselines import chance_predictions
from omnisocial.familiarity.contracts import (
    ANALYSIS_TABLES,
    FEATURES_TABLE,
    MODEL_SOURCE,
    RATED_TRIALS,
    RESPONSES,
    STIMULI_MANIFEST,
    SURVEY_SOURCE,
    split_variant,
    variant_name,
)
from omnisocial.familiarity.ratings import SIMULATED_LABEL
from omnisocial.models.base import Reply
from omnisocial.models.cluster import placement
from omnisocial.models.registry import RegistryError
from omnisocial.prompt_templates import load_template
from omnisocial.settings import Glmm, Rasch
from omnisocial.stats.sdt import MAJORITY_MODEL, score_predictions
from omnisocial.summary import convergence_section
from omnisocial.tables import PREDICTIONS

ROOT = Path(__file__).resolve().parents[1]


def make_design(n_per_cell: int = 1, sites=SITES, genders=GENDERS) -> pd.DataFrame:
    """The ratings tests' design, with 2 s clips (short stimuli keep these tests fast)."""
    return ratings_design(n_per_cell, sites, genders, clip_end=12.0)


def write_stimuli(folder: Path, design: pd.DataFrame, sr: int = 8000) -> pd.DataFrame:
    """Transcripts, stereo / mix wavs and (fake) videos for every dyad, and their manifest."""
    rows = []
    rng = np.random.default_rng(0)
    for dyad in design.itertuples(index=False):
        text = folder / "media" / "text" / f"{dyad.dyad_id}.txt"
        text.parent.mkdir(parents=True, exist_ok=True)
        text.write_text(f"[00:00.0] A: hello from {dyad.dyad_id}\n[00:01.0] B: hi\n")
        t = np.arange(2 * sr) / sr
        pitch = 120 if dyad.relationship == "familiar" else 200
        left = 0.3 * np.sin(2 * np.pi * pitch * t) * (t < 1.0)
        right = 0.3 * np.sin(2 * np.pi * (pitch + 60) * t) * (t >= 0.9)
        stereo = np.column_stack([left, right]) + 0.001 * rng.standard_normal((len(t), 2))
        paths = {
            ("audio", "stereo"): folder / "media" / "audio_stereo" / f"{dyad.dyad_id}.wav",
            ("audio", "mix"): folder / "media" / "audio" / f"{dyad.dyad_id}.wav",
            ("video", "side_by_side"): folder / "media" / "video" / f"{dyad.dyad_id}.mp4",
        }
        for path in paths.values():
            path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(paths[("audio", "stereo")], stereo, sr)
        sf.write(paths[("audio", "mix")], stereo.mean(axis=1), sr)
        paths[("video", "side_by_side")].write_bytes(b"not really a video " + dyad.dyad_id.encode())
        for (modality, variant), path in [(("text", "transcript"), text), *paths.items()]:
            rows.append(
                {
                    "dyad_id": dyad.dyad_id,
                    "modality": modality,
                    "variant": variant,
                    "path": path.relative_to(folder).as_posix(),
                    "duration_s": 2.0,
                    "sha256": "x",
                    "clip_start": dyad.clip_start,
                    "clip_end": dyad.clip_end,
                }
            )
    return STIMULI_MANIFEST.validate(pd.DataFrame(rows))


def segments_for(design: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for dyad in design.itertuples(index=False):
        start = dyad.clip_start
        rows += [
            {"interaction_id": dyad.interaction_id, "speaker": "a", "start": start - 0.5, "end": start + 1.0},
            {"interaction_id": dyad.interaction_id, "speaker": "b", "start": start + 0.9, "end": start + 2.5},
            {"interaction_id": dyad.interaction_id, "speaker": "a", "start": start + 5.0, "end": start + 6.0},
        ]
    frame = pd.DataFrame(rows)
    return frame.assign(text="one two three", source="transcript")


# a prompted model (its calls go to a ScriptedBackend, never to this address) and a baseline
ENTRY = {
    "name": "toy",
    "backend": "openai",
    "model": "toy-omni",
    "base_url": "http://127.0.0.1:9/v1",
    "modalities": ["text", "audio"],
}
BASELINE = {"name": "coin", "backend": "baseline", "model": "chance", "modalities": ["text", "audio"]}


class ScriptedBackend:
    """A backend answering from a script: item -> reply text, or an error; counts its calls."""

    name = "scripted"
    modalities = ("text", "audio", "video")
    concurrency = 1
    batch_size = 8

    def __init__(self, answers: dict[str, object]):
        self.answers = answers
        self.calls = 0

    def fingerprint(self) -> str:
        return "scripted:1"

    def generate(self, requests):
        replies = []
        for request in requests:
            self.calls += 1
            answer = self.answers.get(request.item_id, "")
            if isinstance(answer, Exception):
                replies.append(Reply(text=None, error=str(answer)))
            else:
                replies.append(Reply(text=str(answer)))
        return replies


# --- registry and requests ----------------------------------------------------------------


def test_registry_fails_fast_naming_the_key():
    with pytest.raises(RegistryError, match=r"models\[0\].*backend"):
        inference.load_models([{"name": "x", "backend": "nope", "model": "m"}])
    with pytest.raises(RegistryError, match="reserved"):
        inference.load_models([{"name": "baselines", "backend": "baseline", "model": "chance"}])
    registry = inference.load_models([ENTRY])
    assert registry["toy"]["generation"]["temperature"] == 0  # defaults filled


def test_resources_and_behavioural_entry():
    local = {"name": "q", "backend": "transformers", "model": "/m", "options": {"family": "chat"}}
    assert placement(local, 2000, 40000) == {"gpu": 1, "mem_mb": 40000}
    on_cpu = {**local, "options": {"family": "chat", "device": "cpu"}}
    assert placement(on_cpu, 2000, 40000)["gpu"] == 0
    assert placement(ENTRY, 2000, 40000) == {"gpu": 0, "mem_mb": 2000}
    behavioural = {"name": "b", "backend": "baseline", "model": "behavioural"}
    assert inference.needs_baseline_predictions(behavioural)
    filled = inference.with_baseline_predictions(behavioural, "p/baselines.csv")
    assert filled["options"]["predictions"] == "p/baselines.csv"
    assert "options" not in behavioural  # the registry entry itself is left alone
    assert inference.with_baseline_predictions(ENTRY, "p.csv") == ENTRY
    assert split_variant(variant_name("a@b", "v2")) == ("a@b", "v2")
    assert split_variant("baseline_chance") == ("baseline_chance", "")


def test_requests_per_modality_and_variant_carry_the_right_media(tmp_path):
    design = make_design(sites=("s1",))  # 4 dyads
    manifest = write_stimuli(tmp_path, design)
    planned = inference.build_requests(
        inference.load_models([ENTRY])["toy"],
        manifest,
        design,
        tmp_path,
        ["text", "audio", "video"],
        ["v1", "v2"],
    )
    assert len(planned) == 4 * 2 * 2  # the entry has no video
    assert {(p.modality, p.variant) for p, _ in planned} == {
        (m, v) for m in ("text", "audio") for v in ("v1", "v2")
    }
    for plan, request in planned:
        assert request.item_id == plan.item_id
        assert plan.model == f"toy@{plan.variant}"
        assert plan.truth == design.set_index("dyad_id").loc[plan.item_id, "relationship"]
        assert plan.template_sha256 == load_template("familiarity", plan.modality, plan.variant)[1]
        assert "response_schema" in request.settings
        if plan.modality == "text":
            assert request.media == {}
            assert f"hello from {plan.item_id}" in request.prompt
        else:
            assert request.media == {
                "audio": (tmp_path / "media" / "audio" / f"{plan.item_id}.wav").resolve()
            }
            assert "relationship_label" in request.prompt
    # text-only study: no audio requests
    # a baseline reads no prompt: once per dyad and modality, named without a variant
    once = inference.build_requests(
        inference.load_models([BASELINE])["coin"], manifest, design, tmp_path, ["text", "audio"], ["v1", "v2"]
    )
    assert len(once) == 4 * 2
    assert {(p.model, p.variant, p.template_sha256, r.prompt) for p, r in once} == {("coin", "", "", "")}
    assert {p.modality for p, r in once if r.media} == {"audio"}
    only_text = inference.build_requests(ENTRY, manifest, design, tmp_path, ["text"], ["v1"])
    assert {p.modality for p, _ in only_text} == {"text"}
    # a dyad without its stimulus is an error naming it
    broken = manifest[~((manifest["dyad_id"] == "D002") & (manifest["modality"] == "audio"))]
    with pytest.raises(ValueError, match="D002"):
        inference.build_requests(ENTRY, broken, design, tmp_path, ["audio"], ["v1"])


def test_a_failed_call_is_a_non_answer_with_its_reason_never_a_label(tmp_path):
    design = make_design(sites=("s1",))
    manifest = write_stimuli(tmp_path, design)
    (tmp_path / "media" / "audio" / "D004.wav").unlink()  # missing media: failed without a call
    answers = {
        "D001": '{"relationship_label": "FAMILIAR", "confidence": 0.8, "rationale": "warm"}',
        "D002": RuntimeError("HTTP 503 after 5 retries"),
        "D003": "I cannot tell from this clip.",
        "D004": '{"relationship_label": "STRANGER", "confidence": 0.9}',
    }
    backend = ScriptedBackend(answers)
    cache = tmp_path / "cache" / "toy.jsonl"
    predictions, responses = inference.infer_model(
        ENTRY, manifest, design, tmp_path, ["audio"], ["v1"], cache, backend=backend
    )
    PREDICTIONS.validate(predictions)
    RESPONSES.validate(responses)
    row = responses.set_index("item_id")
    assert row.loc["D001", "status"] == "answered" and row.loc["D001", "label"] == "familiar"
    assert row.loc["D001", "confidence"] == pytest.approx(0.8)
    assert row.loc["D002", "status"] == "failed" and row.loc["D002", "label"] == ""
    assert "503" in row.loc["D002", "error"] and row.loc["D002", "raw_reply"] == ""
    assert row.loc["D003", "status"] == "unparsed" and row.loc["D003", "label"] == ""
    assert row.loc["D003", "parse_error"] and row.loc["D003", "raw_reply"].startswith("I cannot")
    assert row.loc["D004", "status"] == "failed" and "missing media" in row.loc["D004", "error"]
    assert math.isnan(row.loc["D002", "confidence"])
    for column in ("prompt_hash", "template_sha256", "model_fingerprint", "cache_key"):
        assert (responses[column] != "").all(), column
    assert json.loads(row.loc["D001", "media_hashes"])["audio"]
    labels = predictions.set_index("item_id")["label"]
    assert labels.to_dict() == {"D001": "familiar", "D002": "", "D003": "", "D004": ""}
    assert backend.calls == 3  # D004 was never called
    # a rerun calls only the failed keys again (the cache is never an output)
    backend.answers["D002"] = '{"relationship_label": "stranger", "confidence": 0.6}'
    again, _ = inference.infer_model(
        ENTRY, manifest, design, tmp_path, ["audio"], ["v1"], cache, backend=backend
    )
    assert (
        backend.calls == 3 + 1
    )  # only D002 is called again; D004 still lacks its media, D001 and D003 reused
    assert again.set_index("item_id").loc["D002", "label"] == "stranger"
    # the metrics count non-answers against coverage, never as labels
    metrics = score_predictions(predictions).iloc[0]
    assert metrics["n_items"] == 4 and metrics["n_answered"] == 1 and metrics["accuracy"] == 1.0


def test_a_registry_baseline_is_listed_once_whatever_the_prompt_variants(tmp_path):
    design = make_design(sites=("s1",))
    manifest = write_stimuli(tmp_path, design)
    predictions, responses = inference.infer_model(
        BASELINE, manifest, design, tmp_path, ["text", "audio"], ["v1", "v2"], tmp_path / "c.jsonl"
    )
    assert sorted(predictions["model"].unique()) == ["coin"]
    assert len(predictions) == 4 * 2  # 4 dyads x 2 modalities, not x 2 variants
    assert (responses["prompt_variant"] == "").all() and (responses["status"] == "answered").all()
    assert (responses["template_sha256"] == "").all()
    # its coin flips are those of the offline chance baseline (the same seed, the same items)
    flips = chance_predictions(design["dyad_id"].tolist(), seed=42).set_index("item_id")["label"]
    for row in predictions.itertuples(index=False):
        assert row.label == flips[row.item_id], row.item_id
    # prompt sensitivity compares prompted models only
    assert analysis.prompt_sensitivity(predictions).empty


def test_an_entry_without_study_modalities_gives_empty_tables(tmp_path):
    design = make_design(sites=("s1",))
    manifest = write_stimuli(tmp_path, design)
    video_only = {**ENTRY, "modalities": ["video"]}
    predictions, responses = inference.infer_model(
        video_only, manifest, design, tmp_path, ["text"], ["v1"], tmp_path / "c.jsonl", ScriptedBackend({})
    )
    assert predictions.empty and list(responses.columns) == RESPONSES.names


def test_clip_segments_are_cut_to_the_window_in_clip_time():
    segments = pd.DataFrame(
        {
            "interaction_id": ["I1", "I1", "I1", "I2"],
            "speaker": ["a", "b", "a", "a"],
            "start": [9.0, 11.0, 30.0, 10.0],
            "end": [10.5, 25.0, 31.0, 11.0],
            "text": ["x", "y", "z", "w"],
        }
    )
    clipped = inference.clip_segments(segments, "I1", 10.0, 20.0)
    assert clipped[["speaker", "start", "end"]].to_records(index=False).tolist() == [
        ("a", 0.0, 0.5),
        ("b", 1.0, 10.0),
    ]


def test_baseline_tables_follow_their_contracts(tmp_path):
    design = make_design(sites=("s1", "s2"))  # 8 dyads, 4 per class
    manifest = write_stimuli(tmp_path, design)
    features, predictions = inference.baseline_tables(
        manifest,
        design,
        segments_for(design),
        tmp_path,
        {"seed": 1, "n_splits": 2, "C": 1.0, "merge_gap_s": 0.3},
    )
    FEATURES_TABLE.validate(features)
    assert len(features) == 8 and (features["n_segments"] == 2).all()
    assert features["stimulus"].str.startswith("media/audio_stereo/").all()
    assert features["overlap_rate"].gt(0).all()  # b starts before a stops (0.9 < 1.0)
    PREDICTIONS.validate(predictions)
    assert set(predictions["model"]) == {"baseline_behavioural", "baseline_chance", "baseline_majority"}
    assert (predictions["modality"] == "audio").all() and len(predictions) == 24


# --- ratings ------------------------------------------------------------------------------


def test_rating_design_per_modality_and_small_designs():
    design = make_design(n_per_cell=2)  # 24 dyads
    plan = fam_ratings.rating_design(design, 6, 2, {"text": 6, "video": 3}, seed=3)
    assert sorted(plan.blocks["block"].unique()) == [1, 2, 3, 4, 5, 6]
    assignments = plan.assignments
    assert set(assignments["modality"]) == {"text", "video"}
    assert assignments.groupby("modality")["rater_id"].nunique().to_dict() == {"text": 6, "video": 3}
    assert assignments.loc[assignments["modality"] == "text", "rater_id"].str.startswith("T").all()
    assert (assignments.groupby(["modality", "rater_id"]).size() == 2).all()
    lists = plan.survey_lists("video")
    assert len(lists) == 3 and all(len(frame) == 8 for frame in lists.values())
    tiny = fam_ratings.rating_design(make_design(sites=("s1",)), 6, 2, {"audio": 4}, seed=3)
    assert tiny.blocks["block"].nunique() == 4  # one block per dyad


def simulated_panel(tmp_path: Path, design: pd.DataFrame, raters: int = 12, seed: int = 5):
    plan = fam_ratings.rating_design(design, 6, 2, dict.fromkeys(("text", "audio", "video"), raters), seed)
    exports, covariates = fam_ratings.simulate_exports(design, plan.blocks, plan.assignments, {}, seed)
    paths = {}
    for modality, frame in exports.items():
        paths[modality] = tmp_path / f"simulated_{modality}_export.csv"
        frame.to_csv(paths[modality], index=False)
    covariate_path = tmp_path / "simulated_covariates_export.csv"
    covariates.to_csv(covariate_path, index=False)
    return fam_ratings.import_panel(paths, design, "simulated", {}, covariate_path, {}, {})


def test_simulated_panel_says_so_everywhere(tmp_path):
    design = make_design(n_per_cell=2)
    trials, report, covariates = simulated_panel(tmp_path, design)
    RATED_TRIALS.validate(trials)
    assert (trials["source"] == SIMULATED_LABEL).all()
    assert (report["source"] == SIMULATED_LABEL).all() and (covariates["source"] == SIMULATED_LABEL).all()
    assert report.loc[report["reason"] == "imported", "n"].sum() == len(trials) == 3 * 12 * 8
    assert "sip" in covariates.columns
    covariates.to_csv(tmp_path / "covariates.csv", index=False)
    again = fam_ratings.read_covariates(tmp_path / "covariates.csv")
    assert pd.api.types.is_numeric_dtype(again["sip"]) and pd.api.types.is_string_dtype(again["rater_id"])


def test_real_exports_import_through_the_mapping(tmp_path):
    design = make_design(sites=("s1",))
    export = pd.DataFrame(
        {
            "Participant": ["p1", "p1", "p2", "p2", ""],
            "Clip": [
                "clips/D001.mp4",
                "clips/D003.mp4",
                "clips/D001.mp4",
                "clips/D999.mp4",
                "clips/D002.mp4",
            ],
            "Choice": ["They know each other", "Strangers", "strangers", "Strangers", "Strangers"],
        }
    )
    export.to_csv(tmp_path / "video.csv", index=False)
    mapping = {
        "rater_id": "Participant",
        "dyad_id": "Clip",
        "response": "Choice",
        "dyad_pattern": "clips/{dyad_id}.mp4",
        "response_values": {"familiar": ["They know each other"], "stranger": ["Strangers"]},
    }
    # 2 of 5 trials lost (an unknown dyad, a missing rater): over the default budget of 0
    with pytest.raises(fam_ratings.ImportLossError, match="unknown_dyad"):
        fam_ratings.import_panel({"video": tmp_path / "video.csv"}, design, "exports", mapping)
    trials, report, covariates = fam_ratings.import_panel(
        {"video": tmp_path / "video.csv"}, design, "exports", mapping, max_lost_share=0.4
    )
    assert len(trials) == 3 and (trials["source"] == SURVEY_SOURCE).all()
    counts = report.set_index("reason")["n"]
    assert counts["unknown_dyad"] == 1 and counts["missing_rater_id"] == 1 and counts.sum() == 5
    assert list(covariates.columns) == ["rater_id", "source"] and covariates.empty
    with pytest.raises(ValueError, match="ratings.source"):
        fam_ratings.source_label("survey")


# --- analysis -----------------------------------------------------------------------------


def model_rows(
    design: pd.DataFrame, model: str, modality: str, rng, p_right=0.7, p_none=0.0, confidence=True
):
    truth = design["relationship"].to_numpy()
    right = rng.random(len(truth)) < p_right
    label = np.where(right, truth, np.where(truth == "familiar", "stranger", "familiar")).astype(object)
    label[rng.random(len(truth)) < p_none] = ""
    conf = rng.uniform(0.5, 1.0, len(truth)) if confidence else np.full(len(truth), np.nan)
    conf = np.where(label == "", np.nan, conf)
    return pd.DataFrame(
        {
            "model": model,
            "modality": modality,
            "item_id": design["dyad_id"],
            "truth": truth,
            "label": label,
            "confidence": conf,
        }
    )


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    """24 dyads, a simulated panel of 12 raters per modality, two registry models with two variants."""
    design = make_design(n_per_cell=2)
    trials, _, covariates = simulated_panel(tmp_path_factory.mktemp("panel"), design)
    rng = np.random.default_rng(4)
    frames = [
        model_rows(design, f"omni@{variant}", modality, rng, p_right=0.75, p_none=0.1)
        for variant in ("v1", "v2")
        for modality in ("text", "audio", "video")
    ]
    frames.append(model_rows(design, "lm@v1", "text", rng, p_right=0.6, confidence=False))
    frames.append(model_rows(design, "baseline_chance", "audio", rng, p_right=0.5))
    return frames, trials, design, covariates


PARAMS = {
    "seed": 3,
    "crowd_resamples": 50,
    "calibration_bins": 5,
    "tost_margin": 0.1,
    "power": {"effect_sizes": [0.0, 0.1, 0.2], "margins": [0.05, 0.1]},
}


def test_model_predictions_are_checked_against_the_design(tiny_study):
    frames, _, design, _ = tiny_study
    assert len(analysis.model_predictions(frames, design)) == sum(map(len, frames))
    with pytest.raises(ValueError, match="duplicate key"):
        analysis.model_predictions([frames[0], frames[0]], design)
    stale = frames[0].assign(truth=np.where(frames[0]["truth"] == "familiar", "stranger", "familiar"))
    with pytest.raises(ValueError, match="disagrees with the design"):
        analysis.model_predictions([stale], design)
    with pytest.raises(ValueError, match="crowd"):
        analysis.model_predictions([frames[0].assign(model=MAJORITY_MODEL)], design)


def test_score_familiarity_tables(tiny_study):
    frames, trials, design, _ = tiny_study
    tables = analysis.score_familiarity(frames, trials, design, PARAMS)
    for name, table in tables.items():
        ANALYSIS_TABLES[name].validate(table, source=name)
    metrics = tables["metrics"]
    kinds = metrics.groupby("rater_type")["model"].nunique().to_dict()
    assert kinds == {"model": 4, "human": 36, "crowd": 1}
    crowd = metrics[metrics["rater_type"] == "crowd"]
    assert sorted(crowd["modality"]) == ["audio", "text", "video"]
    assert (crowd["source"] == SIMULATED_LABEL).all()
    assert (metrics.loc[metrics["rater_type"] == "model", "source"] == MODEL_SOURCE).all()
    omni = metrics[metrics["model"] == "omni@v1"]
    assert (omni["coverage"] < 1).any() and (omni["n_items"] == 24).all()
    answers = tables["nonanswer_accuracy"].set_index(["model", "modality"])
    row = answers.loc[("omni@v1", "text")]
    assert row["accuracy_nonanswer_wrong"] <= row["accuracy_nonanswer_coinflip"] <= 1
    assert len(tables["per_rater_sdt"]) == 36 and (tables["per_rater_sdt"]["source"] == SIMULATED_LABEL).all()
    curves = tables["crowd_curves"]
    assert curves["k"].max() == 4 and set(curves["modality"]) == {"text", "audio", "video"}  # 12 raters x 2/6
    calibration = tables["calibration"]
    assert set(calibration["model"]) == {"omni@v1", "omni@v2", "lm@v1", "baseline_chance"}
    assert (calibration.loc[calibration["model"] == "lm@v1", "n_items"] == 0).all()
    assert calibration.loc[calibration["model"] == "omni@v1", "ece"].notna().all()
    sensitivity = tables["prompt_sensitivity"]
    assert len(sensitivity) == 3 + 1  # omni: v1 vs v2 per modality; lm: a single variant
    pair = sensitivity[(sensitivity["name"] == "omni") & (sensitivity["modality"] == "audio")].iloc[0]
    assert pair["variant_a"] == "v1" and pair["variant_b"] == "v2"
    assert pair["mcnemar_b"] + pair["mcnemar_c"] <= pair["n_paired"] <= 24
    assert pair["accuracy_range"] == pytest.approx(abs(pair["difference"]))
    single = sensitivity[sensitivity["name"] == "lm"].iloc[0]
    assert single["variant_b"] == "" and math.isnan(single["mcnemar_p"])
    assert tables["majority_votes"]["n_raters"].eq(4).all()


@pytest.mark.heavy  # 7 CPU-s
def test_rater_tests_tables(tiny_study):
    frames, trials, design, covariates = tiny_study
    tables = analysis.rater_tests(frames, trials, design, covariates, PARAMS)
    for name, table in tables.items():
        ANALYSIS_TABLES[name].validate(table, source=name)
    mcnemar = tables["mcnemar"]
    best = mcnemar[mcnemar["comparison"] == "best_model_vs_crowd"]
    assert sorted(best["modality_a"]) == ["audio", "text", "video"]
    assert (best["model_b"] == MAJORITY_MODEL).all() and (best["source"] == SIMULATED_LABEL).all()
    pairs = mcnemar[mcnemar["comparison"] == "modality_pair"]
    assert set(pairs["model_a"]) == {"omni@v1", "omni@v2", MAJORITY_MODEL}
    assert len(pairs) == 3 * 3
    assert (mcnemar["b"] + mcnemar["c"] <= mcnemar["n_items"]).all()
    tost = tables["tost"]
    assert len(tost) == len(mcnemar) and (tost["margin"] == 0.1).all()
    assert ((tost["ci_low"] <= tost["diff"]) & (tost["diff"] <= tost["ci_high"])).all()
    assert (tost["method"] == "tango").all()
    for table, raw, adjusted in ((mcnemar, "p_value", "p_holm"), (tost, "p_tost", "p_tost_holm")):
        for _, family in table.groupby("comparison"):
            assert np.allclose(family[adjusted], multipletests(family[raw], method="holm")[1])
    assert (tost["equivalent_holm"] <= tost["equivalent"]).all()
    assert (best["note"].str.contains("chosen on these same dyads")).all() and (pairs["note"] == "").all()
    power = tables["power"]
    assert len(power) == 3 * 2 and (power["n_dyads_design"] == 24).all()
    assert power["n_mcnemar"].isna().sum() == 2  # no effect to detect at 0.0
    assert (power["n_mcnemar"].dropna() >= power["n_mcnemar_approx"].dropna()).all()
    row = power.set_index(["effect_size", "margin"]).loc[(0.0, 0.1)]
    assert not row["tost_reachable"] and "out of reach with 24 dyads" in row["note"]
    # the TOST's exact size at 24 dyads: no table shows equivalence within 0.05 or 0.1
    assert (power["tost_size_design"] == 0).all()
    differences = tables["individual_differences"]
    assert set(differences["analysis"]) == {"correlation", "ols"}
    assert (differences["source"] == SIMULATED_LABEL).all()
    empty = analysis.rater_tests(frames, trials, design, None, PARAMS)["individual_differences"]
    assert empty.empty


def test_released_predictions_say_source_release(tiny_study):
    """A release's predictions (by their file) are `source: release` in every table, not "model inference"."""
    frames, trials, design, _ = tiny_study
    rng = np.random.default_rng(9)
    released = pd.concat(
        [model_rows(design, "release:gpt", m, rng, p_right=0.7) for m in ("text", "audio")], ignore_index=True
    )
    files = {f"predictions/{i}.csv": frame for i, frame in enumerate(frames)}
    files["results/release/predictions.csv"] = released
    sources = analysis.released_sources(files, ["results/release/predictions.csv"])
    assert sources == {"release:gpt": "release"}
    tables = analysis.score_familiarity(list(files.values()), trials, design, PARAMS, sources)
    for name in ("metrics", "nonanswer_accuracy"):
        table = tables[name].set_index("model")
        assert (table.loc[["release:gpt"], "source"] == "release").all(), name
        assert (table.loc[["omni@v1", "lm@v1"], "source"] == MODEL_SOURCE).all(), name
    tests = analysis.rater_tests(list(files.values()), trials, design, None, PARAMS, sources)["mcnemar"]
    pairs = tests[tests["comparison"] == "modality_pair"].set_index("model_a")["source"]
    assert pairs.loc[["release:gpt"]].tolist() == ["release"]  # text vs audio
    assert (pairs.loc[["omni@v1"]] == MODEL_SOURCE).all()
    assert analysis.joined_sources(["release", MODEL_SOURCE, "release"]) == "model inference; release"


def test_best_model_does_not_win_by_refusing():
    design = make_design(sites=("s1",))
    truth = design["relationship"]
    rows = []
    for dyad, label in zip(design["dyad_id"], truth, strict=True):
        rows.append({"model": "shy", "modality": "text", "item_id": dyad, "truth": label, "label": ""})
        rows.append(
            {"model": "bold", "modality": "text", "item_id": dyad, "truth": label, "label": "familiar"}
        )
    frame = PREDICTIONS.validate(pd.DataFrame(rows).assign(confidence=np.nan))
    frame.loc[(frame["model"] == "shy") & (frame["item_id"] == "D001"), "label"] = "familiar"  # 1/1 right
    assert analysis.best_models(frame) == {"text": "bold"}


def test_partial_correlation_matches_the_formula():
    rng = np.random.default_rng(0)
    z = np.repeat([0, 1], 30)
    x = z + rng.normal(size=60)
    y = 0.5 * x + z + rng.normal(size=60)
    r, partial, p_value, n = analysis.partial_correlation(x, y, z)
    rxy, rxz, ryz = (stats.pearsonr(a, b).statistic for a, b in ((x, y), (x, z), (y, z)))
    expected = (rxy - rxz * ryz) / math.sqrt((1 - rxz**2) * (1 - ryz**2))
    assert n == 60 and r == pytest.approx(rxy)
    assert partial == pytest.approx(expected)
    t = expected * math.sqrt(57 / (1 - expected**2))
    assert p_value == pytest.approx(2 * stats.t.sf(abs(t), 57))


@pytest.mark.slow
def test_glmm_and_rasch_tables_with_tiny_samplers(tiny_study):
    frames, trials, design, _ = tiny_study
    sampler = {"draws": 60, "tune": 60, "chains": 2, "target_accept": 0.8, "max_divergences": 0}
    rasch_sampler = Rasch.of(
        sampler, until_converged=False, max_draws=60, correction_bootstrap=200, min_reliability=0.0
    )
    glmm = analysis.glmm_tables(trials, Glmm.of(sampler), 1, cores=1)
    summary, contrasts = glmm["glmm_summary"], glmm["glmm_contrasts"]
    assert {"modality[text]", "modality[audio]", "modality[video]", "1|rater_id_sigma"} <= set(
        summary["term"]
    )
    assert len(contrasts) == 3 and contrasts["p_gt_0"].between(0, 1).all()
    assert (contrasts["source"] == SIMULATED_LABEL).all()
    assert (~summary["converged"] == (summary["flag"] != "")).all()  # 60 draws: flagged, and says why
    rasch = analysis.rasch_tables(frames, trials, design, rasch_sampler, 1)
    for name, table in rasch.items():
        ANALYSIS_TABLES[name].validate(table, source=name)
    fits = rasch["rasch_fits"].set_index(["modality", "rater_type"])
    assert fits.loc[("text", "human"), "fitted"] and fits.loc[("text", "model"), "n_persons"] == 3
    difficulty = rasch["rasch_difficulty"]
    assert len(difficulty) == fits["n_items"].sum() > 5 * 24  # dyads nobody answered are left out
    assert set(rasch["rasch_correlations"]["rater_type"]) == {"human", "model"}
    partial = rasch["rasch_partial"]
    assert len(partial) == 3 * 2 and partial["n"].between(20, 24).all()
    assert rasch["rasch_fits"].loc[rasch["rasch_fits"]["fitted"], "reliability"].between(0, 1).all()
    correlations = rasch["rasch_correlations"]
    finite = correlations.dropna(subset=["pearson_r_corrected"])
    assert (finite["pearson_r_corrected"].abs() >= finite["pearson_r"].abs() - 1e-12).all()
    # divergences count against convergence, in the fits and on the summary page
    fitted_rows = rasch["rasch_fits"][rasch["rasch_fits"]["fitted"]]
    assert not fitted_rows.loc[fitted_rows["divergences"] > 0, "converged"].any()
    assert not summary.loc[summary["divergences"] > 0, "converged"].any()
    section = convergence_section(summary, rasch["rasch_fits"])
    assert section["divergences"].notna().sum() == len(summary) + len(fitted_rows)
    capped = correlations.dropna(subset=["pearson_r_corrected"])
    assert (capped["pearson_r_corrected_capped"] == (capped["pearson_r_corrected_uncapped"].abs() > 1)).all()
    # a modality answered by one model only cannot be fitted, and says why
    # one person row per rater (humans) or model of each fit, counting the fit's responses
    persons = rasch["rasch_persons"]
    per_fit = persons.groupby(["modality", "rater_type"]).agg(
        n=("person", "size"), responses=("n_responses", "sum")
    )
    fitted = fits[fits["fitted"]]
    assert per_fit["n"].to_dict() == fitted["n_persons"].to_dict()
    assert per_fit["responses"].to_dict() == fitted["n_responses"].to_dict()
    human_text = persons[(persons["modality"] == "text") & (persons["rater_type"] == "human")]
    raters = trials[trials["modality"] == "text"]["rater_id"].astype(str)
    assert set(human_text["person"]) <= set(raters)
    assert (
        (human_text["hdi_low"] < human_text["ability"]) & (human_text["ability"] < human_text["hdi_high"])
    ).all()
    lone = analysis.rasch_tables(
        [frames[-1]], trials[trials["modality"] == "audio"], design, rasch_sampler, 1
    )
    row = lone["rasch_fits"].set_index("rater_type").loc["model"]
    assert not row["fitted"] and "1 model and" in row["reason"]
    # in the table itself: not applicable, with the reason, and no convergence to judge (not False)
    assert row["flag"] == f"not applicable: {row['reason']}"
    assert pd.isna(row["converged"]) and pd.isna(row["divergences"])
    lone_section = convergence_section(None, lone["rasch_fits"])
    model_side = lone_section.set_index("part").loc["audio / model"]
    assert model_side["flag"] == f"not applicable: {row['reason']}" and pd.isna(model_side["converged"])
    # the fits side by side in two processes: the same tables, row for row
    in_two = analysis.rasch_tables(frames, trials, design, rasch_sampler, 1, workers=2)
    for name, table in rasch.items():
        pd.testing.assert_frame_equal(in_two[name], table, obj=name)


@pytest.mark.slow
@pytest.mark.heavy  # bambi sampled beside the fast path (about 3 CPU-s)
def test_glmm_pp_contrasts_of_the_demo_panel_equal_bambi(tiny_study):
    """Issue 52, point 1 on the demo's simulated rater panel (12 raters per modality, 24 dyads):
    the contrasts in percentage points equal bambi's own computation on the same draws."""
    from omnisocial.stats import glmm

    trials = tiny_study[1]
    result = glmm.fit_glmm(trials[["rater_id", "dyad_id", "modality", "correct"]], seed=0, draws=500)
    table = assert_pp_contrasts_match_bambi(result, trials)
    assert table["pp_p_gt_0"].between(0, 1).all() and len(table) == 3


# --- figures and notebook -----------------------------------------------------------------


@pytest.mark.heavy  # 8 CPU-s
def test_every_figure_family_draws_from_its_tables(tiny_study, tmp_path):
    frames, trials, design, covariates = tiny_study
    tables = {
        **analysis.score_familiarity(frames, trials, design, PARAMS),
        **analysis.rater_tests(frames, trials, design, covariates, PARAMS),
        "glmm_contrasts": pd.DataFrame(
            {
                "contrast": ["modality[audio] - modality[text]"],
                "mean": [0.2],
                "hdi_low": [-0.1],
                "hdi_high": [0.5],
                "p_gt_0": [0.9],
                "r_hat": [1.002],
                "ess_bulk": [812.0],
                "source": [SIMULATED_LABEL],
            }
        ),
        "glmm_summary": pd.DataFrame({"term": ["modality[audio]", "modality[text]"], "mean": [0.3, 0.1]}),
        "rasch_difficulty": pd.DataFrame(
            [
                {"dyad_id": d, "modality": m, "rater_type": k, "difficulty": float(i % 5), "truth": t}
                for i, (d, t) in enumerate(zip(design["dyad_id"], design["relationship"], strict=True))
                for m in ("text", "audio")
                for k in ("human", "model")
            ]
        ),
        "rasch_fits": pd.DataFrame(
            {
                "modality": ["text", "text", "audio", "audio"],
                "rater_type": ["human", "model", "human", "model"],
                "fitted": True,
                "r_hat_max": [1.0, 1.03, 1.0, 1.0],
                "ess_bulk_min": [900.0, 800.0, 120.0, 700.0],
            }
        ),
    }
    shown = fam_figures.shown_models(tables["metrics"], "v1")
    assert set(shown["model"]) == {"omni@v1", "lm@v1", "baseline_chance", MAJORITY_MODEL}
    for family in fam_figures.FAMILIES:
        paths = fam_figures.draw_figure(family, tables, tmp_path / family, {"variant": "v1"})
        assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size for p in paths)
    with pytest.raises(ValueError, match="unknown figure family"):
        fam_figures.draw_figure("pie", tables, tmp_path / "pie")
    with pytest.raises(ValueError, match="needs table"):
        fam_figures.draw_figure("glmm", {}, tmp_path / "glmm")
    # the calibration figure shows model outputs only: a demo corpus is named in its subtitle
    seen = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fam_figures, "calibration_figure", lambda *a, **kw: seen.append(kw["subtitle"]))
        for source in ("demo", "seamless"):
            fam_figures.draw_figure("calibration", tables, tmp_path / "c", {"corpus_source": source})
    assert seen == [fam_figures.DEMO_CORPUS_NOTE, ""]
    # a models-only study: no GLMM fit and no human difficulties, each figure says so and draws
    # the models' difficulties across modalities
    from omnisocial.familiarity.figures import difficulty as difficulty_module
    from omnisocial.familiarity.figures import glmm as glmm_module

    models_only = {
        **tables,
        "glmm_summary": tables["glmm_summary"].iloc[:0],
        "glmm_contrasts": tables["glmm_contrasts"].iloc[:0],
        "rasch_difficulty": tables["rasch_difficulty"].query("rater_type == 'model'"),
    }
    drawn = []
    with pytest.MonkeyPatch.context() as patch:
        for module in (difficulty_module, glmm_module):
            patch.setattr(module, "save_figure", lambda fig, stem: drawn.append(fig) or [])
        for family in ("glmm", "difficulty"):
            fam_figures.draw_figure(family, models_only, tmp_path / family, {"variant": "v1"})
    glmm_fig, difficulty_fig = drawn
    glmm_texts = {t.get_text() for t in glmm_fig.findobj(match=lambda o: hasattr(o, "get_text"))}
    assert {"no human ratings", "no human ratings: no GLMM fit"} <= glmm_texts
    across, *_ = [ax for ax in difficulty_fig.axes if ax.get_visible()]
    assert across.get_xlabel().startswith("models, text")
    assert sum(len(c.get_offsets()) for c in across.collections) == len(design)
    texts = [t.get_text() for ax in difficulty_fig.axes if ax.get_visible() for t in ax.texts]
    assert texts.count("no human ratings") == 2  # humans vs models: text, audio
    subtitles = {t.get_text() for t in difficulty_fig.texts}
    assert any(t.endswith("| no human ratings") for t in subtitles), subtitles


def test_notebook_is_valid_and_has_no_outputs():
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(ROOT / "notebooks" / "familiarity.ipynb", as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    source = "\n".join(cell.source for cell in code)
    assert "RESULTS" in source and "draw_figure" in source
