"""The demo's SIMULATED rater panel (see `omnisocial.familiarity.ratings`, Simulated panel).

`simulate_exports` writes the panel as survey exports (rule simulate_ratings, every file name
saying `simulated`); `simulate_panel` also imports them, so the import path runs end to end.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.familiarity.ratings.design import (
    ASSIGNMENTS,
    BLOCKS,
    MODALITIES,
    assignments_by_modality,
    survey_table,
)
from omnisocial.familiarity.ratings.importing import DEFAULT_MAPPING, import_covariates, import_experiments
from omnisocial.io import write_csv
from omnisocial.stats.sdt import NOISE, SIGNAL, truth_map
from omnisocial.tables import DESIGN, SIMULATED_LABEL

SIMULATED_MAPPING = {
    **DEFAULT_MAPPING,
    "response_values": {"familiar": ["Know each other"], "stranger": ["Strangers"]},
    "column_pattern": "{dyad_id}_rating",
    "require": {"Finished": ["True"]},
}
SIMULATED_COVARIATE_MAPPING = {
    "rater_id": "ResponseId",
    "scales": {
        "sip": {
            "items": ["SIP_1", "SIP_2", "SIP_3", "SIP_4", "SIP_5", "SIP_6"],
            "reverse": ["SIP_6"],
            "min": 1,
            "max": 7,
        }
    },
    "columns": {"cue_voice": "CUE_voice", "cue_face": "CUE_face", "cue_words": "CUE_words"},
}
DEFAULT_PANEL_PARAMS = {
    "modality_effects": {"text": 0.1, "audio": 0.3, "video": 0.4},
    "skill_sd": 0.5,
    "bias_sd": 0.3,
    "dyad_sd": 0.5,
    "dyad_modality_sd": 0.2,
    "covariate_r": 0.6,
    "p_blank": 0.0,
    "export_format": "long",
}


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _panel_params(params: Mapping | None) -> dict:
    merged = {**DEFAULT_PANEL_PARAMS, **(dict(params) if params else {})}
    unknown = sorted(set(merged) - set(DEFAULT_PANEL_PARAMS))
    if unknown:
        raise ValueError(f"unknown panel parameter(s): {', '.join(unknown)}")
    if not -1 <= float(merged["covariate_r"]) <= 1:
        raise ValueError("covariate_r must lie in [-1, 1]")
    if merged["export_format"] not in ("long", "wide"):
        raise ValueError("export_format must be 'long' or 'wide'")
    return merged


def _export_frames(
    design: pd.DataFrame,
    assignments_by_modality: Mapping[str, pd.DataFrame],
    params: Mapping | None,
    seed: int,
    blocks: pd.DataFrame,
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The simulated panel as survey exports: ({modality: export frame}, covariate export frame).

    Exports have the columns `SIMULATED_MAPPING` reads (ResponseId, Finished, trial, stimulus,
    answer in long form; ResponseId, Finished and one `{dyad_id}_rating` column per dyad in wide
    form), the covariate export those of `SIMULATED_COVARIATE_MAPPING`. Trial order follows
    `survey_lists(..., seed)`. Random draws from `default_rng(seed)`, in this order: per person
    (sorted rater ids) skill, bias, trait noise; per dyad (sorted) shared difficulty; then per
    modality (text, audio, video) dyad deviations, blanks and responses in trial order; last the
    questionnaire items.
    """
    p = _panel_params(params)
    truth = truth_map(DESIGN.validate(design))
    dyads = sorted(truth)
    modalities = [m for m in MODALITIES if m in assignments_by_modality]
    unknown = sorted(set(assignments_by_modality) - set(MODALITIES))
    if unknown:
        raise ValueError(f"unknown modality key(s) {unknown}")
    missing = [m for m in modalities if m not in p["modality_effects"]]
    if missing:
        raise ValueError(f"params.modality_effects lacks {missing}")
    block_frame = BLOCKS.validate(blocks)
    if set(block_frame["dyad_id"]) != set(dyads):
        raise ValueError("blocks and design hold different dyads")
    assigned = {m: ASSIGNMENTS.validate(assignments_by_modality[m]) for m in modalities}
    people = sorted({r for frame in assigned.values() for r in frame["rater_id"]})

    rng = np.random.default_rng(seed)
    skill_sd = float(p["skill_sd"])
    skill = dict(zip(people, rng.normal(0.0, skill_sd, len(people)), strict=True))
    bias = dict(zip(people, rng.normal(0.0, float(p["bias_sd"]), len(people)), strict=True))
    noise = rng.normal(0.0, 1.0, len(people))
    difficulty = dict(zip(dyads, rng.normal(0.0, float(p["dyad_sd"]), len(dyads)), strict=True))
    words = SIMULATED_MAPPING["response_values"]

    exports = {}
    for modality in modalities:
        deviation = dict(zip(dyads, rng.normal(0.0, float(p["dyad_modality_sd"]), len(dyads)), strict=True))
        table = survey_table(assigned[modality], block_frame, modality, seed)
        raters, shown = table["rater_id"], table["dyad_id"]
        sign = np.where(shown.map(truth) == SIGNAL, 1.0, -1.0)
        eta = (
            float(p["modality_effects"][modality])
            + raters.map(skill).to_numpy(float)
            - shown.map(difficulty).to_numpy(float)
            - shown.map(deviation).to_numpy(float)
        )
        shift = raters.map(bias).to_numpy(float)
        blank = rng.random(len(table)) < float(p["p_blank"])
        says_familiar = rng.random(len(table)) < _logistic(sign * eta - shift)
        answers = np.where(blank, "", np.where(says_familiar, words[SIGNAL][0], words[NOISE][0]))
        long = pd.DataFrame(
            {
                "ResponseId": raters.to_numpy(dtype=object),
                "Finished": "True",
                "trial": table["order"].to_numpy(),
                "stimulus": shown.to_numpy(dtype=object),
                "answer": answers.astype(object),
            }
        )
        if p["export_format"] == "wide":
            wide = long.pivot(index="ResponseId", columns="stimulus", values="answer").reindex(columns=dyads)
            wide = wide.fillna("").rename(columns=lambda d: f"{d}_rating").reset_index()
            wide.insert(1, "Finished", "True")
            wide.columns.name = None
            exports[modality] = wide
        else:
            exports[modality] = long

    items = SIMULATED_COVARIATE_MAPPING["scales"]["sip"]["items"]
    r = float(p["covariate_r"])
    z_skill = np.array([skill[x] / skill_sd if skill_sd > 0 else 0.0 for x in people])
    trait = r * z_skill + math.sqrt(1 - r * r) * noise
    covariates = pd.DataFrame({"ResponseId": people})
    for item in items:
        score = np.clip(np.rint(4 + 1.2 * trait + rng.normal(0.0, 0.8, len(people))), 1, 7)
        covariates[item] = (
            8 - score if item in SIMULATED_COVARIATE_MAPPING["scales"]["sip"]["reverse"] else score
        )
        covariates[item] = covariates[item].astype(int).astype(str)
    for column in SIMULATED_COVARIATE_MAPPING["columns"].values():
        covariates[column] = rng.integers(1, 6, len(people)).astype(str)
    return exports, covariates


