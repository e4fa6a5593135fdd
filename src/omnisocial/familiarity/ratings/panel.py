"""The study's human panel as the workflow imports it (rule import_ratings).

`import_panel`: survey exports (simulated, or real ones through the configured column
mapping) into one trial table with its import report and the rater covariates. Every table
carries a `source` column: `SIMULATED_LABEL` for the simulated panel, "rating experiment"
for data the rating experiment collected (its server, or JATOS), "survey exports" otherwise.
An import that loses more answers than `ratings.max_lost_share` allows, or a modality with
no imported trial, fails (`importing.check_losses`).

`export_plan` says which modality's export the workflow reads and why another is not read
(the rule reads the modalities of `ratings.raters_per_modality` that have an export);
`raters_vs_plan` compares the raters imported per modality with `raters_per_modality`. The
rule logs both and the summary page shows the second.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.contracts import EXPERIMENT_SOURCE, RATED_TRIALS, SOURCE, SURVEY_SOURCE
from omnisocial.familiarity.ratings.collect import (
    experiment_covariate_mapping,
    experiment_mapping,
    sessions_note,
)
from omnisocial.familiarity.ratings.design import MODALITIES
from omnisocial.familiarity.ratings.importing import (
    IMPORT_REPORT,
    check_losses,
    import_covariates,
    import_experiments,
)
from omnisocial.familiarity.ratings.simulate import (
    DEFAULT_PANEL_PARAMS,
    SIMULATED_COVARIATE_MAPPING,
    SIMULATED_MAPPING,
)
from omnisocial.tables import DESIGN, SIMULATED_LABEL, Contract

log = logging.getLogger(__name__)

SOURCES = ("simulated", "exports", "experiment")
SOURCED_IMPORT_REPORT = Contract("import_report", (*IMPORT_REPORT.columns, SOURCE), key=IMPORT_REPORT.key)


def source_label(source: str) -> str:
    """The `source` value of human tables for a `ratings.source` setting."""
    if source not in SOURCES:
        raise ValueError(f"ratings.source must be one of {SOURCES}, got {source!r}")
    if source == "experiment":
        return EXPERIMENT_SOURCE
    return SIMULATED_LABEL if source == "simulated" else SURVEY_SOURCE


def import_mapping(
    source: str, mapping: Mapping | None, simulation: Mapping | None, experiment: Mapping | None = None
) -> dict:
    """The column mapping the import uses: the simulated exports' own, the rating experiment's
    built-in one per modality (`experiment` is the ratings.experiment config), or the configured one."""
    if source == "simulated":
        wide = dict(simulation or {}).get("export_format", DEFAULT_PANEL_PARAMS["export_format"]) == "wide"
        return {**SIMULATED_MAPPING, "wide": wide}
    if source == "experiment":
        practice = dict((experiment or {}).get("practice") or {})
        return {
            modality: experiment_mapping(
                {"practice": [{"id": Path(p).stem} for p in practice.get(modality, [])]}
            )
            for modality in MODALITIES
        }
    return dict(mapping or {})


def covariate_mapping(source: str, mapping: Mapping | None, experiment: Mapping | None = None) -> dict:
    if source == "simulated":
        return dict(SIMULATED_COVARIATE_MAPPING)
    if source == "experiment":
        return experiment_covariate_mapping((experiment or {}).get("questionnaires") or [])
    return dict(mapping or {})


def import_panel(
    exports: Mapping[str, str | os.PathLike],
    design: pd.DataFrame,
    source: str,
    mapping: Mapping | None = None,
    covariates_csv: str | os.PathLike | None = None,
    covariates_mapping: Mapping | None = None,
    simulation: Mapping | None = None,
    max_lost_share: float = 0.0,
    experiment: Mapping | None = None,
    sessions: pd.DataFrame | None = None,
    alias=None,
    dyad_maps: Mapping | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(RATED_TRIALS, import report, covariates) from one export per modality.

    `mapping` (one for all exports, or {modality: mapping}) and `covariates_mapping` are used
    for real exports; the simulated panel's exports are read with the mapping they were written
    in; the rating experiment's collected exports with its built-in mapping (`experiment`: the
    ratings.experiment config), and `sessions` (its sessions table) puts the count of complete,
    incomplete and declined sessions in the example of each modality's `unanswered` row.
    Covariates: an empty frame [rater_id, source] when there is no covariate file.
    Raises `ImportLossError` (after logging the whole report) when a modality lost more than
    `max_lost_share` of its trials or imported none. `alias` (the study's pseudonyms) and
    `dyad_maps` (survey exports' labels to the current dyads) as in `importing.import_ratings`.
    """
    label = source_label(source)
    frame = DESIGN.validate(design)
    paths = {m: str(p) for m, p in exports.items()}
    mappings = import_mapping(source, mapping, simulation, experiment)
    trials, report = import_experiments(paths, mappings, frame, alias, dyad_maps)
    if sessions is not None:
        report = _with_sessions(report, sessions)
    log.info("import report:\n%s", report.to_string(index=False))
    for row in report[(report["reason"] != "imported") & (report["n"] > 0)].itertuples(index=False):
        log.warning(
            "%s: %d trial(s) %s%s, e.g. %s",
            row.modality,
            row.n,
            row.reason,
            " (lost)" if row.lost else "",
            row.example,
        )
    check_losses(report, max_lost_share, paths)
    if covariates_csv:
        covariates = import_covariates(
            covariates_csv, covariate_mapping(source, covariates_mapping, experiment), alias
        )
    else:
        covariates = pd.DataFrame({"rater_id": pd.Series(dtype=object)})
    return (
        RATED_TRIALS.validate(trials.assign(source=label)),
        SOURCED_IMPORT_REPORT.validate(report.assign(source=label)),
        covariates.assign(source=label),
    )


