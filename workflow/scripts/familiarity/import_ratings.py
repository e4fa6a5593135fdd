"""Rule import_ratings: survey exports into trials, an import report and rater covariates."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

import pandas as pd

from omnisocial.familiarity.contracts import RATED_TRIALS, STIMULI_MANIFEST
from omnisocial.familiarity.ratings import SOURCED_IMPORT_REPORT, export_plan, import_panel, raters_vs_plan
from omnisocial.familiarity.ratings.design import STIMULUS_PATTERNS
from omnisocial.familiarity.ratings.frozen import (
    export_dyad_map,
    export_record_path,
    pseudonym_key,
    pseudonymizer,
    read_record,
    shown_identities,
)
from omnisocial.familiarity.ratings.panel import experiment_exports
from omnisocial.io import write_csv, write_json
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
inputs = snakemake.input
exports = dict(params.exports)
design = DESIGN.read(inputs.design)
sessions = alias = None
dyad_maps, records = {}, {}
if params.source == "exports" and params.modalities and params.pseudonym_folder:
    # survey exports name dyads by label: each label resolves through what it showed when the
    # export was first imported (<export>.design.json), and raters get the study's pseudonyms
    # (a release's ratings, with no pseudonym folder, keep the release's codes and dyad ids)
    alias = pseudonymizer(pseudonym_key(params.pseudonym_folder))
    identities = shown_identities(design, STIMULI_MANIFEST.read(inputs.manifest), STIMULUS_PATTERNS)
    for modality in params.modalities:
        own = identities[identities["modality"] == modality]
        now = dict(zip(own["dyad_id"], own["shown"], strict=True))
        path = export_record_path(inputs[modality])
        recorded = (read_record(path) or {}).get("shown", {}).get(modality)
        records[modality] = (path, recorded, now)
        current = dict(zip(own["shown"], own["dyad_id"], strict=True))
        dyad_maps[modality] = export_dyad_map({"shown": recorded or now}, current)
if params.source == "experiment":
    exports = experiment_exports(
        {"experiment": params.experiment, "raters_per_modality": params.raters_per_modality}
    )
    sessions = pd.read_csv(inputs.sessions, dtype=str, keep_default_na=False)
plan = export_plan(params.source, dict(params.raters_per_modality), exports)
for row in plan.itertuples(index=False):
    if row.read:
        log.info("%s: reading %s (%d raters planned)", row.modality, row.export, row.planned)
    else:
        log.warning("%s: %s", row.modality, row.note)
trials, report, covariates = import_panel(
    {modality: inputs[modality] for modality in params.modalities},
    design,
    params.source,
    dict(params.mapping),
    inputs.get("covariates"),
    dict(params.covariate_mapping),
    dict(params.simulation),
    params.max_lost_share,
    dict(params.experiment),
    sessions,
    alias,
    dyad_maps,
)
for modality, (path, recorded, now) in records.items():
    if recorded is None:  # the first import of this export: its design is recorded now
        record = read_record(path) or {"keys": dict(params.design_keys), "shown": {}}
        record["shown"][modality] = now
        write_json(path, record)
        log.info("%s: recorded the design of %s in %s", modality, inputs[modality], path)
log.info("%d trials from %d raters (%s)", len(trials), trials["rater_id"].nunique(), params.source)
for row in raters_vs_plan(plan, trials).to_dict("records"):
    (log.info if row["note"] == "as planned" else log.warning)(
        "%s: %s raters imported, %s planned: %s",
        row["modality"],
        row["raters imported"],
        row["planned raters"],
        row["note"],
    )
RATED_TRIALS.write(snakemake.output.trials, trials)
SOURCED_IMPORT_REPORT.write(snakemake.output.report, report)
write_csv(snakemake.output.covariates, covariates)
