"""The study's human panel as the workflow imports it (rule import_ratings).

`import_panel`: survey exports (simulated, or real ones through the configured column
mapping) into one trial table with its import report and the rater covariates. Every table
carries a `source` column: `SIMULATED_LABEL` for the simulated panel, "survey exports"
otherwise.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

import pandas as pd

from omnisocial.familiarity.contracts import RATED_TRIALS, SOURCE, SURVEY_SOURCE
from omnisocial.familiarity.ratings.importing import IMPORT_REPORT, import_covariates, import_experiments
from omnisocial.familiarity.ratings.simulate import (
    DEFAULT_PANEL_PARAMS,
    SIMULATED_COVARIATE_MAPPING,
    SIMULATED_MAPPING,
)
from omnisocial.tables import DESIGN, SIMULATED_LABEL, Contract

log = logging.getLogger(__name__)

SOURCES = ("simulated", "exports")
SOURCED_IMPORT_REPORT = Contract("import_report", (*IMPORT_REPORT.columns, SOURCE), key=IMPORT_REPORT.key)


def source_label(source: str) -> str:
    """The `source` value of human tables for a `ratings.source` setting."""
    if source not in SOURCES:
        raise ValueError(f"ratings.source must be one of {SOURCES}, got {source!r}")
    return SIMULATED_LABEL if source == "simulated" else SURVEY_SOURCE


def import_mapping(source: str, mapping: Mapping | None, simulation: Mapping | None) -> dict:
    """The column mapping the import uses: the simulated exports' own, or the configured one."""
    if source == "simulated":
        wide = dict(simulation or {}).get("export_format", DEFAULT_PANEL_PARAMS["export_format"]) == "wide"
        return {**SIMULATED_MAPPING, "wide": wide}
    return dict(mapping or {})


def covariate_mapping(source: str, mapping: Mapping | None) -> dict:
    if source == "simulated":
        return dict(SIMULATED_COVARIATE_MAPPING)
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
    trials, report = import_experiments(
        {m: str(p) for m, p in exports.items()}, import_mapping(source, mapping, simulation), frame
    )
    for row in report[(report["reason"] != "imported") & (report["n"] > 0)].itertuples(index=False):
        log.warning("%s: %d trial(s) %s, e.g. %s", row.modality, row.n, row.reason, row.example)
    if covariates_csv:
        covariates = import_covariates(covariates_csv, covariate_mapping(source, covariates_mapping))
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
