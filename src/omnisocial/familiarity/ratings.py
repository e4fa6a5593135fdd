"""Human ratings of the familiarity study (benchmarks.md 1.6): design, simulated panel, import.

- `rating_design`: the planned-missing design. The sampled dyads are dealt into `n_blocks`
  blocks (`ratings.block_design`); each modality is its own experiment with its own raters
  (ids prefixed T, A, V: three separate panels, as in the published study), every rater rating
  `blocks_per_rater` blocks (`ratings.rater_assignments`), with a survey list per rater
  (`ratings.survey_table`; stimulus paths relative to the stimuli's `media/` folder). A design
  with fewer dyads than `n_blocks` (the workflow test's four dyads) gets one block per dyad, and
  the log says so.
- `simulate_exports`: the demo's simulated rater panel written as survey exports
  (`ratings.simulate_exports`), every file name saying `simulated`.
- `import_panel`: survey exports (simulated, or real ones through the configured column
  mapping) into one trial table with its import report and the rater covariates. Every table
  carries a `source` column: `ratings.SIMULATED_LABEL` for the simulated panel, "survey exports"
  otherwise.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from omnisocial import ratings
from omnisocial.familiarity.contracts import (
    MODALITIES,
    MODALITY_ASSIGNMENTS,
    RATED_TRIALS,
    SOURCE,
    SURVEY_SOURCE,
)
from omnisocial.tables import DESIGN, Column, Contract

log = logging.getLogger(__name__)

SOURCES = ("simulated", "exports")
RATER_PREFIX = {"text": "T", "audio": "A", "video": "V"}
SOURCED_IMPORT_REPORT = Contract(
    "import_report", (*ratings.IMPORT_REPORT.columns, SOURCE), key=ratings.IMPORT_REPORT.key
)
SURVEY_TABLE = Contract(
    "survey_table",
    (Column("modality", allowed=MODALITIES), Column("rater_id"), *ratings.SURVEY_LIST.columns),
    key=("modality", "rater_id", "order"),
)


def source_label(source: str) -> str:
    """The `source` value of human tables for a `ratings.source` setting."""
    if source not in SOURCES:
        raise ValueError(f"ratings.source must be one of {SOURCES}, got {source!r}")
    return ratings.SIMULATED_LABEL if source == "simulated" else SURVEY_SOURCE


@dataclass
class RatingDesign:
    blocks: pd.DataFrame  # BLOCKS [dyad_id, block]
    assignments: pd.DataFrame  # MODALITY_ASSIGNMENTS [modality, rater_id, block]
    surveys: pd.DataFrame  # SURVEY_TABLE [modality, rater_id, order, dyad_id, stimulus]

    def assignments_by_modality(self) -> dict[str, pd.DataFrame]:
        return assignments_by_modality(self.assignments)

    def survey_lists(self, modality: str) -> dict[str, pd.DataFrame]:
        """rater_id -> SURVEY_LIST of one experiment (for `ratings.write_survey_lists`)."""
        own = self.surveys[self.surveys["modality"] == modality]
        columns = ratings.SURVEY_LIST.names
        return {str(r): g[columns].reset_index(drop=True) for r, g in own.groupby("rater_id", sort=True)}


def assignments_by_modality(assignments: pd.DataFrame) -> dict[str, pd.DataFrame]:
    frame = MODALITY_ASSIGNMENTS.validate(assignments)
    return {
        modality: ratings.ASSIGNMENTS.validate(group[ratings.ASSIGNMENTS.names])
        for modality, group in frame.groupby("modality", sort=False)
    }


def rating_design(
    design: pd.DataFrame,
    n_blocks: int,
    blocks_per_rater: int,
    raters_per_modality: Mapping[str, int],
    seed: int,
) -> RatingDesign:
    """Blocks, rater assignments and survey lists of every configured experiment."""
    frame = DESIGN.validate(design)
    unknown = sorted(set(raters_per_modality) - set(MODALITIES))
    if unknown:
        raise ValueError(f"ratings.raters_per_modality: unknown modality {unknown}")
    used_blocks = min(int(n_blocks), len(frame))
    if used_blocks < int(n_blocks):
        log.warning(
            "%d dyads: %d blocks instead of %d (one block per dyad)", len(frame), used_blocks, n_blocks
        )
    blocks = ratings.block_design(frame, used_blocks, seed=seed)
    per_block = min(int(blocks_per_rater), used_blocks)
    if per_block < int(blocks_per_rater):
        log.warning("%d blocks: %d blocks per rater instead of %d", used_blocks, per_block, blocks_per_rater)
    assignments, surveys = [], []
    for modality in [m for m in MODALITIES if m in raters_per_modality]:
        n_raters = int(raters_per_modality[modality])
        assigned = ratings.rater_assignments(
            blocks, n_raters, per_block, seed=seed, prefix=RATER_PREFIX[modality]
        )
        assignments.append(assigned.assign(modality=modality))
        table = ratings.survey_table(assigned, blocks, modality, seed=seed)
        surveys.append(table.assign(modality=modality))
        per_dyad = ratings.raters_per_dyad(assigned, blocks)["n_raters"]
        log.info("%s: %d raters, %d-%d ratings per dyad", modality, n_raters, per_dyad.min(), per_dyad.max())
    if not assignments:
        raise ValueError("ratings.raters_per_modality names no modality")
    return RatingDesign(
        blocks=blocks,
        assignments=MODALITY_ASSIGNMENTS.validate(pd.concat(assignments, ignore_index=True)),
        surveys=SURVEY_TABLE.validate(pd.concat(surveys, ignore_index=True)),
    )


def simulate_exports(
    design: pd.DataFrame, blocks: pd.DataFrame, assignments: pd.DataFrame, params: Mapping, seed: int
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The simulated panel as survey exports: ({modality: export}, covariate export).

    `params` overrides `ratings.DEFAULT_PANEL_PARAMS` (modality effects, rater skill and bias,
    dyad difficulty, covariate correlation, blank answers, long or wide export).
    """
    return ratings.simulate_exports(
        DESIGN.validate(design), assignments_by_modality(assignments), dict(params), int(seed), blocks
    )


