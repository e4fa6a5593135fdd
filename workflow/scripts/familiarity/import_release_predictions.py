"""Rule import_release_predictions: released model predictions as PREDICTIONS and an import report."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.release import RELEASE_REPORT, check_prediction_losses, import_predictions
from omnisocial.tables import DESIGN, PREDICTIONS
from omnisocial.workflow import start

log = start(snakemake)
predictions, report = import_predictions(
    [dict(f) for f in snakemake.params.files],
    dict(snakemake.params.mapping),
    DESIGN.read(snakemake.input.design),
)
for row in report[(report["reason"] != "imported") & (report["n"] > 0)].itertuples(index=False):
    log.warning("%s: %d prediction row(s) %s, e.g. %s", row.file, row.n, row.reason, row.example)
log.info(
    "%d predictions of %d model(s) from %d file(s)",
    len(predictions),
    predictions["model"].nunique(),
    report["file"].nunique(),
)
check_prediction_losses(report, snakemake.params.max_lost_share)
PREDICTIONS.write(snakemake.output.predictions, predictions)
RELEASE_REPORT.write(snakemake.output.report, report)
