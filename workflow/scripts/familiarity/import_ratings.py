"""Rule import_ratings: survey exports into trials, an import report and rater covariates."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import RATED_TRIALS
from omnisocial.familiarity.ratings import SOURCED_IMPORT_REPORT, import_panel
from omnisocial.io import write_csv
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
inputs = snakemake.input
trials, report, covariates = import_panel(
    {modality: inputs[modality] for modality in params.modalities},
    DESIGN.read(inputs.design),
    params.source,
    dict(params.mapping),
    inputs.get("covariates"),
    dict(params.covariate_mapping),
    dict(params.simulation),
)
log.info("%d trials from %d raters (%s)", len(trials), trials["rater_id"].nunique(), params.source)
RATED_TRIALS.write(snakemake.output.trials, trials)
SOURCED_IMPORT_REPORT.write(snakemake.output.report, report)
write_csv(snakemake.output.covariates, covariates)