def simulate_panel(
    design: pd.DataFrame,
    assignments_by_modality: Mapping[str, pd.DataFrame],
    params: Mapping | None = None,
    seed: int = 0,
    *,
    blocks: pd.DataFrame | None = None,
    out_dir=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A simulated rater panel, imported through the survey-export path: (trials, covariates).

    Writes `simulated_{modality}_export.csv`, `simulated_covariates_export.csv` and
    `simulated_import_report.csv` under `out_dir` (a temporary folder when None), imports them
    with `SIMULATED_MAPPING` / `SIMULATED_COVARIATE_MAPPING`, and returns the TRIALS columns
    plus `source` and the covariates plus `source`, both `SIMULATED_LABEL`. `blocks` defaults to
    the design's `block` column. `params` overrides `DEFAULT_PANEL_PARAMS` (module docstring).
    """
    if blocks is None:
        if "block" not in design.columns:
            raise ValueError("give blocks= (a block_design frame) or a design with a block column")
        blocks = design[["dyad_id", "block"]]
    exports, covariate_export = _export_frames(design, assignments_by_modality, params, seed, blocks)
    mapping = {**SIMULATED_MAPPING, "wide": _panel_params(params)["export_format"] == "wide"}
    with tempfile.TemporaryDirectory(prefix="simulated_panel_") as scratch:
        folder = Path(out_dir) if out_dir is not None else Path(scratch)
        paths = {}
        for modality, frame in exports.items():
            paths[modality] = folder / f"simulated_{modality}_export.csv"
            write_csv(paths[modality], frame)
        covariate_path = folder / "simulated_covariates_export.csv"
        write_csv(covariate_path, covariate_export)
        trials, report = import_experiments(paths, mapping, DESIGN.validate(design))
        write_csv(folder / "simulated_import_report.csv", report.assign(source=SIMULATED_LABEL))
        covariates = import_covariates(covariate_path, SIMULATED_COVARIATE_MAPPING)
    return trials.assign(source=SIMULATED_LABEL), covariates.assign(source=SIMULATED_LABEL)


def simulate_exports(
    design: pd.DataFrame, blocks: pd.DataFrame, assignments: pd.DataFrame, params: Mapping, seed: int
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The simulated panel as survey exports: ({modality: export}, covariate export).

    `params` overrides `DEFAULT_PANEL_PARAMS` (modality effects, rater skill and bias,
    dyad difficulty, covariate correlation, blank answers, long or wide export).
    """
    return _export_frames(
        DESIGN.validate(design), assignments_by_modality(assignments), dict(params), int(seed), blocks
    )