def _with_sessions(report: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    report = report.copy()
    for index, row in report[report["reason"] == "unanswered"].iterrows():
        note = sessions_note(sessions[sessions["modality"] == row["modality"]])
        report.loc[index, "example"] = f"{note}; {row['example']}" if row["example"] else note
    return report


def read_covariates(path: str | os.PathLike) -> pd.DataFrame:
    """The covariates table import_panel wrote: rater_id and source as text, the rest as numbers."""
    frame = pd.read_csv(path, dtype={"rater_id": str, "modality": str, "source": str}, keep_default_na=True)
    for column in ("rater_id", "source"):
        if column in frame.columns:
            frame[column] = frame[column].fillna("")
    return frame


def _object_frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    """Rows as they are: a count that is None stays None beside ints (never 3.0 and NaN)."""
    return pd.DataFrame({c: pd.Series([row[c] for row in rows], dtype=object) for c in columns})


def export_plan(source: str, raters_per_modality: Mapping, exports: Mapping | None) -> pd.DataFrame:
    """Per modality planned or with an export: planned raters, the export, whether it is read, why not.

    The rule reads the modalities of `raters_per_modality` (the simulated panel's exports, or
    those `exports` names); a planned modality without an export and an export of a modality
    without planned raters are not read, and say so.
    """
    source_label(source)
    exports = dict(exports or {})
    rows = []
    for modality in MODALITIES:
        planned = raters_per_modality.get(modality)
        export = "simulated panel" if source == "simulated" else str(exports.get(modality) or "")
        if source == "experiment" and export:
            export = f"rating experiment, collected in {export}"
        if planned is None and not (source == "exports" and export):
            continue
        if planned is None:
            note = f"not read: ratings.raters_per_modality plans no {modality} raters"
        elif not export:
            note = f"not read: ratings.exports.{modality} names no export"
        else:
            note = ""
        rows.append(
            {
                "modality": modality,
                "planned": planned,
                "export": export,
                "read": not note,
                "note": note,
            }
        )
    return _object_frame(rows, ["modality", "planned", "export", "read", "note"])


RATERS_VS_PLAN_COLUMNS = ["modality", "planned raters", "raters imported", "difference", "export", "note"]


def raters_vs_plan(plan: pd.DataFrame, trials: pd.DataFrame | None) -> pd.DataFrame:
    """Raters imported per modality (distinct rater ids in `trials`) against the planned raters.

    `plan` is `export_plan`'s table; `trials` None means the trials are not there (yet).
    difference = imported - planned (empty where a count is unknown).
    """
    rows = []
    for row in plan.itertuples(index=False):
        planned = None if pd.isna(row.planned) else int(row.planned)
        if trials is None:
            imported = None
        else:
            part = trials[trials["modality"].astype(str) == row.modality]
            imported = int(part["rater_id"].astype(str).nunique())
        note = row.note
        if not note and trials is None:
            note = "no trial table"
        elif not note and imported != planned:
            direction = "fewer" if imported < planned else "more"
            note = f"{abs(imported - planned)} {direction} raters than planned"
        rows.append(
            {
                "modality": row.modality,
                "planned raters": planned,
                "raters imported": imported,
                "difference": None if None in (planned, imported) else imported - planned,
                "export": row.export,
                "note": note or "as planned",
            }
        )
    return _object_frame(rows, RATERS_VS_PLAN_COLUMNS)


def raters_section(ratings: Mapping, trials: pd.DataFrame | None) -> pd.DataFrame:
    """The summary page's raters section: `raters_vs_plan` of the `ratings` config's export plan.

    A planned modality without an export, or an export of a modality without planned raters,
    is listed as not read (the workflow reads neither); see `export_plan`.
    """
    source = ratings.get("source", "exports")
    exports = ratings.get("exports")
    if source == "experiment":
        exports = experiment_exports(ratings)
    plan = export_plan(source, ratings.get("raters_per_modality") or {}, exports)
    return raters_vs_plan(plan, trials)


def experiment_exports(ratings: Mapping) -> dict:
    """{modality: collection folder, or its JATOS result export} of ratings.source experiment
    (export_plan's `exports`)."""
    experiment = ratings.get("experiment") or {}
    collected = experiment.get("collected") or ""
    jatos = experiment.get("jatos_results") or {}
    return {
        modality: f"JATOS results {jatos[modality]}" if jatos.get(modality) else collected
        for modality in (ratings.get("raters_per_modality") or {})
    }