def import_mapping(source: str, mapping: Mapping | None, simulation: Mapping | None) -> dict:
    """The column mapping the import uses: the simulated exports' own, or the configured one."""
    if source == "simulated":
        wide = (
            dict(simulation or {}).get("export_format", ratings.DEFAULT_PANEL_PARAMS["export_format"])
            == "wide"
        )
        return {**ratings.SIMULATED_MAPPING, "wide": wide}
    return dict(mapping or {})


def covariate_mapping(source: str, mapping: Mapping | None) -> dict:
    if source == "simulated":
        return dict(ratings.SIMULATED_COVARIATE_MAPPING)
    return dict(mapping or {})


def import_panel(
    exports: Mapping[str, str | os.PathLike],
    design: pd.DataFrame,
    source: str,
    mapping: Mapping | None = None,
    covariates_csv: str | os.PathLike | None = None,
    covariates_mapping: Mapping | None = None,
    simulation: Mapping | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(RATED_TRIALS, import report, covariates) from one export per modality.

    `mapping` (one for all exports, or {modality: mapping}) and `covariates_mapping` are used
    for real exports; the simulated panel's exports are read with the mapping they were written
    in. Covariates: an empty frame [rater_id, source] when there is no covariate file.
    """
    label = source_label(source)
    frame = DESIGN.validate(design)
    trials, report = ratings.import_experiments(
        {m: str(p) for m, p in exports.items()}, import_mapping(source, mapping, simulation), frame
    )
    for row in report[(report["reason"] != "imported") & (report["n"] > 0)].itertuples(index=False):
        log.warning("%s: %d trial(s) %s, e.g. %s", row.modality, row.n, row.reason, row.example)
    if covariates_csv:
        covariates = ratings.import_covariates(covariates_csv, covariate_mapping(source, covariates_mapping))
    else:
        covariates = pd.DataFrame({"rater_id": pd.Series(dtype=object)})
    return (
        RATED_TRIALS.validate(trials.assign(source=label)),
        SOURCED_IMPORT_REPORT.validate(report.assign(source=label)),
        covariates.assign(source=label),
    )


def read_covariates(path: str | os.PathLike) -> pd.DataFrame:
    """The covariates table import_panel wrote: rater_id and source as text, the rest as numbers."""
    frame = pd.read_csv(path, dtype={"rater_id": str, "modality": str, "source": str}, keep_default_na=True)
    for column in ("rater_id", "source"):
        if column in frame.columns:
            frame[column] = frame[column].fillna("")
    return frame
