"""Rule import_ratings: survey exports into trials, an import report and rater covariates."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

import pandas as pd

from omnisocial.familiarity.contracts import RATED_TRIALS
from omnisocial.familiarity.ratings import SOURCED_IMPORT_REPORT, export_plan, import_panel, raters_vs_plan
from omnisocial.familiarity.ratings.panel import experiment_exports
from omnisocial.io import write_csv
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
inputs = snakemake.input
exports = dict(params.exports)
sessions = None
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
    DESIGN.read(inputs.design),
    params.source,
    dict(params.mapping),
    inputs.get("covariates"),
    dict(params.covariate_mapping),
    dict(params.simulation),
    params.max_lost_share,
    dict(params.experiment),
    sessions,
)
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
