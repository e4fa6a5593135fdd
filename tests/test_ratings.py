"""Human ratings (docs/benchmarks/familiarity.md#ratings): blocks, rater assignment, survey lists,
export import, rater covariates, individual differences and the simulated rater panel."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from omnisocial.familiarity import ratings
from omnisocial.familiarity.ratings import (
    IMPORT_REPORT,
    REASONS,
    SIMULATED_LABEL,
    SURVEY_LIST,
    block_design,
    import_covariates,
    import_ratings,
    individual_differences,
    rater_assignments,
    raters_per_dyad,
    simulate_panel,
    survey_lists,
    write_survey_lists,
)
from omnisocial.familiarity.ratings.importing import EXCLUDE_REASONS
from omnisocial.stats.crowds import per_rater_sdt
from omnisocial.tables import DESIGN, TRIALS

SITES = ("s1", "s2", "s3")
GENDERS = ("ff", "mm")


def make_design(n_per_cell: int = 8, sites=SITES, genders=GENDERS, clip_end: float = 30.0) -> pd.DataFrame:
    rows = []
    for site, relationship, gender in itertools.product(sites, ("familiar", "stranger"), genders):
        for j in range(n_per_cell):
            i = len(rows) + 1
            rows.append(
                {
                    "dyad_id": f"D{i:03d}",
                    "interaction_id": f"I{i:03d}",
                    "cell": f"{site}|{relationship}|{gender}",
                    "site": site,
                    "relationship": relationship,
                    "gender_mix": gender,
                    "position": "early" if j % 2 == 0 else "late",
                    "clip_start": 10.0,
                    "clip_end": clip_end,
                    "n_turns": 6,
                    "participant_a": f"P{i}a",
                    "participant_b": f"P{i}b",
                }
            )
    return DESIGN.validate(pd.DataFrame(rows))


@pytest.fixture(scope="module")
def design():
    return make_design()


@pytest.fixture(scope="module")
def blocks(design):
    return block_design(design, n_blocks=6, seed=11)


# --- blocks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_per_cell", "n_blocks", "seed"), [(8, 6, 0), (8, 6, 7), (5, 6, 3), (8, 4, 1), (7, 5, 2), (3, 7, 9)]
)
def test_every_block_holds_every_cell_within_one(n_per_cell, n_blocks, seed):
    design = make_design(n_per_cell)
    blocks = block_design(design, n_blocks=n_blocks, seed=seed)
    assert sorted(blocks["dyad_id"]) == sorted(design["dyad_id"])  # every dyad exactly once
    merged = blocks.merge(design, on="dyad_id")
    per_cell = pd.crosstab(merged["cell"], merged["block"]).reindex(
        columns=range(1, n_blocks + 1), fill_value=0
    )
    assert (per_cell.max(axis=1) - per_cell.min(axis=1)).max() <= 1
    sizes = merged.groupby("block").size().reindex(range(1, n_blocks + 1), fill_value=0)
    assert sizes.max() - sizes.min() <= 1
    per_class = pd.crosstab(merged["relationship"], merged["block"])
    assert (per_class.max(axis=1) - per_class.min(axis=1)).max() <= 1


def test_full_design_gives_six_blocks_of_sixteen_with_eight_per_class(design, blocks):
    merged = blocks.merge(design, on="dyad_id")
    assert merged.groupby("block").size().tolist() == [16] * 6
    assert (pd.crosstab(merged["relationship"], merged["block"]) == 8).all().all()


def test_block_design_is_seeded(design):
    first = block_design(design, 6, seed=5)
    assert first.equals(block_design(design, 6, seed=5))
    assert not first.equals(block_design(design, 6, seed=6))


def test_block_design_rejects_more_blocks_than_dyads():
    with pytest.raises(ValueError, match="blocks for"):
        block_design(make_design(1, sites=("s1",), genders=("ff",)), n_blocks=3)


# --- rater assignments -------------------------------------------------------------------------


def test_ninety_raters_give_every_dyad_thirty_ratings_of_thirty_two_dyads_each(blocks):
    assignments = rater_assignments(blocks, 90, seed=1)
    per_rater = assignments.groupby("rater_id")["block"].agg(["size", "nunique"])
    assert (per_rater["size"] == 2).all() and (per_rater["nunique"] == 2).all()
    dyads_per_rater = assignments.merge(blocks, on="block").groupby("rater_id").size()
    assert (dyads_per_rater == 32).all()
    counts = raters_per_dyad(assignments, blocks)["n_raters"]
    assert (counts == 30).all()
    # every one of the 15 block pairs is used by 6 raters
    pairs = assignments.groupby("rater_id")["block"].apply(tuple).value_counts()
    assert len(pairs) == 15 and (pairs == 6).all()


def test_pair_rotation_keeps_raters_per_dyad_within_one_at_every_panel_size(blocks):
    for n in range(1, 50):
        counts = raters_per_dyad(rater_assignments(blocks, n, seed=n), blocks)["n_raters"]
        assert counts.max() - counts.min() <= 1, n
        assert counts.sum() == n * 32


@pytest.mark.parametrize(("n_blocks", "k"), [(5, 2), (6, 3), (7, 2), (4, 1)])
def test_general_rotation_stays_within_one_cycle_and_is_exact_on_full_cycles(n_blocks, k):
    blocks = block_design(make_design(7), n_blocks=n_blocks, seed=0)
    cycle = math.comb(n_blocks, k)
    per_cycle = k * cycle // n_blocks  # raters a block gets in one full cycle
    for n in range(1, 2 * cycle + 2):
        assignments = rater_assignments(blocks, n, blocks_per_rater=k, seed=3)
        per_block = assignments.groupby("block").size().reindex(range(1, n_blocks + 1), fill_value=0)
        assert per_block.max() - per_block.min() <= per_cycle, (n, per_block.tolist())
        if n % cycle == 0:
            assert per_block.nunique() == 1


def test_rater_assignments_seeded_and_prefixed(blocks):
    first = rater_assignments(blocks, 20, seed=4, prefix="V")
    assert first.equals(rater_assignments(blocks, 20, seed=4, prefix="V"))
    assert first["rater_id"].iloc[0] == "V001"
    assert not first.equals(rater_assignments(blocks, 20, seed=5, prefix="V"))


# --- survey lists --------------------------------------------------------------------------------


def test_survey_lists_hold_the_raters_blocks_in_a_seeded_order(blocks):
    assignments = rater_assignments(blocks, 12, seed=2)
    lists = survey_lists(assignments, blocks, "video", seed=8)
    assert sorted(lists) == sorted(assignments["rater_id"].unique())
    for rater, table in lists.items():
        own_blocks = assignments.loc[assignments["rater_id"] == rater, "block"]
        expected = set(blocks.loc[blocks["block"].isin(own_blocks), "dyad_id"])
        assert set(table["dyad_id"]) == expected and len(table) == 32
        assert table["order"].tolist() == list(range(1, 33))
        assert (table["stimulus"] == "video/" + table["dyad_id"] + ".mp4").all()
        assert table["dyad_id"].tolist() != sorted(table["dyad_id"])  # shuffled
    again = survey_lists(assignments, blocks, "video", seed=8)
    assert all(lists[r].equals(again[r]) for r in lists)
    other_seed = survey_lists(assignments, blocks, "video", seed=9)
    assert all(not lists[r].equals(other_seed[r]) for r in lists)
    other_modality = survey_lists(assignments, blocks, "audio", seed=8)
    assert any(
        lists[r]["dyad_id"].tolist() != other_modality[r]["dyad_id"].tolist() for r in lists
    )  # one experiment per modality, each with its own orders


def test_a_raters_order_does_not_depend_on_the_other_raters(blocks):
    small = survey_lists(rater_assignments(blocks, 5, seed=2), blocks, "text", seed=1)
    large = survey_lists(rater_assignments(blocks, 30, seed=2), blocks, "text", seed=1)
    for rater in small:
        assert small[rater].equals(large[rater])


def test_write_survey_lists_one_csv_per_rater_and_removes_stale(tmp_path, blocks):
    surveys = tmp_path / "surveys"
    big = survey_lists(rater_assignments(blocks, 4, seed=0), blocks, "audio", seed=3)
    write_survey_lists(big, surveys, "audio")
    small = {r: big[r] for r in sorted(big)[:2]}
    paths = write_survey_lists(small, surveys, "audio")
    assert paths == [surveys / "audio" / f"{r}.csv" for r in sorted(small)]
    assert sorted(p.name for p in (surveys / "audio").iterdir()) == [f"{r}.csv" for r in sorted(small)]
    for rater, path in zip(sorted(small), paths, strict=True):
        assert SURVEY_LIST.read(path).equals(small[rater])
    with pytest.raises(ValueError, match="file name"):
        write_survey_lists({"../evil": small[sorted(small)[0]]}, surveys, "audio")


# --- import --------------------------------------------------------------------------------------

TRUTH = {"D001": "familiar", "D002": "stranger", "D003": "familiar"}
MAPPING = {
    "rater_id": "ResponseId",
    "dyad_id": "stimulus",
    "response": "answer",
    "response_values": {"familiar": ["Know each other", "familiar"], "stranger": ["Strangers", "just met"]},
}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def report_counts(report: pd.DataFrame) -> dict:
    return dict(zip(report["reason"], report["n"], strict=True))


def test_import_long_export_counts_every_exclusion(tmp_path):
    export = write(
        tmp_path / "text.csv",
        "ResponseId,stimulus,answer\n"
        "R1,D001,Know each other\n"  # row 2: imported, correct
        "R1,D002,Know each other\n"  # row 3: imported, wrong
        "R1,D999,Strangers\n"  # row 4: unknown dyad
        "R1,D001,Strangers\n"  # row 5: rates D001 again, differently: a conflict with row 2
        "R2,D001,\n"  # row 6: empty
        "R2,D002,maybe\n"  # row 7: invalid
        "R2,D003,  JUST MET \n"  # row 8: imported (trimmed, any case), wrong
        ",D003,Strangers\n"  # row 9: no rater id
        "R3,D002,strangers\n"  # row 10: imported, correct
        "R3,D002,Strangers\n",  # row 11: the same answer again: a duplicate
    )
    trials, report = import_ratings(export, MAPPING, "text", TRUTH)
    # a long export without `require` or practice trials: no not_shown / filtered / practice rows
    assert report_counts(report) == {
        "imported": 4,
        "missing_rater_id": 1,
        "unknown_dyad": 1,
        "empty_response": 1,
        "invalid_response": 1,
        "duplicate": 1,
        "conflict": 1,
    }
    assert report["n"].sum() == 10  # every export row accounted for
    assert list(report["reason"]) == [
        r for r in REASONS if r not in ("not_shown", "filtered", "practice", "unanswered", *EXCLUDE_REASONS)
    ]
    assert set(report["modality"]) == {"text"}
    lost = dict(zip(report["reason"], report["lost"], strict=True))
    assert [r for r, flag in lost.items() if flag] == [
        "missing_rater_id",
        "unknown_dyad",
        "invalid_response",
        "conflict",
    ]
    examples = dict(zip(report["reason"], report["example"], strict=True))
    assert examples["unknown_dyad"].startswith("row 4:") and "D999" in examples["unknown_dyad"]
    assert examples["conflict"] == (
        "row 5: rater='R1' dyad='D001' response='Strangers' (kept row 2: 'Know each other')"
    )
    assert (
        examples["duplicate"]
        == "row 11: rater='R3' dyad='D002' response='Strangers' (kept row 10: 'strangers')"
    )
    assert examples["invalid_response"].startswith("row 7:") and "maybe" in examples["invalid_response"]
    assert examples["missing_rater_id"].startswith("row 9:")
    IMPORT_REPORT.validate(report)
    TRIALS.validate(trials)
    assert trials.to_dict("records") == [
        {"rater_id": "R1", "dyad_id": "D001", "modality": "text", "response": "familiar", "correct": True},
        {"rater_id": "R1", "dyad_id": "D002", "modality": "text", "response": "familiar", "correct": False},
        {"rater_id": "R2", "dyad_id": "D003", "modality": "text", "response": "stranger", "correct": False},
        {"rater_id": "R3", "dyad_id": "D002", "modality": "text", "response": "stranger", "correct": True},
    ]


def test_import_wide_qualtrics_export(tmp_path):
    export = write(
        tmp_path / "video.csv",
        "ResponseId,Finished,D001_rating,D002_rating,D003_rating,D999_rating,Consent_rating\n"
        "Response ID,Finished,clip D001,clip D002,clip D003,clip D999,consent\n"  # Qualtrics question row
        '{"ImportId":"_recordId"},{"ImportId":"finished"},{},{},{},{},{}\n'  # Qualtrics import-id row
        "R1,True,Know each other,,Strangers,,yes\n"
        "R2,True,,-99,maybe,Strangers,yes\n"
        "R1,True,Strangers,Strangers,,,yes\n"
        "R3,False,Strangers,Strangers,Strangers,,yes\n",
    )
    mapping = {
        **MAPPING,
        "wide": True,
        "column_pattern": "{dyad_id}_rating",
        "skip_rows": 2,
        "empty_values": ["-99"],
        "require": {"Finished": ["True"]},
        "ignore_columns": ["Consent_rating"],
    }
    trials, report = import_ratings(export, mapping, "video", TRUTH)
    assert report_counts(report) == {
        "imported": 3,  # R1: D001 and D003 from its first row, D002 from its second (first valid)
        "not_shown": 6,  # blank cells: the planned-missing design, not exclusions
        "filtered": 3,  # R3 did not finish
        "missing_rater_id": 0,
        "unknown_dyad": 1,  # R2 rated D999
        "empty_response": 1,  # R2's -99
        "invalid_response": 1,  # R2's "maybe"
        "duplicate": 0,
        "conflict": 1,  # R1's second rating of D001, a different answer
    }
    assert report["n"].sum() == 4 * 4  # four raters' rows x four dyad columns
    examples = dict(zip(report["reason"], report["example"], strict=True))
    assert examples["conflict"].startswith("row 6, column 'D001_rating':")
    assert "(kept row 4, column 'D001_rating': 'Know each other')" in examples["conflict"]
    assert examples["filtered"].startswith("row 7, column 'D001_rating':")
    assert trials[["rater_id", "dyad_id", "response", "correct"]].values.tolist() == [
        ["R1", "D001", "familiar", True],
        ["R1", "D002", "stranger", True],
        ["R1", "D003", "stranger", False],
    ]
    assert (trials["modality"] == "video").all()


def test_import_dyad_pattern_and_design_truth(tmp_path, design):
    export = write(
        tmp_path / "audio.csv",
        "pid,file,resp\np1,audio/D001.wav,familiar\np1,audio/D050.wav,familiar\np1,D002,familiar\n",
    )
    mapping = {**MAPPING, "rater_id": "pid", "dyad_id": "file", "response": "resp"}
    mapping["dyad_pattern"] = "audio/{dyad_id}.wav"
    trials, report = import_ratings(export, mapping, "audio", design)
    assert trials["dyad_id"].tolist() == ["D001", "D050"]
    assert trials["correct"].tolist() == [True, False]  # D001..D008 familiar cell, D050 a stranger cell
    assert report_counts(report)["unknown_dyad"] == 1  # "D002" does not match the pattern


def test_import_empty_export_gives_empty_trials(tmp_path):
    export = write(tmp_path / "e.csv", "ResponseId,stimulus,answer\n")
    trials, report = import_ratings(export, MAPPING, "text", TRUTH)
    assert trials.empty and list(trials.columns) == TRIALS.names
    assert report["n"].sum() == 0


def test_import_configuration_errors_raise_with_the_column_named(tmp_path):
    export = write(tmp_path / "x.csv", "ResponseId,stim,answer\nR1,D001,familiar\n")
    with pytest.raises(ValueError, match="'stimulus'"):
        import_ratings(export, MAPPING, "text", TRUTH)
    with pytest.raises(ValueError, match="unknown mapping key"):
        import_ratings(export, {**MAPPING, "dyad": "stim"}, "text", TRUTH)
    with pytest.raises(ValueError, match="both familiar and stranger"):
        bad = {**MAPPING, "dyad_id": "stim", "response_values": {"familiar": ["yes"], "stranger": ["YES"]}}
        import_ratings(export, bad, "text", TRUTH)
    with pytest.raises(ValueError, match="no column matches"):
        import_ratings(export, {**MAPPING, "wide": True, "column_pattern": "Q_{dyad_id}"}, "text", TRUTH)


# --- covariates and individual differences ---------------------------------------------------------


def test_import_covariates_scores_scales_with_reverse_items_and_labels(tmp_path):
    csv = write(
        tmp_path / "cov.csv",
        "ResponseId,S1,S2,S3,Q_voice\n"
        "A,1,7,Agree,4\n"  # S2 reversed -> 1; Agree -> 6: mean(1, 1, 6) = 8/3
        "B,7,,Disagree,\n"  # S2 blank: mean(7, 2) = 4.5 with min_items 2; cue blank -> NaN
        "C,,,5,2\n"  # one item only: NaN
        "A,2,2,2,2\n",  # repeated rater: first row kept (with a warning)
    )
    mapping = {
        "rater_id": "ResponseId",
        "item_values": {"agree": 6, "Disagree": 2},
        "scales": {
            "sip": {"items": ["S1", "S2", "S3"], "reverse": ["S2"], "min": 1, "max": 7, "min_items": 2}
        },
        "columns": {"cue_voice": "Q_voice"},
    }
    with pytest.warns(UserWarning, match="repeated rater"):
        covariates = import_covariates(csv, mapping)
    assert covariates["rater_id"].tolist() == ["A", "B", "C"]
    assert covariates["sip"].tolist()[:2] == pytest.approx([8 / 3, 4.5])
    assert math.isnan(covariates["sip"].iloc[2])
    assert covariates["cue_voice"].tolist()[0] == 4.0 and math.isnan(covariates["cue_voice"].iloc[1])
    bad = write(tmp_path / "bad.csv", "ResponseId,S1,S2,S3,Q_voice\nA,1,2,often,1\n")
    with pytest.raises(ValueError, match="row 2 column S3"):
        import_covariates(bad, mapping)


def test_individual_differences_matches_hand_computation():
    rng = np.random.default_rng(0)
    truth = {f"D{i}": ("familiar" if i % 2 else "stranger") for i in range(20)}
    rows = []
    for r in range(12):
        p_right = 0.3 + 0.05 * r
        for m in ("text", "audio"):
            for dyad, t in truth.items():
                right = rng.random() < p_right
                other = "stranger" if t == "familiar" else "familiar"
                rows.append(
                    {
                        "rater_id": f"R{r:02d}",
                        "dyad_id": dyad,
                        "modality": m,
                        "response": t if right else other,
                        "correct": right,
                    }
                )
    trials = pd.DataFrame(rows)
    covariates = pd.DataFrame(
        {"rater_id": [f"R{r:02d}" for r in range(12)], "score": np.arange(12.0) + rng.normal(0, 2, 12)}
    )
    covariates.loc[3, "score"] = np.nan  # a rater without the covariate: n = 11
    table = individual_differences(trials, covariates, truth)
    per = per_rater_sdt(trials, truth).merge(covariates, on="rater_id")
    text = per[per["modality"] == "text"].dropna()
    row = table[
        (table["analysis"] == "correlation")
        & (table["modality"] == "text")
        & (table["outcome"] == "accuracy")
    ]
    assert row["n"].item() == 11
    assert row["pearson_r"].item() == pytest.approx(stats.pearsonr(text["score"], text["accuracy"]).statistic)
    assert row["spearman_p"].item() == pytest.approx(stats.spearmanr(text["score"], text["accuracy"]).pvalue)
    assert set(table["outcome"]) == {"accuracy", "d_prime", "criterion"}
    # OLS: accuracy ~ 1 + [audio dummy absent: reference] + text dummy + score (same raters in both
    # modalities, so the SEs are clustered by rater)
    ols = table[table["analysis"] == "ols"].iloc[0]
    complete = per.dropna()
    design = np.column_stack(
        [np.ones(len(complete)), complete["modality"] == "text", complete["score"]]
    ).astype(float)
    coefficients = np.linalg.lstsq(design, complete["accuracy"].to_numpy(float), rcond=None)[0]
    assert ols["estimate"] == pytest.approx(coefficients[2])
    assert ols["n"] == 22 and ols["se_type"] == "cluster(rater)"
    assert ols["ci_low"] < ols["estimate"] < ols["ci_high"]


# --- simulated panel ---------------------------------------------------------------------------------


def test_simulated_panel_recovers_a_positive_covariate_correlation(tmp_path, design, blocks):
    assignments = {
        m: rater_assignments(blocks, 60, seed=i, prefix=m[0].upper())
        for i, m in enumerate(ratings.MODALITIES)
    }
    trials, covariates = simulate_panel(
        design, assignments, {"covariate_r": 0.7}, seed=3, blocks=blocks, out_dir=tmp_path
    )
    assert (trials["source"] == SIMULATED_LABEL).all() and (covariates["source"] == SIMULATED_LABEL).all()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "simulated_audio_export.csv",
        "simulated_covariates_export.csv",
        "simulated_import_report.csv",
        "simulated_text_export.csv",
        "simulated_video_export.csv",
    ]
    table = individual_differences(trials, covariates, design)
    assert (table["source"] == SIMULATED_LABEL).all()
    sip = table[
        (table["analysis"] == "correlation")
        & (table["covariate"] == "sip")
        & (table["outcome"] == "accuracy")
    ]
    assert len(sip) == 3 and (sip["n"] == 60).all()
    assert (sip["pearson_r"] > 0.2).all() and (sip["spearman_r"] > 0.2).all()
    ols = table[(table["analysis"] == "ols")].set_index("covariate")
    assert ols.loc["sip", "estimate"] > 0 and ols.loc["sip", "p_value"] < 1e-3
    assert ols.loc["sip", "n"] == 180 and ols.loc["sip", "se_type"] == "HC3"


def test_simulated_panel_orders_modalities_as_configured(design, blocks):
    # the same 240 people in all three experiments, so rater skill cancels between modalities
    assignments = {
        m: rater_assignments(blocks, 240, seed=i, prefix="P") for i, m in enumerate(ratings.MODALITIES)
    }
    trials, _ = simulate_panel(design, assignments, {"dyad_modality_sd": 0.0}, seed=21, blocks=blocks)
    accuracy = trials.groupby("modality")["correct"].mean()
    assert accuracy["text"] < accuracy["audio"] < accuracy["video"]
    # small effects (0.1-0.4 logits) on top of dyad and rater variation: near chance, below 0.65
    assert accuracy.between(0.4, 0.65).all()
    assert len(trials) == 3 * 240 * 32


def test_simulated_panel_long_and_wide_exports_import_to_the_same_trials(design, blocks):
    assignments = {"audio": rater_assignments(blocks, 15, seed=0, prefix="A")}
    long, covariates_long = simulate_panel(
        design.assign(block=design["dyad_id"].map(blocks.set_index("dyad_id")["block"])),
        assignments,
        {"export_format": "long"},
        seed=4,
    )
    wide, covariates_wide = simulate_panel(
        design, assignments, {"export_format": "wide"}, seed=4, blocks=blocks
    )
    assert long.equals(wide) and covariates_long.equals(covariates_wide)


def test_simulated_blanks_are_counted_not_dropped(tmp_path, design, blocks):
    assignments = {"text": rater_assignments(blocks, 30, seed=0, prefix="T")}
    trials, _ = simulate_panel(design, assignments, {"p_blank": 0.1}, seed=2, blocks=blocks, out_dir=tmp_path)
    export = pd.read_csv(tmp_path / "simulated_text_export.csv", dtype=str, keep_default_na=False)
    report = pd.read_csv(tmp_path / "simulated_import_report.csv", keep_default_na=False).set_index("reason")
    blanks = int((export["answer"] == "").sum())
    assert blanks > 0
    assert report.loc["empty_response", "n"] == blanks
    assert report.loc["imported", "n"] == len(trials) == 30 * 32 - blanks
    assert (report["source"] == SIMULATED_LABEL).all()


def test_simulated_panel_is_seeded(design, blocks):
    assignments = {"video": rater_assignments(blocks, 10, seed=0, prefix="V")}
    first = simulate_panel(design, assignments, None, seed=1, blocks=blocks)
    again = simulate_panel(design, assignments, None, seed=1, blocks=blocks)
    other = simulate_panel(design, assignments, None, seed=2, blocks=blocks)
    assert first[0].equals(again[0]) and first[1].equals(again[1])
    assert not first[0].equals(other[0])
    with pytest.raises(ValueError, match="unknown panel parameter"):
        simulate_panel(design, assignments, {"skill": 1.0}, seed=1, blocks=blocks)
